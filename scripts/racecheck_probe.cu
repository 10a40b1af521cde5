// racecheck_probe.cu — what compute-sanitizer racecheck understands of a
// shared-memory ring that one warp refills and other warps read, ordered by
// mbarriers only (no CTA barrier in the loop): the wgmma kernel's copy-warp
// ring (ptx/kbit_wgmma.cuh) in miniature. Each variant is a correct protocol;
// the question is which of them racecheck reports.
//
//   tma   the refill is a bulk copy (async proxy): consumers read a slot, then
//         arrive on its empty mbarrier; the producer waits on it, fences
//         (fence.proxy.async) and copies; the copy completes on the slot's full
//         mbarrier (complete_tx), which the consumers wait on.   [the kernel]
//   st    the same ring, refilled by the producer warp's own st.shared, then
//         an arrive on the full mbarrier (generic proxy throughout).
//   once  bulk copies into slots that are never refilled: only the
//         copy -> complete_tx -> wait -> read order (no reuse).
//
// Every variant checks its sums against the host's (a wrong order would show
// as a wrong sum, not only as a report).
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -lineinfo -o build/racecheck_probe scripts/racecheck_probe.cu
// Run:   compute-sanitizer --tool racecheck build/racecheck_probe {tma|st|once}
#include <cstring>

#include "sm90_wgmma.cuh"   // fence_proxy_async_smem; sm90.cuh's bulk copy and mbarriers
#include "bench_util.cuh"   // CK

using namespace kbit;

constexpr int kSlots = 4, kSlotWords = 256, kConsumers = 4, kRounds = 64;

template <int kMode>   // 0 tma, 1 st, 2 once
__global__ void ring_kernel(const uint32_t* src, uint32_t* sums) {
  __shared__ __align__(128) uint32_t ring[kSlots][kSlotWords];
  __shared__ __align__(8) uint64_t full[kSlots], empty[kSlots];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int rounds = kMode == 2 ? kSlots : kRounds;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSlots; ++s) {
      ptx::mbarrier_init(ptx::smem_u32(&full[s]), 1);
      ptx::mbarrier_init(ptx::smem_u32(&empty[s]), kConsumers);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();
  if (warp == kConsumers) {   // the producer warp
    uint32_t phases = 0;
    for (int n = 0; n < rounds; ++n) {
      const int s = n % kSlots;
      if (n >= kSlots) {
        ptx::mbarrier_wait_parity(ptx::smem_u32(&empty[s]), (phases >> s) & 1u);
        phases ^= 1u << s;
      }
      const uint32_t* g = src + size_t(n) * kSlotWords;
      if constexpr (kMode == 1) {
        for (int i = lane; i < kSlotWords; i += 32) ring[s][i] = g[i];
        __syncwarp();
        if (lane == 0) ptx::mbarrier_arrive(ptx::smem_u32(&full[s]));
      } else if (lane == 0) {
        ptx::fence_proxy_async_smem();
        ptx::mbarrier_arrive_expect_tx(ptx::smem_u32(&full[s]), kSlotWords * 4);
        ptx::cp_async_bulk_g2s(ptx::smem_u32(ring[s]), g, kSlotWords * 4, ptx::smem_u32(&full[s]));
      }
    }
    return;
  }
  uint32_t phases = 0, sum = 0;
  for (int n = 0; n < rounds; ++n) {
    const int s = n % kSlots;
    ptx::mbarrier_wait_parity(ptx::smem_u32(&full[s]), (phases >> s) & 1u);
    phases ^= 1u << s;
    for (int i = lane; i < kSlotWords; i += 32) sum += ring[s][i] * (warp + 1);
    __syncwarp();
    if (lane == 0) ptx::mbarrier_arrive(ptx::smem_u32(&empty[s]));
  }
  for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) sums[blockIdx.x * kConsumers + warp] = sum;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "tma";
  const int m = !strcmp(mode, "st") ? 1 : !strcmp(mode, "once") ? 2 : 0;
  const int blocks = 4, rounds = m == 2 ? kSlots : kRounds;
  std::vector<uint32_t> h(size_t(kRounds) * kSlotWords);
  for (size_t i = 0; i < h.size(); ++i) h[i] = uint32_t(i * 2654435761u);
  uint32_t *src, *sums;
  CK(cudaMalloc(&src, h.size() * 4));
  CK(cudaMalloc(&sums, blocks * kConsumers * 4));
  CK(cudaMemcpy(src, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  const int threads = (kConsumers + 1) * 32;
  if (m == 0) ring_kernel<0><<<blocks, threads>>>(src, sums);
  if (m == 1) ring_kernel<1><<<blocks, threads>>>(src, sums);
  if (m == 2) ring_kernel<2><<<blocks, threads>>>(src, sums);
  CK(cudaGetLastError());
  std::vector<uint32_t> got(blocks * kConsumers);
  CK(cudaMemcpy(got.data(), sums, got.size() * 4, cudaMemcpyDeviceToHost));
  uint32_t want = 0;
  for (size_t i = 0; i < size_t(rounds) * kSlotWords; ++i) want += h[i];
  int bad = 0;
  for (int b = 0; b < blocks; ++b)
    for (int w = 0; w < kConsumers; ++w) bad += got[b * kConsumers + w] != want * uint32_t(w + 1);
  std::printf("%s: %s\n", mode, bad ? "WRONG SUMS" : "sums ok");
  return bad != 0;
}
