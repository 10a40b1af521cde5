// kbit_wgmma.cuh — the tiled kbit GEMM on Hopper warpgroup MMA (sm90 family
// only). Same work split, ring, tables and epilogue as kbit_gemm.cuh; what
// changes is the multiply:
//
// * A warpgroup multiplies 64 weight rows by the whole activation tile with
//   one wgmma.mma_async per k16 step (m64 x BLOCK_M x k16, in pieces of at most
//   N = 64). The dequantized weights are its A operand IN REGISTERS, in the
//   same fragment layout the lookup already produces for mma.sync; the
//   activations are its B operand, read by the tensor core straight from the
//   ring stage: the cp.async copies already store them in the 128-byte swizzle
//   of a K-major wgmma operand (chunk c of row r at c ^ (r % 8)).
// * So a weight is dequantized once per BLOCK_M (up to 128) activation rows,
//   and no warp reads the activation tile through ldmatrix (the mma.sync
//   kernel's warps each re-read the whole tile for their 16 rows).
// * wgmma runs asynchronously: while the MMAs of unit u run, the warp waits
//   for unit u + 1's copies and dequantizes it into a second fragment set.
//   The E4M4 scale is multiplied into the fragments (one accumulator set).
// * The copies are the copy engine's: one thread issues a stage as three
//   instructions (the activation box through a tensor map, which also writes
//   the 128-byte swizzle and zero-fills rows past M and columns past K; the
//   plane words and scale bytes as 1-D bulk copies) and the stage's mbarrier
//   (full) counts their bytes. The other threads issue no copies and compute
//   no addresses (the mma.sync kernel's cp.async producer costs every thread
//   ~55 instructions per K-tile).
// * That thread is lane 0 of a copy warp of its own: the MMA warps release a
//   slot warp by warp (an arrive on its empty mbarrier) and never wait for
//   each other; the copy warp waits for a slot's release and refills it.
//   Tiles of one CTA per SM take a whole copy warpgroup, which hands its
//   registers to the MMA warps (setmaxnreg); two CTAs per SM up to 32
//   activation rows, one extra warp. The 64-row tile of two CTAs per SM has
//   no registers to spare: there thread 0 refills the previous slot after a
//   CTA barrier, between its own MMAs.
//
// Version log
//   v1  wgmma m64nNk16 with register A, double-buffered fragments, stream-K.
//   v2  three warpgroups (BLOCK_N 192) for 128-row tiles; split tiles summed
//       by vector reductions (kbit_gemm.cuh, finish_tile).
//   v3  stages filled by TMA / bulk copies from one thread, mbarrier per stage.
//   v4  the 256-byte-row pair table (one prmt per lookup address) wherever it
//       fits beside the ring: k <= 4, with 5 instead of 6 stages at 32 rows and
//       3 instead of 4 at 64 rows for k = 4 (H100: Llama-3-70B M = 32 / 64
//       2-4 % faster, Qwen3 M = 64 2-4 % slower; docs/results.md v19).
//   v5  up to 32 rows, a copy warp and per-slot empty mbarriers instead of
//       thread 0's copies after a CTA barrier per K-tile; B descriptors
//       stepped by adding to their low word (H100: Llama-3-70B M = 32 8-9 %,
//       M = 64 / 128 2-3 % faster; docs/results.md v22).
//   v6  kNT = 2: two 16-row tiles per MMA warp (BLOCK_N 256, one CTA of 8 + 1
//       warps per SM) up to 32 rows on layers >= 2^25 weights (70B M = 32
//       88 vs 93 us; launch.cuh wgmma_nt_for).
//   v7  a copy warpgroup with register reallocation (setmaxnreg) for every
//       one-CTA tile: 128 rows (12 + 4 warps, MMA warps at 160 registers),
//       several tiles per warp (8 + 4 warps, 240); three tiles per warp (BLOCK_N
//       384) on layers >= 2^27 weights. A 128-row tile of 8 MMA warps with
//       one CTA per tile where such tiles fill most of one wave (launch.cuh
//       wgmma_config_for). H100: Llama-3-70B M = 32 76 vs 90 us, M = 64 13 %,
//       128 rows 15-20 % faster (docs/results.md v23).
//   v8  one copy of the tile epilogue in the loop (it mostly runs cold); the
//       share's last tile stores C staged through the ring
//       (store_tile_staged); split tiles by claims (kbit_gemm.cuh,
//       finish_tile). H100: Llama-3-70B M = 64 10-11 %, M = 128 2-7 %, 8B
//       M = 32..128 4-12 % faster; Qwen3 M = 16 2-8 % slower (docs/results.md
//       v33). Staging only from 64 rows on (at 32 rows it was 1.5-2 us slower).
#pragma once

#include <cuda.h>   // CUtensorMap (the type only; the host encodes it through the runtime's driver entry point)

#include "sm90_wgmma.cuh"

namespace kbit {

// The tiled kernels' parameters plus the activations' tensor map: [M, K] of T,
// box kTileK x BLOCK_M, 128-byte swizzle (encoded per launch, launch.cuh).
struct WgmmaParams : KbitParams {
  CUtensorMap a_map;
};

#ifndef KBIT_WGMMA_COPY_WARP
#define KBIT_WGMMA_COPY_WARP 1   // 0: thread 0 issues the copies between its MMAs (A/B)
#endif
#ifndef KBIT_WGMMA_COPY_WARP_MAX_M
#define KBIT_WGMMA_COPY_WARP_MAX_M 32   // two-CTA tiles: the largest BLOCK_M with a copy warp (kCopyOne)
#endif
#ifndef KBIT_WGMMA_COPY_WG
#define KBIT_WGMMA_COPY_WG 1   // 0: one-CTA tiles take a single copy warp up to 32 rows, else thread 0 (A/B)
#endif
#ifndef KBIT_WGMMA_COPY_REGS
#define KBIT_WGMMA_COPY_REGS 24   // registers per thread of a copy warpgroup (setmaxnreg.dec)
#endif

// The share's loop (below): a loop per tile part with the epilogue after it,
// or one loop over the share's units with the epilogue in its body (as
// before v66). 1: the loop per part everywhere, 0: nowhere, 2: where it was
// faster (Cfg::kTileLoop). H200, tc_bench, two alternating rounds against
// the one loop (docs/results.md v66): 32-row tiles of two or three 16-row
// weight tiles per warp 0.8-1.8 us faster (Llama-3-8B gate/up 27.5-27.9 vs
// 29.1-29.3, 70B gate/up / down 70.8-71.7 / 70.5-71.5 vs 72.3-72.6 /
// 72.4-73.0), whole 128-row tiles of 8 warps 0.9 us (8B gate/up M = 128
// 37.8-38.1 vs 38.7-39.0). At 64 rows only with three weight tiles per warp
// and k != 4 (v67, Llama-3-70B gate/up: k = 3 2.6-3.0 us faster, k = 5
// 2.2, k = 2 0.2-1.3; k = 4 0.2-0.6 slower, down level). Not taken, per
// round: the other 64-row tiles (two weight tiles per warp: 8B down k = 2
// 0.9-1.5 us slower, k = 4 / 5 0.1-0.8), one weight tile per warp at 32
// and 64 rows (Qwen3, -0.6..+0.5 us), the stream-K 128-row tiles of 12
// warps (70B gate/up 0.1-1.2 us faster, Qwen3 gate/up 0.6-0.9 slower, the
// down layers level).
#ifndef KBIT_WGMMA_TILE_LOOP
#define KBIT_WGMMA_TILE_LOOP 2
#endif

#ifndef KBIT_WGMMA_STAGED_STORE
#define KBIT_WGMMA_STAGED_STORE 1   // 0: the share's last tile stores C from registers too (A/B)
#endif

#ifndef KBIT_WGMMA_WIDE_LUT
#define KBIT_WGMMA_WIDE_LUT 1   // 0: the 128-byte-row pair table (A/B)
#endif
#ifndef KBIT_WGMMA_K5_COPIES
#define KBIT_WGMMA_K5_COPIES 32   // replicas of the k = 5 pair table where the room allows (8, 16 or 32)
#endif
#ifndef KBIT_WGMMA_K5_EXPERTS
#define KBIT_WGMMA_K5_EXPERTS 1024   // experts whose slot table the 128 KB k = 5 table leaves room for
#endif
// Timing probes (scripts/tc_bench.cu; the results are wrong): bit 0 issues no
// MMAs (the fragments are folded into the accumulators so that their
// dequantization stays), bit 1 dequantizes only each warp's first unit (the
// MMAs reuse its fragments), bit 2 skips the tile epilogues, bit 3 stores
// every contributor's part of a tile straight to C (no workspace sums), bit 4
// copies only the first half of each activation box (half the activation
// bytes into each SM: docs/results.md v65), bit 5 issues no copies after the
// ring's first round (each stage's barrier completes by a plain arrival; the
// slots keep their first contents).
#ifndef KBIT_WGMMA_PROBE
#define KBIT_WGMMA_PROBE 0
#endif
// Wait for every MMA of a unit before the next unit's dequantization
// (WgmmaConfig::kDrain): 0 off, 1 at 128-row tiles, 2 wherever the copies
// have a warp of their own.
#ifndef KBIT_WGMMA_DRAIN
#define KBIT_WGMMA_DRAIN 0
#endif
// Where an MMA warp waits for the next unit's stage: before it waits for
// the previous unit's MMAs (WgmmaConfig::kEarlyFull), not after. 0 never,
// 1 (default) the configurations where that measured faster, 2 every one.
#ifndef KBIT_WGMMA_EARLY_FULL
#define KBIT_WGMMA_EARLY_FULL 1
#endif
// Where the MMA warps hold their loop's per-unit constants in registers
// (WgmmaConfig::kSyncRegs, a mask): bit 0 the barrier arrays' addresses and
// the releasing lane (through opaque moves) and the stages' parity as one
// bit; bit 1 the dequantization's lane constants (warp, lane, the pair
// rotations). -1 (default): the rule in WgmmaConfig; 0..3 that mask in every
// configuration (A/B).
#ifndef KBIT_WGMMA_SYNC_REGS
#define KBIT_WGMMA_SYNC_REGS -1
#endif
// Where the stage's wait comes first (kEarlyFull), also load the next unit's
// plane words and scale bytes into registers before waiting for the
// previous unit's MMAs (WgmmaConfig::kEarlyWords): 0 (default) never, 1 the
// 128-row tiles of 8 MMA warps, 2 every such configuration. Prepared from
// ncu's stall samples (docs/results.md v72), not yet measured.
#ifndef KBIT_WGMMA_EARLY_WORDS
#define KBIT_WGMMA_EARLY_WORDS 0
#endif
// The scale table as ready T pairs (WgmmaConfig::kScalePairs): one LDS per
// block and row gives the pair that multiplies the fragments, no F2FP.
// 0 (default) off, 1 on. Prepared, not yet measured (docs/results.md v72).
#ifndef KBIT_WGMMA_SCALE_PAIRS
#define KBIT_WGMMA_SCALE_PAIRS 0
#endif
// Timeline hooks (scripts/tc_bench.cu -DTC_TIMELINE): thread 0 records a
// value in a per-CTA slot (KBIT_WGMMA_MARK) or in the current tile
// epilogue's slots (KBIT_EPI_MARK, also in finish_tile). Empty by default.
#ifndef KBIT_WGMMA_MARK
#define KBIT_WGMMA_MARK(slot, value)
#endif
// Loop-phase hooks (scripts/tc_bench.cu -DTC_PHASES): every MMA thread adds
// the SM clocks spent in each phase of its loop (KBIT_WGMMA_PHASE(k, x): phase
// k ended once x is in a register) and stores the sums at the kernel's end.
// Empty by default.
// Ring hooks (scripts/tc_bench.cu -DTC_RING): SM clocks of a share's unit n
// at each hand-over of its slot: 0 the copy warp got the slot (its previous
// unit released), 1 the copies issued, 2 thread 0 at the unit's full
// barrier, 3 thread 0 past it, 4 thread 0 released the unit's slot. Empty by
// default.
#ifndef KBIT_RING_MARK
#define KBIT_RING_MARK(kind, n)
#endif
#ifndef KBIT_WGMMA_PHASE
#define KBIT_WGMMA_PHASES_BEGIN()
#define KBIT_WGMMA_PHASE(k, x)
#define KBIT_WGMMA_PHASES_END()
#endif

// Bytes of one ring stage: the activation tile (first: wgmma's swizzled
// operand needs 1024-byte alignment), the plane words and the scale bytes of
// BLOCK_N = 16 kWarps rows, rounded up to 1024.
__host__ __device__ constexpr int wgmma_stage_bytes(int bits, int block_m, int warps) {
  return cdiv(block_m * kTileK * 2 + warps * 16 * 2 * bits * 4 + warps * 16 * 2, 1024) * 1024;
}
// k = 2 where one CTA holds the SM: the decode kernel's row-pair table (one
// 64-bit entry per index byte, the pairs of rows g and g + 8 side by side;
// 256 entries of 256-byte rows, as k = 4's wide table), so a 32-block takes
// four lookups instead of eight. The three-tile inner loop is 575 SASS
// instructions instead of 675. tc_bench, H200 (docs/results.md v68):
// Llama-3-70B gate/up M = 32 62.1-62.6 -> 59.4-59.6 us, M = 64 74.3-74.7 ->
// 73.2-73.5, M = 128 111.4-112.0 -> 110.2-110.5, 8B M = 128 0.1-0.6 faster.
// Two CTAs per SM keep the 4 KB table: the 64 KB one cost Qwen3 gate/up
// M = 64 (few units per CTA) up to 0.35 us in its set-up.
#ifndef KBIT_WGMMA_ROW_PAIR
#define KBIT_WGMMA_ROW_PAIR 1
#endif
__host__ __device__ constexpr bool wgmma_row_pair(int bits, int blocks) {
  return KBIT_WGMMA_ROW_PAIR && bits == 2 && blocks == 1;
}
// One CTA's shared memory with the wide pair table (wide_lut_cta_bytes; k = 4's
// size for the row-pair table): the ring and its 1024-byte alignment slack.
__host__ __device__ constexpr size_t wgmma_wide_cta_bytes(int bits, int block_m, int warps, int stages, int blocks) {
  return wide_lut_cta_bytes(wgmma_row_pair(bits, blocks) ? 4 : bits,
                            1024 + size_t(stages) * wgmma_stage_bytes(bits, block_m, warps));
}
// build_decode_lut's view of the row-pair table.
template <typename T_, int kThreads_>
struct RowPairTable {
  static constexpr int kBits = 2;
  using T = T_;
  static constexpr bool kQuad = true, kLanePerm = false;
  static constexpr int kEntries = 256, kEntryBytes = 256, kEntryUsed = 256, kThreads = kThreads_;
};
// k = 5: one CTA's shared memory with a pair table of `copies` replicas (1024
// entries of 4-byte words each, 128-byte rows at 32), in the layout of
// wgmma_wide_cta_bytes but with the slot table of KBIT_WGMMA_K5_EXPERTS
// experts: the ring takes what the table leaves, and a grouped layer with
// many experts (Qwen3-Coder-Next: 512) must still fit. `warps`: MMA warps.
__host__ __device__ constexpr size_t wgmma_k5_cta_bytes(int block_m, int warps, int nt, int stages, int copies) {
  return dyn_lut_cta_bytes(size_t(1024) * copies * 4, KBIT_WGMMA_K5_EXPERTS,
                           1024 + size_t(stages) * wgmma_stage_bytes(5, block_m, warps * nt));
}
// The k = 5 table's replicas. Lane l reads replica l % copies; replica c of
// entry e lies in bank (e * copies + c) % 32, so with 8 replicas the four
// lanes that share one collide unless their entries differ mod 4: about 3
// shared-memory wavefronts per lookup of random indices, 2 with 16, 1 with
// 32. The rule, by measurement (H100, tc_bench graph us, docs/results.md v48):
// * one CTA per SM: the most replicas, up to KBIT_WGMMA_K5_COPIES, that
//   leave the ring 4 stages, or 3 with three 16-row tiles per warp, else 8.
//   8 -> 32 replicas: Llama-3-70B gate/up M = 32 105 -> 93, M = 64 (3 tiles
//   per warp, 3 stages) 120.5 -> 111.6, down M = 64 119.5 -> 109.5, 8B
//   gate/up M = 64 (4 stages) 43.1 -> 40.8. 16 replicas were slower there
//   (M = 64: 113-114), but at M = 128 (12 warps) 32 replicas leave 3 stages,
//   159-160 against 151 with 8, and 16 replicas with 6 stages take 145;
// * two CTAs per SM: 8 (static). There 16 fit, and the Qwen3-Coder-Next
//   layers at M = 32..64 were 0.4-1.1 us slower with them.
__host__ __device__ constexpr int wgmma_k5_copies(int block_m, int warps, int nt, int blocks) {
  if (blocks > 1) return 8;
  for (int c = KBIT_WGMMA_K5_COPIES; c > 8; c /= 2)
    if (wgmma_k5_cta_bytes(block_m, warps, nt, nt == 3 ? 3 : 4, c) <= size_t(KBIT_SMEM_PER_SM_KB) * 1024) return c;
  return 8;
}
// One CTA's shared memory at `stages` where its pair table lies in dynamic
// shared memory (the wide table at k <= 4, the larger k = 5 tables) beside
// the ring; 0 where the table is static. `warps`: MMA warps.
__host__ __device__ constexpr size_t wgmma_table_cta_bytes(int bits, int block_m, int warps, int nt, int blocks,
                                                           int stages) {
  return bits <= 4 ? (KBIT_WGMMA_WIDE_LUT ? wgmma_wide_cta_bytes(bits, block_m, warps * nt, stages, blocks) : 0)
         : wgmma_k5_copies(block_m, warps, nt, blocks) > 8
             ? wgmma_k5_cta_bytes(block_m, warps, nt, stages, wgmma_k5_copies(block_m, warps, nt, blocks))
             : 0;
}
// Ring depth: `stages`, or with a table in dynamic shared memory the most
// stages up to that which let `blocks` CTAs share an SM, if that is 3 or more.
__host__ __device__ constexpr int wgmma_stages(int bits, int block_m, int warps, int nt, int blocks, int stages) {
  if (wgmma_table_cta_bytes(bits, block_m, warps, nt, blocks, stages) == 0) return stages;
  int s = stages;
  while (s > 3 && blocks * wgmma_table_cta_bytes(bits, block_m, warps, nt, blocks, s) >
                      size_t(KBIT_SMEM_PER_SM_KB) * 1024)
    --s;
  return s;
}

// 128-row tiles as one m64n128k16 per k16 step instead of two m64n64k16.
// The tensor pipe queues about eight wgmma instructions per SM whatever their
// N; a warp issuing past that is held at the issue until earlier ones finish
// (scripts/wgmma_rate.cu issue; docs/results.md v68), and the kernel's 12 MMA
// warps issue 8 per warp and unit, so they sit there for most of the tensor
// time. tc_bench, H200, four rounds (v68): with 12 MMA warps k = 4 Llama-3-70B
// gate/up M = 128 -1.6..-2.6 us, down -2.0..-2.6, 8B down -0.1..-1.4, k = 3
// -1.3..-2.4, k = 5 level, but k = 2 +1.4..+2.1; the whole tiles of 8 MMA
// warps +0.8..+1.4 (k = 4). 0: off; 1 (default): 12 MMA warps at k = 3, 4;
// 2: every 128-row tile (the GPU suite and memcheck run clean with it, v69).
#ifndef KBIT_WGMMA_WIDE_PIECES
#define KBIT_WGMMA_WIDE_PIECES 1
#endif

// Compile-time configuration. kWarps / 4 warpgroups of 64 weight rows per
// 16-row tile, kNT tiles per warp (BLOCK_N = 16 * kWarps * kNT); BLOCK_M
// activation rows (8..128) per tile. The stage puts the activation
// tile first: wgmma's swizzled operand needs 1024-byte alignment.
template <int kBits_, typename T_, int kBlockM_, int kStages_, int kMinBlocks_, int kWarps_ = 8, int kNT_ = 1>
struct WgmmaConfig {
  static constexpr int kBits = kBits_;
  using T = T_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kNT = kNT_;                   // 16-row weight tiles per warp
  static constexpr int kMTiles = kBlockM_ / 8;       // 8-column groups of the accumulator
  static constexpr int kStages = kStages_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr int kThreads = kWarps * kWarpSize;   // the MMA warps
  static constexpr int BLOCK_M = kBlockM_;
  static constexpr int BLOCK_N = kWarps * 16 * kNT;
  // wgmma N of one instruction: the whole tile up to 64 rows, or 128 with
  // KBIT_WGMMA_WIDE_PIECES (above).
  static constexpr bool kWidePieces =
      BLOCK_M == 128 && (KBIT_WGMMA_WIDE_PIECES == 2 ||
                         (KBIT_WGMMA_WIDE_PIECES == 1 && kWarps_ == 12 && (kBits_ == 3 || kBits_ == 4)));
  static constexpr int kPieceN = kWidePieces ? 128 : BLOCK_M < 64 ? BLOCK_M : 64;
  static constexpr int kPieces = BLOCK_M / kPieceN;
  static constexpr int kSumBatch = 4;   // (finish_tile's loads of a split tile's sum; see KbitConfig)
  static constexpr bool kTileLoop =   // (KBIT_WGMMA_TILE_LOOP)
      KBIT_WGMMA_TILE_LOOP == 1 ||
      (KBIT_WGMMA_TILE_LOOP == 2 && ((kBlockM_ == 32 && kNT_ > 1) || (kBlockM_ == 64 && kNT_ == 3 && kBits_ != 4) ||
                                     (kBlockM_ == 128 && kWarps_ == 8)));

  static constexpr int kABytes = BLOCK_M * kTileK * 2;
  static constexpr int kWBytes = BLOCK_N * 2 * kBits * 4;
  static constexpr int kSBytes = BLOCK_N * 2;
  static constexpr int kAOff = 0, kWOff = kABytes, kSOff = kABytes + kWBytes;
  static constexpr int kStageBytes = wgmma_stage_bytes(kBits, BLOCK_M, kWarps * kNT);

  // The copies: a warp of their own after the MMA warps (kCopyWarp), or
  // thread 0 between its MMAs.
  // * Tiles with one CTA per SM: a copy warpgroup that hands its registers to
  //   the MMA warps (setmaxnreg). Registers are split per scheduler: each
  //   holds one copy warp and kWarps / 4 MMA warps, so a 9th or 13th warp
  //   alone would cap its scheduler's warps at 170 or 128 registers. With a
  //   whole warpgroup the entry count is 65536 / threads, the copy warps drop
  //   to kCopyRegs and the MMA warps rise to kMmaRegs, e.g. 12 + 4 warps:
  //   entry 128, copy 24, MMA 160 (the 128-row tile needs 152); 8 + 4: 168,
  //   24, 240. Only lane 0 of the first copy warp works; the others exit.
  // * Two CTAs per SM up to 32 rows: a single copy warp, at the kernel's
  //   register count (two CTAs of 9 warps, <= 102 registers).
  // * The 64-row tile with two CTAs per SM (118 registers) keeps thread 0's
  //   copies: a copy warpgroup per CTA would leave its MMA warps 108.
  static constexpr bool kCopyWG = KBIT_WGMMA_COPY_WARP && KBIT_WGMMA_COPY_WG && kMinBlocks_ == 1;
  static constexpr bool kCopyOne = KBIT_WGMMA_COPY_WARP && !kCopyWG && kBlockM_ <= KBIT_WGMMA_COPY_WARP_MAX_M;
  static constexpr bool kCopyWarp = kCopyOne || kCopyWG;
  // Each MMA warp waits for all of a unit's MMAs before it dequantizes the
  // next unit (KBIT_WGMMA_DRAIN, needs the copy warp: the slot is released
  // one unit earlier), so at most one group per warpgroup is in the tensor
  // pipe's queue and the warpgroups overlap each other's MMAs.
  static constexpr bool kDrain = kCopyWarp && (KBIT_WGMMA_DRAIN == 2 || (KBIT_WGMMA_DRAIN == 1 && kBlockM_ == 128));
  // The stage's wait ahead of the MMAs' (KBIT_WGMMA_EARLY_FULL). The stage
  // has almost always landed (thread 0 finds it complete after ~155 SM
  // clocks, tc_bench -DTC_RING), and that latency then passes while the
  // warp waits for its MMAs anyway, not before its dequantization. tc_bench,
  // H200, three rounds each (docs/results.md v71): Llama-3-8B gate/up
  // M = 128 37.6-38.7 -> 36.2-36.5 us, 70B M = 128 -1.5 %, 70B M = 32 and
  // 8B M = 64 -1.8 %, 8B down M = 128 -1 %; but 70B M = 64 (three tiles at
  // 64 rows) +8.5 %, and +1 % at two tiles of 32 rows, at k = 5 with three
  // tiles at 64 rows and without a copy warp: those keep the wait after.
  static constexpr bool kEarlyFull =
      KBIT_WGMMA_EARLY_FULL == 2 ||
      (KBIT_WGMMA_EARLY_FULL == 1 && kCopyWarp &&
       (kBlockM_ == 128 || (kBlockM_ == 64 && kNT_ == 2) || (kBlockM_ == 32 && kNT_ == 3)));
  // The loop's constants in registers (KBIT_WGMMA_SYNC_REGS). Without it
  // ptxas rebuilds them in every unit: it re-reads SR_TID.X and SR_CgaCtaId
  // and recomputes the barriers' addresses, the lane's pair rotations and
  // row offsets, a dependent chain of ~50 instructions per two units between
  // the MMAs' wait and the first plane load (and the stages' parity as a
  // mask shifted by the slot; one bit that flips where the ring wraps is
  // enough, as the units are waited for in slot order). tc_bench, H200, two
  // or three rounds per mask (docs/results.md v72), both bits: 70B M = 128
  // -3.5 % (k = 5 -5 %), k = 2 at 64 rows -5 %, k = 5 three tiles at 64
  // rows -2 %, 8B down M = 128 -1.5 %. The 128-row tiles of 8 MMA warps
  // were 4 % slower at k = 4 with both bits but 1-3.5 % faster with either
  // one: bit 0 there (at k = 2 both bits were the fastest, -6 % against
  // -3 % with bit 0; not yet taken: the device checks ran on this rule).
  // The three tiles at 64 rows at k = 3, 4 were 1.5-5.5 % slower with any
  // bit: none there.
  static constexpr int kSyncRegs =
      KBIT_WGMMA_SYNC_REGS >= 0 ? KBIT_WGMMA_SYNC_REGS
      : kBlockM_ == 128 && kWarps_ == 8 ? 1
      : kBlockM_ == 64 && kNT_ == 3 && (kBits_ == 3 || kBits_ == 4) ? 0
      : 3;
  // The next unit's words loaded ahead of the MMAs' wait (KBIT_WGMMA_EARLY_WORDS):
  // their latency then passes during that wait. With both kSyncRegs bits on
  // the 8-warp 128-row tile (v72) the loads issued right after the wait, and
  // the first use of each waited on it (ncu: short_sb).
  static constexpr bool kEarlyWords =
      kEarlyFull && (KBIT_WGMMA_EARLY_WORDS == 2 || (KBIT_WGMMA_EARLY_WORDS == 1 && kBlockM_ == 128 && kWarps_ == 8));
  static constexpr bool kScalePairs = KBIT_WGMMA_SCALE_PAIRS != 0;
  static constexpr int kCtaWarps = kWarps + (kCopyWG ? 4 : kCopyOne ? 1 : 0);
  static constexpr int kCtaThreads = kCtaWarps * kWarpSize;
  // (Per-thread counts are multiples of 8, at most 248: the largest below 255.)
  static constexpr int kEntryRegs = cmin(65536 / (kCtaThreads * kMinBlocks_) / 8 * 8, 248);
  static constexpr int kCopyRegs = KBIT_WGMMA_COPY_REGS;
  static constexpr int kMmaRegs = cmin(((kWarps / 4 + 1) * kEntryRegs - kCopyRegs) / (kWarps / 4) / 8 * 8, 248);

  // Pair table (KbitConfig): 128-byte rows, or where kMinBlocks CTAs still fit
  // in shared memory (k <= 4; the launch picks the ring depth for it,
  // wgmma_stages), the 256-byte rows that form a lookup's address with one
  // prmt. The wide table is the first section of dynamic shared memory.
  // At k = 5 (1024 entries) 16 or 32 replicas take 64 or 128 KB, in dynamic
  // shared memory too (wgmma_k5_copies).
  static constexpr int kCopies = kBits <= 4 ? 32 : wgmma_k5_copies(kBlockM_, kWarps_, kNT_, kMinBlocks_);
  static constexpr size_t kWideCtaBytes = wgmma_wide_cta_bytes(kBits, kBlockM_, kWarps_ * kNT_, kStages_, kMinBlocks_);
  static constexpr bool kWideLut = KBIT_WGMMA_WIDE_LUT && kBits <= 4 &&
                                   kMinBlocks * kWideCtaBytes <= size_t(KBIT_SMEM_PER_SM_KB) * 1024;
  static constexpr bool kRowPairLut = kWideLut && wgmma_row_pair(kBits, kMinBlocks_);
  static constexpr int kPairEntries = kRowPairLut ? 256 : 1 << (2 * kBits);
  // The row-pair table, built by the set-up's threads (build_tables).
  template <int kSetupThreads>
  __device__ __forceinline__ static void build_row_pair_lut(uint32_t* lut, const float* cb_s, float inv_max,
                                                             int tid) {
    build_decode_lut<RowPairTable<T, kSetupThreads>>(reinterpret_cast<uint8_t*>(lut), cb_s, inv_max, tid);
  }
  static constexpr int kLutRowWords = kWideLut ? 64 : kCopies;
  static constexpr int kLutBytes = kPairEntries * kLutRowWords * 4;
  static constexpr int kLutShift = kWideLut ? 0 : kCopies == 32 ? 7 : kCopies == 16 ? 6 : 5;   // log2(kCopies * 4)
  static constexpr bool kDynLut = kWideLut || kLutBytes > 32 * 1024;
  static constexpr int kStaticLutWords = kDynLut ? 1 : kLutBytes / 4;
  static constexpr int kDynLutBytes = kDynLut ? kLutBytes : 0;

  // Dynamic shared memory: (the wide table,) the slot table, then (1024-aligned
  // at run time) the ring.
  __host__ __device__ static constexpr size_t smem_bytes(int experts) {
    return size_t(kDynLutBytes) + size_t(slot_table_bytes(experts)) + 1024 +
           size_t(kStages) * kStageBytes;
  }
  static_assert(BLOCK_M == 8 || BLOCK_M == 16 || BLOCK_M == 32 || BLOCK_M % 64 == 0, "wgmma N pieces");
  static_assert(kCopies == 8 || kCopies == 16 || kCopies == 32, "pair table replicas: 8, 16 or 32");
  static_assert(kStages >= 3, "unit u + 1 is dequantized while unit u's MMAs run: three stages at least");
  static_assert(kBits >= 2 && kBits <= 5, "k must be 2..5");
  static_assert(kWarps % 4 == 0, "whole warpgroups of 64 weight rows");
  static_assert(!kCopyWG || (kCopyRegs + kWarps / 4 * kMmaRegs <= (kWarps / 4 + 1) * kEntryRegs &&
                             kMmaRegs >= kEntryRegs),
                "copy warpgroup: the registers handed over must exist");
};

// The shared-memory words of one K-tile that this warp's lanes dequantize:
// the plane words of rows r and r + 8 (pa, pb) per 16-row tile and 32-block,
// and the rows' scale bytes.
template <class Cfg>
struct KtileWords {
  uint32_t pa[Cfg::kNT][2][Cfg::kBits], pb[Cfg::kNT][2][Cfg::kBits];
  uint32_t sa[Cfg::kNT], sb[Cfg::kNT];
};
template <class Cfg>
__device__ __forceinline__ void load_ktile(KtileWords<Cfg>& x, const uint8_t* stage, int warp, int lane) {
  const uint32_t* w_s = reinterpret_cast<const uint32_t*>(stage + Cfg::kWOff);
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
    const int r = warp * 16 * Cfg::kNT + nt * 16 + (lane >> 2);
    x.sa[nt] = scale_bytes<Cfg>(stage, r);
    x.sb[nt] = scale_bytes<Cfg>(stage, r + 8);
#pragma unroll
    for (int blk = 0; blk < 2; ++blk) load_block_planes<Cfg::kBits>(x.pa[nt][blk], x.pb[nt][blk], w_s, r, blk);
  }
}

// The A fragments of one K-tile for this warp's kNT 16-row tiles: f[nt][s]
// feeds k16 step s of tile nt (rows 16 kNT warp + 16 nt ..): from words
// load_ktile brought into registers earlier (Cfg::kEarlyWords), or
// (dequant_ktile) from the stage.
template <class Cfg>
__device__ __forceinline__ void dequant_ktile_words(uint32_t (&f)[Cfg::kNT][4][4], const KtileWords<Cfg>& x,
                                                    const uint8_t* lut, uint32_t lane_off, const float* e4m4,
                                                    const uint32_t (&rot)[5]) {
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
    for (int blk = 0; blk < 2; ++blk) {
      float scale[2];
      dequant_block_planes<Cfg, true, Cfg::kScalePairs>(reinterpret_cast<uint32_t(&)[2][4]>(f[nt][2 * blk]), scale,
                                                        x.pa[nt][blk], x.pb[nt][blk], x.sa[nt], x.sb[nt], blk, lut,
                                                        lane_off, e4m4, rot);
    }
}
// (Each block's words loaded next to its lookups, as ptxas schedules it
// best where the loads need not come early: load_ktile + dequant_ktile_words
// give a different listing.)
template <class Cfg>
__device__ __forceinline__ void dequant_ktile(uint32_t (&f)[Cfg::kNT][4][4], const uint8_t* stage, const uint8_t* lut,
                                              uint32_t lane_off, const float* e4m4, const uint32_t (&rot)[5],
                                              int warp, int lane) {
  const uint32_t* w_s = reinterpret_cast<const uint32_t*>(stage + Cfg::kWOff);
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
    const int r = warp * 16 * Cfg::kNT + nt * 16 + (lane >> 2);
    const uint32_t sa = scale_bytes<Cfg>(stage, r), sb = scale_bytes<Cfg>(stage, r + 8);
#pragma unroll
    for (int blk = 0; blk < 2; ++blk) {
      float scale[2];
      dequant_block<Cfg, true, Cfg::kScalePairs>(reinterpret_cast<uint32_t(&)[2][4]>(f[nt][2 * blk]), scale, w_s, sa,
                                                 sb, r, blk, lut, lane_off, e4m4, rot);
    }
  }
}

// The copy side of the ring on the copy engine, as a Producer cursor. Warp 0
// walks the share (Producer<Cfg, TmaCursor<Cfg>>); thread 0 issues a stage:
// the activation box {kt * 64, row0} through the tensor map, and the plane
// words and scale bytes of the tile's rows that exist in memory (N_pad) as
// 1-D bulk copies, all counted by the stage's mbarrier. Rows past N_pad keep a
// slot's old (finite) words: they only feed output rows past N, which are
// never stored.
template <class Cfg>
struct TmaCursor : WeightCursor<Cfg> {
  static constexpr bool kCommitGroups = false;   // completion is the mbarrier's
  int row0;
  uint32_t w_bytes;   // plane words of the rows in memory; the scales are w_bytes / (4 * kBits)
  mutable int probe_issued = 0;   // (KBIT_WGMMA_PROBE bit 5)

  __device__ __forceinline__ void start(const KbitParams& p, const TilePos& pos, int kt0, int) {
    w_bytes = uint32_t(this->seek(p, pos, kt0)) * (8 * Cfg::kBits);
    row0 = pos.row0;
  }
  __device__ __forceinline__ void advance(const KbitParams& p) { this->next_k(p); }
  // Fill the stage at shared address `stage` (its mbarrier `full`).
  __device__ __forceinline__ void issue(const WgmmaParams& p, int tid, uint32_t stage, uint32_t full) const {
    if (tid != 0) return;
    if constexpr (KBIT_WGMMA_PROBE & 32) {   // probe: after the ring's first round, no copies
      if (++probe_issued > Cfg::kStages) {
        ptx::mbarrier_arrive(full);
        return;
      }
    }
    const uint32_t s_bytes = w_bytes / (4 * Cfg::kBits);
    // The slot's previous contents were read through the generic proxy
    // (dequantization loads, before the CTA barrier); the copies write
    // through the async proxy.
    ptx::fence_proxy_async_smem();
    constexpr uint32_t a_bytes = KBIT_WGMMA_PROBE & 16 ? Cfg::kABytes / 2 : Cfg::kABytes;
    ptx::mbarrier_arrive_expect_tx(full, a_bytes + w_bytes + s_bytes);
    ptx::cp_async_bulk_tensor_2d_g2s(stage + Cfg::kAOff, &p.a_map, this->kt * kTileK, row0, full);
    ptx::cp_async_bulk_g2s(stage + Cfg::kWOff, this->w_src, w_bytes, full);
    ptx::cp_async_bulk_g2s(stage + Cfg::kSOff, this->s_src, s_bytes, full);
  }
};

// Issues the MMAs of one K-tile: acc (+)= W_frag * A_stage^T. `accumulate` = 0
// overwrites the accumulators at the first k16 step (a tile's first unit).
template <class Cfg>
__device__ __forceinline__ void wgmma_ktile(float (&acc)[Cfg::kNT][Cfg::kMTiles][4],
                                            const uint32_t (&f)[Cfg::kNT][4][4], uint32_t a_stage,
                                            uint32_t accumulate) {
  if constexpr (KBIT_WGMMA_PROBE & 1) {
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        float& x = acc[nt][s % Cfg::kMTiles][s / Cfg::kMTiles % 4];
        x = __uint_as_float((accumulate ? __float_as_uint(x) : 0u) ^ f[nt][s][0] ^ f[nt][s][1] ^ f[nt][s][2] ^
                            f[nt][s][3]);
      }
    return;
  }
  const uint32_t lo = ptx::wgmma_desc_sw128_kmajor_lo(a_stage);
  ptx::wgmma_fence();
#pragma unroll
  for (int s = 0; s < 4; ++s)
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int pc = 0; pc < Cfg::kPieces; ++pc) {
        const uint64_t desc = ptx::wgmma_desc_sw128_kmajor_of(lo + ((pc * Cfg::kPieceN * 128 + s * 32) >> 4));
        ptx::wgmma_rs<Cfg::kPieceN, typename Cfg::T>(&acc[nt][pc * (Cfg::kPieceN / 8)][0], f[nt][s], desc,
                                                     s == 0 ? accumulate : 1u);
      }
  ptx::wgmma_commit();
}

// The set-up (tables, slot table) is the whole CTA's, the copy warp included.
template <class Cfg>
struct WgmmaSetup : Cfg {
  static constexpr int kWarps = Cfg::kCtaWarps;
  static constexpr int kThreads = Cfg::kCtaThreads;
};

// The barrier of the MMA warps (finish_tile's): named barrier 1 where the copy
// warp runs its own loop, else the CTA's.
template <class Cfg>
struct MmaWarpsSync {
  __device__ __forceinline__ void operator()() const {
    if constexpr (Cfg::kCopyWarp) ptx::bar_sync(1, Cfg::kThreads); else __syncthreads();
  }
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kCtaThreads, Cfg::kMinBlocks)
kbit_wgmma_kernel(const __grid_constant__ WgmmaParams p) {
  __shared__ __align__(128) uint32_t lut_static[Cfg::kStaticLutWords];
  __shared__ float e4m4[256];
  __shared__ float cb_s[32];
  __shared__ int scratch[32];
  __shared__ __align__(8) uint64_t full_bar[Cfg::kStages];    // stage s's copies have landed
  __shared__ __align__(8) uint64_t empty_bar[Cfg::kStages];   // every MMA warp is done with stage s (copy warp)
  extern __shared__ __align__(128) uint8_t kbit_smem[];
  uint32_t* lut = Cfg::kDynLut ? reinterpret_cast<uint32_t*>(kbit_smem) : lut_static;
  int* slot_start = reinterpret_cast<int*>(kbit_smem + Cfg::kDynLutBytes);
  const uint32_t ring_s =
      (ptx::smem_u32(kbit_smem + Cfg::kDynLutBytes + slot_table_bytes(p.E)) + 1023u) & ~1023u;
  uint8_t* ring = kbit_smem + (ring_s - ptx::smem_u32(kbit_smem));
  const uint32_t bar_s = ptx::smem_u32(full_bar), empty_s = ptx::smem_u32(empty_bar);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      ptx::mbarrier_init(bar_s + 8 * s, 1);
      if (Cfg::kCopyWarp) ptx::mbarrier_init(empty_s + 8 * s, Cfg::kWarps);
    }
    ptx::fence_mbarrier_init();
  }
  // (build_tables ends with a CTA barrier: the barriers are initialized for all.)
  KBIT_WGMMA_MARK(0, kbit_mark_now());
  const float cb_max = build_tables<WgmmaSetup<Cfg>, Cfg::kScalePairs>(lut, e4m4, cb_s, scratch, slot_start, p, tid);
  if (cb_max < 0.f) return;
  KBIT_WGMMA_MARK(1, kbit_mark_now());

  const StreamKShare sh = StreamKShare::of<Cfg>(p, slot_start);
  if (sh.u_begin == sh.u_end) return;

  auto next_slot = [](int s) { return s + 1 == Cfg::kStages ? 0 : s + 1; };
  Producer<Cfg, TmaCursor<Cfg>> prod;   // the copy warp's, else warp 0's
  if constexpr (Cfg::kCopyWarp) {
    // ---- the copy warp: the share's units in order, each into the next slot
    // once every MMA warp has released that slot's previous unit ----------------
    if (warp >= Cfg::kWarps) {
      if constexpr (Cfg::kCopyWG) ptx::setmaxnreg_dec<Cfg::kCopyRegs>();
      if (warp != Cfg::kWarps) return;
      prod.start(p, sh, slot_start, lane);
      uint32_t empty_phases = 0;   // parity of each slot's next release (bit s)
      for (int n = 0, s = 0; prod.ld_u < sh.u_end; ++n, s = next_slot(s)) {
        if (n >= Cfg::kStages) {
          ptx::mbarrier_wait_parity(empty_s + 8 * s, (empty_phases >> s) & 1u);
          empty_phases ^= 1u << s;
        }
        KBIT_RING_MARK(0, n);
        prod.produce(p, sh, slot_start, lane, ring_s + s * Cfg::kStageBytes, bar_s + 8 * s);
        KBIT_RING_MARK(1, n);
      }
      return;
    }
    if constexpr (Cfg::kCopyWG) ptx::setmaxnreg_inc<Cfg::kMmaRegs>();
  }

  // The lane's constants, and below the barriers', in registers where the
  // configuration asks for it (Cfg::kSyncRegs).
  constexpr bool kBarRegs = (Cfg::kSyncRegs & 1) != 0, kLaneRegs = (Cfg::kSyncRegs & 2) != 0;
  const int dq_warp = kLaneRegs ? ptx::opaque_int(warp) : warp;
  const int dq_lane = kLaneRegs ? ptx::opaque_int(lane) : lane;
  const uint8_t* lut_bytes = reinterpret_cast<const uint8_t*>(lut);
  const uint32_t lane_off = Cfg::kRowPairLut ? uint32_t(dq_lane) * 8 : uint32_t(dq_lane % Cfg::kCopies) * 4;
  uint32_t rot[5];
  pair_rotations<Cfg>(rot, lane);
  if constexpr (kLaneRegs)
    for (int b = 0; b < 5; ++b) rot[b] = uint32_t(ptx::opaque_int(int(rot[b])));
  // ---- prologue: fill kStages - 1 slots, dequantize the first unit -------------
  if (!Cfg::kCopyWarp && warp == 0) {
    prod.start(p, sh, slot_start, tid);
#pragma unroll
    for (int s = 0; s < Cfg::kStages - 1; ++s)
      prod.produce(p, sh, slot_start, tid, ring_s + s * Cfg::kStageBytes, bar_s + 8 * s);
  }
  // Parity of each stage's next completion: bit s of phases, or (kSyncRegs)
  // one bit for every slot, as the units are waited for in slot order: it
  // flips each time the ring wraps to slot 0 (from 1 to 0 at the first).
  uint32_t phases = kBarRegs ? 1u : 0u;
  const uint32_t full_b = kBarRegs ? uint32_t(ptx::opaque_int(int(bar_s))) : bar_s;
  const uint32_t empty_b = kBarRegs ? uint32_t(ptx::opaque_int(int(empty_s))) : empty_s;
  // Lane 0 releases the warp's slots: tested on a lane held in a register
  // (dq_lane where kLaneRegs made it one) where kBarRegs asks for it.
  const bool releaser = (kBarRegs && !kLaneRegs ? ptx::opaque_int(lane) : dq_lane) == 0;
  // (unit u of the share: the ring marks' index)
  auto wait_full = [&](int s, int u) {
    KBIT_RING_MARK(2, u);
    if constexpr (kBarRegs) {
      phases ^= s == 0 ? 1u : 0u;
      ptx::mbarrier_wait_parity(full_b + 8 * s, phases);
    } else {
      ptx::mbarrier_wait_parity(full_b + 8 * s, (phases >> s) & 1u);
      phases ^= 1u << s;
    }
    KBIT_RING_MARK(3, u);
  };
  wait_full(0, 0);
  KBIT_WGMMA_MARK(2, kbit_mark_now());

  uint32_t fa[Cfg::kNT][4][4], fb[Cfg::kNT][4][4];
  dequant_ktile<Cfg>(fa, ring, lut_bytes, lane_off, e4m4, rot, dq_warp, dq_lane);
  if constexpr (KBIT_WGMMA_PROBE & 2) memcpy(fb, fa, sizeof fa);
  // Ring slot of the unit whose MMAs are issued next; unit u + 1 sits in the
  // next slot, and the previous one (unit u - 1's) is released for a refill.
  int slot = 0;

  TilePos pos = locate<Cfg>(p, sh.u_begin / sh.k_tiles, sh.S, slot_start);
  int kt = sh.u_begin % sh.k_tiles;
  bool from_start = kt == 0;   // the tile's first unit is in this share
  uint32_t accumulate = 0;
  // C staged through the ring at the share's end: from 64 rows on. At 32 rows
  // the element pairs were 1.5-2 us faster (Llama-3-70B, tc_bench, H100),
  // from 64 rows on the staging ~1 us (docs/results.md v33).
  constexpr bool kStagedStore = KBIT_WGMMA_STAGED_STORE && Cfg::BLOCK_M >= 64 && Cfg::kMTiles % 2 == 0 &&
                                staged_tile_bytes<Cfg>() <= Cfg::kStages * Cfg::kStageBytes;
  float acc[Cfg::kNT][Cfg::kMTiles][4];
  KBIT_WGMMA_PHASES_BEGIN();   // (empty unless tc_bench -DTC_PHASES)

  // The loop counts units from the share's start (i), so that the share's
  // bounds are not held in registers through it.
  const int units = sh.u_end - sh.u_begin;
  // One unit (the share's i-th): its MMAs (fragments cur), then unit i + 1
  // made ready and dequantized into nxt while they run. True where the unit
  // ends its tile (or the share).
  auto step = [&](int i, const uint32_t (&cur)[Cfg::kNT][4][4], uint32_t (&nxt)[Cfg::kNT][4][4]) -> bool {
    wgmma_ktile<Cfg>(acc, cur, ring_s + slot * Cfg::kStageBytes, accumulate);
    KBIT_WGMMA_PHASE(0, 0u);
    accumulate = 1;
    const int prev = slot == 0 ? Cfg::kStages - 1 : slot - 1, done = slot;
    slot = next_slot(slot);
    if (i + 1 < units) {
      if constexpr (Cfg::kEarlyFull) wait_full(slot, i + 1);   // unit i + 1's copies (kEarlyFull)
      KtileWords<Cfg> words;   // (kEarlyWords: unit i + 1's words, loaded before the MMAs' wait)
      if constexpr (Cfg::kEarlyWords) load_ktile<Cfg>(words, ring + slot * Cfg::kStageBytes, dq_warp, dq_lane);
      if constexpr (Cfg::kDrain) ptx::wgmma_wait<0>();   // this warp's MMAs of unit i are done
      else ptx::wgmma_wait<1>();                         // ... of unit i - 1
      if constexpr (Cfg::kCopyWarp) {
        // This warp's reads of slot i - 1 (its MMAs', its dequantization's) are
        // done: released to the copy warp (arrive releases, its wait acquires).
        // At the share's first unit the previous slot holds no unit. Where
        // the MMAs drain, slot i is done already.
        if constexpr (Cfg::kDrain) {
          if (releaser) ptx::mbarrier_arrive(empty_b + 8 * done);
          KBIT_RING_MARK(4, i);
        } else if (i > 0 && releaser) {
          ptx::mbarrier_arrive(empty_b + 8 * prev);
          KBIT_RING_MARK(4, i - 1);
        }
      } else {
        __syncthreads();      // ... every warp's, and its reads of slot i - 1: it may be refilled
        if (warp == 0)
          prod.produce(p, sh, slot_start, tid, ring_s + prev * Cfg::kStageBytes, bar_s + 8 * prev);
      }
      KBIT_WGMMA_PHASE(1, 0u);
      if constexpr (!Cfg::kEarlyFull) wait_full(slot, i + 1);   // unit i + 1's copies
      KBIT_WGMMA_PHASE(2, 0u);
      if constexpr (!(KBIT_WGMMA_PROBE & 2)) {
        if constexpr (Cfg::kEarlyWords) dequant_ktile_words<Cfg>(nxt, words, lut_bytes, lane_off, e4m4, rot);
        else dequant_ktile<Cfg>(nxt, ring + slot * Cfg::kStageBytes, lut_bytes, lane_off, e4m4, rot, dq_warp, dq_lane);
      }
      KBIT_WGMMA_PHASE(3, nxt[Cfg::kNT - 1][3][3]);
    }
    return !(++kt < sh.k_tiles && i + 1 < units);
  };
  // The tile's epilogue after its last unit, the share's i-th. At the
  // share's last tile the ring is free once every MMA warp is done with its
  // last unit (the copies all landed), so C goes out staged through it.
  auto epilogue = [&](int i) {
    const bool owns = from_start && kt == sh.k_tiles;   // (kt counted past the tile's last unit)
    KBIT_EPI_MARK(0, kbit_mark_now());
    ptx::wgmma_wait<0>();
    if constexpr (KBIT_WGMMA_PROBE & 8)
      store_tile<Cfg>(p, pos, cb_max, warp, lane, [&](int nt, int mt, int q) { return acc[nt][mt][q]; });
    else if constexpr (KBIT_WGMMA_PROBE & 4) {
      uint32_t x = 0;   // (keeps the MMAs: their results feed a store that never happens)
#pragma unroll
      for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
        for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
          for (int q = 0; q < 4; ++q) x ^= __float_as_uint(acc[nt][mt][q]);
      if (x == 0x9e3779b9u) p.workspace[tid] = 1.f;
    } else {
      const bool staged = kStagedStore && i + 1 == units;
      finish_tile<Cfg>(p, sh, pos, owns, acc, cb_max, scratch, tid, warp, lane, MmaWarpsSync<Cfg>{},
                       staged ? ring : nullptr, staged ? ring_s : 0u);
    }
    KBIT_EPI_MARK(3, kbit_mark_now());
    KBIT_EPI_MARK(4, owns ? 0 : scratch[0] == 2 ? 2 : 1);   // whole tile; split, or split and last
    KBIT_EPI_NEXT();
    kt = 0;
    from_start = true;
    accumulate = 0;
    // (S from shared memory, not a register held through the loop for this.)
    if (i + 1 < units) pos = locate<Cfg>(p, pos.tile + 1, ptx::opaque_int(slot_start[p.E]), slot_start);
    KBIT_WGMMA_PHASE(4, 0u);
  };

  // A loop per tile part, unrolled by two so that both fragment sets stay
  // in fixed registers, and after it the part's epilogue: one copy of its
  // code, outside the loop over units (Cfg::kTileLoop; else one loop over
  // the share's units with the epilogue in its body). Its code runs rarely
  // and mostly cold (at the end of the share, after the L2 has streamed the
  // weights). A part of an odd number of units leaves the next unit's
  // fragments in fb: they move to fa (its MMAs retired in the epilogue).
  if constexpr (Cfg::kTileLoop) {
    for (int i = 0; i < units;) {
      const int n = min(sh.k_tiles - kt, units - i);   // (the part's units: to its tile's end or the share's)
      int j = 0;
      for (; j + 2 <= n; j += 2) {
        step(i++, fa, fb);
        step(i++, fb, fa);
      }
      const bool odd = j < n;
      if (odd) step(i++, fa, fb);
      epilogue(i - 1);
      if (odd && i < units) memcpy(fa, fb, sizeof fa);
    }
  } else {
    for (int i = 0; i < units;) {
      bool odd = true;
      if (!step(i++, fa, fb)) {
        odd = false;
        if (!step(i++, fb, fa)) continue;
      }
      epilogue(i - 1);
      if (odd && i < units) memcpy(fa, fb, sizeof fa);
    }
  }
  // (The last step waited already; without this ptxas cannot prove that no
  // MMA is pending at the exit and serializes every wgmma of the loop.)
  ptx::wgmma_wait<0>();
  KBIT_WGMMA_PHASES_END();
  KBIT_WGMMA_MARK(31, kbit_mark_now());
}

}  // namespace kbit
