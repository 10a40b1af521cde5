// bindings.cpp — the only torch-aware source: tensors in, raw pointers out to the
// launchers of the CUDA translation unit (declared in api.h, which
// submission.py puts in front of this text). Inputs are validated in
// submission.py; here only what the launch itself needs is checked.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <mutex>
#include <vector>

namespace {

void check(const char* err) { TORCH_CHECK(err == nullptr, err ? err : ""); }

// Split-K workspace and arrival counters, per device, grown on demand and then
// reused: a steady-state call allocates nothing. The kernel returns the counters
// to zero, so they are zeroed only when allocated.
struct Scratch {
  at::Tensor workspace, counters;
};
std::mutex g_mu;
std::vector<Scratch> g_scratch(64);

std::pair<float*, int32_t*> scratch_for(const at::Device& dev, const kbit_api::KbitPlan& plan) {
  std::lock_guard<std::mutex> lock(g_mu);
  Scratch& s = g_scratch.at(dev.index());
  if (!s.workspace.defined() || size_t(s.workspace.numel()) < plan.workspace_floats)
    s.workspace = at::empty({int64_t(plan.workspace_floats)}, at::TensorOptions().dtype(at::kFloat).device(dev));
  if (!s.counters.defined() || size_t(s.counters.numel()) < plan.counters)
    s.counters = at::zeros({int64_t(plan.counters)}, at::TensorOptions().dtype(at::kInt).device(dev));
  return {s.workspace.data_ptr<float>(), s.counters.data_ptr<int32_t>()};
}

kbit_api::KbitArgs kbit_args(const at::Tensor& a, const at::Tensor& b_packed, const at::Tensor& b_absmax,
                             const at::Tensor& codebook, const at::Tensor& offsets, at::Tensor& c) {
  kbit_api::KbitArgs args;
  args.a = a.data_ptr();
  args.b_packed = b_packed.data_ptr<int32_t>();
  args.b_absmax = b_absmax.data_ptr<uint8_t>();
  args.codebook = codebook.data_ptr<float>();
  args.offsets = offsets.data_ptr<int32_t>();
  args.c = c.data_ptr();
  args.M = int(a.size(0));
  args.K = int(a.size(1));
  args.N = int(c.size(1));
  args.E = int(b_packed.size(0));
  args.k_tiles = int(b_packed.size(1));
  args.n_pad = int(b_packed.size(2));
  args.bits = int(b_packed.size(4));
  args.bf16 = a.scalar_type() == at::kBFloat16;
  return args;
}

// path 0: mma.sync kernel (every family); path 1: tcgen05 kernel (sm100 family).
void kbit_gemm(at::Tensor a, at::Tensor b_packed, at::Tensor b_absmax, at::Tensor codebook,
               at::Tensor offsets, at::Tensor c, int64_t path) {
  const c10::cuda::CUDAGuard guard(a.device());
  const kbit_api::KbitArgs args = kbit_args(a, b_packed, b_absmax, codebook, offsets, c);
  if (args.M == 0) return;
  kbit_api::KbitPlan plan;
  check(kbit_api::kbit_gemm_plan(args, a.device().index(), &plan));
  auto [ws, counters] = scratch_for(a.device(), plan);
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  check(path == 1 ? kbit_api::kbit_gemm_run_tc(args, plan, ws, counters, stream)
                  : kbit_api::kbit_gemm_run(args, plan, ws, counters, stream));
}

// sfa / sfb: plain [rows, k/16, l] when `blocked` is false, else the 128x4
// blocked tensors [32, 4, rest, 4, rest_k, l] (contiguous buffer).
void nvfp4_gemv(at::Tensor a, at::Tensor b, at::Tensor sfa, at::Tensor sfb, at::Tensor c,
                bool sfa_blocked, bool sfb_blocked, int64_t path) {
  const c10::cuda::CUDAGuard guard(a.device());
  kbit_api::Nvfp4Args args;
  args.a = static_cast<const uint8_t*>(a.data_ptr());
  args.b = static_cast<const uint8_t*>(b.data_ptr());
  args.sfa = static_cast<const uint8_t*>(sfa.data_ptr());
  args.sfb = static_cast<const uint8_t*>(sfb.data_ptr());
  args.c = c.data_ptr();
  args.m = int(a.size(0));
  args.k = int(a.size(1) * 2);
  args.l = int(a.size(2));
  args.a_si = a.stride(0);
  args.a_sl = a.stride(2);
  args.b_sl = b.stride(2);
  args.sfa_si = sfa_blocked ? 0 : sfa.stride(0);
  args.sfa_sl = sfa_blocked ? 0 : sfa.stride(2);
  args.sfb_sl = sfb_blocked ? 0 : sfb.stride(2);
  args.c_si = c.stride(0);
  args.c_sl = c.stride(2);
  args.sfa_blocked = sfa_blocked;
  args.sfb_blocked = sfb_blocked;
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  check(path == 1 ? kbit_api::nvfp4_gemv_run_tc(args, a.device().index(), stream)
                  : kbit_api::nvfp4_gemv_run(args, a.device().index(), stream));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("kbit_gemm", &kbit_gemm, "fused kbit dequantize + GEMM (writes c)");
  m.def("nvfp4_gemv", &nvfp4_gemv, "NVFP4 batched scaled GEMV (writes c)");
  m.def("family", &kbit_api::family_name, "PTX family of this build");
  m.def("has_tcgen05", &kbit_api::has_tcgen05, "1 if the tcgen05 paths are built in");
}
