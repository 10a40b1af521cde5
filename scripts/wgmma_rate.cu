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
//   build/wgmma_rate [sync | issue]
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

// `build/wgmma_rate issue`: how long the issuing warps are held at a group's
// wgmma instructions. Per unit: fence, clock, G wgmma m64nNk16 (A from
// registers, or SS: A from shared memory by descriptor), clock, commit, then
// wait_group 0 (nothing in flight at the next issue) or 1 (the kernel's
// pattern, WAIT1), clock. Thread 0's sums of the issue span and of the whole
// unit, by `which`. If the issue of a register-A group lasts about as long as
// the group's tensor work, a warpgroup cannot overlap its own MMAs with other
// work (docs/results.md v34 inferred that from the loop's clocks).
template <int N, int G, bool SS, bool WAIT1>
__global__ void __launch_bounds__(256, 1) issue_kernel(int units, int which, unsigned long long* out,
                                                       uint32_t seed) {
  extern __shared__ __align__(1024) uint8_t smem[];
  // B: N rows x 128 bytes, then A (SS): 64 rows x 128 bytes; zero.
  for (int i = threadIdx.x; i < (N + 64) * 128 / 4; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0;
  __syncthreads();
  const uint32_t lo_b = kp::wgmma_desc_sw128_kmajor_lo(kp::smem_u32(smem));
  const uint32_t lo_a = kp::wgmma_desc_sw128_kmajor_lo(kp::smem_u32(smem + N * 128));
  float acc[N / 2];
#pragma unroll
  for (int j = 0; j < N / 2; ++j) acc[j] = 0.f;
  uint32_t a[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) a[j] = seed + threadIdx.x + j;
  unsigned long long issue = 0, total = 0;
  for (int u = 0; u < units; ++u) {
    kp::wgmma_fence();
    const unsigned long long t0 = clock64();
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint64_t db = kp::wgmma_desc_sw128_kmajor_of(lo_b + (((g % 4) * 32) >> 4));
      if constexpr (SS)
        kp::wgmma_ss<N, __half>(acc, kp::wgmma_desc_sw128_kmajor_of(lo_a + (((g % 4) * 32) >> 4)), db, 1u);
      else
        kp::wgmma_rs<N, __half>(acc, a, db, 1u);
    }
    const unsigned long long t1 = clock64();
    kp::wgmma_commit();
    if constexpr (WAIT1) kp::wgmma_wait<1>(); else kp::wgmma_wait<0>();
    const unsigned long long t2 = clock64();
    issue += t1 - t0;
    total += t2 - t0;
  }
  kp::wgmma_wait<0>();
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < N / 2; ++j) s += acc[j];
  if (threadIdx.x == 0) out[blockIdx.x] = which ? total : issue;
  if (s == 1.2345f) out[blockIdx.x] = a[0];   // keeps the MMAs
}

template <int N, int G, bool SS, bool WAIT1>
static void run_issue(int sms, int wgs) {
  const int units = 2000, smem = (N + 64) * 128 + 1024;
  auto k = issue_kernel<N, G, SS, WAIT1>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  double per[2];
  for (int which = 0; which < 2; ++which)
    per[which] = mean_cta_clocks(sms, [&](unsigned seed, unsigned long long* out) {
                   k<<<sms, 128 * wgs, smem>>>(units, which, out, seed);
                 }) / units;
  std::printf("%s N=%2d G=%d wgs=%d wait_group %d: issue %6.1f, unit %6.1f clocks (tensor work of the group alone %d)\n",
              SS ? "SS" : "RS", N, G, wgs, WAIT1 ? 1 : 0, per[0], per[1], G * N / 2);
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
  if (argc > 1 && std::string(argv[1]) == "issue") {
    for (int wgs = 1; wgs <= 2; ++wgs) {
      run_issue<64, 1, false, false>(sms, wgs);
      run_issue<64, 4, false, false>(sms, wgs);
      run_issue<64, 8, false, false>(sms, wgs);
      run_issue<64, 4, true, false>(sms, wgs);
      run_issue<64, 8, true, false>(sms, wgs);
      run_issue<64, 4, false, true>(sms, wgs);
      run_issue<64, 8, false, true>(sms, wgs);
      run_issue<64, 4, true, true>(sms, wgs);
      run_issue<64, 8, true, true>(sms, wgs);
      run_issue<32, 4, false, false>(sms, wgs);
      run_issue<32, 4, false, true>(sms, wgs);
      // the same work in half the instructions (N = 128)
      run_issue<128, 2, false, false>(sms, wgs);
      run_issue<128, 4, false, false>(sms, wgs);
      run_issue<128, 2, false, true>(sms, wgs);
      run_issue<128, 4, false, true>(sms, wgs);
      run_issue<128, 2, true, true>(sms, wgs);
    }
    return 0;
  }
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
    run<128, 2>(sms, wgs);
    run<128, 4>(sms, wgs);
  }
  return 0;
}
