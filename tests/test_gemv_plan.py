"""gemv_plan (ptx/kbit_gemv.cuh), the CUDA-core kernel's launch shape, run on
the host with an H100-like occupancy model: 132 SMs, 64 registers per thread
(32 warps per SM), 227 KB of shared memory per SM with 1 KB reserved per CTA.
It checks the shapes the v29 measurements chose for the benchmark's grouped
calls, and over a sweep of shapes that every shape covers the layer: whole
strip groups, every K-tile owned by one warp, one strip per CTA for dense
layers, and no more than 5 % extra work on the busiest SM for extra strips."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NVCC = shutil.which("nvcc")

PROGRAM = r"""
#include "sm80.cuh"
#include "kbit_gemv.cuh"
#include <algorithm>
#include <cstdio>
int main() {
  const int sms = 132;
  auto resident = [](int warps, size_t smem) {
    return std::min({32 / warps, int((227 * 1024) / (smem + 1024)), 32});
  };
  int rows, n, k, e;
  while (std::scanf("%d %d %d %d", &rows, &n, &k, &e) == 4) {
    const int n_pad = (n + 127) / 128 * 128, k_tiles = (k + 63) / 64;
    const kbit::GemvShape s = kbit::gemv_plan(n_pad, k_tiles, e == 1 ? 1 : rows, e, sms, resident);
    // the busiest SM's warp K-tiles with this shape and with one strip
    const kbit::GemvShape one = kbit::gemv_plan(n_pad, k_tiles, e == 1 ? 1 : rows, 1, sms, resident);
    const long long ctas = s.warps ? (long long)(n_pad / 16 / s.strips) * (e == 1 ? 1 : rows) : 0;
    const long long ctas1 = (long long)(n_pad / 16) * (e == 1 ? 1 : rows);
    std::printf("%d %d %d %lld %lld %lld\n", s.warps, s.tiles, s.strips, ctas,
                s.warps ? (ctas + sms - 1) / sms * s.warps * s.tiles : 0,
                one.warps ? (ctas1 + sms - 1) / sms * one.warps * one.tiles : 0);
  }
  return 0;
}
"""

# (rows, N, K, experts) -> (warps, K-tiles per warp, strips): the benchmark's
# Qwen3-Coder-Next routed experts (results.md v29: two strips at down for one
# token, four at both layers for four tokens, one at gate/up for one token).
EXPECTED = {(10, 1024, 2048, 512): (4, 8, 1), (10, 2048, 512, 512): (4, 4, 2),
            (40, 1024, 2048, 512): (4, 32, 4), (40, 2048, 512, 512): (4, 8, 4)}
SWEEP = [(rows, n, k, e) for e in (1, 3, 64, 512) for rows in ((1,) if e == 1 else (1, 5, 40, 300))
         for n in (8, 72, 520, 2048, 5120) for k in (32, 96, 544, 2080, 16384)]


@pytest.fixture(scope="module")
def plan_exe(tmp_path_factory):
    if NVCC is None:
        pytest.skip("needs nvcc")
    d = tmp_path_factory.mktemp("gemv_plan")
    (d / "plan.cu").write_text(PROGRAM)
    subprocess.run([NVCC, "-std=c++17", "-arch=sm_80", "--expt-relaxed-constexpr", f"-I{ROOT / 'ptx'}",
                    str(d / "plan.cu"), "-o", str(d / "plan")], check=True)
    return d / "plan"


def plans(exe, shapes):
    out = subprocess.run([str(exe)], input="".join(f"{r} {n} {k} {e}\n" for r, n, k, e in shapes),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [tuple(int(x) for x in line.split()) for line in out[:len(shapes)]]


def test_benchmark_shapes(plan_exe):
    got = plans(plan_exe, list(EXPECTED))
    assert {shape: p[:3] for shape, p in zip(EXPECTED, got)} == EXPECTED


def test_sweep_covers_the_layer(plan_exe):
    for (rows, n, k, e), (warps, tiles, strips, ctas, load, load1) in zip(SWEEP, plans(plan_exe, SWEEP)):
        assert warps > 0, (rows, n, k, e)                         # these activations fit shared memory
        assert warps % strips == 0 and (strips == 1 or e > 1)
        k_tiles, strip_count = (k + 63) // 64, (n + 127) // 128 * 8
        assert strip_count % strips == 0
        assert tiles * (warps // strips) >= k_tiles > (tiles - 1) * (warps // strips)
        assert ctas == strip_count // strips * (1 if e == 1 else rows)
        assert load * 20 <= load1 * 21, (rows, n, k, e, strips)   # extra strips: at most 5 % more on the busiest SM
