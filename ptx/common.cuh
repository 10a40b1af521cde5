// common.cuh — what every family's translation unit shares: element types,
// the kbit tiled-layout arithmetic (the only place it is written down in CUDA),
// and the small lookup tables the kernels build in shared memory.
//
// Formats (reference.py is the authority):
//   b_packed int32 [E, K_tiles, N_pad, 2, k]: element (e, n, kk) is bit kk % 32 of
//     the k plane words at [e, kk / 64, n, (kk % 64) / 32, :]; plane b holds bit b
//     of the element's codebook index.
//   b_absmax uint8 [E, K_tiles, N_pad, 2]: E4M4 scale byte of that 32-block,
//     (e << 4) | m, bias 11: e >= 1 -> 2^(e-11) (1 + m/16), e == 0 -> 2^-10 m/16.
//   codebook float32 [2^k].
#pragma once

#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fastdiv.h"

// The activation dtypes a build has kernels for: 1 fp16, 2 bf16, 3 both (the
// default). A one-dtype build compiles half the kbit kernels, so its first
// build takes about two thirds as long (submission.py: KBIT_DTYPES=fp16|bf16;
// sm90 on an H200: 175 s against 271, docs/results.md v61); a
// call in the other dtype gets the error string below from the dispatch
// (submission.py refuses such a call before that). Every dispatch that
// instantiates a kernel by dtype wraps each arm in KBIT_IF_FP16 /
// KBIT_IF_BF16. CI builds the sm90 family as its two one-dtype halves, in
// parallel, and the sm80 family's fp16 half (tests/test_compile.py CI_DTYPES).
#ifndef KBIT_DTYPES
#define KBIT_DTYPES 3
#endif
#if KBIT_DTYPES < 1 || KBIT_DTYPES > 3
#error "KBIT_DTYPES: 1 (fp16), 2 (bf16) or 3 (both)"
#endif
#if KBIT_DTYPES & 1
#define KBIT_IF_FP16(...) __VA_ARGS__
#else
#define KBIT_IF_FP16(...) "kbit: this build has no fp16 kernels (KBIT_DTYPES)"
#endif
#if KBIT_DTYPES & 2
#define KBIT_IF_BF16(...) __VA_ARGS__
#else
#define KBIT_IF_BF16(...) "kbit: this build has no bf16 kernels (KBIT_DTYPES)"
#endif

namespace kbit {

constexpr int kBlock = 32;   // weights per E4M4 scale = bits per plane word
static_assert(kBlock == 32, "one plane word holds the bits of one block");
constexpr int kTileK = 64;   // K extent of one tile of the tiled layout
constexpr int kWarpSize = 32;

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int cmin(int a, int b) { return a < b ? a : b; }

// ---------------------------------------------------------------------------
// Element types. The kernels are written against Elem<T>; T is __half or
// __nv_bfloat16 (the activation / output dtype, also the MMA operand type).
// torch builds with __CUDA_NO_HALF_OPERATORS__ etc., so only intrinsics here.
// ---------------------------------------------------------------------------
template <typename T> struct Elem;

template <> struct Elem<__half> {
  static constexpr bool kIsBf16 = false;
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __device__ __forceinline__ static __half from_float(float x) { return __float2half_rn(x); }
  __device__ __forceinline__ static float2 unpack(uint32_t v) {
    return __half22float2(*reinterpret_cast<__half2*>(&v));
  }
  __device__ __forceinline__ static uint32_t mul2(uint32_t a, uint32_t b) {
    __half2 r = __hmul2(*reinterpret_cast<__half2*>(&a), *reinterpret_cast<__half2*>(&b));
    return *reinterpret_cast<uint32_t*>(&r);
  }
};

template <> struct Elem<__nv_bfloat16> {
  static constexpr bool kIsBf16 = true;
  __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __device__ __forceinline__ static __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
  __device__ __forceinline__ static float2 unpack(uint32_t v) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&v));
  }
  __device__ __forceinline__ static uint32_t mul2(uint32_t a, uint32_t b) {
    __nv_bfloat162 r = __hmul2(*reinterpret_cast<__nv_bfloat162*>(&a),
                               *reinterpret_cast<__nv_bfloat162*>(&b));
    return *reinterpret_cast<uint32_t*>(&r);
  }
};

// ---------------------------------------------------------------------------
// Tiled layout arithmetic (SPEC 3.1). Offsets in elements of the tensor.
// ---------------------------------------------------------------------------
struct KbitLayout {
  int n, k, n_pad, k_tiles, bits;

  // First plane word of the row `row` of K-tile `kt` of expert `e` (both blocks
  // of the tile follow: 2 * bits words per row, rows contiguous).
  __host__ __device__ size_t packed_row(int e, int kt, int row) const {
    return ((size_t(e) * k_tiles + kt) * n_pad + row) * 2 * bits;
  }
  // First scale byte of the same row (2 bytes: block 0 and block 1).
  __host__ __device__ size_t absmax_row(int e, int kt, int row) const {
    return ((size_t(e) * k_tiles + kt) * n_pad + row) * 2;
  }
};

// ---------------------------------------------------------------------------
// E4M4 decode (exact in float32). Used to fill a 256-entry table once per CTA.
// ---------------------------------------------------------------------------
__host__ __device__ __forceinline__ float e4m4_decode(uint32_t code) {
  const uint32_t e = code >> 4, m = code & 15u;
  if (e == 0) return float(m) * (1.0f / 16384.0f);          // 2^-10 * m / 16
  return ldexpf(1.0f + float(m) * 0.0625f, int(e) - 11);
}

// The same in two instructions, for the kernels' hot paths: an E4M4 byte in
// bits 19..26 of an fp32 pattern is 2^-116 times its value, for normal (e >= 1:
// exponent e) and subnormal (e = 0: fp32 subnormal m / 16 x 2^-126) codes
// alike; the product with 2^116 is exact.
__device__ __forceinline__ float e4m4_from_bits(uint32_t bits_19_26) {
  return __uint_as_float(bits_19_26) * __uint_as_float((116u + 127u) << 23);
}

// float8 e4m3 (fn: no infinities, S.1111.111 is NaN) decode, exact in float32.
__device__ __forceinline__ float e4m3_decode(uint32_t code) {
  const uint32_t s = code >> 7, e = (code >> 3) & 15u, m = code & 7u;
  float v;
  if (e == 15 && m == 7) v = __int_as_float(0x7fc00000);
  else if (e == 0) v = float(m) * (1.0f / 512.0f);            // 2^-6 * m / 8
  else v = ldexpf(1.0f + float(m) * 0.125f, int(e) - 7);
  return s ? -v : v;
}

}  // namespace kbit
