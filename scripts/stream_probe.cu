// stream_probe.cu — how fast can one kernel stream N bytes from DRAM into the
// SMs on this GPU, by copy method? The ceiling the decode kernel works under.
//
// Each kernel reads every byte once and folds it into a checksum (the consumer
// reads everything it receives, as the decode kernel's dequantization does):
//   ldg      LDG.128 grid-stride, 8 loads in flight per thread, 4 CTAs x 256 threads per SM
//   cpa      per-warp cp.async ring (16 B per lane and copy), one CTA of W warps per SM
//   bulk     per-warp ring of cp.async.bulk copies (one instruction per stage,
//            completion on an mbarrier per stage), one CTA of W warps per SM
// Warps own contiguous unit ranges; a unit is one stage of bytes. With k_tiles
// > 1 consecutive units of a warp are k_tiles-strided in memory (unit u is
// chunk (u % k_tiles) * n_tiles + u / k_tiles), the access pattern of the kbit
// tiled layout (K-tile-major, a warp walks one tile's K-tiles).
//
// Timing: CUDA-graph replay of R x (L2 flush, kernel) minus R x (L2 flush),
// median of 7 replays, as eval/run.py --graph does. The flush reads 256 MB (as
// eval/run.py's flush, a sum, does: it leaves the L2 clean); `--dirty` writes
// it instead (a memset: the L2 is left full of dirty lines).
//
// Build (sm_90a): nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -o build/stream_probe scripts/stream_probe.cu
// Run: build/stream_probe [MB ...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sm90.cuh"
#include "bench_util.cuh"   // CK, L2Flush, capture_graph, median_graph_us

using namespace kbit;

struct Job {
  const uint8_t* src;
  long long units;   // stage-sized units
  int k_tiles, n_tiles;
  unsigned* out;
  unsigned long long* counter;   // dyn variants: next unit to hand out (zeroed before each launch)
  unsigned long long* times;     // per CTA: start, end (%globaltimer ns); null: not recorded
};

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void stamp(const Job& j, int which) {
  if (which == 1 && j.times) __syncthreads();   // the CTA's end: its last warp
  if (j.times && threadIdx.x == 0) j.times[2 * blockIdx.x + which] = globaltimer();
}

__device__ __forceinline__ const uint8_t* unit_ptr(const Job& j, long long u, int bytes) {
  const long long tile = u / j.k_tiles, kt = u - tile * j.k_tiles;
  return j.src + (size_t(kt) * j.n_tiles + tile) * bytes;
}

__device__ __forceinline__ unsigned fold_stage(const uint8_t* s, int bytes, int lane) {
  unsigned x = 0;
  for (int o = lane * 16; o < bytes; o += 512) {
    const uint4 v = *reinterpret_cast<const uint4*>(s + o);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  return x;
}

__global__ void __launch_bounds__(256) ldg_kernel(const uint4* src, size_t n, unsigned* out,
                                                  unsigned long long* times) {
  if (times && threadIdx.x == 0) times[2 * blockIdx.x] = globaltimer();
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  unsigned x = 0;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 7 * stride < n; i += 8 * stride) {
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = ptx::ld_global_nc_na_v4(src + i + j * stride);
#pragma unroll
    for (int j = 0; j < 8; ++j) x ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  for (; i < n; i += stride) {
    const uint4 v = ptx::ld_global_nc_na_v4(src + i);
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x12345678u) out[0] = x;
  if (times) {
    __syncthreads();
    if (threadIdx.x == 0) times[2 * blockIdx.x + 1] = globaltimer();
  }
}

template <int kWarps>
__device__ __forceinline__ void warp_range(const Job& j, long long& b, long long& e) {
  const long long w = (long long)blockIdx.x * kWarps + (threadIdx.x >> 5), nw = (long long)gridDim.x * kWarps;
  b = w * j.units / nw;
  e = (w + 1) * j.units / nw;
}

// kGrab > 0: units are handed out dynamically, kGrab at a time per warp
// (one atomic per grab); otherwise each warp owns a contiguous range.
template <int kWarps, int kBytes, int kStages, int kGrab>
__global__ void __launch_bounds__(kWarps * 32, 1) cpa_kernel(Job j) {
  extern __shared__ __align__(128) uint8_t smem[];
  stamp(j, 0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint8_t* ring = smem + size_t(warp) * kStages * kBytes;
  const uint32_t ring_s = ptx::smem_u32(ring);
  long long b, e;
  warp_range<kWarps>(j, b, e);
  long long ld = b;
  if (kGrab) {   // consumed count is tracked separately: [b, e) is the current grab
    ld = e = 0;
  }
  long long pending = 0;   // dyn: units issued and not yet consumed
  bool done = false;
  auto grab = [&]() {
    unsigned long long v = 0;
    if (lane == 0) v = atomicAdd(j.counter, (unsigned long long)kGrab);
    v = __shfl_sync(0xffffffffu, v, 0);
    ld = (long long)v;
    e = ld + kGrab < j.units ? ld + kGrab : j.units;
    if (ld >= j.units) done = true;
  };
  auto produce = [&](int slot) {
    if (kGrab && !done && ld >= e) grab();
    if (ld < e) {
      ++pending;
      const uint8_t* g = unit_ptr(j, ld, kBytes);
#pragma unroll
      for (int o = lane * 16; o < kBytes; o += 512) ptx::cp_async_cg16(ring_s + slot * kBytes + o, g + o, 16u);
      ++ld;
    }
    ptx::cp_async_commit();
  };
  for (int s = 0; s < kStages - 1; ++s) produce(s);
  unsigned x = 0;
  int slot = 0;
  const long long n = kGrab ? 0 : e - b;
  for (long long u = 0; kGrab ? pending > 0 : u < n; ++u) {
    ptx::cp_async_wait<kStages - 2>();
    __syncwarp();
    produce(slot == 0 ? kStages - 1 : slot - 1);
    x ^= fold_stage(ring + slot * kBytes, kBytes, lane);
    --pending;
    slot = slot + 1 == kStages ? 0 : slot + 1;
  }
  ptx::cp_async_wait<0>();
  if (x == 0x12345678u) j.out[0] = x;
  stamp(j, 1);
}

template <int kWarps, int kBytes, int kStages>
__global__ void __launch_bounds__(kWarps * 32, 1) bulk_kernel(Job j) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kWarps][kStages];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint8_t* ring = smem + size_t(warp) * kStages * kBytes;
  const uint32_t ring_s = ptx::smem_u32(ring), bar_s = ptx::smem_u32(&bars[warp][0]);
  long long b, e;
  warp_range<kWarps>(j, b, e);
  stamp(j, 0);
  if (lane == 0) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(bar_s + 8 * s, 1);
    ptx::fence_mbarrier_init();
  }
  __syncwarp();
  if (lane == 0) {
    for (int s = 0; s < kStages && b + s < e; ++s) {
      ptx::mbarrier_arrive_expect_tx(bar_s + 8 * s, kBytes);
      ptx::cp_async_bulk_g2s(ring_s + s * kBytes, unit_ptr(j, b + s, kBytes), kBytes, bar_s + 8 * s);
    }
  }
  unsigned x = 0;
  int slot = 0;
  uint32_t phase = 0;
  for (long long u = b; u < e; ++u) {
    ptx::mbarrier_wait_parity(bar_s + 8 * slot, phase);
    x ^= fold_stage(ring + slot * kBytes, kBytes, lane);
    __syncwarp();   // every lane read the stage before it is refilled
    if (lane == 0 && u + kStages < e) {
      ptx::mbarrier_arrive_expect_tx(bar_s + 8 * slot, kBytes);
      ptx::cp_async_bulk_g2s(ring_s + slot * kBytes, unit_ptr(j, u + kStages, kBytes), kBytes, bar_s + 8 * slot);
    }
    if (++slot == kStages) {
      slot = 0;
      phase ^= 1;
    }
  }
  if (x == 0x12345678u) j.out[0] = x;
  stamp(j, 1);
}

struct Variant {
  std::string name;
  int bytes;   // stage bytes (0: ldg)
  void (*launch)(const Job&, int sms, cudaStream_t);
  size_t smem;
};

template <int W, int B, int S, int G>
void launch_cpa(const Job& j, int sms, cudaStream_t st) {
  cpa_kernel<W, B, S, G><<<sms, W * 32, size_t(W) * B * S, st>>>(j);
}
template <int W, int B, int S>
void launch_bulk(const Job& j, int sms, cudaStream_t st) {
  bulk_kernel<W, B, S><<<sms, W * 32, size_t(W) * B * S, st>>>(j);
}
template <int W, int B, int S, int G = 0>
Variant cpa(const char* n) {
  CK(cudaFuncSetAttribute(cpa_kernel<W, B, S, G>, cudaFuncAttributeMaxDynamicSharedMemorySize, W * B * S));
  return {n, B, launch_cpa<W, B, S, G>, size_t(W) * B * S};
}
template <int W, int B, int S>
Variant bulk(const char* n) {
  CK(cudaFuncSetAttribute(bulk_kernel<W, B, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, W * B * S));
  return {n, B, launch_bulk<W, B, S>, size_t(W) * B * S};
}

int main(int argc, char** argv) {
  std::vector<double> mbs;
  bool dirty = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--dirty") dirty = true;
    else mbs.push_back(atof(argv[i]));
  }
  if (mbs.empty()) mbs = {0.6, 4.5, 31.0, 125.0, 1024.0};
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("device: %s, %d SMs\n", prop.name, sms);
  const size_t max_bytes = size_t(*std::max_element(mbs.begin(), mbs.end()) * 1e6) + (1 << 20);
  uint8_t* src;
  unsigned* out;
  unsigned long long *counter, *times;
  CK(cudaMalloc(&counter, 8));
  CK(cudaMalloc(&times, size_t(16) * 8 * sms * 4));
  CK(cudaMalloc(&src, max_bytes));
  const L2Flush flush(sms * 4);
  CK(cudaMalloc(&out, 64));
  CK(cudaMemset(src, 1, max_bytes));

  std::vector<Variant> vs = {
      {"ldg", 0, nullptr, 0},
      cpa<16, 2048, 3>("cpa W16 2K x3"),
      cpa<16, 2048, 4>("cpa W16 2K x4"),
      cpa<16, 2048, 4, 2>("cpa dyn2 2K x4"),
      cpa<16, 2048, 4, 8>("cpa dyn8 2K x4"),
      cpa<16, 2048, 6, 8>("cpa dyn8 2K x6"),
      bulk<16, 2048, 4>("bulk W16 2K x4"),
      bulk<4, 16384, 3>("bulk W4 16K x3"),
  };
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto flush_l2 = [&](int r) {
    if (dirty) CK(cudaMemsetAsync(flush.buf, r & 0xff, L2Flush::kBytes, st));
    else flush(st);
  };
  printf("L2 flush: %s 256 MB\n", dirty ? "memset (dirty lines)" : "read (clean lines)");
  const int R = 20;

  auto graph_of = [&](auto body) {
    return capture_graph(st, R, [&](int r) {
      flush_l2(r);
      CK(cudaMemsetAsync(counter, 0, 8, st));   // every graph has it: the dyn variants' counter
      body();
    });
  };
  auto time_graph = [&](cudaGraphExec_t ge) { return median_graph_us(ge, st, R); };
  cudaGraphExec_t g_flush = graph_of([] {});
  const double t_flush = time_graph(g_flush);

  for (int strided = 0; strided < 2; ++strided) {
    printf("\n%s: graph us per call (GB/s)\n", strided ? "K-tile strided units (k_tiles 32 / 128)" : "sequential units");
    printf("%-16s", "MB");
    for (double mb : mbs) printf("%20.1f", mb);
    printf("\n");
    for (const Variant& v : vs) {
      if (strided && v.bytes == 0) continue;
      printf("%-16s", v.name.c_str());
      for (double mb : mbs) {
        const int unit = v.bytes ? v.bytes : 16;
        const long long units = (long long)(mb * 1e6) / unit;
        Job j{src, units, 1, 1, out, counter, nullptr};
        if (strided) {
          j.k_tiles = mb < 10 ? 32 : 128;
          j.units = units / j.k_tiles * j.k_tiles;
          j.n_tiles = int(j.units / j.k_tiles);
        }
        cudaGraphExec_t g = graph_of([&] {
          if (v.bytes == 0) ldg_kernel<<<sms * 4, 256, 0, st>>>(reinterpret_cast<const uint4*>(src), units, out, nullptr);
          else v.launch(j, sms, st);
        });
        const double t = time_graph(g) - t_flush;
        CK(cudaGraphExecDestroy(g));
        printf("%10.2f (%6.0f)", t, double(j.units) * unit / (t * 1e3));
        fflush(stdout);
      }
      printf("\n");
    }
  }
  // Per-CTA start and end at 125 MB (sequential units), one launch after a flush:
  // the spread of CTA durations shows how balanced a static split is.
  printf("\nper-CTA times at 125 MB, one launch (us from the first CTA's start)\n");
  printf("%-16s %9s %9s %9s %9s %9s\n", "", "last strt", "min end", "mean end", "max end", "mean dur");
  for (const Variant& v : vs) {
    const int unit = v.bytes ? v.bytes : 16;
    const long long units = 125000000LL / unit;
    const int ctas = v.bytes ? sms : sms * 4;
    std::vector<double> best_first;
    std::vector<unsigned long long> h(2 * ctas);
    double stats[5] = {0, 0, 0, 0, 0};
    const int reps = 5;
    for (int rep = 0; rep < reps; ++rep) {
      flush_l2(rep);
      CK(cudaMemsetAsync(counter, 0, 8, st));
      Job j{src, units, 1, 1, out, counter, times};
      if (v.bytes == 0) ldg_kernel<<<ctas, 256, 0, st>>>(reinterpret_cast<const uint4*>(src), units, out, times);
      else v.launch(j, sms, st);
      CK(cudaMemcpyAsync(h.data(), times, 16 * ctas, cudaMemcpyDeviceToHost, st));
      CK(cudaStreamSynchronize(st));
      unsigned long long t0 = ~0ull;
      for (int c = 0; c < ctas; ++c) t0 = std::min(t0, h[2 * c]);
      double ls = 0, mn = 1e30, mean = 0, mx = 0, dur = 0;
      for (int c = 0; c < ctas; ++c) {
        const double s0 = (h[2 * c] - t0) * 1e-3, e = (h[2 * c + 1] - t0) * 1e-3;
        ls = std::max(ls, s0);
        mn = std::min(mn, e);
        mx = std::max(mx, e);
        mean += e / ctas;
        dur += (e - s0) / ctas;
      }
      stats[0] += ls / reps; stats[1] += mn / reps; stats[2] += mean / reps; stats[3] += mx / reps; stats[4] += dur / reps;
    }
    printf("%-16s %9.2f %9.2f %9.2f %9.2f %9.2f\n", v.name.c_str(), stats[0], stats[1], stats[2], stats[3], stats[4]);
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  return 0;
}
