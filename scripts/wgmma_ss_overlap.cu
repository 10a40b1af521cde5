// wgmma_ss_overlap.cu — would a warp-specialized wgmma kernel overlap the
// dequantization with the MMAs? A miniature of the design that docs/design.md
// leaves open under "Dequantization with the MMAs": producer warpgroups
// dequantize weights into shared memory (pair-table lookups as in the kbit
// kernels, one PRMT and one LDS per weight pair, a scale HMUL2, a 16-byte
// store per 8 weights into the 128-byte-swizzled K-major A tile), and
// consumer warpgroups only issue SS wgmma (A and B by descriptor) on a ring of
// A stages ordered by full/empty mbarriers. The consumers never build A, so
// a warp held at the wgmma issue (v34's inference for the RS kernel, where
// the same warps dequantize and issue) holds no dequantization.
//
// One unit: one K-tile (64) of kTiles 64-row weight tiles = 8192 weights,
// against N activation columns (the call's M) in a static B tile. What the
// miniature leaves out: the weights' and activations' copies from global
// memory (cp.async writes into shared memory: ~4 KB of plane words and
// N * 128 bytes of activations per unit), the bit-plane index extraction
// (here one byte of a packed word per pair; XA adds ALU steps per pair to
// model it), per-32-weight scale changes, and the epilogue.
//
// MODE bits: 1 producers dequantize (else they only hand stages over), 2
// consumers issue the MMAs (else they only hand stages back). Mode 3 is the
// design; 1 and 2 alone are its two floors. CHECK: two units of known data,
// D compared with the host's A * B^T (wrapper and descriptor check).
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I. -Iptx -Iscripts -o build/wgmma_ss_overlap scripts/wgmma_ss_overlap.cu
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_fp16.h>

#include "api.h"
#include "sm90_wgmma.cuh"
#include "bench_util.cuh"   // CK, mean_cta_clocks

namespace kp = kbit::ptx;

constexpr int kTiles = 2;                     // 64-row weight tiles per unit
constexpr int kStages = 4;                    // A ring depth
constexpr int kTileBytes = 64 * 128;          // 64 rows x 64 K of 16-bit elements
constexpr int kStageBytes = kTiles * kTileBytes;
constexpr int kChunks = kTiles * 64 * 8;      // 16-byte chunks (8 weights) per unit
// Shared layout: pair table (256 entries x 32 lane replicas x 4 bytes) | B
// (N rows x 128 bytes) | A ring | packed indices (one word per chunk) | barriers.
constexpr int kTableOff = 0, kBOff = 65536;
template <int N> __host__ __device__ constexpr int a_off() { return kBOff + N * 128; }
template <int N> __host__ __device__ constexpr int w_off() { return a_off<N>() + kStages * kStageBytes; }
template <int N> __host__ __device__ constexpr int bar_off() { return w_off<N>() + kChunks * 4; }
template <int N> __host__ __device__ constexpr int smem_bytes() { return bar_off<N>() + 2 * kStages * 8; }

__host__ __device__ inline float codebook(int i) { return (i - 7.5f) / 8.f; }
__host__ __device__ inline uint32_t index_word(int q) { return uint32_t(q) * 2654435761u ^ 0x5bd1e995u; }
__host__ __device__ inline float b_value(int n, int k) { return float((n * 7 + k * 3) % 11 - 5) / 8.f; }

// Both kernels' shared data: the pair table (entry e, 256 bytes as the kbit
// kernels' k = 4 table, holds (codebook[e & 15], codebook[e >> 4]) in its 32
// lane replicas), the B tile (B[n][k], 128-byte-swizzled K-major) and the
// packed index words.
template <int N>
__device__ void fill_shared(uint8_t* smem, int tid) {
  for (int i = tid; i < 256 * 32; i += blockDim.x) {
    const int e = i >> 5;
    reinterpret_cast<__half2*>(smem + kTableOff)[e * 64 + (i & 31)] = __floats2half2_rn(codebook(e & 15), codebook(e >> 4));
  }
  for (int i = tid; i < N * 64; i += blockDim.x) {
    const int n = i >> 6, k = i & 63;
    reinterpret_cast<__half*>(smem + kBOff + n * 128 + (((k >> 3) ^ (n & 7)) << 4))[k & 7] = __float2half(b_value(n, k));
  }
  for (int q = tid; q < kChunks; q += blockDim.x) reinterpret_cast<uint32_t*>(smem + w_off<N>())[q] = index_word(q);
}

template <int N, int P, int C, int MODE, int XA>
__global__ void __launch_bounds__(128 * (P + C), 1)
ss_kernel(int units, unsigned long long* clocks, float* d_out, __half2 scale2) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31;
  const uint32_t base = kp::smem_u32(smem);
  const uint32_t full = base + bar_off<N>(), empty = full + kStages * 8;
  fill_shared<N>(smem, tid);
  for (int i = tid; i < kStages * kStageBytes / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem + a_off<N>())[i] = 0;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      kp::mbarrier_init(full + 8 * s, 128 * P);
      kp::mbarrier_init(empty + 8 * s, 128 * C);
    }
  }
  kp::fence_proxy_async_smem();   // (the zeroed A ring and B, before the MMAs read them)
  __syncthreads();
  const unsigned long long t0 = clock64();

  if (tid < 128 * P) {
    // ---- producers: dequantize unit u into stage u % kStages ----------------
    const uint32_t lane_word = uint32_t(lane) * 4;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(smem + w_off<N>());
    for (int u = 0; u < units; ++u) {
      const int s = u % kStages;
      kp::mbarrier_wait_parity(empty + 8 * s, ((u / kStages) & 1) ^ 1);
      if constexpr (MODE & 1) {
        const uint32_t stage = base + a_off<N>() + s * kStageBytes;
        // All of the thread's lookups first, then its stores: the loads and
        // stores are volatile asm, which keeps their order, so a store between
        // them would serialize the chunks' lookups.
        constexpr int kPer = kChunks / (128 * P);
        uint32_t h[kPer][4];
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
          uint32_t w = words[i * 128 * P + tid];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
#pragma unroll
            for (int l = 0; l < XA; ++l) w = __funnelshift_r(w, w, 8) ^ (w >> 29);   // (bit-plane extraction stand-in)
            const uint32_t addr = kp::prmt(w, lane_word, 0x5504u | uint32_t(j) << 4);   // (byte j, lane)
            uint32_t v = kp::ld_shared_const_u32(base + kTableOff + addr);
            __half2 x = __hmul2(*reinterpret_cast<__half2*>(&v), scale2);
            h[i][j] = *reinterpret_cast<uint32_t*>(&x);
          }
        }
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
          const int q = i * 128 * P + tid, r = q >> 3, c = q & 7;
          kp::st_shared_v4_u32(stage + r * 128 + ((c ^ (r & 7)) << 4), make_uint4(h[i][0], h[i][1], h[i][2], h[i][3]));
        }
      }
      kp::fence_proxy_async_smem();   // this thread's stores before the MMAs' async-proxy reads
      kp::mbarrier_arrive(full + 8 * s);
    }
  } else {
    // ---- consumers: warpgroup c issues the MMAs of its tiles -----------------
    const int c = (tid >> 7) - P;
    constexpr int kMine = kTiles / C;
    float acc[kMine][N / 2];
#pragma unroll
    for (int t = 0; t < kMine; ++t)
#pragma unroll
      for (int j = 0; j < N / 2; ++j) acc[t][j] = 0.f;
    const uint32_t b_lo = kp::wgmma_desc_sw128_kmajor_lo(base + kBOff);
    for (int u = 0; u < units; ++u) {
      const int s = u % kStages;
      kp::mbarrier_wait_parity(full + 8 * s, (u / kStages) & 1);
      if constexpr (MODE & 2) {
        const uint32_t a_lo = kp::wgmma_desc_sw128_kmajor_lo(base + a_off<N>() + s * kStageBytes + c * kMine * kTileBytes);
        kp::wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
#pragma unroll
          for (int t = 0; t < kMine; ++t)
            kp::wgmma_ss<N, __half>(acc[t], kp::wgmma_desc_sw128_kmajor_of(a_lo + ((t * kTileBytes + ks * 32) >> 4)),
                                    kp::wgmma_desc_sw128_kmajor_of(b_lo + ((ks * 32) >> 4)), 1u);
        kp::wgmma_commit();
        kp::wgmma_wait<1>();   // the previous unit's MMAs are done: its stage is free
        if (u > 0) kp::mbarrier_arrive(empty + 8 * ((u - 1) % kStages));
      } else {
        kp::mbarrier_arrive(empty + 8 * s);
      }
    }
    kp::wgmma_wait<0>();
    if (d_out != nullptr) {   // D[tile][64][N] from the accumulator layout
      const int w = (tid >> 5) & 3, g = lane >> 2, t4 = lane & 3;
#pragma unroll
      for (int t = 0; t < kMine; ++t)
#pragma unroll
        for (int j = 0; j < N / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = 16 * w + g + (e >> 1) * 8, col = 8 * j + 2 * t4 + (e & 1);
            d_out[(size_t(c * kMine + t) * 64 + row) * N + col] = acc[t][4 * j + e];
          }
    } else {
      float x = 0.f;
#pragma unroll
      for (int t = 0; t < kMine; ++t)
#pragma unroll
        for (int j = 0; j < N / 2; ++j) x += acc[t][j];
      if (x == 1.2345f) clocks[blockIdx.x] = 1;   // keeps the MMAs (thread 0 overwrites it after the barrier)
    }
  }
  __syncthreads();
  if (tid == 0) clocks[blockIdx.x] = clock64() - t0;
}

// The register form in the same miniature, for comparison (the structure of
// the kbit wgmma kernel, ptx/kbit_wgmma.cuh): each of WG warpgroups looks up
// its own 64-row tile's A fragments (one pair per register, the same table
// and lookup as the producers above) and issues RS wgmma on them; fragments
// double-buffered, the next unit's looked up while the MMAs run (wait_group 1).
// One unit: WG * 4096 weights. N = 128 as two m64n64k16 per step (the RS
// wrappers stop at N = 64, as the kernel's). Timing only. MMA = false: the
// lookups alone (the fragments folded into the accumulators, so that none
// is dead code). PING (two warpgroups): they take turns at the MMA issue,
// named barriers 1 and 2 passing the turn (the "ping-pong" order of
// FlashAttention-3, Shah et al. 2024), so one warpgroup's lookups run beside
// the other's MMAs; `last` skips the final hand-over nobody waits for.
// REG: k = 2 with the codebook in two registers instead of the table (four
// fp16 values are 8 bytes: one PRMT picks a pair of them, its selector
// x * 0x22 + 0x1010 from the two 2-bit indices in bytes 0 and 1 of x), so
// the lookups take no shared-memory bandwidth.
template <int N, int WG, int XA, bool MMA, bool PING = false, bool REG = false>
__device__ __forceinline__ void rs_unit(float (&acc)[N / 64][32], const uint32_t (&cur)[4][4], uint32_t (&nxt)[4][4],
                                        uint32_t b_lo, uint32_t table, const uint32_t* words, int q0,
                                        uint32_t lane_word, __half2 scale2, int wg = 0, bool last = false) {
  if constexpr (MMA) {
    if constexpr (PING) kp::bar_sync(1 + wg, 256);   // this warpgroup's turn
    kp::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int nb = 0; nb < N / 64; ++nb)
        kp::wgmma_rs<64, __half>(acc[nb], cur[ks], kp::wgmma_desc_sw128_kmajor_of(b_lo + ((nb * 8192 + ks * 32) >> 4)), 1u);
    kp::wgmma_commit();
    if constexpr (PING) {
      if (!(last && wg == 1)) kp::bar_arrive(2 - wg, 256);   // the other's turn
    }
    kp::wgmma_wait<1>();   // the previous unit's MMAs are done: nxt is free
  } else {
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[0][4 * ks + j] = __uint_as_float(__float_as_uint(acc[0][4 * ks + j]) ^ cur[ks][j]);
  }
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    uint32_t w = words[(q0 + ks * 128 * WG) & (kChunks - 1)];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
#pragma unroll
      for (int l = 0; l < XA; ++l) w = __funnelshift_r(w, w, 8) ^ (w >> 29);
      uint32_t v;
      if constexpr (REG) {
        const uint32_t cb01 = 0xB800BC00u, cb23 = 0x3C003800u;   // (-1, -0.5), (0.5, 1) as fp16 pairs
        v = kp::prmt(cb01, cb23, ((w >> (4 * j)) & 0x0303u) * 0x22u + 0x1010u);
      } else {
        v = kp::ld_shared_const_u32(table + kp::prmt(w, lane_word, 0x5504u | uint32_t(j) << 4));
      }
      __half2 x = __hmul2(*reinterpret_cast<__half2*>(&v), scale2);
      nxt[ks][j] = *reinterpret_cast<uint32_t*>(&x);
    }
  }
}

template <int N, int WG, int XA, bool MMA, bool PING, bool REG>
__global__ void __launch_bounds__(128 * WG, 1) rs_kernel(int units, unsigned long long* clocks, __half2 scale2) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31;
  const uint32_t base = kp::smem_u32(smem);
  fill_shared<N>(smem, tid);
  kp::fence_proxy_async_smem();
  __syncthreads();
  const unsigned long long t0 = clock64();
  const uint32_t lane_word = uint32_t(lane) * 4, b_lo = kp::wgmma_desc_sw128_kmajor_lo(base + kBOff);
  const uint32_t* words = reinterpret_cast<const uint32_t*>(smem + w_off<N>());
  float acc[N / 64][32];
#pragma unroll
  for (int nb = 0; nb < N / 64; ++nb)
#pragma unroll
    for (int j = 0; j < 32; ++j) acc[nb][j] = 0.f;
  uint32_t fa[4][4], fb[4][4];
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int j = 0; j < 4; ++j) fa[ks][j] = fb[ks][j] = 0x3c003c00u;
  static_assert(!PING || WG == 2, "turns between two warpgroups");
  const int wg = tid >> 7;
  if (PING && wg == 1) kp::bar_arrive(1, 256);   // warpgroup 0 goes first
  for (int u = 0; u < units; u += 2) {
    rs_unit<N, WG, XA, MMA, PING, REG>(acc, fa, fb, b_lo, base + kTableOff, words, tid + u, lane_word, scale2, wg);
    rs_unit<N, WG, XA, MMA, PING, REG>(acc, fb, fa, b_lo, base + kTableOff, words, tid + u + 1, lane_word, scale2, wg,
                                  u + 2 >= units);
  }
  if constexpr (MMA) kp::wgmma_wait<0>();
  float x = 0.f;
#pragma unroll
  for (int nb = 0; nb < N / 64; ++nb)
#pragma unroll
    for (int j = 0; j < 32; ++j) x += acc[nb][j];
  if (x == 1.2345f) clocks[blockIdx.x] = 1;   // keeps the MMAs (thread 0 overwrites it after the barrier)
  __syncthreads();
  if (tid == 0) clocks[blockIdx.x] = clock64() - t0;
}

// Never launched: makes ptxas assemble the bf16 SS forms too (CI builds
// this file; the benchmarks above use f16).
__global__ void ss_bf16_assembles(float* d, uint64_t a, uint64_t b) {
  float x[64] = {};
  kp::wgmma_fence();
  kp::wgmma_ss<64, __nv_bfloat16>(x, a, b, 0u);
  kp::wgmma_ss<128, __nv_bfloat16>(x, a, b, 1u);
  kp::wgmma_commit();
  kp::wgmma_wait<0>();
  d[threadIdx.x] = x[0] + x[63];
}

// The host's D = units * A * B^T for the check (A from the same table and words).
template <int N>
static bool check() {
  auto k = ss_kernel<N, 2, 1, 3, 0>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<N>()));
  float* d;
  unsigned long long* clk;
  CK(cudaMalloc(&d, sizeof(float) * kTiles * 64 * N));
  CK(cudaMalloc(&clk, 16));
  const int units = 2;
  k<<<1, 384, smem_bytes<N>()>>>(units, clk, d, __floats2half2_rn(1.f, 1.f));
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> h(kTiles * 64 * N);
  CK(cudaMemcpy(h.data(), d, sizeof(float) * h.size(), cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  CK(cudaFree(clk));
  double worst = 0;
  for (int m = 0; m < kTiles * 64; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int kk = 0; kk < 64; ++kk) {
        const int q = m * 8 + kk / 8, pair = (kk % 8) / 2;
        const uint32_t byte = (index_word(q) >> (8 * pair)) & 255u;
        const float a = __half2float(__float2half(codebook(kk % 2 ? int(byte >> 4) : int(byte & 15))));
        ref += double(a) * __half2float(__float2half(b_value(n, kk)));
      }
      worst = std::fmax(worst, std::fabs(units * ref - h[size_t(m) * N + n]));
    }
  std::printf("check N=%d: max |D - ref| = %.3g over %d x %d (%s)\n", N, worst, kTiles * 64, N,
              worst < 1e-3 ? "ok" : "WRONG");
  return worst < 1e-3;
}

template <int N, int P, int C, int MODE, int XA = 0>
static void run(int sms) {
  const int units = 4000;
  auto k = ss_kernel<N, P, C, MODE, XA>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<N>()));
  const double per_unit = mean_cta_clocks(sms, [&](unsigned seed, unsigned long long* out) {
                            k<<<sms, 128 * (P + C), smem_bytes<N>()>>>(units, out, nullptr, __floats2half2_rn(1.f, 1.f));
                          }) / units;
  // Llama-3-8B gate/up (14336 x 4096 weights) on `sms` SMs at 1.98 GHz, this loop alone.
  const double us = 14336.0 * 4096 / (8192.0 * sms) * per_unit / 1980.0;
  std::printf("N=%3d producers %d WG, consumers %d WG, XA %d, mode %d%s%s: %7.1f clocks/unit, %5.1f weights/clock, "
              "8B gate/up loop %5.1f us\n",
              N, P, C, XA, MODE, MODE & 1 ? " dequant" : "", MODE & 2 ? " MMA" : "", per_unit, 8192.0 / per_unit, us);
}

template <int N, int WG, int XA = 0, bool MMA = true, bool PING = false, bool REG = false>
static void run_rs(int sms) {
  const int units = 4000;
  auto k = rs_kernel<N, WG, XA, MMA, PING, REG>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<N>()));
  const double per_unit = mean_cta_clocks(sms, [&](unsigned seed, unsigned long long* out) {
                            k<<<sms, 128 * WG, smem_bytes<N>()>>>(units, out, __floats2half2_rn(1.f, 1.f));
                          }) / units;
  const double weights = 4096.0 * WG;
  std::printf("N=%3d RS: %d WG look up%s, XA %d:%s %7.1f clocks/unit, %5.1f weights/clock, "
              "8B gate/up loop %5.1f us\n",
              N, WG, MMA ? " and issue" : " only   ", XA, PING ? " turns " : REG ? " k2 reg" : "       ", per_unit, weights / per_unit, 14336.0 * 4096 / (weights * sms) * per_unit / 1980.0);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const bool ok = check<64>() & check<128>();
  std::printf("tensor work per unit: %d clocks at N = 64, %d at N = 128 (2048 FMA per SM-clock)\n",
              kTiles * 64 * 64 * 64 / 2048, kTiles * 64 * 64 * 128 / 2048);
  run<64, 2, 1, 1>(sms); run<64, 2, 1, 2>(sms); run<64, 2, 1, 3>(sms);
  run<64, 1, 1, 1>(sms); run<64, 1, 1, 3>(sms);
  run<64, 2, 2, 3>(sms); run<64, 2, 1, 3, 1>(sms); run<64, 2, 1, 1, 1>(sms);
  run<64, 4, 1, 1>(sms); run<64, 4, 1, 3>(sms); run<64, 4, 1, 3, 1>(sms);
  run<128, 2, 1, 1>(sms); run<128, 2, 1, 2>(sms); run<128, 2, 1, 3>(sms);
  run<128, 2, 2, 3>(sms); run<128, 2, 1, 3, 1>(sms);
  run_rs<64, 2>(sms); run_rs<64, 3>(sms); run_rs<64, 2, 1>(sms);
  run_rs<128, 2>(sms); run_rs<128, 3>(sms); run_rs<128, 2, 1>(sms);
  run_rs<64, 2, 0, false>(sms); run_rs<64, 2, 1, false>(sms); run_rs<64, 3, 0, false>(sms);
  run_rs<64, 2, 0, true, true>(sms); run_rs<64, 2, 1, true, true>(sms);
  run_rs<128, 2, 0, true, true>(sms); run_rs<128, 2, 1, true, true>(sms);
  run_rs<64, 2, 0, false, false, true>(sms); run_rs<64, 2, 0, true, false, true>(sms);
  run_rs<64, 2, 1, true, false, true>(sms); run_rs<128, 2, 0, true, false, true>(sms);
  run_rs<64, 3, 0, true, false, true>(sms);
  return ok ? 0 : 1;
}
