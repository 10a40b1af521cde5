"""The decode kernel's shape rule (ptx/launch.cuh: decode_nt, decode_act_rows,
decode_warps, decode_tile_nt, DecodeCfg), run on the host: for each shape, the
configuration kbit_decode_dispatch selects (warps, 16-row tiles per warp, ring
stages, activation rows per stage, shared memory). It checks the choices
docs/results.md v35-v46 measured and wrote down, and that every configuration the
rule can pick fits one H100 SM (227 KB)."""
import subprocess

import pytest
from conftest import build_host_program

PROGRAM = r"""
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm80.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_gemv.cuh"
#include "launch.cuh"
#include <cstdio>
// Prints the configuration the dispatch selects; launches nothing.
struct Describe {
  template <class Cfg> const char* operator()() const {
    std::printf("%d %d %d %d %zu %d\n", Cfg::kWarps, Cfg::kNT, Cfg::kStages, Cfg::kActRows, Cfg::smem_bytes(1),
                int(Cfg::kSumByHelpers));
    return nullptr;
  }
};
int main() {
  int m, n, k, e, bits, forced64;
  while (std::scanf("%d %d %d %d %d %d", &m, &n, &k, &e, &bits, &forced64) == 6) {
    kbit_api::KbitArgs a{};
    a.M = m; a.N = n; a.K = k; a.E = e; a.bits = bits;
    a.k_tiles = (k + 63) / 64; a.n_pad = (n + 7) / 8 * 8;
    a.kernel = forced64 ? 3 : 0;
    if (!kbit::decode_serves(a, kbit::kbit_pick_mtiles(m, e), 132) || (!forced64 && !kbit::decode_kernel_pays(a))) {
      std::printf("none\n");
      continue;
    }
    int nt = 4, act = 0;
    if (forced64) act = kbit::decode_act_rows(a, 132, nt);
    else kbit::decode_shape(a, 132, nt, act);
    const bool helpers = !forced64 && kbit::decode_helpers(a, 132, nt, act);
    if (const char* err = kbit::kbit_decode_dispatch(bits, 0, nt, act, Describe{}, helpers))
      std::printf("error %s\n", err);
  }
  return 0;
}
"""

# (M, N, K, E, k) -> (warps, 16-row tiles per warp, stages, activation rows per stage), the rule of v35.
L70_GATEUP, L70_DOWN, L8_GATEUP, L8_DOWN = (28672, 8192), (8192, 28672), (14336, 4096), (4096, 14336)
EXPECTED = {
    (1, *L70_GATEUP, 1, 4): (12, 4, 3, 1),    # 64-row tiles of 12 warps, one activation row
    (1, *L70_DOWN, 1, 4): (12, 4, 3, 1),
    (4, *L70_GATEUP, 1, 4): (12, 4, 3, 4),
    (8, *L70_GATEUP, 1, 4): (12, 4, 3, 8),    # the 8 rows in 64-row stages fit only with 12 warps
    (8, *L70_DOWN, 1, 4): (12, 4, 3, 8),
    (8, *L70_DOWN, 1, 2): (16, 4, 3, 8),      # k = 2: 16 warps fit (64 tiles of 128 rows: fewer than CTAs)
    (8, *L70_GATEUP, 1, 2): (12, 8, 2, 8),    # k = 2, M = 2..8, 128 rows per CTA at least: 128-row tiles (v44)
    (2, *L70_GATEUP, 1, 2): (12, 8, 2, 4),
    (2, 16392, 8224, 1, 2): (16, 4, 3, 4),    # (129 tiles of 128 rows < 132 CTAs: 64-row tiles)
    (8, *L70_GATEUP, 1, 3): (12, 4, 3, 8),    # k = 3: 12 warps since v38 (16 sat at the register cap)
    (1, *L70_GATEUP, 1, 2): (12, 8, 2, 1),    # k = 2 at M = 1: 128-row tiles of 12 warps since v43, one row
    (1, *L70_DOWN, 1, 2): (12, 8, 2, 1),
    (1, *L8_GATEUP, 1, 2): (16, 2, 4, 1),     # (under 2^27 weights: 32-row tiles)
    (4, *L70_GATEUP, 1, 2): (12, 8, 2, 4),
    (4, *L70_DOWN, 1, 2): (16, 4, 3, 4),
    (1, *L70_GATEUP, 1, 3): (16, 4, 3, 4),    # k = 3: 4 rows (one row spills)
    (1, *L70_GATEUP, 1, 5): (12, 4, 3, 1),    # k = 5: 64-row tiles only with one row and 12 warps
    (4, *L70_GATEUP, 1, 5): (16, 2, 4, 4),
    (1, *L8_GATEUP, 1, 4): (12, 4, 3, 1),     # M = 1, k = 4 from 2^25 weights
    (1, *L8_DOWN, 1, 4): (16, 2, 4, 1),       # v46: unless only 32-row tiles align to the grid (128 tiles)
    (4, *L8_GATEUP, 1, 4): (16, 2, 4, 4),     # 2^25..2^27 weights at M = 2..8: 32-row tiles
    (8, *L8_GATEUP, 1, 4): (16, 2, 4, 8),
    (1, 4096, 4104, 1, 4): (16, 2, 4, 1),     # 2^24..2^25 weights: 32-row tiles, one row
    (1, *L8_DOWN, 1, 5): (16, 2, 4, 1),
    (16, 1024, 2048, 64, 4): (16, 4, 2, 0),   # grouped: 64-row tiles, registers, 2 stages at k = 4
    (16, 1024, 2048, 64, 3): (16, 4, 3, 0),   # (3 at other k)
    (16, 1024, 2048, 64, 5): (16, 2, 4, 0),
    # v36: dense M = 9..16 on layers of 2^27+ weights, 16-row slots (12 warps,
    # 2 stages of 64-row tiles; k = 5: 3 stages of 32-row tiles).
    (16, *L70_GATEUP, 1, 4): (12, 4, 2, 16),
    (9, *L70_DOWN, 1, 4): (12, 4, 2, 16),
    (16, *L70_GATEUP, 1, 2): (12, 4, 2, 16),
    (12, *L70_GATEUP, 1, 3): (12, 4, 2, 16),
    (16, *L70_GATEUP, 1, 5): (12, 2, 3, 16),
    # v38: from 2^23 weights; below 2^27 32-row tiles of 16 warps.
    (16, *L8_GATEUP, 1, 4): (16, 2, 2, 16),
    (16, *L8_DOWN, 1, 4): (16, 2, 2, 16),
    (16, 5120, 2048, 1, 4): (16, 2, 2, 16),   # Qwen3-Coder-Next gate/up
    (16, *L8_DOWN, 1, 5): (12, 2, 3, 16),
    (16, 1024, 4096, 1, 4): None,              # under 2^23 weights: the tiled kernels
    (17, *L70_GATEUP, 1, 4): None,
}


@pytest.fixture(scope="module")
def rule_exe(tmp_path_factory):
    return build_host_program(tmp_path_factory, "decode_rule", PROGRAM)


def configs(exe, shapes):
    """shapes: (M, N, K, E, k, forced64) -> (warps, nt, stages, act rows, smem bytes, helpers), or None."""
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in shapes),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert not any(line.startswith("error") for line in out), out
    return [None if line == "none" else tuple(int(x) for x in line.split()) for line in out[:len(shapes)]]


def test_measured_choices(rule_exe):
    got = configs(rule_exe, [(*shape, 0) for shape in EXPECTED])
    assert {shape: c and c[:4] for shape, c in zip(EXPECTED, got)} == EXPECTED


def test_every_choice_fits_one_sm(rule_exe):
    """Every k, dense M = 1..16 over layer sizes around the rule's bounds (2^24,
    2^25, 2^27 weights), grouped layers, and the forced 64-row tiles (decode64)
    at every M: each configuration fits 227 KB, with 12 or 16 warps."""
    shapes = [(m, n, k, 1, bits, f) for bits in (2, 3, 4, 5) for m in (1, 2, 4, 5, 8, 9, 16) for f in (0, 1)
              for n, k in ((1000, 2080), (4096, 4104), (4104, 8192), (16392, 8192), (28672, 8192))]
    shapes += [(m, 1024, 2048, e, bits, f) for bits in (2, 3, 4, 5) for m, e in ((4, 64), (16, 64), (40, 16))
               for f in (0, 1)]
    seen = 0
    for shape, c in zip(shapes, configs(rule_exe, shapes)):
        if c is None:
            continue
        seen += 1
        warps, nt, stages, act, smem, _ = c
        assert warps in (12, 16) and nt in (2, 4, 8) and stages in (2, 3, 4) and act in (0, 1, 4, 8, 16), (shape, c)
        assert smem <= 227 * 1024, (shape, c)
    assert seen > len(shapes) // 2


# v46: split-tile sums by helper warps (kSumByHelpers) by configuration (k = 2,
# 3 with 64-row tiles of 16 warps and 4 rows, k = 5 with 12 warps) and, for the
# 16-row slots of k = 4 in 64-row tiles, by shape: where each CTA of an aligned
# grid has one tile (launch.cuh, decode_helpers).
HELPERS_EXPECTED = {
    (16, *L70_DOWN, 1, 4): 1,      # 128 tiles on 128 CTAs: a tile spans all 12 warps
    (9, *L70_DOWN, 1, 4): 1,
    (16, *L70_GATEUP, 1, 4): 0,    # 448 tiles: not aligned, 3-4 warps per tile
    (16, *L8_DOWN, 1, 4): 0,       # 32-row tiles of 16 warps
    (8, *L70_DOWN, 1, 4): 0,       # M <= 8: not measured faster
    (1, *L70_DOWN, 1, 4): 0,
    (1, *L70_GATEUP, 1, 3): 1,     # by configuration
    (1, *L70_GATEUP, 1, 5): 1,
    (4, *L70_GATEUP, 1, 4): 0,
}


def test_helpers(rule_exe):
    got = configs(rule_exe, [(*shape, 0) for shape in HELPERS_EXPECTED])
    assert {shape: c[5] for shape, c in zip(HELPERS_EXPECTED, got)} == HELPERS_EXPECTED


# v46: dense decode grids aligned to whole tiles per CTA (launch.cuh,
# decode_aligned_grid); v47: where none aligns, the grid of CTA pairs that
# take whole tiles (decode_pair_ctas, 0: none): (tiles, units, units per CTA
# at least, grid) -> (grid, pair grid).
GRID_PROGRAM = r"""
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm80.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_gemv.cuh"
#include "launch.cuh"
#include <cstdio>
int main() {
  long long tiles, units;
  int per_cta, grid;
  while (std::scanf("%lld %lld %d %d", &tiles, &units, &per_cta, &grid) == 4)
    std::printf("%d %d\n", kbit::decode_aligned_grid(tiles, units, per_cta, grid),
                kbit::decode_pair_ctas(tiles, units, per_cta, grid));
  return 0;
}
"""
GRID_EXPECTED = {
    (128, 128 * 448, 24, 132): (128, 0),   # Llama-3-70B down, 64-row tiles: one tile per CTA
    (128, 128 * 224, 32, 132): (128, 0),   # Llama-3-8B down, 32-row tiles
    (256, 256 * 448, 32, 132): (128, 0),   # two tiles per CTA
    (448, 448 * 128, 24, 132): (132, 128),  # Llama-3-70B gate/up: 112 CTAs too few (v46); pairs of CTAs take 7 tiles (v47)
    (448, 448 * 64, 32, 132): (132, 128),  # Llama-3-8B gate/up, 32-row tiles: the same pairs
    (224, 224 * 128, 24, 132): (132, 0),   # 8B gate/up, 64-row tiles: 3.5 tiles per pair on 128 CTAs, none aligns
    (64, 64 * 448, 24, 132): (132, 0),     # fewer tiles than CTAs: no pairs (each tile would span two CTAs)
    (131, 131 * 128, 24, 132): (131, 0),
    (126, 126 * 128, 24, 132): (132, 0),   # 126 < 96 % of 132
    (128, 128 * 32, 32, 132): (132, 0),    # a small layer: the split gives it 128 CTAs by itself (decode_ctas)
    (448, 448 * 4, 32, 132): (132, 0),     # ... and no pairs
    (264, 264 * 64, 24, 264): (264, 0),    # already aligned
}


def test_aligned_grid(tmp_path_factory):
    exe = build_host_program(tmp_path_factory, "aligned_grid", GRID_PROGRAM)
    shapes = list(GRID_EXPECTED)
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in shapes),
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert dict(zip(shapes, (tuple(map(int, line.split())) for line in out))) == GRID_EXPECTED


# The plan's order in the sm90 family (launch.cuh, kbit_gemm_plan): the wgmma
# kernel first where wgmma_kernel_pays, then the decode kernel where it pays
# and serves, else the tiled kernel. Prints the kernel the rule picks.
ORDER_PROGRAM = r"""
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_gemv.cuh"
#include "launch.cuh"
#include <cstdio>
int main() {
  int m, n, k, e, bits;
  while (std::scanf("%d %d %d %d %d", &m, &n, &k, &e, &bits) == 5) {
    kbit_api::KbitArgs a{};
    a.M = m; a.N = n; a.K = k; a.E = e; a.bits = bits;
    a.k_tiles = (k + 63) / 64; a.n_pad = (n + 7) / 8 * 8;
    const int mtiles = kbit::kbit_pick_mtiles(m, e);
    std::puts(kbit::wgmma_kernel_pays(a, mtiles)                                          ? "wgmma"
              : kbit::decode_kernel_pays(a) && kbit::decode_serves(a, mtiles, 132) ? "decode"
                                                                                   : "tiled");
  }
  return 0;
}
"""

# v38: dense M = 9..16 from 2^23 weights takes the decode kernel before the
# wgmma kernel (until then the wgmma kernel took the layers under 2^25 weights
# first, so the rule of v37's branch reached only the larger ones).
ORDER_EXPECTED = {
    (16, 5120, 2048, 1, 4): "decode",    # Qwen3-Coder-Next gate/up (2^23.3 weights)
    (16, 4096, 2048, 1, 2): "decode",    # Qwen3-Coder-Next q (2^23)
    (16, 5128, 2048, 1, 5): "decode",
    (9, *L8_GATEUP, 1, 4): "decode",
    (16, *L70_DOWN, 1, 4): "decode",
    (16, 512, 2048, 1, 4): "wgmma",      # Qwen3-Coder-Next kv (2^20): not measured with the decode kernel
    (16, 4096, 2047, 1, 4): "wgmma",     # just under 2^23
    (17, 5120, 2048, 1, 4): "wgmma",     # more than 16 rows
    (32, *L70_GATEUP, 1, 4): "wgmma",
    (8, 5128, 2048, 1, 4): "tiled",      # M = 5..8 under 2^25 weights
}


def test_plan_order_sm90(tmp_path_factory):
    exe = build_host_program(tmp_path_factory, "plan_order", ORDER_PROGRAM)
    shapes = list(ORDER_EXPECTED)
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in shapes),
                         capture_output=True, text=True, check=True).stdout.split()
    assert dict(zip(shapes, out)) == ORDER_EXPECTED


def test_pair_grid_split():
    """What finish_pair relies on (kbit_decode.cuh): on every pair grid of
    GRID_EXPECTED, the even split of the units (DecodeSplit: CTA i takes
    [i U / C, (i + 1) U / C)) gives each pair whole tiles, starts its first CTA
    at a tile, and splits exactly one tile between its two CTAs: the first
    CTA's last tile and the second's first, with whole tiles of each CTA on
    either side, so no other tile spans CTAs."""
    pairs = [(shape, want[1]) for shape, want in GRID_EXPECTED.items() if want[1] > 0]
    assert pairs
    for (tiles, units, _, _), grid in pairs:
        k_tiles = units // tiles
        begin = [i * units // grid for i in range(grid + 1)]
        for q in range(grid // 2):
            first, second, end = begin[2 * q], begin[2 * q + 1], begin[2 * q + 2]
            assert first % k_tiles == 0 and end % k_tiles == 0   # the pair: whole tiles
            assert second % k_tiles != 0                         # one tile split inside
            shared = second // k_tiles
            assert (second - 1) // k_tiles == shared             # the first CTA's last tile
            assert first // k_tiles < shared < end // k_tiles - 1  # whole tiles on either side
