// sm100.cuh — the sm100 PTX family (Blackwell datacenter, built for sm_100a /
// sm_103a): the sm90 family (mma.sync, bulk copies and the mbarrier forms run on
// Blackwell too) plus the tcgen05 instructions and the async-proxy
// fence. One wrapper per instruction; syntax as verified with ptxas 13.0 in
// shared/notes/ptx-reference.md section B2 (PTX ISA 9.7.16 "tcgen05").
//
// COMPILE-VERIFIED ONLY: nothing in this file has run on a GPU. The kernels that
// use it self-check against the portable kernel at first use (submission.py).
#pragma once

#include "sm90.cuh"
#include "sm100_desc.h"

// The decode kernel's 16-row slots (dense M = 9..16, launch.cuh) stay off in
// this family: with sm_100a's register allocation the 64-row configuration
// of k = 4 spills (168 registers, 12 bytes), and nothing here has been timed.
#ifndef KBIT_DECODE_ACT16
#define KBIT_DECODE_ACT16 0
#endif
// So do the 128-row tiles of k = 2 at M = 1: they spill on sm_100a (48 bytes
// at 168 registers; none on sm_90a and sm_80).
#ifndef KBIT_DECODE_TILE128
#define KBIT_DECODE_TILE128 0
#endif

namespace kbit {
namespace ptx {

// ---- tensor memory allocation (9.7.16.7.1); executed by one whole warp -------
// Writes the TMEM base address (lane 31..16, column 15..0) to shared memory.
// ncols: a power of two in [32, 512].
__device__ __forceinline__ void tcgen05_alloc(uint32_t smem_dst, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;\n" ::"r"(smem_dst),
               "r"(ncols)
               : "memory");
}
__device__ __forceinline__ void tcgen05_dealloc(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;\n" ::"r"(taddr), "r"(ncols) : "memory");
}
__device__ __forceinline__ void tcgen05_relinquish_alloc_permit() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::: "memory");
}

// ---- ordering of tcgen05 operations around thread synchronization (9.7.16.6)
__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
}
__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
}

// ---- MMA (9.7.16.10); issued by one thread -----------------------------------
// D[tmem] (+)= A[smem desc] * B[smem desc]^T, f16/bf16 inputs, K = 16.
__device__ __forceinline__ void tcgen05_mma_f16(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                uint32_t idesc, uint32_t accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
      : "memory");
}
// Block-scaled NVFP4: e2m1 x e2m1, one UE4M3 scale per 16 elements (K = 64);
// scale factors read from tensor memory.
__device__ __forceinline__ void tcgen05_mma_nvf4(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc,
                                                 uint32_t idesc, uint32_t sfa_tmem, uint32_t sfb_tmem,
                                                 uint32_t accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
      "tcgen05.mma.cta_group::1.kind::mxf4nvf4.block_scale.block16 [%0], %1, %2, %3, [%4], [%5], p;\n}\n" ::"r"(
          d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(sfa_tmem), "r"(sfb_tmem), "r"(accumulate)
      : "memory");
}

// ---- commit (9.7.16.12): mbarrier arrive when this thread's prior async
// tcgen05 operations (mma, cp) have completed.
__device__ __forceinline__ void tcgen05_commit(uint32_t mbar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(mbar)
               : "memory");
}

// ---- shared memory -> tensor memory copy (9.7.16.9); one thread ------------
// 32 rows x 128 bits, broadcast to the four 32-lane quadrants.
__device__ __forceinline__ void tcgen05_cp_32x128b_warpx4(uint32_t taddr, uint64_t sdesc) {
  asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;\n" ::"r"(taddr), "l"(sdesc) : "memory");
}

// ---- tensor memory -> registers (9.7.16.8); whole warp ----------------------
// Warp w (w % 4 = q) reads lanes 32q .. 32q + 31; thread l gets lane 32q + l,
// columns col .. col + 15.
__device__ __forceinline__ void tcgen05_ld_32x32b_x16(uint32_t (&r)[16], uint32_t taddr) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x16.b32 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, "
      "[%16];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]), "=r"(r[7]),
        "=r"(r[8]), "=r"(r[9]), "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]), "=r"(r[14]), "=r"(r[15])
      : "r"(taddr));
}
__device__ __forceinline__ void tcgen05_wait_ld() { asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory"); }

// ---- generic-proxy writes (st.shared, cp.async) before async-proxy reads -----
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// TMEM address arithmetic: lane in bits 31..16, column in 15..0.
__device__ __forceinline__ uint32_t tmem_addr(uint32_t base, uint32_t lane, uint32_t col) {
  return base + (lane << 16) + col;
}

}  // namespace ptx
}  // namespace kbit
