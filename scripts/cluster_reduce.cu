// cluster_reduce.cu — what the wgmma kernel's split-tile sums cost through the
// global workspace, and what they would cost through a cluster's distributed
// shared memory: a miniature of the epilogue alone. G CTAs, P parts per tile
// (P consecutive CTAs), each CTA holding its part (kQuads float4 per thread,
// as the accumulators of a 64 x 128 or 128 x 192 tile) in registers, all
// finishing at once, as aligned stream-K shares do (docs/results.md v69).
//   global:  finish_tile's protocol (kbit_gemm.cuh): thread 0 claims a place
//            on the tile's counter; the first part stores, the middle ones
//            wait for it and add (red.v4), the last waits for all, loads the
//            sum, adds its own and writes C (fp16);
//   cluster: the tile's P CTAs form a cluster; each stores its part into its
//            own shared memory, a cluster barrier, CTA r sums quads r, r + P,
//            ... of the P parts (ld.shared::cluster) and writes them to C; a
//            second barrier before exit keeps every part readable;
//   hybrid:  clusters of 2 or 3 parts sum that way first, then the P / 2 or
//            P / 3 cluster sums go through the global protocol (clusters of
//            all P parts do not all fit on the GPU at once).
// Time per launch (events over many back-to-back launches of each) minus an
// empty launch of the same shape (with or without clusters); every C checked
// against the sum of the parts on the host.
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I. -Iptx -Iscripts \
//        -o build/cluster_reduce scripts/cluster_reduce.cu && build/cluster_reduce
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

#include <cuda_fp16.h>

#include "api.h"
#include "sm90.cuh"
#include "bench_util.cuh"   // CK

namespace kp = kbit::ptx;

enum Mode { kEmpty = 0, kGlobal = 1, kCluster = 2, kHybrid = 3 };

// Part value of CTA b, thread t, quad q (exact in fp16 once summed over <= 8 parts).
__host__ __device__ inline float4 part_value(int b, int t, int q) {
  return make_float4(float(b % 64 + q), float(t % 128), 0.5f * float(q), 1.f);
}

// The global protocol's claim: thread 0 takes a place among `parts` on the
// counter and waits for what the place needs; every thread gets the role (0
// first, 1 middle, 2 last).
__device__ __forceinline__ int claim(int* cnt, int parts, int* role_s) {
  if (threadIdx.x == 0) {
    const int others = parts - 1;
    const int place = kp::atom_add_relaxed_gpu(cnt, 1) & 0xffff;
    if (place > 0)
      while ((kp::ld_acquire_gpu(cnt) >> 16) < (place < others ? 1 : others)) {
      }
    *role_s = place == 0 ? 0 : place < others ? 1 : 2;
  }
  __syncthreads();
  return *role_s;
}

// Quad q of this thread's place summed over the cluster's first n CTAs'
// parts (each at the same offset of its shared memory, from `base`).
template <int kThreads>
__device__ __forceinline__ float4 cluster_quad_sum(uint32_t base, int q, int n) {
  const uint32_t a = base + uint32_t(q * kThreads + threadIdx.x) * 16;
  float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int j = 0; j < n; ++j) {
    const float4 x = kp::ld_shared_cluster_f32x4(kp::mapa_shared(a, uint32_t(j)));
    s.x += x.x; s.y += x.y; s.z += x.z; s.w += x.w;
  }
  return s;
}

template <int kThreads, int kQuads>
__global__ void __launch_bounds__(kThreads) epilogue_kernel(float* ws, int* ctr, __half* c, int parts, int mode,
                                                            int cs) {
  extern __shared__ float4 part_s[];   // (cluster) kQuads x kThreads quads
  __shared__ int role_s;
  const int tid = threadIdx.x, tile = blockIdx.x / parts;
  float4 v[kQuads];
#pragma unroll
  for (int q = 0; q < kQuads; ++q) v[q] = part_value(blockIdx.x, tid, q);
  __half* ct = c + size_t(tile) * kQuads * kThreads * 4;
  auto store_c = [&](int q, float4 s) {   // 4 halves, 8 bytes
    __half2* o = reinterpret_cast<__half2*>(ct + (size_t(q) * kThreads + tid) * 4);
    o[0] = __floats2half2_rn(s.x, s.y);
    o[1] = __floats2half2_rn(s.z, s.w);
  };
  // This CTA's part into its shared memory, visible to the cluster after the
  // barrier; returns the shared address the others read it at (mapa_shared).
  auto share_part = [&] {
#pragma unroll
    for (int q = 0; q < kQuads; ++q) part_s[q * kThreads + tid] = v[q];
    kp::cluster_arrive_release();
    kp::cluster_wait();
    return kp::smem_u32(part_s);
  };
  if (mode == kEmpty) {
    if (v[0].w < 0.f) store_c(0, v[0]);   // (never: keeps the values)
    return;
  }
  if (mode == kHybrid) {
    // Clusters of cs consecutive parts: CTA r sums quads q = r (mod cs) of
    // its cluster's parts through shared memory, then the tile's parts / cs
    // cluster sums of those quads go through the global protocol (one
    // workspace slot and counter per tile and r).
    const uint32_t base = share_part();
    const int rank = int(kp::cluster_ctarank());
#pragma unroll
    for (int q = 0; q < kQuads; ++q)
      if (q % cs == rank) v[q] = cluster_quad_sum<kThreads>(base, q, cs);
    kp::cluster_arrive_release();   // (this CTA's reads of the others' parts are done; the wait is at exit)
    const int sub = tile * cs + rank;
    float* w = ws + size_t(sub) * kQuads * kThreads * 4;
    int* cnt = ctr + sub;
    const int role = claim(cnt, parts / cs, &role_s);
#pragma unroll
    for (int q = 0; q < kQuads; ++q)
      if (q % cs == rank) {
        float* wq = w + (size_t(q) * kThreads + tid) * 4;
        if (role < 2) {
          kp::st_or_red_f32x4(wq, v[q].x, v[q].y, v[q].z, v[q].w, role == 1);
        } else {
          const float4 x = kp::ld_global_cg_f32x4(wq);
          store_c(q, make_float4(v[q].x + x.x, v[q].y + x.y, v[q].z + x.z, v[q].w + x.w));
        }
      }
    if (role < 2) {
      __syncthreads();
      if (tid == 0) kp::red_add_release_gpu(cnt, 1 << 16);
    } else if (tid == 0) {
      *cnt = 0;
    }
    kp::cluster_wait();
    return;
  }
  if (mode == kCluster) {
    const uint32_t base = share_part(), rank = kp::cluster_ctarank();
    for (int q = int(rank); q < kQuads; q += parts) store_c(q, cluster_quad_sum<kThreads>(base, q, parts));
    kp::cluster_arrive_release();   // (this CTA's reads of the others' parts are done)
    kp::cluster_wait();
    return;
  }
  float* w = ws + size_t(tile) * kQuads * kThreads * 4;
  int* cnt = ctr + tile;
  const int role = claim(cnt, parts, &role_s);
  if (role < 2) {
#pragma unroll
    for (int q = 0; q < kQuads; ++q)
      kp::st_or_red_f32x4(w + (size_t(q) * kThreads + tid) * 4, v[q].x, v[q].y, v[q].z, v[q].w, role == 1);
    __syncthreads();
    if (tid == 0) kp::red_add_release_gpu(cnt, 1 << 16);
    return;
  }
#pragma unroll
  for (int q = 0; q < kQuads; ++q) {
    const float4 x = kp::ld_global_cg_f32x4(w + (size_t(q) * kThreads + tid) * 4);
    store_c(q, make_float4(v[q].x + x.x, v[q].y + x.y, v[q].z + x.z, v[q].w + x.w));
  }
  if (tid == 0) *cnt = 0;
}

template <int kThreads, int kQuads>
static void run(const char* name, int parts, int tiles, size_t smem) {
  auto kernel = epilogue_kernel<kThreads, kQuads>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int grid = parts * tiles;
  const size_t quads = size_t(tiles) * kQuads * kThreads;
  float* ws;
  int* ctr;
  __half* c;
  CK(cudaMalloc(&ws, quads * 16 * 3));   // (hybrid: a slot per tile and cluster rank, up to 3)
  CK(cudaMalloc(&ctr, tiles * 4 * 3));
  CK(cudaMemset(ctr, 0, tiles * 4 * 3));
  CK(cudaMalloc(&c, quads * 8));
  // The variants: protocol, cluster size (1: no clusters), label.
  struct Variant { int mode, cs; const char* label; };
  std::vector<Variant> vs = {{kEmpty, 1, "empty"}, {kGlobal, 1, "global"}, {kEmpty, parts, "empty in clusters"},
                             {kCluster, parts, "cluster of all parts"}};
  if (parts > 2 && parts % 2 == 0) vs.push_back({kHybrid, 2, "pairs, then global"});
  if (parts > 3 && parts % 3 == 0) vs.push_back({kHybrid, 3, "triples, then global"});
  cudaLaunchAttribute attr[8];
  auto config = [&](int i) {
    attr[i] = cudaLaunchAttribute{};
    attr[i].id = cudaLaunchAttributeClusterDimension;
    attr[i].val.clusterDim.x = unsigned(vs[i].cs);
    attr[i].val.clusterDim.y = attr[i].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(unsigned(grid));
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = vs[i].cs > 1 ? &attr[i] : nullptr;
    cfg.numAttrs = vs[i].cs > 1 ? 1 : 0;
    return cfg;
  };
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
  std::printf("%-26s %4d CTAs (%d per SM), %d parts of %.0f KB per tile, %2d tiles\n", name, grid, per_sm, parts,
              kQuads * kThreads * 16 / 1024.0, tiles);
  std::vector<bool> runs(vs.size(), true);
  for (size_t i = 0; i < vs.size(); ++i) {
    if (vs[i].cs == 1) continue;
    int clusters = 0;
    const cudaLaunchConfig_t cfg = config(int(i));
    CK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    const bool all = clusters >= grid / vs[i].cs;
    std::printf("  %-22s clusters of %d resident: %d of %d%s\n", vs[i].label, vs[i].cs, clusters, grid / vs[i].cs,
                all ? "" : " (not all: in waves)");
    // (the hybrid's claims wait for other clusters: every cluster must be resident)
    if (!all && vs[i].mode == kHybrid) runs[i] = false;
  }
  std::vector<double> us(vs.size(), 0);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int reps = 200;
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < vs.size(); ++i) {
      if (!runs[i]) continue;
      const cudaLaunchConfig_t cfg = config(int(i));
      for (int r = 0; r < 10; ++r) CK(cudaLaunchKernelEx(&cfg, kernel, ws, ctr, c, parts, vs[i].mode, vs[i].cs));
      CK(cudaEventRecord(e0));
      for (int r = 0; r < reps; ++r) CK(cudaLaunchKernelEx(&cfg, kernel, ws, ctr, c, parts, vs[i].mode, vs[i].cs));
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      const double t = ms * 1e3 / reps;
      us[i] = round == 0 ? t : std::min(us[i], t);   // best of three rounds
      if (vs[i].mode != kEmpty) {   // C against the sum of the parts
        std::vector<__half> h(quads * 4);
        CK(cudaMemcpy(h.data(), c, h.size() * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemset(c, 0, quads * 8));
        int bad = 0;
        for (int tile = 0; tile < tiles && bad == 0; ++tile)
          for (int q = 0; q < kQuads; ++q)
            for (int t = 0; t < kThreads; ++t) {
              float s[4] = {0, 0, 0, 0};
              for (int j = 0; j < parts; ++j) {
                const float4 v = part_value(tile * parts + j, t, q);
                s[0] += v.x; s[1] += v.y; s[2] += v.z; s[3] += v.w;
              }
              const __half* o = &h[((size_t(tile) * kQuads + q) * kThreads + t) * 4];
              for (int k = 0; k < 4; ++k)
                bad += std::fabs(__half2float(o[k]) - s[k]) > 1e-3f * std::fabs(s[k]) + 1e-3f;
            }
        if (bad) std::printf("  %s: WRONG C (%d values)\n", vs[i].label, bad);
      }
    }
  std::printf("  per launch, best of 3 x %d, and above the empty launch of the same shape:\n", reps);
  for (size_t i = 0; i < vs.size(); ++i) {
    if (!runs[i] || vs[i].mode == kEmpty) continue;
    const double empty = vs[i].cs > 1 ? us[2] : us[0];
    std::printf("    %-22s %6.2f us  (+%.2f)\n", vs[i].label, us[i], us[i] - empty);
  }
  CK(cudaFree(ws));
  CK(cudaFree(ctr));
  CK(cudaFree(c));
}

int main() {
  // The wgmma configurations whose tiles are split (their accumulators per
  // thread: kQuads = BLOCK_M * BLOCK_N / threads / 4); dynamic shared memory
  // sets the CTAs per SM as in the kernel.
  run<384, 16>("8B down M=128 (12 warps)", 6, 22, 200 * 1024);   // 128 x 192 tiles, 132 CTAs
  run<256, 8>("Qwen3 M=64 (8 warps)", 6, 40, 100 * 1024);         // 64 x 128, two CTAs per SM
  run<256, 8>("Qwen3 q/o M=64 (8 warps)", 8, 32, 100 * 1024);
  run<256, 16>("8B M=64 (2 tiles per warp)", 2, 66, 200 * 1024);  // 64 x 256
  return 0;
}
