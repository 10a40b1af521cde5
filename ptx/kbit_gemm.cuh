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
//   number of bytes whatever the shape. A tile split between CTAs is summed by
//   its last-arriving CTA in a fixed order: results are deterministic.
// * Global -> shared copies go through a kStages-deep cp.async ring; the expert
//   offsets are read on the device (no host synchronization, graph capturable).
//
// Version log
//   v1  pair-LUT dequant, W-as-A mma.sync m16n8k16, stream-K, grouped via offsets.
#pragma once

namespace kbit {

// ---------------------------------------------------------------------------
// Compile-time configuration of one kernel instance.
// ---------------------------------------------------------------------------
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

  // One pipeline stage: the K-tile's plane words and scale bytes of BLOCK_N rows
  // (contiguous in global memory) and the BLOCK_M x 64 activation tile.
  static constexpr int kWBytes = BLOCK_N * 2 * kBits * 4;
  static constexpr int kSBytes = BLOCK_N * 2;
  static constexpr int kABytes = BLOCK_M * kTileK * 2;
  static constexpr int kStageBytes = kWBytes + kSBytes + kABytes;

  // Pair table: 4^k entries of two codebook values; kCopies replicas interleaved
  // so lane l reads replica l % kCopies (32 = conflict free; k = 5 uses 8 to
  // stay within 32 KB, at most 4 lanes then share a replica).
  static constexpr int kPairEntries = 1 << (2 * kBits);
  static constexpr int kCopies = kBits <= 4 ? 32 : 8;
  static constexpr int kLutBytes = kPairEntries * kCopies * 4;

  static constexpr int kMiscBytes = 32 * 4 + 256 * 4 + 128;   // codebook, E4M4 table, flags
  __host__ __device__ static constexpr size_t smem_bytes(int experts) {
    return size_t(kLutBytes) + kMiscBytes + size_t(cdiv((experts + 1) * 4, 128) * 128) +
           size_t(kStages) * kStageBytes;
  }

  static_assert(kBits >= 2 && kBits <= 5, "k must be 2..5");
  static_assert(kWBytes % 128 == 0 && kSBytes % 16 == 0 && kABytes % 128 == 0,
                "stage sections must keep 16-byte alignment");
  static_assert(kStages >= 2, "the ring needs at least two stages");
};

struct KbitParams {
  const void* a;           // [M, K] T, row-major
  const int32_t* b_packed;
  const uint8_t* b_absmax;
  const float* codebook;   // [2^k]
  const int32_t* offsets;  // [E + 1]
  void* c;                 // [M, N] T, row-major
  float* workspace;        // [gridDim.x][2][BLOCK_N * BLOCK_M] partial tiles
  int32_t* counters;       // [max_tiles] arrival counters, zero between launches
  int M, N, K, E;
  int max_tiles;
  KbitLayout layout;
};

// ---------------------------------------------------------------------------
// Stage: lookup tables (built once per CTA).
// ---------------------------------------------------------------------------

// Pair index bit order, shared by the table builder and the lookup:
// bit 2b = bit b of the first weight (even k), bit 2b + 1 = bit b of the second.
template <class Cfg>
__device__ __forceinline__ void build_pair_lut(uint32_t* lut, const float* cb_s, float inv_max,
                                               int tid) {
  using T = typename Cfg::T;
  constexpr int kWords = Cfg::kPairEntries * Cfg::kCopies;
  for (int w = tid; w < kWords; w += Cfg::kThreads) {
    const int idx = w / Cfg::kCopies;
    int i0 = 0, i1 = 0;
#pragma unroll
    for (int b = 0; b < Cfg::kBits; ++b) {
      i0 |= ((idx >> (2 * b)) & 1) << b;
      i1 |= ((idx >> (2 * b + 1)) & 1) << b;
    }
    lut[w] = Elem<T>::pack(cb_s[i0] * inv_max, cb_s[i1] * inv_max);
  }
}

// Slot table: expert e owns activation slots slot_start[e] .. slot_start[e+1]
// (one per BLOCK_M rows). Returns false (on every thread) if the offsets are
// not a valid partition of 0..M: then the kernel writes NaN instead of
// computing, so bad offsets are loud and never read out of bounds.
template <class Cfg>
__device__ bool build_slot_table(int* slot_start, int* scratch, const int32_t* offsets, int E,
                                 int M, int tid) {
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
  if (tid == 0) ok = ok && __ldg(offsets) == 0 && __ldg(offsets + E) == M;
  return __syncthreads_and(ok);
}

// ---------------------------------------------------------------------------
// Stage: locate a unit. Units are numbered u = (nb * S + slot) * k_tiles + kt
// (n-block major, so CTAs working at the same time share weight tiles across
// activation slots in L2).
// ---------------------------------------------------------------------------
struct TilePos {
  int tile;      // nb * S + slot (index of the arrival counter)
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

// ---------------------------------------------------------------------------
// Stage: load one K-tile of one tile into a ring slot (whole CTA, cp.async).
// ---------------------------------------------------------------------------
template <class Cfg>
__device__ __forceinline__ void load_stage(uint8_t* stage, const KbitParams& p, const TilePos& pos,
                                           int kt, int tid) {
  using T = typename Cfg::T;
  const KbitLayout& L = p.layout;
  // Weight rows past N_pad do not exist in memory: zero-filled.
  const int rows_in_mem = min(Cfg::BLOCK_N, L.n_pad - pos.n0);
  family::copy_to_smem_async(stage, p.b_packed + L.packed_row(pos.expert, kt, pos.n0),
                             Cfg::kWBytes, rows_in_mem * 8 * Cfg::kBits, tid, Cfg::kThreads);
  family::copy_to_smem_async(stage + Cfg::kWBytes, p.b_absmax + L.absmax_row(pos.expert, kt, pos.n0),
                             Cfg::kSBytes, rows_in_mem * 2, tid, Cfg::kThreads);
  // Activation tile [BLOCK_M][64], 16-byte chunk c of row r stored at chunk
  // c ^ (r % 8) so that ldmatrix's eight row reads hit eight different bank groups.
  // Rows past the slot and columns past K (K % 64 == 32) are zero-filled.
  const uint32_t a_s = ptx::smem_u32(stage + Cfg::kWBytes + Cfg::kSBytes);
  const T* a = static_cast<const T*>(p.a);
  const int k0 = kt * kTileK;
  const int valid_k_bytes = min(kTileK, p.K - k0) * 2;
  for (int i = tid; i < Cfg::BLOCK_M * 8; i += Cfg::kThreads) {
    const int r = i >> 3, ch = i & 7;
    const bool ok = r < pos.rows && ch * 16 < valid_k_bytes;
    const T* src = ok ? a + size_t(pos.row0 + r) * p.K + k0 + ch * 8 : a;
    ptx::cp_async_cg16(a_s + r * 128 + ((ch ^ (r & 7)) << 4), src, ok ? 16u : 0u);
  }
}

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

// Byte i of .lo = index bits 0..3 of pair i interleaved (see build_pair_lut);
// for k = 5, bits 0..1 of byte i of .hi = bit 4 of the pair.
struct PairBytes { uint32_t lo, hi; };

template <int kBits>
__device__ __forceinline__ PairBytes pair_bytes(const uint32_t (&p)[kBits], const uint32_t (&rot)[4]) {
  // Rotating plane b right by 2t - 2b moves the pair's bits 2t + 8i, 2t + 8i + 1
  // to 8i + 2b, 8i + 2b + 1; masks keep those two bits per byte.
  PairBytes x;
  x.lo = ptx::rotr(p[0], rot[0]) & 0x03030303u;
#pragma unroll
  for (int b = 1; b < (kBits < 4 ? kBits : 4); ++b)
    x.lo = ptx::lop3<0xF8>(x.lo, ptx::rotr(p[b], rot[b]), 0x03030303u << (2 * b));   // a | (b & c)
  x.hi = 0;
  if constexpr (kBits == 5) x.hi = ptx::rotr(p[4], rot[0]) & 0x03030303u;
  return x;
}

template <class Cfg, int kPair>
__device__ __forceinline__ uint32_t lookup_pair(const uint32_t* lut_lane, const PairBytes& x) {
  uint32_t idx = (x.lo >> (8 * kPair)) & 0xFFu;
  if constexpr (Cfg::kBits == 5) idx |= ((x.hi >> (8 * kPair)) & 3u) << 8;
  return lut_lane[idx * Cfg::kCopies];
}

// ---------------------------------------------------------------------------
// Stage: multiply-accumulate one K-tile held in a ring slot.
// acc[nt][mt] is the 16 (n) x 8 (m) tile: rows n = g, g + 8, columns m = 2t, 2t + 1.
// ---------------------------------------------------------------------------
template <class Cfg>
__device__ __forceinline__ void mma_stage(float (&acc)[Cfg::kNT][Cfg::kMTiles][4], const uint8_t* stage,
                                          const uint32_t* lut_lane, const float* e4m4,
                                          const uint32_t (&rot)[4], int warp, int lane) {
  using T = typename Cfg::T;
  const int g = lane >> 2;
  const uint32_t* w_s = reinterpret_cast<const uint32_t*>(stage);
  const uint8_t* s_s = stage + Cfg::kWBytes;
  const uint32_t a_s = ptx::smem_u32(stage + Cfg::kWBytes + Cfg::kSBytes);

  // Scale bytes of the thread's rows (both blocks of the K-tile).
  uint32_t sbytes[Cfg::kNT][2];
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
    const int r = warp * 16 * Cfg::kNT + nt * 16 + g;
    sbytes[nt][0] = *reinterpret_cast<const uint16_t*>(s_s + 2 * r);
    sbytes[nt][1] = *reinterpret_cast<const uint16_t*>(s_s + 2 * (r + 8));
  }

#pragma unroll
  for (int blk = 0; blk < 2; ++blk) {
    // Dequantized A fragments of both k16 steps for every 16-row tile.
    uint32_t frag[Cfg::kNT][2][4];
    float scale[Cfg::kNT][2];
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt) {
      const int r = warp * 16 * Cfg::kNT + nt * 16 + g;
      uint32_t pa[Cfg::kBits], pb[Cfg::kBits];
      load_planes<Cfg::kBits>(pa, w_s + (r * 2 + blk) * Cfg::kBits);
      load_planes<Cfg::kBits>(pb, w_s + ((r + 8) * 2 + blk) * Cfg::kBits);
      const PairBytes xa = pair_bytes<Cfg::kBits>(pa, rot);
      const PairBytes xb = pair_bytes<Cfg::kBits>(pb, rot);
      frag[nt][0][0] = lookup_pair<Cfg, 0>(lut_lane, xa);
      frag[nt][0][1] = lookup_pair<Cfg, 0>(lut_lane, xb);
      frag[nt][0][2] = lookup_pair<Cfg, 1>(lut_lane, xa);
      frag[nt][0][3] = lookup_pair<Cfg, 1>(lut_lane, xb);
      frag[nt][1][0] = lookup_pair<Cfg, 2>(lut_lane, xa);
      frag[nt][1][1] = lookup_pair<Cfg, 2>(lut_lane, xb);
      frag[nt][1][2] = lookup_pair<Cfg, 3>(lut_lane, xa);
      frag[nt][1][3] = lookup_pair<Cfg, 3>(lut_lane, xb);
      scale[nt][0] = e4m4[(sbytes[nt][0] >> (8 * blk)) & 0xFFu];
      scale[nt][1] = e4m4[(sbytes[nt][1] >> (8 * blk)) & 0xFFu];
      if constexpr (!Cfg::kScaleAfterMma) {
        const uint32_t sa = Elem<T>::pack(scale[nt][0], scale[nt][0]);
        const uint32_t sb = Elem<T>::pack(scale[nt][1], scale[nt][1]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          frag[nt][h][0] = Elem<T>::mul2(frag[nt][h][0], sa);
          frag[nt][h][1] = Elem<T>::mul2(frag[nt][h][1], sb);
          frag[nt][h][2] = Elem<T>::mul2(frag[nt][h][2], sa);
          frag[nt][h][3] = Elem<T>::mul2(frag[nt][h][3], sb);
        }
      }
    }
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
template <class Cfg>
__device__ __forceinline__ void store_tile(const KbitParams& p, const TilePos& pos,
                                           const float (&v)[Cfg::kNT][Cfg::kMTiles][4], float out_scale,
                                           int warp, int lane) {
  using T = typename Cfg::T;
  T* c = static_cast<T*>(p.c);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt) {
#pragma unroll
    for (int mt = 0; mt < Cfg::kMTiles; ++mt) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int n = pos.n0 + warp * 16 * Cfg::kNT + nt * 16 + g + (q >> 1) * 8;
        const int m = mt * 8 + 2 * t + (q & 1);
        if (m < pos.rows && n < p.N)
          c[size_t(pos.row0 + m) * p.N + n] = Elem<T>::from_float(v[nt][mt][q] * out_scale);
      }
    }
  }
}

// Index of the partial-tile element (n_local, m_local) inside a workspace slot.
template <class Cfg>
__device__ __forceinline__ int ws_index(int warp, int lane, int nt, int mt, int q) {
  const int g = lane >> 2, t = lane & 3;
  const int n = warp * 16 * Cfg::kNT + nt * 16 + g + (q >> 1) * 8;
  const int m = mt * 8 + 2 * t + (q & 1);
  return n * Cfg::BLOCK_M + m;
}

// ---------------------------------------------------------------------------
// The kernel.
// ---------------------------------------------------------------------------
template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
kbit_gemm_kernel(const KbitParams p) {
  using T = typename Cfg::T;
  extern __shared__ __align__(128) uint8_t smem[];
  uint32_t* lut = reinterpret_cast<uint32_t*>(smem);
  float* cb_s = reinterpret_cast<float*>(smem + Cfg::kLutBytes);
  float* e4m4 = cb_s + 32;
  int* scratch = reinterpret_cast<int*>(e4m4 + 256);           // 32 ints: scan and flags
  int* slot_start = scratch + 32;
  uint8_t* ring = smem + Cfg::kLutBytes + Cfg::kMiscBytes + cdiv((p.E + 1) * 4, 128) * 128;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  // ---- tables ---------------------------------------------------------------
  constexpr int kLevels = 1 << Cfg::kBits;
  if (tid < kLevels) cb_s[tid] = __ldg(p.codebook + tid);
  for (int i = tid; i < 256; i += Cfg::kThreads) e4m4[i] = e4m4_decode(i);
  const bool offsets_ok = build_slot_table<Cfg>(slot_start, scratch, p.offsets, p.E, p.M, tid);
  // (build_slot_table ends with a barrier, so cb_s is visible here.)
  float cb_max = 0.f;
#pragma unroll
  for (int i = 0; i < kLevels; ++i) cb_max = fmaxf(cb_max, fabsf(cb_s[i]));
  if (!(cb_max > 0.f)) cb_max = 1.f;     // all-zero codebook
  build_pair_lut<Cfg>(lut, cb_s, 1.f / cb_max, tid);
  __syncthreads();

  if (!offsets_ok) {   // not a partition of the rows: make it loud, touch nothing else
    T* c = static_cast<T*>(p.c);
    const size_t total = size_t(p.M) * p.N;
    for (size_t i = size_t(blockIdx.x) * Cfg::kThreads + tid; i < total; i += size_t(gridDim.x) * Cfg::kThreads)
      c[i] = Elem<T>::from_float(__int_as_float(0x7fc00000));
    return;
  }

  // ---- this CTA's share of the units (stream-K) ------------------------------
  const int S = slot_start[p.E];
  const int n_blocks = cdiv(p.N, Cfg::BLOCK_N);
  const int k_tiles = p.layout.k_tiles;
  const long long U = (long long)S * n_blocks * k_tiles;
  const long long G = min((long long)gridDim.x, U);
  if ((long long)blockIdx.x >= G) return;
  const int u_begin = int((long long)blockIdx.x * U / G);
  const int u_end = int((long long)(blockIdx.x + 1) * U / G);
  const int first_tile = u_begin / k_tiles;

  const uint32_t* lut_lane = lut + (lane % Cfg::kCopies);
  uint32_t rot[4];
#pragma unroll
  for (int b = 0; b < 4; ++b) rot[b] = uint32_t(2 * (lane & 3) - 2 * b) & 31u;

  // ---- prologue: fill kStages - 1 slots ---------------------------------------
  int ld_u = u_begin;
  int ld_kt = u_begin % k_tiles;
  TilePos ld_pos = locate_tile<Cfg>(u_begin / k_tiles, S, slot_start, p.offsets, p.E);
#pragma unroll
  for (int s = 0; s < Cfg::kStages - 1; ++s) {
    if (ld_u < u_end) {
      load_stage<Cfg>(ring + s * Cfg::kStageBytes, p, ld_pos, ld_kt, tid);
      ++ld_u;
      if (++ld_kt == k_tiles && ld_u < u_end) {
        ld_kt = 0;
        ld_pos = locate_tile<Cfg>(ld_pos.tile + 1, S, slot_start, p.offsets, p.E);
      }
    }
    ptx::cp_async_commit();
  }

  // ---- main loop ------------------------------------------------------------
  TilePos pos = locate_tile<Cfg>(first_tile, S, slot_start, p.offsets, p.E);
  int kt = u_begin % k_tiles;
  float acc[Cfg::kNT][Cfg::kMTiles][4];
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
    for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[nt][mt][q] = 0.f;

  for (int u = u_begin; u < u_end; ++u) {
    ptx::cp_async_wait<Cfg::kStages - 2>();
    __syncthreads();   // slot (u - u_begin) is ready; slot (u - u_begin - 1) is free
    if (ld_u < u_end) {
      load_stage<Cfg>(ring + ((ld_u - u_begin) % Cfg::kStages) * Cfg::kStageBytes, p, ld_pos, ld_kt, tid);
      ++ld_u;
      if (++ld_kt == k_tiles && ld_u < u_end) {
        ld_kt = 0;
        ld_pos = locate_tile<Cfg>(ld_pos.tile + 1, S, slot_start, p.offsets, p.E);
      }
    }
    ptx::cp_async_commit();

    mma_stage<Cfg>(acc, ring + ((u - u_begin) % Cfg::kStages) * Cfg::kStageBytes, lut_lane, e4m4, rot,
                   warp, lane);

    if (++kt < k_tiles && u + 1 < u_end) continue;

    // ---- tile finished (or our share of it) ----------------------------------
    const int tile_u0 = pos.tile * k_tiles;
    const bool full = tile_u0 >= u_begin && tile_u0 + k_tiles <= u_end;
    if (full) {
      store_tile<Cfg>(p, pos, acc, cb_max, warp, lane);
    } else {
      // Our part goes to our slot of the workspace: 0 if this is our first tile.
      const int my_slot = pos.tile == first_tile ? 0 : 1;
      float* ws = p.workspace + (size_t(blockIdx.x) * 2 + my_slot) * (Cfg::BLOCK_N * Cfg::BLOCK_M);
#pragma unroll
      for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
        for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
          for (int q = 0; q < 4; ++q) ws[ws_index<Cfg>(warp, lane, nt, mt, q)] = acc[nt][mt][q];
      __threadfence();
      __syncthreads();
      // Contributors: the CTAs owning the tile's first .. last unit.
      const int c_first = int(((long long)(tile_u0 + 1) * G - 1) / U);
      const int c_last = int(((long long)(tile_u0 + k_tiles) * G - 1) / U);
      if (tid == 0) {
        const int arrived = atomicAdd(p.counters + pos.tile, 1);
        scratch[0] = arrived == c_last - c_first;
      }
      __syncthreads();
      if (scratch[0]) {   // last to arrive: sum all parts in CTA order
        __threadfence();
        float sum[Cfg::kNT][Cfg::kMTiles][4];
#pragma unroll
        for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
          for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
            for (int q = 0; q < 4; ++q) sum[nt][mt][q] = 0.f;
        for (int cta = c_first; cta <= c_last; ++cta) {
          const int cta_first_tile = int((long long)cta * U / G) / k_tiles;
          const int slot = pos.tile == cta_first_tile ? 0 : 1;
          const float* part = p.workspace + (size_t(cta) * 2 + slot) * (Cfg::BLOCK_N * Cfg::BLOCK_M);
#pragma unroll
          for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
            for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
              for (int q = 0; q < 4; ++q)
                sum[nt][mt][q] += cta == int(blockIdx.x)
                                      ? acc[nt][mt][q]
                                      : ptx::ld_global_cg_f32(part + ws_index<Cfg>(warp, lane, nt, mt, q));
        }
        store_tile<Cfg>(p, pos, sum, cb_max, warp, lane);
        if (tid == 0) p.counters[pos.tile] = 0;   // ready for the next launch
      }
      __syncthreads();
    }
    // next tile
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
      for (int mt = 0; mt < Cfg::kMTiles; ++mt)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[nt][mt][q] = 0.f;
    kt = 0;
    if (u + 1 < u_end) pos = locate_tile<Cfg>(pos.tile + 1, S, slot_start, p.offsets, p.E);
  }
  ptx::cp_async_wait<0>();
}

}  // namespace kbit
