"""gemv_plan (ptx/kbit_gemv.cuh), the CUDA-core kernel's launch shape that
launch.cuh and scripts/gemv_bench.cu share, run on the host with an H100-like
occupancy model: 132 SMs, 64 registers per thread (32 warps per SM), 227 KB of
shared memory per SM with 1 KB reserved per CTA. It checks the warps per CTA
that the plan chose on the H100 for the benchmark shapes (docs/results.md v29,
gemv_bench's "warps" column), and over a sweep that every K-tile has one warp
and that a shape is found wherever the activations fit shared memory."""
import subprocess

import pytest
from conftest import build_host_program

PROGRAM = r"""
#include "sm80.cuh"
#include "kbit_gemv.cuh"
#include <algorithm>
#include <cstdio>
int main() {
  auto resident = [](int warps, size_t smem) {
    return std::min({32 / warps, int((227 * 1024) / (smem + 1024)), 32});
  };
  long long ctas;
  int k_tiles;
  while (std::scanf("%lld %d", &ctas, &k_tiles) == 2) {
    const kbit::GemvShape s = kbit::gemv_plan(ctas, k_tiles, 1, 132, resident);
    const int per_sm = s.warps ? resident(s.warps, kbit::gemv_smem_bytes(s.warps, s.tiles, 1)) : 0;
    std::printf("%d %d %d\n", s.warps, s.tiles, per_sm);
  }
  return 0;
}
"""

# (rows, N, K) -> warps per CTA on the H100 (results.md v29, call 2): Qwen3-Coder-Next
# routed experts at one and four tokens, the 8-expert layer, dense Qwen3 and Llama-3-8B.
MEASURED = {(10, 1024, 2048): 4, (10, 2048, 512): 4, (40, 2048, 512): 4, (40, 1024, 2048): 4, (16, 512, 512): 8,
            (1, 5120, 2048): 8, (1, 2048, 5120): 16, (1, 512, 2048): 16, (1, 14336, 4096): 4}


@pytest.fixture(scope="module")
def plan_exe(tmp_path_factory):
    return build_host_program(tmp_path_factory, "gemv_plan", PROGRAM)


def plans(exe, calls):
    """calls: (CTAs, K-tiles) -> (warps, tiles, resident CTAs per SM)."""
    out = subprocess.run([str(exe)], input="".join(f"{c} {t}\n" for c, t in calls),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return [tuple(int(x) for x in line.split()) for line in out[:len(calls)]]


def ctas_and_tiles(rows, n, k):
    """The grid (strips of 16 columns of n_pad = N rounded up to 8, times rows) and the K-tiles."""
    n_pad = (n + 7) // 8 * 8
    return -(-n_pad // 16) * rows, (k + 63) // 64


def test_benchmark_shapes(plan_exe):
    got = plans(plan_exe, [ctas_and_tiles(*shape) for shape in MEASURED])
    assert {shape: p[0] for shape, p in zip(MEASURED, got)} == MEASURED


def test_sweep(plan_exe):
    calls = [(ctas, k_tiles) for ctas in (1, 8, 132, 640, 1056, 1280, 5120, 100000)
             for k_tiles in (1, 2, 7, 33, 64, 256, 832, 2000)]
    for (ctas, k_tiles), (warps, tiles, per_sm) in zip(calls, plans(plan_exe, calls)):
        if k_tiles > 800:   # 4 warps of 200+ fp32 activation K-tiles (57 KB each) exceed shared memory
            assert warps == 0, (ctas, k_tiles)
            continue
        assert warps in (4, 8, 16), (ctas, k_tiles)
        assert tiles * warps >= k_tiles > (tiles - 1) * warps             # every K-tile has one warp
        assert warps == 4 or ctas <= per_sm * 132, (ctas, k_tiles)        # more warps only in one wave
