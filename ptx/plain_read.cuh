// plain_read.cuh — the streaming ceiling: a kernel that reads bytes and does
// nothing else with them.
//
// `eval/run.py --graph` times it on each benchmark's minimal bytes, the same
// way it times the call. The result is what reading those bytes alone costs
// on this GPU, launch and DRAM ramp-up included. SOL (bytes ÷ the streaming
// bandwidth of a 2 GiB read) leaves out the fixed part. On small layers that
// part is most of the call: on an H100 a plain read of 31 MB reached ~84 % of
// SOL and 4.5 MB ~40 % (docs/results.md v9, v49). Other copy methods beat it
// by up to 7 % on small layers (v49), so scripts/standings.py names a target
// out of reach only where it lies more than 8 % beyond this read.
//
// The method is the fastest of scripts/stream_probe.cu's at 4.5–125 MB, within
// 1–3 % of the others: 16-byte loads that do not allocate in L1, grid-stride,
// 8 loads in flight per thread, 4 CTAs of 256 threads per SM (fewer where the
// bytes do not give every thread a load). The last round of a thread's loads,
// fewer than 8, is issued at once too (predicated), which matters on small
// layers, where it is the only round. Each CTA stores the xor of the words it
// read (one store per CTA, after its loads): a test can check that every byte
// was read, and no load is dead code.
#pragma once

namespace kbit {

constexpr int kPlainReadThreads = 256;
constexpr int kPlainReadCtasPerSm = 4;
constexpr int kPlainReadDepth = 8;   // loads in flight per thread

__global__ void __launch_bounds__(kPlainReadThreads) plain_read_kernel(const uint4* src, size_t n, uint32_t* out) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  uint32_t x = 0;
  for (; i + (kPlainReadDepth - 1) * stride < n; i += kPlainReadDepth * stride) {
    uint4 v[kPlainReadDepth];
#pragma unroll
    for (int j = 0; j < kPlainReadDepth; ++j) v[j] = ptx::ld_global_nc_na_v4(src + i + j * stride);
#pragma unroll
    for (int j = 0; j < kPlainReadDepth; ++j) x ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  {  // the rest, fewer than kPlainReadDepth loads per thread: predicated, all in flight together
    uint4 v[kPlainReadDepth];
#pragma unroll
    for (int j = 0; j < kPlainReadDepth; ++j)
      v[j] = i + j * stride < n ? ptx::ld_global_nc_na_v4(src + i + j * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < kPlainReadDepth; ++j) x ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
  }
  // The CTA's checksum: out[blockIdx.x] = xor of every word its threads read.
  __shared__ uint32_t warp_x[kPlainReadThreads / 32];
  x = ptx::redux_sync_xor(x);
  if ((threadIdx.x & 31) == 0) warp_x[threadIdx.x >> 5] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
#pragma unroll
    for (int w = 1; w < kPlainReadThreads / 32; ++w) x ^= warp_x[w];
    out[blockIdx.x] = x;
  }
}

// The launch: bytes / 16 words at src (16-byte aligned), kPlainReadCtasPerSm
// CTAs per SM, fewer where the words do not give every thread one. The
// extension (launch.cuh, plain_read_run) and the standalone tools
// (scripts/bench_util.cuh, PlainRead) both launch it this way, so the tools'
// "read" column is the ceiling eval/run.py prints. out: one word per CTA.
inline cudaError_t plain_read_launch(const void* src, size_t bytes, uint32_t* out, int sms, cudaStream_t stream) {
  const size_t n = bytes / 16, most = size_t(sms) * kPlainReadCtasPerSm;
  if (n == 0) return cudaSuccess;
  const size_t rows = (n + kPlainReadThreads - 1) / kPlainReadThreads, ctas = rows < most ? rows : most;
  plain_read_kernel<<<unsigned(ctas), kPlainReadThreads, 0, stream>>>(static_cast<const uint4*>(src), n, out);
  return cudaGetLastError();
}

}  // namespace kbit
