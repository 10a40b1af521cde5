"""tcgen05 descriptor builders (ptx/sm100_desc.h) on the host: the header's
static_asserts hold the values checked in shared/notes/ptx-reference.md
(CUTLASS agrees), and a host program prints more for the fields in between."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")

PROGRAM = r"""
#include "sm100_desc.h"
#include <cstdio>
using namespace kbit::sm100;
int main() {
  std::printf("%08x\n", idesc_f16(true, 128, 256));
  std::printf("%08x\n", idesc_f16(false, 128, 256));
  std::printf("%08x\n", idesc_f16(true, 128, 128));
  std::printf("%08x\n", idesc_f16(true, 128, 128, false, true));
  std::printf("%08x\n", idesc_f16(true, 64, 64));
  std::printf("%08x\n", idesc_nvf4(128, 128));
  std::printf("%08x\n", idesc_nvf4(128, 256));
  std::printf("%08x\n", idesc_nvf4(128, 16));
  std::printf("%016llx\n", (unsigned long long)smem_desc(0x400, 16, 1024, Swizzle::k128B));
  std::printf("%016llx\n", (unsigned long long)smem_desc_kmajor_sw128(0x400 + 32));
  std::printf("%016llx\n", (unsigned long long)smem_desc_scales(0x800));
  std::printf("%08x\n", idesc_nvf4(128, 16, 2, 1));
  return 0;
}
"""


@pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler")
def test_descriptor_values(tmp_path):
    src = tmp_path / "desc.cpp"
    src.write_text(PROGRAM)
    exe = tmp_path / "desc"
    subprocess.run([CXX, "-std=c++17", f"-I{ROOT / 'ptx'}", str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert out[:7] == ["08400490", "08400010", "08200490", "08210490", "04100490", "08200480", "08400480"]
    assert out[7] == "08040480"                         # nvfp4 M128 N16: N >> 3 = 2 at bit 17
    assert out[8] == "4000404000010040"                 # start 0x400, LBO 16, SBO 1024, SW128
    assert out[9] == "4000404000010042"                 # + 32 bytes = +2 in the start field
    # scales: start 0x800 (enc 0x80), LBO 0, SBO 128 (enc 8), version bit 46, no swizzle
    assert out[10] == f"{(8 << 32) | (1 << 46) | 0x80:016x}"
    assert out[11] == f"{0x08040480 | (1 << 4) | (2 << 29):08x}"   # scale-factor IDs at bits 4-5 and 29-30
