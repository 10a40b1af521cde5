// bench_util.cuh — what the standalone nvcc-built tools in scripts/ share
// (nvfp4_bench.cu, l2_flush_check.cu, stream_probe.cu; racecheck_probe.cu uses
// CK only; built with -Iptx): the CK macro, the L2 flush and an event-timed median.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

// Exits with file, line and the CUDA error text when a runtime call fails.
#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// The L2 flush: reads n 16-byte words with default-priority loads, as
// eval/run.py's flush (torch.sum: LDG.E.128) does; it leaves the L2 clean and
// evicts what any kind of load brought in. A flush of L1::no_allocate loads
// would not (scripts/l2_flush_check.cu, docs/results.md v19).
__global__ void flush_l2_kernel(const uint4* p, size_t n, unsigned* sink) {
  uint32_t x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9e3779b9u) *sink = x;   // keeps the loads
}

// Median time in microseconds (CUDA events) of launch(), each run after
// before() (e.g. an L2 flush, outside the timed span); 3 untimed runs first.
template <class Before, class Launch>
float median_event_us(Before before, Launch launch, int reps) {
  static cudaEvent_t e0 = nullptr, e1 = nullptr;
  if (!e0) {
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
  }
  std::vector<float> t;
  for (int r = 0; r < reps + 3; ++r) {
    before();
    CK(cudaEventRecord(e0));
    launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 3) t.push_back(ms * 1e3f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
