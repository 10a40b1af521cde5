"""FastDiv (ptx/fastdiv.h), the multiply-and-shift division the kernels use for
divisors fixed per launch: checked on the host against `/` for divisors from 1
to 2^32 - 1 and dividends over [0, 2^31), edges and exact multiples included."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")

PROGRAM = r"""
#include "fastdiv.h"
#include <cstdio>
#include <random>
#include <vector>
int main() {
  using kbit::FastDiv;
  std::mt19937 rng(7);
  unsigned long long checked = 0, bad = 0;
  auto check = [&](const FastDiv& f, unsigned n) {
    ++checked;
    if (f.div(n) != n / f.d && bad++ < 10) std::printf("d=%u n=%u: %u, want %u\n", f.d, n, f.div(n), n / f.d);
  };
  std::vector<unsigned> ds = {1, 2, 3, 5, 7, 16, 31, 32, 33, 100, 127, 128, 129, 132, 448, 1000, 4096, 57344,
                              65535, 65536, (1u << 20) + 1, 123456789, (1u << 30) + 7, 0x7fffffffu,
                              0x80000000u, 0x80000001u, 0xffffffffu};
  for (int i = 0; i < 2000; ++i) ds.push_back(rng() % 5000 + 1);
  for (int i = 0; i < 2000; ++i) ds.push_back(rng() | 1u);
  for (unsigned d : ds) {
    const FastDiv f = FastDiv::of(d);
    for (unsigned n = 0; n < 2000; ++n) check(f, n);
    for (unsigned k = 0; k < 2000; ++k) check(f, 0x7fffffffu - k);
    for (int i = 0; i < 2000; ++i) check(f, rng() & 0x7fffffffu);
    for (unsigned long long q = 1; q < 2000 && q * d < 0x80000000ull; ++q) {
      check(f, unsigned(q * d));
      check(f, unsigned(q * d - 1));
    }
  }
  std::printf("checked %llu bad %llu\n", checked, bad);
  return bad != 0;
}
"""


@pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler")
def test_fastdiv_matches_division(tmp_path):
    src = tmp_path / "fastdiv.cpp"
    src.write_text(PROGRAM)
    exe = tmp_path / "fastdiv"
    subprocess.run([CXX, "-std=c++17", "-O2", f"-I{ROOT / 'ptx'}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    assert " bad 0" in out.stdout
    assert int(out.stdout.split("checked ")[1].split()[0]) > 1_000_000
