// bindings.cpp — the only torch-aware source: tensors in, raw pointers out to the
// launchers of the CUDA translation unit (declared in api.h, which
// submission.py puts in front of this text). The CUDA fast path validates its
// inputs here, with the checks and messages of submission.validate_kbit /
// validate_nvfp4 (which serve the CPU path), so a call costs microseconds.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace {

void check(const char* err) { TORCH_CHECK(err == nullptr, err ? err : ""); }

// Split-tile workspaces and arrival counters, per device, grown on demand and
// then reused: a steady-state call allocates nothing. Every kernel returns the
// counters to zero, so they are zeroed only when allocated. The decode kernel
// also needs its workspace zero between launches (its slots carry markers)
// and leaves it so; the tiled kernels store a tile's first part before any
// other is added and never clear theirs (finish_tile): each has its own.
struct Scratch {
  at::Tensor workspace, decode_workspace, counters;
};
std::mutex g_mu;
std::vector<Scratch> g_scratch(64);

std::pair<float*, int32_t*> scratch_for(const at::Device& dev, const kbit_api::KbitPlan& plan) {
  std::lock_guard<std::mutex> lock(g_mu);
  Scratch& s = g_scratch.at(dev.index());
  at::Tensor& ws = plan.decode ? s.decode_workspace : s.workspace;
  if (!ws.defined() || size_t(ws.numel()) < plan.workspace_floats)
    ws = at::zeros({int64_t(plan.workspace_floats)}, at::TensorOptions().dtype(at::kFloat).device(dev));
  if (!s.counters.defined() || size_t(s.counters.numel()) < plan.counters)
    s.counters = at::zeros({int64_t(plan.counters)}, at::TensorOptions().dtype(at::kInt).device(dev));
  return {ws.data_ptr<float>(), s.counters.data_ptr<int32_t>()};
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

// A Python-style tuple, as the messages of submission.py print shapes and strides.
std::string tuple_str(at::IntArrayRef v) {
  std::string r = "(";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + (v.size() == 1 ? ",)" : ")");
}
std::string shape_str(const at::Tensor& t) { return tuple_str(t.sizes()); }

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
  // (c: the tiled kernels store it in 4- and 16-byte pieces.)
  for (int i : {0, 1, 2, 5})
    KBIT_REQUIRE(reinterpret_cast<uintptr_t>(all[i].first->data_ptr()) % 16 == 0, all[i].second,
                 " must be 16-byte aligned (data_ptr % 16 == 0)");
  return std::string();
}

// path 0: the kernel chosen by shape (the decode, the mma.sync tiled or, in
// the sm90 family, the wgmma tiled kernel); path 1: tcgen05 kernel (sm100
// family); path 2: the mma.sync tiled kernel for every M; path 3: the decode
// kernel wherever it applies; path 4: the same with 64-row warp tiles at every
// shape; path 5: the wgmma tiled kernel for every M (sm90 family; elsewhere
// path 0); path 6: the CUDA-core kernel wherever it applies (dense M = 1 and
// grouped calls; elsewhere path 0); path 7: the row-owning kernel wherever
// it serves (dense M <= 32, sm90 family; elsewhere path 0). Paths 2..7 measure the crossover and test each kernel and
// tile size at every shape.
// Returns "" after launching, or a validation message (nothing launched).
std::string kbit_gemm(at::Tensor a, at::Tensor b_packed, at::Tensor b_absmax, at::Tensor codebook,
                      at::Tensor offsets, at::Tensor c, int64_t path) {
  std::string bad = validate_kbit(a, b_packed, b_absmax, codebook, offsets, c);
  if (!bad.empty()) return bad;
  TORCH_CHECK(a.is_cuda(), "kbit_gemm: tensors must be on a CUDA device");
  const c10::cuda::CUDAGuard guard(a.device());
  kbit_api::KbitArgs args = kbit_args(a, b_packed, b_absmax, codebook, offsets, c);
  args.kernel = path == 2 ? 1 : path == 3 ? 2 : path == 4 ? 3 : path == 5 ? 4 : path == 6 ? 5 : path == 7 ? 6 : 0;
  if (args.M == 0) return std::string();
  kbit_api::KbitPlan plan;
  check(kbit_api::kbit_gemm_plan(args, a.device().index(), &plan));
  auto [ws, counters] = scratch_for(a.device(), plan);
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  check(path == 1 ? kbit_api::kbit_gemm_run_tc(args, plan, ws, counters, stream)
                  : kbit_api::kbit_gemm_run(args, plan, ws, counters, stream));
  return std::string();
}

// nvfp4_gemv input validation, the same checks as submission.validate_nvfp4
// (which serves the CPU path). blocked_ok: is t the [32, 4, rest, 4, rest_k, l]
// permuted view of a contiguous (l, rest, rest_k, 32, 4, 4) buffer?
bool blocked_ok(const at::Tensor& t, int64_t rows, int64_t cols, int64_t l) {
  const int64_t shape[6] = {l, (rows + 127) / 128, (cols + 3) / 4, 32, 4, 4};
  int64_t strides[6], s = 1;
  for (int i = 5; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  constexpr int perm[6] = {3, 4, 1, 5, 2, 0};
  if (t.dim() != 6) return false;
  for (int d = 0; d < 6; ++d)
    if (t.size(d) != shape[perm[d]] || t.stride(d) != strides[perm[d]]) return false;
  return true;
}

// The kernel reads plain scales two at a time: same device, k-contiguous, even
// strides and address (submission._plain_sf_usable).
bool plain_sf_usable(const at::Tensor& sf, const at::Device& dev) {
  return sf.device() == dev && sf.stride(1) == 1 && sf.stride(0) % 2 == 0 && sf.stride(2) % 2 == 0 &&
         reinterpret_cast<uintptr_t>(sf.data_ptr()) % 2 == 0;
}

std::string validate_nvfp4(const at::Tensor& a, const at::Tensor& b, const at::Tensor& sfa, const at::Tensor& sfb,
                           const at::Tensor& sfa_p, const at::Tensor& sfb_p, const at::Tensor& c) {
  auto fp4 = [](const at::Tensor& t) {
    return t.scalar_type() == at::ScalarType::Float4_e2m1fn_x2 || t.scalar_type() == at::kByte;
  };
  KBIT_REQUIRE(fp4(a) && a.dim() == 3, "a must be float4_e2m1fn_x2 [m, k/2, l], got ", a.scalar_type(), " ",
               shape_str(a));
  const int64_t m = a.size(0), kh = a.size(1), l = a.size(2), k = 2 * kh;
  KBIT_REQUIRE(k % 64 == 0 && k > 0, "k = ", k, " must be a positive multiple of 64");
  KBIT_REQUIRE(fp4(b) && b.dim() == 3 && b.size(1) == kh && b.size(2) == l && b.size(0) >= 1,
               "b must be float4_e2m1fn_x2 [rows, ", kh, ", ", l, "], got ", b.scalar_type(), " ", shape_str(b));
  KBIT_REQUIRE(a.stride(1) == 1 && b.stride(1) == 1, "a and b must be K-major (stride 1 along k/2)");
  const auto f8 = at::ScalarType::Float8_e4m3fn;
  KBIT_REQUIRE(sfa.scalar_type() == f8 && sfa.dim() == 3 && sfa.size(0) == m && sfa.size(1) == k / 16 &&
                   sfa.size(2) == l,
               "sfa must be float8_e4m3fn (", m, ", ", k / 16, ", ", l, "), got ", sfa.scalar_type(), " ",
               shape_str(sfa));
  KBIT_REQUIRE(sfb.scalar_type() == f8 && sfb.dim() == 3 && sfb.size(1) == k / 16 && sfb.size(2) == l,
               "sfb must be float8_e4m3fn [rows, ", k / 16, ", ", l, "], got ", sfb.scalar_type(), " ",
               shape_str(sfb));
  KBIT_REQUIRE(c.scalar_type() == at::kHalf && c.dim() == 3 && c.size(0) == m && c.size(1) == 1 && c.size(2) == l,
               "c must be float16 (", m, ", 1, ", l, "), got ", c.scalar_type(), " ", shape_str(c));
  const at::Device dev = a.device();
  KBIT_REQUIRE(b.device() == dev, "b is on ", b.device(), ", a is on ", dev);
  KBIT_REQUIRE(c.device() == dev, "c is on ", c.device(), ", a is on ", dev);
  KBIT_REQUIRE(sfa_p.scalar_type() == f8 && blocked_ok(sfa_p, m, k / 16, l),
               "sfa_permuted must be the [32, 4, rest_mn, 4, rest_k, l] blocked view of a contiguous buffer, got ",
               sfa_p.scalar_type(), " ", shape_str(sfa_p), " strides ", tuple_str(sfa_p.strides()));
  KBIT_REQUIRE(sfb_p.scalar_type() == f8 && blocked_ok(sfb_p, 128, k / 16, l),
               "sfb_permuted must be the [32, 4, rest_mn, 4, rest_k, l] blocked view of a contiguous buffer, got ",
               sfb_p.scalar_type(), " ", shape_str(sfb_p), " strides ", tuple_str(sfb_p.strides()));
  KBIT_REQUIRE(reinterpret_cast<uintptr_t>(a.data_ptr()) % 16 == 0 && a.stride(0) % 16 == 0 && a.stride(2) % 16 == 0,
               "a rows must be 16-byte aligned");
  KBIT_REQUIRE(reinterpret_cast<uintptr_t>(b.data_ptr()) % 4 == 0 && b.stride(2) % 4 == 0, "b must be 4-byte aligned");
  // Where the plain scales are not usable, the blocked copy is read: it must be
  // on the GPU too.
  for (const auto& [plain, blocked, name] :
       {std::make_tuple(&sfa, &sfa_p, "sfa"), std::make_tuple(&sfb, &sfb_p, "sfb")})
    KBIT_REQUIRE(plain_sf_usable(*plain, dev) ||
                     (blocked->device() == dev && reinterpret_cast<uintptr_t>(blocked->data_ptr()) % 2 == 0),
                 name, " (on ", plain->device(), ") is not readable by the kernel and ", name, "_permuted is on ",
                 blocked->device(), "; a is on ", dev);
  return std::string();
}

// path 0: the portable kernel; path 1: the tcgen05 kernel (sm100 family; reads
// the blocked scales). Plain sfa / sfb are read where usable (one load per
// chunk instead of blocked address arithmetic), else their blocked copies.
// Returns "" after launching, or a validation message (nothing launched).
std::string nvfp4_gemv(at::Tensor a, at::Tensor b, at::Tensor sfa, at::Tensor sfb, at::Tensor sfa_p,
                       at::Tensor sfb_p, at::Tensor c, int64_t path) {
  std::string bad = validate_nvfp4(a, b, sfa, sfb, sfa_p, sfb_p, c);
  if (!bad.empty()) return bad;
  TORCH_CHECK(a.is_cuda(), "nvfp4_gemv: tensors must be on a CUDA device");
  if (a.size(0) == 0 || a.size(2) == 0) return std::string();
  const c10::cuda::CUDAGuard guard(a.device());
  const bool sfa_blocked = path == 1 || !plain_sf_usable(sfa, a.device());
  const bool sfb_blocked = path == 1 || !plain_sf_usable(sfb, a.device());
  const at::Tensor& sa = sfa_blocked ? sfa_p : sfa;
  const at::Tensor& sb = sfb_blocked ? sfb_p : sfb;
  kbit_api::Nvfp4Args args;
  args.a = static_cast<const uint8_t*>(a.data_ptr());
  args.b = static_cast<const uint8_t*>(b.data_ptr());
  args.sfa = static_cast<const uint8_t*>(sa.data_ptr());
  args.sfb = static_cast<const uint8_t*>(sb.data_ptr());
  args.c = c.data_ptr();
  args.m = int(a.size(0));
  args.k = int(a.size(1) * 2);
  args.l = int(a.size(2));
  args.a_si = a.stride(0);
  args.a_sl = a.stride(2);
  args.b_sl = b.stride(2);
  args.sfa_si = sfa_blocked ? 0 : sa.stride(0);
  args.sfa_sl = sfa_blocked ? 0 : sa.stride(2);
  args.sfb_sl = sfb_blocked ? 0 : sb.stride(2);
  args.c_si = c.stride(0);
  args.c_sl = c.stride(2);
  args.sfa_blocked = sfa_blocked;
  args.sfb_blocked = sfb_blocked;
  void* stream = at::cuda::getCurrentCUDAStream().stream();
  check(path == 1 ? kbit_api::nvfp4_gemv_run_tc(args, a.device().index(), stream)
                  : kbit_api::nvfp4_gemv_run(args, a.device().index(), stream));
  return std::string();
}

// The streaming ceiling: reads every byte of `buf` once (plain_read.cuh); CTA i
// stores the xor of the words it read in out[i]. Returns "" after launching,
// or what is wrong with the arguments.
std::string plain_read(at::Tensor buf, at::Tensor out) {
  KBIT_REQUIRE(buf.is_cuda() && out.is_cuda() && buf.device() == out.device(),
               "plain_read: buf and out must be on the same CUDA device");
  KBIT_REQUIRE(buf.scalar_type() == at::kByte && buf.dim() == 1 && buf.is_contiguous(),
               "plain_read: buf must be a contiguous 1-D uint8 tensor, got ", buf.scalar_type(), " ", shape_str(buf));
  KBIT_REQUIRE(buf.numel() % 16 == 0 && reinterpret_cast<uintptr_t>(buf.data_ptr()) % 16 == 0,
               "plain_read: buf must be 16-byte aligned and a multiple of 16 bytes long, got ", buf.numel());
  const int ctas = kbit_api::plain_read_ctas(buf.device().index());
  KBIT_REQUIRE(out.scalar_type() == at::kInt && out.is_contiguous() && out.numel() >= ctas,
               "plain_read: out must be a contiguous int32 tensor of at least ", ctas, " words (one per CTA)");
  const c10::cuda::CUDAGuard guard(buf.device());
  check(kbit_api::plain_read_run(buf.data_ptr(), size_t(buf.numel()), reinterpret_cast<uint32_t*>(out.data_ptr()),
                                 buf.device().index(), at::cuda::getCurrentCUDAStream().stream()));
  return std::string();
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("kbit_gemm", &kbit_gemm, "fused kbit dequantize + GEMM (writes c); returns \"\" or a validation message");
  m.def("nvfp4_gemv", &nvfp4_gemv, "NVFP4 batched scaled GEMV (writes c); returns \"\" or a validation message");
  m.def("plain_read", &plain_read, "reads every byte of buf once (the streaming ceiling); returns \"\" or a message");
  m.def("plain_read_ctas", &kbit_api::plain_read_ctas, "CTAs of plain_read at most on a device (words of out)");
  m.def("family", &kbit_api::family_name, "PTX family of this build");
  m.def("has_tcgen05", &kbit_api::has_tcgen05, "1 if the tcgen05 paths are built in");
}
