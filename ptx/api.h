// api.h — the host interface between the CUDA translation unit (kernels and
// launchers, no torch headers) and bindings.cpp (the only torch-aware file).
// Plain C++: submission.py puts this text in front of both sources.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kbit_api {

// C[M, N] = A[M, K] W^T for the kbit format (reference.py / SPEC 3.1).
struct KbitArgs {
  const void* a;             // [M, K] fp16 / bf16
  const int32_t* b_packed;   // [E, k_tiles, n_pad, 2, bits]
  const uint8_t* b_absmax;   // [E, k_tiles, n_pad, 2]
  const float* codebook;     // [2^bits]
  const int32_t* offsets;    // [E + 1], on the device
  void* c;                   // [M, N], same dtype as a
  int M, N, K, E, bits, n_pad, k_tiles;
  int bf16;
  int kernel;                // 0: chosen by shape (launch.cuh), 1: the mma.sync tiled GEMM kernel,
                             // 2: the decode kernel wherever it applies (<= 8 rows per expert),
                             // 3: the same with 64-row warp tiles at every shape,
                             // 4: the wgmma tiled kernel for every M (sm90 family),
                             // 5: the CUDA-core kernel wherever it applies (dense M = 1; grouped)
};

// What a launch needs besides the tensors: a split-K workspace and zeroed
// arrival counters (the kernel leaves them zeroed again).
struct KbitPlan {
  size_t workspace_floats;
  size_t counters;
  int grid, mtiles, block_n, block_m;
  int decode;                // 2 or 4: the decode kernel (kbit_decode.cuh) with that many 16-row
                             // tiles per warp; 0: a tiled GEMM kernel
  int decode_act;            // decode kernel: activation rows carried in its ring stages
                             // (DecodeConfig::kActRows; 0: in registers)
  int decode_helpers;        // decode kernel: split-tile sums by helper warps (launch.cuh decode_helpers)
  int decode_pairs;          // decode kernel: launched in clusters of two CTAs (launch.cuh decode_pair_ctas)
  int wgmma;                 // the wgmma tiled kernel (kbit_wgmma.cuh, block_m rows per tile):
                             // 1, 2 or 3 16-row weight tiles per MMA warp, 4 128-row tiles
                             // of 8 MMA warps and one CTA each (launch.cuh wgmma_config_for)
  int gemv_warps;            // the CUDA-core kernel (kbit_gemv.cuh): warps per CTA (0: not used)
  int gemv_tiles;            // and K-tiles per warp
  int rows;                  // the row-owning kernel (kbit_rows.cuh; rows_kernel_pays, KBIT_KERNEL=rows):
                             // its configuration (launch.cuh rows_config_for; its grid counts
                             // clusters of two CTAs for configuration 6), 0: not used
};

// Both return nullptr on success, else a description of the error.
const char* kbit_gemm_plan(const KbitArgs& args, int device, KbitPlan* plan);
const char* kbit_gemm_run(const KbitArgs& args, const KbitPlan& plan, float* workspace,
                          int32_t* counters, void* stream);

// GPU MODE nvfp4_gemv. Strides in elements of each tensor (bytes for fp4x2/fp8).
struct Nvfp4Args {
  const uint8_t* a;
  const uint8_t* b;
  const uint8_t* sfa;
  const uint8_t* sfb;
  void* c;
  long long a_si, a_sl, b_sl, sfa_si, sfa_sl, sfb_sl, c_si, c_sl;
  int m, k, l;
  int sfa_blocked, sfb_blocked;
};
const char* nvfp4_gemv_run(const Nvfp4Args& args, int device, void* stream);

// Blackwell tcgen05 paths (sm100 family only; elsewhere they return an error).
const char* kbit_gemm_run_tc(const KbitArgs& args, const KbitPlan& plan, float* workspace,
                             int32_t* counters, void* stream);
const char* nvfp4_gemv_run_tc(const Nvfp4Args& args, int device, void* stream);

// The streaming ceiling (plain_read.cuh): reads `bytes` (a multiple of 16) at
// `src` (16-byte aligned) once; CTA i stores the xor of the words it read in
// out[i]. At most plain_read_ctas(device) CTAs (the words `out` must hold).
const char* plain_read_run(const void* src, size_t bytes, uint32_t* out, int device, void* stream);
int plain_read_ctas(int device);

// The PTX family this translation unit was built from ("sm80", "sm90", "sm100").
const char* family_name();
int has_tcgen05();

}  // namespace kbit_api
