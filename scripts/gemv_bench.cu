// gemv_bench.cu — standalone timing of the CUDA-core kernel (ptx/kbit_gemv.cuh)
// on the short calls it serves (M = 1 dense, grouped with few rows), for
// tuning without the 200-250 s extension build. Built here, carried to the
// GPU as a binary:
//
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -I. -Iptx -Iscripts \
//        -o build/gemv_bench scripts/gemv_bench.cu \
//        [-DGEMV_ALT=build/alt/kbit_gemv.cuh] [-DGEMV_TIMELINE]
//   build/gemv_bench [--check] [case-name-substring ...]
//
// For each case (the eval/run.py benchmark shapes: Qwen3-Coder-Next experts at
// one and four tokens, the 8-expert layer, dense Qwen3 and Llama-3-8B at M = 1):
// * the kernel as launch.cuh plans it (warps per CTA: the most with which the
//   grid is one wave), checked against a float64 host reference on every
//   output (random planes, scales, codebook, activations; rows routed to
//   random experts as reference.py does);
// * graph time: CUDA-graph replay of R x (L2 flush, call) minus R x (flush),
//   median of 7 replays, as eval/run.py --graph does;
// * beside it, in the same run: eval/run.py's plain read (ptx/plain_read.cuh) of the bytes the
//   call must read (the weights of the routed experts, scales, activations),
//   and an empty kernel (the launch floor under graph replay).
// With GEMV_ALT, a second copy of kbit_gemv.cuh (a variant under test of
// this tree's header: it must provide gemv_plan) is built in its own
// namespace and timed beside the first, alternating.
// With GEMV_TIMELINE, the kernel's KBIT_GEMV_MARK hooks record %globaltimer
// per CTA (thread 0), and the bench prints, after one flushed call, the phase
// times (CTA start -> mark, mean and max over CTAs) and the start skew.
// The extension's numbers come from eval/run.py; this tool ranks variants.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sm90.cuh"
#include "bench_util.cuh"   // CK, L2Flush, PlainRead, flushed_graph_us

#ifdef GEMV_TIMELINE
constexpr int kMarks = 8;
__constant__ unsigned long long* g_gemv_tl;   // [CTAs][kMarks] ns, or null
__device__ __forceinline__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define KBIT_GEMV_MARK(i, dep)                                                                         \
  do {                                                                                                 \
    asm volatile("" ::"f"(float(dep)));   /* the mark waits for dep */                                 \
    if (threadIdx.x == 0 && g_gemv_tl)                                                                 \
      g_gemv_tl[(size_t(blockIdx.y) * gridDim.x + blockIdx.x) * kMarks + (i)] = globaltimer_ns();      \
  } while (0)
#endif

#include "kbit_gemv.cuh"
#define KBIT_STR2(x) #x
#define KBIT_STR(x) KBIT_STR2(x)
#ifdef GEMV_ALT
namespace kbit {
namespace alt {
#include KBIT_STR(GEMV_ALT)
}  // namespace alt
}  // namespace kbit
#endif

using bf16 = __nv_bfloat16;

struct Case {
  const char* name;
  int E, K, N, M;        // M: rows (tokens x top-k)
  bool in_order = false; // grouped: row r goes to expert r (else random experts, as reference.py routes)
};
static const Case kCases[] = {
    {"qwen3cn_moe_gateup_t1", 512, 2048, 1024, 10}, {"qwen3cn_moe_down_t1", 512, 512, 2048, 10},
    {"inorder_moe_gateup_t1", 512, 2048, 1024, 10, true}, {"inorder_moe_down_t1", 512, 512, 2048, 10, true},
    {"small_moe_e8_t4", 8, 512, 512, 16},           {"qwen3cn_moe_down_t4", 512, 512, 2048, 40},
    {"qwen3cn_moe_gateup_t4", 512, 2048, 1024, 40}, {"qwen3cn_gateup_m1", 1, 2048, 5120, 1},
    {"qwen3cn_down_m1", 1, 5120, 2048, 1},          {"qwen3cn_kv_m1", 1, 2048, 512, 1},
    {"llama3_8b_gateup_m1", 1, 4096, 14336, 1},
    // N = 1000: n_pad % 16 == 8, the last strip reaches past n_pad
    {"odd_moe_t1", 64, 2048, 1000, 10},             {"odd_dense_m1", 1, 2048, 1000, 1},
};

__global__ void empty_kernel() {}

// The device tensors of one case.
struct Data {
  Case cs;
  int n_pad, k_tiles;
  std::vector<int32_t> packed, offsets;
  std::vector<uint8_t> absmax;
  std::vector<float> cb;
  std::vector<bf16> a;
  int32_t *d_packed, *d_offsets;
  uint8_t* d_absmax;
  float* d_cb;
  bf16 *d_a, *d_c;
  size_t read_bytes;   // weights of the routed experts + scales + activations + C
};

static Data make_data(const Case& cs, unsigned seed) {
  Data d;
  d.cs = cs;
  d.k_tiles = cs.K / 64;
  d.n_pad = (cs.N + 7) / 8 * 8;   // (SPEC layout: N rounded up to 8)
  std::mt19937 rng(seed);
  const size_t words = size_t(cs.E) * d.k_tiles * d.n_pad * 2 * 4;
  d.packed.resize(words);
  for (auto& w : d.packed) w = int32_t(rng());
  d.absmax.resize(size_t(cs.E) * d.k_tiles * d.n_pad * 2);
  for (auto& s : d.absmax) s = uint8_t(((8 + rng() % 5) << 4) | (rng() % 16));
  std::normal_distribution<float> nd;
  d.cb.resize(16);
  for (auto& c : d.cb) c = nd(rng);
  d.a.resize(size_t(cs.M) * cs.K);
  for (auto& x : d.a) x = __float2bfloat16(nd(rng));
  std::vector<int> count(cs.E, 0);
  if (cs.E == 1) count[0] = cs.M;
  else for (int r = 0; r < cs.M; ++r) ++count[cs.in_order ? r % cs.E : rng() % cs.E];
  d.offsets.assign(cs.E + 1, 0);
  int experts_used = 0;
  for (int e = 0; e < cs.E; ++e) {
    d.offsets[e + 1] = d.offsets[e] + count[e];
    experts_used += count[e] > 0;
  }
  const size_t per_expert = size_t(d.k_tiles) * d.n_pad * 2 * (4 * 4 + 1);
  d.read_bytes = experts_used * per_expert + d.a.size() * 2 + size_t(cs.M) * cs.N * 2;
  CK(cudaMalloc(&d.d_packed, words * 4));
  CK(cudaMalloc(&d.d_absmax, d.absmax.size()));
  CK(cudaMalloc(&d.d_offsets, d.offsets.size() * 4));
  CK(cudaMalloc(&d.d_cb, 64));
  CK(cudaMalloc(&d.d_a, d.a.size() * 2));
  CK(cudaMalloc(&d.d_c, size_t(cs.M) * cs.N * 2));
  CK(cudaMemcpy(d.d_packed, d.packed.data(), words * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_absmax, d.absmax.data(), d.absmax.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_offsets, d.offsets.data(), d.offsets.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_cb, d.cb.data(), 64, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_a, d.a.data(), d.a.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

static void free_data(Data& d) {
  CK(cudaFree(d.d_packed)); CK(cudaFree(d.d_absmax)); CK(cudaFree(d.d_offsets));
  CK(cudaFree(d.d_cb)); CK(cudaFree(d.d_a)); CK(cudaFree(d.d_c));
}

// Largest error of C against a float64 host reference, relative to the sum of
// |terms| of its dot product (the accumulation's own error scale), plus bf16
// output rounding.
static double check(const Data& d) {
  const Case& cs = d.cs;
  std::vector<bf16> c(size_t(cs.M) * cs.N);
  CK(cudaMemcpy(c.data(), d.d_c, c.size() * 2, cudaMemcpyDeviceToHost));
  double worst = 0;
  std::vector<double> scale(256);
  for (int s = 0; s < 256; ++s) {
    const int e = s >> 4, m = s & 15;
    scale[s] = e == 0 ? m / 16384.0 : std::ldexp(1.0 + m / 16.0, e - 11);
  }
  for (int r = 0; r < cs.M; ++r) {
    int ex = 0;
    while (d.offsets[ex + 1] <= r) ++ex;
    for (int n = 0; n < cs.N; ++n) {
      double sum = 0, mag = 0;
      for (int kt = 0; kt < d.k_tiles; ++kt)
        for (int b = 0; b < 2; ++b) {
          const size_t row = (size_t(ex) * d.k_tiles + kt) * d.n_pad + n;
          const int32_t* w = &d.packed[(row * 2 + b) * 4];
          const double sc = scale[d.absmax[row * 2 + b]];
          for (int j = 0; j < 32; ++j) {
            int idx = 0;
            for (int p = 0; p < 4; ++p) idx |= ((uint32_t(w[p]) >> j) & 1) << p;
            const double x = __bfloat162float(d.a[size_t(r) * cs.K + kt * 64 + b * 32 + j]);
            const double t = double(d.cb[idx]) * sc * x;
            sum += t;
            mag += std::fabs(t);
          }
        }
      const double got = double(__bfloat162float(c[size_t(r) * cs.N + n]));
      const double err = std::fabs(got - sum) / (1e-30 + mag * 1e-6 + std::fabs(sum) * (1.0 / 256));
      worst = std::max(worst, err);
    }
  }
  return worst;   // <= 1: within fp32 accumulation (1e-6 of the magnitude) + bf16 rounding
}

// Plan (gemv_plan, as launch.cuh) and launch of one kbit_gemv.cuh copy (namespace NS).
#define GEMV_RUNNER(NAME, NS)                                                                                      \
  struct NAME {                                                                                                    \
    NS::GemvShape shape;                                                                                           \
    void plan(const Data& d, int sms) {                                                                            \
      const void* kernel = reinterpret_cast<const void*>(&NS::kbit_gemv_kernel<4, bf16, 1>);                       \
      shape = NS::gemv_plan((long long)grid(d).x * grid(d).y, d.k_tiles, 1, sms, [&](int w, size_t smem) {         \
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));                  \
        int per_sm = 0;                                                                                            \
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, w * kbit::kWarpSize, smem));             \
        return per_sm;                                                                                             \
      });                                                                                                          \
      if (const char* w = std::getenv("GEMV_WARPS"))   /* forced warps per CTA (tuning the plan) */                \
        shape = NS::GemvShape{std::atoi(w), kbit::cdiv(d.k_tiles, std::atoi(w))};                                  \
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,                                 \
                              int(NS::gemv_smem_bytes(shape.warps, shape.tiles, 1))));                             \
    }                                                                                                              \
    void launch(const Data& d, cudaStream_t st) const {                                                            \
      NS::GemvParams p;                                                                                            \
      p.a = d.d_a; p.b_packed = d.d_packed; p.b_absmax = d.d_absmax; p.codebook = d.d_cb;                          \
      p.offsets = d.d_offsets; p.c = d.d_c;                                                                        \
      p.M = d.cs.M; p.N = d.cs.N; p.K = d.cs.K; p.E = d.cs.E; p.n_pad = d.n_pad; p.k_tiles = d.k_tiles;            \
      p.tiles_per_warp = shape.tiles;                                                                              \
      NS::kbit_gemv_kernel<4, bf16, 1><<<grid(d), shape.warps * kbit::kWarpSize,                                   \
                                         NS::gemv_smem_bytes(shape.warps, shape.tiles, 1), st>>>(p);               \
    }                                                                                                              \
    dim3 grid(const Data& d) const { return dim3(kbit::cdiv(d.n_pad, NS::kGemvCols), d.cs.E == 1 ? 1 : d.cs.M); }  \
  };
GEMV_RUNNER(Runner, kbit)
#ifdef GEMV_ALT
GEMV_RUNNER(RunnerAlt, kbit::alt::kbit)
#endif

int main(int argc, char** argv) {
  int dev = 0, sms = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, sms);
  const L2Flush flush(sms * 4);
  const PlainRead plain_read(sms);
  // The plain read's source: as many bytes as the largest call reads.
  const size_t read_max = size_t(64) << 20;
  void* rsrc;
  CK(cudaMalloc(&rsrc, read_max));
  CK(cudaMemset(rsrc, 3, read_max));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int R = 20;
  auto timed = [&](auto body) { return flushed_graph_us(st, R, flush, body); };
  const double t_flush = timed([] {});
  const double t_empty = timed([&] { empty_kernel<<<1, 32, 0, st>>>(); }) - t_flush;
  std::printf("graph us per call (flush %.2f us subtracted); empty kernel %.2f us\n", t_flush, t_empty);
#ifdef GEMV_ALT
  std::printf("%-24s %8s %6s %7s %7s %8s %8s %8s %8s\n", "case", "MB", "warps", "err", "errAlt", "kernel", "alt",
              "kernel2", "read");
#else
  std::printf("%-24s %8s %6s %7s %8s %8s %8s\n", "case", "MB", "warps", "err", "kernel", "kernel2", "read");
#endif
  // --check: outputs only (no timing; e.g. under compute-sanitizer, where
  // every tensor here is its own cudaMalloc, so memcheck sees its bounds).
  bool check_only = false, any_name = false;
  for (int i = 1; i < argc; ++i) {
    check_only = check_only || !std::strcmp(argv[i], "--check");
    any_name = any_name || std::strcmp(argv[i], "--check");
  }
  for (const Case& cs : kCases) {
    bool want = !any_name;
    for (int i = 1; i < argc; ++i) want = want || (std::strcmp(argv[i], "--check") && std::strstr(cs.name, argv[i]));
    if (!want) continue;
    Data d = make_data(cs, 1234u);
    auto plan_and_check = [&](auto& runner) {   // the worst error (check) of one call on a zeroed output
      runner.plan(d, sms);
      CK(cudaMemset(d.d_c, 0, size_t(cs.M) * cs.N * 2));
      runner.launch(d, st);
      CK(cudaStreamSynchronize(st));
      CK(cudaGetLastError());
      return check(d);
    };
    Runner run;
    const double err = plan_and_check(run);
#ifdef GEMV_ALT
    RunnerAlt alt;
    const double err_alt = plan_and_check(alt);
#endif
    if (check_only) {
#ifdef GEMV_ALT
      std::printf("%-24s err %.3f errAlt %.3f\n", cs.name, err, err_alt);
#else
      std::printf("%-24s err %.3f\n", cs.name, err);
#endif
      free_data(d);
      continue;
    }
    const double t_read = timed([&] { plain_read(rsrc, std::min(d.read_bytes, read_max), st); }) - t_flush;
    const double t1 = timed([&] { run.launch(d, st); }) - t_flush;
#ifdef GEMV_ALT
    const double ta = timed([&] { alt.launch(d, st); }) - t_flush;
#endif
    const double t2 = timed([&] { run.launch(d, st); }) - t_flush;
#ifdef GEMV_ALT
    std::printf("%-24s %8.2f %6d %7.3f %7.3f %8.2f %8.2f %8.2f %8.2f\n", cs.name, d.read_bytes / 1e6,
                run.shape.warps, err, err_alt, t1, ta, t2, t_read);
#else
    std::printf("%-24s %8.2f %6d %7.3f %8.2f %8.2f %8.2f\n", cs.name, d.read_bytes / 1e6, run.shape.warps, err, t1, t2,
                t_read);
#endif
#ifdef GEMV_TIMELINE
    {
      const dim3 g = run.grid(d);
      const size_t ctas = size_t(g.x) * g.y;
      unsigned long long* tl;
      CK(cudaMalloc(&tl, ctas * kMarks * 8));
      std::vector<double> acc_mean(kMarks, 0), acc_max(kMarks, 0), skew, span;
      const int reps = 7;
      for (int rep = 0; rep < reps; ++rep) {
        CK(cudaMemset(tl, 0, ctas * kMarks * 8));
        CK(cudaMemcpyToSymbol(g_gemv_tl, &tl, sizeof(tl)));
        flush(st);
        run.launch(d, st);
        CK(cudaStreamSynchronize(st));
        unsigned long long* none = nullptr;
        CK(cudaMemcpyToSymbol(g_gemv_tl, &none, sizeof(none)));
        std::vector<unsigned long long> h(ctas * kMarks);
        CK(cudaMemcpy(h.data(), tl, h.size() * 8, cudaMemcpyDeviceToHost));
        unsigned long long first = ~0ull, last_start = 0, last_end = 0;
        for (size_t c = 0; c < ctas; ++c) {
          first = std::min(first, h[c * kMarks]);
          last_start = std::max(last_start, h[c * kMarks]);
          for (int m = 1; m < kMarks; ++m) last_end = std::max(last_end, h[c * kMarks + m]);
        }
        skew.push_back((last_start - first) * 1e-3);
        span.push_back((last_end - first) * 1e-3);
        for (int m = 1; m < kMarks; ++m) {
          double s = 0, mx = 0;
          size_t n = 0;
          for (size_t c = 0; c < ctas; ++c)
            if (h[c * kMarks + m]) {
              const double v = (h[c * kMarks + m] - h[c * kMarks]) * 1e-3;
              s += v; mx = std::max(mx, v); ++n;
            }
          acc_mean[m] += n ? s / n / reps : 0;
          acc_max[m] += mx / reps;
        }
      }
      std::sort(skew.begin(), skew.end());
      std::sort(span.begin(), span.end());
      std::printf("  timeline (us; CTA start -> mark, mean/max over CTAs, mean of %d calls): "
                  "start skew %.2f, span %.2f\n", reps, skew[reps / 2], span[reps / 2]);
      std::printf("  ");
      for (int m = 1; m < kMarks; ++m)
        if (acc_mean[m] > 0) std::printf(" m%d %.2f/%.2f", m, acc_mean[m], acc_max[m]);
      std::printf("\n");
      CK(cudaFree(tl));
    }
#endif
    std::fflush(stdout);
    free_data(d);
  }
  return 0;
}
