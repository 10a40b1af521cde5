// sm90.cuh — the sm90 PTX family (Hopper, built for sm_90a): the sm80 family
// plus the bulk-copy engine (TMA without a tensor map: cp.async.bulk) and the
// mbarrier forms that track its bytes. Blackwell (sm100.cuh) builds on this.
//
// The kbit and nvfp4 kernels run the sm80 stages on Hopper by default. The
// decode kernel's bulk-copy ring uses these wrappers on request
// (KBIT_DECODE_CFG probe bit 1024): it measured slower than cp.async for its
// 1-2 KB stages (docs/results.md v9).
#pragma once

// This family (and those built on it) has the bulk-copy engine, and vector
// reductions on global memory.
#define KBIT_HAS_BULK_COPY 1
// mbarrier.try_wait (a wait that may suspend the thread): mbarrier_wait_parity.
#define KBIT_HAS_MBARRIER_TRY_WAIT 1
#define KBIT_HAS_VEC_RED 1
// Thread-block clusters: distributed shared memory, cluster barriers.
#define KBIT_HAS_CLUSTER 1
#define KBIT_SMEM_PER_SM_KB 228
// e4m3 -> f16 conversion in one instruction (sm_89 and later).
#define KBIT_HAS_E4M3_CVT 1

#include "sm80.cuh"

namespace kbit {
namespace ptx {

// ---- fp8 conversion (PTX ISA cvt, .e4m3x2 source, sm_89+) ----------------------
// Two e4m3 codes, bits 7..0 and 15..8 of `codes`, to an f16x2 (low half from
// the low byte); exact, NaN codes stay NaN. Bits above 15 are ignored.
__device__ __forceinline__ uint32_t cvt_f16x2_e4m3x2(uint32_t codes) {
  uint32_t d;
  asm("{\n .reg .b16 c;\n cvt.u16.u32 c, %1;\n cvt.rn.f16x2.e4m3x2 %0, c;\n}\n" : "=r"(d) : "r"(codes));
  return d;
}

// ---- bulk copy (PTX ISA 9.7.9.25.4.1 cp.async.bulk) -----------------------------
// Global -> this CTA's shared memory, `bytes` (a multiple of 16; both addresses
// 16-byte aligned) in one instruction from one thread; completion adds `bytes`
// to the transaction count of the mbarrier `mbar` (complete_tx).
__device__ __forceinline__ void cp_async_bulk_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t mbar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(mbar) : "memory");
}

// Tensor copy (TMA, PTX ISA 9.7.9.25.5.1 cp.async.bulk.tensor): the 2-D box
// at coordinates {c0 (innermost), c1} of the tensor map `tmap` (a
// __grid_constant__ kernel parameter, or global memory) -> shared memory at
// dst, in the map's swizzle; elements outside the tensor are zero-filled;
// completion adds the box's bytes to the mbarrier's transaction count.
__device__ __forceinline__ void cp_async_bulk_tensor_2d_g2s(uint32_t dst, const void* tmap, int c0, int c1,
                                                            uint32_t mbar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(tmap), "r"(c0), "r"(c1), "r"(mbar) : "memory");
}

// ---- vector reduction (PTX ISA 9.7.13.6 red, .v4.f32: sm_90) -------------------
// A split-tile part's quad (kbit_gemm.cuh, finish_tile): four consecutive
// floats (16-byte aligned) stored, or (add) added in one L2 operation
// (REDG.E.ADD.F32x4; like the scalar float reduction it flushes denormals).
// Predicated, no branch: a part is stored or added by the same code.
__device__ __forceinline__ void st_or_red_f32x4(float* p, float a, float b, float c, float d, bool add) {
  asm volatile(
      "{\n .reg .pred q;\n setp.ne.b32 q, %5, 0;\n"
      " @!q st.global.v4.f32 [%0], {%1, %2, %3, %4};\n"
      " @q red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n}\n" ::"l"(p),
      "f"(a), "f"(b), "f"(c), "f"(d), "r"(int(add))
      : "memory");
}

// ---- stmatrix (PTX ISA 9.7.14.5.16, .trans: sm_90) ------------------------------
// Four 8x8 b16 matrices to shared memory, transposed: register i of lane l
// holds row l / 4, columns 2 (l % 4) and + 1 of matrix i (the mma fragment
// layout); lane 8 i + c gives the 16-byte-aligned address that receives
// column c of matrix i (its 8 rows, 16 bytes).
#define KBIT_HAS_STMATRIX 1
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// ---- register reallocation (PTX ISA, miscellaneous: setmaxnreg; sm_90a) --------
// Every warp of the executing warpgroup sets its per-thread register count to
// N (a multiple of 8, 24..256): dec returns registers to the CTA's pool, inc
// waits until the pool holds enough. ptxas takes it only in a kernel whose
// entry count is known (__launch_bounds__ with a minimum of CTAs per SM) and
// compiles the code after an inc to N registers.
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg: a multiple of 8 in 24..256");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

// ---- mbarrier (PTX ISA 9.7.13.15) ------------------------------------------------
// One arrival that also expects `bytes` more transaction bytes in this phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n"
               ::"r"(bar), "r"(bytes) : "memory");
}
// Makes mbarrier.init visible to the async proxy (bulk copies, tcgen05.commit).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// try_wait may suspend the thread for a system-dependent time before it
// returns false; the loop makes it a wait.
__device__ __forceinline__ bool mbarrier_try_wait_parity(uint32_t mbar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(mbar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbarrier_wait_parity(uint32_t mbar, uint32_t parity) {
  while (!mbarrier_try_wait_parity(mbar, parity)) {
  }
}

// ---- clusters and distributed shared memory (PTX ISA: mapa, st.async,
// barrier.cluster, mbarrier.expect_tx / try_wait .cluster; sm_90, PTX 8.0+) --------
// The shared::cluster address of this CTA's shared address `addr` in the CTA
// of rank `rank` of the cluster (the same offset in its shared memory).
__device__ __forceinline__ uint32_t mapa_shared(uint32_t addr, uint32_t rank) {
  uint32_t d;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(d) : "r"(addr), "r"(rank));
  return d;
}
// A 4-byte store into another CTA's shared memory (shared::cluster addresses
// from mapa_shared); its completion adds 4 to the transaction count of the
// mbarrier `bar` in that CTA (complete_tx), which orders it for the threads
// that wait on that barrier's phase.
__device__ __forceinline__ void st_async_u32(uint32_t addr, uint32_t v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];\n" ::"r"(addr), "r"(v),
               "r"(bar)
               : "memory");
}
// Cluster barrier, split: every non-exited thread of the cluster arrives once;
// wait returns once all have arrived (acquire). The arrive is relaxed: a
// release would first wait for the thread's loads in flight (at a kernel's
// set-up, a DRAM round trip). An mbarrier.init made visible with
// fence_mbarrier_init (a release for the init alone) before the arrive is
// seen by the threads that wait. Not .aligned: callers need not be
// warp-converged.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
// The arrive with release: the thread's memory accesses before it (its
// shared-memory stores, its reads of other CTAs' shared memory) are ordered
// before the other threads' accesses after their wait.
__device__ __forceinline__ void cluster_arrive_release() {
  asm volatile("barrier.cluster.arrive.release;\n" ::: "memory");
}
// This CTA's rank in its cluster (%cluster_ctarank).
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Four consecutive floats (16-byte aligned) at a shared::cluster address
// (mapa_shared): another CTA's shared memory, through the SM-to-SM network.
__device__ __forceinline__ float4 ld_shared_cluster_f32x4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0,%1,%2,%3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
// `bytes` more transaction bytes expected in the mbarrier's current phase, no
// arrival and no ordering (relaxed: it does not wait for the thread's loads
// in flight, as mbarrier_arrive_expect_tx's release does).
__device__ __forceinline__ void mbarrier_expect_tx_relaxed(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// mbarrier wait with acquire at cluster scope: the phase was completed by
// another CTA's stores (st.async) whose data the caller then reads.
__device__ __forceinline__ bool mbarrier_try_wait_parity_cluster(uint32_t mbar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, "
      "p;\n}\n"
      : "=r"(done)
      : "r"(mbar), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbarrier_wait_parity_cluster(uint32_t mbar, uint32_t parity) {
  while (!mbarrier_try_wait_parity_cluster(mbar, parity)) {
  }
}

}  // namespace ptx
}  // namespace kbit
