// kbit_decode.cuh — the decode path of kbit_gemm: at most 8 activation rows per
// expert slot (M <= 8 for a dense layer, a decode batch of a mixture of experts),
// or a dense layer's 16 (M = 9..16, kActRows = 16: each dequantized fragment
// feeds two n8 MMAs).
//
// At M <= 8 every weight is used for at most 8 multiply-adds, so the kernel has
// to dequantize at the rate DRAM delivers bits: about 24 weights per SM-clock on
// an H100 (k = 4). The tiled GEMM kernel (kbit_gemm.cuh) spends ~5.8 issued
// instructions per weight on that and stalls on CTA barriers; this kernel is
// built around the instruction budget (docs/design.md, "decode path"):
//
// * Every WARP is independent: it owns a contiguous range of (tile, K-tile)
//   units (stream-K: CTAs take contiguous shares, their warps contiguous
//   shares of those; a tile = 16 * kNT weight rows of one expert slot) and
//   streams them through its own cp.async ring. There is no CTA barrier after
//   the set-up.
// * A tile split between warps of a CTA is summed in shared memory: the later
//   warps store their parts and arrive on an mbarrier; the tile's first warp
//   (whose part ends its range, so it finishes last) waits, adds them and
//   stores C. A tile that spans CTAs goes through the workspace: each CTA's
//   first warp of it stores the CTA's sum to a slot of the CTA's own and,
//   after its main loop, counts the CTA in; the last CTA adds the slots in
//   CTA order (finish_spanning).
// * One CTA of 16 warps per SM shares the lookup table, built once.
// * Table lookups address shared memory with ONE prmt: the pair index byte is
//   placed in byte 1 of the address and the lane's replica offset in byte 0
//   (table rows of 256 bytes, replica = lane: no bank conflicts). For k = 2 the
//   table holds quads (the pairs of rows g and g + 8: one address, one 64-bit
//   load into two adjacent MMA operand registers), halving the lookups.
// * Scale bytes are decoded once per warp and stage (E4M4 bits shifted into an
//   fp32 exponent/mantissa, times 2^116), not once per quad thread.
// * The activations of a dense layer travel in the ring stages (M <= 4, and
//   M = 5..8 with 32-row tiles at k != 5: cp.async beside the weights, read
//   with ldmatrix); the other slots (grouped layers, up to 8 rows,
//   L2-resident) are loaded straight into the MMA B registers one unit ahead,
//   eight 4-byte loads per K-tile (DecodeConfig).
//
// MMA roles as in kbit_gemm.cuh: weights are the A operand (16 n x 16 k),
// activations the B operand (16 k x 8 rows m).
#pragma once

namespace kbit {

// Timing probes (KBIT_DECODE_CFG=W,NT,STAGES,P; results are WRONG, for
// measurements only). P is a bit mask of what to leave out: 1 the dequant and
// MMAs, 2 the weight copies (the ring's contents are stale), 4 the activation
// loads (into registers, or the copies into the ring stages), 16 the codebook
// load and table build, 32 the split-tile completion
// (split tiles write nothing), 64 everything (the kernel returns at once: the
// launch of this configuration alone); 128 (with 64) launches it without its
// dynamic shared memory. 256 records a timeline instead of C (DecodeTimeline
// below; scripts/decode_timeline.py reads it). 1024 is not a probe but a
// switch for A/B runs (results stay right): the bulk-copy ring (DecodeRing)
// where the family has bulk copies. 2048 (with 32) shrinks the part buffers to
// one column, so that deeper rings fit for timing. 4096 leaves out only the
// completion of tiles split between CTAs (each CTA's sum goes to C). 8192
// (with 256): finer set-up stamps in the timeline (kFineSetup).
#ifndef KBIT_DECODE_PROBE
#define KBIT_DECODE_PROBE 0
#endif
// The ring copies with the bulk engine (opt-in, see DecodeRing).
constexpr bool kDecodeBulkRing = KBIT_HAS_BULK_COPY && (KBIT_DECODE_PROBE & 1024);

// kActRows_ (the activations' path):
//   0: each thread loads its B fragments one unit ahead into registers (any
//      slot of up to 8 rows);
//   R > 0: a unit's R activation rows travel in its ring stage (cp.async,
//      read with ldmatrix). There is then no register copy of prefetched
//      fragments (14 moves per unit in the k = 4 SASS), fewer registers
//      (sm_90a, k = 4: 96 vs 108 with 32-row tiles, 122 vs 128 with 64), and
//      the copies share the stage's wait: Llama-3-70B M = 1 50 vs 54 us
//      (docs/results.md v16). A stage holds R rows, so the host takes it
//      where no slot can have more (M <= R). With 64-row tiles (3 stages of
//      16 warps beside the 64 KB table) R = 4 fits one SM only because the
//      part buffers then keep 4 columns (kPartCols). R = 8 (dense M = 5..8)
//      fits with 32-row tiles and 4 stages at k = 2..4 (220 KB at k = 4), and
//      with 64-row tiles of 12 warps at k = 4 (16 at k = 2, 3); not at k = 5.
//   16: dense M = 9..16, 16-row slots (BLOCK_M = 16): each dequantized A
//      fragment feeds two n8 MMAs, the rows 8..15 read by two more ldmatrix.
//      With 12 warps, 2 stages of 64-row tiles (4.2 KB at k = 4) fit beside
//      the table and the 16-column part buffers; 3 stages of 32-row tiles.
// Lane-permuted table replicas (DecodeConfig::kLanePerm): 1 where measured
// faster; 0 nowhere (every replica in the canonical index order, v40's
// tables); 2 also at k = 4 and 5 (A/B).
#ifndef KBIT_DECODE_LANE_PERM
#define KBIT_DECODE_LANE_PERM 1
#endif

#ifndef KBIT_DECODE_OPAQUE_CONSTS
#define KBIT_DECODE_OPAQUE_CONSTS 1
#endif
#ifndef KBIT_DECODE_PART_PAD
#define KBIT_DECODE_PART_PAD 1
#endif

// Tuning: KBIT_DECODE_HELPERS=1, split-tile sums by helpers (DecodeConfig::kSumByHelpers) everywhere.
#ifndef KBIT_DECODE_HELPERS
#define KBIT_DECODE_HELPERS 0
#endif
// kHelpers_: 1 or 0 sets kSumByHelpers (the host's choice by shape: launch.cuh,
// decode_helpers), -1 leaves it to the configuration (below).
template <int kBits_, typename T_, int kWarps_, int kNT_, int kStages_, int kActRows_ = 0, int kHelpers_ = -1>
struct DecodeConfig {
  static constexpr int kBits = kBits_;
  using T = T_;
  static constexpr int kWarps = kWarps_;
  static constexpr int kNT = kNT_;           // 16-row weight tiles per warp tile
  static constexpr int kStages = kStages_;   // per-warp cp.async ring depth
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int kActRows = kActRows_;   // activation rows per stage (0: in registers)
  static constexpr bool kSmemAct = kActRows > 0;
  // Configurations whose stages carry the activations serve dense layers only
  // (the host takes them at E = 1 and M <= kActRows, with a work split whose
  // products fit 31 bits: decode_dense_narrow): their set-up then has no
  // expert slots, no device-side split and no 64-bit share arithmetic
  // (~270 set-up instructions per warp before the first copy were mostly
  // those: ncu source view, docs/results.md v17).
  static constexpr bool kDense = kSmemAct;
  // Activation rows of a slot: one MMA n8, or two (dense M = 9..16, where the
  // stages carry 16 rows): each dequantized fragment then feeds two MMAs.
  static constexpr int BLOCK_M = kActRows > 8 ? 16 : 8;
  static constexpr int kMH = BLOCK_M / 8;    // n8 halves of the slot
  static constexpr int kAccRegs = 4 * kMH;   // accumulators per 16-row tile and thread
  static constexpr int BLOCK_N = 16 * kNT;   // weight rows of a (warp) tile

  // Lookup table: one row of kEntryBytes per index value, replicated per lane.
  //   k = 3, 4: pair index (2k bits), 32 replicas of 4 bytes (128 of 256 bytes used).
  //             k = 3 leaves two stale bits above each index byte's 6. Its
  //             table then repeats its 64 rows four times (kRepeatRows: no
  //             mask, 2 instructions fewer per block and thread; Llama-3-70B
  //             gate/up M = 1 and 8 1-2 us faster), except with 16-row slots
  //             (M = 16 2 us slower, through ptxas's code for the loop:
  //             docs/results.md v40), which keep 64 rows and the mask, and
  //             in the sm80 family, whose A100 fits its 64-row-table
  //             configurations only without the 48 KB more. (With
  //             kLanePerm the stale field is field (t + 3) % 4 of lane
  //             quarter t's index, and its replicas repeat accordingly.)
  //   k = 2:    quad index (8 bits: the pair index of row g in bits 0..3, of
  //             row g + 8 in bits 4..7), 32 replicas of 8 bytes (the two
  //             values side by side). One 64-bit load fills the MMA operand
  //             registers a0, a1 (or a2, a3), which are an aligned register
  //             pair. (Until v40 a quad held two pairs of one row, whose
  //             registers a0, a2 are not adjacent: two 32-bit loads, at
  //             addr and addr + 128; one 64-bit load there had cost ~70 moves
  //             per unit, v10.)
  //   k = 5:    pair index (10 bits), 16 replicas of 4 bytes (lanes l, l + 16 share)
  static constexpr bool kQuad = kBits == 2;
  static constexpr bool kRepeatRows = kBits == 3 && kMH == 1 && KBIT_SMEM_PER_SM_KB >= 228;
  // Lane-permuted index bits (KBIT_DECODE_LANE_PERM): the index word of lane
  // quarter t = lane % 4 keeps plane 0's pair bits where they lie (8i + 2t)
  // and puts plane b at 8i + 2((b + t) % 4), so plane 0 needs no rotation: one
  // SHF fewer per row and block (per pair of rows at k = 2). The replicas of
  // lane quarter t then hold row e's value at the canonical index
  // rotr8(e, 2t) (index_word, build_decode_lut), and the field masks become
  // three per-lane registers instead of immediates. Every index byte's bits
  // are in use, so k = 3 needs the 256-row table (kRepeatRows).
  // Where, by measurement (H100, docs/results.md v41; tc_bench and harness
  // A/B): k = 3 with activation rows in the stages (Llama-3-70B gate/up M = 1
  // 40.0-40.4 against 40.9-41.1 us, M = 4 and down M = 1 ~1 us faster) but not
  // on 64-row tiles with 8 rows (ptxas's loop: 127 -> 159 registers, M = 8 4 us
  // slower), k = 2 with 16-row slots (M = 16 51.6-51.8 against 52.5-53.1),
  // and k = 4 with 16-row slots on 64-row tiles (Llama-3-70B M = 16 0.3-1 us
  // faster, gate/up and down). Elsewhere it was level or mixed: k = 4 gained
  // 0.3-0.4 us on Llama-3-8B M = 1 and 4 and lost up to 0.4 on the Qwen3
  // layers at M = 4 with the same configuration (the table build computes 4
  // values per row instead of 1), k = 5 within +-0.4, k = 2 with one row 0.5
  // slower.
  // KBIT_DECODE_LANE_PERM=2 (A/B): every configuration that can, but the
  // three slower ones.
  static constexpr bool kLanePermSlower =
      (kQuad && kActRows == 1) || (kBits == 3 && kNT == 4 && kActRows == 8) || (kBits == 5 && kMH == 2);
  static constexpr bool kLanePermFaster =
      !kLanePermSlower && ((kBits == 3 && kRepeatRows && kSmemAct) || (kQuad && kMH == 2) ||
                           (kBits == 4 && kMH == 2 && kNT == 4));
  static constexpr bool kLanePerm = KBIT_DECODE_LANE_PERM == 2 ? (kBits != 3 || kRepeatRows) && !kLanePermSlower
                                                                : KBIT_DECODE_LANE_PERM == 1 && kLanePermFaster;
  // The lane's index-word constants (IndexConsts) through opaque moves, so
  // that ptxas keeps them in registers instead of recomputing them in the
  // main loop (sm_90a SASS: ~17 instructions fewer per K-tile with 16-row
  // slots at k = 2 and 4). By measurement (H100, tc_bench, v42, against the
  // same tree without): 16-row slots at k = 2 1.1 us faster (Llama-3-70B
  // M = 16), at k = 4 level (70B gate/up -0.1..-0.4 us, down +0..+0.5, 8B
  // -0.1..-0.4); at k = 3 and 5 with 16-row slots 1.6-1.8 us slower, so not
  // there; with up to 8 rows level or mixed. (With k = 3 and 8 activation rows ptxas
  // then kept the table's base in a per-thread register: one add more per
  // lookup.) KBIT_DECODE_OPAQUE_CONSTS=0 turns it off (A/B).
  static constexpr bool kOpaqueConsts = KBIT_DECODE_OPAQUE_CONSTS && kMH == 2 && (kBits == 2 || kBits == 4);
  static constexpr int kEntries = kQuad || kRepeatRows ? 256 : 1 << (2 * kBits);
  static constexpr int kEntryBytes = kBits == 5 ? 64 : 256;
  static constexpr int kEntryUsed = kQuad ? 256 : kBits == 5 ? 64 : 128;
  static constexpr int kLutBytes = kEntries * kEntryBytes;

  // One ring stage: plane words and scale bytes of the BLOCK_N rows (both
  // contiguous in memory).
  static constexpr int kWBytes = BLOCK_N * 2 * kBits * 4;
  static constexpr int kSBytes = BLOCK_N * 2;
  // With kSmemAct, the slot's activation rows of the K-tile (128 bytes each,
  // 16-byte chunk c of row r at chunk c ^ (r % 8): ldmatrix's eight row reads
  // hit eight different bank groups).
  static constexpr int kABytes = kActRows * kTileK * 2;
  static constexpr int kAOff = kWBytes + kSBytes;
  // Stages start on 128-byte boundaries: a warp's 512-byte copy into a stage
  // at 64 mod 128 took 8 shared-memory wavefronts instead of 4 (ncu, 32-row
  // tiles with activation rows: 1600-byte stages).
  static constexpr int kStageBytes = cdiv(kWBytes + kSBytes + kABytes, 128) * 128;
  static constexpr int kScaleBytes = BLOCK_N * 2 * 4;   // decoded scales of one stage
  static constexpr int kWarpBytes = kStages * kStageBytes + kScaleBytes;

  // Tiles split between warps of a CTA: each warp has one fp32 part buffer
  // (BLOCK_N x BLOCK_M) for the tile it shares with earlier warps, and each
  // tile's first warp an mbarrier counting the others' lanes in (DecodeSplit::bar).
  // With the bulk-copy ring, each warp's ring stages have one mbarrier each.
  // A part buffer keeps the slot's rows only: kActRows where the stage carries
  // them (the host gives such a configuration no larger slot), else BLOCK_M.
  // (At kActRows = 4 the 64-row tiles fit one SM only with the smaller buffers.)
  // (Probe 2048, with 32: one column, a smaller footprint for timing deeper rings.)
  static constexpr int kPartCols = (KBIT_DECODE_PROBE & 2080) == 2080 ? 1 : kSmemAct ? kActRows : BLOCK_M;
  static constexpr int kSumFloats = BLOCK_N * kPartCols;
  // Who adds those parts: the warps whose units end in the tile, each a share
  // (sum_split_tile), or the tile's first warp alone. By measurement (v39,
  // harness A/B against fc479e5, H100): the helpers for k = 2 and 3 with
  // 64-row tiles of 16 warps and 4 activation rows (Llama-3-70B gate/up M = 1:
  // k = 3 42.2-42.6 us against 46.1-46.5, k = 2 level or 1 us faster) and for
  // k = 5 with 12 warps (M = 1: 58.3 against 60.3-60.6; M = 16: 0.5-0.8 us
  // faster). In the other configurations they were slower (tc_bench: up to
  // 2-3 us at Llama-3-8B M = 16) or level. Most of each difference came from
  // ptxas's code for the main loop, not from the sums (docs/results.md v39).
  // KBIT_DECODE_HELPERS=1 gives every configuration with the activations in
  // the stages the helpers (tuning). Since v46 the host also picks them for
  // the 16-row slots of k = 4 in 64-row tiles where each tile spans all 12
  // warps of its CTA (kHelpers_ = 1: launch.cuh, decode_helpers).
  static constexpr bool kSumByHelpers =
      kSmemAct && (kHelpers_ >= 0 ? kHelpers_ == 1
                                  : KBIT_DECODE_HELPERS == 1 ||
                                        (kBits <= 3 && kWarps == 16 && kNT == 4 && kActRows == 4) ||
                                        (kBits == 5 && kWarps == 12));
  // The part buffers the first warp adds alone (!kSumByHelpers) of the
  // 32-row tiles with 16-row slots are column-major with kPartPad words after
  // each column (part_word): no bank conflicts. By measurement (H100,
  // tc_bench, v43, two rounds): Qwen3-Coder-Next M = 16 0.3-1.1 us faster,
  // Llama-3-8B down 0.4; on the 64-row tiles of the 70B layers 0.5-1.1 us
  // slower at M = 16 and 0.3-0.5 at M = 8, which keep the plain order.
  // kPartFloats: one buffer in shared memory. KBIT_DECODE_PART_PAD=0:
  // row-major, unpadded everywhere (A/B).
  static constexpr int kPartPad = KBIT_DECODE_PART_PAD && !kSumByHelpers && kMH == 2 && kNT == 2 ? 4 : 0;
  static constexpr int kPartFloats = (BLOCK_N + kPartPad) * kPartCols;
  // Tiles split between CTAs: two slots per CTA of kSumFloats 32-bit words
  // each in the workspace (finish_spanning).
  __host__ __device__ static constexpr size_t workspace_floats(int ctas) {
    return size_t(ctas) * 2 * kSumFloats;
  }
  static constexpr int kSumBytes =
      kWarps * kPartFloats * 4 + (kWarps + 1) * 8 + (kDecodeBulkRing ? kWarps * kStages * 8 : 0);

  // Dynamic shared memory: table | part buffers, mbarriers (split tiles, then
  // ring stages) | per-warp rings | expert slot table. The slot table, whose
  // size depends on the expert count, goes last so every other offset is a
  // constant (the ring addresses are then cheap to recompute, not registers).
  static constexpr int kSumOffset = kLutBytes;
  static constexpr int kRingOffset = kSumOffset + cdiv(kSumBytes, 128) * 128;
  static constexpr int kSlotOffset = kRingOffset + kWarps * kWarpBytes;
  __host__ __device__ static constexpr size_t slot_bytes(int experts) {
    return size_t(slot_table_bytes(experts));
  }
  __host__ __device__ static constexpr size_t smem_bytes(int experts) {
    return size_t(kSlotOffset) + slot_bytes(experts);
  }

  static_assert(kBits >= 2 && kBits <= 5, "k must be 2..5");
  static_assert(sizeof(T) == 2, "16-bit activations");
  static_assert(kWBytes % 16 == 0 && kSBytes % 16 == 0 && kWarpBytes % 16 == 0 && BLOCK_N % 16 == 0,
                "stage sections must keep 16-byte alignment");
  static_assert(kStages >= 2, "the ring needs at least two stages");
  static_assert(kActRows >= 0 && (kActRows <= 8 || kActRows == 16), "activation rows per stage: 0..8, 16");
  static_assert(!(kDecodeBulkRing && kSmemAct), "the bulk-copy ring does not carry activations");
  // Dense layers must fit one SM (227 KB); grouped layers with many experts may
  // not (64-row tiles), and the host then uses the tiled kernel (kbit_decode_plan_cfg).
  static_assert(smem_bytes(1) <= 227 * 1024, "must fit one SM (227 KB)");
  static_assert(kNT != 2 || kDense || smem_bytes(4096) <= 227 * 1024,
                "32-row tiles must fit at the largest expert count (grouped configurations)");
};

// ---------------------------------------------------------------------------
// Stage: the lookup table (whole CTA, once).
// ---------------------------------------------------------------------------
// Value of a pair index (bit 2b = bit b of the first weight's codebook index,
// bit 2b + 1 = bit b of the second; the order pair_word produces).
template <class Cfg>
__device__ __forceinline__ uint32_t pair_value(int idx, const float* cb_s, float inv_max) {
  constexpr int kPairBits = Cfg::kBits;
  int i0 = 0, i1 = 0;
#pragma unroll
  for (int b = 0; b < kPairBits; ++b) {
    i0 |= ((idx >> (2 * b)) & 1) << b;
    i1 |= ((idx >> (2 * b + 1)) & 1) << b;
  }
  return Elem<typename Cfg::T>::pack(cb_s[i0] * inv_max, cb_s[i1] * inv_max);
}

// The canonical pair (or quad) index of table row e in the replicas of lane
// quarter t: with kLanePerm, field b (bits 2b, 2b + 1) of the canonical index
// lies at field (b + t) % 4 of e's low byte (index_word), i.e. the canonical
// index is e's low byte rotated right by 2t; k = 5's bits 8, 9 stay.
template <class Cfg>
__device__ __forceinline__ int canonical_index(int e, int t) {
  if constexpr (!Cfg::kLanePerm) return e;
  const int lo = e & 255;
  return (((lo >> (2 * t)) | (lo << (8 - 2 * t))) & 255) | (e & ~255);
}

// One 16-byte chunk of table row e: four 4-byte replicas (lanes 4c .. 4c + 3
// of chunk c, lane quarters 0..3), or at k = 2 two 8-byte ones (lanes 2c,
// 2c + 1: quarters 0, 1 in even chunks, 2, 3 in odd ones; `odd`). Without
// kLanePerm every replica holds the same value.
template <class Cfg>
__device__ __forceinline__ uint4 table_chunk(int e, bool odd, const float* cb_s, float inv_max) {
  if constexpr (Cfg::kQuad) {
    // Quads: pair (index & 15) of row g in the replica's first word, pair
    // (index >> 4) of row g + 8 in its second.
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < (Cfg::kLanePerm ? 2 : 1); ++j) {
      const int c = canonical_index<Cfg>(e, (odd ? 2 : 0) + j);
      w[2 * j] = pair_value<Cfg>(c & 15, cb_s, inv_max);
      w[2 * j + 1] = pair_value<Cfg>(c >> 4, cb_s, inv_max);
    }
    return Cfg::kLanePerm ? make_uint4(w[0], w[1], w[2], w[3]) : make_uint4(w[0], w[1], w[0], w[1]);
  } else if constexpr (Cfg::kLanePerm) {
    return make_uint4(pair_value<Cfg>(canonical_index<Cfg>(e, 0), cb_s, inv_max),
                      pair_value<Cfg>(canonical_index<Cfg>(e, 1), cb_s, inv_max),
                      pair_value<Cfg>(canonical_index<Cfg>(e, 2), cb_s, inv_max),
                      pair_value<Cfg>(canonical_index<Cfg>(e, 3), cb_s, inv_max));
  } else {
    // (kRepeatRows: rows repeat every 64, pair_value reads the index's low 6 bits.)
    const uint32_t v = pair_value<Cfg>(e, cb_s, inv_max);
    return make_uint4(v, v, v, v);
  }
}

// Thread i writes the 16-byte chunks [i * kPer, (i + 1) * kPer) of the table
// (row-major: entry, chunk), computing each chunk's content once: a thread's
// chunks are whole rows or part of one (static_assert), and the chunks of a
// row are all alike (at k = 2 with kLanePerm: alike in even and in odd
// chunks). The table
// is on the critical path of every call (the main loop starts when it is
// complete), so the stores avoid bank conflicts: chunk f of the table lies in
// bank group f % 8 for every k (rows of 256 bytes, or of 64 bytes holding 4
// chunks at k = 5), and store s of thread i writes its chunk (s + i kPer / 8)
// % kPer, so the 8 threads of a quarter warp hit 8 different bank groups. (In
// order they hit one or two: at k = 4 ncu counted 16 wavefronts per 16-byte
// store instead of 4, 27 % of the kernel's shared-memory wavefronts at Qwen3
// q, M = 1, docs/results.md v18; the same count gives 32 at k = 2 and 5.)
template <class Cfg>
__device__ __forceinline__ void build_decode_lut(uint8_t* lut, const float* cb_s, float inv_max, int tid) {
  constexpr int kChunks = Cfg::kEntryUsed / 16;   // 16-byte stores per table row
  constexpr int kTotal = Cfg::kEntries * kChunks;
  // The builders: the largest power of two of threads (every thread at 8 or
  // 16 warps; the first 256 at 12). Each builder writes kPer chunks per
  // round, as builder vt = tid + round * kBuilders of a wider CTA would.
  constexpr int kBuilders = 1 << (31 - __builtin_clz(Cfg::kThreads));
  constexpr int kPer = kTotal / kBuilders < 8 ? kTotal / kBuilders : 8;
  constexpr int kRounds = kTotal / (kPer * kBuilders);
  static_assert(kTotal % (kPer * kBuilders) == 0, "every builder writes the same number of chunks");
  static_assert((kPer & (kPer - 1)) == 0 && kPer <= 8, "a power of two, at most one chunk per bank group");
  static_assert(kPer % kChunks == 0 || kChunks % kPer == 0, "a thread's chunks: whole rows or part of one");
  constexpr int kRows = kPer > kChunks ? kPer / kChunks : 1;   // table rows of a thread's round
  constexpr int kForms = Cfg::kQuad && Cfg::kLanePerm ? 2 : 1;   // distinct chunks per row
  static_assert(kRows * kForms <= 2 && (kForms == 1 || kChunks % 2 == 0), "at most two contents per thread and round");
  if (kBuilders < Cfg::kThreads && tid >= kBuilders) return;
#pragma unroll
  for (int round = 0; round < kRounds; ++round) {
    const int vt = tid + round * kBuilders;
    uint4 x[kRows * kForms];   // the contents: row j, or (kForms = 2) even / odd chunks
#pragma unroll
    for (int j = 0; j < kRows * kForms; ++j)
      x[j] = table_chunk<Cfg>(vt * kPer / kChunks + j / kForms, j % kForms, cb_s, inv_max);
    const int rot = (vt * kPer) >> 3;
#pragma unroll
    for (int s = 0; s < kPer; ++s) {
      const int q = (s + rot) & (kPer - 1);   // the thread's chunk written by store s
      const int f = vt * kPer + q, e = f / kChunks, c = f - e * kChunks;
      // (Selected, not indexed: q and c are not compile-time constants.)
      const uint4 v = kRows * kForms == 1 ? x[0] : (kRows == 2 ? q >= kChunks : c & 1) ? x[kRows * kForms - 1] : x[0];
      *reinterpret_cast<uint4*>(lut + e * Cfg::kEntryBytes + c * 16) = v;
    }
  }
}

// ---------------------------------------------------------------------------
// Stage: dequantize the A fragments of one 32-block of two rows (g and g + 8).
// Thread t owns the pairs 2t + 8i (i = 0..3) of the block: frag[h] are the
// registers of the k16 step h (pairs 2h and 2h + 1).
// ---------------------------------------------------------------------------
// Table addresses from one prmt each: lut_sel (kbit_gemm.cuh).

__device__ __forceinline__ uint32_t lookup_byte(uint32_t lut, uint32_t index_word, uint32_t lane_word, uint32_t sel) {
  return ptx::ld_shared_const_u32(lut + ptx::prmt(index_word, lane_word, sel));
}
// k = 2's row-pair table: one 64-bit entry holds the pair of row g (x) and of
// row g + 8 (y).
__device__ __forceinline__ uint2 lookup_row_pair(uint32_t lut, uint32_t index_word, uint32_t lane_word, uint32_t sel) {
  return ptx::ld_shared_const_v2_u32(lut + ptx::prmt(index_word, lane_word, sel));
}

// The lane's index-word constants: rot[b] moves plane b's pair bits from
// 8i + 2t to their field, mask[b] (b = 1..3, kLanePerm) selects that field.
// Without kLanePerm plane b goes to 8i + 2b (pair_word's order, immediate
// masks); plane 4 (k = 5) to 8i of its own word either way.
template <class Cfg>
struct IndexConsts {
  uint32_t rot[5];
  uint32_t mask[4];
  __device__ __forceinline__ explicit IndexConsts(int t) {
#pragma unroll
    for (int b = 0; b < 5; ++b) {
      const int field = Cfg::kLanePerm && b < 4 ? 2 * ((b + t) & 3) : 2 * (b & 3);
      rot[b] = uint32_t(2 * t - field) & 31u;
      if (b < 4) mask[b] = 0x03030303u << field;
      if constexpr (Cfg::kOpaqueConsts) {
        rot[b] = uint32_t(ptx::opaque_int(int(rot[b])));
        if (b < 4) mask[b] = uint32_t(ptx::opaque_int(int(mask[b])));
      }
    }
  }
};

// Index bits 0..7 of the four pairs (k = 2: four planes of two rows) in bytes
// 0..3: fields merged by bit-select (lop3 0xE4: (a & c) | (b & ~c)). With
// kLanePerm plane 0 stays in place; for k = 3 the fourth field keeps stale
// bits, which select one of the table's repeated rows.
template <class Cfg, int kPlanes>
__device__ __forceinline__ uint32_t index_word(const uint32_t (&p)[kPlanes], const IndexConsts<Cfg>& ic) {
  if constexpr (!Cfg::kLanePerm) {
    return pair_word<kPlanes, 0>(p, ic.rot).lo;
  } else {
    uint32_t w = p[0];
#pragma unroll
    for (int b = 1; b < (kPlanes < 4 ? kPlanes : 4); ++b)
      w = ptx::lop3<0xE4>(ptx::rotr(p[b], ic.rot[b]), w, ic.mask[b]);
    return w;
  }
}
// k = 5: the 10-bit indices of the four pairs of rows g (a) and g + 8 (b),
// bits 0..7 in byte i of lo (planes 0..3, index_word) and bits 8, 9 in byte i
// of hi (plane 4).
struct Index10 {
  uint32_t lo, hi;
};
template <class Cfg>
__device__ __forceinline__ void index10_words(const uint32_t (&pa)[5], const uint32_t (&pb)[5],
                                              const IndexConsts<Cfg>& ic, Index10& a, Index10& b) {
  const uint32_t pa4[4] = {pa[0], pa[1], pa[2], pa[3]}, pb4[4] = {pb[0], pb[1], pb[2], pb[3]};
  a.lo = index_word<Cfg, 4>(pa4, ic);
  b.lo = index_word<Cfg, 4>(pb4, ic);
  a.hi = ptx::rotr(pa[4], ic.rot[4]) & 0x03030303u;
  b.hi = ptx::rotr(pb[4], ic.rot[4]) & 0x03030303u;
}
// Pair i's index: lo's byte i and hi's byte i; the upper bytes copy the sign
// of a hi byte (<= 3), i.e. zero. Its table word: lookup_index10.
__device__ __forceinline__ uint32_t index10_of(Index10 x, int i) {
  return ptx::prmt(x.lo, x.hi, uint32_t(i) | uint32_t(4 + i) << 4 | uint32_t(12 + i) << 8 | uint32_t(12 + i) << 12);
}
__device__ __forceinline__ uint32_t lookup_index10(uint32_t lut, uint32_t index, uint32_t lane_word) {
  return ptx::ld_shared_const_u32(lut + (index << 6) + lane_word);
}
// k = 2: the two planes of rows g (pa) and g + 8 (pb) merged as k = 4's four,
// the index word of the row-pair table (lookup_row_pair).
template <class Cfg>
__device__ __forceinline__ uint32_t row_pair_index_word(const uint32_t (&pa)[2], const uint32_t (&pb)[2],
                                                        const IndexConsts<Cfg>& ic) {
  const uint32_t planes[4] = {pa[0], pa[1], pb[0], pb[1]};
  return index_word<Cfg, 4>(planes, ic);
}

template <class Cfg>
__device__ __forceinline__ void dequant_block(uint32_t (&frag)[2][4], const uint32_t (&pa)[Cfg::kBits],
                                              const uint32_t (&pb)[Cfg::kBits], const IndexConsts<Cfg>& ic,
                                              uint32_t lut, uint32_t lane_word) {
  if constexpr (Cfg::kBits == 2) {
    // The four planes of rows g and g + 8 merged as k = 4's two: byte i of q
    // holds pair i of row g in fields 0, 1 and of row g + 8 in fields 2, 3
    // (fields 2b, 2b + 1 with kLanePerm lie where index_word puts them).
    const uint32_t q = row_pair_index_word<Cfg>(pa, pb, ic);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint2 v = lookup_row_pair(lut, q, lane_word, lut_sel(i));
      frag[i >> 1][(i & 1) * 2] = v.x;
      frag[i >> 1][(i & 1) * 2 + 1] = v.y;
    }
    return;
  }
  if constexpr (Cfg::kBits == 5) {
    Index10 xa, xb;
    index10_words<Cfg>(pa, pb, ic, xa, xb);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t ia = index10_of(xa, i), ib = index10_of(xb, i);
      frag[i >> 1][(i & 1) * 2] = lookup_index10(lut, ia, lane_word);
      frag[i >> 1][(i & 1) * 2 + 1] = lookup_index10(lut, ib, lane_word);
    }
  } else {
    // k = 3 leaves stale bits in each byte's fourth field: they select a copy
    // of the table's rows (kRepeatRows), or (bits 6, 7) are masked off.
    constexpr uint32_t kClean = Cfg::kBits == 4 || Cfg::kRepeatRows ? 0xFFFFFFFFu : 0x3F3F3F3Fu;
    const uint32_t xa = index_word<Cfg, Cfg::kBits>(pa, ic), xb = index_word<Cfg, Cfg::kBits>(pb, ic);
    const uint32_t wa = kClean == 0xFFFFFFFFu ? xa : xa & kClean;
    const uint32_t wb = kClean == 0xFFFFFFFFu ? xb : xb & kClean;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      frag[i >> 1][(i & 1) * 2] = lookup_byte(lut, wa, lane_word, lut_sel(i));
      frag[i >> 1][(i & 1) * 2 + 1] = lookup_byte(lut, wb, lane_word, lut_sel(i));
    }
  }
}

// ---------------------------------------------------------------------------
// Stage: a warp's compute of one ring stage (the decode kernel and the
// row-owning kernel, kbit_rows.cuh).
// ---------------------------------------------------------------------------
// The stage's scale bytes (two per row; the warp's BLOCK_N rows from row
// row0 of `bytes`), decoded once per stage: row r's two blocks -> scales[2r],
// [2r + 1].
template <class Cfg>
__device__ __forceinline__ void decode_stage_scales(float* scales, const uint8_t* bytes, int row0, int lane) {
#pragma unroll
  for (int r = lane; r < Cfg::BLOCK_N; r += kWarpSize) {
    const uint32_t b = *reinterpret_cast<const uint16_t*>(bytes + (row0 + r) * 2);
    *reinterpret_cast<float2*>(scales + 2 * r) =
        make_float2(e4m4_from_bits((b << 19) & 0x07F80000u), e4m4_from_bits((b << 11) & 0x07F80000u));
  }
  __syncwarp();   // scales written
}

// The warp's kNT 16-row tiles of one K-tile: plane words at w_s (row r's two
// blocks at 2r, 2r + 1, k words each), the decoded scales, and the B
// fragments of the K-tile per 8 activation rows (b[h]: slot rows 8h .. 8h + 7,
// h < kMH). Each dequantized fragment feeds one n8 MMA pair per 8 activation
// rows; the block's partial sums are scaled into acc in fp32. Only the first
// kLive tiles (the row-owning kernel's tiles past a CTA's rows are skipped).
template <class Cfg, int kLive = Cfg::kNT>
__device__ __forceinline__ void stage_mma(float (&acc)[Cfg::kNT][Cfg::kAccRegs], const uint32_t* w_s,
                                          const float* scales, const uint32_t (&b)[Cfg::kMH][2][4],
                                          const IndexConsts<Cfg>& ic, uint32_t lut_s, uint32_t lane_word, int g) {
  using T = typename Cfg::T;
#pragma unroll
  for (int nt = 0; nt < kLive; ++nt) {
    const int r = nt * 16 + g;
    const float2 sa = *reinterpret_cast<const float2*>(scales + 2 * r);
    const float2 sb = *reinterpret_cast<const float2*>(scales + 2 * (r + 8));
#pragma unroll
    for (int blk = 0; blk < 2; ++blk) {
      uint32_t pa[Cfg::kBits], pb[Cfg::kBits];
      load_block_planes<Cfg::kBits>(pa, pb, w_s, r, blk);
      uint32_t frag[2][4];
      dequant_block<Cfg>(frag, pa, pb, ic, lut_s, lane_word);
      const float zero[4] = {0.f, 0.f, 0.f, 0.f};
      const float s_a = blk ? sa.y : sa.x, s_b = blk ? sb.y : sb.x;
#pragma unroll
      for (int h = 0; h < Cfg::kMH; ++h) {   // the same fragments, slot rows 8h .. 8h + 7
        float part[4];
        ptx::mma_m16n8k16<T>(part, frag[0], b[h][blk][0], b[h][blk][1], zero);
        ptx::mma_m16n8k16<T>(part, frag[1], b[h][blk][2], b[h][blk][3], part);
        // (One activation row: columns 2t + 1 are never stored.)
        acc[nt][4 * h] = fmaf(s_a, part[0], acc[nt][4 * h]);
        if (Cfg::kActRows != 1) acc[nt][4 * h + 1] = fmaf(s_a, part[1], acc[nt][4 * h + 1]);
        acc[nt][4 * h + 2] = fmaf(s_b, part[2], acc[nt][4 * h + 2]);
        if (Cfg::kActRows != 1) acc[nt][4 * h + 3] = fmaf(s_b, part[3], acc[nt][4 * h + 3]);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Stage: the per-warp producer. The cursor walks the warp's units; the ring
// (below) moves a unit's plane words and scale bytes into a stage.
// ---------------------------------------------------------------------------
template <class Cfg>
struct WarpCursor : WeightCursor<Cfg> {   // plane words and scale bytes of the tile's rows at K-tile kt
  int w_limit;            // bytes of the stage's plane words that exist in memory
  // kSmemAct: this lane's activation chunks of the unit, i = 0 .. kAChunks - 1:
  // row r = (lane / 8) + 4 i of the slot, 16-byte chunk c = lane % 8 of the
  // K-tile; a_src points at chunk 0's source (chunk i's lies 4 i rows
  // further), a_ok bit i: r < the slot's rows (rows past the slot are not
  // copied: their MMA columns are not stored; the host keeps the slot's rows
  // <= kActRows). a_cut (16 rows): the K-tile whose chunk lies past K
  // (chunks 4..7 of the last K-tile when K % 64 == 32), else -1.
  static constexpr int kAChunks = cdiv(Cfg::kActRows * 8, kWarpSize);
  const char* a_src;
  uint32_t a_ok;
  int a_cut;

  __device__ __forceinline__ void start(const KbitParams& p, const TilePos& pos, int kt0, int lane) {
    w_limit = this->seek(p, pos, kt0) * 8 * Cfg::kBits;   // rows: a multiple of 8
    if constexpr (Cfg::kSmemAct) {
      const int r = lane >> 3, c = lane & 7;
      a_ok = 0;
#pragma unroll
      for (int i = 0; i < kAChunks; ++i) a_ok |= uint32_t(r + 4 * i < min(pos.rows, Cfg::kActRows)) << i;
      a_src = static_cast<const char*>(p.a) +
              (size_t(pos.row0 + ((a_ok & 1u) ? r : 0)) * p.K + size_t(kt0) * kTileK + c * 8) * 2;
      if constexpr (Cfg::kActRows == 16) a_cut = c >= 4 && p.K % kTileK != 0 ? p.layout.k_tiles - 1 : -1;
    }
  }
  __device__ __forceinline__ void advance(const KbitParams& p) {
    this->next_k(p);
    if constexpr (Cfg::kSmemAct) a_src += kTileK * 2;
  }
  // Issues this lane's activation copies of the unit into the stage at s
  // (columns past K, the upper half of the last K-tile when K % 64 == 32, read
  // zero: the weights there are zero-padded, but 0 x garbage could be NaN).
  // In the stage, chunk i goes to r * 128 + ((c ^ (r % 8)) << 4) (kABytes).
  // With 16 rows (four chunks per lane) that is chunk 0's offset, ^ 64 for
  // odd i (r % 8 differs from chunk 0's by 4), plus 512 i, and the source
  // moves only with i (a chunk past K reads nothing, from any address): ~17
  // instructions per unit fewer than computing each chunk's offsets (sm_90a),
  // Llama-3-70B M = 16 1.1-2.5 us faster, every k (H100, tc_bench, v42). With up to 8
  // rows the per-chunk form stays: there the other one moved ptxas's loop
  // (70B M = 4 and 8 at k = 4 0.3-0.4 us slower).
  __device__ __forceinline__ void issue_act(const KbitParams& p, uint32_t s, int lane) const {
    if constexpr ((KBIT_DECODE_PROBE & 4) != 0) return;   // probe: the stages' activations stay stale
    if constexpr (Cfg::kActRows == 16) {
      const uint32_t bytes = this->kt != a_cut ? 16u : 0u;
      const uint32_t a0 = uint32_t((lane >> 3) * 128 + (((lane & 7) ^ (lane >> 3)) << 4));
      const uint32_t d0 = s + a0, d1 = s + (a0 ^ 64u);
#pragma unroll
      for (int i = 0; i < kAChunks; ++i)
        if (a_ok >> i & 1)
          ptx::cp_async_cg16((i & 1 ? d1 : d0) + Cfg::kAOff + i * 512, a_src + size_t(i) * 4 * p.K * 2, bytes);
    } else if constexpr (Cfg::kSmemAct) {
      const int c = lane & 7;
      const bool in_k = c < 4 || (this->kt + 1) * kTileK <= p.K;
#pragma unroll
      for (int i = 0; i < kAChunks; ++i) {
        const int r = (lane >> 3) + 4 * i;
        if (a_ok >> i & 1)
          ptx::cp_async_cg16(s + Cfg::kAOff + r * 128 + ((c ^ (r & 7)) << 4),
                             a_src + (in_k ? size_t(i) * 4 * p.K * 2 : 0), in_k ? 16u : 0u);
      }
    }
  }
  // Scale bytes of the rows that exist (a multiple of 16: rows come in 8s).
  __device__ __forceinline__ int s_limit() const { return w_limit / (4 * Cfg::kBits); }
};

// The ring of kStages stages per warp, one family's way each, one interface:
//   init(bars, lane)     before the first copy (bars: kStages mbarriers of this warp)
//   issue(p, cur, s, lane)  the cursor's unit into the stage at shared address s
//   commit()             after each issue slot (an issue may have copied nothing)
//   wait()               the oldest outstanding stage has landed for every lane
//   drain(n)             n stages were issued and never waited for: wait for them
#if KBIT_HAS_BULK_COPY && (KBIT_DECODE_PROBE & 1024)   // kDecodeBulkRing
// Bulk-copy ring (sm90 family and later; opt-in with KBIT_DECODE_CFG=...,1024):
// lane 0 issues one bulk copy per section (plane words, scale bytes) and the
// stage's mbarrier counts the bytes in; two instructions per stage instead of
// 32 lanes' cp.async. Measured on the H100 (docs/results.md v9) it was slower
// than the cp.async ring for stages of 1-1.3 KB (k = 2, k = 5, 32-row tiles:
// 2-3 us at Llama-3-70B size) and mixed at 2 KB, so cp.async stays the default.
// Rows past N_pad (last n-block only) are not copied: the stage keeps older
// bytes there, which only reach MMA rows whose outputs are not stored.
template <class Cfg>
struct DecodeRing {
  uint32_t bars;     // mbarrier of stage 0; stage i at bars + 8 i
  int slot;          // the stage wait() waits for next
  uint32_t parity;   // its phase parity
  int ld_slot;       // the stage issue() fills next

  __device__ __forceinline__ void init(uint32_t bars_, int lane) {
    bars = bars_;
    slot = ld_slot = 0;
    parity = 0;
    if (lane == 0) {
      for (int i = 0; i < Cfg::kStages; ++i) ptx::mbarrier_init(bars + 8 * i, 1);
      ptx::fence_mbarrier_init();
    }
    __syncwarp();
  }
  __device__ __forceinline__ void issue(const KbitParams&, const WarpCursor<Cfg>& cur, uint32_t s, int lane) {
    if (lane == 0) {
      const uint32_t bar = bars + 8 * ld_slot;
      const uint32_t sb = uint32_t(cur.s_limit());
      ptx::mbarrier_arrive_expect_tx(bar, uint32_t(cur.w_limit) + sb);
      ptx::cp_async_bulk_g2s(s, cur.w_src, uint32_t(cur.w_limit), bar);
      ptx::cp_async_bulk_g2s(s + Cfg::kWBytes, cur.s_src, sb, bar);
    }
  }
  __device__ __forceinline__ void commit() { ld_slot = ld_slot + 1 == Cfg::kStages ? 0 : ld_slot + 1; }
  __device__ __forceinline__ void wait() {
    if (!(KBIT_DECODE_PROBE & 2)) ptx::mbarrier_wait_parity(bars + 8 * slot, parity);
    if (++slot == Cfg::kStages) slot = 0, parity ^= 1u;
    __syncwarp();   // and every lane is done with the stage before (issue() refills it)
  }
  __device__ __forceinline__ void drain(int n) {
    for (int i = 0; i < n; ++i) wait();
  }
};
#else
// sm80 family: every lane copies 16-byte chunks with cp.async (lane l: chunks
// l, l + 32, ... of the plane words, chunk l of the scale bytes), one commit
// group per stage. Rows past N_pad are zero-filled.
template <class Cfg>
struct DecodeRing {
  static constexpr int kWChunks = cdiv(Cfg::kWBytes / 16, kWarpSize);

  __device__ __forceinline__ void init(uint32_t, int) {}
  __device__ __forceinline__ void issue(const KbitParams& p, const WarpCursor<Cfg>& cur, uint32_t s, int lane) {
    cur.issue_act(p, s, lane);
    if (cur.w_limit == Cfg::kWBytes) {   // warp-uniform: every row exists
#pragma unroll
      for (int i = 0; i < kWChunks; ++i) {
        const int off = (i * kWarpSize + lane) * 16;
        if (Cfg::kWBytes % (16 * kWarpSize) == 0 || off < Cfg::kWBytes) ptx::cp_async_cg16(s + off, cur.w_src + off, 16u);
      }
      if (lane < Cfg::kSBytes / 16) ptx::cp_async_cg16(s + Cfg::kWBytes + lane * 16, cur.s_src + lane * 16, 16u);
    } else {
#pragma unroll
      for (int i = 0; i < kWChunks; ++i) {
        const int off = (i * kWarpSize + lane) * 16;
        if (Cfg::kWBytes % (16 * kWarpSize) == 0 || off < Cfg::kWBytes) {
          const bool ok = off < cur.w_limit;
          ptx::cp_async_cg16(s + off, cur.w_src + (ok ? off : 0), ok ? 16u : 0u);
        }
      }
      const bool ok = lane * 16 < cur.s_limit();
      if (lane < Cfg::kSBytes / 16)
        ptx::cp_async_cg16(s + Cfg::kWBytes + lane * 16, cur.s_src + (ok ? lane * 16 : 0), ok ? 16u : 0u);
    }
  }
  __device__ __forceinline__ void commit() { ptx::cp_async_commit(); }
  __device__ __forceinline__ void wait() {
    ptx::cp_async_wait<Cfg::kStages - 2>();
    __syncwarp();   // this stage landed for every lane; the one before is free
  }
  __device__ __forceinline__ void drain(int) { ptx::cp_async_wait<0>(); }
};
#endif

// Accumulator (nt, q) of thread (g, t): weight row nt * 16 + g + 8 (bit 1 of q)
// of the tile (n), activation row 8 (q >> 2) + 2t + (q & 1) of the slot (m;
// q >> 2 is the slot's n8 half); f(x, n, m) for each.
template <class Cfg, class F>
__device__ __forceinline__ void for_each_acc(float (&acc)[Cfg::kNT][Cfg::kAccRegs], int g, int t, const F& f) {
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
    for (int q = 0; q < Cfg::kAccRegs; ++q) f(acc[nt][q], nt * 16 + g + (q >> 1 & 1) * 8, (q >> 2) * 8 + 2 * t + (q & 1));
}

// Word of accumulator (n, m) (for_each_acc) in a part buffer of a tile split
// between warps of a CTA, where the tile's first warp adds the later warps'
// parts (!kSumByHelpers; sum_split_tile reads its buffers in plain order).
// Plain order n * kPartCols + m puts a warp's 32 lanes (n = g + const, m =
// 2t + const) on 8 banks at 16 columns and 16 at 8: 4- and 2-way conflicts on
// every store and load of a part. Column-major with a row stride of BLOCK_N +
// 4 words puts lane (g, t) on bank (8t + g + const) % 32: one each (where
// kPartPad says).
template <class Cfg>
__device__ __forceinline__ int part_word(int n, int m) {
  if constexpr (Cfg::kPartPad == 0) return n * Cfg::kPartCols + m;
  return m * (Cfg::BLOCK_N + Cfg::kPartPad) + n;
}

// The activation B fragments of one K-tile for thread (g, t): row g of the
// slot, k = 32 blk + 8 j + 2t (two elements each), j = 0..3 (b0, b1 of the
// two k16 steps). Rows past the slot are not loaded (their MMA columns are
// discarded); columns past K (upper half tile when K % 64 == 32) are zero.
template <class Cfg>
__device__ __forceinline__ void load_act(uint32_t (&b)[2][4], const char* row_ptr, bool row_ok, bool half) {
  if (row_ok && !(KBIT_DECODE_PROBE & 4)) {
#pragma unroll
    for (int blk = 0; blk < 2; ++blk)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        b[blk][j] = (blk == 1 && half) ? 0u : __ldg(reinterpret_cast<const unsigned int*>(row_ptr + blk * 64 + j * 16));
  }
}

// ---------------------------------------------------------------------------
// The work split (the one place it is written down). A unit is one K-tile of
// one tile; units are numbered tile-major. The U units are split evenly over
// c CTAs, just enough that each warp gets min_units (a small layer stays on
// few SMs, often one tile per CTA), and each CTA's share evenly over its warps.
// Tiles split between warps of a CTA are summed in shared memory, tiles that
// span CTAs in the global workspace.
// ---------------------------------------------------------------------------
// Units per warp below which fewer CTAs take part. KBIT_DEFINES=KBIT_DECODE_MIN_UNITS=n
// overrides it for tuning; 1, 4 and 8 were no faster on the small layers (docs/results.md v15).
#ifndef KBIT_DECODE_MIN_UNITS
#define KBIT_DECODE_MIN_UNITS 2
#endif
constexpr int kDecodeMinUnits = KBIT_DECODE_MIN_UNITS;

// Parts summed per batch by a split tile's first warp where it adds them alone
// (0: by tile size, in the kernel).
#ifndef KBIT_DECODE_SUM_BATCH
#define KBIT_DECODE_SUM_BATCH 0
#endif

// The decode kernel's parameters: the GEMM's, and divisors built on the host.
struct DecodeParams : KbitParams {
  FastDiv k_tiles_div;     // division by layout.k_tiles
  // The work split where the host knows it (dense layers): split_units units
  // over split_ctas CTAs. 0: the kernel computes it (grouped layers, whose tile
  // count depends on the offsets).
  int split_units, split_ctas;
  FastDiv split_ctas_div, split_units_div;
  // Launched in clusters of two CTAs (launch.cuh, decode_pair_ctas): the tile a
  // pair of CTAs shares goes from the second to the first through
  // distributed shared memory (finish_pair), not the workspace's slots.
  int pairs;
};

// kNarrow: the host has checked that every product of a CTA or warp index
// with a unit count fits 31 bits (dense layers of the kDense configurations),
// so no share needs a 64-bit test or a slow path.
template <int kWarps, bool kNarrow = false>
struct DecodeSplit {
  int k_tiles;
  int c;          // CTAs with units
  int u_all;      // units
  int cb, ce;     // this CTA's units
  FastDiv by_c, by_units;

  // Of `parts` even shares [i * n / parts, (i + 1) * n / parts) of n units:
  // where share i begins, and which share holds unit x. Multiply-shift
  // divisions where the products fit 31 bits (always, short of 2^24 units).
  __device__ static int share_begin(int i, int n, const FastDiv& parts) {
    if constexpr (kNarrow) return int(parts.div(uint32_t(i * n)));
    const long long v = (long long)i * n;
    return v < (1ll << 31) ? int(parts.div(uint32_t(v))) : int(v / parts.d);
  }
  __device__ static int owner(int x, const FastDiv& n, int parts) {
    if constexpr (kNarrow) return int(n.div(uint32_t((x + 1) * parts - 1)));
    const long long v = (long long)(x + 1) * parts - 1;
    return v < (1ll << 31) ? int(n.div(uint32_t(v))) : int(v / n.d);
  }

  // The split of `tiles` tiles: the host's (dense layers: p.split_units > 0)
  // or computed here (grouped layers, where the tile count depends on the
  // offsets; FastDiv::of then builds the two divisors on the device).
  __device__ void init(const DecodeParams& p, int tiles, int C, int cta, int min_units) {
    if (kNarrow || (p.split_units > 0 && tiles * p.layout.k_tiles == p.split_units)) {
      k_tiles = p.layout.k_tiles;
      u_all = p.split_units;
      c = p.split_ctas;
      by_c = p.split_ctas_div;
      by_units = p.split_units_div;
      set_cta(cta);
    } else {
      init_device(p.layout.k_tiles, tiles, C, cta, min_units);
    }
  }
  // The split computed here (grouped layers: the host leaves split_units 0).
  __device__ void init_device(int k_tiles_, int tiles, int C, int cta, int min_units) {
    k_tiles = k_tiles_;
    u_all = tiles * k_tiles;
    c = decode_ctas(u_all, C, kWarps * min_units);
    by_c = FastDiv::of(uint32_t(c));
    by_units = FastDiv::of(uint32_t(max(u_all, 1)));
    set_cta(cta);
  }
  // This CTA's share [cb, ce) of the split.
  __device__ void set_cta(int cta) {
    cb = cta < c ? share_begin(cta, u_all, by_c) : 0;
    ce = cta < c ? share_begin(cta + 1, u_all, by_c) : 0;
  }
  // CTAs given units: just enough that each warp gets per_cta / kWarps units.
  __host__ __device__ static int decode_ctas(int units, int C, int per_cta) {
    const int want = (units + per_cta - 1) / per_cta;
    return want < 1 ? 1 : want < C ? want : C;
  }
  // Warp w's units: [begin(w), begin(w + 1)).
  __device__ int begin(int w) const {
    if constexpr (kNarrow) return cb + int(unsigned(w) * unsigned(ce - cb) / kWarps);
    return cb + int((unsigned long long)w * unsigned(ce - cb) / kWarps);
  }
  // The warp of this CTA holding its unit x (cb <= x < ce): the last warp
  // beginning at or before x (empty warps begin where the next one does).
  // Called by the whole warp, lane l holding lane_begin = begin(min(l, kWarps)):
  // one ballot, not kWarps - 1 begin() evaluations (~200 instructions per
  // warp for the four calls of the set-up: ncu, Qwen3 q M = 1).
  __device__ static int warp_of(int x, int lane_begin, int lane) {
    return __popc(__ballot_sync(0xffffffffu, lane >= 1 && lane < kWarps && lane_begin <= x));
  }
  // This CTA's warps holding units of `tile`: the first and the last (with
  // fewer units than warps, empty warps lie between them). Whole warp.
  __device__ void local_span(int tile, int lane_begin, int lane, int& first, int& last) const {
    const int t0 = tile * k_tiles;
    first = warp_of(max(t0, cb), lane_begin, lane);
    last = warp_of(min(t0 + k_tiles, ce) - 1, lane_begin, lane);
  }
  // The first and the last CTA holding units of `tile` (c <= u_all: no CTA
  // is empty, so the CTAs between them hold units of it too).
  __device__ int first_cta(int tile) const { return owner(tile * k_tiles, by_units, c); }
  __device__ int last_cta(int tile) const { return owner(tile * k_tiles + k_tiles - 1, by_units, c); }
  // mbarrier of a split tile whose first warp in this CTA is `first`: unique
  // per split tile, <= kWarps (a warp is the first of at most one split tile,
  // the one holding its last unit, besides warp 0's tile entering the CTA).
  __device__ int bar(int tile, int first) const { return tile * k_tiles < cb ? 0 : 1 + first; }
};

// Probe 256: the CTA's timeline, 16 64-bit words at C + 128 * blockIdx.x bytes:
// %globaltimer (ns) at its start and end, then SM clocks from its start to:
// thread 0's codebook value, its first weight word (probe 512 only: the
// barrier then waits for it) and its dense offsets arriving (grouped layers:
// thread 0 entering and leaving the split inside the slot table, and the slot
// table and split read); the codebook
// barrier; the table barrier; the first and the last warp's end of the main
// loop; the CTA's end; thread 0's set-up steps (a kernel parameter arrived, the
// split computed, prologue copies issued, activation loads issued, split-tile
// bookkeeping done). Word 15: a marker with the CTA count (bits 16..31) and the
// CTA (bits 0..15): a reader keeps the rows where they belong, not stale rows
// of an earlier call in reused memory. Five more rows per CTA
// (at C + 128 * ((1 + i) gridDim.x + blockIdx.x) bytes) hold per-warp marks:
// each warp's end, and for the last tile it finished, its accumulators
// landing, its wait for the CTA's other parts done, its sum stored or
// published (warp_marks in the kernel); and where the warp's CTA came last
// on a tile split between CTAs, when its count returned (the ring form of
// the completion: and its first batch of slots had landed).
struct DecodeTimeline {
  static constexpr int kWords = 16;
  unsigned long long g0;
  long long c0, c_cbval, c_wval, c_offval, c_cb, c_lut;
  long long c_par, c_split, c_pro, c_act, c_ends;   // thread 0's set-up steps
  __device__ void end(void* c, size_t c_bytes, const int* loop_end) const {
    const long long c_end = clock64();
    if (size_t(blockIdx.x + 1) * kWords * 8 > c_bytes) return;
    unsigned long long* w = static_cast<unsigned long long*>(c) + kWords * blockIdx.x;
    const long long v[] = {(long long)g0, (long long)ptx::globaltimer_ns(), c_cbval - c0, c_wval - c0, c_offval - c0,
                           c_cb - c0, c_lut - c0, loop_end[0], loop_end[1], c_end - c0,
                           c_par - c0, c_split - c0, c_pro - c0, c_act - c0, c_ends - c0};
    for (int i = 0; i < kWords - 1; ++i) w[i] = v[i];
    w[kWords - 1] = 0x71AE000000000000ull | uint64_t(gridDim.x) << 16 | blockIdx.x;
  }
};

// The first warp of a tile split between warps of a CTA (with kSumByHelpers:
// every warp that helps add the parts) waits for the others' parts. It may
// reach the wait while they still stream their last units, so it waits
// without taking their issue slots: try_wait suspends the warp where
// the family has it (sm_90 and later), elsewhere the warp sleeps between
// polls. (A bare test_wait loop is KBIT_DECODE_SPLIT_SPIN=1, for A/B runs.)
#ifndef KBIT_DECODE_SPLIT_SPIN
#define KBIT_DECODE_SPLIT_SPIN 0
#endif
__device__ __forceinline__ void wait_split_parts(uint32_t bar) {
  if constexpr (KBIT_DECODE_SPLIT_SPIN) {
    while (!ptx::mbarrier_test_wait_parity(bar, 0)) {
    }
  } else {
#if KBIT_HAS_MBARRIER_TRY_WAIT
    ptx::mbarrier_wait_parity(bar, 0);
#else
    while (!ptx::mbarrier_test_wait_parity(bar, 0)) ptx::nanosleep(32);
#endif
  }
}

// ---------------------------------------------------------------------------
// Stage: tiles split between CTAs.
//
// Every CTA holding units of such a tile writes its sum (its warps' parts
// already added) to a slot of its own and counts itself in on the tile's
// counter; the CTA whose count comes last adds the slots and writes C. No
// step waits on a fence: the slot words are 32-bit relaxed stores, nonzero
// (below), each CTA counts in with a relaxed atomic after its main loop, and
// the last CTA reads the slots until every word it needs is nonzero. Until v25
// each CTA added its part with fp32 atomics
// and counted in at once with an acq_rel atomic: its release waited for the
// warp's earlier memory operations, and the last CTA read the sums back only
// after its count had returned (docs/results.md v25).
// - Slot words are 32-bit: the complement of the value's bits (slot_word), so
//   that zero, the workspace's resting state, means "not yet stored". (A value
//   whose bits are all ones, a NaN, is stored as the NaN 0x7fffffff.) Until v36
//   each word was 64-bit, the value paired with a marker bit: twice the bytes
//   and the registers, and at 16 rows two passes of loads.
// - No deadlock: a CTA counts in only after its slot stores are issued, so the
//   last one waits only for stores already on their way, never for a CTA that
//   may not be resident.
// - The same bits on every run: the slots are added in CTA order.
// - Slots: two per CTA, 2 cta + role: role 1 for a tile that began in this
//   CTA (its last tile), role 0 for one that began in an earlier CTA (its
//   first). Slot word m * BLOCK_N + n holds row n, activation row m. The last
//   CTA returns the words it read and the counter to zero for the next launch
//   (the workspace is zero when allocated, and shared with the other kernels).
// ---------------------------------------------------------------------------
__device__ __forceinline__ uint32_t slot_word(float x) {
  const uint32_t b = __float_as_uint(x);
  return ~(b == 0xFFFFFFFFu ? 0x7FFFFFFFu : b);
}
__device__ __forceinline__ float slot_value(uint32_t w) { return __uint_as_float(~w); }

template <class Cfg>
__device__ __forceinline__ uint32_t* spanning_slot(float* workspace, int slot) {
  return reinterpret_cast<uint32_t*>(workspace) + size_t(slot) * Cfg::kSumFloats;
}
// The slot of the s-th CTA of a tile that began in CTA cta0: cta0's role-1
// slot, then the role-0 slots of cta0 + 1, ... (publish_part's slot indices).
template <class Cfg>
__device__ __forceinline__ uint32_t* tile_slot(float* workspace, int cta0, int s) {
  return spanning_slot<Cfg>(workspace, s == 0 ? 2 * cta0 + 1 : 2 * (cta0 + s));
}

// Probe 256: the SM clock at which a warp learned that its CTA came last on
// a tile split between CTAs (its count returned; in the ring form also its
// first batch of slots landed), by warp; -1 where it finished none. Static
// shared memory of the probe build only.
#if KBIT_DECODE_PROBE & 256
__shared__ long long decode_tl_last[16];
#define KBIT_DECODE_TL_LAST(lane)                                        \
  do {                                                                   \
    if ((lane) == 0) decode_tl_last[threadIdx.x / kWarpSize] = clock64(); \
  } while (0)
#else
#define KBIT_DECODE_TL_LAST(lane) \
  do {                            \
  } while (0)
#endif

template <class Cfg>
__device__ __forceinline__ void publish_part(const DecodeParams& p, float (&acc)[Cfg::kNT][Cfg::kAccRegs], int g, int t,
                                             int rows, int slot) {
  // (Through an opaque move: otherwise the compiler computes the element
  // addresses of this rare path before the loop and holds them throughout.)
  uint32_t* w = ptx::opaque(spanning_slot<Cfg>(p.workspace, slot));
  for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
    if (m < rows) ptx::st_relaxed_gpu_u32(w + m * Cfg::BLOCK_N + n, slot_word(x));
  });
}

// Tiles split between warps of a CTA, in the configurations with
// kSumByHelpers (DecodeConfig). Each warp of such a tile stores its part in
// shared memory and arrives on the tile's mbarrier when it finishes its units
// of the tile: the later warps in their part buffers, the first warp in its
// own ring (the tile holds its last unit, so the ring is idle). The helpers
// (the warps whose units end in the tile: the first warp, every later warp
// but the last, and the last too where its units end there) then wait for
// all parts (the caller), and each adds 32-word chunks of the tile (round
// robin) and stores them to C or to the CTA's slot. Each word adds the first
// warp's part, then the later warps' (`later`) in warp order: the order, and
// so the bits, of the first warp adding all parts alone (the other
// configurations). The first warp then waits for the other helpers at a
// named barrier: their slot stores are issued before it counts the CTA in
// (finish_spanning), and they have read its ring before that reuses it.
// Named barrier 1 + first / 2: a warp helps at most one tile (its last), and
// the first warps of two tiles with more than one helper are 2 or more apart.
template <class Cfg>
__device__ __forceinline__ void sum_split_tile(float* workspace, typename Cfg::T* c, int N, TilePos pos, int first,
                                               uint32_t later, uint32_t helpers, bool spans, int slot, uint8_t* smem,
                                               int lane, int warp, float out_scale) {
  using T = typename Cfg::T;
  static_assert(Cfg::kSumFloats * 4 <= Cfg::kStages * Cfg::kStageBytes, "a part fits the ring's stages");
  static_assert(Cfg::kSumFloats % kWarpSize == 0, "whole 32-word chunks");
  static_assert(Cfg::kPartPad == 0, "the parts in plain order (part_word): word idx is (idx / kPartCols, idx % kPartCols)");
  constexpr int kChunks = Cfg::kSumFloats / kWarpSize, kGroup = 4;   // kGroup chunks' loads in flight
  const float* own = reinterpret_cast<const float*>(smem + Cfg::kRingOffset + size_t(first) * Cfg::kWarpBytes);
  const float* parts = reinterpret_cast<const float*>(smem + Cfg::kSumOffset);
  uint32_t* w = spanning_slot<Cfg>(workspace, slot);
  const int helpers_n = __popc(helpers), rank = __popc(helpers & ((1u << warp) - 1u));
#pragma unroll 1
  for (int ch0 = rank; ch0 < kChunks; ch0 += kGroup * helpers_n) {
    float sum[kGroup];
    int idx[kGroup];   // the lane's word of each chunk (a chunk past the end reads chunk `rank`, stores nothing)
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int ch = ch0 + j * helpers_n;
      idx[j] = (ch < kChunks ? ch : rank) * kWarpSize + lane;
      sum[j] = own[idx[j]];
    }
#pragma unroll 1
    for (uint32_t m = later; m; m &= m - 1) {
      const float* theirs = parts + (__ffs(m) - 1) * Cfg::kPartFloats;
#pragma unroll
      for (int j = 0; j < kGroup; ++j) sum[j] += theirs[idx[j]];
    }
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int n = idx[j] / Cfg::kPartCols, m = idx[j] % Cfg::kPartCols;   // weight row, activation row
      if (ch0 + j * helpers_n < kChunks && m < pos.rows) {
        if (spans) ptx::st_relaxed_gpu_u32(w + m * Cfg::BLOCK_N + n, slot_word(sum[j]));
        else if (c != nullptr && pos.n0 + n < N)
          c[size_t(pos.row0 + m) * N + pos.n0 + n] = Elem<T>::from_float(sum[j] * out_scale);
      }
    }
  }
  if (helpers_n > 1) {
    if (warp == first) ptx::bar_sync(1 + first / 2, kWarpSize * helpers_n);
    else ptx::bar_arrive(1 + first / 2, kWarpSize * helpers_n);
  }
}

// The warp that published its CTA's part of the tile (its slot stores are
// issued) counts the CTA in; if it comes last of the `ctas` CTAs from cta0
// on, it adds their slots in CTA order (cta0's role-1 slot, then the role-0
// slots of cta0 + 1, ...), writes C (unless c is null: the timeline probe)
// and zeroes the words it read and the counter. In both forms below the
// first reads go out with the count, before the warp knows whether it comes
// last, and a word still zero (its store had not landed) is read again.
//
// Slots of up to kSmallSlotWords words (the slot's rows only: up to 4 rows
// of 64-row tiles, 8 of 32-row tiles) come in with 32-bit relaxed loads into
// registers: lane l adds words l, l + 32, ..., kBatch slots' loads in
// flight at once (16 words per lane), so a tile in two CTAs takes one round
// trip. (KBIT_DECODE_SMALL_SLOT_WORDS=0 sends every slot through the ring,
// for A/B runs of the two forms.)
#ifndef KBIT_DECODE_SMALL_SLOT_WORDS
#define KBIT_DECODE_SMALL_SLOT_WORDS 256
#endif
constexpr int kSmallSlotWords = KBIT_DECODE_SMALL_SLOT_WORDS;
static_assert(kSmallSlotWords >= 0 && kSmallSlotWords % kWarpSize == 0, "whole slot words per lane");
template <class Cfg>
__device__ __forceinline__ void finish_spanning_tile_small(float* workspace, int* counter, typename Cfg::T* c, int N,
                                                           TilePos pos, int cta0, int ctas, int lane,
                                                           float out_scale) {
  using T = typename Cfg::T;
  constexpr int kWords = Cfg::kSumFloats < kSmallSlotWords ? Cfg::kSumFloats : kSmallSlotWords;
  constexpr int kPer = kWords / kWarpSize;   // words per lane
  constexpr int kBatch = kPer >= 2 ? 16 / kPer : 8;
  static_assert(kWords % kWarpSize == 0, "whole words per lane");
  const int words = pos.rows * Cfg::BLOCK_N;   // (<= kWords: the caller's choice)
  uint32_t v[kBatch][kPer];
  uint32_t* w[kBatch];
  const auto load_batch = [&](int s0) {
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int s = s0 + j;
      w[j] = tile_slot<Cfg>(workspace, cta0, s);
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int x = lane + i * kWarpSize;
        v[j][i] = s < ctas && x < words ? ptx::ld_relaxed_gpu_u32(w[j] + x) : 1u;   // (1: not read)
      }
    }
  };
  __syncwarp();   // (the warp's slot stores are issued: lane 0 counts them in)
  int old = 0;
  if (lane == 0) old = ptx::atom_add_relaxed_gpu(counter, 1);
  load_batch(0);
  if (__shfl_sync(0xffffffffu, old, 0) != ctas - 1) return;   // a later CTA finishes the tile
  KBIT_DECODE_TL_LAST(lane);   // (the first batch is in flight, not landed: the loads below wait)

  float sum[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) sum[i] = 0.f;
  for (int s0 = 0; s0 < ctas; s0 += kBatch) {
    if (s0 > 0) load_batch(s0);
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int x = lane + i * kWarpSize;
        if (s0 + j < ctas && x < words) {
          while (v[j][i] == 0u) v[j][i] = ptx::ld_relaxed_gpu_u32(w[j] + x);
          sum[i] += slot_value(v[j][i]);
          ptx::st_relaxed_gpu_u32(w[j] + x, 0u);
        }
      }
    }
  }
  if (c != nullptr) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int x = lane + i * kWarpSize, m = x / Cfg::BLOCK_N, n = x % Cfg::BLOCK_N;
      if (x < words && pos.n0 + n < N)
        c[size_t(pos.row0 + m) * N + pos.n0 + n] = Elem<T>::from_float(sum[i] * out_scale);
    }
  }
  if (lane == 0) ptx::st_relaxed_gpu_s32(counter, 0);   // ready for the next launch
}

// Larger slots (8 rows of 64-row tiles, 16 rows) travel with cp.async into
// the warp's own ring (kWarpBytes at shared address ring_s, drained by
// then), so no registers are held for them.
// A batch holds a range of 16-byte chunks of every slot (one round trip for
// a tile in two CTAs up to 16 rows at k = 4); where the slots are too many
// for 32 chunks of each, a batch holds 32 chunks (one per lane) of as many
// slots as fit, and the lanes carry their sums across batches. A batch with
// a word still zero is copied again. Until v38 these slots took the loads
// above too, at most 16 words per lane in flight: at 16 rows a tile in two
// CTAs took four round trips after the count, ~4-8 us at the end of a
// Llama-3-70B call (docs/results.md v37). The small slots keep the loads:
// through the ring they were ~1 us slower at Llama-3-8B M = 4 and 8
// (tc_bench, v38; not from retries: 0-2 of 10240 batches were copied
// twice). (cp.async reads are weak; a nonzero word is still the one value
// stored to it in this launch, and it is zeroed only after it was seen: the
// argument the relaxed loads make. Repeated calls give the same bits:
// test_gpu_kernels.py runs the forced decode kernel on layers whose tiles
// span 2-3 CTAs.)
// Not inlined: it runs once per warp, after the main loop, and compiled into
// the kernel its code moved the loop's register allocation (the 16-warp
// configurations of k = 3 sit at their 128-register cap: ptxas spilled 4-20
// bytes in the loop for most forms of this function, v37).
template <class Cfg>
__device__ __noinline__ void finish_spanning_tile_ring(float* workspace, int* counter, typename Cfg::T* c, int N,
                                                       TilePos pos, int cta0, int ctas, int lane, float out_scale,
                                                       uint32_t ring_s) {
  using T = typename Cfg::T;
  constexpr int kRingChunks = Cfg::kWarpBytes / 16;
  static_assert(kRingChunks >= kWarpSize && Cfg::BLOCK_N % 4 == 0, "one chunk per lane fits the ring");
  const int chunks = pos.rows * Cfg::BLOCK_N / 4;   // of a slot: its rows only
  const auto slot = [&](int s) { return tile_slot<Cfg>(workspace, cta0, s); };
  // A batch: chunks [q0, q0 + span) of slots [s0, s1); chunk q of slot s is
  // staged at ring chunk (s - s0) span + q - q0. The copies have landed when
  // copy() returns (whole warp).
  const auto staged = [&](int s, int q, int s0, int q0, int span) {
    return ring_s + uint32_t(((s - s0) * span + q - q0) * 16);
  };
  const auto copy = [&](int s0, int s1, int q0, int span) {
    const int q1 = min(q0 + span, chunks);
    for (int s = s0; s < s1; ++s)
      for (int q = q0 + lane; q < q1; q += kWarpSize)
        ptx::cp_async_cg16(staged(s, q, s0, q0, span), slot(s) + 4 * q, 16u);
    ptx::cp_async_commit();
    ptx::cp_async_wait<0>();
    __syncwarp();
  };
  const auto landed = [&](int s0, int s1, int q0, int span) {   // every word of the batch is nonzero (whole warp)
    const int q1 = min(q0 + span, chunks);
    bool ok = true;
    for (int s = s0; s < s1; ++s)
      for (int q = q0 + lane; q < q1; q += kWarpSize) {
        const uint4 v = ptx::ld_shared_v4_u32(staged(s, q, s0, q0, span));
        ok = ok && v.x != 0u && v.y != 0u && v.z != 0u && v.w != 0u;
      }
    return __all_sync(0xffffffffu, ok);
  };
  // sum += slot s's chunk q, staged in the batch (s0, q0, span); its words are
  // zeroed in the workspace, ready for the next launch.
  const auto add = [&](float (&sum)[4], int s, int q, int s0, int q0, int span) {
    const uint4 v = ptx::ld_shared_v4_u32(staged(s, q, s0, q0, span));
    sum[0] += slot_value(v.x), sum[1] += slot_value(v.y), sum[2] += slot_value(v.z), sum[3] += slot_value(v.w);
    *reinterpret_cast<uint4*>(slot(s) + 4 * q) = make_uint4(0u, 0u, 0u, 0u);
  };
  const auto store = [&](const float (&sum)[4], int q) {   // chunk q: 4 columns of one activation row
    if (c == nullptr) return;
    const int m = 4 * q / Cfg::BLOCK_N, n = 4 * q % Cfg::BLOCK_N;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (pos.n0 + n + e < N) c[size_t(pos.row0 + m) * N + pos.n0 + n + e] = Elem<T>::from_float(sum[e] * out_scale);
  };

  // Every slot in one batch (span: a multiple of 32 chunks), or else 32
  // chunks of `group` slots per batch.
  const bool wide = ctas * kWarpSize <= kRingChunks;
  const int span = wide ? min(kRingChunks / ctas / kWarpSize * kWarpSize, cdiv(chunks, kWarpSize) * kWarpSize)
                        : kWarpSize;
  const int group = wide ? ctas : kRingChunks / kWarpSize;

  __syncwarp();   // (the warp's slot stores are issued: lane 0 counts them in)
  int old = 0;
  if (lane == 0) old = ptx::atom_add_relaxed_gpu(counter, 1);
  copy(0, min(group, ctas), 0, span);   // (also before leaving: the copies write this warp's ring)
  if (__shfl_sync(0xffffffffu, old, 0) != ctas - 1) return;   // a later CTA finishes the tile
  KBIT_DECODE_TL_LAST(lane);

#pragma unroll 1
  for (int q0 = 0; q0 < chunks; q0 += span) {
    float sum[4] = {0.f, 0.f, 0.f, 0.f};   // (wide: per chunk; else the lane's chunk q0 + lane)
#pragma unroll 1
    for (int s0 = 0; s0 < ctas; s0 += group) {
      const int s1 = min(s0 + group, ctas);
      if (q0 > 0 || s0 > 0) copy(s0, s1, q0, span);
      while (!landed(s0, s1, q0, span)) copy(s0, s1, q0, span);
      if (wide) {
#pragma unroll 1
        for (int q = q0 + lane; q < min(q0 + span, chunks); q += kWarpSize) {
          float one[4] = {0.f, 0.f, 0.f, 0.f};
          for (int s = 0; s < ctas; ++s) add(one, s, q, 0, q0, span);
          store(one, q);
        }
      } else if (q0 + lane < chunks) {
        for (int s = s0; s < s1; ++s) add(sum, s, q0 + lane, s0, q0, span);
      }
      __syncwarp();   // (the ring is read before the next batch lands in it)
    }
    if (!wide && q0 + lane < chunks) store(sum, q0 + lane);
  }
  if (lane == 0) ptx::st_relaxed_gpu_s32(counter, 0);   // ready for the next launch
}

// The form for this tile's slots (above).
template <class Cfg>
__device__ __forceinline__ void finish_spanning(float* workspace, int* counter, typename Cfg::T* c, int N, TilePos pos,
                                                int cta0, int ctas, int lane, float out_scale, uint32_t ring_s) {
  if constexpr (kSmallSlotWords == 0) {
    finish_spanning_tile_ring<Cfg>(workspace, counter, c, N, pos, cta0, ctas, lane, out_scale, ring_s);
  } else {
    if constexpr (Cfg::kSumFloats > kSmallSlotWords) {
      if (pos.rows * Cfg::BLOCK_N > kSmallSlotWords) {
        finish_spanning_tile_ring<Cfg>(workspace, counter, c, N, pos, cta0, ctas, lane, out_scale, ring_s);
        return;
      }
    }
    finish_spanning_tile_small<Cfg>(workspace, counter, c, N, pos, cta0, ctas, lane, out_scale);
  }
}

// ---------------------------------------------------------------------------
// Stage: the tile a pair of CTAs shares (p.pairs: clusters of two CTAs on a
// grid whose CTA pairs 2q, 2q + 1 take whole tiles; launch.cuh,
// decode_pair_ctas).
//
// Each CTA shares at most one tile, with its pair: the first CTA holds its
// first part (X), the second its last (E). After its main loop, the second
// CTA's sum of E goes into the first CTA's shared memory with st.async, each
// word completing bytes on an mbarrier there; the first CTA's warp that added
// X waits on it, adds E and writes C. No workspace slot, count or global
// round trip; the same order (X, then E) on every run, so the same bits.
// (The host gives pairs only tile counts of 3 or more per pair, so a shared
// tile spans exactly the pair.)
// The first CTA receives into warp 0's part buffer and mbarrier 0, which it
// never uses otherwise: a part buffer belongs to a warp after the first of a
// tile (warp 0 never is), and mbarrier 0 to a tile entering the CTA from an
// earlier one (the first CTA of a pair begins at a tile).
// ---------------------------------------------------------------------------
template <class Cfg>
__device__ __forceinline__ bool decode_paired(const DecodeParams& p, bool dense) {
#if KBIT_HAS_CLUSTER
  return !Cfg::kSumByHelpers && dense && p.pairs != 0 && !(KBIT_DECODE_PROBE & (32 | 4096));
#else
  return false;
#endif
}
// The bytes the second CTA sends: rows x BLOCK_N words (the tile's rows).
template <class Cfg>
__device__ __forceinline__ uint32_t pair_part_bytes(const DecodeParams& p) {
  return uint32_t(min(Cfg::BLOCK_M, p.M) * Cfg::BLOCK_N * 4);
}
#if KBIT_HAS_CLUSTER
// After the main loop, the warp that holds its CTA's sum of the shared tile
// (written there in the loop: the second CTA's in warp 0's part buffer, the
// first CTA's in the warp's own ring, idle now, since the tile is the last
// of its first warp). The second CTA sends it; the first waits for it, adds
// it to its own and writes C. Not inlined: with these stores in the loop's
// tile-end path ptxas scheduled the loop itself differently (up to 37 more
// sm_90a instructions per K-tile, v47).
template <class Cfg>
__device__ __noinline__ void finish_pair(bool first_cta, typename Cfg::T* c, int N, TilePos pos, const float* own,
                                         const float* parts, uint32_t bars, int lane, float out_scale) {
  using T = typename Cfg::T;
  static_assert(Cfg::kPartFloats * 4 <= Cfg::kStages * Cfg::kStageBytes, "a part fits the ring's stages");
  const int words = pos.rows * Cfg::BLOCK_N;
  __syncwarp();   // (the part's words were stored by every lane)
  if (!first_cta) {
    ptx::cluster_wait();   // the first CTA's mbarrier is initialised (its cluster arrive at set-up)
    const uint32_t dst = ptx::mapa_shared(ptx::smem_u32(parts), 0), bar = ptx::mapa_shared(bars, 0);
    for (int i = lane; i < words; i += kWarpSize) {
      const int w = part_word<Cfg>(i % Cfg::BLOCK_N, i / Cfg::BLOCK_N);
      ptx::st_async_u32(dst + 4u * uint32_t(w), __float_as_uint(own[w]), bar);
    }
    return;
  }
  if (lane == 0) ptx::mbarrier_arrive(bars);   // (the phase's one arrival; the bytes complete it)
  ptx::mbarrier_wait_parity_cluster(bars, 0);
  for (int i = lane; i < words; i += kWarpSize) {
    const int n = i % Cfg::BLOCK_N, m = i / Cfg::BLOCK_N, w = part_word<Cfg>(n, m);
    if (c != nullptr && pos.n0 + n < N)
      c[size_t(pos.row0 + m) * N + pos.n0 + n] = Elem<T>::from_float((own[w] + parts[w]) * out_scale);
  }
}
#endif

// ---------------------------------------------------------------------------
// The kernel.
// ---------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
kbit_decode_kernel(const DecodeParams p) {
  // (16-row warp tiles, kNT = 1, serve the row-owning kernel only.)
  static_assert(Cfg::BLOCK_N % 32 == 0, "the decode kernel's warp tiles: 32 rows or more");
  using T = typename Cfg::T;
  __shared__ float cb_s[32];
  __shared__ int scratch[32];
  // The warp's first and last tile (the only ones it can share with other
  // warps): {tile, first warp of this CTA holding units of it | its mbarrier
  // << 8 | the tile's first CTA << 16, other CTAs holding units of it, mask of
  // the later warps of this CTA holding units of it}. Read back only where a
  // part ends (out of the loop's registers).
  __shared__ int4 ends_s[Cfg::kWarps][2];
  extern __shared__ __align__(128) uint8_t decode_smem[];
  uint8_t* lut = decode_smem;
  int* slot_start = reinterpret_cast<int*>(decode_smem + Cfg::kSlotOffset);
  float* parts = reinterpret_cast<float*>(decode_smem + Cfg::kSumOffset);
  const uint32_t bars = ptx::smem_u32(parts + Cfg::kWarps * Cfg::kPartFloats);
  const uint32_t ring_bars = bars + 8 * (Cfg::kWarps + 1) + 8 * Cfg::kStages * (threadIdx.x >> 5);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  uint8_t* ring = decode_smem + Cfg::kRingOffset + size_t(warp) * Cfg::kWarpBytes;
  float* scales = reinterpret_cast<float*>(ring + Cfg::kStages * Cfg::kStageBytes);

  constexpr bool kTimeline = KBIT_DECODE_PROBE & 256;
  DecodeTimeline tl{};
  __shared__ int loop_end[2];   // kTimeline: min, max SM clocks to a warp's loop end
  // kTimeline: each warp's SM clocks (from the CTA's start) to its end [0] and,
  // for the last tile it finished, to its accumulators landing [1], its wait
  // for the CTA's other parts done [2], its sum stored or published [3].
  // [4]: when it learned that its CTA finishes a tile split between CTAs
  // (decode_tl_last).
  __shared__ int warp_marks[5][kTimeline ? Cfg::kWarps : 1];
  int tl_fin[3] = {-1, -1, -1};
  if constexpr (kTimeline) {
    tl.c0 = clock64();
    tl.g0 = ptx::globaltimer_ns();
    if (tid == 0) loop_end[0] = 0x7fffffff, loop_end[1] = 0;
#if KBIT_DECODE_PROBE & 256
    if (lane == 0) decode_tl_last[warp] = -1;
#endif
  }
  if constexpr ((KBIT_DECODE_PROBE & 64) != 0) return;

  constexpr int kLevels = 1 << Cfg::kBits;
  // The few loads the set-up barriers wait for go out first: a load issued
  // after the prologue copies of all SMs (~13 MB) queues behind them (ncu put
  // ~17 % of the warps' samples at the first barrier when the offsets were
  // loaded there, Llama-3-8B gate/up, M = 1).
  // (Into a register here, into shared memory later (store_cb): a store here
  // would hold every warp until the value arrives, ahead of its copies; the
  // scoreboard wait does not depend on the predicate.)
  float cb_v = 0.f;
  if (tid < kLevels && !(KBIT_DECODE_PROBE & 16)) cb_v = __ldg(p.codebook + tid);
  uint32_t tl_cb = 0, tl_w = 0;   // kTimeline: thread 0's probe loads
  if (kTimeline && !(KBIT_DECODE_PROBE & 16) && tid == 0) tl_cb = __ldg(reinterpret_cast<const uint32_t*>(p.codebook));
  const bool dense = Cfg::kDense || p.E == 1;
  int dense_off0 = 0, dense_off1 = p.M;   // dense: checked at the second barrier
  if (dense && tid == 0) {
    dense_off0 = __ldg(p.offsets);
    dense_off1 = __ldg(p.offsets + 1);
  }
  if (kTimeline && tid == 0) tl.c_par = ptx::clock64_after(uint32_t(p.E));   // a kernel parameter has arrived

  // ---- where this warp's units are -------------------------------------------
  // Dense layers (E = 1) locate slots without the offsets, so the first copies
  // go out before anything else has arrived; the offsets are checked below,
  // before anything is written. Grouped layers need the slot table first.
  // A dense layer is one slot (the host gives this kernel M <= 8 rows per
  // slot, and checks M <= 8 here with the offsets).
  // Grouped layers compute the split on the device (the tile count depends on
  // the offsets). Thread 0 does it once, inside the slot table's last barrier,
  // and the warps read it from shared memory. Every warp computing it, with
  // two 64-bit integer divisions (subroutine calls) for the divisors, put
  // ~1.2 us between the slot table and the split at grouped t = 1; now ~0.6
  // (thread 0's ~0.4 us and the barrier; docs/results.md v21).
  using Split = DecodeSplit<Cfg::kWarps, Cfg::kDense>;
  __shared__ Split split_s;
  __shared__ int slots_s;
  const int n_blocks = cdiv(p.N, Cfg::BLOCK_N);
  const int k_tiles = p.layout.k_tiles;
  // Whether the counters the host sized hold the tiles of `slots` slots (if not,
  // the split is empty and the kernel writes NaN below).
  const auto fit = [&](int slots) { return (long long)slots * n_blocks <= p.max_tiles; };
  const auto tiles_if_fit = [&](int slots) { return fit(slots) ? slots * n_blocks : 0; };
  bool offsets_ok = true;
  int S = 1;
  Split split;
  if (dense) {
    split.init(p, tiles_if_fit(1), gridDim.x, blockIdx.x, kDecodeMinUnits);
  } else {
    offsets_ok = build_slot_table<Cfg>(slot_start, scratch, p.offsets, p.E, p.M, tid, [&](int slots) {
      if (kTimeline) tl.c_cbval = clock64();
      slots_s = slots;
      split_s.init_device(k_tiles, tiles_if_fit(slots), gridDim.x, blockIdx.x, kDecodeMinUnits);
      if (kTimeline) tl.c_wval = ptx::clock64_after(uint32_t(split_s.ce));
    });
    if (offsets_ok) {
      S = slots_s;
      split = split_s;
    } else {
      S = 0;   // (nothing is copied; the kernel writes NaN below)
      split.init_device(k_tiles, 0, gridDim.x, blockIdx.x, kDecodeMinUnits);
    }
  }
  if (kTimeline && !dense && tid == 0) tl.c_offval = clock64();   // grouped: slot table and split read
  const bool fits = fit(S);
  const FastDiv& by_k_tiles = p.k_tiles_div;
  const int u_begin = split.begin(warp), u_end = split.begin(warp + 1);
  const bool active = u_end > u_begin;
  if (kTimeline && tid == 0) tl.c_split = ptx::clock64_after(uint32_t(u_end));

  auto locate = [&](int tile) -> TilePos {
    if (!dense) return locate_tile<Cfg>(tile, S, slot_start, p.offsets, p.E);
    TilePos pos;   // dense: tile = n-block
    pos.tile = tile;
    pos.expert = 0;
    pos.row0 = 0;
    pos.rows = min(Cfg::BLOCK_M, p.M);
    pos.n0 = tile * Cfg::BLOCK_N;
    return pos;
  };

  // ---- prologue copies, then the table while they fly ------------------------
  int ld_left = u_end - u_begin;   // units still to copy
  TilePos pos{}, ld_pos{};
  WarpCursor<Cfg> cur{};
  DecodeRing<Cfg> ring_cp{};
  ring_cp.init(ring_bars, lane);
  const int tile0 = int(by_k_tiles.div(uint32_t(u_begin))), kt0 = u_begin - tile0 * k_tiles;
  // Probe 8192 (with 256): thread 0's first tile located (its rows known) in
  // place of the prologue copies' stamp, and its weight cursor started in place
  // of the bookkeeping's (each waits for the value).
  constexpr bool kFineSetup = kTimeline && (KBIT_DECODE_PROBE & 8192);
  if (active) {
    pos = ld_pos = locate(tile0);
    if (kFineSetup && tid == 0) tl.c_pro = ptx::clock64_after(uint32_t(pos.row0 + pos.rows));
    cur.start(p, ld_pos, kt0, lane);
    if (kFineSetup && tid == 0) tl.c_ends = ptx::clock64_after(uint32_t(reinterpret_cast<uintptr_t>(cur.w_src)));
  }
  // Ring slots by shared address, advanced with a wrap (no division).
  const uint32_t ring_s = ptx::smem_u32(ring);
  const uint32_t ring_end = ring_s + Cfg::kStages * Cfg::kStageBytes;
  uint32_t ld_slot = ring_s;
  auto produce = [&]() {
    if (ld_left > 0) {
      if (!(KBIT_DECODE_PROBE & 2)) ring_cp.issue(p, cur, ld_slot, lane);
      if (--ld_left > 0) {
        if (cur.kt + 1 == k_tiles) {
          ld_pos = locate(ld_pos.tile + 1);
          cur.start(p, ld_pos, 0, lane);
        } else {
          cur.advance(p);
        }
      }
    }
    ring_cp.commit();
    ld_slot = ld_slot + Cfg::kStageBytes == ring_end ? ring_s : ld_slot + Cfg::kStageBytes;
  };
  const int prologue = min(Cfg::kStages - 1, ld_left);   // stages the prologue copies
  const auto issue_prologue = [&] {
    if (active) {
#pragma unroll
      for (int s = 0; s < Cfg::kStages - 1; ++s) produce();
    }
    if (kTimeline && !kFineSetup && tid == 0) tl.c_pro = clock64();
  };
  // The codebook into shared memory: just before the barrier where the
  // activations travel in the ring, but ahead of the register activation
  // loads where they do not (a store after those waits for them too: ncu,
  // grouped t = 1, 14 % of the samples at the store; moving it ahead made the
  // grouped decode cases 2 us faster, docs/results.md v17).
  const auto store_cb = [&] {
    if (tid < kLevels && !(KBIT_DECODE_PROBE & 16)) cb_s[tid] = cb_v;
  };
  // The first unit's activations (kActRows == 0: loaded to registers, one
  // unit ahead; b_next holds unit u's fragments at the top of iteration u).
  const int g = lane >> 2, t = lane & 3;
  const bool k_half = p.K % kTileK != 0;   // the last K-tile has only its lower block
  const char* a_base = static_cast<const char*>(p.a) + size_t(4 * t);
  const size_t a_row_bytes = size_t(p.K) * sizeof(T);
  int kt = kt0;
  bool b_ok = active && g < pos.rows;
  const char* b_ptr = a_base + size_t(pos.row0 + (b_ok ? g : 0)) * a_row_bytes + size_t(kt) * kTileK * sizeof(T);
  uint32_t b_next[2][4] = {};
  const auto load_first_act = [&] {
    if constexpr (!Cfg::kSmemAct) load_act<Cfg>(b_next, b_ptr, b_ok, k_half && kt + 1 == k_tiles);
    if (kTimeline && tid == 0) tl.c_act = clock64();
  };
  if constexpr (Cfg::kSmemAct) {
    issue_prologue();   // (store_cb below, at the barrier)
    load_first_act();   // (the timeline's stamp only)
  } else if (dense) {
    // Dense layers with the activations in registers (M = 5..8 with 64-row
    // tiles, or at k = 5) reach this point early: the codebook may still be
    // on its way, and the store would hold the weight copies back.
    issue_prologue();
    store_cb();
    load_first_act();
  } else {
    // Grouped layers come here after the slot table (the codebook has
    // arrived). Their activation loads go ahead of the weight copies: behind
    // them they queued for the whole prologue of all SMs and held the first
    // unit (ncu, grouped t = 1: 7 % of the samples at its first use).
    store_cb();
    load_first_act();
    issue_prologue();
  }
  // kSmemAct: lane's ldmatrix row address in a stage's activation rows (row
  // lane % 8, chunk lane / 8 of the 32-block; block 1: ^ 64). Rows the stage
  // does not hold read row 0 (their MMA columns are not stored).
  const int act_row = (lane & 7) < Cfg::kActRows ? (lane & 7) : 0;
  const uint32_t act_lane = uint32_t(act_row * 128 + (((lane >> 3) ^ act_row) << 4));

  // Where the parts of the warp's first and last tile go (after the first
  // copies). Lane l holds warp l's first unit (l <= kWarps; begin(kWarps) =
  // ce): the warp's queries below are ballots over these.
  static_assert(Cfg::kWarps < 32, "one lane per warp start, and the end");
  const int lane_begin = split.begin(min(lane, Cfg::kWarps));
  const int next_begin = __shfl_down_sync(0xffffffffu, lane_begin, 1);   // (every lane takes part)
  const uint32_t busy = __ballot_sync(0xffffffffu, lane < Cfg::kWarps && next_begin > lane_begin);
  if (active) {
    // Lanes 0 and 1: the tile of the warp's first and of its last unit.
    const int tile1 = int(by_k_tiles.div(uint32_t(u_end - 1)));
    int first0, last0, first1, last1;
    split.local_span(tile0, lane_begin, lane, first0, last0);
    split.local_span(tile1, lane_begin, lane, first1, last1);
    if (lane < 2) {
      const int tile = lane ? tile1 : tile0, first = lane ? first1 : first0, last = lane ? last1 : last0;
      const uint32_t others = busy & ((2u << last) - (2u << first));
      const int cta0 = split.first_cta(tile);
      ends_s[warp][lane] = make_int4(tile, first | split.bar(tile, first) << 8 | cta0 << 16,
                                     split.last_cta(tile) - cta0, int(others));
    }
    // The first warp of a split tile counts the later ones in with an
    // mbarrier; only the tile of a warp's last unit can be one it is first of.
    // The condition and the address are the warp's (every lane computes them):
    // with the address in lane 1 only, racecheck took the other lanes' stale
    // registers of the init for its address and reported hazards on static
    // shared variables no mbarrier lives at (docs/results.md v28).
    const uint32_t others1 = busy & ((2u << last1) - (2u << first1));
    if (first1 == warp && others1) {
      const uint32_t bar = bars + 8 * split.bar(tile1, first1);
      // (kSumByHelpers: the first warp arrives too.)
      if (lane == 0) ptx::mbarrier_init(bar, kWarpSize * (__popc(others1) + (Cfg::kSumByHelpers ? 1 : 0)));
    }
  } else if (lane < 2) {
    ends_s[warp][lane] = make_int4(-1, 0, 0, 0);
  }

  if (kTimeline && tid == 0) {
    if (!kFineSetup) tl.c_ends = clock64();
    if (dense) {
      tl.c_cbval = ptx::clock64_after(tl_cb);
      tl.c_offval = ptx::clock64_after(uint32_t(dense_off0 + dense_off1));
    }
    // 512: also wait for a weight word of the first copy (delays the barrier).
    if ((KBIT_DECODE_PROBE & 512) && active) tl_w = __ldg(reinterpret_cast<const uint32_t*>(cur.w_src));
    if (KBIT_DECODE_PROBE & 512) tl.c_wval = ptx::clock64_after(tl_w);
    else if (dense) tl.c_wval = tl.c0;
  }
  if (dense)
    offsets_ok = dense_off0 == 0 && dense_off1 == p.M && p.M <= (Cfg::kDense ? Cfg::kActRows : Cfg::BLOCK_M) &&
                 (!Cfg::kDense || (p.E == 1 && p.split_units > 0));
  // Pairs: the first CTA's mbarrier for the shared tile's other part (its
  // bytes from st.async; the one arrival is the receiving warp's, at the end),
  // then every thread arrives on the cluster barrier, which the second CTA's
  // sending warp waits on. Nothing here orders or waits for the loads in
  // flight: with a release (mbarrier_arrive_expect_tx, a release arrive on
  // the cluster barrier) the set-up waited for them, and every call of the
  // pair grid took 1.2-1.5 us longer (tc_bench, v47).
  const bool paired = decode_paired<Cfg>(p, dense);
#if KBIT_HAS_CLUSTER
  if (paired) {
    if ((blockIdx.x & 1) == 0 && tid == 0) {
      ptx::mbarrier_init(bars, 1);
      ptx::mbarrier_expect_tx_relaxed(bars, pair_part_bytes<Cfg>(p));
      ptx::fence_mbarrier_init();
    }
    ptx::cluster_arrive_relaxed();
  }
#endif
  if constexpr (Cfg::kSmemAct) store_cb();
  __syncthreads();   // cb_s
  if constexpr (kTimeline) tl.c_cb = clock64();
  float cb_max = 0.f;
  if constexpr (!(KBIT_DECODE_PROBE & 16)) {
#pragma unroll
    for (int i = 0; i < kLevels; ++i) cb_max = fmaxf(cb_max, fabsf(cb_s[i]));
  }
  if (!(cb_max > 0.f)) cb_max = 1.f;   // all-zero codebook
  if constexpr (!(KBIT_DECODE_PROBE & 16)) build_decode_lut<Cfg>(lut, cb_s, 1.f / cb_max, tid);
  const bool ok_all = __syncthreads_and(offsets_ok && fits);
  if constexpr (kTimeline) tl.c_lut = clock64();
  if (!ok_all) {
    // Offsets that are not a partition of the rows (or more tiles than the host
    // sized the counters for): make it loud and touch nothing else.
    if (active) ring_cp.drain(prologue);
    T* c = static_cast<T*>(p.c);
    const size_t total = size_t(p.M) * p.N;
    for (size_t i = size_t(blockIdx.x) * Cfg::kThreads + tid; i < total; i += size_t(gridDim.x) * Cfg::kThreads)
      c[i] = Elem<T>::from_float(__int_as_float(0x7fc00000));
    return;
  }
  if (!active && !kTimeline) return;   // no CTA barrier follows (but the timeline's)

  // ---- per-lane constants ----------------------------------------------------
  const IndexConsts<Cfg> ic(t);   // where the index word's fields come from
  // The lane's replica offset: 4-byte replicas (8-byte ones at k = 2, 16 at k = 5).
  const uint32_t lane_word = Cfg::kBits == 5 ? uint32_t(lane & 15) * 4 : uint32_t(lane) * (Cfg::kQuad ? 8 : 4);
  const float out_scale = cb_max;
  const uint32_t lut_s = ptx::smem_u32(lut);

  // ---- main loop ------------------------------------------------------------
  TilePos next = pos;   // the tile of unit u + 1
  float acc[Cfg::kNT][Cfg::kAccRegs];
  for_each_acc<Cfg>(acc, g, t, [](float& x, int, int) { x = 0.f; });

  uint32_t slot_s = ring_s;   // the stage consumed next
  for (int left = u_end - u_begin; left > 0; --left) {   // units still to consume
    ring_cp.wait();   // this unit's stage landed for every lane; the previous one is free
    produce();
    const uint8_t* stage = ring + (slot_s - ring_s);

    uint32_t bf[Cfg::kMH][2][4];   // per 8 activation rows of the slot (bf[1]: rows 8..15, kMH = 2)
    if constexpr (Cfg::kSmemAct) {
      // B fragments of k16 steps 2 blk, 2 blk + 1: matrices = the block's four
      // 8-column chunks (bf[0][blk][j]: k = 32 blk + 8 j + 2t). Block 1: chunk ^ 4
      // = lane offset ^ 64 (the row part is a multiple of 128). Rows 8..15 lie
      // 1024 bytes further, with the same swizzle (row % 8).
#pragma unroll
      for (int blk = 0; blk < 2; ++blk) {
        ptx::ldmatrix_x4(bf[0][blk], slot_s + Cfg::kAOff + (act_lane ^ uint32_t(blk * 64)));
        if constexpr (Cfg::kMH == 2)
          ptx::ldmatrix_x4(bf[1][blk], slot_s + Cfg::kAOff + 8 * 128 + (act_lane ^ uint32_t(blk * 64)));
      }
      if (left > 1 && kt + 1 == k_tiles) next = locate(pos.tile + 1);
    } else {
#pragma unroll
      for (int blk = 0; blk < 2; ++blk)
#pragma unroll
        for (int j = 0; j < 4; ++j) bf[0][blk][j] = b_next[blk][j];
      if (left > 1) {
        if (kt + 1 < k_tiles) {
          b_ptr += kTileK * sizeof(T);
          load_act<Cfg>(b_next, b_ptr, b_ok, k_half && kt + 2 == k_tiles);
        } else {
          next = locate(pos.tile + 1);
          b_ok = g < next.rows;
          b_ptr = a_base + size_t(next.row0 + (b_ok ? g : 0)) * a_row_bytes;
          load_act<Cfg>(b_next, b_ptr, b_ok, k_half && k_tiles == 1);
        }
      }
    }

    decode_stage_scales<Cfg>(scales, stage + Cfg::kWBytes, 0, lane);
    if constexpr (!(KBIT_DECODE_PROBE & 1))
      stage_mma<Cfg>(acc, reinterpret_cast<const uint32_t*>(stage), scales, bf, ic, lut_s, lane_word, g);

    slot_s = slot_s + Cfg::kStageBytes == ring_end ? ring_s : slot_s + Cfg::kStageBytes;
    if (++kt < k_tiles && left > 1) continue;

    // ---- tile finished (or this warp's share of it) ---------------------------
    if constexpr (kTimeline) tl_fin[0] = tl_fin[1] = int(ptx::clock64_after(__float_as_uint(acc[0][0])) - tl.c0);
    const int4& e = ends_s[warp][ends_s[warp][0].x == pos.tile ? 0 : 1];
    bool store = true;   // this warp holds the tile's sum: it writes C
    // A tile between the warp's first and last is all the warp's.
    if (e.x == pos.tile && !(KBIT_DECODE_PROBE & 32)) {
      if constexpr (Cfg::kSumByHelpers) {
        const int first = e.y & 255;
        const uint32_t later = uint32_t(e.w);   // this CTA's later warps holding units of the tile
        // The tile spans CTAs: the CTA's sum goes to its slot (no wait), and
        // the first warp counts the CTA in after its loop (finish_spanning).
        // Role 1: the tile began in this CTA.
        const bool spans = e.z > 0 && !(KBIT_DECODE_PROBE & 4096);
        const int slot = 2 * int(blockIdx.x) + ((e.y >> 16) == int(blockIdx.x) ? 1 : 0);
        if (later == 0) {
          if (spans) publish_part<Cfg>(p, acc, g, t, pos.rows, slot);
          store = !spans;
        } else {
          // The tile is split between warps of this CTA: the part goes to
          // shared memory (the first warp's to its ring), and every lane
          // arrives on the tile's mbarrier (release of its own stores at CTA
          // scope, no wait for in-flight copies). The warps whose units end
          // in this tile wait for all parts and add them (sum_split_tile).
          // (The first warp's part lands on its last stages: every lane is
          // past its reads of them once the MMAs have its accumulators, but
          // racecheck does not see that ordering; the barrier states it.)
          if (warp == first) __syncwarp();
          float* mine = warp == first ? reinterpret_cast<float*>(ring) : parts + warp * Cfg::kPartFloats;
          for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
            if (m < pos.rows) mine[part_word<Cfg>(n, m)] = x;
          });
          ptx::mbarrier_arrive(bars + 8 * ((e.y >> 8) & 255));
          store = false;
          if (left == 1) {   // the warp's units end in this tile: it helps add the parts
            const int last = 31 - __clz(later);
            uint32_t helpers = (later & ~(1u << last)) | (1u << first);
            if (ends_s[last][1].x == pos.tile) helpers |= 1u << last;
            wait_split_parts(bars + 8 * ((e.y >> 8) & 255));
            if constexpr (kTimeline) tl_fin[1] = int(clock64() - tl.c0);
            sum_split_tile<Cfg>(p.workspace, kTimeline ? nullptr : static_cast<T*>(p.c), p.N, pos, first, later,
                                helpers, spans, slot, decode_smem, lane, warp, out_scale);
          }
        }
      } else {
        const int first = e.y & 255;
        const uint32_t bar = bars + 8 * ((e.y >> 8) & 255);
        if (warp != first) {
          // A later warp of the tile: its part goes to its own buffer (no
          // atomics), then every lane counts in (mbarrier arrive: release of the
          // lane's own stores at CTA scope, no wait for in-flight copies).
          float* mine = parts + warp * Cfg::kPartFloats;
          for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
            if (m < pos.rows) mine[part_word<Cfg>(n, m)] = x;
          });
          ptx::mbarrier_arrive(bar);
          store = false;
        } else {
          // The tile's first warp in this CTA: its part ends its range, while
          // the later warps' parts start theirs (or are all of them), so it
          // rarely waits. It adds their parts to its own.
          uint32_t others = uint32_t(e.w);
          if (others) {
            wait_split_parts(bar);
            if constexpr (kTimeline) tl_fin[1] = int(clock64() - tl.c0);
            // kBatch parts' loads in flight at once (one part at a time
            // exposed a shared-memory round trip per part: ~10 % of the warp
            // samples at Qwen3 q, M = 1, whose tiles span all 16 warps), added
            // in warp order as before; a missing part adds zero. One part at a
            // time where k = 3 has 64-row tiles (no registers to spare: 2 parts
            // spilled), and in the 32-row register-activation configuration,
            // which the host takes only when forced (KBIT_KERNEL=decode at
            // M = 5..8 and k = 5, or with KBIT_DECODE_ACT8=0): with 4 parts
            // there, racecheck reported write-write hazards between the
            // split-tile mbarrier init and ring copies (docs/results.md v18),
            // most likely the init-address artifact that v28 found and removed
            // (see the init); 4 parts were not tried again here.
            constexpr int kBatch = KBIT_DECODE_SUM_BATCH > 0 ? KBIT_DECODE_SUM_BATCH
                                   : Cfg::kNT == 2 ? (Cfg::kSmemAct ? 4 : 1)
                                   : Cfg::kBits == 3 || Cfg::kMH == 2 ? 1 : 2;
            do {
              float v[kBatch][Cfg::kNT][Cfg::kAccRegs];
#pragma unroll
              for (int j = 0; j < kBatch; ++j) {
                const bool has = others != 0;
                const float* theirs = parts + (has ? __ffs(others) - 1 : 0) * Cfg::kPartFloats;
                others &= others - 1;
                for_each_acc<Cfg>(v[j], g, t, [&](float& x, int n, int m) {
                  x = has && m < pos.rows ? theirs[part_word<Cfg>(n, m)] : 0.f;
                });
              }
#pragma unroll
              for (int j = 0; j < kBatch; ++j)
#pragma unroll
                for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
                  for (int q = 0; q < Cfg::kAccRegs; ++q) acc[nt][q] += v[j][nt][q];
            } while (others);
          }
          if (e.z > 0 && !(KBIT_DECODE_PROBE & 4096)) {
            // The tile spans CTAs: the CTA's sum goes to its slot (no wait); the
            // warp counts in after its loop (finish_spanning). Role 1: the
            // tile began in this CTA. Pairs: the second CTA sends its sum to
            // the first, which adds it and writes C.
            const int role = (e.y >> 16) == int(blockIdx.x) ? 1 : 0;
#if KBIT_HAS_CLUSTER
            // (decode_paired again, from the parameters: a flag held from the
            // set-up through the loop moved ptxas's register allocation.)
            if (decode_paired<Cfg>(p, Cfg::kDense || p.E == 1)) {
              // The pair's tile: the sum waits in shared memory (finish_pair).
              if (role == 1) __syncwarp();   // (the ring: every lane is past its last stage)
              float* mine = role == 1 ? reinterpret_cast<float*>(ring) : parts;
              for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
                if (m < pos.rows) mine[part_word<Cfg>(n, m)] = x;
              });
            } else
#endif
            {
              publish_part<Cfg>(p, acc, g, t, pos.rows, 2 * int(blockIdx.x) + role);
            }
            store = false;
          }
        }
      }
    }
    if (store && !kTimeline) {
      T* c = static_cast<T*>(p.c);
      for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
        if (m < pos.rows && pos.n0 + n < p.N)
          c[size_t(pos.row0 + m) * p.N + pos.n0 + n] = Elem<T>::from_float(x * out_scale);
      });
    }
    if constexpr (kTimeline) tl_fin[2] = int(clock64() - tl.c0);
    for_each_acc<Cfg>(acc, g, t, [](float& x, int, int) { x = 0.f; });
    kt = 0;
    pos = next;
  }
  ring_cp.drain(0);   // (every stage issued was waited for; cp.async: empty groups)
  // The tiles split between CTAs that this warp published its CTA's part of
  // (role 0: its first tile, begun in an earlier CTA; role 1: its last, begun
  // here): it counts the CTA in, and the last CTA finishes the tile. Counting
  // after the loop holds no register through it and adds no wait to it.
#pragma unroll 1
  for (int role = 0; role < 2; ++role) {
    const int4 e = ends_s[warp][role];
    const bool began_here = (e.y >> 16) == int(blockIdx.x);
    if (e.z > 0 && (e.y & 255) == warp && began_here == (role == 1) && !(KBIT_DECODE_PROBE & (32 | 4096))) {
#if KBIT_HAS_CLUSTER
      if (decode_paired<Cfg>(p, Cfg::kDense || p.E == 1)) {
        finish_pair<Cfg>(began_here, kTimeline ? nullptr : static_cast<T*>(p.c), p.N, locate(e.x),
                         began_here ? reinterpret_cast<const float*>(ring) : parts, parts, bars, lane, out_scale);
        continue;
      }
#endif
      finish_spanning<Cfg>(p.workspace, p.counters + e.x, kTimeline ? nullptr : static_cast<T*>(p.c), p.N,
                           locate(e.x), e.y >> 16, e.z + 1, lane, out_scale, ring_s);
    }
  }
  if constexpr (kTimeline) {
    if (lane == 0) {
      const int c = int(clock64() - tl.c0);
      warp_marks[0][warp] = active ? c : -1;
      for (int i = 0; i < 3; ++i) warp_marks[1 + i][warp] = active ? tl_fin[i] : -1;
#if KBIT_DECODE_PROBE & 256
      warp_marks[4][warp] = decode_tl_last[warp] >= 0 ? int(decode_tl_last[warp] - tl.c0) : -1;
#endif
      if (active) {
        atomicMin(&loop_end[0], c);
        atomicMax(&loop_end[1], c);
      }
    }
    __syncthreads();
    if (tid == 0) tl.end(p.c, size_t(p.M) * p.N * sizeof(T), loop_end);
    // Rows (1 + i) gridDim.x + blockIdx.x: warp_marks[i] (32-bit SM clocks
    // from the CTA's start, by warp, 16 entries; -1: no units or no warp),
    // then in word 15 a marker (0x71AF + i) as in the CTA's row.
    for (int i = 0; i < 5; ++i) {
      const size_t row = size_t(1 + i) * gridDim.x + blockIdx.x;
      if ((row + 1) * DecodeTimeline::kWords * 8 > size_t(p.M) * p.N * sizeof(T)) break;
      unsigned long long* w = static_cast<unsigned long long*>(p.c) + DecodeTimeline::kWords * row;
      if (tid < 16) reinterpret_cast<int*>(w)[tid] = tid < Cfg::kWarps ? warp_marks[i][tid] : -1;
      if (tid == 0) w[DecodeTimeline::kWords - 1] = (0x71AFull + i) << 48 | uint64_t(gridDim.x) << 16 | blockIdx.x;
    }
  }
}

}  // namespace kbit
