// bindings.cpp — the only torch-aware source: tensors in, raw pointers out to the
// launchers of the CUDA translation unit (declared in api.h, which
// submission.py puts in front of this text). Inputs are validated in
// submission.py; here only what the launch itself needs is checked.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <mutex>
#include <string>
#include <vector>

namespace {

void check(const char* err) { TORCH_CHECK(err == nullptr, err ? err : ""); }

// Split-tile workspace and arrival counters, per device, grown on demand and
// then reused: a steady-state call allocates nothing. The kernel returns both to
// zero, so they are zeroed only when allocated.
struct Scratch {
  at::Tensor workspace, counters;
};
std::mutex g_mu;
std::vector<Scratch> g_scratch(64);

std::pair<float*, int32_t*> scratch_for(const at::Device& dev, const kbit_api::KbitPlan& plan) {
  std::lock_guard<std::mutex> lock(g_mu);
  Scratch& s = g_scratch.at(dev.index());
  if (!s.workspace.defined() || size_t(s.workspace.numel()) < plan.workspace_floats)
    s.workspace = at::zeros({int64_t(plan.workspace_floats)}, at::TensorOptions().dtype(at::kFloat).device(dev));
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
  args.kernel = 0;
  return args;
}

// Input validation of kbit_gemm, the same checks as submission.validate_kbit
// (which serves the CPU path) at a fraction of the host time. Returns "" or the
// message; submission.py raises it as a ValueError (before any launch).
// Messages are built with std::to_string / c10::toString rather than iostreams:
// on the measurement machine's toolchain, the extension's own std::ostream
// crashed formatting integers (segfault in num_put, backtrace in docs/results.md).
inline std::string str_(const char* x) { return x; }
inline std::string str_(const std::string& x) { return x; }
inline std::string str_(int64_t x) { return std::to_string(x); }
inline std::string str_(int x) { return std::to_string(x); }
inline std::string str_(at::ScalarType t) { return c10::toString(t); }
inline std::string str_(const at::Device& d) { return d.str(); }
template <class... Args>
std::string cat(const Args&... args) {
  std::string r;
  ((r += str_(args)), ...);
  return r;
}
#define KBIT_REQUIRE(cond, ...)            \
  do {                                     \
    if (!(cond)) return cat(__VA_ARGS__);  \
  } while (0)

std::string shape_str(const at::Tensor& t) {
  std::string r = "(";
  for (int64_t i = 0; i < t.dim(); ++i) r += (i ? ", " : "") + std::to_string(t.size(i));
  return r + (t.dim() == 1 ? ",)" : ")");
}

std::string validate_kbit(const at::Tensor& a, const at::Tensor& bp, const at::Tensor& ba, const at::Tensor& cb,
                          const at::Tensor& offs, const at::Tensor& c) {
  KBIT_REQUIRE(a.dim() == 2, "a must be 2-D [M, K], got shape ", shape_str(a));
  KBIT_REQUIRE(a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16,
               "a must be float16 or bfloat16, got ", a.scalar_type());
  const int64_t M = a.size(0), K = a.size(1);
  KBIT_REQUIRE(K > 0 && K % 32 == 0, "K = ", K, " must be a positive multiple of 32");
  KBIT_REQUIRE(c.dim() == 2 && c.size(0) == M, "c must be [M=", M, ", N], got shape ", shape_str(c));
  const int64_t N = c.size(1);
  KBIT_REQUIRE(N >= 1, "N must be >= 1");
  KBIT_REQUIRE(c.scalar_type() == a.scalar_type(), "c dtype ", c.scalar_type(), " differs from a dtype ",
               a.scalar_type());
  KBIT_REQUIRE(bp.scalar_type() == at::kInt && bp.dim() == 5, "b_packed must be int32 [E, K_tiles, N_pad, 2, k], got ",
               bp.scalar_type(), " ", shape_str(bp));
  const int64_t E = bp.size(0), bits = bp.size(4);
  KBIT_REQUIRE(bits >= 2 && bits <= 5, "b_packed's last dimension (k) must be 2..5, got ", bits);
  const int64_t k_tiles = (K + 63) / 64, n_pad = (N + 7) / 8 * 8;
  KBIT_REQUIRE(bp.size(1) == k_tiles && bp.size(2) == n_pad && bp.size(3) == 2, "b_packed shape ", shape_str(bp),
               " does not match N=", N, ", K=", K, ": expected [E, ", k_tiles, ", ", n_pad, ", 2, k]");
  KBIT_REQUIRE(E >= 1, "at least one expert");
  KBIT_REQUIRE(E <= 4096, "at most 4096 experts are supported, got ", E);
  KBIT_REQUIRE(ba.scalar_type() == at::kByte && ba.dim() == 4 && ba.size(0) == E && ba.size(1) == k_tiles &&
                   ba.size(2) == n_pad && ba.size(3) == 2,
               "b_absmax must be uint8 (", E, ", ", k_tiles, ", ", n_pad, ", 2), got ", ba.scalar_type(), " ",
               shape_str(ba));
  KBIT_REQUIRE(cb.scalar_type() == at::kFloat && cb.dim() == 1 && cb.numel() == (int64_t(1) << bits),
               "codebook must be float32 [", int64_t(1) << bits, "] for k=", bits, ", got ", cb.scalar_type(), " ",
               shape_str(cb));
  KBIT_REQUIRE(offs.scalar_type() == at::kInt && offs.dim() == 1 && offs.size(0) == E + 1, "offsets must be int32 [",
               E + 1, "], got ", offs.scalar_type(), " ", shape_str(offs));
  const at::Device dev = a.device();
  const std::pair<const at::Tensor*, const char*> all[] = {{&a, "a"}, {&bp, "b_packed"}, {&ba, "b_absmax"},
                                                           {&cb, "codebook"}, {&offs, "offsets"}, {&c, "c"}};
  for (const auto& [t, name] : all) {
    KBIT_REQUIRE(t->device() == dev, name, " is on ", t->device(), ", a is on ", dev);
    KBIT_REQUIRE(t->is_contiguous(), name, " must be contiguous");
  }
  for (int i = 0; i < 3; ++i)
    KBIT_REQUIRE(reinterpret_cast<uintptr_t>(all[i].first->data_ptr()) % 16 == 0, all[i].second,
                 " must be 16-byte aligned (data_ptr % 16 == 0)");
  return std::string();
}

// path 0: mma.sync kernels (every family; the decode or the tiled GEMM kernel,
// chosen by shape); path 1: tcgen05 kernel (sm100 family); path 2: the tiled
// kernel for every M; path 3: the decode kernel wherever it applies; path 4:
// the same with 64-row warp tiles at every shape (2..4 measure the crossover and
// test each kernel and tile size at every shape).
// Returns "" after launching, or a validation message (nothing launched).
std::string kbit_gemm(at::Tensor a, at::Tensor b_packed, at::Tensor b_absmax, at::Tensor codebook,
                      at::Tensor offsets, at::Tensor c, int64_t path) {
  std::string bad = validate_kbit(a, b_packed, b_absmax, codebook, offsets, c);
  if (!bad.empty()) return bad;
  TORCH_CHECK(a.is_cuda(), "kbit_gemm: tensors must be on a CUDA device");
  const c10::cuda::CUDAGuard guard(a.device());
  kbit_api::KbitArgs args = kbit_args(a, b_packed, b_absmax, codebook, offsets, c);
  args.kernel = path == 2 ? 1 : path == 3 ? 2 : path == 4 ? 3 : 0;
  if (args.M == 0) return std::string();
  kbit_api::KbitPlan plan;
  check(kbit_api::kbit_gemm_plan(args, a.device().index(), &plan));
  auto [ws, counters] = scratch_for(a.device(), plan);
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  check(path == 1 ? kbit_api::kbit_gemm_run_tc(args, plan, ws, counters, stream)
                  : kbit_api::kbit_gemm_run(args, plan, ws, counters, stream));
  return std::string();
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
  m.def("kbit_gemm", &kbit_gemm, "fused kbit dequantize + GEMM (writes c); returns \"\" or a validation message");
  m.def("nvfp4_gemv", &nvfp4_gemv, "NVFP4 batched scaled GEMV (writes c)");
  m.def("family", &kbit_api::family_name, "PTX family of this build");
  m.def("has_tcgen05", &kbit_api::has_tcgen05, "1 if the tcgen05 paths are built in");
}
