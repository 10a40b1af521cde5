// l2_flush_check.cu — which read-based L2 flushes evict which kinds of loads?
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -o /tmp/l2_flush_check scripts/l2_flush_check.cu && /tmp/l2_flush_check
//
// For buffers X of 8, 33 and 66 MB, each reader R reads X, one flush F runs
// over a 256 MB buffer, and R reading X again is timed (CUDA events, median
// of 20). Readers, all 16 bytes per thread and step:
//   ld.nc.na  ld.global.nc.L1::no_allocate
//   ld.nc     ld.global.nc
//   ld        ld.global (default priority; eval/run.py's flush, torch.sum,
//             loads this way: LDG.E.128)
//   cp.async  cp.async.cg into shared memory
//   bulk      cp.async.bulk copies into shared memory
// Flushes: each reader over the 256 MB buffer, cudaMemsetAsync (L2 then holds
// dirty lines), or none (X read twice in a row; at 8 MB that time is the
// host's launch latency, not the GPU's).
// A reader that is much faster after a flush than its bytes allow at DRAM
// bandwidth found X in L2: that flush does not evict what that reader loaded.
// (H100: only the ld.nc.na flush leaves other readers' lines in L2;
// docs/results.md v19.)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sm90.cuh"
#include "bench_util.cuh"   // CK, flush_l2_kernel, median_event_us

// Plain readers, 16-byte loads, one per thread per grid stride:
//   0 ld.global.nc.L1::no_allocate   1 ld.global.nc   2 ld.global (default .ca)
//   3 cp.async.cg into shared memory (waited per step)
template <int kKind>
__global__ void read_kernel(const uint4* p, size_t n, unsigned* sink) {
  __shared__ __align__(16) uint4 buf[256];
  uint32_t x = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    uint4 v;
    if constexpr (kKind == 0) {
      v = kbit::ptx::ld_global_nc_na_v4(p + i);
    } else if constexpr (kKind == 1) {
      asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
    } else if constexpr (kKind == 2) {
      asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
    } else {
      kbit::ptx::cp_async_cg16(uint32_t(__cvta_generic_to_shared(buf + threadIdx.x)), p + i, 16u);
      kbit::ptx::cp_async_commit();
      kbit::ptx::cp_async_wait<0>();
      v = buf[threadIdx.x];
    }
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = x;   // keeps the loads
}

// The same bytes streamed by the bulk-copy engine: each CTA copies its
// contiguous share through a ring of kStages stages of kStage bytes (thread 0
// issues, an mbarrier per stage completes), and every thread reads its 16-byte
// words of each stage from shared memory (what a consumer would do).
template <int kStages, int kStage>
__global__ void __launch_bounds__(256) bulk_read_kernel(const uint8_t* p, size_t bytes, unsigned* sink) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ __align__(8) uint64_t full[kStages];
  const size_t share = (bytes / gridDim.x) & ~size_t(15);
  const uint8_t* src = p + blockIdx.x * share;
  const size_t n = blockIdx.x + 1 == gridDim.x ? bytes - blockIdx.x * share : share;
  const int steps = int((n + kStage - 1) / kStage);
  const uint32_t ring_s = uint32_t(__cvta_generic_to_shared(ring));
  const uint32_t bar0 = uint32_t(__cvta_generic_to_shared(full));
  auto issue = [&](int i) {
    const size_t off = size_t(i) * kStage;
    const uint32_t b = uint32_t(n - off < size_t(kStage) ? n - off : size_t(kStage));
    const uint32_t bar = bar0 + 8 * (i % kStages);
    kbit::ptx::mbarrier_arrive_expect_tx(bar, b);
    kbit::ptx::cp_async_bulk_g2s(ring_s + (i % kStages) * kStage, src + off, b, bar);
  };
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) kbit::ptx::mbarrier_init(bar0 + 8 * i, 1);
    kbit::ptx::fence_mbarrier_init();
    for (int i = 0; i < kStages && i < steps; ++i) issue(i);
  }
  __syncthreads();
  uint32_t x = 0;
  for (int i = 0; i < steps; ++i) {
    kbit::ptx::mbarrier_wait_parity(bar0 + 8 * (i % kStages), (i / kStages) & 1);
    const uint4* st = reinterpret_cast<const uint4*>(ring + (i % kStages) * kStage);
    for (int j = threadIdx.x; j < kStage / 16; j += blockDim.x) {
      const uint4 v = st[j];
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncthreads();
    if (threadIdx.x == 0 && i + kStages < steps) issue(i + kStages);
  }
  if (x == 0x9e3779b9u) *sink = x;
}

constexpr int kBulkStages = 6, kBulkStage = 16384;

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  const size_t flush_bytes = size_t(256) << 20;
  uint8_t* flush;
  unsigned* sink;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemset(flush, 1, flush_bytes));
  CK(cudaMalloc(&sink, 4));
  const auto bulk = bulk_read_kernel<kBulkStages, kBulkStage>;
  const int bulk_smem = kBulkStages * kBulkStage;
  CK(cudaFuncSetAttribute(bulk, cudaFuncAttributeMaxDynamicSharedMemorySize, bulk_smem));
  // readers 0..3: read_kernel<kind>; 4: bulk copies
  const char* names[] = {"ld.nc.na", "ld.nc", "ld", "cp.async", "bulk"};
  auto read = [&](int r, const void* p, size_t bytes) {
    const uint4* q = static_cast<const uint4*>(p);
    if (r == 0) read_kernel<0><<<sms * 8, 256>>>(q, bytes / 16, sink);
    if (r == 1) read_kernel<1><<<sms * 8, 256>>>(q, bytes / 16, sink);
    if (r == 2) read_kernel<2><<<sms * 8, 256>>>(q, bytes / 16, sink);
    if (r == 3) read_kernel<3><<<sms * 8, 256>>>(q, bytes / 16, sink);
    if (r == 4) bulk<<<sms * 2, 256, bulk_smem>>>(static_cast<const uint8_t*>(p), bytes, sink);
  };
  // flushes 0..4: the readers over 256 MB; 5 memset; 6 none
  auto do_flush = [&](int f) {
    if (f < 5) read(f, flush, flush_bytes);
    if (f == 5) CK(cudaMemsetAsync(flush, 1, flush_bytes));
  };
  std::printf("time of reading X (MB) after reading it and a flush (us, median of 20; GB/s in brackets)\n");
  std::printf("%6s %-9s", "X MB", "flush");
  for (const char* n : names) std::printf(" %15s", n);
  std::printf("\n");
  for (size_t mb : {8, 33, 66}) {
    const size_t bytes = mb << 20;
    uint8_t* x;
    CK(cudaMalloc(&x, bytes));
    CK(cudaMemset(x, 0, bytes));
    for (int f = 0; f < 7; ++f) {
      std::printf("%6zu %-9s", mb, f < 5 ? names[f] : f == 5 ? "memset" : "none");
      for (int r = 0; r < 5; ++r) {
        const float us = median_event_us(
            [&] {
              read(r, x, bytes);
              do_flush(f);
            },
            [&] { read(r, x, bytes); }, 20);
        std::printf(" %7.2f (%5.0f)", us, bytes / us / 1e3);
      }
      std::printf("\n");
    }
    CK(cudaFree(x));
  }
  CK(cudaGetLastError());
  return 0;
}
