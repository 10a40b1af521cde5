// wgmma_rate.cu — throughput of wgmma.mma_async with A from registers
// (m64nNk16, f16 in, f32 accumulate; B from a 128-byte-swizzled K-major tile
// in shared memory), by N, instructions per commit group (G) and warpgroups
// per SM, in the pattern of the kbit wgmma kernel: per unit one fence, G
// instructions, one commit, then wait_group 1. Nothing else runs: this is the
// tensor pipe's rate, against which the kernel's MMA time is read.
// In this loop form ptxas serializes groups of 12 (C7514, accumulators read
// inside the pipeline stage), so G stays at 8 or below; the kernel's groups of
// 12 are not serialized (its SASS has one WARPGROUP.DEPBAR per unit).
//
// `build/wgmma_rate sync` times mma.sync.m16n8k16 (f16, f32 accumulate;
// sm80.cuh's wrapper, which every kbit mma.sync kernel issues) instead: W warps
// per SM, each with NACC independent accumulator chains and A, B in registers.
// That is the tensor floor of the decode and row-owning kernels: their
// FMAs (weights x activation rows) over this rate.
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I. -Iptx -Iscripts -o build/wgmma_rate scripts/wgmma_rate.cu
//   build/wgmma_rate [sync]
#include <cstdio>
#include <cstdint>
#include <string>
#include "api.h"
#include "sm90_wgmma.cuh"
#include "bench_util.cuh"   // CK, mean_cta_clocks

namespace kp = kbit::ptx;

template <int N, int G, int NACC>
__global__ void __launch_bounds__(384, 1) rate_kernel(int units, unsigned long long* out, uint32_t seed) {
  extern __shared__ __align__(1024) uint8_t smem[];
  // B: N rows (activation rows) x 64 halves (128 bytes), zero.
  for (int i = threadIdx.x; i < N * 128 / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0;
  __syncthreads();
  const uint32_t lo = kp::wgmma_desc_sw128_kmajor_lo(kp::smem_u32(smem));
  float acc[NACC][N / 2];
#pragma unroll
  for (int t = 0; t < NACC; ++t)
#pragma unroll
    for (int j = 0; j < N / 2; ++j) acc[t][j] = 0.f;
  uint32_t a[2][4];
#pragma unroll
  for (int j = 0; j < 4; ++j) a[0][j] = a[1][j] = seed + threadIdx.x + j;
  const unsigned long long t0 = clock64();
  for (int u = 0; u < units; ++u) {
    kp::wgmma_fence();
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint64_t desc = kp::wgmma_desc_sw128_kmajor_of(lo + (((g % 4) * 32) >> 4));
      kp::wgmma_rs<N, __half>(acc[g % NACC], a[u & 1], desc, 1u);   // accumulators round robin
    }
    kp::wgmma_commit();
    kp::wgmma_wait<1>();
  }
  kp::wgmma_wait<0>();
  const unsigned long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int t = 0; t < NACC; ++t)
#pragma unroll
    for (int j = 0; j < N / 2; ++j) s += acc[t][j];
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (s == 1.2345f) out[blockIdx.x] = a[0][0];   // keeps the MMAs
}

template <int N, int G, int NACC = 1>
static void run(int sms, int wgs) {
  const int units = 2000, smem = N * 128 + 1024;
  auto k = rate_kernel<N, G, NACC>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const double per_unit =   // clocks per unit, all warpgroups in parallel
      mean_cta_clocks(sms, [&](unsigned seed, unsigned long long* out) {
        k<<<sms, 128 * wgs, smem>>>(units, out, seed);
      }) / units;
  const double per_mma = per_unit / (G * wgs);   // clocks per wgmma per SM
  std::printf("N=%3d G=%2d acc=%d wgs=%d: %7.1f clocks/unit, %6.2f clocks/wgmma per SM, %6.0f FMA/clk/SM\n", N, G, NACC,
              wgs, per_unit, per_mma, 64.0 * N * 16 / per_mma);
}

// mma.sync: NACC independent chains per warp, units of NACC instructions.
template <int NACC>
__global__ void sync_rate_kernel(int units, unsigned long long* out, uint32_t seed) {
  float acc[NACC][4];
#pragma unroll
  for (int c = 0; c < NACC; ++c)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[c][j] = 0.f;
  uint32_t a[4], b0 = seed ^ threadIdx.x, b1 = seed + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 4; ++j) a[j] = seed * (j + 1) + threadIdx.x;
  __syncthreads();
  const unsigned long long t0 = clock64();
  for (int u = 0; u < units; ++u) {
#pragma unroll
    for (int c = 0; c < NACC; ++c) kp::mma_m16n8k16_f16(acc[c], a, b0, b1, acc[c]);
  }
  __syncthreads();   // every warp's chains done
  const unsigned long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < NACC; ++c)
#pragma unroll
    for (int j = 0; j < 4; ++j) s += acc[c][j];
  if (threadIdx.x == 0) out[blockIdx.x] = t1 - t0;
  if (s == 1.2345f) out[blockIdx.x] = a[0];   // keeps the MMAs
}

template <int NACC>
static void run_sync(int sms, int warps) {
  const int units = 4000;
  const double per_unit = mean_cta_clocks(sms, [&](unsigned seed, unsigned long long* out) {
                            sync_rate_kernel<NACC><<<sms, 32 * warps>>>(units, out, seed);
                          }) / units;
  const double per_mma = per_unit / (NACC * warps);   // clocks per mma.sync per SM
  std::printf("mma.sync m16n8k16 warps=%2d chains=%d: %7.2f clocks/unit, %5.3f clocks/mma per SM, %6.0f FMA/clk/SM\n",
              warps, NACC, per_unit, per_mma, 16.0 * 8 * 16 / per_mma);
}

int main(int argc, char** argv) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (argc > 1 && std::string(argv[1]) == "sync") {
    for (int warps : {4, 8, 12, 16}) {
      run_sync<1>(sms, warps);
      run_sync<2>(sms, warps);
      run_sync<4>(sms, warps);
      run_sync<8>(sms, warps);
    }
    return 0;
  }
  for (int wgs = 1; wgs <= 2; ++wgs) {
    run<16, 4>(sms, wgs);
    run<16, 8>(sms, wgs);
    run<32, 1>(sms, wgs);
    run<32, 2>(sms, wgs);
    run<32, 4>(sms, wgs);
    run<32, 6, 3>(sms, wgs);
    run<32, 8>(sms, wgs);
    run<64, 4>(sms, wgs);
    run<64, 6, 3>(sms, wgs);
  }
  return 0;
}
