// sm90_wgmma.cuh — Hopper warpgroup MMA (PTX ISA 9.7.15, sm_90a only): one
// wrapper per instruction, plus the shared-memory matrix descriptor. Included
// only by the sm90 family's translation unit: sm_100a rejects wgmma
// (shared/notes/ptx-reference.md section C), so Blackwell (sm100.cuh, which
// builds on sm90.cuh) never sees this file.
#pragma once

#include "sm90.cuh"

// This family has wgmma (launch.cuh then builds the wgmma tiled kernel).
#define KBIT_HAS_WGMMA 1

namespace kbit {
namespace ptx {

// ---- ordering (PTX ISA 9.7.15.7) ----------------------------------------------
// Before the first wgmma of a batch whose A registers or accumulators were
// written by other instructions.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the batch of wgmma issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups of this warp are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes (here: cp.async
// copies it waited for) before later async-proxy reads (wgmma operands).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// ---- matrix descriptor (PTX ISA 9.7.15.5.1; shared/notes/ptx-reference.md C) ---
// K-major operand in the 128-byte swizzle: rows of 128 bytes (64 16-bit
// elements), 16-byte chunk c of row r stored at chunk c ^ (r % 8), 8-row atoms
// of 1024 bytes stacked at SBO = 1024; the atom must be 1024-byte aligned. A
// K = 16 step inside the row is a start address 32 bytes further.
// Fields: bits 0-13 address >> 4, 16-29 LBO >> 4 (unused for this swizzle: 1),
// 32-45 SBO >> 4, 62-63 swizzle (1 = 128 B).
// Built as two words: the high word (SBO, swizzle) is a constant; the low
// word holds the address and LBO. A CTA's shared-memory addresses stay below
// 2^18 (228 KB), so the address field needs no mask, and a step within the
// tile (32 bytes per K = 16, 1024 bytes per 8 rows) adds (bytes >> 4) to the
// low word: one integer add per MMA instead of re-encoding the descriptor.
constexpr uint32_t kDescSw128KmajorHi = (1024u >> 4) | (1u << 30);
__device__ __forceinline__ uint32_t wgmma_desc_sw128_kmajor_lo(uint32_t smem_addr) {
  return (smem_addr >> 4) | (1u << 16);
}
__device__ __forceinline__ uint64_t wgmma_desc_sw128_kmajor_of(uint32_t lo) {
  return (uint64_t(kDescSw128KmajorHi) << 32) | lo;
}

// ---- wgmma.mma_async, A from registers (PTX ISA 9.7.15.5) -----------------------
// D[64 x N] (+)= A[64 x 16] * B[16 x N], f32 accumulate; scale_d = 0 overwrites D.
// A: warp w of the warpgroup holds rows 16w..16w+15 in the m16n8k16 A fragment
// layout (a0 = A[g][2t..], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]).
// B: the descriptor's K-major tile, N rows of K = 16. D: d[4j..4j+3] =
// D[16w+g][8j+2t..+1], D[16w+g+8][8j+2t..+1] (N / 2 registers per thread).

__device__ __forceinline__ void wgmma_m64n8k16_rs_f16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %9, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
      "{%0,%1,%2,%3}, "
      "{%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n8k16_rs_bf16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %9, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3}, "
      "{%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n16k16_rs_f16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7}, "
      "{%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n16k16_rs_bf16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7}, "
      "{%8,%9,%10,%11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n32k16_rs_f16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "{%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n32k16_rs_bf16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "{%16,%17,%18,%19}, %20, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n64k16_rs_f16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n64k16_rs_bf16(float* d, const uint32_t (&a)[4], uint64_t desc_b,
                                                      uint32_t scale_d) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "{%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}

// The 64 accumulators of an N = 128 instruction (register and shared-memory
// forms): their place in the instruction text (%0..%63) and the asm outputs.
#define KBIT_WGMMA_D64_TEXT                                                                                            \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                                                             \
  "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"                                                   \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,"                                                   \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define KBIT_WGMMA_D64_OUT                                                                                             \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),          \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),           \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),          \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),          \
      "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),          \
      "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),          \
      "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),          \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// m64n128k16, A from registers: one instruction for two N = 64 pieces. The
// tensor pipe queues about eight wgmma instructions per SM whatever their N;
// the issue of more waits for earlier ones to finish (docs/results.md v68).
#define KBIT_WGMMA_RS_N128(NAME, TY)                                                                                   \
  __device__ __forceinline__ void NAME(float* d, const uint32_t (&a)[4], uint64_t desc_b, uint32_t scale_d) {          \
    asm volatile(                                                                                                      \
        "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"                                                                 \
        " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                                                  \
        "{"                                                                                                            \
        KBIT_WGMMA_D64_TEXT                                                                                            \
        "}, {%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"                                                                   \
        : KBIT_WGMMA_D64_OUT                                                                                           \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));                                     \
  }
KBIT_WGMMA_RS_N128(wgmma_m64n128k16_rs_f16, "f16")
KBIT_WGMMA_RS_N128(wgmma_m64n128k16_rs_bf16, "bf16")
#undef KBIT_WGMMA_RS_N128

// D (+)= A * B for the operand type of T, N in {8, 16, 32, 64, 128}.
template <int N, typename T>
__device__ __forceinline__ void wgmma_rs(float* d, const uint32_t (&a)[4], uint64_t desc_b, uint32_t scale_d) {
  constexpr bool kBf16 = Elem<T>::kIsBf16;
  static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128, "wgmma_rs: N must be 8, 16, 32, 64 or 128");
  if constexpr (N == 8) {
    if constexpr (kBf16) wgmma_m64n8k16_rs_bf16(d, a, desc_b, scale_d); else wgmma_m64n8k16_rs_f16(d, a, desc_b, scale_d);
  } else if constexpr (N == 16) {
    if constexpr (kBf16) wgmma_m64n16k16_rs_bf16(d, a, desc_b, scale_d); else wgmma_m64n16k16_rs_f16(d, a, desc_b, scale_d);
  } else if constexpr (N == 32) {
    if constexpr (kBf16) wgmma_m64n32k16_rs_bf16(d, a, desc_b, scale_d); else wgmma_m64n32k16_rs_f16(d, a, desc_b, scale_d);
  } else if constexpr (N == 64) {
    if constexpr (kBf16) wgmma_m64n64k16_rs_bf16(d, a, desc_b, scale_d); else wgmma_m64n64k16_rs_f16(d, a, desc_b, scale_d);
  } else {
    if constexpr (kBf16) wgmma_m64n128k16_rs_bf16(d, a, desc_b, scale_d); else wgmma_m64n128k16_rs_f16(d, a, desc_b, scale_d);
  }
}

// ---- wgmma.mma_async, A and B from shared memory (PTX ISA 9.7.15.5) -------------
// D[64 x N] (+)= A[64 x 16] * B[16 x N]: both operands by descriptor, K-major
// (trans-a = trans-b = 0), f32 accumulate, scale_d = 0 overwrites D. D's layout
// is the register form's (above). Only scripts/wgmma_ss_overlap.cu uses these
// so far (the warp-specialized design of docs/design.md, "Dequantization with
// the MMAs").

// (One macro per N: the f16 and bf16 forms differ only in the type.)
#define KBIT_WGMMA_SS_N64(NAME, TY)                                                                                    \
  __device__ __forceinline__ void NAME(float* d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {                 \
    asm volatile(                                                                                                      \
        "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"                                                                 \
        " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "                                                   \
        "{"                                                                                                            \
        "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"                                                       \
        "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"                                              \
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"                                                                             \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])       \
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                                                     \
  }
#define KBIT_WGMMA_SS_N128(NAME, TY)                                                                                   \
  __device__ __forceinline__ void NAME(float* d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {                 \
    asm volatile(                                                                                                      \
        "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"                                                                 \
        " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                                                  \
        "{"                                                                                                            \
        KBIT_WGMMA_D64_TEXT                                                                                            \
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"                                                                             \
        : KBIT_WGMMA_D64_OUT                                                                                           \
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                                                     \
  }
KBIT_WGMMA_SS_N64(wgmma_m64n64k16_ss_f16, "f16")
KBIT_WGMMA_SS_N64(wgmma_m64n64k16_ss_bf16, "bf16")
KBIT_WGMMA_SS_N128(wgmma_m64n128k16_ss_f16, "f16")
KBIT_WGMMA_SS_N128(wgmma_m64n128k16_ss_bf16, "bf16")
#undef KBIT_WGMMA_SS_N64
#undef KBIT_WGMMA_SS_N128
#undef KBIT_WGMMA_D64_TEXT
#undef KBIT_WGMMA_D64_OUT

// D (+)= A * B for the operand type of T, N in {64, 128}.
template <int N, typename T>
__device__ __forceinline__ void wgmma_ss(float* d, uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  constexpr bool kBf16 = Elem<T>::kIsBf16;
  static_assert(N == 64 || N == 128, "wgmma_ss: N must be 64 or 128");
  if constexpr (N == 64) {
    if constexpr (kBf16) wgmma_m64n64k16_ss_bf16(d, desc_a, desc_b, scale_d); else wgmma_m64n64k16_ss_f16(d, desc_a, desc_b, scale_d);
  } else {
    if constexpr (kBf16) wgmma_m64n128k16_ss_bf16(d, desc_a, desc_b, scale_d); else wgmma_m64n128k16_ss_f16(d, desc_a, desc_b, scale_d);
  }
}

}  // namespace ptx
}  // namespace kbit
