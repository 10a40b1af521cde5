// kbit_gemm.cuh — fused dequantize + tensor-core GEMM of k-bit codebook weights,
// every M, dense and mixture-of-experts, one launch.
//
//   C[m, n] = sum_k A[m, k] * W_e[n, k]      (rows m of expert e: offsets[e]..offsets[e+1])
//
// Design (docs/design.md has the reasoning and the numbers behind it):
// * Roles are swapped with respect to a textbook GEMM: the WEIGHTS are the MMA A
//   operand (16 output columns n x 16 k) and the ACTIVATIONS the B operand (k x 8
//   rows m). A decode call (M <= 8) wastes nothing, and a dequantized weight
//   fragment is reused for every 8 activation rows of the tile.
// * Dequantization is a table lookup of PAIRS of weights: the k bit planes of a
//   row's 32-block are rotated so that byte i of one word holds the 2k index bits
//   of the pair of weights thread t needs for fragment register i; one shared
//   memory load then returns that register (two fp16/bf16 codebook values). The
//   table is replicated per lane so the lookups never conflict on banks.
// * The scale byte multiplies either the fp32 partial sum of the block (few
//   activation tiles: 4 FMAs per 16 weights) or the fragment (many tiles).
// * Work is a flat list of units (tile, K-tile), tile = (expert slot, n-block); a
//   persistent grid splits it evenly ("stream-K"), so every SM streams the same
//   number of bytes whatever the shape. The CTAs sharing a tile claim places
//   in it: the first stores its fp32 part, the middle ones add theirs, the last
//   adds the others' sum to its own and writes C (finish_tile; summation order,
//   hence the last bits, may vary between runs).
// * Global -> shared copies go through a kStages-deep cp.async ring; the expert
//   offsets are read on the device (no host synchronization, graph capturable).
//
// Version log
//   v1  pair-LUT dequant, W-as-A mma.sync m16n8k16, stream-K, grouped via offsets.
//   v2  tables, stream-K share, producer, dequant block and split-tile epilogue
//       as stages shared with the sm90 wgmma kernel (kbit_wgmma.cuh).
//   v3  split tiles by claims (finish_tile): the last part stays in registers,
//       no workspace zeroing; C in 4-byte column pairs without branches, or
//       staged through shared memory (store_tile_staged, the wgmma kernel).
#pragma once

#ifndef KBIT_TILED_WIDE_LUT
#define KBIT_TILED_WIDE_LUT 1   // 0: the 128-byte-row pair table everywhere (A/B), see KbitConfig::kWideLut
#endif

// Timeline hooks of the tile epilogue (scripts/tc_bench.cu -DTC_TIMELINE;
// empty by default): finish_tile's steps, in the slots of the current epilogue.
#ifndef KBIT_EPI_MARK
#define KBIT_EPI_MARK(step, value)
#define KBIT_EPI_NEXT()
#endif

namespace kbit {

// ---------------------------------------------------------------------------
// Compile-time configuration of one kernel instance.
// ---------------------------------------------------------------------------
// Bytes of the expert slot table (slot_start[0..E], dynamic shared memory),
// in whole 128-byte pieces. Every kernel with a slot table sizes it here.
__host__ __device__ constexpr int slot_table_bytes(int experts) { return cdiv((experts + 1) * 4, 128) * 128; }
// One CTA's shared memory with a pair table of `table` bytes in dynamic
// shared memory: the table, the slot table of `experts` experts, `ring`
// bytes, the static tables and the per-CTA reservation.
__host__ __device__ constexpr size_t dyn_lut_cta_bytes(size_t table, int experts, size_t ring) {
  return table + size_t(slot_table_bytes(experts)) + ring + 1280 + 1024;
}
// The same with the wide (256-byte-row) pair table of k-bit indices and the
// smallest slot table (one expert). Both tiled kernels (KbitConfig,
// WgmmaConfig) use it where that many bytes leave their CTAs per SM in place.
__host__ __device__ constexpr size_t wide_lut_cta_bytes(int bits, size_t ring) {
  return dyn_lut_cta_bytes((size_t(1) << (2 * bits)) * 256, 1, ring);
}

template <int kBits_, typename T_, int kMTiles_, int kWarps_, int kNT_, int kStages_, int kMinBlocks_>
struct KbitConfig {
  static constexpr int kBits = kBits_;
  using T = T_;
  static constexpr int kMTiles = kMTiles_;   // activation tiles of 8 rows per CTA tile
  static constexpr int kWarps = kWarps_;     // warps per CTA, each owns its own rows n
  static constexpr int kNT = kNT_;           // 16-row weight tiles per warp
  static constexpr int kStages = kStages_;   // depth of the cp.async ring
  static constexpr int kMinBlocks = kMinBlocks_;   // CTAs per SM the register budget is sized for
  static constexpr int kThreads = kWarps * kWarpSize;
  static constexpr int BLOCK_M = 8 * kMTiles;
  static constexpr int BLOCK_N = kWarps * 16 * kNT;
  static constexpr bool kScaleAfterMma = kMTiles <= 2;
  // A finishing split-tile part loads the others' sum this many quads per
  // group (finish_tile): the group that no configuration spills with.
  static constexpr int kSumBatch = 8;

  // One pipeline stage: the K-tile's plane words and scale bytes of BLOCK_N rows
  // (contiguous in global memory) and the BLOCK_M x 64 activation tile.
  static constexpr int kWBytes = BLOCK_N * 2 * kBits * 4;
  static constexpr int kSBytes = BLOCK_N * 2;
  static constexpr int kABytes = BLOCK_M * kTileK * 2;
  static constexpr int kStageBytes = kWBytes + kSBytes + kABytes;
  static constexpr int kWOff = 0, kSOff = kWBytes, kAOff = kWBytes + kSBytes;   // sections of a stage

  // Pair table: 4^k entries of two codebook values; kCopies replicas interleaved
  // so lane l reads replica l % kCopies (32 = conflict free; k = 5 uses 8 to
  // stay within 32 KB, at most 4 lanes then share a replica).
  static constexpr int kPairEntries = 1 << (2 * kBits);
  static constexpr int kCopies = kBits <= 4 ? 32 : 8;
  static constexpr bool kRowPairLut = false;   // (the wgmma kernel's k = 2 table, KBIT_WGMMA_ROW_PAIR)
  // At 16-row activation tiles, k <= 4: the decode kernel's table layout,
  // 256-byte rows (32 replicas in the first 128 bytes), so one prmt forms a
  // lookup's address (lookup_pair) instead of a shift and a lop3: the dequant
  // section of a K-tile shrinks from 286 to 238 instructions per warp at k = 4
  // (sm_90a SASS), and Llama-3-70B M = 16 takes 74.5 instead of 82.9 us on an
  // H100 (docs/results.md v16). The table grows to 4 / 16 / 64 KB at k = 2 / 3
  // / 4 and moves to dynamic shared memory (first, so its address is still a
  // constant). Only where the two CTAs per SM that these tiles are sized for
  // still fit on every GPU of the family: k <= 4 on sm_90/sm_100, k = 2 in the
  // sm80 family (100 KB per SM on sm_86/89).
  static constexpr size_t kWideCtaBytes = wide_lut_cta_bytes(kBits, size_t(kStages) * kStageBytes);
  static constexpr bool kWideLut = KBIT_TILED_WIDE_LUT && kMTiles == 2 && kBits <= 4 &&
                                   2 * kWideCtaBytes <= size_t(KBIT_SMEM_PER_SM_KB) * 1024;
  static constexpr int kLutRowWords = kWideLut ? 64 : kCopies;
  static constexpr int kLutBytes = kPairEntries * kLutRowWords * 4;
  static constexpr int kLutShift = kWideLut ? 0 : kCopies == 32 ? 7 : 5;   // log2(kCopies * 4)
  static constexpr int kStaticLutWords = kWideLut ? 1 : kLutBytes / 4;
  static constexpr int kDynLutBytes = kWideLut ? kLutBytes : 0;

  // Dynamic shared memory: (the wide table,) the expert slot table, then the
  // ring. The tables (pair LUT, E4M4, codebook) are static so their addresses
  // are immediates of the shared loads (the LUT is at most 32 KB: under the
  // 48 KB static limit).
  __host__ __device__ static constexpr size_t smem_bytes(int experts) {
    return size_t(kDynLutBytes) + size_t(slot_table_bytes(experts)) + size_t(kStages) * kStageBytes;
  }
  static_assert(kWideLut || kLutBytes <= 32 * 1024, "pair table must stay within static shared memory");

  static_assert(kBits >= 2 && kBits <= 5, "k must be 2..5");
  static_assert(kWBytes % 128 == 0 && kSBytes % 16 == 0 && kABytes % 128 == 0,
                "stage sections must keep 16-byte alignment");
  static_assert(kStages >= 2, "the ring needs at least two stages");
};

// Register budget (min CTAs per SM for __launch_bounds__). Ampere/Ada SMs hold
// at most 164 KB of shared memory, so 3 decode CTAs (72 KB each) never fit
// there: sm_8x code gets the 2-CTA budget (<= 128 registers), and the widest
// activation tile, which ptxas builds with slightly more than 128 registers for
// sm_80, gets 1. sm_90a code fits the configured budgets.
template <class Cfg>
__host__ __device__ constexpr int launch_min_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return Cfg::kMTiles >= 8 ? 1 : (Cfg::kMinBlocks < 2 ? Cfg::kMinBlocks : 2);
#else
  return Cfg::kMinBlocks;
#endif
}

struct KbitParams {
  const void* a;           // [M, K] T, row-major
  const int32_t* b_packed;
  const uint8_t* b_absmax;
  const float* codebook;   // [2^k]
  const int32_t* offsets;  // [E + 1]
  void* c;                 // [M, N] T, row-major
  float* workspace;        // [max_tiles][BLOCK_N * BLOCK_M] fp32 parts of split tiles (finish_tile)
  int32_t* counters;       // [max_tiles] claim counters (finish_tile), zero between launches
  int M, N, K, E;
  int max_tiles;           // capacity of counters / workspace, in tiles
  KbitLayout layout;
};

// ---------------------------------------------------------------------------
// Stage: lookup tables (built once per CTA).
// ---------------------------------------------------------------------------

// Pair index bit order, shared by the table builder and the lookup:
// bit 2b = bit b of the first weight (even k), bit 2b + 1 = bit b of the second.
// Table rows are Cfg::kLutRowWords words: kCopies replicas, or 64 words (32
// replicas, then unused) where Cfg::kWideLut.
template <class Cfg>
__device__ __forceinline__ void build_pair_lut(uint32_t* lut, const float* cb_s, float inv_max,
                                               int tid) {
  using T = typename Cfg::T;
  // Each lane computes one entry; shuffles hand the warp's 32 entries around so
  // every replica word is one store (replicas of an entry are consecutive words).
  const int lane = tid & 31, warp = tid >> 5;
  constexpr int kPerStore = 32 / Cfg::kCopies;   // entries one warp-wide store covers
  for (int base = warp * 32; base < Cfg::kPairEntries; base += Cfg::kWarps * 32) {
    const int idx = base + lane;
    int i0 = 0, i1 = 0;
#pragma unroll
    for (int b = 0; b < Cfg::kBits; ++b) {
      i0 |= ((idx >> (2 * b)) & 1) << b;
      i1 |= ((idx >> (2 * b + 1)) & 1) << b;
    }
    const uint32_t value = idx < Cfg::kPairEntries ? Elem<T>::pack(cb_s[i0] * inv_max, cb_s[i1] * inv_max) : 0u;
#pragma unroll 4
    for (int j = 0; j < 32; j += kPerStore) {
      const int entry = j + lane / Cfg::kCopies;
      const uint32_t v = __shfl_sync(0xffffffffu, value, entry);
      if (base + entry < Cfg::kPairEntries) lut[(base + entry) * Cfg::kLutRowWords + lane % Cfg::kCopies] = v;
    }
  }
}

// Slot table: expert e owns activation slots slot_start[e] .. slot_start[e+1]
// (one per BLOCK_M rows). Returns false (on every thread) if the offsets are
// not a valid partition of 0..M: then the kernel writes NaN instead of
// computing, so bad offsets are loud and never read out of bounds.
// `on_total(S)` runs on thread 0 once the slot count S is known, before the
// final barrier: CTA-wide values derived from S are computed there once and
// published through shared memory (their validity rests on the return value).
struct NoSlotTotal {
  __device__ void operator()(int) const {}
};
template <class Cfg, class OnTotal = NoSlotTotal>
__device__ bool build_slot_table(int* slot_start, int* scratch, const int32_t* offsets, int E,
                                 int M, int tid, OnTotal on_total = {}) {
  const int lane = tid & 31, warp = tid >> 5;
  bool ok = true;
  int carry = 0;
  if (tid == 0) slot_start[0] = 0;
  for (int base = 0; base < E; base += Cfg::kThreads) {
    const int e = base + tid;
    int slots = 0;
    if (e < E) {
      const int lo = __ldg(offsets + e), hi = __ldg(offsets + e + 1);
      ok = ok && hi >= lo && lo >= 0 && hi <= M;
      slots = hi > lo ? cdiv(hi - lo, Cfg::BLOCK_M) : 0;
    }
    int incl = slots;   // inclusive scan over the CTA
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    if (lane == 31) scratch[warp] = incl;
    __syncthreads();
    int warp_prefix = 0, total = 0;
    for (int w = 0; w < Cfg::kWarps; ++w) {
      const int s = scratch[w];
      warp_prefix += w < warp ? s : 0;
      total += s;
    }
    if (e < E) slot_start[e + 1] = carry + warp_prefix + incl;
    carry += total;
    __syncthreads();
  }
  if (tid == 0) {
    on_total(carry);   // (first: it does not depend on the checks)
    const int first = __ldg(offsets), last = __ldg(offsets + E);   // both loads in flight at once
    ok = ok && first == 0 && last == M;
  }
  return __syncthreads_and(ok);
}

// ---------------------------------------------------------------------------
// Stage: locate a unit. Units are numbered u = (nb * S + slot) * k_tiles + kt
// (n-block major, so CTAs working at the same time share weight tiles across
// activation slots in L2).
// ---------------------------------------------------------------------------
struct TilePos {
  int tile;      // nb * S + slot (index of the tile's counter)
  int expert;
  int row0;      // first activation row of the slot
  int rows;      // valid activation rows (<= BLOCK_M)
  int n0;        // first weight row (output column)
};

template <class Cfg>
__device__ __forceinline__ TilePos locate_tile(int tile, int S, const int* slot_start,
                                               const int32_t* offsets, int E) {
  TilePos pos;
  pos.tile = tile;
  const int nb = tile / S, slot = tile - nb * S;
  int lo = 0, hi = E;   // last e with slot_start[e] <= slot (non-empty experts are unique)
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (slot_start[mid] <= slot) lo = mid; else hi = mid;
  }
  const int e = lo;
  const int first = __ldg(offsets + e), last = __ldg(offsets + e + 1);
  pos.expert = e;
  pos.row0 = first + (slot - slot_start[e]) * Cfg::BLOCK_M;
  pos.rows = min(Cfg::BLOCK_M, last - pos.row0);
  pos.n0 = nb * Cfg::BLOCK_N;
  return pos;
}

// A tile's position, for the tiled kernels. A dense layer (E = 1) needs
// neither the slot table nor the offsets: slot s holds rows s * BLOCK_M ..,
// since its offsets must be {0, M} (build_tables checks them before any
// result is stored). So a producer crossing into its next tile issues no
// load: with locate_tile its two offset loads held up the next copies (H100,
// v32: the mma.sync kernel at M = 16, 0.5-1.8 us faster without them).
template <class Cfg>
__device__ __forceinline__ TilePos locate(const KbitParams& p, int tile, int S, const int* slot_start) {
  if (p.E != 1) return locate_tile<Cfg>(tile, S, slot_start, p.offsets, p.E);
  TilePos pos;
  pos.tile = tile;
  const int nb = tile / S, slot = tile - nb * S;
  pos.expert = 0;
  pos.row0 = slot * Cfg::BLOCK_M;
  pos.rows = min(Cfg::BLOCK_M, p.M - pos.row0);
  pos.n0 = nb * Cfg::BLOCK_N;
  return pos;
}

// ---------------------------------------------------------------------------
// Stage: load one K-tile of one tile into a ring slot (whole CTA, cp.async).
// ---------------------------------------------------------------------------
// The weight side of a producer's position: the plane words and scale bytes
// of the tile's row block n0 at K-tile kt, advanced by a constant stride per
// K-tile (the layout's K-tiles of one expert are N_pad rows apart).
template <class Cfg>
struct WeightCursor {
  const char* w_src;      // plane words (byte pointer)
  const char* s_src;      // scale bytes
  int kt;

  // Points at K-tile kt0 of the tile at pos; returns how many of its BLOCK_N
  // rows exist in memory (fewer than BLOCK_N in the last n-block only).
  __device__ __forceinline__ int seek(const KbitParams& p, const TilePos& pos, int kt0) {
    const KbitLayout& L = p.layout;
    kt = kt0;
    w_src = reinterpret_cast<const char*>(p.b_packed + L.packed_row(pos.expert, kt0, pos.n0));
    s_src = reinterpret_cast<const char*>(p.b_absmax + L.absmax_row(pos.expert, kt0, pos.n0));
    return min(Cfg::BLOCK_N, L.n_pad - pos.n0);
  }
  __device__ __forceinline__ void next_k(const KbitParams& p) {
    const KbitLayout& L = p.layout;
    ++kt;
    w_src += size_t(L.n_pad) * 8 * Cfg::kBits;
    s_src += size_t(L.n_pad) * 2;
  }
};

// The cp.async producer's position: the weight cursor plus this thread's
// activation sources and predicates for the current tile (the activations
// advance 64 elements per K-tile). Every thread copies its 16-byte chunks.
template <class Cfg>
struct LoadCursor : WeightCursor<Cfg> {
  static constexpr bool kCommitGroups = true;   // one cp.async group per stage
  static constexpr int kWChunks = cdiv(Cfg::kWBytes / 16, Cfg::kThreads);   // per thread
  static constexpr int kAChunks = cdiv(Cfg::BLOCK_M * 8, Cfg::kThreads);
  using WeightCursor<Cfg>::w_src;
  using WeightCursor<Cfg>::s_src;
  using WeightCursor<Cfg>::kt;
  const char* a_src[kAChunks];
  uint32_t w_ok;          // bit i: weight chunk i of this thread exists in memory
  bool s_ok;
  uint32_t a_ok;          // bit i: activation chunk i lies in a valid row
  int a_ch[kAChunks];     // its 16-byte column chunk (0..7)

  __device__ __forceinline__ void start(const KbitParams& p, const TilePos& pos, int kt0, int tid) {
    // Weight rows past N_pad do not exist in memory (last n-block only): zero-filled.
    const int rows_in_mem = this->seek(p, pos, kt0);
    w_ok = 0;
#pragma unroll
    for (int i = 0; i < kWChunks; ++i)
      w_ok |= uint32_t((i * Cfg::kThreads + tid) * 16 < min(Cfg::kWBytes, rows_in_mem * 8 * Cfg::kBits)) << i;
    s_ok = tid * 16 < rows_in_mem * 2;
    const char* a = static_cast<const char*>(p.a);
    a_ok = 0;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int idx = i * Cfg::kThreads + tid, r = idx >> 3;
      a_ch[i] = idx & 7;
      const bool ok = idx < Cfg::BLOCK_M * 8 && r < pos.rows;
      a_ok |= uint32_t(ok) << i;
      a_src[i] = ok ? a + (size_t(pos.row0 + r) * p.K + size_t(kt0) * kTileK + a_ch[i] * 8) * sizeof(typename Cfg::T) : a;
    }
  }

  __device__ __forceinline__ void advance(const KbitParams& p) {
    this->next_k(p);
#pragma unroll
    for (int i = 0; i < kAChunks; ++i)
      if (a_ok >> i & 1) a_src[i] += kTileK * sizeof(typename Cfg::T);
  }

  // Issue the copies of the current K-tile into a ring slot (whole CTA).
  // Activation chunk c of row r goes to chunk c ^ (r % 8) of the row so that
  // ldmatrix's eight row reads hit eight different bank groups; rows past the
  // slot and columns past K (the upper half tile when K % 64 == 32) read zero.
  __device__ __forceinline__ void issue(const KbitParams& p, int tid, uint8_t* stage) const {
    const uint32_t s = ptx::smem_u32(stage);
#pragma unroll
    for (int i = 0; i < kWChunks; ++i) {
      const int off = (i * Cfg::kThreads + tid) * 16;
      if (Cfg::kWBytes % (16 * Cfg::kThreads) == 0 || off < Cfg::kWBytes) {
        const bool ok = w_ok >> i & 1;
        ptx::cp_async_cg16(s + Cfg::kWOff + off, ok ? w_src + off : w_src, ok ? 16u : 0u);
      }
    }
    if (tid < Cfg::kSBytes / 16)
      ptx::cp_async_cg16(s + Cfg::kSOff + tid * 16, s_ok ? s_src + tid * 16 : s_src, s_ok ? 16u : 0u);
    const int valid_chunks = min(kTileK, p.K - kt * kTileK) / 8;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int idx = i * Cfg::kThreads + tid;
      if ((Cfg::BLOCK_M * 8) % Cfg::kThreads == 0 || idx < Cfg::BLOCK_M * 8) {
        const int r = idx >> 3;
        const bool ok = (a_ok >> i & 1) && a_ch[i] < valid_chunks;
        ptx::cp_async_cg16(s + Cfg::kAOff + r * 128 + ((a_ch[i] ^ (r & 7)) << 4), a_src[i],
                           ok ? 16u : 0u);
      }
    }
  }
};

// ---------------------------------------------------------------------------
// Stage: dequantize. Thread t = lane % 4 of a row's quad owns, in every 32-block,
// the weights 2t + 8i and 2t + 8i + 1 (i = 0..3): exactly the A-fragment
// registers of the block's two k16 MMAs (i = 2h + {0, 1}, h = MMA step).
// ---------------------------------------------------------------------------
template <int kBits>
__device__ __forceinline__ void load_planes(uint32_t (&p)[kBits], const uint32_t* s) {
  if constexpr (kBits == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(s);
    p[0] = v.x; p[1] = v.y; p[2] = v.z; p[3] = v.w;
  } else if constexpr (kBits == 2) {
    const uint2 v = *reinterpret_cast<const uint2*>(s);
    p[0] = v.x; p[1] = v.y;
  } else {
#pragma unroll
    for (int b = 0; b < kBits; ++b) p[b] = s[b];
  }
}
// The plane words of 32-block blk of rows r (pa) and r + 8 (pb) in a stage's
// words w_s (each row's two blocks of kBits words in a row).
template <int kBits>
__device__ __forceinline__ void load_block_planes(uint32_t (&pa)[kBits], uint32_t (&pb)[kBits], const uint32_t* w_s,
                                                  int r, int blk) {
  load_planes<kBits>(pa, w_s + (r * 2 + blk) * kBits);
  load_planes<kBits>(pb, w_s + ((r + 8) * 2 + blk) * kBits);
}

// The pair index of pair i, 2k bits interleaved (see build_pair_lut), is needed
// as a byte offset into the table: idx * kCopies * 4 + (lane % kCopies) * 4. The
// planes are rotated so that pair i's bits land directly at byte-offset position,
// idx << kShift with kShift = log2(kCopies * 4), in byte i of the word (rotated
// left by kShift): one shift and one lop3 (mask, OR lane offset) per lookup.
template <int kBits, int kShift>
struct PairWord {
  uint32_t lo;   // index bits 0..7 of the four pairs
  uint32_t hi;   // k = 5: index bits 8..9
};

template <int kBits, int kShift>
__device__ __forceinline__ PairWord<kBits, kShift> pair_word(const uint32_t (&p)[kBits],
                                                             const uint32_t (&rot)[5]) {
  // rot[b] = (2t - 2b - kShift) mod 32: plane b's two bits of pair i move from
  // 2t + 8i to 8i + 2b + kShift (mod 32). Masks select those bits; merging by
  // bit-select (lop3 0xE4: (a & c) | (b & ~c)); for k < 4 the unused positions
  // keep stale bits, which the lookup's mask never reads.
  constexpr uint32_t M = 0x03030303u;
  auto mask = [](int b) { return (M << ((2 * b + kShift) & 31)) | (M >> ((32 - 2 * b - kShift) & 31)); };
  PairWord<kBits, kShift> w;
  w.lo = ptx::rotr(p[0], rot[0]);
#pragma unroll
  for (int b = 1; b < (kBits < 4 ? kBits : 4); ++b) w.lo = ptx::lop3<0xE4>(ptx::rotr(p[b], rot[b]), w.lo, mask(b));
  w.hi = 0;
  if constexpr (kBits == 5) w.hi = ptx::rotr(p[4], rot[4]) & mask(4);   // bits 8, 9 at 8i + 8 + kShift
  return w;
}

// The rotations pair_word needs for this lane (t = lane % 4), table shift of Cfg.
template <class Cfg>
__device__ __forceinline__ void pair_rotations(uint32_t (&rot)[5], int lane) {
#pragma unroll
  for (int b = 0; b < 5; ++b) rot[b] = uint32_t(2 * (lane & 3) - 2 * (b & 3) - (b == 4 ? 8 : 0) - Cfg::kLutShift) & 31u;
}

// prmt selector of a 256-byte-row table address (the decode kernel's tables
// and the wide pair table): byte 0 = the lane word's byte 0 (replica offset),
// byte 1 = byte i of the index word, bytes 2, 3 = the lane word's zero byte 1.
__host__ __device__ constexpr uint32_t lut_sel(int i) { return 0x5504u | (uint32_t(i) << 4); }

template <class Cfg, int kPair, int kShift>
__device__ __forceinline__ uint32_t lookup_pair(const uint8_t* lut, uint32_t lane_off,
                                                const PairWord<Cfg::kBits, kShift>& w) {
  if constexpr (Cfg::kWideLut) {
    // Byte kPair of the index word (k < 4: its upper bits are stale) in byte 1
    // of the address, the lane's replica offset (lane * 4 < 128) in byte 0.
    constexpr uint32_t kClean = Cfg::kBits == 4 ? 0xFFFFFFFFu : Cfg::kBits == 3 ? 0x3F3F3F3Fu : 0x0F0F0F0Fu;
    const uint32_t idx = Cfg::kBits == 4 ? w.lo : w.lo & kClean;
    return ptx::ld_shared_const_u32(ptx::smem_u32(lut) + ptx::prmt(idx, lane_off, lut_sel(kPair)));
  }
  constexpr int kIdxBits = 2 * (Cfg::kBits < 4 ? Cfg::kBits : 4);
  constexpr uint32_t kMask = ((1u << kIdxBits) - 1) << kShift;
  // byte i sits at 8i + kShift (mod 32): rotate right by 8i.
  uint32_t off = ptx::lop3<0xEA>(kPair ? ptx::rotr(w.lo, 8 * kPair) : w.lo, kMask, lane_off);   // (a & b) | c
  if constexpr (Cfg::kBits == 5) {
    constexpr uint32_t kHiMask = 3u << (8 + kShift);
    off = ptx::lop3<0xEA>(kPair ? ptx::rotr(w.hi, 8 * kPair) : w.hi, kHiMask, off);
  }
  return *reinterpret_cast<const uint32_t*>(lut + off);
}

// ---------------------------------------------------------------------------
// Stage: multiply-accumulate one K-tile held in a ring slot.
// acc[nt][mt] is the 16 (n) x 8 (m) tile: rows n = g, g + 8, columns m = 2t, 2t + 1.
// ---------------------------------------------------------------------------
// One 32-block (blk) of rows r and r + 8 of a stage: the A fragments of its
// two k16 MMA steps, frag[h], and the block's scales of the two rows. With
// kScaled the scales are multiplied into the fragments (T arithmetic), else
// the caller applies them to the fp32 partial sums. dequant_block_planes
// takes the block's plane words of the two rows (pa, pb) already in
// registers; dequant_block loads them from the stage's words w_s first.
template <class Cfg, bool kScaled, bool kScalePairs = false>
__device__ __forceinline__ void dequant_block_planes(uint32_t (&frag)[2][4], float (&scale)[2],
                                                     const uint32_t (&pa)[Cfg::kBits], const uint32_t (&pb)[Cfg::kBits],
                                                     uint32_t sbyte_a, uint32_t sbyte_b, int blk, const uint8_t* lut,
                                                     uint32_t lane_off, const float* e4m4, const uint32_t (&rot)[5]) {
  constexpr int kShift = Cfg::kLutShift;
  using T = typename Cfg::T;
  if constexpr (Cfg::kRowPairLut) {
    // k = 2, row-pair table: the planes of rows r and r + 8 as k = 4's four;
    // byte i of q indexes pair i of both rows, one 64-bit entry (x: row r).
    const uint32_t planes[4] = {pa[0], pa[1], pb[0], pb[1]};
    const uint32_t q = pair_word<4, 0>(planes, rot).lo;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint2 v = ptx::ld_shared_const_v2_u32(ptx::smem_u32(lut) + ptx::prmt(q, lane_off, lut_sel(i)));
      frag[i >> 1][(i & 1) * 2] = v.x;
      frag[i >> 1][(i & 1) * 2 + 1] = v.y;
    }
  } else {
    const auto xa = pair_word<Cfg::kBits, kShift>(pa, rot);
    const auto xb = pair_word<Cfg::kBits, kShift>(pb, rot);
    frag[0][0] = lookup_pair<Cfg, 0>(lut, lane_off, xa);
    frag[0][1] = lookup_pair<Cfg, 0>(lut, lane_off, xb);
    frag[0][2] = lookup_pair<Cfg, 1>(lut, lane_off, xa);
    frag[0][3] = lookup_pair<Cfg, 1>(lut, lane_off, xb);
    frag[1][0] = lookup_pair<Cfg, 2>(lut, lane_off, xa);
    frag[1][1] = lookup_pair<Cfg, 2>(lut, lane_off, xb);
    frag[1][2] = lookup_pair<Cfg, 3>(lut, lane_off, xa);
    frag[1][3] = lookup_pair<Cfg, 3>(lut, lane_off, xb);
  }
  // scale bytes -> byte offsets into the float table (x4), block blk's byte
  scale[0] = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(e4m4) +
                                             ((blk ? sbyte_a >> 6 : sbyte_a << 2) & 0x3FCu));
  scale[1] = *reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(e4m4) +
                                             ((blk ? sbyte_b >> 6 : sbyte_b << 2) & 0x3FCu));
  static_assert(kScaled || !kScalePairs, "a pair table holds no float scales");
  if constexpr (kScaled) {
    // (kScalePairs: the table's words are the pairs already; scale[] are not floats.)
    const uint32_t sa = kScalePairs ? __float_as_uint(scale[0]) : Elem<T>::pack(scale[0], scale[0]);
    const uint32_t sb = kScalePairs ? __float_as_uint(scale[1]) : Elem<T>::pack(scale[1], scale[1]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      frag[h][0] = Elem<T>::mul2(frag[h][0], sa);
      frag[h][1] = Elem<T>::mul2(frag[h][1], sb);
      frag[h][2] = Elem<T>::mul2(frag[h][2], sa);
      frag[h][3] = Elem<T>::mul2(frag[h][3], sb);
    }
  }
}
template <class Cfg, bool kScaled, bool kScalePairs = false>
__device__ __forceinline__ void dequant_block(uint32_t (&frag)[2][4], float (&scale)[2], const uint32_t* w_s,
                                              uint32_t sbyte_a, uint32_t sbyte_b, int r, int blk,
                                              const uint8_t* lut, uint32_t lane_off, const float* e4m4,
                                              const uint32_t (&rot)[5]) {
  uint32_t pa[Cfg::kBits], pb[Cfg::kBits];
  load_block_planes<Cfg::kBits>(pa, pb, w_s, r, blk);
  dequant_block_planes<Cfg, kScaled, kScalePairs>(frag, scale, pa, pb, sbyte_a, sbyte_b, blk, lut, lane_off, e4m4,
                                                  rot);
}

// Scale bytes (both blocks of the K-tile) of weight row r of a stage.
template <class Cfg>
__device__ __forceinline__ uint32_t scale_bytes(const uint8_t* stage, int r) {
  return *reinterpret_cast<const uint16_t*>(stage + Cfg::kSOff + 2 * r);
}

template <class Cfg>
__device__ __forceinline__ void mma_stage(float (&acc)[Cfg::kNT][Cfg::kMTiles][4], const uint8_t* stage,
                                          const uint8_t* lut, uint32_t lane_off, const float* e4m4,
                                          const uint32_t (&rot)[5], int warp, int lane) {
  using T = typename Cfg::T;
  const int g = lane >> 2;
  const uint32_t* w_s = reinterpret_cast<const uint32_t*>(stage + Cfg::kWOff);
  const uint32_t a_s = ptx::smem_u32(stage + Cfg::kAOff);

  uint32_t sbytes[Cfg::kNT][2];
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
    const int r = warp * 16 * Cfg::kNT + nt * 16 + g;
    sbytes[nt][0] = scale_bytes<Cfg>(stage, r);
    sbytes[nt][1] = scale_bytes<Cfg>(stage, r + 8);
  }

#pragma unroll
  for (int blk = 0; blk < 2; ++blk) {
    // Dequantized A fragments of both k16 steps for every 16-row tile.
    uint32_t frag[Cfg::kNT][2][4];
    float scale[Cfg::kNT][2];
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
      dequant_block<Cfg, !Cfg::kScaleAfterMma>(frag[nt], scale[nt], w_s, sbytes[nt][0], sbytes[nt][1],
                                               warp * 16 * Cfg::kNT + nt * 16 + g, blk, lut, lane_off, e4m4, rot);
#pragma unroll
    for (int mt = 0; mt < Cfg::kMTiles; ++mt) {
      // B fragments of the block: matrix j = rows mt*8.., k 8j.. (logical chunk blk*4 + j).
      uint32_t bf[4];
      {
        const int r = mt * 8 + (lane & 7), ch = blk * 4 + (lane >> 3);
        ptx::ldmatrix_x4(bf, a_s + r * 128 + ((ch ^ (r & 7)) << 4));
      }
#pragma unroll
      for (int nt = 0; nt < Cfg::kNT; ++nt) {
        if constexpr (Cfg::kScaleAfterMma) {
          const float zero[4] = {0.f, 0.f, 0.f, 0.f};
          float part[4];
          ptx::mma_m16n8k16<T>(part, frag[nt][0], bf[0], bf[1], zero);
          ptx::mma_m16n8k16<T>(part, frag[nt][1], bf[2], bf[3], part);
          acc[nt][mt][0] = fmaf(scale[nt][0], part[0], acc[nt][mt][0]);
          acc[nt][mt][1] = fmaf(scale[nt][0], part[1], acc[nt][mt][1]);
          acc[nt][mt][2] = fmaf(scale[nt][1], part[2], acc[nt][mt][2]);
          acc[nt][mt][3] = fmaf(scale[nt][1], part[3], acc[nt][mt][3]);
        } else {
          ptx::mma_m16n8k16<T>(acc[nt][mt], frag[nt][0], bf[0], bf[1], acc[nt][mt]);
          ptx::mma_m16n8k16<T>(acc[nt][mt], frag[nt][1], bf[2], bf[3], acc[nt][mt]);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Stage: drain. Full tiles go straight to C; split tiles through the workspace.
// ---------------------------------------------------------------------------
// value(nt, mt, q) gives the fp32 sum of this thread's accumulator element q of
// tile (nt, mt), in the m16n8 accumulator layout (rows n = g, g + 8, columns
// m = 2t, 2t + 1); it is scaled, converted and written where it lies in C.
template <class Cfg, class Value>
__device__ __forceinline__ void store_tile(const KbitParams& p, const TilePos& pos, float out_scale, int warp,
                                           int lane, const Value& value) {
  using T = typename Cfg::T;
  T* c = static_cast<T*>(p.c);
  const int g = lane >> 2, t = lane & 3;
  if ((p.N & 1) == 0) {
    // Column pairs as one 4-byte store (N even: every pair is aligned). Lanes
    // l and l ^ 4 hold columns n, n + 1 (n even) of rows 2t and 2t + 1; one
    // shuffle hands the even lane row 2t, the odd lane row 2t + 1. Predicated
    // stores, no branches: this code runs a few times per CTA, mostly cold.
    const int odd = g & 1;
    const int n0 = pos.n0 + warp * 16 * Cfg::kNT + g - odd;
    const int m0 = 2 * t + odd;
    T* base = c + size_t(pos.row0 + m0) * p.N + n0;
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int mt = 0; mt < Cfg::kMTiles; ++mt) {
        const float v0 = value(nt, mt, 0), v1 = value(nt, mt, 1), v2 = value(nt, mt, 2), v3 = value(nt, mt, 3);
        const float r0 = __shfl_xor_sync(0xffffffffu, odd ? v0 : v1, 4);
        const float r1 = __shfl_xor_sync(0xffffffffu, odd ? v2 : v3, 4);
        const bool row_ok = mt * 8 + m0 < pos.rows;
        const int n = n0 + nt * 16;
        T* at = base + size_t(mt * 8) * p.N + nt * 16;
        ptx::st_global_pred_b32(at, Elem<T>::pack((odd ? r0 : v0) * out_scale, (odd ? v1 : r0) * out_scale),
                                row_ok && n < p.N);
        ptx::st_global_pred_b32(at + 8, Elem<T>::pack((odd ? r1 : v2) * out_scale, (odd ? v3 : r1) * out_scale),
                                row_ok && n + 8 < p.N);
      }
    return;
  }
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
#pragma unroll
    for (int mt = 0; mt < Cfg::kMTiles; ++mt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int n = pos.n0 + warp * 16 * Cfg::kNT + nt * 16 + g + (q >> 1) * 8;
        const int m = mt * 8 + 2 * t + (q & 1);
        const float v = value(nt, mt, q);
        if (m < pos.rows && n < p.N) c[size_t(pos.row0 + m) * p.N + n] = Elem<T>::from_float(v * out_scale);
      }
    }
  }
}

// Bytes of shared memory store_tile_staged needs: the tile as BLOCK_M rows of
// BLOCK_N values, each row padded by 16 bytes (8 consecutive rows then fall in
// different banks for stmatrix).
template <class Cfg>
__host__ __device__ constexpr int staged_tile_bytes() {
  return Cfg::BLOCK_M * (Cfg::BLOCK_N * 2 + 16);
}

// The same stores as store_tile, through shared memory at `stage` (shared
// address stage_s; staged_tile_bytes, free for the CTA's threads that hold
// accumulators): stmatrix writes the tile row by row (activation rows, weight
// columns contiguous), then every thread copies 16-byte pieces of the rows to
// C. Each warp instruction writes whole 128-byte lines, where store_tile's
// 4-byte stores write 8 rows x 16 bytes: at the end of a share, when every CTA
// stores at once, those half-sector writes cost the finishing CTAs 2-4 us.
// Needs N % 8 == 0 (16-byte rows) and an even kMTiles; `sync` orders the
// threads' use of the area (and their earlier reads of it: the caller's
// ring).
template <class Cfg, class Sync, class Value>
__device__ __forceinline__ void store_tile_staged(const KbitParams& p, const TilePos& pos, float out_scale, int warp,
                                                  int lane, int tid, uint8_t* stage, uint32_t stage_s, Sync sync,
                                                  const Value& value) {
#if defined(KBIT_HAS_STMATRIX)
  using T = typename Cfg::T;
  constexpr int kPitch = Cfg::BLOCK_N * 2 + 16, kChunks = Cfg::BLOCK_N / 8;
  static_assert(Cfg::kMTiles % 2 == 0, "stmatrix.x4 takes two 8-row groups");
  sync();   // every thread is done with the area's previous contents
  const int i = lane >> 3, col = lane & 7;
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
    for (int mt = 0; mt < Cfg::kMTiles; mt += 2) {
      const int m = (mt + (i >> 1)) * 8 + col, n = warp * 16 * Cfg::kNT + nt * 16 + (i & 1) * 8;
      ptx::stmatrix_x4_trans(stage_s + m * kPitch + n * 2,
                             Elem<T>::pack(value(nt, mt, 0) * out_scale, value(nt, mt, 1) * out_scale),
                             Elem<T>::pack(value(nt, mt, 2) * out_scale, value(nt, mt, 3) * out_scale),
                             Elem<T>::pack(value(nt, mt + 1, 0) * out_scale, value(nt, mt + 1, 1) * out_scale),
                             Elem<T>::pack(value(nt, mt + 1, 2) * out_scale, value(nt, mt + 1, 3) * out_scale));
    }
  sync();
  const int chunks = min(kChunks, (p.N - pos.n0) / 8);
  T* c = static_cast<T*>(p.c) + size_t(pos.row0) * p.N + pos.n0;
#pragma unroll 4
  for (int x = tid; x < Cfg::BLOCK_M * kChunks; x += Cfg::kThreads) {
    const int m = x / kChunks, k = x % kChunks;
    if (m < pos.rows && k < chunks)
      *reinterpret_cast<uint4*>(c + size_t(m) * p.N + k * 8) =
          *reinterpret_cast<const uint4*>(stage + m * kPitch + k * 16);
  }
#endif
}

template <class Cfg>
__device__ __forceinline__ void zero_acc(float (&acc)[Cfg::kNT][Cfg::kMTiles][4]) {
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
    for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[nt][mt][q] = 0.f;
}

// Where thread tid's accumulator quad (nt, mt) sits in a workspace slot. The
// slot is private to the split-tile protocol (every part is written and read
// by the same Cfg, so the same thread holds the same elements), so it
// is laid out by thread, not by (n, m): a warp's quads are 512 contiguous
// bytes, added by one vector reduction per quad and read back by 16-byte loads.
template <class Cfg>
__device__ __forceinline__ int ws_quad(int tid, int nt, int mt) {
  return ((nt * Cfg::kMTiles + mt) * Cfg::kThreads + tid) * 4;
}

// ---------------------------------------------------------------------------
// Stages shared by the tiled kernels (this one and the sm90 wgmma kernel).
// ---------------------------------------------------------------------------

// Per-CTA tables: codebook, E4M4 table, expert slot table, pair table. Returns
// the codebook's largest magnitude (the pair table is normalized by it), or a
// negative value when the offsets are not a partition of the rows or need more
// tiles than the host sized the counters for: C is then NaN-filled (loud, and
// nothing else is touched) and the CTA must return.
//
// A dense layer's slot table needs no scan: one slot per BLOCK_M rows, if its
// offsets are {0, M} (one load each, beside the codebook's), so the set-up has
// one barrier and no dependent loads. Measured level with the scan (H100, v32:
// within 0.3 us on six layers); KBIT_DENSE_SETUP=0 restores the scan.
#ifndef KBIT_DENSE_SETUP
#define KBIT_DENSE_SETUP 1
#endif
// kScalePairs: e4m4[i] holds scale code i as a ready T pair (its bits), for
// dequant_block_planes<..., true>.
template <class Cfg, bool kScalePairs = false>
__device__ float build_tables(uint32_t* lut, float* e4m4, float* cb_s, int* scratch, int* slot_start,
                              const KbitParams& p, int tid) {
  using T = typename Cfg::T;
  constexpr int kLevels = 1 << Cfg::kBits;
  if (tid < kLevels) cb_s[tid] = __ldg(p.codebook + tid);
  for (int i = tid; i < 256; i += Cfg::kThreads)
    e4m4[i] = kScalePairs ? __uint_as_float(Elem<T>::pack(e4m4_decode(i), e4m4_decode(i))) : e4m4_decode(i);
  bool offsets_ok;
  if (KBIT_DENSE_SETUP && p.E == 1) {
    bool ok = true;
    if (tid == 0) {
      ok = __ldg(p.offsets) == 0 && __ldg(p.offsets + 1) == p.M;
      slot_start[0] = 0;
      slot_start[1] = cdiv(p.M, Cfg::BLOCK_M);
    }
    offsets_ok = __syncthreads_and(ok);
  } else {
    offsets_ok = build_slot_table<Cfg>(slot_start, scratch, p.offsets, p.E, p.M, tid);
  }
  // (Both end with a barrier, so cb_s is visible here.)
  float cb_max = 0.f;
#pragma unroll
  for (int i = 0; i < kLevels; ++i) cb_max = fmaxf(cb_max, fabsf(cb_s[i]));
  if (!(cb_max > 0.f)) cb_max = 1.f;     // all-zero codebook
  if constexpr (Cfg::kRowPairLut) Cfg::template build_row_pair_lut<Cfg::kThreads>(lut, cb_s, 1.f / cb_max, tid);
  else build_pair_lut<Cfg>(lut, cb_s, 1.f / cb_max, tid);
  __syncthreads();
  if (!offsets_ok || (long long)slot_start[p.E] * cdiv(p.N, Cfg::BLOCK_N) > p.max_tiles) {
    T* c = static_cast<T*>(p.c);
    const size_t total = size_t(p.M) * p.N;
    for (size_t i = size_t(blockIdx.x) * Cfg::kThreads + tid; i < total; i += size_t(gridDim.x) * Cfg::kThreads)
      c[i] = Elem<T>::from_float(__int_as_float(0x7fc00000));
    return -1.f;
  }
  return cb_max;
}

// This CTA's share of the units (stream-K): units u_begin .. u_end of U, split
// evenly over G CTAs. At least kMinUnits units per CTA: the pipeline gets a
// few K-tiles to overlap, and a tile is split between at most
// k_tiles / kMinUnits + 1 CTAs. Empty (u_begin == u_end) for CTAs past G.
struct StreamKShare {
  long long U, G;
  int u_begin, u_end;
  int S, k_tiles;   // activation slots, K-tiles per tile

  template <class Cfg>
  __device__ __forceinline__ static StreamKShare of(const KbitParams& p, const int* slot_start) {
    constexpr int kMinUnits = 2;
    StreamKShare sh;
    // S comes from shared memory: redux.sync hands it (and what follows from
    // it) to the compiler as warp-uniform, so the loops over the share are
    // uniform branches (wgmma must not sit in a possibly divergent path).
    sh.S = int(__reduce_max_sync(0xffffffffu, uint32_t(slot_start[p.E])));
    sh.k_tiles = p.layout.k_tiles;
    sh.U = (long long)sh.S * cdiv(p.N, Cfg::BLOCK_N) * sh.k_tiles;
    sh.G = max(1ll, min((long long)gridDim.x, sh.U / kMinUnits));
    sh.u_begin = sh.u_end = 0;
    if ((long long)blockIdx.x >= sh.G) return sh;
    sh.u_begin = int((long long)blockIdx.x * sh.U / sh.G);
    sh.u_end = int((long long)(blockIdx.x + 1) * sh.U / sh.G);
    return sh;
  }
  // Does this CTA own all of the tile?
  __device__ __forceinline__ bool owns(int tile) const {
    const int u0 = tile * k_tiles;
    return u0 >= u_begin && u0 + k_tiles <= u_end;
  }
  // The CTAs holding the tile's first and last unit.
  __device__ __forceinline__ int first_cta(int tile) const {
    return int(((long long)(tile * k_tiles + 1) * G - 1) / U);
  }
  __device__ __forceinline__ int last_cta(int tile) const {
    return int(((long long)(tile + 1) * k_tiles * G - 1) / U);
  }
};

// The copy side of the ring: walks the share's units in order and issues one
// per call through the Cursor (LoadCursor: every thread's cp.async chunks and
// a commit group per call, empty past the share's end; the wgmma kernel's
// TmaCursor: one thread's bulk copies). `dst` is where the Cursor's issue
// puts the stage (a ring slot, and for the TMA cursor its mbarrier).
template <class Cfg, class Cursor = LoadCursor<Cfg>>
struct Producer {
  int ld_u;
  TilePos ld_pos;
  Cursor cur;

  __device__ __forceinline__ void start(const KbitParams& p, const StreamKShare& sh, const int* slot_start, int tid) {
    ld_u = sh.u_begin;
    ld_pos = locate<Cfg>(p, sh.u_begin / sh.k_tiles, sh.S, slot_start);
    cur.start(p, ld_pos, sh.u_begin % sh.k_tiles, tid);
  }
  template <class Params, class... Dst>
  __device__ __forceinline__ void produce(const Params& p, const StreamKShare& sh, const int* slot_start, int tid,
                                          Dst... dst) {
    if (ld_u < sh.u_end) {
      cur.issue(p, tid, dst...);
      if (++ld_u < sh.u_end) {
        if (cur.kt + 1 == sh.k_tiles) {
          ld_pos = locate<Cfg>(p, ld_pos.tile + 1, sh.S, slot_start);
          cur.start(p, ld_pos, 0, tid);
        } else {
          cur.advance(p);
        }
      }
    }
    if constexpr (Cursor::kCommitGroups) ptx::cp_async_commit();
  }
};

// The barrier of the threads that hold accumulators, for finish_tile: the
// whole CTA, unless a kernel has warps that run a loop of their own (the wgmma
// kernel's copy warp: MmaWarpsSync).
struct CtaSync {
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
};

// A tile (or this CTA's part of it) is finished: a whole tile (`owns`: all of
// it is this CTA's, sh.owns) goes straight to C. A tile split between CTAs
// goes through its fp32 workspace slot and its counter, by claims: thread 0
// claims a place among the tile's parts (bits 15..0 of the counter count
// claims, bits 31..16 published parts), and the place gives the part's role:
// * the first stores its part (the workspace is never zeroed) and publishes
//   it (release);
// * a middle one waits until the first is published, adds its part (vector
//   reductions) and publishes it;
// * the last waits until every other part is published (acquire), adds their
//   sum to its own part, which stayed in registers, stores C, and zeroes the
//   counter for the next launch.
// A part waits only for parts claimed before its own, whose CTAs are running
// and wait for nothing but a first part, which waits for nothing: no
// deadlock, whatever the CTA scheduling. The last part adds no reductions of
// its own and zeroes no workspace, which every CTA did at the end of its share
// with the protocol before (each its part's adds, the last a read and the
// zeroing; H100: 70B M = 64 -10 %, results.md v33). The summation order
// (hence the last bits of the fp32 sum) varies between runs. `sync` is the
// barrier of the threads that hold accumulators; role_s a shared int;
// `stage` / `stage_s`: an area for store_tile_staged, or none.
template <class Cfg, class Sync = CtaSync>
__device__ __forceinline__ void finish_tile(const KbitParams& p, const StreamKShare& sh, const TilePos& pos,
                                            bool owns, float (&acc)[Cfg::kNT][Cfg::kMTiles][4], float out_scale,
                                            int* role_s, int tid, int warp, int lane, Sync sync = {},
                                            uint8_t* stage = nullptr, uint32_t stage_s = 0) {
  // Opaque indices: the epilogue's per-thread offsets are computed here, not
  // hoisted into the main loop, where they held ~60 registers for the whole
  // kernel (the wgmma kernel's 64-row tile spilled).
  warp = ptx::opaque_int(warp);
  lane = ptx::opaque_int(lane);
  // C from the accumulators: staged through shared memory where the caller
  // gives an area (the wgmma kernel, at its share's last tile), else directly.
  auto store = [&] {
    const auto value = [&](int nt, int mt, int q) { return acc[nt][mt][q]; };
    if constexpr (Cfg::kMTiles % 2 == 0)
      if (stage != nullptr && (p.N & 7) == 0) {
        store_tile_staged<Cfg>(p, pos, out_scale, warp, lane, tid, stage, stage_s, sync, value);
        return;
      }
    store_tile<Cfg>(p, pos, out_scale, warp, lane, value);
  };
  if (owns) {
    store();
    return;
  }
  const int t = ptx::opaque_int(tid);
  float* ws = p.workspace + size_t(pos.tile) * (Cfg::BLOCK_N * Cfg::BLOCK_M);
  int* ctr = p.counters + pos.tile;
  if (tid == 0) {
    const int others = sh.last_cta(pos.tile) - sh.first_cta(pos.tile);
    const int place = ptx::atom_add_relaxed_gpu(ctr, 1) & 0xffff;
    if (place > 0)   // the first part (for a middle one), or every other
      while ((ptx::ld_acquire_gpu(ctr) >> 16) < (place < others ? 1 : others)) {
      }
    *role_s = place == 0 ? 0 : place < others ? 1 : 2;
  }
  sync();   // thread 0's claim and acquire, before the CTA's accesses
  const int role = *role_s;
  KBIT_EPI_MARK(1, kbit_mark_now());
  if (role < 2) {
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int mt = 0; mt < Cfg::kMTiles; ++mt)
        ptx::st_or_red_f32x4(ws + ws_quad<Cfg>(t, nt, mt), acc[nt][mt][0], acc[nt][mt][1], acc[nt][mt][2],
                             acc[nt][mt][3], role == 1);
    sync();   // the CTA's stores or adds, before thread 0's release
    if (tid == 0) ptx::red_add_release_gpu(ctr, 1 << 16);
    KBIT_EPI_MARK(2, kbit_mark_now());
    return;
  }
  KBIT_EPI_MARK(2, kbit_mark_now());
  // The others' sum, added to this part (which stays in registers), in
  // groups of Cfg::kSumBatch quads (ptxas schedules the loads). The group
  // size is the one with which no configuration spills: 8 for the mma.sync
  // kernel (4 spills on sm_100a), 4 for the wgmma kernel (8, or each group
  // made to wait for the previous one, spills some three-tile ones).
  constexpr int kQuads = Cfg::kNT * Cfg::kMTiles, kBatch = Cfg::kSumBatch;
  const float* base = ws + ws_quad<Cfg>(t, 0, 0);   // (quad q of this thread: base + q 4 kThreads)
#pragma unroll
  for (int b = 0; b < kQuads; b += kBatch) {
    float4 v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (b + j < kQuads) v[j] = ptx::ld_global_cg_f32x4(base + (b + j) * 4 * Cfg::kThreads);
#pragma unroll
    for (int j = 0; j < kBatch; ++j)
      if (b + j < kQuads) {
        float* a = acc[(b + j) / Cfg::kMTiles][(b + j) % Cfg::kMTiles];
        a[0] += v[j].x; a[1] += v[j].y; a[2] += v[j].z; a[3] += v[j].w;
      }
  }
  KBIT_EPI_MARK(5, kbit_mark_after(acc[Cfg::kNT - 1][Cfg::kMTiles - 1][3]));
  store();
  if (tid == 0) *ctr = 0;   // every other part is counted: ready for the next launch
  sync();   // (role_s is read again at the next split tile)
}

// ---------------------------------------------------------------------------
// The kernel (mma.sync; every family).
// ---------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, launch_min_blocks<Cfg>())
kbit_gemm_kernel(const KbitParams p) {
  __shared__ __align__(128) uint32_t lut_static[Cfg::kStaticLutWords];
  __shared__ float e4m4[256];
  __shared__ float cb_s[32];
  __shared__ int scratch[32];                                    // scan and flags
  extern __shared__ __align__(128) uint8_t kbit_smem[];
  uint32_t* lut = Cfg::kWideLut ? reinterpret_cast<uint32_t*>(kbit_smem) : lut_static;
  int* slot_start = reinterpret_cast<int*>(kbit_smem + Cfg::kDynLutBytes);
  uint8_t* ring = kbit_smem + Cfg::kDynLutBytes + slot_table_bytes(p.E);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const float cb_max = build_tables<Cfg>(lut, e4m4, cb_s, scratch, slot_start, p, tid);
  if (cb_max < 0.f) return;

  const StreamKShare sh = StreamKShare::of<Cfg>(p, slot_start);
  if (sh.u_begin == sh.u_end) return;

  const uint8_t* lut_bytes = reinterpret_cast<const uint8_t*>(lut);
  const uint32_t lane_off = uint32_t(lane % Cfg::kCopies) * 4;
  uint32_t rot[5];
  pair_rotations<Cfg>(rot, lane);

  // ---- prologue: fill kStages - 1 slots ---------------------------------------
  Producer<Cfg> prod;
  prod.start(p, sh, slot_start, tid);
#pragma unroll
  for (int s = 0; s < Cfg::kStages - 1; ++s) prod.produce(p, sh, slot_start, tid, ring + s * Cfg::kStageBytes);

  // ---- main loop ------------------------------------------------------------
  TilePos pos = locate<Cfg>(p, sh.u_begin / sh.k_tiles, sh.S, slot_start);
  int kt = sh.u_begin % sh.k_tiles;
  float acc[Cfg::kNT][Cfg::kMTiles][4];
  zero_acc<Cfg>(acc);

  for (int u = sh.u_begin; u < sh.u_end; ++u) {
    ptx::cp_async_wait<Cfg::kStages - 2>();
    __syncthreads();   // slot (u - u_begin) is ready; slot (u - u_begin - 1) is free
    prod.produce(p, sh, slot_start, tid, ring + ((prod.ld_u - sh.u_begin) % Cfg::kStages) * Cfg::kStageBytes);

    mma_stage<Cfg>(acc, ring + ((u - sh.u_begin) % Cfg::kStages) * Cfg::kStageBytes, lut_bytes, lane_off, e4m4,
                   rot, warp, lane);

    if (++kt < sh.k_tiles && u + 1 < sh.u_end) continue;
    finish_tile<Cfg>(p, sh, pos, sh.owns(pos.tile), acc, cb_max, scratch, tid, warp, lane);
    zero_acc<Cfg>(acc);
    kt = 0;
    if (u + 1 < sh.u_end) pos = locate<Cfg>(p, pos.tile + 1, sh.S, slot_start);
  }
  ptx::cp_async_wait<0>();
}

}  // namespace kbit
