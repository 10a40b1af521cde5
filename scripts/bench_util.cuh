// bench_util.cuh — what the standalone nvcc-built tools in scripts/ share
// (nvfp4_bench.cu, gemv_bench.cu, tc_bench.cu, l2_flush_check.cu,
// stream_probe.cu; racecheck_probe.cu uses CK only, the wgmma
// microbenchmarks CK and mean_cta_clocks; built with -Iptx, included after a
// family header): the CK macro, the L2 flush (kernel and buffer), the
// harness's plain read, an event-timed median, graph capture / replay timing, and
// per-CTA clock spans.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#include "plain_read.cuh"   // kbit::plain_read_kernel (needs the family header first)

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

// A 256 MB flush buffer (5x the largest L2 here) and its launch: flush(st)
// reads it all with flush_l2_kernel on `blocks` CTAs of 256 threads.
struct L2Flush {
  static constexpr size_t kBytes = size_t(256) << 20;
  uint4* buf = nullptr;
  unsigned* sink = nullptr;
  int blocks;
  explicit L2Flush(int blocks_) : blocks(blocks_) {
    CK(cudaMalloc(&buf, kBytes));
    CK(cudaMemset(buf, 1, kBytes));
    CK(cudaMalloc(&sink, 64));
  }
  void operator()(cudaStream_t st = 0) const { flush_l2_kernel<<<blocks, 256, 0, st>>>(buf, kBytes / 16, sink); }
};

// The plain read that eval/run.py --graph times beside every benchmark
// (kbit::plain_read_launch, ptx/plain_read.cuh): a tool's "read" column is the
// harness's ceiling for the same bytes. read(src, bytes, st) reads bytes / 16
// 16-byte words at src (16-byte aligned).
struct PlainRead {
  uint32_t* out = nullptr;   // the CTAs' checksums
  int sms;
  explicit PlainRead(int sms_) : sms(sms_) { CK(cudaMalloc(&out, size_t(sms) * kbit::kPlainReadCtasPerSm * 4)); }
  void operator()(const void* src, size_t bytes, cudaStream_t st = 0) const {
    CK(kbit::plain_read_launch(src, bytes, out, sms, st));
  }
};

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

// A CUDA graph of `iters` captured iterations of body(r) on stream st (e.g. an
// L2 flush, then the call under test). Timing a graph replay leaves out the
// host's launch cost, as eval/run.py --graph does.
template <class Body>
cudaGraphExec_t capture_graph(cudaStream_t st, int iters, Body body) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int r = 0; r < iters; ++r) body(r);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphDestroy(g));
  return ge;
}

// Time per iteration in microseconds of a graph of `iters` iterations: the
// median of 7 replays after one untimed replay.
inline double median_graph_us(cudaGraphExec_t ge, cudaStream_t st, int iters) {
  static cudaEvent_t e0 = nullptr, e1 = nullptr;
  if (!e0) {
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
  }
  std::vector<float> t;
  CK(cudaGraphLaunch(ge, st));
  for (int i = 0; i < 7; ++i) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f / iters);
  }
  std::sort(t.begin(), t.end());
  return double(t[3]);
}

// Time per call in microseconds of body() (launches on st) under graph
// replay: `iters` captured (L2 flush, body) pairs, the median replay
// (median_graph_us), flushes included (subtract the same for an empty body).
template <class Body>
double flushed_graph_us(cudaStream_t st, int iters, const L2Flush& flush, Body body) {
  cudaGraphExec_t g = capture_graph(st, iters, [&](int) {
    flush(st);
    body();
  });
  const double t = median_graph_us(g, st, iters);
  CK(cudaGraphExecDestroy(g));
  return t;
}

// Mean over `ctas` CTAs of the clock64 span each CTA's thread 0 stores to
// out[blockIdx.x]: `launch(seed, out)` launches the kernel; a warm-up launch
// (seed 1) first, then the measured one (seed 2).
template <class Launch>
double mean_cta_clocks(int ctas, Launch launch) {
  unsigned long long* d;
  CK(cudaMalloc(&d, size_t(ctas) * 8));
  for (unsigned seed = 1; seed <= 2; ++seed) {
    launch(seed, d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
  }
  std::vector<unsigned long long> h(ctas);
  CK(cudaMemcpy(h.data(), d, size_t(ctas) * 8, cudaMemcpyDeviceToHost));
  CK(cudaFree(d));
  double mean = 0;
  for (unsigned long long c : h) mean += double(c) / ctas;
  return mean;
}
