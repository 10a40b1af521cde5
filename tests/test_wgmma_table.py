"""The wgmma kernel's pair tables (ptx/kbit_wgmma.cuh: WgmmaConfig,
wgmma_k5_copies, wgmma_stages), run on the host: every configuration
kbit_wgmma_dispatch can select, for k = 2..5, fits its CTAs per SM in an
H100's shared memory with the slot table of 1024 experts, and the k = 5
table has the replicas docs/results.md v48 measured: 32 (128 KB, bank-conflict
free) where one CTA holds the SM and they leave the ring enough stages, 16 for
the 128-row tiles of 12 warps, 8 (32 KB, static) where two CTAs share an SM.
And the tiles per MMA warp the plan picks (wgmma_config_for) on the measured
shapes, and the grids KBIT_WGMMA_ALIGNED_GRID gives (wgmma_aligned_grid)."""
import subprocess

from conftest import build_host_program

PROGRAM = r"""
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_gemv.cuh"
#include "launch.cuh"
#include <cstdio>
// Prints one configuration's table and shared memory; launches nothing.
struct Describe {
  template <class Cfg> const char* operator()() const {
    // (the kernel's static shared memory: the static table, e4m4, codebook,
    // scratch and the stage barriers)
    const size_t statics = size_t(Cfg::kStaticLutWords) * 4 + 1024 + 128 + 128 + 16 * Cfg::kStages;
    std::printf("%d %d %d %d %d %d %d %d %zu %zu %zu\n", Cfg::kBits, Cfg::BLOCK_M, Cfg::kWarps, Cfg::kNT, Cfg::kMinBlocks,
                Cfg::kCopies, Cfg::kStages, int(Cfg::kDynLut), Cfg::smem_bytes(1), Cfg::smem_bytes(1024), statics);
    return nullptr;
  }
};
int main() {
  const int cfgs[] = {1, 2, 3, kbit::kWgmmaWhole};
  for (int bits = 2; bits <= 5; ++bits)
    for (int mtiles : {1, 2, 4, 8, 16})
      for (int cfg : cfgs) {
        const bool valid = cfg == 1 || (cfg == 2 && mtiles >= 2 && mtiles <= KBIT_WGMMA_NT2_MAX_MTILES) ||
                           (cfg == 3 && mtiles >= 4 && mtiles <= 8) || (cfg == kbit::kWgmmaWhole && mtiles == 16);
        if (!valid) continue;
        if (const char* err = kbit::kbit_wgmma_dispatch(bits, 0, mtiles, cfg, Describe{}))
          std::printf("error %s\n", err);
      }
  return 0;
}
"""


def test_wgmma_tables_fit_and_replicas(tmp_path_factory):
    exe = build_host_program(tmp_path_factory, "wgmma_table", PROGRAM)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    assert not any(line.startswith("error") for line in out), out
    rows = [tuple(int(x) for x in line.split()) for line in out if line]
    assert len(rows) >= 4 * 8, rows
    k5 = {}
    for bits, block_m, warps, nt, blocks, copies, stages, dyn, smem1, smem1024, statics in rows:
        c = (bits, block_m, warps, nt, blocks, copies, stages, dyn, smem1, smem1024, statics)
        # Dynamic and static shared memory and the 1 KB the driver reserves
        # per CTA: `blocks` CTAs of a dense layer share the H100's 228 KB, and
        # one CTA with the slot table of 1024 experts fits its 227 KB.
        assert blocks * (smem1 + statics + 1024) <= 228 * 1024, c
        assert smem1024 + statics <= 227 * 1024, c
        assert stages >= 3, c
        if bits == 5:
            k5[(block_m, warps, nt, blocks)] = (copies, stages)
            assert dyn == (copies > 8), c
        else:
            assert copies == 32, c
    assert k5[(64, 8, 3, 1)] == (32, 3)      # Llama-3-70B M = 64
    assert k5[(64, 8, 2, 1)] == (32, 4)      # Llama-3-8B gate/up M = 64
    assert k5[(32, 8, 3, 1)][0] == 32        # Llama-3-70B M = 32
    assert k5[(128, 12, 1, 1)] == (16, 6)    # 128-row tiles, stream-K (M = 128)
    assert k5[(128, 8, 1, 1)][0] == 32       # 128-row tiles, one per CTA
    assert all(c == (8, c[1]) for (_, _, _, blocks), c in k5.items() if blocks == 2)
    assert len(k5) >= 8, rows


RULE_PROGRAM = PROGRAM.split("// Prints one")[0] + r"""
// Reads "M N K E" lines; prints the wgmma configuration the plan picks
// (wgmma_config_for on a 132-SM GPU: 1, 2 or 3 tiles per MMA warp, or 4 for
// whole 128-row tiles) and BLOCK_M, or "none" where the wgmma kernel does not
// serve the shape.
int main() {
  int m, n, k, e;
  while (std::scanf("%d %d %d %d", &m, &n, &k, &e) == 4) {
    kbit_api::KbitArgs a{};
    a.M = m; a.N = n; a.K = k; a.E = e; a.bits = 4;
    const int mtiles = kbit::kbit_pick_mtiles(m, e);
    if (!kbit::wgmma_kernel_pays(a, mtiles)) {
      std::printf("none\n");
      continue;
    }
    const int wm = kbit::wgmma_mtiles(a, mtiles);
    std::printf("%d %d\n", kbit::wgmma_config_for(a, wm, 132), 8 * wm);
  }
  return 0;
}
"""

L70_GATEUP, L70_DOWN, L8_GATEUP, L8_DOWN = (28672, 8192), (8192, 28672), (14336, 4096), (4096, 14336)
# (M, N, K, E) -> (tiles per MMA warp or 4 = whole 128-row tiles, BLOCK_M), as
# measured (launch.cuh, wgmma_nt_for: v22, v23, v50, v51).
RULE_EXPECTED = {
    (32, *L70_GATEUP, 1): (3, 32), (64, *L70_GATEUP, 1): (3, 64), (64, *L70_DOWN, 1): (3, 64),
    (32, *L8_GATEUP, 1): (2, 32),    # 17..32 rows below 2^27: two (v51: three slower in the harness)
    (24, *L8_GATEUP, 1): (2, 32),
    (32, *L8_DOWN, 1): (2, 32),
    (64, *L8_GATEUP, 1): (2, 64),    # 33..64 rows below 2^27: two
    (64, *L8_DOWN, 1): (2, 64),      # v50: N < 8192 too (one until v49)
    (40, *L8_DOWN, 1): (2, 64),
    (32, 4096, 8192, 1): (2, 32),    # 2^25 weights: two (three 1 us slower)
    (64, 4096, 8192, 1): (2, 64),
    (32, 5120, 2048, 1): (1, 32),    # under 2^25 (Qwen3-Coder-Next): one
    (128, *L8_GATEUP, 1): (4, 128),  # 112 tiles of 128 rows on 132 SMs: whole tiles
    (128, *L70_GATEUP, 1): (1, 128),
    (16, *L70_GATEUP, 1): None,      # 9..16 rows on large layers: the decode kernel
}


def test_wgmma_rule_measured_choices(tmp_path_factory):
    exe = build_host_program(tmp_path_factory, "wgmma_rule", RULE_PROGRAM)
    shapes = list(RULE_EXPECTED)
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in shapes),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    got = [None if line == "none" else tuple(int(x) for x in line.split()) for line in out[:len(shapes)]]
    assert dict(zip(shapes, got)) == RULE_EXPECTED


ALIGNED_PROGRAM = "#define KBIT_WGMMA_ALIGNED_GRID 90\n" + PROGRAM.split("// Prints one")[0] + r"""
// Reads "M N K BLOCK_M BLOCK_N grid" lines; prints the grid wgmma_aligned_grid
// gives, the CTAs the kernel's stream-K split then uses (StreamKShare: at
// least two units each) and whether every tile's end is a share's end.
int main() {
  int m, n, k, bm, bn, grid;
  while (std::scanf("%d %d %d %d %d %d", &m, &n, &k, &bm, &bn, &grid) == 6) {
    kbit_api::KbitArgs a{};
    a.M = m; a.N = n; a.K = k; a.E = 1; a.bits = 4; a.k_tiles = k / 64;
    const int g = kbit::wgmma_aligned_grid(a, bm, bn, grid);
    const long long tiles = (long long)kbit::cdiv(m, bm) * kbit::cdiv(n, bn), U = tiles * a.k_tiles;
    const long long G = std::max(1ll, std::min((long long)g, U / 2));
    long long ends = 0;   // tile ends that are share ends (b U / G for some b)
    for (long long b = 1; b < G; ++b) ends += (b * U / G) % a.k_tiles == 0;
    std::printf("%d %lld %d\n", g, G, int(ends == tiles - 1));
  }
  return 0;
}
"""
# (M, N, K, BLOCK_M, BLOCK_N, grid) -> (grid, the kernel's CTAs, every tile end a share end)
ALIGNED_EXPECTED = {
    (64, 5120, 2048, 64, 128, 264): (240, 240, 1),    # Qwen3 gate/up: 40 tiles, 6 CTAs each
    (64, 2048, 4096, 64, 128, 264): (256, 256, 1),    # Qwen3 o: 16 tiles of 64 K-tiles
    (128, 2048, 5120, 64, 128, 264): (256, 256, 1),   # Qwen3 down at 128 rows: 32 tiles
    (64, 512, 2048, 64, 128, 264): (264, 64, 1),      # kv: the kernel's two units per CTA align it
    (64, 14336, 4096, 64, 256, 132): (132, 132, 0),   # 56 tiles: 112 CTAs would keep 85 % (< 90)
    (128, 28672, 8192, 128, 192, 132): (132, 132, 0),  # more tiles than CTAs: unchanged
}


def test_wgmma_aligned_grid(tmp_path_factory):
    """KBIT_WGMMA_ALIGNED_GRID (90 %, the default since v70; built here at 90): a whole
    number of CTAs per tile where that keeps 90 % of the wave, and then every
    tile's end is the end of a CTA's stream-K share (no CTA runs two split-tile
    epilogues)."""
    exe = build_host_program(tmp_path_factory, "wgmma_aligned", ALIGNED_PROGRAM)
    shapes = list(ALIGNED_EXPECTED)
    out = subprocess.run([str(exe)], input="".join(" ".join(map(str, s)) + "\n" for s in shapes),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    got = [tuple(int(x) for x in line.split()) for line in out[:len(shapes)]]
    assert dict(zip(shapes, got)) == ALIGNED_EXPECTED
