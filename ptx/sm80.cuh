// sm80.cuh — the sm80 PTX family: one wrapper per instruction (Ampere, Ada, and
// every later GPU: Hopper and Blackwell run these too). Syntax and fragment
// layouts as verified in shared/notes/ptx-reference.md section A; ISA sections
// are named on each wrapper.
#pragma once

#include "common.cuh"

// Defined to 1 by families that have cp.async.bulk (sm90.cuh and later).
#ifndef KBIT_HAS_BULK_COPY
#define KBIT_HAS_BULK_COPY 0
#endif
// Defined to 1 by families with mbarrier.try_wait (sm90.cuh and later).
#ifndef KBIT_HAS_MBARRIER_TRY_WAIT
#define KBIT_HAS_MBARRIER_TRY_WAIT 0
#endif
// Defined to 1 by families with thread-block clusters and distributed shared
// memory (sm90.cuh and later: mapa, st.async, barrier.cluster).
#ifndef KBIT_HAS_CLUSTER
#define KBIT_HAS_CLUSTER 0
#endif
// Defined to 1 by families with a one-instruction e4m3 -> f16 conversion
// (sm90.cuh: cvt_f16x2_e4m3x2).
#ifndef KBIT_HAS_E4M3_CVT
#define KBIT_HAS_E4M3_CVT 0
#endif
// Shared memory per SM of the smallest GPU the family runs on, in KB: 100 for
// this family (sm_86, sm_89 and sm_12x run it; sm_80 has 164); sm90.cuh and
// later define 228 (H100/H200, B200).
#ifndef KBIT_SMEM_PER_SM_KB
#define KBIT_SMEM_PER_SM_KB 100
#endif

namespace kbit {
namespace ptx {

// ---- warp MMA (PTX ISA 9.7.14.5.8, m16n8k16 .row.col, f32 accumulate) -------
// Fragments, g = lane / 4, t = lane % 4:
//   a0 = A[g][2t..2t+1]  a1 = A[g+8][2t..]  a2 = A[g][2t+8..]  a3 = A[g+8][2t+8..]
//   b0 = B[2t..2t+1][g]  b1 = B[2t+8..2t+9][g]
//   d0,d1 = D[g][2t..2t+1]  d2,d3 = D[g+8][2t..2t+1]
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const uint32_t (&a)[4],
                                                 uint32_t b0, uint32_t b1, const float (&c)[4]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const uint32_t (&a)[4],
                                                  uint32_t b0, uint32_t b1, const float (&c)[4]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1),
        "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// d = a * b + c with the operand type of T.
template <typename T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1, const float (&c)[4]) {
  if constexpr (Elem<T>::kIsBf16) mma_m16n8k16_bf16(d, a, b0, b1, c);
  else mma_m16n8k16_f16(d, a, b0, b1, c);
}

// ---- ldmatrix (PTX ISA 9.7.14.5.15) -----------------------------------------
// Lanes 8j..8j+7 give the row addresses of matrix j; register j of lane l gets
// matrix j, row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// ---- cp.async (PTX ISA 9.7.9.25) --------------------------------------------
// 16-byte global -> shared copy that bypasses L1; bytes past src_bytes (0..16)
// are zero-filled, so src_bytes = 0 writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async_cg16(uint32_t smem_addr, const void* gmem,
                                              uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ---- integer helpers (PTX ISA 9.7.1.x) ---------------------------------------
// prmt: byte permute of {b, a}; selector nibble j picks output byte j.
__device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
}
// lop3: any 3-input logic function; kLut from a = 0xF0, b = 0xCC, c = 0xAA.
template <uint32_t kLut>
__device__ __forceinline__ uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}
// shf.r.wrap: rotate right by s mod 32.
__device__ __forceinline__ uint32_t rotr(uint32_t x, uint32_t s) {
  uint32_t d;
  asm("shf.r.wrap.b32 %0, %1, %1, %2;\n" : "=r"(d) : "r"(x), "r"(s));
  return d;
}
// dp4a: signed 8-bit dot product of four byte pairs plus c (PTX ISA 9.7.1.23).
__device__ __forceinline__ int dp4a_s32(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp4a.s32.s32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// ---- global loads ------------------------------------------------------------
// Streamed read-only 16-byte load that does not allocate in L1 (each byte of a
// weight-like operand is read exactly once).
__device__ __forceinline__ uint4 ld_global_nc_na_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
// The same for 8 bytes (two words) and for one byte.
__device__ __forceinline__ uint2 ld_global_nc_na_v2(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t ld_global_nc_na_u8(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u8 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}
// L2-only load (never a stale L1 line) of four consecutive floats (16-byte
// aligned): partial sums written by other CTAs.
__device__ __forceinline__ float4 ld_global_cg_f32x4(const float* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
#ifndef KBIT_HAS_VEC_RED
// A split-tile part's quad (kbit_gemm.cuh, finish_tile): four consecutive
// floats (16-byte aligned) stored, or (add) added by four scalar fire-and-
// forget reductions (the sm90 family has one vector reduction for them).
// Predicated, no branch: a part is stored or added by the same code.
__device__ __forceinline__ void st_or_red_f32x4(float* p, float a, float b, float c, float d, bool add) {
  asm volatile(
      "{\n .reg .pred q;\n setp.ne.b32 q, %5, 0;\n"
      " @!q st.global.v4.f32 [%0], {%1, %2, %3, %4};\n"
      " @q red.global.add.f32 [%0], %1;\n @q red.global.add.f32 [%0+4], %2;\n"
      " @q red.global.add.f32 [%0+8], %3;\n @q red.global.add.f32 [%0+12], %4;\n}\n" ::"l"(p),
      "f"(a), "f"(b), "f"(c), "f"(d), "r"(int(add))
      : "memory");
}
#endif

// ---- split-tile claim counter (PTX ISA 9.7.13.5 atom / red, memory model 8) ---
// The split-tile claim protocol's counter (kbit_gemm.cuh, finish_tile): a
// contributor publishes its part with a release add, and the one that goes
// on polls with an acquire load until the parts it needs are counted.
__device__ __forceinline__ void red_add_release_gpu(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A 32-bit global store under a predicate: no branch around it (an epilogue
// stores up to 48 of these per thread, and each branch region would add its
// own instructions to code that mostly runs cold).
__device__ __forceinline__ void st_global_pred_b32(void* p, uint32_t v, bool pred) {
  asm volatile(
      "{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n @q st.global.b32 [%0], %1;\n}\n" ::"l"(p), "r"(v),
      "r"(int(pred))
      : "memory");
}

// ---- relaxed gpu-scope accesses (PTX ISA memory consistency model, 8.7) --------
// Morally strong but ordered with nothing else: no fence, so the issuing warp
// does not wait for its other memory operations. An aligned 32-bit access is
// single-copy atomic, so a reader sees a word whole or not at all: the decode
// kernel's split-tile slots store each value so that it is never zero, and
// their reader checks every word for zero instead of an ordering fence.
__device__ __forceinline__ void st_relaxed_gpu_u32(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_relaxed_gpu_u32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_gpu_s32(int* p, int v) {
  asm volatile("st.relaxed.gpu.global.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// The counter's read-modify-writes are totally ordered (coherence), so exactly
// one arrival of a group sees the count of the others; the warp waits for the
// old value only where it reads it.
__device__ __forceinline__ int atom_add_relaxed_gpu(int* p, int v) {
  int old;
  asm volatile("atom.relaxed.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// ---- warp shuffle (PTX ISA, data movement: shfl.sync) -------------------------
// v of lane src[4:0]: the idx mode reads only bits 4..0 of its source operand
// (bval[4:0] = b[4:0]; c = 0x1f: one segment, no clamp), so a bit field at the
// bottom of a word selects a lane whatever lies above it. All 32 lanes take part.
__device__ __forceinline__ float shfl_idx_lo5(float v, uint32_t src) {
  float d;
  asm("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;\n" : "=f"(d) : "f"(v), "r"(src));
  return d;
}

// ---- warp reduction (PTX ISA, parallel synchronization: redux.sync, sm_80+) ----
// The xor of v over all 32 lanes, in every lane.
__device__ __forceinline__ uint32_t redux_sync_xor(uint32_t v) {
  uint32_t d;
  asm volatile("redux.sync.xor.b32 %0, %1, 0xffffffff;\n" : "=r"(d) : "r"(v));
  return d;
}

// ---- named barrier (PTX ISA 9.7.13.1) --------------------------------------------
// Barrier `id` over the first `count` arriving threads (a multiple of 32): the
// CTA barrier's memory ordering among those threads only, for kernels where
// another warp runs a loop of its own and never reaches it.
__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
// Arrival without waiting (bar.arrive needs the thread count): the arriving
// threads' earlier memory accesses are performed for the threads that wait
// at bar.sync on the same barrier.
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// ---- mbarrier (PTX ISA 9.7.13.15; sm_80 forms) ---------------------------------
// Used as a counter of warps that added their part of a split tile into a
// shared-memory slot: arrive has release semantics at CTA scope and compiles to
// a bare SYNCS arrive (no MEMBAR, so it does not wait for the warp's in-flight
// cp.async copies); the waiting warp's test_wait has acquire semantics.
__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ bool mbarrier_test_wait_parity(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}

// ---- nanosleep (PTX ISA, miscellaneous instructions: nanosleep; sm_70+) --------
// Suspends the thread for about `ns` nanoseconds (the ISA bounds the sleep by
// 0 and 2 * ns, and by 1 ms): a poll loop that sleeps leaves the issue slots
// to the warps it waits for.
__device__ __forceinline__ void nanosleep(uint32_t ns) {
  asm volatile("nanosleep.u32 %0;\n" ::"r"(ns));
}

// ---- shared loads of read-only tables (PTX ISA 9.7.9.8) ----------------------
// By 32-bit shared-window address: lookups form the address arithmetically, and
// an explicit .shared load lets the table's constant base fold into the load.
// Not volatile: only for tables written before a barrier and read-only after it
// (the compiler may schedule these loads freely among themselves).
__device__ __forceinline__ uint32_t ld_shared_const_u32(uint32_t addr) {
  uint32_t v;
  asm("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

// Two words (an 8-byte-aligned address) into a register pair: the k = 2
// decode table keeps a lookup's two fragment registers side by side.
__device__ __forceinline__ uint2 ld_shared_const_v2_u32(uint32_t addr) {
  uint2 v;
  asm("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
  return v;
}

// 16 bytes by shared-window address, ordered with the thread's other memory
// operations (volatile, memory clobber): for data that cp.async copies land
// (after cp.async.wait_group and the warp's barrier).
__device__ __forceinline__ uint4 ld_shared_v4_u32(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr)
               : "memory");
  return v;
}

// 16 bytes to a 16-byte-aligned shared-window address.
__device__ __forceinline__ void st_shared_v4_u32(uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// One word by shared-window address (volatile, no memory clobber): the
// writer orders it with its own fence or barrier (the sm100 kernel's tile
// stores, then fence.proxy.async and a CTA barrier before the MMA reads them).
__device__ __forceinline__ void st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v));
}

// ---- timers (the decode kernel's timeline probe) ------------------------------
// The global nanosecond timer (%globaltimer: comparable across SMs).
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
// The SM clock once `v` has arrived: the asm reads v, so it issues only after
// the instruction that produces v has completed.
__device__ __forceinline__ long long clock64_after(uint32_t v) {
  long long t;
  asm volatile("{\n .reg .b32 z;\n mov.b32 z, %1;\n mov.u64 %0, %%clock64;\n}\n" : "=l"(t) : "r"(v));
  return t;
}

// A value the compiler cannot see through (a register move it may not fold):
// keeps address arithmetic of a rare path from being hoisted into the hot loop.
template <typename P>
__device__ __forceinline__ P* opaque(P* p) {
  asm volatile("mov.b64 %0, %0;\n" : "+l"(p));
  return p;
}

// The same for an integer (e.g. a lane index an epilogue derives its offsets
// from). Unlike opaque() on a pointer, the pointers built from it keep their
// known address space (global atomics stay REDG, not generic ATOM + QSPC).
__device__ __forceinline__ int opaque_int(int v) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(v));
  return v;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

}  // namespace ptx

}  // namespace kbit
