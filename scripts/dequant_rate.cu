// dequant_rate.cu — the wgmma kernel's dequantization alone: how many weights
// per SM-clock its own stage (dequant_ktile in ptx/kbit_wgmma.cuh: plane
// words, pair indices, pair-table lookups, E4M4 scales, HMUL2) reaches with
// no MMA, no copies and no barriers, by MMA-warp count per SM.
//
// Why: on the H200 the kbit calls are bound by their dequantization down to
// M = 1 (docs/design.md, "Where issue 3 stands on the H200"): the best call
// reaches ~19 weights per SM-clock, and 75 % of SOL at M = 16 asks for ~23.
// This separates the chain's own rate from what the kernels lose around it
// (MMAs, the ring's waits, set-up and epilogues).
//
// One CTA per SM, W warps, each running the kernel's per-K-tile stage over
// kStages synthetic ring slots (random plane words and scale bytes, a table of
// finite fp16 pairs), unrolled by two over two fragment sets as the kernel's
// loop is. The fragments are folded into one word (fold: one LOP3 per two
// words, 1/8 of an instruction per weight pair and thread, counted in the
// rate) so that they must be computed.
// kSync adds, per K-tile and before its dequantization, the wgmma kernel's
// per-unit synchronization without its MMAs or copies (v71: the kernel's loop
// dequantizes at ~2.5x the clocks of this stage alone): bit 0 an mbarrier
// wait on a phase that completed before the loop (the stage's wait, which
// then succeeds at once), bit 1 lane 0's arrival on a barrier that never
// completes (the slot's release), bit 2 wgmma.fence, an empty commit group
// and wait_group 1 (the MMAs' ordering, no MMA issued).
// Warps past the configuration's kWarps reuse its rows (warp % kWarps): the
// same shared-memory addresses, as two CTAs of one SM would read the same
// table. Weights per SM-clock = W x 16 kNT rows x 64 x K-tiles / the CTA's
// clocks (mean over CTAs).
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I. -Iptx -Iscripts \
//        -o build/dequant_rate scripts/dequant_rate.cu && build/dequant_rate
#define KBIT_LAUNCH_NO_API
#include <cstdint>
#include <cstdio>
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_gemv.cuh"
#include "kbit_rows.cuh"
#include "launch.cuh"   // WgmmaCfg: the configurations the shape rule launches
#include "bench_util.cuh"   // CK, mean_cta_clocks

__device__ __forceinline__ uint32_t mix(uint32_t x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; return x ^ (x >> 16);
}

// The fragments folded into one word by three-input XORs (LOP3): one
// instruction per two fragment words, which keeps ptxas from removing their
// computation (an empty asm statement taking them as operands does not).
template <class Cfg>
__device__ __forceinline__ void fold(uint32_t& acc, const uint32_t (&f)[Cfg::kNT][4][4]) {
#pragma unroll
  for (int nt = 0; nt < Cfg::kNT; ++nt)
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      acc = kbit::ptx::lop3<0x96>(acc, f[nt][s][0], f[nt][s][1]);
      acc = kbit::ptx::lop3<0x96>(acc, f[nt][s][2], f[nt][s][3]);
    }
}

template <class Cfg, int W, int kSync>
__global__ void __launch_bounds__(W * 32, 1) dequant_rate_kernel(int ktiles, unsigned long long* out, uint32_t seed) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ float e4m4[256];
  __shared__ __align__(8) uint64_t bars[2];   // (kSync) 0: one completed phase, 1: never completes
  const uint32_t bar_done = kbit::ptx::smem_u32(&bars[0]), bar_open = kbit::ptx::smem_u32(&bars[1]);
  if (threadIdx.x == 0) {
    kbit::ptx::mbarrier_init(bar_done, 1);
    kbit::ptx::mbarrier_init(bar_open, (1 << 20) - 1);   // (the largest count: no phase ends in the loop)
    kbit::ptx::fence_mbarrier_init();
    kbit::ptx::mbarrier_arrive(bar_done);   // phase 0 complete
  }
  uint8_t* lut = smem;
  uint8_t* ring = smem + (Cfg::kLutBytes + 1023) / 1024 * 1024;
  const int tid = threadIdx.x, lane = tid & 31, warp = (tid >> 5) % Cfg::kWarps;
  // Table entries: two fp16 in [0.5, 1) (0x38..0x3B high bytes), so HMUL2 sees
  // normal numbers, as with the codebook's values.
  for (int i = tid; i < Cfg::kLutBytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(lut)[i] = 0x38003800u | (mix(uint32_t(i) ^ seed) & 0x03FF03FFu);
  for (int i = tid; i < Cfg::kStages * Cfg::kStageBytes / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(ring)[i] = mix(uint32_t(i) * 2654435761u + seed);
  for (int i = tid; i < 256; i += blockDim.x) e4m4[i] = 1.f + float(i) / 512.f;
  __syncthreads();
  const uint32_t lane_off = Cfg::kRowPairLut ? uint32_t(lane) * 8 : uint32_t(lane % Cfg::kCopies) * 4;
  uint32_t rot[5];
  kbit::pair_rotations<Cfg>(rot, lane);
  uint32_t fa[Cfg::kNT][4][4], fb[Cfg::kNT][4][4], acc = 0;
  auto sync = [&] {
    if constexpr ((kSync & 4) != 0) {
      kbit::ptx::wgmma_fence();
      kbit::ptx::wgmma_commit();
      kbit::ptx::wgmma_wait<1>();
    }
    if constexpr ((kSync & 1) != 0) kbit::ptx::mbarrier_wait_parity(bar_done, 0u);
    if constexpr ((kSync & 2) != 0)
      if (lane == 0) kbit::ptx::mbarrier_arrive(bar_open);
  };
  const long long t0 = clock64();
  for (int kt = 0; kt < ktiles; kt += 2) {
    sync();
    kbit::dequant_ktile<Cfg>(fa, ring + (kt % Cfg::kStages) * Cfg::kStageBytes, lut, lane_off, e4m4, rot, warp, lane);
    fold<Cfg>(acc, fa);
    sync();
    kbit::dequant_ktile<Cfg>(fb, ring + ((kt + 1) % Cfg::kStages) * Cfg::kStageBytes, lut, lane_off, e4m4, rot, warp,
                             lane);
    fold<Cfg>(acc, fb);
  }
  if constexpr ((kSync & 4) != 0) kbit::ptx::wgmma_wait<0>();
  __syncthreads();
  if (tid == 0) out[blockIdx.x] = (unsigned long long)(clock64() - t0);
  if (acc == seed) out[blockIdx.x] ^= 1;   // (keeps the fold; a random match changes a clock's last bit)
}

template <class Cfg, int W, int kSync = 0>
void run(const char* name, int sms, int ktiles) {
  const size_t smem = (Cfg::kLutBytes + 1023) / 1024 * 1024 + size_t(Cfg::kStages) * Cfg::kStageBytes;
  CK(cudaFuncSetAttribute(dequant_rate_kernel<Cfg, W, kSync>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          int(smem)));
  const double clocks = mean_cta_clocks(sms, [&](unsigned seed, unsigned long long* d) {
    dequant_rate_kernel<Cfg, W, kSync><<<sms, W * 32, smem>>>(ktiles, d, seed);
  });
  const double weights = double(W) * 16 * Cfg::kNT * 64 * ktiles;
  std::printf("%-34s %2d warps  sync %d  %8.0f clocks  %6.2f weights per SM-clock  %5.0f clocks per K-tile\n", name,
              W, kSync, clocks, weights / clocks, clocks / ktiles);
}

// The rule's configurations (launch.cuh WgmmaCfg: k, dtype, BLOCK_M, tiles per warp).
using Wg4x3 = kbit::WgmmaCfg<4, __half, 64, 3>;   // Llama-3-70B M = 33..64: 8 MMA warps, three tiles each
using Wg4x2 = kbit::WgmmaCfg<4, __half, 64, 2>;   // Llama-3-8B M = 33..64
using Wg4x1 = kbit::WgmmaCfg<4, __half, 64, 1>;   // Qwen3-Coder-Next M = 33..64 (two CTAs per SM)
using Wg4m128 = kbit::WgmmaCfg<4, __half, 128, 1>;   // M = 65..128, 12 MMA warps
using Wg2x3 = kbit::WgmmaCfg<2, __half, 64, 3>;   // k = 2 (the row-pair table)
using Wg4w8 = kbit::WgmmaCfg<4, __half, 128, 1, 8>;   // Llama-3-8B gate/up M = 65..128: whole tiles, 8 MMA warps

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int ktiles = 4096;
  std::printf("dequant_ktile alone, %d CTAs of W warps (one per SM), %d K-tiles per warp\n", sms, ktiles);
  run<Wg4x3, 4>("k4 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  run<Wg4x3, 8>("k4 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  run<Wg4x3, 12>("k4 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  run<Wg4x3, 16>("k4 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  run<Wg4x2, 8>("k4 BLOCK_M 64, 2 tiles/warp", sms, ktiles);
  run<Wg4x1, 8>("k4 BLOCK_M 64, 1 tile/warp", sms, ktiles);
  run<Wg4x1, 16>("k4 BLOCK_M 64, 1 tile/warp", sms, ktiles);
  run<Wg4m128, 12>("k4 BLOCK_M 128, 12 MMA warps", sms, ktiles);
  run<Wg4m128, 16>("k4 BLOCK_M 128, 12 MMA warps", sms, ktiles);
  run<Wg2x3, 8>("k2 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  run<Wg2x3, 16>("k2 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  // The per-unit synchronization around the stage (kSync), 8B M = 128's and 70B M = 64's configurations.
  run<Wg4w8, 8, 0>("k4 BLOCK_M 128, 8 MMA warps", sms, ktiles);
  run<Wg4w8, 8, 1>("k4 BLOCK_M 128, 8 MMA warps", sms, ktiles);
  run<Wg4w8, 8, 3>("k4 BLOCK_M 128, 8 MMA warps", sms, ktiles);
  run<Wg4w8, 8, 4>("k4 BLOCK_M 128, 8 MMA warps", sms, ktiles);
  run<Wg4w8, 8, 7>("k4 BLOCK_M 128, 8 MMA warps", sms, ktiles);
  run<Wg4x3, 8, 7>("k4 BLOCK_M 64, 3 tiles/warp", sms, ktiles);
  return 0;
}
