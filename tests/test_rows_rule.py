"""The row-owning kernel's shape rule (ptx/launch.cuh: rows_kernel_pays,
rows_config_for, rows_grid; ptx/kbit_rows.cuh: RowsConfig), run on the host:
which dense shapes it takes, the configuration and grid (CTAs, or clusters
of two for configuration 6) it picks on a 132-SM GPU, that every CTA's (or
cluster's) share of 16-row granules fits that configuration's rows, that
every configuration fits one H100 SM, and that its groups' warps own every
tile once (rows_warp_tile). (The plan also checks that the
clusters are resident at once; that query needs a GPU.)"""

NCOL = 9   # per k: groups, warps per group, CTA rows, stages, shared bytes, K by pairs, CTAs per cluster,
           # K-tiles per group barrier, pair fields
import subprocess

import pytest
from conftest import build_host_program

PROGRAM = r"""
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_rows.cuh"
#include "kbit_gemv.cuh"
#include "launch.cuh"
#include <cstdio>
struct Describe {   // the configuration's shape and shared memory; launches nothing
  template <class Cfg> const char* operator()() const {
    std::printf(" %d %d %d %d %d %d %d %d %d", Cfg::kGroups, Cfg::kGroupWarps, Cfg::kCtaRows, Cfg::kRingStages,
                Cfg::kSmemBytes, int(Cfg::kPairPerm), Cfg::kSplit, Cfg::kSyncTiles, int(Cfg::kPairFields));
    // Every group's warps own every tile of the CTA's rows once (rows_warp_tile).
    for (int g = 0; g < Cfg::kGroups; ++g) {
      unsigned seen = 0;
      for (int j = 0; j < Cfg::kGroupWarps; ++j) seen |= 1u << kbit::rows_warp_tile(g, j, Cfg::kGroupWarps);
      if (seen != (1u << Cfg::kGroupWarps) - 1) return "error: a group's warps do not own every tile once";
    }
    return nullptr;
  }
};
int main() {
  int m, n, k, e, bits, forced;
  while (std::scanf("%d %d %d %d %d %d", &m, &n, &k, &e, &bits, &forced) == 6) {
    kbit_api::KbitArgs a{};
    a.M = m; a.N = n; a.K = k; a.E = e; a.bits = bits;
    a.k_tiles = (k + 63) / 64; a.n_pad = (n + 7) / 8 * 8;
    int grid = 0, id = 0;
    if (forced || kbit::rows_kernel_pays(a)) id = kbit::rows_config_for(a, 132, &grid);
    std::printf("%d %d", id, grid);
    if (id)
      for (int b = 2; b <= 5; ++b)
        if (const char* err = kbit::kbit_rows_dispatch(b, 0, id, m, Describe{})) std::printf(" error %s", err);
    std::printf("\n");
  }
  return 0;
}
"""

L70_GATEUP, L70_DOWN, L8_GATEUP, L8_DOWN = (28672, 8192), (8192, 28672), (14336, 4096), (4096, 14336)
Q_GATEUP, Q_DOWN, Q_KV = (5120, 2048), (2048, 5120), (512, 2048)
# (M, N, K, E, k, forced) -> (configuration id, grid); id 0: not the rows kernel.
EXPECTED = {
    (16, *L8_GATEUP, 1, 4, 0): (2, 132),   # 7 granules per CTA at most: 4 K-groups of 4 warps (128 rows)
    (16, *L8_DOWN, 1, 4, 0): (7, 132),     # 2 granules: 12 K-groups of one warp (32 rows), at least
    (9, *L8_DOWN, 1, 2, 0): (7, 132),      # 8 K-tiles each: two K-tiles per barrier pass (k <= 4)
    (16, *L8_DOWN, 1, 5, 0): (4, 132),
    (16, 4096, 2048, 1, 4, 0): (4, 132),   # Qwen3 q: 2-3 K-tiles per K-group
    (16, *Q_GATEUP, 1, 4, 0): (3, 132),    # 3 granules: 6 K-groups of 2 warps (64 rows)
    (12, *Q_DOWN, 1, 5, 0): (5, 128),      # 128 granules: one per CTA, 16-row warp tiles
    (16, *Q_KV, 1, 4, 0): (5, 32),
    (16, 4104, 2080, 1, 3, 0): (4, 132),   # N % 16 == 8, K % 64 == 32
    (16, *L70_GATEUP, 1, 4, 0): (0, 0),    # 2^26 weights and more: the decode kernel
    (16, *L70_DOWN, 1, 4, 0): (0, 0),
    (8, *Q_GATEUP, 1, 4, 0): (0, 0),       # M <= 8: the decode kernel's 8-row stages
    (16, *Q_GATEUP, 4, 4, 0): (0, 0),      # grouped
    (16, *L70_GATEUP, 1, 4, 1): (1, 132),  # KBIT_KERNEL=rows: 14 granules, 2 K-groups of 7 warps
    (4, *L8_GATEUP, 1, 4, 1): (2, 132),    # (forced: any M <= 16)
    (16, 64, 640, 1, 4, 1): (3, 4),        # 10 K-tiles: fewer than 12 K-groups, so 6 of 64 rows
    (16, 64, 192, 1, 4, 1): (1, 4),        # 3 K-tiles: 2 K-groups
    (16, 64, 64, 1, 4, 1): (0, 0),         # one K-tile: none
    # M = 17..32: 32 rows per stage, the same CTA shapes (3 K-groups of 4 warps at 128 rows)
    (32, *L8_GATEUP, 1, 4, 0): (2, 132),   # dense below 2^26 weights: the rule takes it
    (17, *Q_GATEUP, 1, 4, 0): (3, 132),
    (24, *Q_GATEUP, 1, 2, 0): (3, 132),
    (32, 4096, 2048, 1, 5, 0): (4, 132),   # Qwen3 q: 2 granules per CTA at most
    (32, *Q_KV, 1, 4, 0): (5, 32),         # a granule per CTA
    (32, *L8_DOWN, 1, 4, 0): (7, 132),     # K > N (since v54; the wgmma kernel before); 4 with pair fields
    (20, *L8_DOWN, 1, 2, 0): (4, 132),
    (32, *Q_DOWN, 1, 5, 0): (5, 128),
    (32, 2048, 4096, 1, 3, 0): (5, 128),   # Qwen3 o
    (20, 2056, 4096, 1, 3, 0): (5, 129),   # 129 granules on 132 SMs
    (32, *L70_GATEUP, 1, 4, 0): (0, 0),    # 2^26 weights and more: the wgmma kernel
    (32, *L70_DOWN, 1, 4, 0): (0, 0),
    (32, *L8_DOWN, 1, 4, 1): (7, 132),     # KBIT_KERNEL=rows: wherever a configuration serves
    (32, *L70_GATEUP, 1, 4, 1): (0, 0),    # no 224-row configuration at 32 rows
    # K split over clusters of two (configuration 6): one granule per CTA, two CTAs per granule
    # fit the SMs (N <= 8 x 132 = 1056), at least 64 K-tiles
    (32, 1024, 4096, 1, 4, 0): (6, 64),    # Llama-3-8B k/v: 64 clusters
    (16, 1024, 8192, 1, 2, 0): (6, 64),    # Llama-3-70B k/v
    (12, 1056, 4128, 1, 5, 0): (6, 66),
    (16, 1072, 4096, 1, 4, 0): (5, 67),    # 67 granules: 134 CTAs would not fit
    (32, 1024, 2048, 1, 4, 0): (5, 64),    # 32 K-tiles: one CTA per granule
    (33, *L8_GATEUP, 1, 4, 0): (0, 0),
    (33, *L8_DOWN, 1, 4, 1): (0, 0),
}


@pytest.fixture(scope="module")
def rule_exe(tmp_path_factory):
    return build_host_program(tmp_path_factory, "rows_rule", PROGRAM)


@pytest.fixture(scope="module")
def sync_fields_off_exe(tmp_path_factory):
    """The rule built with KBIT_ROWS_SYNC=0 and KBIT_ROWS_FIELDS=0 (the A/B
    switches of two K-tiles per group barrier, M <= 16, and of pair fields,
    M > 16: one build serves both tests)."""
    return build_host_program(tmp_path_factory, "rows_rule_sync_fields_off",
                              "#define KBIT_ROWS_SYNC 0\n#define KBIT_ROWS_FIELDS 0\n" + PROGRAM)


def run(exe, shapes):
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in shapes),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert not any("error" in line for line in out), out
    return [tuple(int(x) for x in line.split()) for line in out[:len(shapes)]]


def test_rows_rule_choices(rule_exe):
    shapes = list(EXPECTED)
    got = {s: r[:2] for s, r in zip(shapes, run(rule_exe, shapes))}
    assert got == EXPECTED


@pytest.mark.parametrize("m", [9, 16, 32])
def test_rows_every_cta_share_fits(rule_exe, m):
    """Every CTA's granules [c G / C, (c + 1) G / C) fit the configuration's
    rows, every granule has a CTA, and each configuration fits 227 KB."""
    shapes = [(m, n, k, 1, 4, int(m > 16)) for n in (16, 520, 2048, 4104, 5120, 9000, 14336, 16392)
              for k in (2048, 4096, 5120, 14336)]
    for (_, n, k, *_), r in zip(shapes, run(rule_exe, shapes)):
        id_, grid = r[:2]
        if n * k >= 1 << 26 and m <= 16:
            assert id_ == 0
            continue
        assert id_ in (1, 2, 3, 4, 5, 6, 7) and grid >= 1, (n, k, r)
        per_bits = [r[2 + NCOL * i: 2 + NCOL * (i + 1)] for i in range(4)]
        cta_rows = per_bits[0][2]
        granules = -(-n // 16)
        shares = [(c + 1) * granules // grid - c * granules // grid for c in range(grid)]
        assert min(shares) >= 1 and sum(shares) == granules
        assert max(shares) * 16 <= cta_rows, (n, k, shares, cta_rows)
        for bits, (groups, warps, rows, stages, smem, pair_perm, split, sync, fields) in zip(range(2, 6), per_bits):
            assert rows == cta_rows and (k + 63) // 64 >= groups * split
            assert smem <= 227 * 1024
            assert pair_perm == (m > 16)   # K permuted by pairs at 32 rows, every k
            assert split == (2 if id_ == 6 else 1) and (split == 1 or (k + 63) // 64 >= 64 and grid * 2 <= 132)
            assert stages >= 2 * sync


def test_rows_16_row_tiles(rule_exe, tmp_path_factory):
    """Configuration 5: CTAs that own one granule take 16-row warp tiles in 12
    K-groups of one warp (16 rows per CTA); layers of more granules than SMs
    keep 32-row tiles. A KBIT_ROWS_T1=0 build (the A/B switch) gives those
    shapes configuration 4, 32-row tiles over the same grid."""
    shapes = [(32, *Q_KV, 1, 4, 0), (32, *Q_DOWN, 1, 5, 0), (16, 2048, 4096, 1, 2, 0), (32, 4096, 2048, 1, 4, 0),
              (32, *L8_DOWN, 1, 4, 0), (20, 2056, 4096, 1, 3, 0)]
    got = run(rule_exe, shapes)
    assert [r[:2] for r in got] == [(5, 32), (5, 128), (5, 128), (4, 132), (7, 132), (5, 129)], got
    for r in got[:3] + got[5:]:
        for groups, warps, rows, stages, smem, pair_perm, split, sync, _ in (r[2 + NCOL * i: 2 + NCOL * (i + 1)]
                                                                             for i in range(4)):
            assert (groups, warps, rows, split, sync) == (12, 1, 16, 1, 1) and smem <= 227 * 1024
    off = build_host_program(tmp_path_factory, "rows_rule_t1_off", "#define KBIT_ROWS_T1 0\n" + PROGRAM)
    assert [r[:2] for r in run(off, shapes)] == [(4, 32), (4, 128), (4, 128), (4, 132), (7, 132), (4, 129)]


def test_rows_split_configuration(rule_exe, tmp_path_factory):
    """Configuration 6: configuration 5 with K split over clusters of two CTAs
    (rank 1's K-tiles after rank 0's), for layers of at most 8 x SMs rows and
    at least 64 K-tiles; the grid counts clusters. A KBIT_ROWS_SPLIT=0 build
    (the A/B switch) gives those shapes configuration 5 over the same granules."""
    shapes = [(32, 1024, 4096, 1, 4, 0), (16, 1024, 8192, 1, 2, 0), (20, 1000, 4128, 1, 3, 0),
              (9, 512, 4096, 1, 5, 0), (32, *Q_KV, 1, 4, 0)]
    got = run(rule_exe, shapes)
    assert [r[:2] for r in got] == [(6, 64), (6, 64), (6, 63), (6, 32), (5, 32)], got
    for r in got[:4]:
        for groups, warps, rows, stages, smem, pair_perm, split, sync, _ in (r[2 + NCOL * i: 2 + NCOL * (i + 1)]
                                                                             for i in range(4)):
            assert (groups, warps, rows, split, sync) == (12, 1, 16, 2, 1) and smem <= 227 * 1024
    off = build_host_program(tmp_path_factory, "rows_rule_split_off", "#define KBIT_ROWS_SPLIT 0\n" + PROGRAM)
    assert [r[:2] for r in run(off, shapes)] == [(5, 64), (5, 64), (5, 63), (5, 32), (5, 32)]


def test_rows_sync_tiles(rule_exe, sync_fields_off_exe):
    """Two K-tiles per pass of the group barrier (RowsConfig kSyncTiles, 4
    stages) at M <= 16 and k = 2..4 in configuration 3, and in 7: 4's shape
    where each of its 12 K-groups has at least 8 K-tiles. One (3 stages at
    M <= 16, 2 above) everywhere else, and everywhere in a KBIT_ROWS_SYNC=0
    build (the A/B switch), where 7's shapes at M <= 16 take 4 (that build
    has KBIT_ROWS_FIELDS=0 too: at 32 rows 7's shapes take 4 as well)."""
    shapes = [(16, *L8_GATEUP, 1, 4, 0), (16, *L8_DOWN, 1, 4, 0), (16, *L8_DOWN, 1, 3, 0), (16, *L8_DOWN, 1, 5, 0),
              (16, *Q_GATEUP, 1, 2, 0), (16, *Q_KV, 1, 4, 0), (16, 4096, 2048, 1, 4, 0), (16, 4096, 6144, 1, 4, 0),
              (16, 4096, 6080, 1, 4, 0), (16, 1024, 4096, 1, 4, 0), (32, *L8_GATEUP, 1, 4, 0),
              (32, *Q_GATEUP, 1, 4, 0), (32, *L8_DOWN, 1, 4, 0), (16, *L70_GATEUP, 1, 4, 1)]

    def check(exe, on):
        got = run(exe, shapes)
        assert [r[0] for r in got] == [2, 7 if on else 4, 7 if on else 4, 4, 3, 5, 4, 7 if on else 4, 4, 6, 2, 3,
                                       7 if on else 4, 1], got   # (32 rows: 8B down takes 7 for its pair fields)
        for (m, n, k, e, kb, forced), r in zip(shapes, got):
            for bits, (groups, warps, rows, stages, smem, pair_perm, split, sync, _) in zip(
                    range(2, 6), (r[2 + NCOL * i: 2 + NCOL * (i + 1)] for i in range(4))):
                two = on and bits != 5 and m <= 16 and r[0] in (3, 7)
                assert sync == (2 if two else 1), (m, r[0], bits, sync)
                assert stages == (4 if two else 3 if m <= 16 else 2) and smem <= 227 * 1024
                if r[0] == 7:
                    assert (groups, warps, rows) == (12, 1, 32) and (k + 63) // 64 >= 12 * 8

    check(rule_exe, True)
    check(sync_fields_off_exe, False)


def test_rows_pair_fields(rule_exe, sync_fields_off_exe):
    """Pair fields (RowsConfig kPairFields) at 32 activation rows and k = 3, 4
    only, in configuration 2 and in 7 (4's shape where each of its 12 K-groups
    has at least 8 K-tiles); never at M <= 16, at k = 2 or 5, nor in 3, 4, 5,
    6. A KBIT_ROWS_FIELDS=0 build (the A/B switch) gives 7's shapes at 32 rows
    back to 4, without them (that build has KBIT_ROWS_SYNC=0 too: at 16 rows
    7's shapes take 4 as well)."""
    shapes = [(32, *L8_GATEUP, 1, 4, 0), (32, *L8_DOWN, 1, 4, 0), (20, *L8_DOWN, 1, 3, 0), (32, *L8_DOWN, 1, 2, 0),
              (32, *L8_DOWN, 1, 5, 0), (32, 4096, 2048, 1, 4, 0), (32, 4096, 6144, 1, 3, 0), (32, 4096, 6080, 1, 3, 0),
              (32, *Q_GATEUP, 1, 4, 0), (32, *Q_DOWN, 1, 4, 0), (32, 1024, 4096, 1, 4, 0), (16, *L8_GATEUP, 1, 4, 0),
              (16, *L8_DOWN, 1, 4, 0)]

    def check(exe, on):
        got = run(exe, shapes)
        assert [r[0] for r in got] == [2, 7 if on else 4, 7 if on else 4, 4, 4, 4, 7 if on else 4, 4, 3, 5, 6, 2,
                                       7 if on else 4], got   # (16 rows: 8B down takes 7 for two K-tiles per pass)
        for (m, n, k, e, kb, forced), r in zip(shapes, got):
            for bits, (groups, warps, rows, stages, smem, pair_perm, split, sync, fields) in zip(
                    range(2, 6), (r[2 + NCOL * i: 2 + NCOL * (i + 1)] for i in range(4))):
                assert fields == int(on and m > 16 and bits in (3, 4) and r[0] in (2, 7)), (m, n, k, r[0], bits)
                assert smem <= 227 * 1024
                if r[0] == 7 and m > 16:
                    assert (groups, warps, rows, stages, sync) == (12, 1, 32, 2, 1) and (k + 63) // 64 >= 12 * 8

    check(rule_exe, True)
    check(sync_fields_off_exe, False)
