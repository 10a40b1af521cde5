// kbit_gemv.cuh — kbit_gemm on CUDA cores for short dense calls: M = 1 on layers
// where the decode kernel's set-up is most of the call.
//
// The decode kernel (kbit_decode.cuh) streams at up to 84 % of DRAM bandwidth
// on a Llama-3-70B layer, but before its main loop each CTA builds a 64 KB
// pair table, works out its split and the split-tile bookkeeping, and fills
// its ring: the table barrier passes ~2.2 us into a call (docs/design.md,
// "Set-up (v18)"). A Qwen3-Coder-Next layer (4-10 M weights) is read in about
// 2 us, so the set-up is most of its call. This kernel has almost none: no
// table, no split-tile protocol, no workspace; its first weight loads leave
// the SM a few instructions after the kernel starts.
//
// * Work. A CTA owns a strip of 16 output columns over all of K; its warps
//   split the K-tiles into contiguous ranges. Lane l reads block l % 2 of
//   column l / 2 in each K-tile, so one warp load covers one K-tile of the
//   strip: 32 consecutive blocks of the tiled layout, 128 k contiguous bytes
//   (512 at k = 4). (With KBIT_GEMV_COLS=8 a warp step takes two K-tiles of 8
//   columns.) The partial sums meet by shuffles within a warp and in shared
//   memory across warps, always added in the same order: the same bits on
//   every run.
// * Codebook by warp shuffle. Lane i holds codebook[i mod 2^k]. shfl.idx reads
//   only bits 4..0 of its source-lane operand, so a word with a k-bit index
//   at its bottom (and anything above it) fetches that index's value: one
//   shift and one SHFL per weight, no shared-memory table, no barrier.
// * Index fields. Rotating plane b right by (j - b) and merging the planes
//   with bit-select lop3s puts the index of weight F n + j of the block into
//   field n (F bits wide) of word j, for j < F: F = 2 at k = 2 (16 fields), 4
//   at k = 3 and 4 (8 fields), 8 at k = 5 (4 fields). k - 1 lop3s and up to k
//   rotates per word.
// * Activations. Each warp converts its own K range to fp32 once, into a
//   private region of shared memory (no CTA barrier), in the order the fields
//   come out: slot j * (32 / F) + n holds element F n + j of a block, so the
//   activations of one index word are consecutive (16-byte shared loads that
//   every lane of a half reads at once: one broadcast).
// * Scales. The E4M4 byte shifted to bits 19..26 (e4m4_from_bits, common.cuh)
//   multiplies the block's fp32 sum once per row.
// * Accumulation is fp32 throughout: weight value (fp32 codebook entry) times
//   activation (converted to fp32), summed per block, scaled, summed over
//   blocks. The MMA kernels round weights to fp16/bf16 first; this one does not.
//
// * Grouped layers (mixture of experts): one CTA row per activation row
//   (blockIdx.y), each reading the weights of that row's expert. The warps
//   split the search for the expert in the offsets (a count over all of them,
//   which also checks that they partition the rows), issued beside their
//   activation loads; one CTA barrier joins the parts, then the weight loads
//   go out. Rows routed to the same expert read its weights once each (from
//   L2 where their CTAs run together), so the host takes this kernel only for
//   calls with few rows (launch.cuh).
//
// Cost per weight and lane at k = 4, M = 1: 27/32 for the index words, 7/8
// shifts, one SHFL, one FFMA and 1/4 shared load. The SHFL pipe (one warp
// instruction per SM-clock) bounds it at ~32 weights per SM-clock, so large
// layers, where the decode kernel streams at up to 84 % of SOL, stay there;
// launch.cuh sends the small ones here.
#pragma once

namespace kbit {

// Output columns per CTA: 16 (lane pairs of a warp; one K-tile per warp
// step). KBIT_GEMV_COLS=8 for A/B runs: lanes 0-15 take the even K-tiles of
// the warp's range and 16-31 the odd ones, so a layer has twice the CTAs (the
// SMs' shares even out: Qwen3 gate/up has 320 strips of 16 for 132 SMs).
// With KBIT_GEMV_MAX_WARPS=32 it measured level within the noise of graph
// timing on the Qwen3 layers, 10 % slower on down, 10 % faster on kv (H100,
// docs/results.md v27).
#ifndef KBIT_GEMV_COLS
#define KBIT_GEMV_COLS 16
#endif
constexpr int kGemvCols = KBIT_GEMV_COLS;
static_assert(kGemvCols == 8 || kGemvCols == 16, "8 or 16 columns per CTA");
constexpr int kGemvSub = kWarpSize / (2 * kGemvCols);   // K-tiles per warp step
// Warps per CTA, at most: 16 (512 threads, two CTAs per SM: 64 registers).
// KBIT_GEMV_MAX_WARPS=32 for A/B runs (1024 threads, also 64 registers: a
// layer of few strips, N = 2048, then has 32 warps on every SM); level within
// the noise on the Qwen3 layers (v27).
#ifndef KBIT_GEMV_MAX_WARPS
#define KBIT_GEMV_MAX_WARPS 16
#endif
constexpr int kGemvMaxWarps = KBIT_GEMV_MAX_WARPS;
static_assert(kGemvMaxWarps == 16 || kGemvMaxWarps == 32, "the launch bounds give 64 registers for 16 or 32");
// K-tiles a lane keeps in flight (register ring): 3 at k = 3 and 5, whose
// 4 spill on sm_90a (64 registers; the k = 3 runs of docs/results.md v27 had
// 4 stages and a 4-byte spill).
constexpr int gemv_stages(int bits) { return bits == 5 || bits == 3 ? 3 : 4; }
// Timeline hooks for scripts/gemv_bench.cu (GEMV_TIMELINE): mark i of the
// CTA, taken by thread 0 once `dep` is computed. Empty in the extension.
#ifndef KBIT_GEMV_MARK
#define KBIT_GEMV_MARK(i, dep) do { } while (0)
#endif
constexpr int kGemvHalfFloats = 36; // fp32 activations per (K-tile, row, block): 32 + 4 of padding,
                                    // so the two blocks' 16-byte reads fall in different banks
constexpr int kGemvTileFloats = 2 * kGemvHalfFloats;   // per K-tile and row

struct GemvParams {
  const void* a;               // [M, K] fp16 / bf16
  const int32_t* b_packed;     // [E, k_tiles, n_pad, 2, bits]
  const uint8_t* b_absmax;     // [E, k_tiles, n_pad, 2]
  const float* codebook;       // [2^bits]
  const int32_t* offsets;      // [E + 1]: must partition the rows, else C is all NaN (as in the other kernels)
  void* c;                     // [M, N]
  int M, N, K, E, n_pad, k_tiles;
  int tiles_per_warp;          // contiguous K-tiles per warp (the last warps may have fewer or none)
};

// K-tiles of activations a warp stages: its range rounded up to whole steps.
__host__ __device__ constexpr int gemv_act_tiles(int tiles_per_warp) {
  return (tiles_per_warp + kGemvSub - 1) / kGemvSub * kGemvSub;
}
// Shared memory of one CTA: each warp's activations, then the warps' column sums.
__host__ __device__ constexpr size_t gemv_smem_bytes(int warps, int tiles_per_warp, int rows) {
  return (size_t(warps) * gemv_act_tiles(tiles_per_warp) * rows * kGemvTileFloats +
          size_t(warps) * rows * kGemvCols) * 4;
}

// The launch shape of a call (host side: launch.cuh and scripts/gemv_bench.cu):
// the most warps per CTA (32 ... 4, at most kGemvMaxWarps) with which all
// `ctas` CTAs are resident at once, else 4; each warp takes `tiles` K-tiles.
// resident(warps, smem_bytes) gives the CTAs an SM holds, 0 where the shape
// does not fit (shared memory). warps == 0: no shape fits.
struct GemvShape {
  int warps = 0, tiles = 0;
};
template <class Resident>
GemvShape gemv_plan(long long ctas, int k_tiles, int rows, int sms, Resident resident) {
  GemvShape shape;
  for (const int warps : {32, 16, 8, 4}) {
    const int tiles = cdiv(k_tiles, warps);
    if (warps > kGemvMaxWarps || (warps > 4 && tiles < kGemvSub)) continue;
    const int per_sm = resident(warps, gemv_smem_bytes(warps, tiles, rows));
    if (per_sm <= 0) continue;
    shape = GemvShape{warps, tiles};
    if (ctas <= (long long)per_sm * sms) break;
  }
  return shape;
}

// The index-field layout of k-bit weights (see the header).
template <int kBits>
struct GemvFields {
  static constexpr int F = kBits == 2 ? 2 : kBits <= 4 ? 4 : 8;   // field width = words per block
  static constexpr int kPerWord = 32 / F;                         // fields per word
  static_assert(kBits <= F, "a field holds the whole index");

  // Slot of block element e in the permuted activations.
  __host__ __device__ static constexpr int slot(int e) { return (e % F) * kPerWord + e / F; }

  // Low b bits of every field.
  static constexpr uint32_t low_bits(int b) { return uint32_t((1u << b) - 1) * (0xFFFFFFFFu / ((1u << F) - 1)); }

  // Word j (0 <= j < F): field n = index of weight F n + j. Bit F n + b of
  // rotr(plane b, j - b) is bit F n + j of plane b; each lop3 takes the bits
  // below b from the word so far and the rest from the next rotated plane
  // (bits >= k of a field are left over from the last plane: shfl ignores them
  // where they sit above bit 4, and the codebook repeats every 2^k lanes).
  // (j is a constant wherever this is called: the loops over it are unrolled,
  // so the rotates take immediates and rotates by 0 vanish.)
  __device__ __forceinline__ static uint32_t word(const uint32_t (&p)[kBits], int j) {
    uint32_t x = j == 0 ? p[0] : ptx::rotr(p[0], j);
#pragma unroll
    for (int b = 1; b < kBits; ++b) {
      const int s = (j - b) & 31;
      const uint32_t r = s == 0 ? p[b] : ptx::rotr(p[b], s);
      x = ptx::lop3<0xE4>(x, r, low_bits(b));   // (x & mask) | (r & ~mask)
    }
    return x;
  }
};

// One K-tile of a lane's stream: the k plane words of its block and the
// block's scale byte.
template <int kBits>
struct GemvStep {
  uint32_t w[kBits];
  uint32_t s;
};

// Plane words of k = 4 (16 bytes) and k = 2 (8 bytes) in one streaming load
// each. At k = 3 and 5 a block is 12 or 20 bytes, 4-byte aligned: one load per
// word, through L1, so the warp's k loads share the lines they touch.
template <int kBits>
__device__ __forceinline__ void gemv_load(GemvStep<kBits>& st, const int32_t* w, const uint8_t* s, bool valid) {
  if (!valid) {
#pragma unroll
    for (int b = 0; b < kBits; ++b) st.w[b] = 0;
    st.s = 0;
    return;
  }
  if constexpr (kBits == 4) {
    const uint4 v = ptx::ld_global_nc_na_v4(w);
    st.w[0] = v.x; st.w[1] = v.y; st.w[2] = v.z; st.w[3] = v.w;
  } else if constexpr (kBits == 2) {
    const uint2 v = ptx::ld_global_nc_na_v2(w);
    st.w[0] = v.x; st.w[1] = v.y;
  } else {
#pragma unroll
    for (int b = 0; b < kBits; ++b) st.w[b] = __ldg(reinterpret_cast<const unsigned int*>(w) + b);
  }
  st.s = ptx::ld_global_nc_na_u8(s);
}

// The warp's activations for `tiles` K-tiles from kt0, all kRows rows, as
// fp32 in the permuted order: act[((tile - kt0) * kRows + r) * kGemvTileFloats
// + block * kGemvHalfFloats + slot(e)]. Rows >= M, tiles >= kt1 (the rounding
// to whole steps) and blocks past K are zero: their lanes load zero planes and
// scales, and a zero scale times garbage could be NaN.
// A lane takes 16-byte chunks (8 elements) c = lane, lane + 32, ... of the
// rows' chunks, two at a time: load() issues their loads, store() converts and
// stores them, one round trip per two. The first two can be loaded early
// (grouped: beside the expert search, stored before the weight loads go out,
// so that they are not queued behind them).
template <int kBits, typename T, int kRows>
struct GemvActStager {
  static constexpr int kBatch = 2;
  const T* a;                   // activations [M, K]
  int M, K;
  float* act;
  int row0, kt0, kt1, chunks;   // chunks per row
  uint4 v[kBatch];

  __device__ __forceinline__ int total() const { return kRows * chunks; }
  __device__ __forceinline__ void load(int c0) {
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int c = c0 + u * kWarpSize, r = kRows == 1 ? 0 : c / chunks, cc = c - r * chunks;
      const int tile = cc >> 3, k = (kt0 + tile) * kTileK + ((cc >> 2) & 1) * kBlock + (cc & 3) * 8;
      v[u] = make_uint4(0, 0, 0, 0);
      if (c < total() && row0 + r < M && kt0 + tile < kt1 && k < K)
        v[u] = __ldg(reinterpret_cast<const uint4*>(a + size_t(row0 + r) * K + k));
    }
  }
  __device__ __forceinline__ void store(int c0) const {
    using Fl = GemvFields<kBits>;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int c = c0 + u * kWarpSize, r = kRows == 1 ? 0 : c / chunks, cc = c - r * chunks;
      if (c >= total()) break;
      const int tile = cc >> 3, block = (cc >> 2) & 1, e0 = (cc & 3) * 8;
      float* dst = act + (tile * kRows + r) * kGemvTileFloats + block * kGemvHalfFloats;
      const uint32_t words[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = Elem<T>::unpack(words[i]);
        dst[Fl::slot(e0 + 2 * i)] = f.x;
        dst[Fl::slot(e0 + 2 * i + 1)] = f.y;
      }
    }
  }
  // The chunks after the first two (lane's first chunk: c0 = lane).
  __device__ __forceinline__ void rest(int lane) {
    for (int c0 = lane + kBatch * kWarpSize; c0 < total(); c0 += kBatch * kWarpSize) {
      load(c0);
      store(c0);
    }
  }
};

// Sum over one block: sum[r] += value(index of weight e) * act[r][e] for the
// block's 32 weights. `act` points at row 0 of the block's activations.
template <int kBits, int kRows>
__device__ __forceinline__ void gemv_block(const uint32_t (&planes)[kBits], float cb, const float* act,
                                           float (&sum)[kRows]) {
  using Fl = GemvFields<kBits>;
#pragma unroll
  for (int j = 0; j < Fl::F; ++j) {
    const uint32_t x = Fl::word(planes, j);
#pragma unroll
    for (int q = 0; q < Fl::kPerWord / 4; ++q) {
      float4 av[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        av[r] = *reinterpret_cast<const float4*>(act + r * kGemvTileFloats + j * Fl::kPerWord + 4 * q);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int n = 4 * q + i;
        const float w = ptx::shfl_idx_lo5(cb, n == 0 ? x : x >> (Fl::F * n));
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const float a = i == 0 ? av[r].x : i == 1 ? av[r].y : i == 2 ? av[r].z : av[r].w;
          sum[r] = fmaf(w, a, sum[r]);
        }
      }
    }
  }
}

// Grouped layers: this warp's part of finding row `row`'s expert, the number
// of offsets[1..E] at or below the row (warp w takes every `warps`-th group
// of 32, so the CTA's loads go out at once), and whether that part never
// decreases; warp 0 also checks that the offsets start at 0 and end at M.
// Lane 0 stores {count, ok} for gemv_expert, after a CTA barrier.
__device__ __forceinline__ void gemv_expert_part(const GemvParams& p, int row, int warp, int warps, int lane,
                                                 int2* part) {
  constexpr int kBatch = 4;   // groups of 32 offsets a lane loads before it uses any
  const int stride = warps * kWarpSize;
  int below = 0;
  bool ok = true;
  // Warp 0 lane 0 also loads the first and last offsets, used after the loop
  // (a use here, or `a && b`, would hold the loop's loads back a round trip).
  int first = 0, last = p.M;
  if (warp == 0 && lane == 0) {
    first = __ldg(p.offsets);
    last = __ldg(p.offsets + p.E);
  }
  // Each offset is loaded once: lane l compares offsets[i] with lane l - 1's
  // offsets[i - 1] (lane 0 loads its own). Past E an offset reads as 2^31 - 1:
  // above every row and never below its predecessor. No load waits on an
  // earlier one's value, so a lane's loads of a batch go out together.
  for (int i0 = 1 + warp * kWarpSize; i0 <= p.E; i0 += kBatch * stride) {   // (warp-uniform)
    int o[kBatch], first_prev[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = i0 + u * stride + lane;
      o[u] = i <= p.E ? __ldg(p.offsets + i) : 0x7fffffff;
      first_prev[u] = lane == 0 && i <= p.E ? __ldg(p.offsets + i - 1) : 0;
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int up = __shfl_up_sync(0xffffffffu, o[u], 1);
      below += o[u] <= row;
      ok &= o[u] >= (lane == 0 ? first_prev[u] : up);
    }
  }
  ok &= (first == 0) & (last == p.M);
  below = __reduce_add_sync(0xffffffffu, below);
  ok = __all_sync(0xffffffffu, ok);
  if (lane == 0) part[warp] = make_int2(below, ok ? 1 : 0);
}
// The row's expert from the warps' parts (whole warp), or -1 where the
// offsets do not partition the rows. With a partition, offsets[E] = M > row,
// so the count is at most E - 1.
__device__ __forceinline__ int gemv_expert(const int2* part, int warps, int lane) {
  const int2 v = lane < warps ? part[lane] : make_int2(0, 1);
  const int below = __reduce_add_sync(0xffffffffu, v.x);
  return __all_sync(0xffffffffu, v.y != 0) ? below : -1;
}

template <int kBits, typename T, int kRows>
__global__ void __launch_bounds__(kGemvMaxWarps * kWarpSize, 32 / kGemvMaxWarps) kbit_gemv_kernel(const GemvParams p) {
  extern __shared__ float4 gemv_smem[];
  __shared__ int2 expert_part[kWarpSize];   // grouped: the warps' parts of the expert search
  KBIT_GEMV_MARK(0, 0);
  const int warps = blockDim.x / kWarpSize, warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const bool grouped = p.E > 1;
  const int row0 = blockIdx.y * kRows;   // the CTA's first activation row (grouped: kRows = 1)
  // Lane: K-tile `sub` of each warp step, column `col` of the strip, block `block` of the K-tile.
  const int sub = lane / (2 * kGemvCols), col = (lane / 2) % kGemvCols, block = lane & 1;
  const int n = blockIdx.x * kGemvCols + col;
  // n_pad is N rounded up to 8, so the last strip can reach 8 columns past
  // it. Those lanes read column n_pad - 1 again (in bounds; their sums are
  // not stored, as those of the zero-padding columns N..n_pad-1 are not), so
  // the loop needs no column predicate.
  const int n_ld = cmin(n, p.n_pad - 1);
  const int kt0 = warp * p.tiles_per_warp;
  const int kt1 = cmin(kt0 + p.tiles_per_warp, p.k_tiles);   // kt0 >= kt1: no tiles
  int steps = kt1 > kt0 ? cdiv(kt1 - kt0, kGemvSub) : 0;     // step s: tiles kt0 + kGemvSub s + sub
  const int first = kt0 + sub;

  // The lane's block in its first K-tile (of expert 0), and the distance to
  // the next step's, in 32-bit offsets (gemv_applies: an expert's plane
  // words number under 2^31).
  const KbitLayout L{p.N, p.K, p.n_pad, p.k_tiles, kBits};
  const int32_t* wsrc = p.b_packed + L.packed_row(0, first, n_ld) + block * kBits;
  const uint8_t* ssrc = p.b_absmax + L.absmax_row(0, first, n_ld) + block;
  const uint32_t wstride = uint32_t(L.packed_row(0, kGemvSub, 0)), sstride = uint32_t(L.absmax_row(0, kGemvSub, 0));

  constexpr int kStages = gemv_stages(kBits);
  GemvStep<kBits> ring[kStages];
  const auto issue_prologue = [&] {
#pragma unroll
    for (int d = 0; d < kStages; ++d)
      gemv_load(ring[d], wsrc + d * wstride, ssrc + d * sstride, first + kGemvSub * d < kt1);
  };
  const float cb = __ldg(p.codebook + (lane & ((1 << kBits) - 1)));
  // Dense: warp 0 stores C; it checks the offsets (loaded now, used at the end).
  int off0 = 0, off1 = p.M;
  if (!grouped && warp == 0) {
    off0 = __ldg(p.offsets);
    off1 = __ldg(p.offsets + 1);
  }
  bool offsets_ok = off0 == 0 && off1 == p.M;   // (dense; warp 0's is the one used)
  const int act_tiles = gemv_act_tiles(p.tiles_per_warp);
  float* const act = reinterpret_cast<float*>(gemv_smem) + size_t(warp) * act_tiles * kRows * kGemvTileFloats;
  GemvActStager<kBits, T, kRows> stager{static_cast<const T*>(p.a), p.M, p.K, act, row0, kt0, kt1,
                                        act_tiles * (kTileK / 8)};
  stager.load(lane);
  // Dense: the weight loads go out after the codebook, offset and first
  // activation loads. Issued first, they put those loads behind every SM's
  // ring prologue (on the Qwen3 layers most of the layer), so the first sums
  // waited for nearly all the weights (this order: 0.2-0.5 us faster there,
  // docs/results.md v31). Grouped: once the expert is known.
  if (!grouped) issue_prologue();
  if (grouped) {
    // The expert search's loads go out beside the first activation loads;
    // those are stored before the expert's weight loads go out (one round
    // trip for both, then the weights').
    gemv_expert_part(p, row0, warp, warps, lane, expert_part);
    __syncthreads();   // the parts of the expert search
    const int e = gemv_expert(expert_part, warps, lane);
    stager.store(lane);
    offsets_ok = e >= 0;
    if (offsets_ok) {
      wsrc += L.packed_row(e, 0, 0);
      ssrc += L.absmax_row(e, 0, 0);
      issue_prologue();
    } else {
      steps = 0;   // nothing is read; warp 0 writes NaN
#pragma unroll
      for (int d = 0; d < kStages; ++d) ring[d] = GemvStep<kBits>{};   // (both branches set the ring: it is
                                                                       // dead across the search; sm_100a spills else)
    }
    KBIT_GEMV_MARK(6, steps);   // expert known, weight loads issued
  } else {
    stager.store(lane);
  }
  stager.rest(lane);
  __syncwarp();
  KBIT_GEMV_MARK(1, steps);   // activations staged

  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.f;
  // Step s: the lane's block and its activations (the warp step's K-tiles are
  // kGemvSub apart). Each ring slot is summed, then refilled with the step
  // kStages ahead.
  constexpr int kActStride = kGemvSub * kRows * kGemvTileFloats;
  const float* act_lane = stager.act + sub * kRows * kGemvTileFloats + block * kGemvHalfFloats;
  for (int base = 0; base < steps; base += kStages) {
    const float* act_base = act_lane + base * kActStride;
    const uint32_t ahead = uint32_t(base + kStages);   // the step the refills start at
#pragma unroll
    for (int d = 0; d < kStages; ++d) {
      const int s = base + d;
      if (s >= steps) break;   // warp-uniform
      float sum[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) sum[r] = 0.f;
      gemv_block<kBits, kRows>(ring[d].w, cb, act_base + d * kActStride, sum);
      const float scale = e4m4_from_bits(ring[d].s << 19);   // (the byte: no mask needed)
#pragma unroll
      for (int r = 0; r < kRows; ++r) acc[r] = fmaf(scale, sum[r], acc[r]);
      if (s + kStages < steps)
        gemv_load(ring[d], wsrc + (ahead + d) * wstride, ssrc + (ahead + d) * sstride,
                  kGemvSub == 1 || first + kGemvSub * (s + kStages) < kt1);   // (s + kStages < steps:
                                                                                // in range for sub 0)
      if (s == 0) KBIT_GEMV_MARK(2, acc[0]);   // first step summed
    }
  }
  KBIT_GEMV_MARK(3, acc[0]);   // main loop left

  // The two blocks of a column and the K-tiles of a step (lanes 2 col +
  // block + 2 kGemvCols sub), then the warps. fp32 addition commutes, so both
  // lanes of a shuffle hold the same bits, and every run adds in one order.
  float* red = reinterpret_cast<float*>(gemv_smem) + size_t(warps) * act_tiles * kRows * kGemvTileFloats;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 1);
#pragma unroll
    for (int o = 2 * kGemvCols; o < kWarpSize; o *= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
  }
  if (lane < 2 * kGemvCols && block == 0) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) red[(warp * kRows + r) * kGemvCols + col] = acc[r];
  }
  __syncthreads();
  KBIT_GEMV_MARK(4, 0);   // every warp's sums stored
  // Warp 0 adds the warps' sums: lane kGemvCols q + c takes column c and the
  // q-th contiguous part of the warps, in warp order; the parts meet by
  // shuffles.
  if (warp == 0) {
    T* c = static_cast<T*>(p.c);
    constexpr int kParts = kWarpSize / kGemvCols;
    const int part = lane / kGemvCols, cc = lane % kGemvCols, nn = blockIdx.x * kGemvCols + cc;
    const int per_part = cdiv(warps, kParts), w0 = part * per_part, w1 = cmin(w0 + per_part, warps);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float s = 0.f;
#pragma unroll 4
      for (int w = w0; w < w1; ++w) s += red[(w * kRows + r) * kGemvCols + cc];
#pragma unroll
      for (int o = kGemvCols; o < kWarpSize; o *= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (!offsets_ok) s = __int_as_float(0x7fc00000);
      if (part == 0 && row0 + r < p.M && nn < p.N) c[size_t(row0 + r) * p.N + nn] = Elem<T>::from_float(s);
    }
  }
  KBIT_GEMV_MARK(5, 0);
}

}  // namespace kbit
