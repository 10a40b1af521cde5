// launch.cuh — host side of the translation unit: configuration choice,
// occupancy, workspace plans and launches. No torch here (bindings.cpp wraps it).
#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace kbit {

// ---- kbit GEMM configurations --------------------------------------------
// Activation tiles of 8 rows per CTA tile, from the rows one expert is expected
// to have (all of M for a dense layer). 8 warps of 32 weight rows each (16 for
// the wide activation tiles: accumulator registers); a 4-deep cp.async ring.
// Registers are sized for 3 CTAs per SM (<= 80 each) on the decode tiles of
// k = 2 and 4; k = 3 needs more registers and k = 5 fits only 2 CTAs per SM in
// shared memory, so those and the wider tiles get 2 CTAs (<= 128).
template <int kBits, typename T, int kMTiles>
using KbitCfg = KbitConfig<kBits, T, kMTiles, 8, (kMTiles >= 4 ? 1 : 2), 4,
                            (kMTiles == 1 && (kBits == 2 || kBits == 4) ? 3 : 2)>;

// The decode kernel (at most 8 rows per expert slot): one CTA per SM sharing
// the lookup table, a ring of stages per warp, and warp tiles of kNT x 16
// weight rows: 4 on large layers (the per-stage overhead is paid once for 128
// weights per thread), 2 on the others (twice the units, shorter per-warp
// chains, fewer rows per split tile) and for k = 5 (registers), but at M = 1
// on large layers since v35 (decode_tile_nt).
// Ring depth per tile size, by measurement (docs/results.md v7): 3 stages for
// 64-row tiles (Llama-3-70B M = 1: 60.5 vs 62.0 us with 4), 4 for 32-row tiles;
// since v35 2 at k = 4 for 64-row tiles with the activations in registers,
// i.e. the grouped layers (harness, H100, two rounds: Qwen3-Coder-Next
// experts at 4 and 16 tokens and GLM-4.7 at 16 tokens 0.5-1.8 us faster,
// 1.6-7 %; GLM at 64 tokens 0.1-1.1 us; results.md v35). Not measured at
// other k; k = 3 spills 60 bytes with 2 stages on sm_90a.
// Warps per CTA (decode_warps): 16, but 12 for the dense k = 4 configurations
// with 64-row tiles (the activation rows in the stages) and for k = 5 with
// 64-row tiles and one activation row (M = 1 on layers of 2^27+ weights).
// Measured with scripts/tc_bench.cu (H100, graph time, docs/results.md v35):
// Llama-3-70B gate/up k = 4 M = 1 46.2-47.2 vs 48.6-51.5 us, M = 4 47.6-49.0
// vs 49.3-51.6, down M = 1 47.1-48.8 vs 49.9-51.5; k = 5 M = 1 57.8-60.1 vs
// 58.7-61.1 (32-row tiles, 16 warps; 64-row tiles need the registers of 12
// warps: 168, and spill 20 bytes at 16); and the 8-row stages of M = 5..8 fit
// one SM beside the 64 KB table only with 12 warps. At k = 2 and 3 12 warps
// were 2-3.5 us slower (70B M = 1), and 10 or 14 warps (one scheduler with a
// warp more than another) 3-5 us slower than 12 at k = 4. (v7 had found 12
// warps faster at 70B but 12-15 % slower on the 8B layers, with the
// activations in registers.)
// KBIT_DECODE_WARPS / _NT / _STAGES override these for tuning experiments
// (scripts/decode_variants.py; _NT then applies to every shape).
#ifndef KBIT_DECODE_WARPS
#define KBIT_DECODE_WARPS 0
#endif
#ifndef KBIT_DECODE_NT
#define KBIT_DECODE_NT 0
#endif
#ifndef KBIT_DECODE_STAGES
#define KBIT_DECODE_STAGES 0
#endif
// Tuning: ring depth of 64-row tiles with activation rows in the stages (4 fits
// with one row; measured no faster, docs/results.md v25; with 12 warps 2 us
// slower at Llama-3-70B M = 1 and 4, v35).
#ifndef KBIT_DECODE_ACT_STAGES
#define KBIT_DECODE_ACT_STAGES 3
#endif
// 16-row tiles per warp of a configuration: the shape rule's (or
// KBIT_DECODE_NT), but 2 at k = 5 (registers) except with one activation row
// per stage, where 12 warps leave room for 64-row tiles (168 registers).
constexpr int decode_tile_nt(int bits, int nt, int act_rows) {
  const int n = KBIT_DECODE_NT > 0 ? KBIT_DECODE_NT : nt;
  return bits == 5 && !(n == 4 && act_rows == 1) ? 2 : n;
}
// Warps per CTA: 12 for the dense 64-row configurations of k = 4 and 5 (see
// above) and for those of k = 3 with 8 activation rows per stage, else 16.
// (k = 3 with 8 rows since v38, measured in v37: with 16 warps its loop
// sits at the 128-register cap, where ptxas spilled 4-12 bytes in it after
// changes to the code past the loop; 12 warps were level, 45.2 vs 45.1 us
// at Llama-3-70B M = 8 in tc_bench. With 4 rows, 12 warps were 3-4 % slower
// at M = 1 and 4: results.md v37.)
// With 16 activation rows per stage (dense M = 9..16), 12 warps for the
// 64-row tiles (16 would leave 128 registers for the doubled accumulators)
// and for the 32-row tiles of k = 5, 16 for the 32-row tiles of k = 2..4
// (the layers of 2^23..2^27 weights: the configuration measured there in
// v36-v38; 12 warps with 3 stages were not measured on those layers).
constexpr int decode_warps(int bits, int nt, int act_rows) {
  return KBIT_DECODE_WARPS > 0                        ? KBIT_DECODE_WARPS
         : nt == 8                                    ? 12   // (decode_tile128)
         : act_rows == 16                             ? (nt == 2 && bits <= 4 ? 16 : 12)
         : bits >= 4 && nt == 4 && act_rows > 0       ? 12
         : bits == 3 && nt == 4 && act_rows == 8      ? 12
                                                      : 16;
}
// Ring depth (see above). 16 activation rows per stage: 2 stages of 64-row
// tiles (3 do not fit beside the table and the 16-column part buffers), 3 of
// the 32-row tiles of k = 5 (12 warps), 2 of the other 32-row tiles (16 warps).
constexpr int decode_stages(int bits, int nt, int act_rows) {
  return KBIT_DECODE_STAGES > 0 ? KBIT_DECODE_STAGES
         : nt == 8              ? 2   // (decode_tile128)
         : act_rows == 16       ? (nt == 4 || bits <= 4 ? 2 : 3)
         : nt == 4              ? (act_rows > 0 ? KBIT_DECODE_ACT_STAGES : bits == 4 ? 2 : 3)
                                : 4;
}
// Activation rows carried in the ring stages (DecodeConfig::kActRows) where
// every row fits: dense M <= 4 (those configurations are dense-only).
// KBIT_DECODE_ACT_ROWS=0 keeps the activations in registers everywhere (A/B).
#ifndef KBIT_DECODE_ACT_ROWS
#define KBIT_DECODE_ACT_ROWS 4
#endif
template <int kBits, typename T, int kNT, int kActRows = 0, int kHelpers = -1,
          int kNt = decode_tile_nt(kBits, kNT, kActRows)>
using DecodeCfg = DecodeConfig<kBits, T, decode_warps(kBits, kNt, kActRows), kNt,
                               decode_stages(kBits, kNt, kActRows), kActRows, kHelpers>;

// Shape rule, by measurement (H100, graph time, both kernels and both warp
// tiles on every M <= 4 benchmark: docs/results.md "decode crossover", v17):
// * dense layers, M <= 4: the decode kernel, with 64-row warp tiles on layers
//   of at least 2^27 weights (Llama-3-70B: 63 vs 72 us at M = 1, 69 vs 73 us
//   at M = 4), else 32-row tiles (M = 1: Llama-3-8B 24 vs 27 us, Qwen3 layers
//   8-13 vs 9-13 us; M = 4, with its rows in the ring stages: Llama-3-8B 20
//   vs 25 us, Qwen3 layers 7.4-10.2 vs 7.9-11.3 us);
// * grouped layers with at most 8 rows per expert (on average) and at least
//   2^22 weights in the active experts (min(E, M) of them; the host does not
//   know how many are empty): the decode kernel with 64-row warp tiles
//   (docs/results.md v13: Qwen3-Coder-Next experts at 16 tokens, gate/up
//   65.9 vs 94.0 us with the tiled kernel, down 42.8 vs 56.3; GLM-4.7 at 64
//   tokens 52.2 vs 67.0; at 1 token level, 16.9 vs 16.8). v26: Qwen3 down at
//   1 token (10 experts of 2048 x 512, 2^23.3 weights) 9.9-10.4 vs 12.7-12.8
//   us, so the bound moved from 2^24 to 2^22, between that case and the
//   smallest measured one below (the boundary itself is not measured);
// * dense layers at M = 5..8 with at least 2^25 weights, k = 2..4: the decode
//   kernel with the 8 activation rows in the ring stages (decode_act8_fits),
//   in 64-row warp tiles on layers of at least 2^27 weights (v35, H100,
//   tc_bench, Llama-3-70B gate/up M = 8: k = 4 (12 warps) 49.7-51.0 vs
//   54.7-56.2 us, down 51.8-52.5 vs 55.1-56.0; k = 3 45.7-47.2 vs 53.7-54.8;
//   k = 2 42.9-43.5 vs 48.4-49.1), else in 32-row tiles (Llama-3-8B k = 4:
//   level, 18.6-19.6 us either way). The 32-row tiles against 64-row tiles
//   with the activations in registers (v26, H100, M = 8, those with
//   the activations in registers: Llama-3-70B gate/up 55.4-55.5 vs
//   62.9-63.1 us, down 54.7-56.1 vs 65.2-66.3, Llama-3-8B gate/up 18.0-18.5
//   vs 22.9-23.1, down 19.8-20.1 vs 24.2-24.5; those in turn against the
//   tiled kernel: 70B 62.0-62.7 vs 73.0-73.2, 8B gate/up 22.6-22.8 vs
//   24.8-25.1; with registers, 32-row tiles were 9 % slower than the tiled
//   kernel on 8B down). M = 5..7 by construction: the kernels compute 8-row
//   activation tiles, whatever the rows. The smaller layers and k = 5 (whose
//   8-row stages do not fit) keep the tiled kernel (not measured at
//   M = 5..8);
// * everything else, the tiled kernel: on small grouped layers it measured
//   faster (4 active experts of 512 x 512, 2^20 weights: 8.1-8.2 vs 9.2-9.3
//   us in v26).
inline bool decode_large_layer(const kbit_api::KbitArgs& a) { return (long long)a.N * a.K >= (1ll << 27); }
inline bool decode_grouped(const kbit_api::KbitArgs& a) {
  const long long active = a.E < a.M ? a.E : a.M;
  return a.E > 1 && active * a.N * a.K >= (1ll << 22);
}
inline bool decode_dense_wide(const kbit_api::KbitArgs& a) {
  return a.E == 1 && a.M > 4 && a.M <= 8 && a.bits != 5 && (long long)a.N * a.K >= (1ll << 25);
}
// Dense M = 5..8 with all 8 activation rows in the ring stages: 32-row or
// 64-row warp tiles (at k = 4 the 64-row stages fit one SM beside the table
// only with 12 warps: decode_warps), not at k = 5 (its stages do not fit).
// KBIT_DECODE_ACT8=0: 64-row tiles, activations in registers (A/B); so does
// KBIT_DECODE_ACT_ROWS=0 (registers everywhere). (KBIT_DECODE_WARPS=16 makes
// the k = 4 configuration too large: a compile-time error.)
#ifndef KBIT_DECODE_ACT8
#define KBIT_DECODE_ACT8 1
#endif
constexpr bool decode_act8_fits(int bits, int nt) {
  return KBIT_DECODE_ACT8 && KBIT_DECODE_ACT_ROWS > 0 && (nt == 2 || nt == 4 || (nt == 8 && bits == 2)) && bits != 5;
}
// Dense M = 9..16: 16-row slots, the 16 activation rows in the ring stages
// (kActRows = 16; each dequantized fragment feeds two n8 MMAs). The shape rule
// takes them on layers of at least 2^23 weights (decode_kernel_pays), every k,
// in 64-row tiles from 2^27 weights and 32-row tiles of 16 warps below;
// KBIT_KERNEL=decode / decode64 takes them at any size. Measured against the
// mma.sync tiled kernel, the rule's choice there before (v36, H100, graph
// time, docs/results.md v36; harness A/B in one call, two rounds):
// Llama-3-70B M = 16 k = 4 gate/up 61.5-62.2 vs 72.3-73.6 us, down 66.6-67.8
// vs 71.7-72.8; k = 2 55.3-56.4 vs 66.3-67.8; k = 3 59.4-60.3 vs 73.1-73.9;
// k = 5 (32-row tiles) 83.5 vs 109.9. Until v38 the smaller layers kept the
// other kernels: a tile split between CTAs cost 2-4 round trips more at the
// end of the call at 16 rows. Since those slots travel in one batch
// (finish_spanning, kbit_decode.cuh), against v37's rule (v38, harness A/B,
// two rounds, docs/results.md v38): Llama-3-8B gate/up 22.7-22.9 (32-row
// tiles) vs 25.4-25.6 us (tiled kernel), down 24.6-24.8 vs 24.9-25.0;
// Qwen3-Coder-Next (wgmma before) gate/up 10.9-11.0 vs 13.0-13.1, down
// 11.5-11.9 vs 13.0-13.1, q (2^23 weights) 8.3-9.0 vs 11.9-12.1, o 10.4-10.8
// vs 12.0-12.2. Below 2^23 weights (Qwen3 kv) not measured. Since v52 the
// sm90 family gives the layers below 2^26 weights to the row-owning kernel
// first (rows_kernel_pays, below), so there these slots serve the 70B-sized
// layers; the sm80 family keeps them from 2^23.
// KBIT_DECODE_ACT16=0 turns it off (A/B).
#ifndef KBIT_DECODE_ACT16
#define KBIT_DECODE_ACT16 1
#endif
inline bool decode_dense16(const kbit_api::KbitArgs& a) {
  return KBIT_DECODE_ACT16 && KBIT_DECODE_ACT_ROWS > 0 && a.E == 1 && a.M > 8 && a.M <= 16;
}
inline bool decode_dense16_pays(const kbit_api::KbitArgs& a) {
  return decode_dense16(a) && (long long)a.N * a.K >= (1ll << 23);
}
inline bool decode_kernel_pays(const kbit_api::KbitArgs& a) {
  return (a.E == 1 && a.M <= 4) || decode_dense_wide(a) || decode_grouped(a) || decode_dense16_pays(a);
}
// 16-row tiles per warp of the decode kernel for this shape (DecodeCfg keeps
// 32-row tiles at k = 5 but with one activation row). Dense M = 1 at k = 4
// takes 64-row tiles (12 warps, one row) from 2^25 weights: Llama-3-8B
// gate/up 15.9-16.0 vs 16.2-16.6 us, down 16.4 vs 17.2 (v35, harness, two
// rounds each; tc_bench 15.4-17.0 vs 15.9-16.8 and 16.4-17.2 vs 16.6-17.9);
// at M = 4 they were level or slower there (down 18.1-19.0 vs 17.7-18.6),
// so 2^27 stays the bound for M = 2..4. Below 2^27, 32-row tiles where only
// their count aligns to the grid (decode_aligned_ctas): Llama-3-8B down (128
// tiles of 32 rows, 64 of 64) 14.9-15.8 vs 16.1-16.8 us (v46, tc_bench).
// k = 2 at M = 1 on layers of 2^27+ weights: 128-row warp tiles (kNT = 8) of
// 12 warps (168 registers; 16 warps spill), one activation row, 2 ring
// stages: a stage's copies, waits, scale decode and loop control serve twice
// the weights (sm_90a: 503 loop instructions per 128-row K-tile against
// 2 x 292 on 64-row tiles). By measurement (H100, graph us, docs/results.md
// v43): tc_bench, Llama-3-70B gate/up 32.5-33.1 (one reading of 16: 34.6)
// against 33.4-34.4 with 64-row tiles of 16 warps, down (3 stages) 33.5-34.6
// against 34.2-35.5; harness A/B, gate/up 33.46-33.63 against 34.38-34.39.
// Not on Llama-3-8B (14.5-15.5 against 12.6-13.3: half the tiles of 64
// rows), not at k = 4 (48.4-49.7 against 46.6-47.7).
// At M = 2..8 (4 or 8 activation rows per stage, 2 stages) only where every
// CTA has a tile of 128 rows or more (cdiv(N, 128) >= CTAs): tc_bench, v44,
// Llama-3-70B gate/up (224 tiles) M = 2 34.0-34.1 against 35.3-35.5 us, M = 4
// 35.0-35.2 against 36.3-36.4, M = 6 35.7-36.2 against 38.0-38.3, M = 8
// 38.1-38.5 against 38.5-39.5; down (64 tiles, each split between two CTAs
// and all their warps: larger parts to add) level at M = 4 and 1.8 us slower
// at M = 8 (measured in v43). docs/results.md v43, v44.
// KBIT_DECODE_TILE128=0 turns it off (A/B).
#ifndef KBIT_DECODE_TILE128
#define KBIT_DECODE_TILE128 1
#endif
constexpr bool decode_act1_pays(int bits, int nt);   // (below)
inline bool decode_tile128(const kbit_api::KbitArgs& a, int ctas) {
  return KBIT_DECODE_TILE128 && KBIT_DECODE_NT == 0 && a.E == 1 && a.bits == 2 && decode_large_layer(a) &&
         KBIT_DECODE_ACT_ROWS > 0 &&
         (a.M == 1 ? decode_act1_pays(2, 8) : a.M <= 8 && (long long)cdiv(a.N, 128) >= ctas);
}
// Dense decode grids aligned to tiles: where a grid of at most the resident
// CTAs and at least KBIT_DECODE_ALIGN % of them divides the tile count, every
// CTA takes whole tiles and no tile is split between CTAs: no slot stores,
// count or slot loads at the end of the call, which cost 1-4 us there
// (docs/results.md v45, probe 4096). H100, tc_bench, v46, against the full
// grid (132 CTAs): Llama-3-70B down (128 tiles of 64 rows on 128 CTAs) M = 1
// 45.3-46.4 vs 47.2-47.7 us, M = 4 45.5-46.2 vs 48.4-48.7, M = 8 46.5-47.5
// vs 50.2-51.0, M = 16 56.4-57.2 vs 61.0-61.2; Llama-3-8B down (128 tiles of
// 32 rows) M = 4 16.1-16.7 vs 18.1-18.3, M = 8 16.3-17.0 vs 19.2-19.4,
// M = 16 20.6-21.1 vs 23.8-24.0. A grid of 112 for Llama-3-70B gate/up (448
// tiles, KBIT_DECODE_ALIGN=84) was 2.5-3.3 us slower: too few SMs to keep
// the dequantization up. 0 turns it off (A/B).
#ifndef KBIT_DECODE_ALIGN
#define KBIT_DECODE_ALIGN 96
#endif
// The aligned grid for `tiles` on at most `ctas` CTAs, or 0 where none is;
// with `pairs`, the grid whose CTA pairs (2q, 2q + 1) take whole tiles where
// no grid aligns and the layer has more tiles than CTAs.
inline int decode_aligned_ctas(long long tiles, int ctas, bool pairs = false) {
  if (KBIT_DECODE_ALIGN <= 0 || KBIT_DECODE_ALIGN > 100) return 0;
  for (int g = ctas; g > 0 && g * 100ll >= (long long)ctas * KBIT_DECODE_ALIGN; --g)
    if (tiles % g == 0) return g;
  if (pairs && tiles > ctas)
    for (int g = ctas & ~1; g > 0 && g * 100ll >= (long long)ctas * KBIT_DECODE_ALIGN; g -= 2)
      if (tiles % (g / 2) == 0) return g;
  return 0;
}
// The grid of a dense decode call: aligned where the layer fills the grid
// (a smaller one gets fewer CTAs from the split itself: decode_ctas).
inline int decode_aligned_grid(long long tiles, long long units, int per_cta, int grid) {
  if ((units + per_cta - 1) / per_cta < grid) return grid;
  const int g = decode_aligned_ctas(tiles, grid);
  return g > 0 ? g : grid;
}
// Pairs of CTAs (families with clusters, launch.cuh kbit_decode_plan_cfg):
// where no grid aligns, a dense layer that fills the grid runs on the grid
// whose CTA pairs take whole tiles (decode_aligned_ctas), launched in
// clusters of two CTAs. Each CTA then shares at most one tile, with its pair,
// split in the middle (the even split of the units puts the pair's boundary
// there), instead of up to two with neighbours at any K-tile, and the second
// CTA's part of it goes to the first through distributed shared memory
// (kbit_decode.cuh, finish_pair), not through workspace slots and a count.
// Llama-3-70B gate/up (448 tiles of 64 rows) and Llama-3-8B gate/up (448
// tiles of 32 rows) run on 128 CTAs, 3.5 tiles each. H100, tc_bench, v47
// (call 5, two rounds), against the 132-CTA grid with slots: 70B gate/up
// M = 1 46.5-46.8 vs 46.8-47.0 us, M = 4 46.9-47.3 vs 47.5-47.7, M = 8
// 48.0-48.6 vs 48.8-49.3; 8B gate/up M = 4 15.9-16.1 vs 16.5-16.8, M = 8
// 16.8-17.0 vs 17.2-17.7, M = 16 (32-row tiles) 20.9-21.5 vs 22.4-22.7. The
// pair grid with slots instead of clusters was level or slower (47.4-47.9 at
// 70B M = 1), and so was 70B M = 16 in either form (58.8-59.6 vs
// 57.7-58.1: its 16-row slots in 64-row tiles are bound by the loop, and
// lose 4 of 132 SMs), which keeps the full grid. 0 where this does not
// apply; KBIT_DECODE_PAIRS=0 turns it off (A/B), 2 launches the clusters but
// keeps the slots (the launch alone: level with no clusters, v47).
#ifndef KBIT_DECODE_PAIRS
#define KBIT_DECODE_PAIRS 1
#endif
inline int decode_pair_ctas(long long tiles, long long units, int per_cta, int grid) {
  if (!KBIT_DECODE_PAIRS || units / per_cta < grid || decode_aligned_ctas(tiles, grid) > 0) return 0;
  return decode_aligned_ctas(tiles, grid, true);
}

inline int decode_nt(const kbit_api::KbitArgs& a, int ctas) {
  if (decode_tile128(a, ctas)) return 8;
  if (decode_dense16(a)) return decode_large_layer(a) ? 4 : 2;   // (k = 5: 32-row tiles, decode_tile_nt)
  if (decode_dense_wide(a)) return decode_large_layer(a) || !decode_act8_fits(a.bits, 2) ? 4 : 2;
  if (a.E == 1 && a.M == 1 && a.bits == 4 && (long long)a.N * a.K >= (1ll << 25)) {
    const bool only_32_rows_align = !decode_large_layer(a) && !decode_aligned_ctas(cdiv(a.N, 64), ctas) &&
                                    decode_aligned_ctas(cdiv(a.N, 32), ctas);   // (Llama-3-8B down)
    return only_32_rows_align ? 2 : 4;
  }
  return decode_large_layer(a) || a.E > 1 ? 4 : 2;
}
// The dense configurations' 32-bit split arithmetic (DecodeSplit<.., true>):
// every product of a CTA count (up to `ctas` + 1) or a warp index with the
// unit count must stay below 2^31. Units: n-blocks x K-tiles, counted for
// the smaller (32-row) warp tile.
inline bool decode_dense_narrow(const kbit_api::KbitArgs& a, int ctas) {
  const long long units = (long long)cdiv(a.N, 32) * a.k_tiles;
  return units * (ctas + 1) < (1ll << 31) && units * 32 < (1ll << 31);
}
// Activation rows per ring stage: KBIT_DECODE_ACT_ROWS for dense layers whose
// rows all fit, 8 at dense M = 5..8 where decode_act8_fits (the configurations
// with them are dense-only: DecodeConfig::kDense), else 0 (registers; grouped
// layers, dense M = 5..8 at k = 5, and dense layers too large for 32-bit
// split arithmetic). `ctas`: the grid bound.
// At M = 1 a stage carries the one row (kActRows = 1: 384 fewer bytes per
// stage to copy from L2 and land, and no FFMAs for the MMA's second column)
// where that measured faster (decode_act1_pays) on layers with at least 2^24
// weights: 32-row tiles (H100, graph time, docs/results.md v25: Llama-3-8B
// -2.5 to -4 %, Llama-3-70B k = 5 -2 %) and the 12-warp 64-row tiles of
// k = 4 (v35, tc_bench: Llama-3-70B gate/up 46.2-47.2 vs 46.8-47.8 us). Not
// the smaller Qwen3 layers (level on gate/up and o, 10 % slower on q), nor
// 16-warp 64-row tiles at k = 3 (1 % faster in v35, but the build spills 16
// to 40 bytes on sm_90a). At k = 2 the 16-warp 64-row tiles take it since v40,
// whose shorter lookups left them without a spill (124 registers): tc_bench
// Llama-3-70B gate/up 33.6-33.8 vs 35.3-35.8 us (docs/results.md v40).
// KBIT_DECODE_ACT1=0 turns it off (A/B).
#ifndef KBIT_DECODE_ACT1
#define KBIT_DECODE_ACT1 1
#endif
constexpr bool decode_act1_pays(int bits, int nt) {
  return KBIT_DECODE_ACT1 && (nt == 2 || (bits != 3 && nt == 4) || (bits == 2 && nt == 8));
}
inline int decode_act_rows(const kbit_api::KbitArgs& a, int ctas, int nt) {
  const int tile_nt = KBIT_DECODE_NT > 0 ? KBIT_DECODE_NT : nt;   // (k = 5: 64-row tiles only with one row)
  if (decode_dense16(a)) return 16;   // (decode_serves: dense M = 9..16 where the split fits 32 bits)
  if (a.E == 1 && a.M > KBIT_DECODE_ACT_ROWS && a.M <= 8 && decode_act8_fits(a.bits, tile_nt) &&
      decode_dense_narrow(a, ctas))
    return 8;
  if (!(a.E == 1 && a.M <= KBIT_DECODE_ACT_ROWS && decode_dense_narrow(a, ctas))) return 0;
  const bool one_row = a.M == 1 && (long long)a.N * a.K >= (1ll << 24) && decode_act1_pays(a.bits, tile_nt);
  return one_row ? 1 : KBIT_DECODE_ACT_ROWS;
}

// The decode configuration of a shape: 16-row tiles per warp (decode_nt) and
// activation rows per stage (decode_act_rows). The 128-row tiles exist with
// the rows in the stages only: where the split arithmetic does not fit 32
// bits (the rows then stay in registers), 64-row tiles.
inline void decode_shape(const kbit_api::KbitArgs& a, int ctas, int& nt, int& act) {
  nt = decode_nt(a, ctas);
  act = decode_act_rows(a, ctas, nt);
  if (nt == 8 && act == 0) {
    nt = 4;
    act = decode_act_rows(a, ctas, nt);
  }
}

// Split-tile sums by helper warps (DecodeConfig::kSumByHelpers) for the
// 16-row slots of k = 4 in 64-row tiles, where the grid is aligned to whole
// tiles (decode_aligned_grid) with one tile per CTA: the tile spans all 12
// warps, whose first warp otherwise adds 11 parts alone at the end of the
// call. (`ctas`: the grid bound; the configuration runs one CTA per SM.)
// H100, harness, v46, two rounds each (the configuration is shared with
// gate/up, where tiles span 3-4 warps): Llama-3-70B down M = 16 54.4-55.0 us
// with helpers against 57.4-57.7 without, gate/up 59.0-61.3 with against
// 57.9-58.6 without. At M <= 8 they were level at down and up to 1.4 us
// slower at gate/up M = 8 (v46), so only the 16-row slots.
// KBIT_DECODE_ALIGN_HELPERS=0 turns it off (A/B).
#ifndef KBIT_DECODE_ALIGN_HELPERS
#define KBIT_DECODE_ALIGN_HELPERS 1
#endif
inline bool decode_helpers(const kbit_api::KbitArgs& a, int ctas, int nt, int act) {
  if (!(KBIT_DECODE_ALIGN_HELPERS && a.E == 1 && a.bits == 4 && nt == 4 && act == 16)) return false;
  using Cfg = DecodeCfg<4, __half, 4, 16>;   // (its tile and warps; the same in bf16)
  const long long tiles = (long long)cdiv(a.M, Cfg::BLOCK_M) * cdiv(a.N, Cfg::BLOCK_N);
  return tiles == decode_aligned_grid(tiles, tiles * a.k_tiles, Cfg::kWarps * kDecodeMinUnits, ctas);
}

// Whether the decode kernel can serve the shape: up to 8 rows per expert slot
// (mtiles == 1), or dense M = 9..16 in 16-row slots (decode_dense16) where the
// split arithmetic fits 32 bits. `ctas`: the grid bound.
inline bool decode_serves(const kbit_api::KbitArgs& a, int mtiles, int ctas) {
  return mtiles == 1 || (decode_dense16(a) && decode_dense_narrow(a, ctas));
}

#ifndef KBIT_HAS_WGMMA
#define KBIT_HAS_WGMMA 0
#endif
#if KBIT_HAS_WGMMA
#ifndef KBIT_WG128_WARPS
#define KBIT_WG128_WARPS 12
#endif
// wgmma kernel (sm90 family): BLOCK_M activation rows per tile. Two CTAs of
// 8 warps per SM (<= 128 registers) up to 64 rows; the 128-row tile's 64
// accumulators need more registers, so one CTA per SM with a deeper ring, of
// 12 MMA warps (three warpgroups, BLOCK_N = 192; 152 registers) and a copy
// warpgroup that hands them its registers (kbit_wgmma.cuh). H100, graph time,
// Llama-3-70B M = 128 gate/up and down, before the copy warpgroup: 8 warps 214
// / 200 us, 12 warps 207 / 190, 16 warps (128 registers: spills) 234 / 214
// (docs/results.md v12).
// Ring depth 6 (4 for the 64-row tile of two CTAs per SM), less where the wide
// pair table needs the room (wgmma_stages: k = 4 keeps 5 stages at 32 rows, 3
// at 64).
// kNT = 2 or 3 (9..64 rows): two or three 16-row weight tiles per MMA warp,
// BLOCK_N 256 or 384, one CTA per SM of 8 MMA warps and a copy warpgroup (MMA
// warps up to 240 registers).
constexpr int wgmma_warps(int block_m, int nt) { return block_m >= 128 && nt == 1 ? KBIT_WG128_WARPS : 8; }
constexpr int wgmma_blocks(int block_m, int nt) { return block_m >= 128 || nt > 1 ? 1 : 2; }
constexpr int wgmma_depth(int bits, int block_m, int nt, int warps) {
  return wgmma_stages(bits, block_m, warps, nt, wgmma_blocks(block_m, nt), block_m == 64 && nt == 1 ? 4 : 6);
}
template <int kBits, typename T, int kBlockM, int kNT = 1, int kWarps = wgmma_warps(kBlockM, kNT)>
using WgmmaCfg = WgmmaConfig<kBits, T, kBlockM, wgmma_depth(kBits, kBlockM, kNT, kWarps), wgmma_blocks(kBlockM, kNT),
                             kWarps, kNT>;
// Shape rule, by measurement (H100, graph time; docs/results.md v12, with
// each kernel forced in the same call): the wgmma kernel where an expert has
// more than 16 rows (Llama-3-70B gate/up M = 128: 177 vs 300 us with
// mma.sync), and at 9..16 rows on layers under 2^25 weights, where the two
// are level (Qwen3 M = 16: 7.8-12.7 us either way). At 9..16 rows on larger
// layers mma.sync is faster (Llama-3-70B M = 16: 82 vs 106 us; 8B: 28 vs 33).
// 128-row tiles (one CTA per SM) where an expert has more than 64 rows on
// layers of at least 2^25 weights (Llama-3-8B gate/up M = 128: 59 vs 74 us
// with 64-row tiles, down 55 vs 70); on the Qwen3 layers (< 2^24) 64-row
// tiles (gate/up 24 vs 29 us, kv 13 vs 18).
// Since v38 dense M = 9..16 from 2^23 weights goes to the decode kernel
// instead (decode_dense16_pays; the plan asks the wgmma kernel first).
inline bool wgmma_kernel_pays(const kbit_api::KbitArgs& a, int mtiles) {
  return mtiles >= 4 || (mtiles == 2 && (long long)a.N * a.K < (1ll << 25) && !decode_dense16_pays(a));
}
// (KBIT_KERNEL=wgmma, a.kernel == 4: 128-row tiles wherever an expert has
// more than 64 rows, so that the tests and the sanitizer reach them on small
// layers.)
inline int wgmma_mtiles(const kbit_api::KbitArgs& a, int mtiles) {
  const int active = a.E < a.M ? a.E : a.M;
  const int rows = cdiv(a.M, active > 0 ? active : 1);
  const bool large = a.kernel == 4 || (long long)a.N * a.K >= (1ll << 25);
  return mtiles == 8 && rows > 64 && large ? 16 : mtiles;
}
// 16-row weight tiles per MMA warp: two on layers of at least 2^25 weights
// at 9..64 rows; three instead at 17..64 rows on layers of at least 2^27
// weights (forced: two or three at 9..64 rows everywhere, three where
// N >= 512; up to 8 rows, which the shape rule never sends to this kernel,
// forcing keeps one), else one. H100, graph time:
// * three tiles (v23): Llama-3-70B M = 32 74.2-76.0 vs 81.1-83.1 us with two
//   (both with the copy warpgroup), M = 64 level to 7 % faster (k = 2, 5);
//   8B (18 units per CTA) 1-17 % slower;
// * two tiles at 32 rows: Llama-3-70B 88.7-90.3 vs 94.4-94.5 us, 8B
//   30.7-31.0 vs 30.8-32.0 with a single copy warp (docs/results.md v22),
//   with the copy warpgroup 70B 81.1-83.1, 8B 28.0-29.6 (v23); on the Qwen3
//   layers (< 2^24) one tile per warp is 6-9 % faster (13.6-14.3 vs 14.5-15.7
//   us): fewer, wider tiles leave SMs idle.
// * 64 rows (with the copy warpgroup; v23): 70B gate/up and down 96.8-97.4 /
//   93.9 vs 110.8-111.7 / 108.3-108.6 us, k = 2 / 3 13 / 10 % faster, k = 5
//   level; 8B gate/up (N 14336) 36.5-36.6 vs 37.8-38.2. 8B down (N 4096, 16
//   tiles of 256 rows) was then 1-3 % slower at k = 2..4 and 10 % at k = 5,
//   and until v50 the rule asked for N >= 8192 at 33..64 rows. Measured again
//   on v49's kernel (tc_bench, docs/results.md v50), two tiles are faster
//   there at every k: 8B down M = 64 k = 2 / 3 / 4 / 5 27.9-28.4 / 31.4-32.3 /
//   31.3-32.4 / 38.3-38.9 vs 32.2-32.8 / 33.9-34.9 / 34.4-35.0 / 43.0-43.5 us,
//   M = 40 31.7-32.2 vs 34.8-35.3; N 4096 x K 8192 (2^25) 23.8-24.6 vs
//   24.7-25.2, N 2048 x K 16384 level (24.2-25.1 vs 24.4-25.3).
// * three tiles at 17..32 rows below 2^27: tc_bench had them faster on
//   Llama-3-8B (2^25.8; v50, two rounds: gate/up M = 32 k = 2 / 4 / 5
//   25.7-26.5 / 28.2-28.7 / 34.3-34.6 vs 26.9-27.1 / 29.6-30.6 / 35.3-35.9
//   us, down M = 32 27.4-28.2 vs 27.9-28.3), and v50's rule took them from
//   3 * 2^24 weights. The harness, the measure that counts, had them slower
//   on the same H100 (v51, four alternating rounds: gate/up M = 32
//   28.81-29.42 vs 28.56-28.72 us, down 29.46-30.07 vs 28.12-28.80), so
//   the bound is 2^27 again. At 33..64 rows they are slower on 8B too (down
//   M = 64 33.0-33.6 vs 31.7-31.9 in tc_bench, gate/up level).
// * 128 rows: two tiles are slower (8B gate/up 51.6 vs 47.5 us).
#ifndef KBIT_WGMMA_NT2_MAX_MTILES
#define KBIT_WGMMA_NT2_MAX_MTILES 8   // the largest mtiles with two tiles per warp (4, 8 or 16)
#endif
inline int wgmma_nt_for(const kbit_api::KbitArgs& a, int mtiles) {
  const long long weights = (long long)a.N * a.K;
  const bool forced = a.kernel == 4, large = forced || weights >= (1ll << 25);
  if (!(mtiles >= 2 && mtiles <= KBIT_WGMMA_NT2_MAX_MTILES && large)) return 1;
  const bool three = forced ? a.N >= 512 : weights >= (1ll << 27);
  return mtiles >= 4 && mtiles <= 8 && three ? 3 : 2;
}
// The wgmma configuration (plan->wgmma): 1, 2 or 3 16-row weight tiles per MMA
// warp (wgmma_nt_for), or kWgmmaWhole: 128-row tiles of 8 MMA warps (BLOCK_N
// 128) and one CTA per tile, for a dense layer whose 128 x 128 tiles fill
// 80..100 % of one wave (forced: any dense layer of at most one wave).
// Stream-K splits tiles to fill every SM, and a split 128-row tile costs each
// of its CTAs 128 fp32 columns of workspace sums, which all CTAs issue at
// about the same time. H100, graph time, Llama-3-8B gate/up M = 128 (112
// tiles on 132 SMs): 42.5-42.7 vs 46.7-47.2 us with 12 warps and stream-K;
// stream-K with 8 warps 47.8-48.0; on 70B (224 tiles) 8 warps are 5-10 %
// slower. Whole tiles at 32 / 64 rows (70B gate/up, 112 tiles of 256 rows)
// were 7 % / 1 % slower: their split sums are narrower, and each CTA then
// covers 128 K-tiles instead of 109 (docs/results.md v23).
constexpr int kWgmmaWhole = 4;
// Dense layers with fewer tiles than CTAs, in configurations of two CTAs per
// SM: a grid of a whole number s of CTAs per tile, where it keeps at least
// KBIT_WGMMA_ALIGNED_GRID % of the wave (0: off). Stream-K's shares
// (StreamKShare: CTA b takes units b U / G up to (b + 1) U / G) then end
// exactly at tile ends, so no CTA runs two split-tile epilogues. On the
// Qwen3-Coder-Next layers at 64 rows (H200, v69 timeline) the CTAs whose
// share crosses a tile end leave their loop ~6 us after the others (two
// claims and publishes of 64 x 128 fp32 parts, 2-5 us each). tc_bench, H200,
// 90 %, three rounds (docs/results.md v69): Qwen3 down M = 64 -0.8..-1.0 us,
// M = 128 -0.9..-1.2, gate/up and q -0.0..-0.4, o and kv level; Llama-3-8B
// down M = 64 (one CTA per SM, 128 of 132 CTAs) +0.7..+2.2 at k = 2..5, hence
// two CTAs per SM only. On since v70 (harness A/B in docs/results.md v70).
// (decode_aligned_ctas is the other direction: more tiles than CTAs, a grid
// that divides them.)
#ifndef KBIT_WGMMA_ALIGNED_GRID
#define KBIT_WGMMA_ALIGNED_GRID 90
#endif
inline int wgmma_aligned_grid(const kbit_api::KbitArgs& a, int block_m, int block_n, int grid) {
  const long long tiles = (long long)cdiv(a.M, block_m) * cdiv(a.N, block_n);
  if (KBIT_WGMMA_ALIGNED_GRID <= 0 || tiles >= grid) return grid;
  long long per_tile = grid / tiles;
  // (the kernel keeps at least two units per CTA: beyond k_tiles / 2 CTAs per
  // tile its own G, U / 2, is aligned already)
  if (per_tile > a.k_tiles / 2) return grid;
  const long long g = tiles * per_tile;
  return g * 100 >= (long long)grid * KBIT_WGMMA_ALIGNED_GRID ? int(g) : grid;
}
#ifndef KBIT_WHOLE_TILE_FILL
#define KBIT_WHOLE_TILE_FILL 80   // % of one wave the 128 x 128 tiles must fill for kWgmmaWhole (> 100: never)
#endif
inline int wgmma_config_for(const kbit_api::KbitArgs& a, int mtiles, int sms) {
  const int nt = wgmma_nt_for(a, mtiles);
  if (mtiles != 16 || a.E != 1) return nt;
  const long long tiles = (long long)cdiv(a.M, 128) * cdiv(a.N, 128);
  const bool fills = a.kernel == 4 || tiles * 100 >= (long long)sms * KBIT_WHOLE_TILE_FILL;
  return tiles <= sms && fills && KBIT_WHOLE_TILE_FILL <= 100 ? kWgmmaWhole : nt;
}
#endif

// ---- the CUDA-core kernel (kbit_gemv.cuh) ------------------------------------
// Dense layers at M = 1 whose weights take a few microseconds to read: fewer
// than 2^KBIT_GEMV_MAX_LOG2 weights (0: only when forced, KBIT_KERNEL=gemv).
// H100, graph time, against the decode kernel in the same runs
// (docs/results.md v27, call 4, two rounds): every Qwen3-Coder-Next layer
// (2^20 .. 2^23.3 weights) is faster, k = 4 gate/up 6.46-6.61 vs 7.03-7.28
// us, down 6.61-6.68 vs 8.30-8.46, q 5.65 vs 6.52-6.67, o 5.96-6.08 vs
// 7.26-7.42, kv 3.77-4.02 vs 6.18-6.75; gate/up at k = 2 / 3 / 5 5.61-6.31 /
// 6.84-7.05 / 7.38-7.53 vs 7.41-7.69 / 7.21-7.40 / 8.67-8.68. The
// Llama-3-8B layers (2^25.8) are 15-20 % slower (call 2: 19.5-20.0 vs
// 16.8-17.3 at k = 4). The bound lies between (not measured there). At
// M = 4 (4 rows per CTA, one CTA per SM) it was 1.4-1.7x slower than the
// decode kernel on the Qwen3 layers, so only M = 1 is built.
#ifndef KBIT_GEMV_MAX_LOG2
#define KBIT_GEMV_MAX_LOG2 24
#endif
// Grouped layers: one CTA row per activation row (each reads its expert's
// weights), for calls reading fewer than 2^KBIT_GEMV_GROUPED_MAX_LOG2 weights
// that way (rows x N x K; 0: only when forced). H100, graph time, against the
// choice by shape without it in the same runs (docs/results.md v28, two
// rounds): faster at Qwen3-Coder-Next one token (gate/up 2^24.3: 11.0-11.1 vs
// 14.1-14.2 us; down 2^23.3: 8.9-9.1 vs 10.2-10.5) and the 8-expert layer
// (2^22: 4.8-5.0 vs 8.2); slower from 2^25.3 (down, four tokens: 21.6-21.9
// vs 18.2-18.3), and much slower above.
#ifndef KBIT_GEMV_GROUPED_MAX_LOG2
#define KBIT_GEMV_GROUPED_MAX_LOG2 25
#endif
inline bool gemv_applies(const kbit_api::KbitArgs& a) {
  // (grouped: the grid's second dimension; the kernel steps through an
  // expert's plane words with 32-bit offsets)
  const bool offsets_fit = (long long)a.k_tiles * a.n_pad * 2 * a.bits < (1ll << 31);
  return offsets_fit && (a.E == 1 ? a.M == 1 : a.M <= 65535);
}
inline bool gemv_kernel_pays(const kbit_api::KbitArgs& a) {
  const long long weights = (long long)a.M * a.N * a.K;
  const int log2_max = a.E == 1 ? KBIT_GEMV_MAX_LOG2 : KBIT_GEMV_GROUPED_MAX_LOG2;
  return log2_max > 0 && gemv_applies(a) && weights < (1ll << log2_max);
}
// CTA rows of the grid: one per activation row of a grouped call.
inline int gemv_grid_rows(const kbit_api::KbitArgs& a) { return a.E == 1 ? 1 : a.M; }

// Calls f.template operator()<kBits, T, kRows>() with kRows = 1, the only row
// count built (a CTA takes one activation row: see gemv_applies).
template <class F>
const char* kbit_gemv_dispatch(int bits, int bf16, const F& f) {
#define KBIT_GEMV_BITS_(BITS)                                                            \
  case BITS:                                                                             \
    return bf16 ? KBIT_IF_BF16(f.template operator()<BITS, __nv_bfloat16, 1>())                   \
                : KBIT_IF_FP16(f.template operator()<BITS, __half, 1>());
  switch (bits) {
    KBIT_GEMV_BITS_(2)
    KBIT_GEMV_BITS_(3)
    KBIT_GEMV_BITS_(4)
    KBIT_GEMV_BITS_(5)
    default: return "kbit: bits must be 2..5";
  }
#undef KBIT_GEMV_BITS_
}

inline int kbit_pick_mtiles(int M, int E) {
  const int active = E < M ? E : M;
  const int rows = cdiv(M, active > 0 ? active : 1);
  return rows <= 8 ? 1 : rows <= 16 ? 2 : rows <= 32 ? 4 : 8;
}

struct OccupancyCache {
  std::mutex mu;
  std::map<std::pair<const void*, long long>, int> blocks_per_sm;   // (kernel, device|smem)
  std::map<std::pair<const void*, long long>, int> pair_clusters;   // (kernel, device|smem)
  std::map<std::pair<const void*, int>, size_t> smem_limit;         // (kernel, device)
};
inline OccupancyCache& occupancy_cache() {
  static OccupancyCache cache;
  return cache;
}

// The most shared memory one CTA may have on `device` (static and dynamic).
inline size_t smem_optin(int device) {
  static size_t bytes[64] = {0};
  if (device < 0 || device >= 64) return 0;
  if (bytes[device] == 0) {
    int v = 0;
    cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    bytes[device] = size_t(v);
  }
  return bytes[device];
}

// CTAs of `kernel` resident per SM with `smem` bytes of dynamic shared memory.
// The kernel's dynamic shared-memory limit is a per-function attribute: it is
// only ever raised (a launch above it fails), once per device and size.
inline const char* resident_ctas(const void* kernel, int threads, size_t smem, int device, int* out) {
  OccupancyCache& cache = occupancy_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  size_t& limit = cache.smem_limit[std::make_pair(kernel, device)];
  if (smem > limit) {
    // Dynamic shared memory grows with the experts (the slot table, 4 bytes
    // each): the tiled kernels' configurations leave room for at least 1024
    // of them (k = 5, wgmma_k5_cta_bytes), most for thousands.
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, kernel) == cudaSuccess && smem + fa.sharedSizeBytes > smem_optin(device))
      return "kbit: the kernel's shared memory (its slot table: 4 bytes per expert) exceeds what one CTA may have on this GPU";
    const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (err != cudaSuccess) return cudaGetErrorString(err);
    limit = smem;
  }
  const auto key = std::make_pair(kernel, (long long)device << 32 | (long long)smem);
  auto it = cache.blocks_per_sm.find(key);
  if (it != cache.blocks_per_sm.end()) { *out = it->second; return nullptr; }
  int n = 0;
  const cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  if (n < 1) return "kbit: kernel does not fit on one SM (shared memory or registers)";
  cache.blocks_per_sm[key] = n;
  *out = n;
  return nullptr;
}

#if KBIT_HAS_CLUSTER
// A launch of `grid` CTAs in clusters of `cluster` (*attr holds the cluster
// shape): the decode kernel's pairs, the row-owning kernel's K split.
inline cudaLaunchConfig_t pair_launch_config(int grid, int threads, size_t smem, cudaStream_t stream,
                                             cudaLaunchAttribute* attr, int cluster = 2) {
  attr->id = cudaLaunchAttributeClusterDimension;
  attr->val.clusterDim.x = unsigned(cluster);
  attr->val.clusterDim.y = 1;
  attr->val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(unsigned(grid));
  cfg.blockDim = dim3(unsigned(threads));
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cfg;
}
// Clusters of two CTAs of `kernel` resident at once on the device (after
// resident_ctas has set its shared-memory limit).
inline const char* resident_pair_clusters(const void* kernel, int threads, size_t smem, int device, int grid,
                                          int* out) {
  OccupancyCache& cache = occupancy_cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  const auto key = std::make_pair(kernel, (long long)device << 32 | (long long)smem);
  auto it = cache.pair_clusters.find(key);
  if (it != cache.pair_clusters.end()) { *out = it->second; return nullptr; }
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = pair_launch_config(grid, threads, smem, nullptr, &attr);
  int n = 0;
  const cudaError_t err = cudaOccupancyMaxActiveClusters(&n, kernel, &cfg);
  if (err != cudaSuccess) return cudaGetErrorString(err);
  cache.pair_clusters[key] = n;
  *out = n;
  return nullptr;
}
#endif

inline int sm_count(int device) {
  static int counts[64] = {0};
  if (device < 0 || device >= 64) return 0;
  if (counts[device] == 0) cudaDeviceGetAttribute(&counts[device], cudaDevAttrMultiProcessorCount, device);
  return counts[device];
}

// Threads per CTA: Cfg::kCtaThreads where a kernel has warps besides those
// that hold accumulators (the wgmma kernel's copy warp), else Cfg::kThreads.
template <class Cfg, class = void>
struct CtaThreads {
  static constexpr int value = Cfg::kThreads;
};
template <class Cfg>
struct CtaThreads<Cfg, std::void_t<decltype(Cfg::kCtaThreads)>> {
  static constexpr int value = Cfg::kCtaThreads;
};

// Grid and split-tile workspace of the tiled kernels (its Cfg, its function):
// one persistent wave, one counter and workspace slot per tile. With
// `whole_tiles`, a dense layer of at most one wave of tiles gets one CTA per
// tile: no tile is split, and no CTA sums into the workspace.
template <class Cfg>
const char* kbit_plan_for(const void* kernel, const kbit_api::KbitArgs& a, int device, kbit_api::KbitPlan* plan,
                          bool whole_tiles = false) {
  int per_sm = 0;
  if (const char* err = resident_ctas(kernel, CtaThreads<Cfg>::value, Cfg::smem_bytes(a.E), device, &per_sm)) return err;
  const long long tiles = (long long)(cdiv(a.M, Cfg::BLOCK_M) + (a.E < a.M ? a.E : a.M)) *
                          cdiv(a.N, Cfg::BLOCK_N);
  if (tiles * a.k_tiles >= (1ll << 31)) return "kbit: problem too large for 32-bit unit indices";
  plan->grid = sm_count(device) * per_sm;
  const long long dense_tiles = (long long)cdiv(a.M, Cfg::BLOCK_M) * cdiv(a.N, Cfg::BLOCK_N);
  if (whole_tiles && a.E == 1 && dense_tiles <= plan->grid) plan->grid = int(dense_tiles);
  plan->workspace_floats = size_t(tiles) * Cfg::BLOCK_N * Cfg::BLOCK_M;
  plan->counters = size_t(tiles);
  plan->block_n = Cfg::BLOCK_N;
  plan->block_m = Cfg::BLOCK_M;
  return nullptr;
}

template <class Cfg>
const char* kbit_plan_cfg(const kbit_api::KbitArgs& a, int device, kbit_api::KbitPlan* plan) {
  return kbit_plan_for<Cfg>(reinterpret_cast<const void*>(&kbit_gemm_kernel<Cfg>), a, device, plan);
}

// The tensors of a call, into any kernel's parameters (KbitParams, GemvParams).
template <class Params>
void set_tensors(Params& p, const kbit_api::KbitArgs& a) {
  p.a = a.a;
  p.b_packed = a.b_packed;
  p.b_absmax = a.b_absmax;
  p.codebook = a.codebook;
  p.offsets = a.offsets;
  p.c = a.c;
}

// Kernel parameters of both mma.sync kernels.
inline KbitParams kbit_params(const kbit_api::KbitArgs& a, const kbit_api::KbitPlan& plan, float* ws,
                              int32_t* counters) {
  KbitParams p;
  set_tensors(p, a);
  p.workspace = ws;
  p.counters = counters;
  p.M = a.M; p.N = a.N; p.K = a.K; p.E = a.E;
  p.max_tiles = int(plan.counters);
  p.layout = KbitLayout{a.N, a.K, a.n_pad, a.k_tiles, a.bits};
  return p;
}

// The decode kernel's parameters: its divisors, and the work split of a dense
// layer as DecodeSplit::init computes it on the device (which checks that the
// unit counts agree).
template <class Cfg>
DecodeParams decode_params(const KbitParams& base, const kbit_api::KbitArgs& a, int grid) {
  DecodeParams p;
  static_cast<KbitParams&>(p) = base;
  p.k_tiles_div = FastDiv::of(uint32_t(a.k_tiles));
  p.split_units = p.split_ctas = 0;
  p.split_ctas_div = p.split_units_div = FastDiv::of(1);
  p.pairs = 0;
  if (a.E != 1) return p;
  const long long tiles = (long long)cdiv(a.M, Cfg::BLOCK_M) * cdiv(a.N, Cfg::BLOCK_N);
  if (tiles > p.max_tiles || tiles * a.k_tiles >= (1ll << 31)) return p;
  p.split_units = int(tiles * a.k_tiles);
  p.split_ctas = DecodeSplit<Cfg::kWarps>::decode_ctas(p.split_units, grid, Cfg::kWarps * kDecodeMinUnits);
  p.split_ctas_div = FastDiv::of(uint32_t(p.split_ctas));
  p.split_units_div = FastDiv::of(uint32_t(p.split_units));
  return p;
}

// One launch of either mma.sync kernel (its Cfg, its function).
template <class Cfg, class Params>
const char* kbit_launch(void (*kernel)(Params), const Params& p, const kbit_api::KbitArgs& a,
                        const kbit_api::KbitPlan& plan, cudaStream_t stream) {
  // Probe 128 (with 64, decode runs only): the same launch without its dynamic shared memory.
  const size_t smem = (KBIT_DECODE_PROBE & 128) ? 0 : Cfg::smem_bytes(a.E);
  kernel<<<plan.grid, CtaThreads<Cfg>::value, smem, stream>>>(p);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

#if KBIT_HAS_CLUSTER
// The decode kernel in clusters of two CTAs (plan.decode_pairs).
template <class Cfg>
const char* kbit_launch_pairs(void (*kernel)(DecodeParams), const DecodeParams& p, const kbit_api::KbitArgs& a,
                              const kbit_api::KbitPlan& plan, cudaStream_t stream) {
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = pair_launch_config(plan.grid, CtaThreads<Cfg>::value,
                                                    (KBIT_DECODE_PROBE & 128) ? 0 : Cfg::smem_bytes(a.E), stream, &attr);
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, p);
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
#endif

// Decode plan; *fits = false (and no error) where the kernel's shared memory
// exceeds what the device gives one CTA (GPUs with <= 164 KB per SM): the
// tiled GEMM kernel serves those.
template <class Cfg>
const char* kbit_decode_plan_cfg(const kbit_api::KbitArgs& a, int device, kbit_api::KbitPlan* plan, bool* fits) {
  *fits = Cfg::smem_bytes(a.E) <= smem_optin(device);
  if (!*fits) return nullptr;
  const char* err = kbit_plan_for<Cfg>(reinterpret_cast<const void*>(&kbit_decode_kernel<Cfg>), a, device, plan);
  plan->decode_pairs = 0;
  if (err == nullptr && a.E == 1) {   // (a dense layer: whole tiles per CTA where the grid allows)
    const long long tiles = (long long)cdiv(a.M, Cfg::BLOCK_M) * cdiv(a.N, Cfg::BLOCK_N);
    const int per_cta = Cfg::kWarps * kDecodeMinUnits;
    plan->grid = decode_aligned_grid(tiles, tiles * a.k_tiles, per_cta, plan->grid);
#if KBIT_HAS_CLUSTER
    // (Not the helpers' configurations, whose split-tile sums have no pair
    // form, nor 16-row slots in 64-row tiles: decode_pair_ctas.)
    const int pair_grid = decode_pair_ctas(tiles, tiles * a.k_tiles, per_cta, plan->grid);
    if (pair_grid > 0 && !Cfg::kSumByHelpers && !(Cfg::kMH == 2 && Cfg::kNT == 4)) {
      int clusters = 0;   // (a failed query leaves the slots: no error)
      const char* cerr = resident_pair_clusters(reinterpret_cast<const void*>(&kbit_decode_kernel<Cfg>),
                                                CtaThreads<Cfg>::value, Cfg::smem_bytes(a.E), device, pair_grid,
                                                &clusters);
      if (cerr != nullptr) (void)cudaGetLastError();
      if (cerr == nullptr && 2 * clusters >= pair_grid) {
        plan->grid = pair_grid;
        plan->decode_pairs = 1;
      }
    }
#endif
  }
  // The slots of tiles split between CTAs (finish_spanning) in place of
  // the tiled kernels' per-tile sums.
  if (plan->workspace_floats < Cfg::workspace_floats(plan->grid))
    plan->workspace_floats = Cfg::workspace_floats(plan->grid);
  if (err == nullptr && plan->grid >= (1 << 15))   // ends_s packs a tile's first CTA into 15 bits
    return "kbit: too many SMs for the decode kernel's split-tile bookkeeping";
  if (err == nullptr && Cfg::kDense && !(a.E == 1 && decode_dense_narrow(a, plan->grid)))
    return "kbit: internal error: a dense-only decode configuration was chosen for a shape it cannot serve";
  return err;
}

// Calls f.template operator()<DecodeCfg<bits, dtype, nt, act>>() (nt: 2 or 4,
// or 8 with k = 2 and act = 1, KBIT_DECODE_ACT_ROWS or 8 (decode_tile128); act: 0, KBIT_DECODE_ACT_ROWS,
// 1 where decode_act1_pays, 8 where decode_act8_fits, 16 where decode_dense16).
// helpers: kSumByHelpers set (decode_helpers; k = 4, nt = 4, act = 16 only).
template <class F>
const char* kbit_decode_dispatch(int bits, int bf16, int nt, int act, const F& f, bool helpers = false) {
#define KBIT_DECODE_ACT_(BITS, NT, ACT)                                                    \
  return bf16 ? KBIT_IF_BF16(f.template operator()<DecodeCfg<BITS, __nv_bfloat16, NT, ACT>>()) \
              : KBIT_IF_FP16(f.template operator()<DecodeCfg<BITS, __half, NT, ACT>>());
  if (helpers) {
    if constexpr (KBIT_DECODE_ACT_ROWS > 0 && KBIT_DECODE_ACT16 != 0) {
      if (bits == 4 && nt == 4 && act == 16)
        return bf16 ? KBIT_IF_BF16(f.template operator()<DecodeCfg<4, __nv_bfloat16, 4, 16, 1>>())
                    : KBIT_IF_FP16(f.template operator()<DecodeCfg<4, __half, 4, 16, 1>>());
    }
    return "kbit: internal error: decode helpers serve k = 4, 64-row tiles, 16-row slots only";
  }
#if KBIT_DECODE_ACT_ROWS > 0
#define KBIT_DECODE_NT_(BITS, NT)                                                 \
  if constexpr (decode_act1_pays(BITS, decode_tile_nt(BITS, NT, 1))) {           \
    if (act == 1) {                                                               \
      KBIT_DECODE_ACT_(BITS, NT, 1)                                               \
    }                                                                             \
  }                                                                               \
  if constexpr (decode_act8_fits(BITS, decode_tile_nt(BITS, NT, 8))) {           \
    if (act == 8) {                                                               \
      KBIT_DECODE_ACT_(BITS, NT, 8)                                               \
    }                                                                             \
  }                                                                               \
  if constexpr (KBIT_DECODE_ACT16 != 0) {                                         \
    if (act == 16) {                                                              \
      KBIT_DECODE_ACT_(BITS, NT, 16)                                              \
    }                                                                             \
  }                                                                               \
  if (act) {                                                                      \
    KBIT_DECODE_ACT_(BITS, NT, KBIT_DECODE_ACT_ROWS)                              \
  } else {                                                                        \
    KBIT_DECODE_ACT_(BITS, NT, 0)                                                 \
  }
#else
#define KBIT_DECODE_NT_(BITS, NT) KBIT_DECODE_ACT_(BITS, NT, 0)
#endif
#define KBIT_DECODE_T(BITS)                                                   \
  if (nt == 8) {                                                              \
    if constexpr (BITS == 2 && KBIT_DECODE_TILE128 && KBIT_DECODE_ACT_ROWS > 0) { \
      if constexpr (decode_act1_pays(BITS, 8)) {                              \
        if (act == 1) {                                                       \
          KBIT_DECODE_ACT_(BITS, 8, 1)                                        \
        }                                                                     \
      }                                                                       \
      if constexpr (decode_act8_fits(BITS, 8)) {                              \
        if (act == 8) {                                                       \
          KBIT_DECODE_ACT_(BITS, 8, 8)                                        \
        }                                                                     \
      }                                                                       \
      if (act == KBIT_DECODE_ACT_ROWS) {                                      \
        KBIT_DECODE_ACT_(BITS, 8, KBIT_DECODE_ACT_ROWS)                       \
      }                                                                       \
    }                                                                         \
    return "kbit: internal error: 128-row decode tiles serve k = 2 with the activation rows in the stages only"; \
  } else if (nt == 4) {                                                       \
    KBIT_DECODE_NT_(BITS, 4)                                                  \
  } else {                                                                    \
    KBIT_DECODE_NT_(BITS, 2)                                                  \
  }
  switch (bits) {
    case 2: KBIT_DECODE_T(2)
    case 3: KBIT_DECODE_T(3)
    case 4: KBIT_DECODE_T(4)
    case 5: KBIT_DECODE_T(5)
    default: return "kbit: bits must be 2..5";
  }
#undef KBIT_DECODE_T
#undef KBIT_DECODE_NT_
#undef KBIT_DECODE_ACT_
}

// Calls f.template operator()<CfgOf<bits, dtype, mtiles>>() for a tiled-kernel
// configuration family: mtiles 1, 2, 4, 8 or 16, those in kMinMTiles..kMaxMTiles.
template <template <int, typename, int> class CfgOf, int kMaxMTiles, int kBits, typename T, class F,
          int kMinMTiles = 1>
const char* dispatch_mtiles(int mtiles, const F& f) {
#define KBIT_MTILES_CASE(N)                                                                          \
  case N:                                                                                            \
    if constexpr (kMinMTiles <= N && kMaxMTiles >= N) return f.template operator()<CfgOf<kBits, T, N>>(); \
    break;
  switch (mtiles) {
    KBIT_MTILES_CASE(1)
    KBIT_MTILES_CASE(2)
    KBIT_MTILES_CASE(4)
    KBIT_MTILES_CASE(8)
    KBIT_MTILES_CASE(16)
    default: break;
  }
#undef KBIT_MTILES_CASE
  return "kbit: bad activation tile count";
}
template <template <int, typename, int> class CfgOf, int kMaxMTiles, class F, int kMinMTiles = 1>
const char* dispatch_tiled(int bits, int bf16, int mtiles, const F& f) {
#define KBIT_CASE_T(BITS)                                                                          \
  case BITS:                                                                                       \
    return bf16 ? KBIT_IF_BF16(dispatch_mtiles<CfgOf, kMaxMTiles, BITS, __nv_bfloat16, F, kMinMTiles>(mtiles, f)) \
                : KBIT_IF_FP16(dispatch_mtiles<CfgOf, kMaxMTiles, BITS, __half, F, kMinMTiles>(mtiles, f));
  switch (bits) {
    KBIT_CASE_T(2)
    KBIT_CASE_T(3)
    KBIT_CASE_T(4)
    KBIT_CASE_T(5)
    default: return "kbit: bits must be 2..5";
  }
#undef KBIT_CASE_T
}
// The mma.sync tiled kernel's configurations (mtiles 1..8).
template <class F>
const char* kbit_dispatch(int bits, int bf16, int mtiles, const F& f) {
  return dispatch_tiled<KbitCfg, 8>(bits, bf16, mtiles, f);
}

#if KBIT_HAS_WGMMA
// The wgmma tiled kernel's configurations: BLOCK_M = 8 * mtiles (mtiles 1..16).
template <int kBits, typename T, int kMTiles>
using WgmmaCfgM = WgmmaCfg<kBits, T, 8 * kMTiles>;
template <int kBits, typename T, int kMTiles>
using WgmmaCfgM2 = WgmmaCfg<kBits, T, 8 * kMTiles, 2>;
template <int kBits, typename T, int kMTiles>
using WgmmaCfgM3 = WgmmaCfg<kBits, T, 8 * kMTiles, 3>;
template <int kBits, typename T, int kMTiles>
using WgmmaCfgW8 = WgmmaCfg<kBits, T, 8 * kMTiles, 1, 8>;
// cfg (wgmma_config_for): 16-row weight tiles per MMA warp (two at 9..64
// rows, three at 17..64), or kWgmmaWhole (128 rows only).
template <class F>
const char* kbit_wgmma_dispatch(int bits, int bf16, int mtiles, int cfg, const F& f) {
  return cfg == kWgmmaWhole ? dispatch_tiled<WgmmaCfgW8, 16, F, 16>(bits, bf16, mtiles, f)
         : cfg == 3         ? dispatch_tiled<WgmmaCfgM3, 8, F, 4>(bits, bf16, mtiles, f)
         : cfg == 2         ? dispatch_tiled<WgmmaCfgM2, KBIT_WGMMA_NT2_MAX_MTILES, F, 2>(bits, bf16, mtiles, f)
                            : dispatch_tiled<WgmmaCfgM, 16>(bits, bf16, mtiles, f);
}

// The activations [M, K] as a tensor map for the wgmma kernel's stage copies:
// box kTileK x block_m, 128-byte swizzle (the layout its descriptors read),
// zero fill outside the tensor. The bindings have checked that `a` is 16-byte
// aligned and K % 32 == 0 (rows a multiple of 16 bytes), as the map requires.
// The encoder is a host function of the driver (no GPU work, no
// synchronization); its entry point is looked up once.
inline const char* encode_a_map(CUtensorMap* map, const kbit_api::KbitArgs& a, int block_m) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                              const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = nullptr;
  if (encode == nullptr) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr)
      return "kbit: the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer needed)";
    encode = reinterpret_cast<Encode>(fn);
  }
  const cuuint64_t dims[2] = {cuuint64_t(a.K), cuuint64_t(a.M)};
  const cuuint64_t row_bytes[1] = {cuuint64_t(a.K) * 2};
  const cuuint32_t box[2] = {cuuint32_t(kTileK), cuuint32_t(block_m)};
  const cuuint32_t step[2] = {1, 1};
  const CUresult r = encode(map, a.bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                            const_cast<void*>(a.a), dims, row_bytes, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? nullptr : "kbit: cuTensorMapEncodeTiled rejected the activation tensor";
}

#endif

// Warps per CTA: the most (32, 16, 8, 4; at most kGemvMaxWarps) with which
// every CTA (strips x grouped rows) is resident at once (one wave) and every
// lane has a K-tile, else 4. The K-tiles are split evenly among them.
// *fits = false (no error) where the activations do not fit one CTA's shared
// memory (K * rows * 4.5 bytes: K * rows above ~50 K): another kernel serves
// those.
struct GemvPlanFn {
  const kbit_api::KbitArgs& a;
  int device;
  kbit_api::KbitPlan* plan;
  bool* fits;
  template <int kBits, typename T, int kRows>
  const char* operator()() const {
    const void* kernel = reinterpret_cast<const void*>(&kbit_gemv_kernel<kBits, T, kRows>);
    const long long ctas = (long long)cdiv(a.n_pad, kGemvCols) * gemv_grid_rows(a);
    const char* err = nullptr;
    const GemvShape shape = gemv_plan(ctas, a.k_tiles, kRows, sm_count(device), [&](int warps, size_t smem) {
      int per_sm = 0;
      if (err || smem > smem_optin(device)) return 0;
      err = resident_ctas(kernel, warps * kWarpSize, smem, device, &per_sm);
      return err ? 0 : per_sm;
    });
    if (err) return err;
    *fits = shape.warps > 0;
    plan->gemv_warps = shape.warps;
    plan->gemv_tiles = shape.tiles;
    if (*fits) {
      plan->grid = cdiv(a.n_pad, kGemvCols);   // (x; y: gemv_grid_rows)
      plan->workspace_floats = 0;
      plan->counters = 0;
    }
    return nullptr;
  }
};
struct GemvRunFn {
  const kbit_api::KbitArgs& a;
  const kbit_api::KbitPlan& plan;
  cudaStream_t stream;
  template <int kBits, typename T, int kRows>
  const char* operator()() const {
    GemvParams p;
    set_tensors(p, a);
    p.M = a.M; p.N = a.N; p.K = a.K; p.E = a.E; p.n_pad = a.n_pad; p.k_tiles = a.k_tiles;
    p.tiles_per_warp = plan.gemv_tiles;
    const dim3 grid(plan.grid, gemv_grid_rows(a));
    kbit_gemv_kernel<kBits, T, kRows><<<grid, plan.gemv_warps * kWarpSize,
                                        gemv_smem_bytes(plan.gemv_warps, plan.gemv_tiles, kRows), stream>>>(p);
    const cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
  }
};

// The functors the dispatchers call with a configuration Cfg: plan or launch
// kernel K (the mma.sync tiled, the decode or the wgmma tiled kernel).
enum class Kernel { kTiled, kDecode, kWgmma };

template <Kernel K>
struct PlanFn {
  const kbit_api::KbitArgs& a;
  int device;
  kbit_api::KbitPlan* plan;
  bool* fits = nullptr;   // kDecode: set false (no error) where the kernel does not fit the device
  template <class Cfg> const char* operator()() const {
    if constexpr (K == Kernel::kDecode) return kbit_decode_plan_cfg<Cfg>(a, device, plan, fits);
#if KBIT_HAS_WGMMA
    else if constexpr (K == Kernel::kWgmma) {
      const char* err = kbit_plan_for<Cfg>(reinterpret_cast<const void*>(&kbit_wgmma_kernel<Cfg>), a, device,
                                           plan, plan->wgmma == kWgmmaWhole);
      if (err == nullptr && a.E == 1 && plan->wgmma != kWgmmaWhole && plan->grid >= 2 * sm_count(device))
        plan->grid = wgmma_aligned_grid(a, Cfg::BLOCK_M, Cfg::BLOCK_N, plan->grid);
      return err;
    }
#endif
    else return kbit_plan_cfg<Cfg>(a, device, plan);
  }
};
template <Kernel K>
struct RunFn {
  const kbit_api::KbitArgs& a;
  const kbit_api::KbitPlan& plan;
  float* ws;
  int32_t* counters;
  cudaStream_t stream;
  template <class Cfg> const char* operator()() const {
    const KbitParams p = kbit_params(a, plan, ws, counters);
    if constexpr (K == Kernel::kDecode) {
      DecodeParams d = decode_params<Cfg>(p, a, plan.grid);
#if KBIT_HAS_CLUSTER
      if (plan.decode_pairs) {
        d.pairs = KBIT_DECODE_PAIRS == 2 ? 0 : 1;   // (2: clusters launched, slots used: A/B of the launch alone)
        return kbit_launch_pairs<Cfg>(&kbit_decode_kernel<Cfg>, d, a, plan, stream);
      }
#endif
      return kbit_launch<Cfg>(&kbit_decode_kernel<Cfg>, d, a, plan, stream);
    }
#if KBIT_HAS_WGMMA
    else if constexpr (K == Kernel::kWgmma) {
      WgmmaParams w;
      static_cast<KbitParams&>(w) = p;
      if (const char* err = encode_a_map(&w.a_map, a, KBIT_WGMMA_PROBE & 16 ? Cfg::BLOCK_M / 2 : Cfg::BLOCK_M))
        return err;
      return kbit_launch<Cfg>(&kbit_wgmma_kernel<Cfg>, w, a, plan, stream);
    }
#endif
    else return kbit_launch<Cfg>(&kbit_gemm_kernel<Cfg>, p, a, plan, stream);
  }
};

#ifndef KBIT_HAS_ROWS
#define KBIT_HAS_ROWS 0   // kbit_rows.cuh is in the translation unit (the sm90 family)
#endif
#if KBIT_HAS_WGMMA && KBIT_HAS_ROWS
// ---- the row-owning kernel (kbit_rows.cuh) ----
// Its configurations, one table for the plan and the dispatch: configuration
// id (1..7) = RowsConfig<k, T, groups, warps per group, 16-row tiles per warp,
// stages, activation rows, K by pairs, CTAs per cluster, K-tiles per group
// barrier, pair fields>, by the rows a CTA
// owns on this GPU; the most
// K-groups the K-tiles allow; 0 where none serves the shape (grouped, M > 32,
// more rows per CTA than a configuration has, a single K-tile).
// * M <= 16: 16 activation rows per stage, 3 stages: 1 up to 224 rows (2
//   K-groups of 7 warps), 2 up to 128 (4 x 4), 3 up to 64 (6 x 2), 4 up to
//   32 (12 x 1), 32-row warp tiles.
// * M = 17..32: 32 rows per stage,
//   2 stages, at most 12 warps (with 14 or 16, 32 accumulators and 32 B
//   fragment registers per thread spill): 2 up to 128 rows (3 x 4), 3 up to
//   64 (6 x 2), 4 up to 32 (12 x 1), 32-row warp tiles. No 224-row
//   configuration (groups 0). (Without the pair permutation, 12 x 1 spilled
//   at k = 2 and 5; with it they compile to 144 and 154 registers.)
// * Both: 5, 16-row warp tiles in 12 K-groups of one warp, for CTAs that own
//   one granule (N <= 16 x SMs: the Qwen3 kv, o and down layers). There a
//   32-row warp tile computes a zero-filled half; Qwen3 down at M = 32, k = 4
//   took 10.6 us with 16-row tiles against 13.4-13.7 with 32-row ones, and
//   every Qwen3 kv, o and down benchmark at M = 16..32 gained 0.3-3.1 us
//   (harness A/B, H200, docs/results.md v55). KBIT_ROWS_T1=0 leaves it out
//   (A/B).
// * Both: 6, configuration 5 with K split over clusters of two CTAs
//   (RowsConfig kSplit: rank 1 sends its sums to rank 0 through distributed
//   shared memory), where two CTAs per granule fit the SMs (N <= 8 x SMs) and
//   K has at least kRowsSplitTiles K-tiles: the Llama-3 k/v projections, 64
//   granules on 128 of 132 SMs instead of 64. tc_bench, H200 (results.md
//   v55): 8B kv (1024 x 4096) M = 32 8.4-8.6 -> 7.2-7.7 us, M = 16 6.1-6.3 ->
//   5.1-5.6; 70B kv (1024 x 8192) M = 32 13.1-13.3 -> 10.5-10.8, M = 16
//   9.6-9.8 -> 7.5-7.9. Qwen3 kv (32 K-tiles) was slower with it (6.2-6.5
//   against 6.0-6.1), so K below 64 K-tiles keeps one CTA per granule.
//   Clusters of four were 2-3 us slower on Qwen3 kv (not all 32 resident at
//   once). Harness A/B (H200, results.md v56): 70B kv M = 16 9.7-10.1 ->
//   7.5-7.8 us, M = 32 12.9-13.7 -> 10.5-10.8; 8B kv 7.0-7.2 -> 6.1-6.4 and
//   9.2-9.5 -> 8.3-8.5. KBIT_ROWS_SPLIT=0 leaves it out (A/B; racecheck does
//   not follow cluster launches, so device_run.sh's racecheck build sets it).
#ifndef KBIT_ROWS_T1
#define KBIT_ROWS_T1 1
#endif
#ifndef KBIT_ROWS_SPLIT
#define KBIT_ROWS_SPLIT 1
#endif
// * M <= 16, k = 2..4: two K-tiles per pass of the group barrier
//   (RowsConfig kSyncTiles, 4 stages) in configuration 3, and in 7 (4 with
//   it), which takes 4's shapes where each of its 12 K-groups has at least
//   kRowsSyncTiles K-tiles. Harness A/B against main, H200, graph us, two
//   rounds (docs/results.md v57): Llama-3-8B down (7) k = 4 19.5-20.1 ->
//   18.4-18.5 (bf16 19.9-20.0 -> 18.1-18.4), k = 3 19.6-19.8 -> 17.7-17.8,
//   k = 2 17.3-17.8 -> 17.0-17.2; Qwen3 gate/up (3) k = 4 8.2-8.5 -> 7.6-7.7,
//   k = 2 8.7 -> 8.3-8.5, k = 3 level. Not on Qwen3 q (config 4, 2-3 K-tiles
//   per group: 6.6-6.8 against 7.0-7.1, the first pass waits for two
//   stages), not at k = 5 (tc_bench, Qwen3 gate/up: 9.4-9.8 against
//   10.1-10.3; 12 x 1 does not fit four stages), not with 16-row warp tiles
//   (5, 6: level or slower in tc_bench), not in the 16-warp 4 x 4 (spills at
//   128 registers: 8B gate/up 17.8-18.8 against 20.4-21.2), and not at
//   M = 17..32, where it was mixed (-0.6 to +0.5 us). KBIT_ROWS_SYNC=0
//   leaves it out (A/B).
#ifndef KBIT_ROWS_SYNC
#define KBIT_ROWS_SYNC 1
#endif
// * M = 17..32, k = 3, 4: pair fields (RowsConfig kPairFields: one rotation
//   of planes 1 and 2 serves both index words of a lane; 15 of 291 loop
//   instructions per warp and K-tile fewer at k = 4 in 3 x 4, 23 of 290 at
//   k = 3) in configuration 2, and in 7 (4 with them), which takes 4's shapes
//   where each of its 12 K-groups has at least kRowsSyncTiles K-tiles. Their
//   table build writes twice (k = 4) or eight times (k = 3) the bytes, which
//   short K-groups do not earn back. Harness A/B, H200, graph us, two rounds
//   (docs/results.md v59): Llama-3-8B gate/up k = 4 23.0 -> 22.4-22.8, k = 3
//   22.9-23.1 -> 22.4-22.5; down k = 4 25.8-26.1 -> 25.3-25.4, k = 3
//   25.6 -> 24.4-25.2. With them everywhere, Qwen3 gate/up (6 x 2) was 0.2-0.6
//   us slower and q (12 x 1, 2-3 K-tiles per group) 0.1-0.5, so those keep the
//   plain table. KBIT_ROWS_FIELDS=0 leaves them out (A/B).
#ifndef KBIT_ROWS_FIELDS
#define KBIT_ROWS_FIELDS 1
#endif
constexpr int kRowsSplitTiles = 64;
constexpr int kRowsSyncTiles = 8;   // K-tiles per K-group from which configuration 7 takes 4's shapes
struct RowsShape {
  int groups, warps, stages, nt, split, sync;   // nt: 16-row tiles per warp; split: CTAs per cluster;
                                                // sync: K-tiles per group barrier
  bool fields;                                  // pair fields (M > 16, k = 3, 4)
};
constexpr int rows_sync_tiles(int id, int rows, int bits) {
  return KBIT_ROWS_SYNC && bits != 5 && rows <= 16 && (id == 3 || id == 7) ? 2 : 1;
}
constexpr bool rows_pair_fields(int id, int rows, int bits) {
  return KBIT_ROWS_FIELDS && rows > 16 && (bits == 3 || bits == 4) && (id == 2 || id == 7);
}
constexpr RowsShape rows_shape(int id, int rows, int bits) {
  const int sync = rows_sync_tiles(id, rows, bits);
  const bool fields = rows_pair_fields(id, rows, bits);
  const int stages = sync == 2 ? 4 : rows <= 16 ? 3 : 2;
  return id == 6   ? RowsShape{12, 1, stages, 1, 2, sync, fields}
         : id == 5 ? RowsShape{12, 1, stages, 1, 1, sync, fields}
         : id == 4 || id == 7 ? RowsShape{12, 1, stages, 2, 1, sync, fields}
         : id == 3 ? RowsShape{6, 2, stages, 2, 1, sync, fields}
         : id == 2 ? RowsShape{rows <= 16 ? 4 : 3, 4, stages, 2, 1, sync, fields}
                   : RowsShape{rows <= 16 ? 2 : 0, 7, stages, 2, 1, sync, fields};
}
// K permuted by pairs (RowsConfig kPairPerm, kbit_rows.cuh stage_mma_pair_perm
// and dequant_pairs): at 32 activation rows, every k, where it measured faster
// (H200 tc_bench, graph us, docs/results.md v53 and v54). Llama-3-8B M = 32
// gate/up against the same CTA shape without it: k = 2 23.7-23.8 vs 27.5-27.9,
// k = 3 27.2-28.0 vs 29.0-29.4, k = 4 24.8-25.0 vs 28.2-28.7, k = 5 28.0-28.1
// vs 32.0-32.4. At 16 rows it changed nothing (v53), so those keep the plain
// order.
constexpr bool rows_pair_perm(int rows) { return rows == 32; }
// *grid: CTAs, or clusters of shape.split CTAs (configuration 6). split_ok:
// whether configuration 6 may be chosen (the plan asks again without it where
// its clusters would not all be resident at once).
inline int rows_config_for(const kbit_api::KbitArgs& a, int sms, int* grid, bool split_ok = true) {
  *grid = 0;
  if (a.E != 1 || a.M > 32) return 0;
  const int top = KBIT_ROWS_SPLIT && KBIT_ROWS_T1 && split_ok ? 6 : KBIT_ROWS_T1 ? 5 : 4;
  for (int id = top; id >= 1; --id) {   // the most K-groups that the K-tiles and the CTA's rows allow
    const RowsShape shape = rows_shape(id, a.M, a.bits);
    if (shape.split > 1 && a.k_tiles < kRowsSplitTiles) continue;
    *grid = rows_grid(a.N, sms / shape.split, shape.warps * 16 * shape.nt);
    if (*grid > 0 && shape.groups > 0 && a.k_tiles >= shape.groups * shape.split)
      return id == 4 && (rows_sync_tiles(7, a.M, a.bits) == 2 || rows_pair_fields(7, a.M, a.bits)) &&
                     a.k_tiles >= shape.groups * kRowsSyncTiles
                 ? 7
                 : id;
  }
  *grid = 0;
  return 0;
}
// The shape rule takes it for dense M = 9..16 on layers below 2^26 weights
// (the Qwen3 and Llama-3-8B layers), where the decode kernel's stream-K
// split leaves tiles to finish across CTAs and each warp copies its own
// activations. Harness A/B against the decode kernel's 16-row slots (H100,
// graph us, two rounds, docs/results.md v52): Qwen3-Coder-Next gate/up
// 7.8-7.9 vs 10.1, down 9.9-10.0 vs 10.9-11.0; Llama-3-8B gate/up 20.7 vs
// 21.1-21.4, down k = 2 17.7-17.9 vs 19.1, k = 5 23.8 vs 24.2-24.4, k = 4
// 20.8-21.0 vs 20.5 (slower). On the 70B layers (2^27.8 weights) its 32-row
// warp tiles are 8-10 us slower (two dequantization chains per warp, not
// four), and the 64-row-warp configurations 2 us slower in tc_bench.
//
// At M = 17..32 (32 activation rows per stage, K permuted by pairs) it takes
// the same layers, where the wgmma kernel's 32-row tiles were slower.
// Harness A/B, H200, graph us, two rounds: the gate/up, q and kv layers at
// k = 4 against v52 (docs/results.md v53): Qwen3-Coder-Next gate/up 11.0-11.3
// vs 14.1, q 9.5-9.8 vs 13.2, kv 8.8-9.0 vs 10.4-10.6, Llama-3-8B gate/up
// 25.1-25.3 vs 29.2-29.8. The down and o layers (K > N), forced rows against
// the wgmma kernel (v54): Llama-3-8B down k = 2 23.9-24.3 vs 25.7-25.9, k = 4
// 27.9 vs 28.1-28.3, k = 5 30.3-30.8 vs 34.3; Qwen3 down k = 4 13.4 vs
// 14.1-14.5, o 11.7-12.4 vs 13.4; level at Qwen3 down k = 3 and at M = 20 on
// Qwen3 down and 8B down. (Before the permutation those layers were 1.4-5.4 us
// slower on the row-owning kernel, v53, and the rule left them to wgmma.)
inline bool rows_kernel_pays(const kbit_api::KbitArgs& a) {
  return a.E == 1 && a.M > 8 && a.M <= 32 && (long long)a.N * a.K < (1ll << 26);
}
template <class F>
const char* kbit_rows_dispatch(int bits, int bf16, int id, int m, const F& f) {
#define KBIT_ROWS_SHAPE_(ID, R, B) \
  rows_shape(ID, R, B).groups, rows_shape(ID, R, B).warps, rows_shape(ID, R, B).nt, rows_shape(ID, R, B).stages, R, \
      rows_pair_perm(R), rows_shape(ID, R, B).split, rows_shape(ID, R, B).sync, rows_shape(ID, R, B).fields
#define KBIT_ROWS_(BITS, ID, R)                                                                       \
  case ID:                                                                                            \
    return bf16 ? KBIT_IF_BF16(f.template operator()<RowsConfig<BITS, __nv_bfloat16, KBIT_ROWS_SHAPE_(ID, R, BITS)>>()) \
                : KBIT_IF_FP16(f.template operator()<RowsConfig<BITS, __half, KBIT_ROWS_SHAPE_(ID, R, BITS)>>());
#if KBIT_ROWS_SYNC   // (at k = 5 configuration 7 is 4's RowsConfig; the rule does not choose it)
#define KBIT_ROWS_SYNC_(BITS, R) KBIT_ROWS_(BITS, 7, R)
#else
#define KBIT_ROWS_SYNC_(BITS, R)
#endif
#if KBIT_ROWS_FIELDS   // (at k = 2, 5 configuration 7 at 32 rows is 4's RowsConfig; the rule does not choose it)
#define KBIT_ROWS_FIELDS_(BITS, R) KBIT_ROWS_(BITS, 7, R)
#else
#define KBIT_ROWS_FIELDS_(BITS, R)
#endif
#if KBIT_ROWS_T1
#define KBIT_ROWS_T1_(BITS, R) KBIT_ROWS_(BITS, 5, R)
#else
#define KBIT_ROWS_T1_(BITS, R)
#endif
#if KBIT_ROWS_T1 && KBIT_ROWS_SPLIT
#define KBIT_ROWS_SPLIT_(BITS, R) KBIT_ROWS_(BITS, 6, R)
#else
#define KBIT_ROWS_SPLIT_(BITS, R)
#endif
#define KBIT_ROWS_ID_(BITS)        \
  if (m <= 16) {                   \
    switch (id) {                  \
      KBIT_ROWS_(BITS, 1, 16)      \
      KBIT_ROWS_(BITS, 2, 16)      \
      KBIT_ROWS_(BITS, 3, 16)      \
      KBIT_ROWS_(BITS, 4, 16)      \
      KBIT_ROWS_SYNC_(BITS, 16)    \
      KBIT_ROWS_T1_(BITS, 16)      \
      KBIT_ROWS_SPLIT_(BITS, 16)   \
    }                              \
  } else {                         \
    switch (id) {                  \
      KBIT_ROWS_(BITS, 2, 32)      \
      KBIT_ROWS_(BITS, 3, 32)      \
      KBIT_ROWS_(BITS, 4, 32)      \
      KBIT_ROWS_FIELDS_(BITS, 32)  \
      KBIT_ROWS_T1_(BITS, 32)      \
      KBIT_ROWS_SPLIT_(BITS, 32)   \
    }                              \
  }                                \
  break;
  switch (bits) {
    case 2: KBIT_ROWS_ID_(2)
    case 3: KBIT_ROWS_ID_(3)
    case 4: KBIT_ROWS_ID_(4)
    case 5: KBIT_ROWS_ID_(5)
  }
#undef KBIT_ROWS_ID_
#undef KBIT_ROWS_SPLIT_
#undef KBIT_ROWS_SYNC_
#undef KBIT_ROWS_FIELDS_
#undef KBIT_ROWS_T1_
#undef KBIT_ROWS_
#undef KBIT_ROWS_SHAPE_
  return "kbit: internal error: no such rows configuration";
}
// Raises the kernel's shared-memory limit once per device (resident_ctas);
// for a split configuration, *clusters: how many of its clusters of two are
// resident at once.
struct RowsPlanFn {
  int device;
  int* clusters = nullptr;
  template <class Cfg> const char* operator()() const {
    int per_sm = 0;
    const void* kernel = reinterpret_cast<const void*>(&kbit_rows_kernel<Cfg>);
    if (const char* err = resident_ctas(kernel, Cfg::kThreads, Cfg::kSmemBytes, device, &per_sm)) return err;
    if (clusters == nullptr || Cfg::kSplit == 1) return nullptr;
    // (tc_bench also times clusters of four; no configuration plans them.)
    if (Cfg::kSplit != 2) return "kbit: clusters of more than two CTAs are not planned";
    return resident_pair_clusters(kernel, Cfg::kThreads, Cfg::kSmemBytes, device, 2, clusters);
  }
};
struct RowsRunFn {
  KbitParams p;
  int grid;
  void* stream;
  template <class Cfg> const char* operator()() const {
    RowsParams rp;
    if (const char* err = kbit_rows_params<Cfg>(p, grid, &rp)) return err;
    const auto s = static_cast<cudaStream_t>(stream);
    if constexpr (Cfg::kSplit > 1) {   // `grid` clusters of kSplit CTAs
      cudaLaunchAttribute attr;
      const cudaLaunchConfig_t cfg = pair_launch_config(grid * Cfg::kSplit, Cfg::kThreads, Cfg::kSmemBytes, s, &attr,
                                                        Cfg::kSplit);
      const cudaError_t err = cudaLaunchKernelEx(&cfg, kbit_rows_kernel<Cfg>, rp);
      return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
    } else {
      kbit_rows_kernel<Cfg><<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(rp);
      const cudaError_t err = cudaGetLastError();
      return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
    }
  }
};
#endif

}  // namespace kbit

// ---- the API of api.h --------------------------------------------------------
// (KBIT_LAUNCH_NO_API: left out by the standalone tools in scripts/, which
// instantiate only the configurations they time.)
#ifndef KBIT_LAUNCH_NO_API
namespace kbit_api {

const char* kbit_gemm_plan(const KbitArgs& a, int device, KbitPlan* plan) {
  if (a.M <= 0) return "kbit: empty problem has no plan";
  if (a.E > 4096) return "kbit: at most 4096 experts";
  plan->mtiles = kbit::kbit_pick_mtiles(a.M, a.E);
  plan->decode = 0;
  plan->decode_act = 0;
  plan->decode_helpers = 0;
  plan->decode_pairs = 0;
  plan->wgmma = 0;
  plan->gemv_warps = plan->gemv_tiles = 0;
  plan->rows = 0;
#if KBIT_HAS_WGMMA && KBIT_HAS_ROWS
  // The row-owning kernel: by shape (rows_kernel_pays), or wherever it serves
  // (KBIT_KERNEL=rows), else the choice by shape.
  if (a.kernel == 6 || (a.kernel == 0 && kbit::rows_kernel_pays(a))) {
    int grid = 0, clusters = 0;
    int id = kbit::rows_config_for(a, kbit::sm_count(device), &grid);
    if (kbit::rows_shape(id, a.M, a.bits).split > 1) {   // only where all its clusters are resident at once
      if (const char* err = kbit::kbit_rows_dispatch(a.bits, a.bf16, id, a.M, kbit::RowsPlanFn{device, &clusters}))
        return err;
      if (clusters < grid) id = kbit::rows_config_for(a, kbit::sm_count(device), &grid, false);
    }
    if (id) {
      if (const char* err = kbit::kbit_rows_dispatch(a.bits, a.bf16, id, a.M, kbit::RowsPlanFn{device})) return err;
      plan->rows = id;
      plan->grid = grid;
      plan->workspace_floats = plan->counters = 0;
      plan->block_m = a.M > 16 ? 32 : 16;
      plan->block_n = 0;
      return nullptr;
    }
    if (a.kernel == 6) {
      KbitArgs by_shape = a;
      by_shape.kernel = 0;
      return kbit_gemm_plan(by_shape, device, plan);
    }
  }
#endif
  if (a.kernel == 5 || a.kernel == 0) {
    if (kbit::gemv_applies(a) && (a.kernel == 5 || kbit::gemv_kernel_pays(a))) {
      bool fits = false;
      if (const char* err = kbit::kbit_gemv_dispatch(a.bits, a.bf16, kbit::GemvPlanFn{a, device, plan, &fits}))
        return err;
      if (fits) return nullptr;
    }
    if (a.kernel == 5) {   // forced where it does not apply: the choice by shape
      KbitArgs by_shape = a;
      by_shape.kernel = 0;
      return kbit_gemm_plan(by_shape, device, plan);
    }
  }
#if KBIT_HAS_WGMMA
  if (a.kernel == 4 || (a.kernel == 0 && kbit::wgmma_kernel_pays(a, plan->mtiles))) {
    plan->mtiles = kbit::wgmma_mtiles(a, plan->mtiles);
    plan->wgmma = kbit::wgmma_config_for(a, plan->mtiles, kbit::sm_count(device));
    return kbit::kbit_wgmma_dispatch(a.bits, a.bf16, plan->mtiles, plan->wgmma,
                                     kbit::PlanFn<kbit::Kernel::kWgmma>{a, device, plan});
  }
#endif
  const bool decode = a.kernel == 2 || a.kernel == 3 || (a.kernel == 0 && kbit::decode_kernel_pays(a));
  if (decode && kbit::decode_serves(a, plan->mtiles, kbit::sm_count(device))) {
    // (One decode CTA per SM: 16 warps and over 100 KB of shared memory.)
    int nt = 4, act = 0;
    if (a.kernel == 3) act = kbit::decode_act_rows(a, kbit::sm_count(device), nt);
    else kbit::decode_shape(a, kbit::sm_count(device), nt, act);
    bool fits = false;
    const bool helpers = a.kernel != 3 && kbit::decode_helpers(a, kbit::sm_count(device), nt, act);
    if (const char* err = kbit::kbit_decode_dispatch(a.bits, a.bf16, nt, act,
                                                     kbit::PlanFn<kbit::Kernel::kDecode>{a, device, plan, &fits},
                                                     helpers))
      return err;
    if (fits) {
      plan->decode = nt;   // the run selects the same configuration
      plan->decode_act = act;
      plan->decode_helpers = helpers;
      return nullptr;
    }
  }
  return kbit::kbit_dispatch(a.bits, a.bf16, plan->mtiles, kbit::PlanFn<kbit::Kernel::kTiled>{a, device, plan});
}

const char* kbit_gemm_run(const KbitArgs& a, const KbitPlan& plan, float* ws, int32_t* counters,
                          void* stream) {
  using kbit::Kernel, kbit::RunFn;
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (plan.gemv_warps)
    return kbit::kbit_gemv_dispatch(a.bits, a.bf16, kbit::GemvRunFn{a, plan, st});
#if KBIT_HAS_WGMMA && KBIT_HAS_ROWS
  if (plan.rows)
    return kbit::kbit_rows_dispatch(a.bits, a.bf16, plan.rows, a.M,
                                    kbit::RowsRunFn{kbit::kbit_params(a, plan, ws, counters), plan.grid, stream});
#endif
#if KBIT_HAS_WGMMA
  if (plan.wgmma)
    return kbit::kbit_wgmma_dispatch(a.bits, a.bf16, plan.mtiles, plan.wgmma,
                                     RunFn<Kernel::kWgmma>{a, plan, ws, counters, st});
#endif
  if (plan.decode)
    return kbit::kbit_decode_dispatch(a.bits, a.bf16, plan.decode, plan.decode_act,
                                      RunFn<Kernel::kDecode>{a, plan, ws, counters, st}, plan.decode_helpers);
  return kbit::kbit_dispatch(a.bits, a.bf16, plan.mtiles, RunFn<Kernel::kTiled>{a, plan, ws, counters, st});
}

const char* nvfp4_gemv_run(const Nvfp4Args& a, int device, void* stream) {
  kbit::Nvfp4Params p;
  p.a = a.a; p.b = a.b; p.sfa = a.sfa; p.sfb = a.sfb;
  p.c = static_cast<__half*>(a.c);
  p.a_si = a.a_si; p.a_sl = a.a_sl; p.b_sl = a.b_sl;
  p.sfa_si = a.sfa_si; p.sfa_sl = a.sfa_sl; p.sfb_sl = a.sfb_sl;
  p.c_si = a.c_si; p.c_sl = a.c_sl;
  p.m = a.m; p.k = a.k; p.l = a.l;
  p.sfa_blocked = a.sfa_blocked; p.sfb_blocked = a.sfb_blocked;
  using kbit::kNvfp4GroupChunks, kbit::kNvfp4MinCtas;
  const bool two = kbit::nvfp4_chunks_per_element(p) == 2;
  auto kernel = two ? &kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks / 2, 2, false, kNvfp4MinCtas>
                    : &kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks, 1, false, kNvfp4MinCtas>;
  size_t smem = kbit::nvfp4_smem_bytes(a.k, 0);
  int per_sm = 0;
  if (const char* err = kbit::resident_ctas(reinterpret_cast<const void*>(kernel), kbit::kNvfp4Threads, smem,
                                            device, &per_sm))
    return err;
  const int gx = kbit::nvfp4_ctas_per_batch(a.m, a.l, kbit::sm_count(device) * per_sm);
  // Staged scales where a CTA's rows fit in shared memory without fewer CTAs per SM.
  if (kbit::nvfp4_sf_staged_ok(p)) {
    const auto staged = two ? &kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks / 2, 2, true, kNvfp4MinCtas>
                            : &kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks, 1, true, kNvfp4MinCtas>;
    const size_t smem_staged = kbit::nvfp4_smem_bytes(a.k, kbit::cdiv(a.m, gx));
    int staged_per_sm = 0;
    if (smem_staged <= kbit::smem_optin(device) &&
        !kbit::resident_ctas(reinterpret_cast<const void*>(staged), kbit::kNvfp4Threads, smem_staged, device,
                             &staged_per_sm) &&
        staged_per_sm >= per_sm) {
      kernel = staged;
      smem = smem_staged;
    }
  }
  kernel<<<dim3(gx, a.l), kbit::kNvfp4Threads, smem, static_cast<cudaStream_t>(stream)>>>(p);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

int plain_read_ctas(int device) { return kbit::sm_count(device) * kbit::kPlainReadCtasPerSm; }

const char* plain_read_run(const void* src, size_t bytes, uint32_t* out, int device, void* stream) {
  const cudaError_t err =
      kbit::plain_read_launch(src, bytes, out, kbit::sm_count(device), static_cast<cudaStream_t>(stream));
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

const char* family_name() { return KBIT_FAMILY; }

#if !KBIT_TCGEN05
// Families without tcgen05: the Blackwell paths do not exist here.
const char* kbit_gemm_run_tc(const KbitArgs&, const KbitPlan&, float*, int32_t*, void*) {
  return "tcgen05 path not built in this PTX family";
}
const char* nvfp4_gemv_run_tc(const Nvfp4Args&, int, void*) {
  return "tcgen05 path not built in this PTX family";
}
int has_tcgen05() { return 0; }
#endif

}  // namespace kbit_api
#endif  // KBIT_LAUNCH_NO_API
