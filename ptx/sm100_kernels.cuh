// sm100_kernels.cuh — Blackwell (tcgen05) kernels. COMPILE-VERIFIED ONLY: they
// have never run; submission.py compares each with the portable kernel on small
// inputs at first use and falls back (with a warning) on any disagreement.
// docs/blackwell.md: warp roles, tensor-memory budget, barrier protocol, and
// what to check first on hardware.
//
//   nvfp4_gemv_tc_kernel   one CTA = 128 rows of a, one batch; block-scaled
//                          tcgen05.mma (kind::mxf4nvf4, block16), M = 128 rows of
//                          a, N = 16 rows of b (row 0 is the vector), scales moved
//                          to tensor memory by tcgen05.cp.
//   kbit_gemm_tc_kernel    one CTA = 128 weight rows x up to 128 activation rows of
//                          one expert slot; weights dequantized by the CUDA cores
//                          into shared memory (canonical K-major SW128), then
//                          tcgen05.mma kind::f16 with the accumulator in tensor
//                          memory, drained by tcgen05.ld.
#pragma once

namespace kbit {

// Byte offset of 16-byte chunk `ch` of row `r` in a K-major SW128 tile (rows of
// 128 bytes; the TMA SWIZZLE_128B pattern, base 1024-byte aligned).
__device__ __forceinline__ uint32_t sw128_offset(int r, int ch) {
  return uint32_t(r) * 128u + (uint32_t((ch ^ (r & 7)) & 7) << 4);
}

// Dynamic shared memory is only guaranteed 16-byte alignment (it follows the
// static tables); SW128 tiles need 1024. Launches allocate kSmemSlack extra bytes.
constexpr int kSmemSlack = 1024;
__device__ __forceinline__ uint8_t* align_smem_1024(uint8_t* p) {
  const uint32_t s = ptx::smem_u32(p);
  return p + ((1024u - (s & 1023u)) & 1023u);
}

// CTA setup shared by the tcgen05 kernels: warp 0 allocates `cols` tensor-memory
// columns, thread 0 initializes the two stage mbarriers (one arrival each: a
// tcgen05.commit), and everyone reads the TMEM base after the fenced barrier.
__device__ __forceinline__ uint32_t tc_setup(uint32_t* tmem_base, uint64_t (&mbar)[2], uint32_t cols, int warp,
                                             int tid) {
  if (warp == 0) {
    ptx::tcgen05_alloc(ptx::smem_u32(tmem_base), cols);
    ptx::tcgen05_relinquish_alloc_permit();
  }
  if (tid == 0) {
    ptx::mbarrier_init(ptx::smem_u32(&mbar[0]), 1);
    ptx::mbarrier_init(ptx::smem_u32(&mbar[1]), 1);
    ptx::fence_mbarrier_init();
  }
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  return *tmem_base;
}

// Teardown: every warp's tensor-memory reads are ordered before the dealloc by
// the warp that allocated.
__device__ __forceinline__ void tc_teardown(uint32_t tmem, uint32_t cols, int warp) {
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  if (warp == 0) ptx::tcgen05_dealloc(tmem, cols);
}

// ============================================================================
// NVFP4 GEMV
// ============================================================================
namespace tc_nvfp4 {
constexpr int kThreads = 128;            // 4 warps: all load; thread 0 issues; all drain
constexpr int kChunkK = 256;             // fp4 elements per K-chunk = 128 bytes per row
constexpr int kSteps = kChunkK / 64;     // MMAs (K = 64) per chunk
constexpr int kRowsB = 16;               // N of the MMA: rows of b (row 0 is the vector)
constexpr int kABytes = 128 * 128, kBBytes = kRowsB * 128, kSFBytes = kSteps * 512;
// Tensor memory: accumulator columns 0..15; scale factors for the two buffers
// at 32 + 16 buf + 4 step (A) and 64 + 16 buf + 4 step (B).
constexpr uint32_t kTmemCols = 128, kSfaCol = 32, kSfbCol = 64;

struct __align__(1024) Smem {
  uint8_t a[2][kABytes];
  uint8_t b[2][kBBytes];
  uint8_t sfa[2][kSFBytes];
  uint8_t sfb[2][kSFBytes];
  uint64_t mbar[2];
  uint32_t tmem_base;
};
}  // namespace tc_nvfp4

__global__ void __launch_bounds__(tc_nvfp4::kThreads, 1)
nvfp4_gemv_tc_kernel(const Nvfp4Params p) {
  using namespace tc_nvfp4;
  extern __shared__ __align__(16) uint8_t tc_smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(align_smem_1024(tc_smem_raw));
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int mb = blockIdx.x, l = blockIdx.y;
  const int rows = min(128, p.m - mb * 128);
  const int chunks = p.k / kChunkK + (p.k % kChunkK ? 1 : 0);
  const int rest_m = cdiv(p.m, 128), rest_k = cdiv(p.k / 16, 4);

  const uint32_t tmem = tc_setup(&s.tmem_base, s.mbar, kTmemCols, warp, tid);

  const uint8_t* a = p.a + (long long)l * p.a_sl + (long long)mb * 128 * p.a_si;
  const uint8_t* b = p.b + (long long)l * p.b_sl;
  const long long b_si = p.a_si;   // b rows have the same length (k/2 bytes)
  // scale blocks: [l][rest][rest_k][512 B]; one 512-byte block per K = 64 step
  const uint8_t* sfa = p.sfa + ((long long)l * rest_m + mb) * rest_k * 512;
  const uint8_t* sfb = p.sfb + (long long)l * rest_k * 512;
  const uint32_t idesc = sm100::idesc_nvf4(128, kRowsB);

  for (int c = 0; c < chunks; ++c) {
    const int buf = c & 1;
    if (c >= 2) ptx::mbarrier_wait_parity(ptx::smem_u32(&s.mbar[buf]), ((c - 2) >> 1) & 1);
    const int kb0 = c * (kChunkK / 2);                      // first byte of the chunk in a row
    const int valid_bytes = min(kChunkK / 2, p.k / 2 - kb0);
    // a: 128 rows x 128 bytes, SW128; rows past m and bytes past k read zero
    for (int i = tid; i < 128 * 8; i += kThreads) {
      const int r = i >> 3, ch = i & 7;
      const bool ok = r < rows && ch * 16 < valid_bytes;
      ptx::cp_async_cg16(ptx::smem_u32(s.a[buf]) + sw128_offset(r, ch), ok ? a + r * p.a_si + kb0 + ch * 16 : a,
                         ok ? 16u : 0u);
    }
    for (int i = tid; i < kRowsB * 8; i += kThreads) {
      const int r = i >> 3, ch = i & 7;
      const bool ok = ch * 16 < valid_bytes;
      ptx::cp_async_cg16(ptx::smem_u32(s.b[buf]) + sw128_offset(r, ch), ok ? b + r * b_si + kb0 + ch * 16 : b,
                         ok ? 16u : 0u);
    }
    // scales: kSteps blocks of 512 bytes, contiguous in the blocked layout
    const int q0 = c * kSteps, qn = min(kSteps, rest_k - q0);
    for (int i = tid; i < kSteps * 32; i += kThreads) {
      const bool ok = i / 32 < qn;
      ptx::cp_async_cg16(ptx::smem_u32(s.sfa[buf]) + i * 16, ok ? sfa + (long long)q0 * 512 + i * 16 : sfa,
                         ok ? 16u : 0u);
      ptx::cp_async_cg16(ptx::smem_u32(s.sfb[buf]) + i * 16, ok ? sfb + (long long)q0 * 512 + i * 16 : sfb,
                         ok ? 16u : 0u);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<0>();
    ptx::fence_proxy_async_shared();       // generic-proxy writes -> tensor-core reads
    __syncthreads();
    if (tid == 0) {
      ptx::tcgen05_fence_after_thread_sync();
      const int steps = min(kSteps, cdiv(p.k - c * kChunkK, 64));
      for (int j = 0; j < steps; ++j) {
        const uint32_t sfa_col = kSfaCol + 16 * buf + 4 * j, sfb_col = kSfbCol + 16 * buf + 4 * j;
        ptx::tcgen05_cp_32x128b_warpx4(ptx::tmem_addr(tmem, 0, sfa_col),
                                       sm100::smem_desc_scales(ptx::smem_u32(s.sfa[buf]) + 512 * j));
        ptx::tcgen05_cp_32x128b_warpx4(ptx::tmem_addr(tmem, 0, sfb_col),
                                       sm100::smem_desc_scales(ptx::smem_u32(s.sfb[buf]) + 512 * j));
        // K step j: +32 bytes (64 fp4) inside the 128-byte swizzled rows
        ptx::tcgen05_mma_nvf4(ptx::tmem_addr(tmem, 0, 0),
                              sm100::smem_desc_kmajor_sw128(ptx::smem_u32(s.a[buf]) + 32 * j),
                              sm100::smem_desc_kmajor_sw128(ptx::smem_u32(s.b[buf]) + 32 * j), idesc,
                              ptx::tmem_addr(tmem, 0, sfa_col), ptx::tmem_addr(tmem, 0, sfb_col),
                              (c > 0 || j > 0) ? 1u : 0u);
      }
      ptx::tcgen05_commit(ptx::smem_u32(&s.mbar[buf]));
    }
    __syncwarp();
  }
  // drain: the last commit completes after every earlier MMA
  const int last = chunks - 1;
  ptx::mbarrier_wait_parity(ptx::smem_u32(&s.mbar[last & 1]), (last >> 1) & 1);
  ptx::tcgen05_fence_after_thread_sync();
  uint32_t r[16];
  ptx::tcgen05_ld_32x32b_x16(r, ptx::tmem_addr(tmem, 32 * warp, 0));
  ptx::tcgen05_wait_ld();
  const int row = 32 * warp + lane;
  if (row < rows)
    p.c[(long long)(mb * 128 + row) * p.c_si + (long long)l * p.c_sl] = __float2half_rn(__uint_as_float(r[0]));
  tc_teardown(tmem, kTmemCols, warp);
}

// ============================================================================
// kbit GEMM
// ============================================================================
template <int kBits_, typename T_, int kBlockM_>
struct KbitTcConfig {
  static constexpr int kBits = kBits_;
  using T = T_;
  static constexpr int BLOCK_M = kBlockM_;       // activation rows = MMA N (16..128)
  static constexpr int BLOCK_N = 128;            // weight rows = MMA M
  static constexpr int kThreads = 128;           // warp w dequantizes weight rows 32w .. 32w + 31
  static constexpr int kWarps = 4;
  static constexpr int kNT = 2;                  // 16-row tiles per warp (for the shared dequant stage)
  static constexpr int kCopies = kBits <= 4 ? 32 : 8;
  static constexpr int kPairEntries = 1 << (2 * kBits);
  static constexpr int kLutBytes = kPairEntries * kCopies * 4;
  static constexpr int kLutShift = kCopies == 32 ? 7 : 5;
  static constexpr bool kWideLut = false;   // (the tiled kernel's 256-byte table rows: KbitConfig)
  static constexpr int kLutRowWords = kCopies;
  static constexpr int kPlaneBytes = BLOCK_N * 8 * kBits;   // one K-tile of plane words
  static constexpr uint32_t kTmemCols = BLOCK_M < 32 ? 32 : BLOCK_M;
  static_assert(BLOCK_M % 16 == 0 && BLOCK_M >= 16 && BLOCK_M <= 128, "MMA N for M = 128");
};

template <class Cfg>
struct __align__(1024) KbitTcSmem {
  uint8_t w[2][Cfg::BLOCK_N * 128];       // dequantized weights, K-major SW128 (128 rows x 64 k)
  uint8_t act[2][Cfg::BLOCK_M * 128];     // activations, K-major SW128
  uint8_t planes[2][Cfg::kPlaneBytes];    // plane words of the K-tile
  uint8_t scales[2][Cfg::BLOCK_N * 2];
  uint64_t mbar[2];
  uint32_t tmem_base;
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
kbit_gemm_tc_kernel(const KbitParams p) {
  using T = typename Cfg::T;
  __shared__ __align__(128) uint32_t lut[Cfg::kLutBytes / 4];
  __shared__ float e4m4[256];
  __shared__ float cb_s[32];
  __shared__ int scratch[32];
  extern __shared__ __align__(16) uint8_t tc_smem_raw[];
  uint8_t* aligned = align_smem_1024(tc_smem_raw);
  auto& s = *reinterpret_cast<KbitTcSmem<Cfg>*>(aligned);
  int* slot_start = reinterpret_cast<int*>(aligned + sizeof(KbitTcSmem<Cfg>));
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2;

  // ---- tables (same as the mma.sync kernel) -----------------------------------
  constexpr int kLevels = 1 << Cfg::kBits;
  if (tid < kLevels) cb_s[tid] = __ldg(p.codebook + tid);
  for (int i = tid; i < 256; i += Cfg::kThreads) e4m4[i] = e4m4_decode(i);
  const bool offsets_ok = build_slot_table<Cfg>(slot_start, scratch, p.offsets, p.E, p.M, tid);
  float cb_max = 0.f;
  for (int i = 0; i < kLevels; ++i) cb_max = fmaxf(cb_max, fabsf(cb_s[i]));
  if (!(cb_max > 0.f)) cb_max = 1.f;
  build_pair_lut<Cfg>(lut, cb_s, 1.f / cb_max, tid);
  if (!offsets_ok) {
    T* c = static_cast<T*>(p.c);
    for (size_t i = size_t(blockIdx.x) * Cfg::kThreads + tid; i < size_t(p.M) * p.N;
         i += size_t(gridDim.x) * Cfg::kThreads)
      c[i] = Elem<T>::from_float(__int_as_float(0x7fc00000));
    return;
  }
  const int S = slot_start[p.E];
  const int n_blocks = cdiv(p.N, Cfg::BLOCK_N);
  if (int(blockIdx.x) >= S * n_blocks) return;           // grid is a host-side upper bound
  const TilePos pos = locate_tile<Cfg>(blockIdx.x, S, slot_start, p.offsets, p.E);

  const uint32_t tmem = tc_setup(&s.tmem_base, s.mbar, Cfg::kTmemCols, warp, tid);

  const KbitLayout& L = p.layout;
  const int rows_in_mem = min(Cfg::BLOCK_N, L.n_pad - pos.n0);
  const uint8_t* lut_bytes = reinterpret_cast<const uint8_t*>(lut);
  const uint32_t lane_off = uint32_t(lane % Cfg::kCopies) * 4;
  uint32_t rot[5];
  pair_rotations<Cfg>(rot, lane);
  const uint32_t idesc = sm100::idesc_f16(Elem<T>::kIsBf16, Cfg::BLOCK_N, Cfg::BLOCK_M);
  const T* a = static_cast<const T*>(p.a);

  for (int kt = 0; kt < L.k_tiles; ++kt) {
    const int buf = kt & 1;
    if (kt >= 2) ptx::mbarrier_wait_parity(ptx::smem_u32(&s.mbar[buf]), ((kt - 2) >> 1) & 1);
    // ---- load: plane words, scale bytes, activation tile (SW128) ----------------
    const char* wsrc = reinterpret_cast<const char*>(p.b_packed + L.packed_row(pos.expert, kt, pos.n0));
    for (int off = tid * 16; off < Cfg::kPlaneBytes; off += Cfg::kThreads * 16) {
      const bool ok = off < rows_in_mem * 8 * Cfg::kBits;
      ptx::cp_async_cg16(ptx::smem_u32(s.planes[buf]) + off, ok ? wsrc + off : wsrc, ok ? 16u : 0u);
    }
    const char* ssrc = reinterpret_cast<const char*>(p.b_absmax + L.absmax_row(pos.expert, kt, pos.n0));
    for (int off = tid * 16; off < Cfg::BLOCK_N * 2; off += Cfg::kThreads * 16) {
      const bool ok = off < rows_in_mem * 2;
      ptx::cp_async_cg16(ptx::smem_u32(s.scales[buf]) + off, ok ? ssrc + off : ssrc, ok ? 16u : 0u);
    }
    const int valid_chunks = min(kTileK, p.K - kt * kTileK) / 8;
    for (int i = tid; i < Cfg::BLOCK_M * 8; i += Cfg::kThreads) {
      const int r = i >> 3, ch = i & 7;
      const bool ok = r < pos.rows && ch < valid_chunks;
      ptx::cp_async_cg16(ptx::smem_u32(s.act[buf]) + sw128_offset(r, ch),
                         ok ? a + size_t(pos.row0 + r) * p.K + size_t(kt) * kTileK + ch * 8 : a, ok ? 16u : 0u);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<0>();
    __syncthreads();
    // ---- dequantize into the SW128 weight tile ------------------------------------
    // Pair i of row r, block blk covers k = 32 blk + 2t + 8i (+1): byte 64 blk +
    // 4t + 16 i of the row, i.e. 16-byte chunk 4 blk + i, offset 4t.
    const uint32_t* planes = reinterpret_cast<const uint32_t*>(s.planes[buf]);
    const uint32_t w_s = ptx::smem_u32(s.w[buf]);
    const int t = lane & 3;
    for (int nt = 0; nt < Cfg::kNT; ++nt) {
      const int r0 = warp * 32 + nt * 16 + g;
      const uint32_t sb0 = *reinterpret_cast<const uint16_t*>(s.scales[buf] + 2 * r0);
      const uint32_t sb1 = *reinterpret_cast<const uint16_t*>(s.scales[buf] + 2 * (r0 + 8));
      for (int blk = 0; blk < 2; ++blk) {
        uint32_t pa[Cfg::kBits], pb[Cfg::kBits];
        load_block_planes<Cfg::kBits>(pa, pb, planes, r0, blk);
        const auto xa = pair_word<Cfg::kBits, Cfg::kLutShift>(pa, rot);
        const auto xb = pair_word<Cfg::kBits, Cfg::kLutShift>(pb, rot);
        const float fa = e4m4[(sb0 >> (8 * blk)) & 0xFFu], fb = e4m4[(sb1 >> (8 * blk)) & 0xFFu];
        const uint32_t sa = Elem<T>::pack(fa, fa), sbv = Elem<T>::pack(fb, fb);
        uint32_t va[4], vb[4];
        va[0] = lookup_pair<Cfg, 0>(lut_bytes, lane_off, xa); vb[0] = lookup_pair<Cfg, 0>(lut_bytes, lane_off, xb);
        va[1] = lookup_pair<Cfg, 1>(lut_bytes, lane_off, xa); vb[1] = lookup_pair<Cfg, 1>(lut_bytes, lane_off, xb);
        va[2] = lookup_pair<Cfg, 2>(lut_bytes, lane_off, xa); vb[2] = lookup_pair<Cfg, 2>(lut_bytes, lane_off, xb);
        va[3] = lookup_pair<Cfg, 3>(lut_bytes, lane_off, xa); vb[3] = lookup_pair<Cfg, 3>(lut_bytes, lane_off, xb);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t ch = 4 * blk + i;
          ptx::st_shared_b32(w_s + sw128_offset(r0, ch) + 4 * t, Elem<T>::mul2(va[i], sa));
          ptx::st_shared_b32(w_s + sw128_offset(r0 + 8, ch) + 4 * t, Elem<T>::mul2(vb[i], sbv));
        }
      }
    }
    ptx::fence_proxy_async_shared();
    __syncthreads();
    // ---- MMA: four K = 16 steps of 32 bytes in the 128-byte rows ----------------
    if (tid == 0) {
      ptx::tcgen05_fence_after_thread_sync();
      for (int j = 0; j < 4; ++j)
        ptx::tcgen05_mma_f16(ptx::tmem_addr(tmem, 0, 0), sm100::smem_desc_kmajor_sw128(w_s + 32 * j),
                             sm100::smem_desc_kmajor_sw128(ptx::smem_u32(s.act[buf]) + 32 * j), idesc,
                             (kt > 0 || j > 0) ? 1u : 0u);
      ptx::tcgen05_commit(ptx::smem_u32(&s.mbar[buf]));
    }
    __syncwarp();
  }
  // ---- drain: lane = weight row n, column = activation row m -------------------
  const int last = L.k_tiles - 1;
  ptx::mbarrier_wait_parity(ptx::smem_u32(&s.mbar[last & 1]), (last >> 1) & 1);
  ptx::tcgen05_fence_after_thread_sync();
  T* c = static_cast<T*>(p.c);
  const int n = pos.n0 + 32 * warp + lane;
#pragma unroll
  for (int col0 = 0; col0 < Cfg::BLOCK_M; col0 += 16) {
    uint32_t r[16];
    ptx::tcgen05_ld_32x32b_x16(r, ptx::tmem_addr(tmem, 32 * warp, col0));
    ptx::tcgen05_wait_ld();
#pragma unroll
    for (int j = 0; j < 16; ++j)
      if (col0 + j < pos.rows && n < p.N)
        c[size_t(pos.row0 + col0 + j) * p.N + n] = Elem<T>::from_float(__uint_as_float(r[j]) * cb_max);
  }
  tc_teardown(tmem, Cfg::kTmemCols, warp);
}

}  // namespace kbit

// ---- host launchers of the tcgen05 paths -----------------------------------
namespace kbit_api {

namespace {
template <class Cfg>
const char* kbit_tc_run_cfg(const KbitArgs& a, cudaStream_t stream) {
  kbit::KbitParams p{};
  p.a = a.a; p.b_packed = a.b_packed; p.b_absmax = a.b_absmax; p.codebook = a.codebook;
  p.offsets = a.offsets; p.c = a.c; p.M = a.M; p.N = a.N; p.K = a.K; p.E = a.E;
  p.layout = kbit::KbitLayout{a.N, a.K, a.n_pad, a.k_tiles, a.bits};
  const size_t smem = sizeof(kbit::KbitTcSmem<Cfg>) + size_t((a.E + 1) * 4) + kbit::kSmemSlack;
  const void* kernel = reinterpret_cast<const void*>(&kbit::kbit_gemm_tc_kernel<Cfg>);
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (err != cudaSuccess) return cudaGetErrorString(err);
  const int active = a.E < a.M ? a.E : a.M;
  const int grid = (kbit::cdiv(a.M, Cfg::BLOCK_M) + active) * kbit::cdiv(a.N, Cfg::BLOCK_N);
  kbit::kbit_gemm_tc_kernel<Cfg><<<grid, Cfg::kThreads, smem, stream>>>(p);
  err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

template <int kBits, typename T>
const char* kbit_tc_run_bm(const KbitArgs& a, cudaStream_t stream) {
  const int active = a.E < a.M ? a.E : a.M;
  const int rows = kbit::cdiv(a.M, active > 0 ? active : 1);
  if (rows <= 16) return kbit_tc_run_cfg<kbit::KbitTcConfig<kBits, T, 16>>(a, stream);
  if (rows <= 32) return kbit_tc_run_cfg<kbit::KbitTcConfig<kBits, T, 32>>(a, stream);
  if (rows <= 64) return kbit_tc_run_cfg<kbit::KbitTcConfig<kBits, T, 64>>(a, stream);
  return kbit_tc_run_cfg<kbit::KbitTcConfig<kBits, T, 128>>(a, stream);
}
}  // namespace

const char* kbit_gemm_run_tc(const KbitArgs& a, const KbitPlan&, float*, int32_t*, void* stream) {
  if (a.E > 4096) return "kbit: at most 4096 experts";
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (a.bits * 2 + a.bf16) {
    case 4: return KBIT_IF_FP16(kbit_tc_run_bm<2, __half>(a, s));
    case 5: return KBIT_IF_BF16(kbit_tc_run_bm<2, __nv_bfloat16>(a, s));
    case 6: return KBIT_IF_FP16(kbit_tc_run_bm<3, __half>(a, s));
    case 7: return KBIT_IF_BF16(kbit_tc_run_bm<3, __nv_bfloat16>(a, s));
    case 8: return KBIT_IF_FP16(kbit_tc_run_bm<4, __half>(a, s));
    case 9: return KBIT_IF_BF16(kbit_tc_run_bm<4, __nv_bfloat16>(a, s));
    case 10: return KBIT_IF_FP16(kbit_tc_run_bm<5, __half>(a, s));
    case 11: return KBIT_IF_BF16(kbit_tc_run_bm<5, __nv_bfloat16>(a, s));
    default: return "kbit: bits must be 2..5";
  }
}

const char* nvfp4_gemv_run_tc(const Nvfp4Args& a, int, void* stream) {
  if (!a.sfa_blocked || !a.sfb_blocked) return "tcgen05 nvfp4 path reads the blocked scale layout";
  kbit::Nvfp4Params p;
  p.a = a.a; p.b = a.b; p.sfa = a.sfa; p.sfb = a.sfb; p.c = static_cast<__half*>(a.c);
  p.a_si = a.a_si; p.a_sl = a.a_sl; p.b_sl = a.b_sl; p.sfa_si = 0; p.sfa_sl = 0; p.sfb_sl = 0;
  p.c_si = a.c_si; p.c_sl = a.c_sl; p.m = a.m; p.k = a.k; p.l = a.l; p.sfa_blocked = 1; p.sfb_blocked = 1;
  const size_t smem = sizeof(kbit::tc_nvfp4::Smem) + kbit::kSmemSlack;
  const void* kernel = reinterpret_cast<const void*>(&kbit::nvfp4_gemv_tc_kernel);
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  if (err != cudaSuccess) return cudaGetErrorString(err);
  kbit::nvfp4_gemv_tc_kernel<<<dim3(kbit::cdiv(a.m, 128), a.l), kbit::tc_nvfp4::kThreads, smem,
                               static_cast<cudaStream_t>(stream)>>>(p);
  err = cudaGetLastError();
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

int has_tcgen05() { return 1; }

}  // namespace kbit_api
