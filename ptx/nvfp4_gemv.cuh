// nvfp4_gemv.cuh — portable NVFP4 batched scaled GEMV (sm80 and sm90 families).
//
//   c[i, 0, l] = sum_k a[i, k, l] sfa[i, k/16, l] b[0, k, l] sfb[0, k/16, l]
//
// a is read exactly once with 16-byte streaming loads; its scales come from sfa
// (or from the 128x4 blocked copy when sfa is not on the GPU). Each fp4 code is
// mapped to a signed 8-bit integer (twice its value: 0, +-1, +-2, +-3, +-4, +-6,
// +-8, +-12) by two byte permutes, and 16-element group sums are exact integer
// dp4a dot products; the group's two scales are applied once in fp32. b (the
// vector, shared by all rows of one batch) is decoded once per CTA into shared
// memory. All L batches run in one launch (grid.y = l).
//
// Version log
//   v1  prmt + dp4a integer group sums, warp per row, b decoded in shared memory.
#pragma once

namespace kbit {

struct Nvfp4Params {
  const uint8_t* a;    // fp4x2 bytes, element (i, kb, l) at i * a_si + kb + l * a_sl
  const uint8_t* b;    // row 0 used: (kb, l) at kb + l * b_sl
  const uint8_t* sfa;  // plain: (i, j, l) at i * sfa_si + j + l * sfa_sl; blocked: see sf_offset
  const uint8_t* sfb;
  __half* c;           // (i, l) at i * c_si + l * c_sl
  long long a_si, a_sl, b_sl, sfa_si, sfa_sl, sfb_sl, c_si, c_sl;
  int m, k, l;
  int sfa_blocked, sfb_blocked;
};

// Byte offset of scale (i, j) of batch l in the cuBLAS 128x4 blocked layout
// ([l][rows/128][cols/4][32][4][4]); rows padded to 128, cols to 4.
__device__ __forceinline__ long long nvfp4_sf_offset(int i, int j, int l, int rows, int cols) {
  const int rest_m = cdiv(rows, 128), rest_k = cdiv(cols, 4);
  return ((((long long)l * rest_m + i / 128) * rest_k + j / 4) * 512) + (i % 32) * 16 +
         ((i % 128) / 32) * 4 + (j % 4);
}

// fp4 magnitude codes 0..7 -> 2 * value as bytes: {0,1,2,3,4,6,8,12}.
constexpr uint32_t kFp4Lo = 0x03020100u, kFp4Hi = 0x0C080604u;

// Four fp4 codes (selector nibbles of `sel`) -> signed dot product with the four
// int8 values of bv. prmt with a selector nibble >= 8 replicates the sign bit
// of a (positive) table byte, i.e. yields 0: `pos` keeps the positive codes,
// `neg` (selector ^ 0x8888) the negative ones.
__device__ __forceinline__ int fp4x4_dot(uint32_t sel, uint32_t bv, int acc) {
  const uint32_t pos = ptx::prmt(kFp4Lo, kFp4Hi, sel);
  const uint32_t neg = ptx::prmt(kFp4Lo, kFp4Hi, sel ^ 0x8888u);
  return ptx::dp4a_s32(pos, bv, acc) - ptx::dp4a_s32(neg, bv, 0);
}

// b decoded to signed int8 in two halves per 32-element chunk (lanes read 16 B
// at a 16 B stride: no bank conflicts), sfb as float * 1/4 (undoes the 2x of both
// integer operands).
constexpr int kNvfp4Threads = 256;

__global__ void __launch_bounds__(kNvfp4Threads)
nvfp4_gemv_kernel(const Nvfp4Params p) {
  extern __shared__ __align__(128) uint8_t nvfp4_smem[];
  uint8_t* smem = nvfp4_smem;
  const int chunks = p.k / 32;                       // 32 elements = 16 bytes of a
  uint4* b_lo = reinterpret_cast<uint4*>(smem);      // elements 32c .. 32c+15 as int8
  uint4* b_hi = b_lo + chunks;                       // elements 32c+16 .. 32c+31
  float* sfb_s = reinterpret_cast<float*>(b_hi + chunks);   // k/16 floats
  float* fp8 = sfb_s + p.k / 16;                     // e4m3 decode table

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int l = blockIdx.y;

  for (int i = tid; i < 256; i += kNvfp4Threads) fp8[i] = e4m3_decode(i);
  __syncthreads();
  // Decode b[0, :, l]: thread per 8 elements (4 bytes).
  const uint8_t* b = p.b + (long long)l * p.b_sl;
  for (int q = tid; q < p.k / 8; q += kNvfp4Threads) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(b + 4 * q);
    const uint32_t lo = ptx::prmt(kFp4Lo, kFp4Hi, w & 0xFFFFu), lo_n = ptx::prmt(kFp4Lo, kFp4Hi, (w & 0xFFFFu) ^ 0x8888u);
    const uint32_t hi = ptx::prmt(kFp4Lo, kFp4Hi, w >> 16), hi_n = ptx::prmt(kFp4Lo, kFp4Hi, (w >> 16) ^ 0x8888u);
    // signed bytes: pos - neg per byte (no borrow: one of the two is zero)
    const uint32_t v0 = __vsub4(lo, lo_n), v1 = __vsub4(hi, hi_n);
    const int chunk = q / 4, part = q % 4;           // 4 words of 8 elements per chunk
    uint32_t* dst = reinterpret_cast<uint32_t*>(part < 2 ? b_lo + chunk : b_hi + chunk);
    dst[(part & 1) * 2 + 0] = v0;
    dst[(part & 1) * 2 + 1] = v1;
  }
  for (int j = tid; j < p.k / 16; j += kNvfp4Threads) {
    const long long off = p.sfb_blocked ? nvfp4_sf_offset(0, j, l, 128, p.k / 16)
                                        : (long long)j + (long long)l * p.sfb_sl;
    sfb_s[j] = 0.25f * fp8[p.sfb[off]];
  }
  __syncthreads();

  const int rows_per_cta = cdiv(p.m, gridDim.x);
  const int row_begin = blockIdx.x * rows_per_cta;
  const int row_end = min(p.m, row_begin + rows_per_cta);
  constexpr int kUnroll = 4;                         // 16-byte loads in flight per lane
  for (int i = row_begin + warp; i < row_end; i += kNvfp4Threads / 32) {
    const uint8_t* arow = p.a + (long long)i * p.a_si + (long long)l * p.a_sl;
    float acc = 0.f;
    for (int c0 = 0; c0 < chunks; c0 += 32 * kUnroll) {
      uint4 av[kUnroll];
      uint32_t sv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + u * 32 + lane;
        if (c < chunks) {
          av[u] = ptx::ld_global_nc_na_v4(arow + 16 * c);
          const long long off = p.sfa_blocked ? nvfp4_sf_offset(i, 2 * c, l, p.m, p.k / 16)
                                              : (long long)i * p.sfa_si + 2 * c + (long long)l * p.sfa_sl;
          sv[u] = *reinterpret_cast<const uint16_t*>(p.sfa + off);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + u * 32 + lane;
        if (c < chunks) {
          const uint4 blo = b_lo[c], bhi = b_hi[c];
          int s0 = fp4x4_dot(av[u].x & 0xFFFFu, blo.x, 0);
          s0 = fp4x4_dot(av[u].x >> 16, blo.y, s0);
          s0 = fp4x4_dot(av[u].y & 0xFFFFu, blo.z, s0);
          s0 = fp4x4_dot(av[u].y >> 16, blo.w, s0);
          int s1 = fp4x4_dot(av[u].z & 0xFFFFu, bhi.x, 0);
          s1 = fp4x4_dot(av[u].z >> 16, bhi.y, s1);
          s1 = fp4x4_dot(av[u].w & 0xFFFFu, bhi.z, s1);
          s1 = fp4x4_dot(av[u].w >> 16, bhi.w, s1);
          const float2 sb = *reinterpret_cast<const float2*>(sfb_s + 2 * c);
          acc = fmaf(float(s0), fp8[sv[u] & 0xFFu] * sb.x, acc);
          acc = fmaf(float(s1), fp8[sv[u] >> 8] * sb.y, acc);
        }
      }
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, d);
    if (lane == 0) p.c[(long long)i * p.c_si + (long long)l * p.c_sl] = __float2half_rn(acc);
  }
}

__host__ __device__ constexpr size_t nvfp4_smem_bytes(int k) {
  return size_t(k) /* int8 b */ + size_t(k / 16) * 4 + 256 * 4;
}

}  // namespace kbit
