// tc_bench.cu — standalone timing of the tensor-core kernels (the wgmma
// kernel, ptx/kbit_wgmma.cuh, the mma.sync kernel, ptx/kbit_gemm.cuh, and the
// decode kernel, ptx/kbit_decode.cuh) on the Llama-3 benchmark layers at
// k = 4, fp16, for probes and variants without
// the ~250-340 s extension build: it instantiates only the configurations it
// times. Built on the GPU machine (~1 min), or here to check that it compiles:
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo -I. -Iptx -Iscripts \
//        -o build/tc_bench scripts/tc_bench.cu [-DKBIT_WGMMA_PROBE=1] [-DKBIT_...=...]
//   build/tc_bench [case-name-substring | =case-name ...]
//
// For each case:
// * the configuration the shape rule (launch.cuh) picks for it, checked to be
//   the one this file instantiates;
// * 512 sampled outputs against a float64 host reference (err <= 1: within the
//   fp16 rounding of the dequantized weights and of the output), after the
//   first call and after the last timed one;
// * graph time: CUDA-graph replay of R x (L2 flush, call) minus R x (flush),
//   median of 7 replays, as eval/run.py --graph does; twice, and beside it a
//   plain read of the call's weight bytes (eval/run.py's: ptx/plain_read.cuh);
// * `differ`: outputs of the last timed call whose bits differ from the first
//   call's. The decode kernel adds its split-tile parts in a fixed order: 0.
//   The tiled and wgmma kernels add a split tile's parts in the order the
//   CTAs claim them (README), so some outputs differ in their last bits.
//   The `few` cases (2-3 units per decode warp, tiles over 2-3 CTAs) check
//   the decode kernel's split-tile completion there (docs/results.md v38).
// -DTC_WGMMA_ONLY builds only the wgmma kernel's Llama-3 cases from 32 rows on
// (~20 s; scripts/wg_breakdown.sh builds its probes and hooks with it), and
// TC_GRID=1 prints each case's grid.
// With KBIT_WGMMA_PROBE (kbit_wgmma.cuh) or KBIT_DECODE_PROBE (kbit_decode.cuh)
// the probed kernel's results are wrong by design and the check is reported,
// not enforced. The extension's numbers
// come from eval/run.py; this tool ranks variants and splits the time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#ifdef TC_TIMELINE
// Per-CTA timeline (thread 0, %globaltimer ns): slots 0 start, 1 tables
// built, 2 first stage landed, 31 loop left; per tile epilogue e (up to 4)
// slots 3 + 7e + {0 start, 1 claimed (thread 0's claim and waits, a
// barrier), 2 part published (first and middle parts) or the last part's
// loads start, 3 end, 4 kind: 0 whole tile, 1 split part, 2 the last part;
// 5 the others' sum landed (last part)}.
constexpr int kSlots = 32;
__constant__ unsigned long long* g_tl;   // [CTAs][kSlots], or null
__shared__ int s_tl_ep;                  // thread 0's current epilogue (mark 0 zeroes it)
__device__ __forceinline__ unsigned long long kbit_mark_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned long long kbit_mark_after(float x) {   // once x has landed
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "f"(x));
  return t;
}
#define KBIT_WGMMA_MARK(slot, v)                                 \
  do {                                                           \
    if (threadIdx.x == 0 && g_tl) {                              \
      if ((slot) == 0) s_tl_ep = 0;                              \
      g_tl[blockIdx.x * kSlots + (slot)] = (v);                  \
    }                                                            \
  } while (0)
#define KBIT_EPI_MARK(step, v)                                             \
  do {                                                                     \
    if (threadIdx.x == 0 && g_tl && s_tl_ep < 4)                           \
      g_tl[blockIdx.x * kSlots + 3 + 7 * s_tl_ep + (step)] = (v);          \
  } while (0)
#define KBIT_EPI_NEXT()                        \
  do {                                         \
    if (threadIdx.x == 0 && g_tl) ++s_tl_ep;   \
  } while (0)
#endif
#ifdef TC_RING
// The ring's hand-overs (kbit_wgmma.cuh KBIT_RING_MARK), SM clocks of the
// first kRingUnits units of each CTA's share: [CTA][unit][kind].
constexpr int kRingUnits = 64, kRingKinds = 5;
__constant__ long long* g_ring;
#define KBIT_RING_MARK(kind, n)                                                         \
  do {                                                                                  \
    if (threadIdx.x % 32 == 0 && (threadIdx.x == 0 || (kind) < 2) && g_ring && (n) < kRingUnits) { \
      long long t_;                                                                     \
      asm volatile("mov.u64 %0, %%clock64;" : "=l"(t_)::"memory");                      \
      g_ring[(size_t(blockIdx.x) * kRingUnits + (n)) * kRingKinds + (kind)] = t_;       \
    }                                                                                   \
  } while (0)
#endif
#ifdef TC_PHASES
// Loop phases of every MMA warp (lane 0, SM clocks): 0 issuing the unit's
// MMAs, 1 waiting for the previous unit's MMAs (and releasing its slot, or the
// CTA barrier and the refill without a copy warp), 2 waiting for the next
// unit's stage, 3 dequantizing it (until its last fragment is in a register),
// 4 tile epilogues, then the loop's total. Where the stage's wait comes
// first (WgmmaConfig::kEarlyFull) it is in phase 1 and phase 2 is empty.
constexpr int kPhases = 5, kPhaseWords = 8;
__constant__ unsigned* g_ph;   // [CTAs][32 warps][kPhaseWords], or null
__device__ __forceinline__ unsigned tc_clock_after(unsigned x) {
  unsigned t;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(t) : "r"(x));
  return t;
}
#define KBIT_WGMMA_PHASES_BEGIN()                        \
  unsigned ph_acc_[kPhases] = {0, 0, 0, 0, 0};            \
  const unsigned ph_t0_ = tc_clock_after(0u);             \
  unsigned ph_t_ = ph_t0_
#define KBIT_WGMMA_PHASE(k, x)                            \
  do {                                                    \
    const unsigned t_ = tc_clock_after(x);                \
    ph_acc_[k] += t_ - ph_t_;                             \
    ph_t_ = t_;                                           \
  } while (0)
#define KBIT_WGMMA_PHASES_END()                                                        \
  do {                                                                                 \
    const unsigned t_ = tc_clock_after(0u);                                            \
    if (g_ph && (threadIdx.x & 31) == 0) {                                             \
      unsigned* o_ = g_ph + (blockIdx.x * 32 + (threadIdx.x >> 5)) * kPhaseWords;      \
      for (int k_ = 0; k_ < kPhases; ++k_) o_[k_] = ph_acc_[k_];                       \
      o_[kPhases] = t_ - ph_t0_;                                                       \
      o_[kPhases + 1] = 1;                                                             \
    }                                                                                  \
  } while (0)
#endif
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_gemv.cuh"
#include "kbit_rows.cuh"
#include "launch.cuh"
#include "bench_util.cuh"   // CK, L2Flush, PlainRead, flushed_graph_us

using kbit::Kernel;

struct Case {
  const char* name;
  int N, K, M;
  Kernel kernel;   // kTiled (mma.sync), kWgmma or kDecode
  int nt;          // wgmma: tiles per warp as wgmma_config_for picks (4: whole 128-row tiles)
  int bits = 4;    // k
};
// The configuration of each case, by name (as launch.cuh dispatches it).
template <int kBits, int kMTiles> using TiledK = kbit::KbitCfg<kBits, __half, kMTiles>;
template <int kMTiles> using Tiled4 = TiledK<4, kMTiles>;
template <int kBits, int kBlockM, int kNT> using WgK = kbit::WgmmaCfg<kBits, __half, kBlockM, kNT>;
template <int kBlockM, int kNT> using Wg4 = WgK<4, kBlockM, kNT>;
using WgWhole4 = kbit::WgmmaCfg<4, __half, 128, 1, 8>;
// Decode configurations: the shape rule's (DecodeCfg: 16 warps, its ring
// depth) and variants named by warps, 16-row tiles per warp, ring stages and
// activation rows per stage.
template <int kBits, int kNT, int kAct> using Dec = kbit::DecodeCfg<kBits, __half, kNT, kAct>;
template <int kBits, int kWarps, int kNT, int kStages, int kAct>
using DecV = kbit::DecodeConfig<kBits, __half, kWarps, kNT, kStages, kAct>;

// Host-side data of one case and its device copies.
struct Data {
  Case cs;
  int n_pad, k_tiles;
  std::vector<int32_t> packed;
  std::vector<uint8_t> absmax;
  std::vector<float> cb;
  std::vector<__half> a;
  int32_t *d_packed, *d_offsets, *d_counters = nullptr;
  uint8_t* d_absmax;
  float *d_cb, *d_ws = nullptr;
  __half *d_a, *d_c;
  size_t weight_bytes;
};

static uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static Data make_data(const Case& cs, uint64_t seed) {
  Data d;
  d.cs = cs;
  d.k_tiles = cs.K / 64;
  d.n_pad = (cs.N + 7) / 8 * 8;
  const size_t words = size_t(d.k_tiles) * d.n_pad * 2 * cs.bits;
  d.packed.resize(words);
  for (size_t i = 0; i < words; i += 2) {
    const uint64_t r = splitmix(seed);
    d.packed[i] = int32_t(r);
    d.packed[i + 1] = int32_t(r >> 32);
  }
  d.absmax.resize(size_t(d.k_tiles) * d.n_pad * 2);
  for (auto& s : d.absmax) {
    const uint64_t r = splitmix(seed);
    s = uint8_t(((8 + r % 5) << 4) | ((r >> 8) % 16));
  }
  std::mt19937 rng{unsigned(seed)};
  std::normal_distribution<float> nd;
  d.cb.resize(size_t(1) << cs.bits);
  for (auto& c : d.cb) c = nd(rng);
  d.a.resize(size_t(cs.M) * cs.K);
  for (auto& x : d.a) x = __float2half(nd(rng));
  const int32_t offsets[2] = {0, cs.M};
  d.weight_bytes = words * 4 + d.absmax.size();
  CK(cudaMalloc(&d.d_packed, words * 4));
  CK(cudaMalloc(&d.d_absmax, d.absmax.size()));
  CK(cudaMalloc(&d.d_offsets, 8));
  CK(cudaMalloc(&d.d_cb, d.cb.size() * 4));
  CK(cudaMalloc(&d.d_a, d.a.size() * 2));
  CK(cudaMalloc(&d.d_c, size_t(cs.M) * cs.N * 2));
  CK(cudaMemcpy(d.d_packed, d.packed.data(), words * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_absmax, d.absmax.data(), d.absmax.size(), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_offsets, offsets, 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_cb, d.cb.data(), d.cb.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d.d_a, d.a.data(), d.a.size() * 2, cudaMemcpyHostToDevice));
  return d;
}

static void free_data(Data& d) {
  CK(cudaFree(d.d_packed)); CK(cudaFree(d.d_absmax)); CK(cudaFree(d.d_offsets));
  CK(cudaFree(d.d_cb)); CK(cudaFree(d.d_a)); CK(cudaFree(d.d_c));
  if (d.d_ws) CK(cudaFree(d.d_ws));
  if (d.d_counters) CK(cudaFree(d.d_counters));
}

static kbit_api::KbitArgs args_of(const Data& d) {
  kbit_api::KbitArgs a{};
  a.a = d.d_a; a.b_packed = d.d_packed; a.b_absmax = d.d_absmax; a.codebook = d.d_cb; a.offsets = d.d_offsets;
  a.c = d.d_c;
  a.M = d.cs.M; a.N = d.cs.N; a.K = d.cs.K; a.E = 1; a.bits = d.cs.bits; a.n_pad = d.n_pad; a.k_tiles = d.k_tiles;
  a.bf16 = 0;
  a.kernel = 0;
  return a;
}

// The call's whole output, bit for bit (to compare repeated calls).
static std::vector<uint16_t> output_bits(const Data& d) {
  std::vector<uint16_t> c(size_t(d.cs.M) * d.cs.N);
  CK(cudaMemcpy(c.data(), d.d_c, c.size() * 2, cudaMemcpyDeviceToHost));
  return c;
}

// Largest error of 512 sampled outputs against a float64 host reference,
// relative to the fp16 rounding the kernels allow: weights enter the MMA as
// fp16 products (2^-11 of each term's magnitude, twice), the output is fp16.
static double check(const Data& d) {
  const Case& cs = d.cs;
  std::vector<__half> c(size_t(cs.M) * cs.N);
  CK(cudaMemcpy(c.data(), d.d_c, c.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<double> scale(256);
  for (int s = 0; s < 256; ++s) {
    const int e = s >> 4, m = s & 15;
    scale[s] = e == 0 ? m / 16384.0 : std::ldexp(1.0 + m / 16.0, e - 11);
  }
  uint64_t seed = 77;
  double worst = 0;
  for (int i = 0; i < 512; ++i) {
    const int r = int(splitmix(seed) % cs.M), n = int(splitmix(seed) % cs.N);
    double sum = 0, mag = 0;
    for (int kt = 0; kt < d.k_tiles; ++kt)
      for (int b = 0; b < 2; ++b) {
        const size_t row = size_t(kt) * d.n_pad + n;
        const int32_t* w = &d.packed[(row * 2 + b) * cs.bits];
        const double sc = scale[d.absmax[row * 2 + b]];
        for (int j = 0; j < 32; ++j) {
          int idx = 0;
          for (int p = 0; p < cs.bits; ++p) idx |= ((uint32_t(w[p]) >> j) & 1) << p;
          const double t = double(d.cb[idx]) * sc * double(__half2float(d.a[size_t(r) * cs.K + kt * 64 + b * 32 + j]));
          sum += t;
          mag += std::fabs(t);
        }
      }
    const double got = double(__half2float(c[size_t(r) * cs.N + n]));
    worst = std::max(worst, std::fabs(got - sum) / (1e-30 + mag * 1e-3 + std::fabs(sum) / 512));
  }
  return worst;
}

// Plans (the tree's PlanFn with the named configuration) and launches one case.
template <class Cfg, Kernel K>
struct Runner {
  using Config = Cfg;
  static constexpr Kernel kKernel = K;
  kbit_api::KbitPlan plan{};
  void prepare(Data& d, int dev) {
    const kbit_api::KbitArgs a = args_of(d);
    plan.mtiles = Cfg::BLOCK_M / 8;
    plan.wgmma = K == Kernel::kWgmma ? d.cs.nt : 0;
    bool fits = true;
    if (const char* err = kbit::PlanFn<K>{a, dev, &plan, &fits}.template operator()<Cfg>()) {
      std::fprintf(stderr, "%s: plan: %s\n", d.cs.name, err);
      std::exit(1);
    }
    if (!fits) {
      std::fprintf(stderr, "%s: the configuration does not fit the device's shared memory\n", d.cs.name);
      std::exit(1);
    }
    if (std::getenv("TC_GRID")) std::printf("  %s: grid %d\n", d.cs.name, plan.grid);
    CK(cudaMalloc(&d.d_ws, std::max<size_t>(plan.workspace_floats, 1) * 4));
    CK(cudaMemset(d.d_ws, 0, std::max<size_t>(plan.workspace_floats, 1) * 4));
    CK(cudaMalloc(&d.d_counters, std::max<size_t>(plan.counters, 1) * 4));
    CK(cudaMemset(d.d_counters, 0, std::max<size_t>(plan.counters, 1) * 4));
  }
  void launch(const Data& d, cudaStream_t st) const {
    const kbit_api::KbitArgs a = args_of(d);
    if (const char* err = kbit::RunFn<K>{a, plan, d.d_ws, d.d_counters, st}.template operator()<Cfg>()) {
      std::fprintf(stderr, "%s: launch: %s\n", d.cs.name, err);
      std::exit(1);
    }
  }
};

// The row-owning kernel (kbit_rows.cuh): dense, M <= 32, no workspace.
template <class Cfg>
struct RowsRunner {
  using Config = Cfg;
  static constexpr Kernel kKernel = Kernel::kDecode;   // (rule_agrees: never the rule's)
  kbit_api::KbitPlan plan{};   // (plan.grid: the launch's, and TC_PHASES sizes its buffer by it)
  void prepare(Data& d, int dev) {
    plan.grid = kbit::rows_grid(d.cs.N, kbit::sm_count(dev) / Cfg::kSplit, Cfg::kCtaRows);   // (clusters of kSplit)
    if (const char* err = kbit::RowsPlanFn{dev}.template operator()<Cfg>()) {
      std::fprintf(stderr, "%s: plan: %s\n", d.cs.name, err);
      std::exit(1);
    }
  }
  void launch(const Data& d, cudaStream_t st) const {
    const kbit::RowsRunFn run{kbit::kbit_params(args_of(d), plan, nullptr, nullptr), plan.grid, st};
    if (const char* err = run.template operator()<Cfg>()) {
      std::fprintf(stderr, "%s: launch: %s\n", d.cs.name, err);
      std::exit(1);
    }
  }
};
template <int kBits, int kGroups, int kGroupWarps, int kNT, int kStages, int kRows = 16, bool kPerm = false,
          int kSplit = 1, int kSync = 1, bool kFields = false>
using RowsV = kbit::RowsConfig<kBits, __half, kGroups, kGroupWarps, kNT, kStages, kRows, kPerm, kSplit, kSync, kFields>;

// One flushed call of a case with a hook buffer on: `sym` (a __constant__
// pointer the hooks write through) points at n zeroed words for the call and
// is null again after it; returns the words. (The timeline, phase and ring
// reports.)
template <class T, class R>
[[maybe_unused]] static std::vector<T> hooked_call(T* const& sym, size_t n, const Data& d, const R& runner,
                                                   cudaStream_t st, const L2Flush& flush) {
  T* buf;
  CK(cudaMalloc(&buf, n * sizeof(T)));
  CK(cudaMemset(buf, 0, n * sizeof(T)));
  CK(cudaMemcpyToSymbol(sym, &buf, sizeof(buf)));
  flush(st);
  runner.launch(d, st);
  CK(cudaStreamSynchronize(st));
  T* none = nullptr;
  CK(cudaMemcpyToSymbol(sym, &none, sizeof(none)));
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), buf, n * sizeof(T), cudaMemcpyDeviceToHost));
  CK(cudaFree(buf));
  return h;
}

#ifdef TC_TIMELINE
// One flushed call with the marks on (mean of 5 calls): when the set-up and
// the loop end, and what each tile epilogue costs, by kind and by whether it
// was the CTA's last.
template <class R>
static void timeline(const Data& d, const R& runner, cudaStream_t st, const L2Flush& flush) {
  const int ctas = runner.plan.grid;
  double setup[3] = {0, 0, 0}, end_mean = 0, end_min = 0, end_max = 0, active_sum = 0;
  // [last epilogue of its CTA?][kind] -> count, sums of the three steps and the total
  double ep[2][3][7] = {};
  const int reps = 5;
  for (int rep = 0; rep < reps; ++rep) {
    const std::vector<unsigned long long> h = hooked_call(g_tl, size_t(ctas) * kSlots, d, runner, st, flush);
    unsigned long long t0 = ~0ull;
    for (int c = 0; c < ctas; ++c) t0 = std::min(t0, h[size_t(c) * kSlots]);
    // CTAs past the share count (StreamKShare::G: fewer units than CTAs) leave
    // before their first mark after the start; they are left out.
    int active = 0;
    for (int c = 0; c < ctas; ++c) active += h[size_t(c) * kSlots + 31] != 0;
    active_sum += active;
    double emin = 1e30, emax = 0, esum = 0;
    for (int c = 0; c < ctas; ++c) {
      const unsigned long long* m = &h[size_t(c) * kSlots];
      if (!m[31]) continue;
      for (int i = 0; i < 3; ++i) setup[i] += (m[i] - t0) / 1e3 / active / reps;
      const double e = (m[31] - t0) / 1e3;
      esum += e; emin = std::min(emin, e); emax = std::max(emax, e);
      int n = 0;
      while (n < 4 && m[3 + 7 * n + 3]) ++n;
      for (int k = 0; k < n; ++k) {
        const unsigned long long* q = m + 3 + 7 * k;
        const int kind = int(q[4]), last = k == n - 1;
        double* a = ep[last][kind];
        a[0] += 1;
        if (kind) {
          a[1] += (q[1] - q[0]) / 1e3;
          a[2] += (q[2] - q[1]) / 1e3;
          a[3] += (q[3] - q[2]) / 1e3;
        }
        if (kind == 2) a[5] += (q[5] - q[2]) / 1e3;
        a[4] += (q[3] - q[0]) / 1e3;
      }
    }
    end_mean += esum / active / reps; end_min += emin / reps; end_max += emax / reps;
    if (rep == reps - 1) {   // the earliest and latest CTAs of the last call
      std::vector<std::pair<double, int>> order;
      for (int c = 0; c < ctas; ++c)
        if (h[size_t(c) * kSlots + 31]) order.push_back({(h[size_t(c) * kSlots + 31] - t0) / 1e3, c});
      std::sort(order.begin(), order.end());
      const int na = int(order.size());
      for (int j : {0, 1, 2, na / 2, na - 3, na - 2, na - 1}) {
        if (j < 0 || j >= na) continue;
        const int c = order[j].second;
        const unsigned long long* m = &h[size_t(c) * kSlots];
        std::printf("  CTA %3d: start %.2f first stage %.2f left %.2f; epilogues", c, (m[0] - t0) / 1e3,
                    (m[2] - t0) / 1e3, order[j].first);
        for (int k = 0; k < 4 && m[3 + 7 * k + 3]; ++k)
          std::printf(" [kind %d at %.2f: %.2f us]", int(m[3 + 7 * k + 4]), (m[3 + 7 * k] - t0) / 1e3,
                      (m[3 + 7 * k + 3] - m[3 + 7 * k]) / 1e3);
        std::printf("\n");
      }
    }
  }
  std::printf("  timeline (mean of %d calls, us from the first CTA's start; %.0f of %d CTAs with units): tables "
              "%.2f, first stage %.2f; loop left min / mean / max %.2f / %.2f / %.2f\n", reps, active_sum / reps,
              ctas, setup[1], setup[2], end_min, end_mean, end_max);
  static const char* kinds[3] = {"whole tile", "split part", "last part"};
  for (int last = 0; last < 2; ++last)
    for (int kind = 0; kind < 3; ++kind) {
      const double* a = ep[last][kind];
      if (a[0] == 0) continue;
      const double n = a[0];
      std::printf("  epilogue %-12s %-9s per CTA %.2f: mean %.2f us (claim %.2f, publish %.2f, rest %.2f",
                  kinds[kind], last ? "(last)" : "(earlier)", n / active_sum, a[4] / n, a[1] / n, a[2] / n,
                  a[3] / n);
      if (kind == 2) std::printf(": others' sum loaded %.2f", a[5] / n);
      std::printf(")\n");
    }
}
#endif

#ifdef TC_RING
// One flushed call with the ring marks on: per unit n of a share (units S + 1
// .. 62, so that every slot has turned over once), means over the CTAs, SM
// clocks: the copies' latency (issued -> thread 0 past the full barrier, or
// landed before it came), the copy warp's issue, the slot's hand-back (thread
// 0's release of unit n - S -> the copy warp has the slot: waits for the other
// MMA warps and the wake-up), thread 0's wait at the full barrier, and the
// period (thread 0 past unit n's barrier after unit n - 1's).
template <class R>
static void ring_report(const Data& d, const R& runner, cudaStream_t st, const L2Flush& flush) {
  using C = typename R::Config;
  const int ctas = runner.plan.grid, S = C::kStages;
  const std::vector<long long> h = hooked_call(g_ring, size_t(ctas) * kRingUnits * kRingKinds, d, runner, st, flush);
  double sum[5] = {}, cnt = 0, lat_max = 0;
  for (int c = 0; c < ctas; ++c)
    for (int u = S + 1; u < kRingUnits - 1; ++u) {
      const long long* m = &h[(size_t(c) * kRingUnits + u) * kRingKinds];
      const long long* q = &h[(size_t(c) * kRingUnits + u - S) * kRingKinds];   // the slot's previous unit
      const long long* b = m - kRingKinds;                                       // unit u - 1
      if (!m[0] || !m[1] || !m[2] || !m[3] || !q[4] || !b[3]) continue;
      const double lat = double(m[3] - m[1]);
      sum[0] += lat; sum[1] += double(m[1] - m[0]); sum[2] += double(m[0] - q[4]);
      sum[3] += double(m[3] - m[2]); sum[4] += double(m[3] - b[3]);
      lat_max = std::max(lat_max, lat);
      ++cnt;
    }
  if (cnt == 0) { std::printf("  ring: no complete units\n"); return; }
  std::printf("  ring (%d stages, %.0f units, SM clocks): copy latency %.0f (max %.0f), issue %.0f, slot hand-back %.0f, "
              "thread 0 waits %.0f, period %.0f\n", S, cnt, sum[0] / cnt, lat_max, sum[1] / cnt, sum[2] / cnt,
              sum[3] / cnt, sum[4] / cnt);
}
#endif

#ifdef TC_PHASES
// One flushed call with the phase clocks on (5 calls): each phase's share of
// the MMA warps' loop time, mean over warps, and the spread of the loop totals.
template <class R>
static void phases(const Data& d, const R& runner, cudaStream_t st, const L2Flush& flush) {
  const size_t words = size_t(runner.plan.grid) * 32 * kPhaseWords;
  double sum[kPhases + 1] = {}, tmin = 1e30, tmax = 0;
  long n = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const std::vector<unsigned> h = hooked_call(g_ph, words, d, runner, st, flush);
    for (size_t w = 0; w < words / kPhaseWords; ++w) {
      const unsigned* o = &h[w * kPhaseWords];
      if (!o[kPhases + 1]) continue;
      for (int k = 0; k <= kPhases; ++k) sum[k] += o[k];
      tmin = std::min(tmin, double(o[kPhases])); tmax = std::max(tmax, double(o[kPhases]));
      ++n;
    }
  }
  static const char* names[kPhases] = {"MMA issue", "wait MMAs", "wait stage", "dequant", "epilogue"};
  double other = sum[kPhases];
  std::printf("  phases (%ld warp loops, mean %.0f clocks, min %.0f, max %.0f):", n, sum[kPhases] / n, tmin, tmax);
  for (int k = 0; k < kPhases; ++k) {
    std::printf(" %s %.1f%%", names[k], 100 * sum[k] / sum[kPhases]);
    other -= sum[k];
  }
  std::printf(" rest %.1f%%\n", 100 * other / sum[kPhases]);
}
#endif

// Whether a case's configuration is the shape rule's (launch.cuh): kernel,
// mtiles, wgmma configuration; for the decode kernel its tile, activation
// rows, warps and ring depth (variants print NO).
template <class R>
static bool rule_agrees(const Case& cs, int sms) {
  kbit_api::KbitArgs a{};
  a.M = cs.M; a.N = cs.N; a.K = cs.K; a.E = 1; a.bits = cs.bits;
  int mtiles = kbit::kbit_pick_mtiles(a.M, a.E);
  const bool decode = !kbit::wgmma_kernel_pays(a, mtiles) && kbit::decode_kernel_pays(a) &&
                      kbit::decode_serves(a, mtiles, sms);   // (the plan's order: wgmma, decode, tiled)
  if constexpr (R::kKernel == Kernel::kDecode) {
    using C = typename R::Config;
    if (!decode) return false;
    int nt = 0, act = 0;
    kbit::decode_shape(a, sms, nt, act);
    return C::kBits == cs.bits && C::kNT == kbit::decode_tile_nt(cs.bits, nt, act) && C::kActRows == act &&
           std::is_same_v<C, Dec<C::kBits, C::kNT, C::kActRows>>;
  }
  if (!kbit::wgmma_kernel_pays(a, mtiles)) return cs.kernel == Kernel::kTiled && !decode;
  mtiles = kbit::wgmma_mtiles(a, mtiles);
  return cs.kernel == Kernel::kWgmma && kbit::wgmma_config_for(a, mtiles, sms) == cs.nt;
}

int main(int argc, char** argv) {
  int dev = 0, sms = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs; KBIT_WGMMA_PROBE=%d KBIT_DECODE_PROBE=%d\n", prop.name, sms, KBIT_WGMMA_PROBE,
              KBIT_DECODE_PROBE);
  const L2Flush flush(sms * 4);
  const PlainRead plain_read(sms);
  const size_t read_max = size_t(128) << 20;
  void* rsrc;
  CK(cudaMalloc(&rsrc, read_max));
  CK(cudaMemset(rsrc, 3, read_max));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int R = 10;
  auto timed = [&](auto body) { return flushed_graph_us(st, R, flush, body); };
  // TC_CHECK_ONLY: check the first call only (for compute-sanitizer); with
  // TC_REPEAT=n, then n more calls (each after an L2 flush), each compared
  // bit for bit with the first: intermittent faults.
  const bool check_only = std::getenv("TC_CHECK_ONLY") != nullptr;
  const int repeat = std::getenv("TC_REPEAT") ? std::atoi(std::getenv("TC_REPEAT")) : 0;
  const double t_flush = check_only ? 0.0 : timed([] {});
  std::printf("graph us per call (flush %.2f us subtracted)\n", t_flush);
  std::printf("%-26s %8s %5s %8s %8s %8s %8s %6s\n", "case", "MB", "rule", "err", "kernel", "kernel2", "read",
              "differ");

  auto run_case = [&](const Case& cs, auto runner) {
    bool want = argc < 2;
    for (int i = 1; i < argc; ++i)   // a substring of the name, or "=name"
      want = want || (argv[i][0] == '=' ? !std::strcmp(cs.name, argv[i] + 1) : !!std::strstr(cs.name, argv[i]));
    if (!want) return;
    Data d = make_data(cs, 1234u + cs.M);
    runner.prepare(d, dev);
    CK(cudaMemset(d.d_c, 0, size_t(cs.M) * cs.N * 2));
    runner.launch(d, st);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    const double err1 = check(d);
    const std::vector<uint16_t> bits1 = output_bits(d);
    if (check_only) {   // no timed calls
      int bad_calls = 0;
      for (int r = 0; r < repeat; ++r) {
        flush(st);
        runner.launch(d, st);
        CK(cudaStreamSynchronize(st));
        const std::vector<uint16_t> bits = output_bits(d);
        bad_calls += bits != bits1;
      }
      std::printf("%-26s %8.2f %5s %8.3f (checked only; %d of %d more calls differ)\n", cs.name,
                  d.weight_bytes / 1e6, rule_agrees<decltype(runner)>(cs, sms) ? "yes" : "NO", err1, bad_calls,
                  repeat);
      if (!(err1 <= 1.0)) std::exit(2);
      free_data(d);
      return;
    }
    const double t1 = timed([&] { runner.launch(d, st); }) - t_flush;
    const double t_read = timed([&] { plain_read(rsrc, std::min(d.weight_bytes, read_max), st); }) - t_flush;
    const double t2 = timed([&] { runner.launch(d, st); }) - t_flush;
    CK(cudaStreamSynchronize(st));
    const double err = std::max(err1, check(d));   // the last of the timed calls too
    // Outputs of the last timed call whose bits differ from the first call's
    // (0 for the decode kernel; see the header for the others).
    const std::vector<uint16_t> bits2 = output_bits(d);
    size_t differ = 0;
    for (size_t i = 0; i < bits1.size(); ++i) differ += bits1[i] != bits2[i];
    std::printf("%-26s %8.2f %5s %8.3f %8.2f %8.2f %8.2f %6zu\n", cs.name, d.weight_bytes / 1e6,
                rule_agrees<decltype(runner)>(cs, sms) ? "yes" : "NO", err, t1, t2, t_read, differ);
    std::fflush(stdout);
#ifdef TC_TIMELINE
    if (cs.kernel == Kernel::kWgmma) timeline(d, runner, st, flush);
#endif
#ifdef TC_PHASES
    if (cs.kernel == Kernel::kWgmma) phases(d, runner, st, flush);
#endif
#ifdef TC_RING
    if (cs.kernel == Kernel::kWgmma) ring_report(d, runner, st, flush);
#endif
    if (!KBIT_WGMMA_PROBE && !KBIT_DECODE_PROBE && !(err <= 1.0)) {
      std::fprintf(stderr, "%s: wrong results (err %.3f)\n", cs.name, err);
      std::exit(2);
    }
    free_data(d);
  };
  constexpr Kernel T = Kernel::kTiled, W = Kernel::kWgmma, D = Kernel::kDecode;
  // Decode kernel (M <= 8): the rule's configuration, then variants (_wW
  // warps, _ntT 16-row tiles per warp, _sS ring stages, _aA activation rows
  // per stage; _v34: the rule's configuration before v35).
  // The wgmma configurations the shape rule picks on the benchmark layers from 32 rows on
  // (wgmma_config_for): 8B and 70B gate/up and down, Qwen3-Coder-Next (two CTAs per SM up to 64
  // rows), k = 2 and 5; and 8B gate/up at 32 rows, where the rule takes the row-owning kernel.
  // The full list runs them, and -DTC_WGMMA_ONLY alone.
  [[maybe_unused]] auto wgmma_rule_cases = [&] {   // (-DTC_ROWS_ONLY and -DTC_SYNC builds run none)
    run_case({"8b_gateup_m32", 14336, 4096, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
    run_case({"8b_gateup_m64", 14336, 4096, 64, W, 2}, Runner<Wg4<64, 2>, W>{});
    run_case({"8b_down_m64", 4096, 14336, 64, W, 2}, Runner<Wg4<64, 2>, W>{});
    run_case({"8b_gateup_m128", 14336, 4096, 128, W, 4}, Runner<WgWhole4, W>{});
    run_case({"8b_down_m128", 4096, 14336, 128, W, 1}, Runner<Wg4<128, 1>, W>{});
    run_case({"70b_gateup_m64", 28672, 8192, 64, W, 3}, Runner<Wg4<64, 3>, W>{});
    run_case({"70b_gateup_m128", 28672, 8192, 128, W, 1}, Runner<Wg4<128, 1>, W>{});
    run_case({"70b_gateup_m32", 28672, 8192, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
    run_case({"70b_down_m32", 8192, 28672, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
    run_case({"70b_down_m64", 8192, 28672, 64, W, 3}, Runner<Wg4<64, 3>, W>{});
    run_case({"70b_down_m128", 8192, 28672, 128, W, 1}, Runner<Wg4<128, 1>, W>{});
    run_case({"qwen3_gateup_m32", 5120, 2048, 32, W, 1}, Runner<Wg4<32, 1>, W>{});
    run_case({"qwen3_gateup_m64", 5120, 2048, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"qwen3_gateup_m128", 5120, 2048, 128, W, 1}, Runner<Wg4<128, 1>, W>{});
    run_case({"qwen3_down_m64", 2048, 5120, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
    // the other Qwen3-Coder-Next layers at 64 rows, and 128 rows as the rule takes them on layers
    // under 2^25 weights (two 64-row tiles)
    run_case({"qwen3_q_m64", 4096, 2048, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"qwen3_o_m64", 2048, 4096, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"qwen3_kv_m64", 512, 2048, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"qwen3_gateup_m128r", 5120, 2048, 128, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"qwen3_down_m128r", 2048, 5120, 128, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"qwen3_kv_m128r", 512, 2048, 128, W, 1}, Runner<Wg4<64, 1>, W>{});
    run_case({"70b_gateup_m64_k5", 28672, 8192, 64, W, 3, 5}, Runner<WgK<5, 64, 3>, W>{});
    run_case({"8b_down_m64_k2", 4096, 14336, 64, W, 2, 2}, Runner<WgK<2, 64, 2>, W>{});
    // the other k of the benchmarks' 64-row rows (eval/tasks/kbit_gemm.json)
    run_case({"70b_gateup_m64_k2", 28672, 8192, 64, W, 3, 2}, Runner<WgK<2, 64, 3>, W>{});
    run_case({"70b_gateup_m64_k3", 28672, 8192, 64, W, 3, 3}, Runner<WgK<3, 64, 3>, W>{});
    run_case({"8b_down_m64_k3", 4096, 14336, 64, W, 2, 3}, Runner<WgK<3, 64, 2>, W>{});
    run_case({"8b_down_m64_k5", 4096, 14336, 64, W, 2, 5}, Runner<WgK<5, 64, 2>, W>{});
    // k = 2 in the other configuration forms (its own table layout, KBIT_WGMMA_ROW_PAIR)
    run_case({"70b_gateup_m32_k2", 28672, 8192, 32, W, 3, 2}, Runner<WgK<2, 32, 3>, W>{});
    run_case({"70b_gateup_m128_k2", 28672, 8192, 128, W, 1, 2}, Runner<WgK<2, 128, 1>, W>{});
    run_case({"8b_gateup_m128_k2", 14336, 4096, 128, W, 4, 2}, Runner<kbit::WgmmaCfg<2, __half, 128, 1, 8>, W>{});
    run_case({"qwen3_gateup_m64_k2", 5120, 2048, 64, W, 1, 2}, Runner<WgK<2, 64, 1>, W>{});
    // k = 3 and 5 at 128 rows (12 MMA warps)
    run_case({"70b_gateup_m128_k3", 28672, 8192, 128, W, 1, 3}, Runner<WgK<3, 128, 1>, W>{});
    run_case({"70b_gateup_m128_k5", 28672, 8192, 128, W, 1, 5}, Runner<WgK<5, 128, 1>, W>{});
  };
#ifdef TC_WGMMA_ONLY   // the wgmma kernel's cases from 32 rows on alone: a faster build for its probes
  (void)T;
  (void)D;
  wgmma_rule_cases();
  // 8B gate/up at 64 rows in 112 whole 128-row tiles (8 MMA warps and a copy warpgroup, one CTA per
  // tile, 6 or 4 stages) against the rule's two 16-row tiles per warp in stream-K (v65)
  run_case({"8b_gateup_m64_whole", 14336, 4096, 64, W, 4}, Runner<kbit::WgmmaConfig<4, __half, 64, 6, 1, 8, 1>, W>{});
  run_case({"8b_gateup_m64_whole4", 14336, 4096, 64, W, 4}, Runner<kbit::WgmmaConfig<4, __half, 64, 4, 1, 8, 1>, W>{});
  // 8B gate/up at 128 rows (112 whole tiles on 132 SMs) with stream-K: 12 and 8 MMA warps
  run_case({"8b_gateup_m128_sk12", 14336, 4096, 128, W, 1}, Runner<Wg4<128, 1>, W>{});
  run_case({"8b_gateup_m128_sk8", 14336, 4096, 128, W, 1}, Runner<WgWhole4, W>{});
  // 8B gate/up at 128 rows in whole tiles with 4 and 7 ring stages (the rule's: 6; 7 is the most
  // that fit beside the 64 KB pair table): is the loop bound by the ring's depth?
  run_case({"8b_gateup_m128_s4", 14336, 4096, 128, W, 4}, Runner<kbit::WgmmaConfig<4, __half, 128, 4, 1, 8, 1>, W>{});
  run_case({"8b_gateup_m128_s7", 14336, 4096, 128, W, 4}, Runner<kbit::WgmmaConfig<4, __half, 128, 7, 1, 8, 1>, W>{});
#else
  // Two K-tiles per pass of the row-owning kernel's group barrier (RowsConfig kSyncTiles; _sync2,
  // 4 stages) against the rule's configurations (_sync1) and their 4-stage forms (_sync1s4); the
  // odd cases check K-groups with an odd number of K-tiles. -DTC_SYNC builds these alone.
  run_case({"sync1_8b_gateup_m16", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 4, 4, 2, 3>>{});
  run_case({"sync1s4_8b_gateup_m16", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 4, 4, 2, 4>>{});
  run_case({"sync2_8b_gateup_m16", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 4, 4, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync1_8b_down_m16", 4096, 14336, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 3>>{});
  run_case({"sync2_8b_down_m16", 4096, 14336, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync1_qwen3_gateup_m16", 5120, 2048, 16, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 3>>{});
  run_case({"sync2_qwen3_gateup_m16", 5120, 2048, 16, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync1_8b_gateup_m32", 14336, 4096, 32, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 2, 32, true>>{});
  run_case({"sync2_8b_gateup_m32", 14336, 4096, 32, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 4, 32, true, 1, 2>>{});
  run_case({"sync1_8b_gateup_m32_k2", 14336, 4096, 32, D, 0, 2}, RowsRunner<RowsV<2, 3, 4, 2, 2, 32, true>>{});
  run_case({"sync2_8b_gateup_m32_k2", 14336, 4096, 32, D, 0, 2}, RowsRunner<RowsV<2, 3, 4, 2, 4, 32, true, 1, 2>>{});
  run_case({"sync1_8b_gateup_m32_k5", 14336, 4096, 32, D, 0, 5}, RowsRunner<RowsV<5, 3, 4, 2, 2, 32, true>>{});
  run_case({"sync2_8b_gateup_m32_k5", 14336, 4096, 32, D, 0, 5}, RowsRunner<RowsV<5, 3, 4, 2, 4, 32, true, 1, 2>>{});
  run_case({"sync1_8b_gateup_m16_g3", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 3>>{});
  run_case({"sync2_8b_gateup_m16_g3", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync1_8b_down_m16_k2", 4096, 14336, 16, D, 0, 2}, RowsRunner<RowsV<2, 12, 1, 2, 3>>{});
  run_case({"sync2_8b_down_m16_k2", 4096, 14336, 16, D, 0, 2}, RowsRunner<RowsV<2, 12, 1, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync1_8b_down_m16_k3", 4096, 14336, 16, D, 0, 3}, RowsRunner<RowsV<3, 12, 1, 2, 3>>{});
  run_case({"sync2_8b_down_m16_k3", 4096, 14336, 16, D, 0, 3}, RowsRunner<RowsV<3, 12, 1, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync1_qwen3_down_m16", 2048, 5120, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3>>{});
  run_case({"sync2_qwen3_down_m16", 2048, 5120, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 4, 16, false, 1, 2>>{});
  run_case({"sync1_qwen3_kv_m16", 512, 2048, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3>>{});
  run_case({"sync2_qwen3_kv_m16", 512, 2048, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 4, 16, false, 1, 2>>{});
  run_case({"sync1_8b_kv_m16", 1024, 4096, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3, 16, false, 2>>{});
  run_case({"sync2_8b_kv_m16", 1024, 4096, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 4, 16, false, 2, 2>>{});
  run_case({"sync1_qwen3_gateup_m32", 5120, 2048, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 2, 32, true>>{});
  run_case({"sync2_qwen3_gateup_m32", 5120, 2048, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 4, 32, true, 1, 2>>{});
  run_case({"sync1_qwen3_gateup_m32_k2", 5120, 2048, 32, D, 0, 2}, RowsRunner<RowsV<2, 6, 2, 2, 2, 32, true>>{});
  run_case({"sync2_qwen3_gateup_m32_k2", 5120, 2048, 32, D, 0, 2}, RowsRunner<RowsV<2, 6, 2, 2, 4, 32, true, 1, 2>>{});
  run_case({"sync1_qwen3_gateup_m16_k5", 5120, 2048, 16, D, 0, 5}, RowsRunner<RowsV<5, 6, 2, 2, 3>>{});
  run_case({"sync2_qwen3_gateup_m16_k5", 5120, 2048, 16, D, 0, 5}, RowsRunner<RowsV<5, 6, 2, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync2_odd_m9", 5128, 2080, 9, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 4, 16, false, 1, 2>>{});
  run_case({"sync2_odd_m17_k3", 5128, 2080, 17, D, 0, 3}, RowsRunner<RowsV<3, 6, 2, 2, 4, 32, true, 1, 2>>{});
  run_case({"sync2_odd_m10_k2_split", 200, 2080, 10, D, 0, 2}, RowsRunner<RowsV<2, 4, 1, 1, 4, 16, false, 2, 2>>{});
  // 2 x 7 on CTAs of 13 granules (132 SMs): 6.5 of the 7 warp tiles hold rows.
  run_case({"sync1_2x7_m16", 27448, 2048, 16, D, 0}, RowsRunner<RowsV<4, 2, 7, 2, 3>>{});
#ifndef TC_SYNC
  // The row-owning kernel (kbit_rows.cuh) against the decode kernel's 16-row slots.
  run_case({"rows_70b_gateup_m16", 28672, 8192, 16, D, 0}, RowsRunner<RowsV<4, 2, 7, 2, 3>>{});
  run_case({"rows_70b_gateup_m16_s2", 28672, 8192, 16, D, 0}, RowsRunner<RowsV<4, 2, 7, 2, 2>>{});
  run_case({"rows_70b_gateup_m16_n4", 28672, 8192, 16, D, 0}, RowsRunner<RowsV<4, 3, 4, 4, 2>>{});
  run_case({"rows_70b_down_m16_n4", 8192, 28672, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 4, 2>>{});
  run_case({"rows_8b_gateup_m16_n4", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 6, 2, 4, 2>>{});
  run_case({"rows_70b_gateup_m12", 28672, 8192, 12, D, 0}, RowsRunner<RowsV<4, 2, 7, 2, 3>>{});
  run_case({"rows_70b_down_m16", 8192, 28672, 16, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 3>>{});
  run_case({"rows_8b_gateup_m16", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 4, 4, 2, 3>>{});
  run_case({"rows_8b_down_m16", 4096, 14336, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 3>>{});
  run_case({"rows_8b_gateup_m16_g3", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 3>>{});
  run_case({"rows_8b_down_m16_g15", 4096, 14336, 16, D, 0}, RowsRunner<RowsV<4, 15, 1, 2, 2>>{});
  run_case({"rows_8b_down_m16_g8", 4096, 14336, 16, D, 0}, RowsRunner<RowsV<4, 8, 1, 2, 3>>{});
  run_case({"rows_odd_m9", 5128, 2048, 9, D, 0}, RowsRunner<RowsV<4, 2, 7, 2, 3>>{});
  run_case({"rows_70b_gateup_m16_k2", 28672, 8192, 16, D, 0, 2}, RowsRunner<RowsV<2, 2, 7, 2, 3>>{});
  run_case({"rows_70b_gateup_m16_k5", 28672, 8192, 16, D, 0, 5}, RowsRunner<RowsV<5, 2, 7, 2, 3>>{});
  // K permuted by pairs (kPairPerm prototype: half the plane-word loads, scales before the MMA).
  run_case({"rowsP_8b_gateup_m16", 14336, 4096, 16, D, 0}, RowsRunner<RowsV<4, 4, 4, 2, 3, 16, true>>{});
  run_case({"rowsP_8b_down_m16", 4096, 14336, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 3, 16, true>>{});
  run_case({"rowsP_qwen3_gateup_m16", 5120, 2048, 16, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 3, 16, true>>{});
  run_case({"rowsP_odd_m9", 5128, 2080, 9, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 3, 16, true>>{});
  run_case({"rowsP32_8b_gateup_m32", 14336, 4096, 32, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_down_m32", 4096, 14336, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  // (k = 2, 3, 5 with the permutation, against rows32_*_k2/k3/k5 below; down at k = 2 and 5 with 8
  // K-groups, the shape before v54, and _g12 the rule's since v54)
  run_case({"rowsP32_8b_gateup_m32_k2", 14336, 4096, 32, D, 0, 2}, RowsRunner<RowsV<2, 3, 4, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_gateup_m32_k3", 14336, 4096, 32, D, 0, 3}, RowsRunner<RowsV<3, 3, 4, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_gateup_m32_k5", 14336, 4096, 32, D, 0, 5}, RowsRunner<RowsV<5, 3, 4, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_down_m32_k2", 4096, 14336, 32, D, 0, 2}, RowsRunner<RowsV<2, 8, 1, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_down_m32_k3", 4096, 14336, 32, D, 0, 3}, RowsRunner<RowsV<3, 12, 1, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_down_m32_k5", 4096, 14336, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32, true>>{});
  // (12 K-groups at k = 2 and 5: without the permutation they spill in the extension's build)
  run_case({"rowsP32_8b_down_m32_k2_g12", 4096, 14336, 32, D, 0, 2}, RowsRunner<RowsV<2, 12, 1, 2, 2, 32, true>>{});
  run_case({"rowsP32_8b_down_m32_k5_g12", 4096, 14336, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 2, 2, 32, true>>{});
  run_case({"rowsP32_qwen3_gateup_m32", 5120, 2048, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 2, 32, true>>{});
  run_case({"rowsP32_qwen3_gateup_m32_k2", 5120, 2048, 32, D, 0, 2}, RowsRunner<RowsV<2, 6, 2, 2, 2, 32, true>>{});
  run_case({"rowsP32_odd_m17_k2", 5128, 2080, 17, D, 0, 2}, RowsRunner<RowsV<2, 6, 2, 2, 2, 32, true>>{});
  run_case({"rowsP32_odd_m17_k3", 5128, 2080, 17, D, 0, 3}, RowsRunner<RowsV<3, 6, 2, 2, 2, 32, true>>{});
  // Pair fields (RowsConfig kPairFields, _F; v59) against the plain K by pairs above, at k = 3 and 4:
  // the rule takes them for 3 x 4 and, from 8 K-tiles per K-group, for 12 x 1 (configuration 7). Qwen3
  // q (12 x 1, 2-3 K-tiles per group) and gate/up (6 x 2) are where the table build did not pay.
  run_case({"rowsP32F_8b_gateup_m32", 14336, 4096, 32, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32F_8b_gateup_m32_k3", 14336, 4096, 32, D, 0, 3}, RowsRunner<RowsV<3, 3, 4, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32F_8b_down_m32", 4096, 14336, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32F_8b_down_m32_k3", 4096, 14336, 32, D, 0, 3}, RowsRunner<RowsV<3, 12, 1, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32F_odd_m17_k3", 5128, 2080, 17, D, 0, 3}, RowsRunner<RowsV<3, 6, 2, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32_qwen3_q_m32", 4096, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  run_case({"rowsP32F_qwen3_q_m32", 4096, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32F_qwen3_gateup_m32", 5120, 2048, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 2, 32, true, 1, 1, true>>{});
  run_case({"rowsP32_odd_m17_k5", 5128, 2080, 17, D, 0, 5}, RowsRunner<RowsV<5, 6, 2, 2, 2, 32, true>>{});
  run_case({"rowsP_odd_m9_k2", 5128, 2080, 9, D, 0, 2}, RowsRunner<RowsV<2, 6, 2, 2, 3, 16, true>>{});
  // K-groups against K-tiles at 32 rows (v54: Qwen3 q at k = 5 lost 0.3-0.6 us with 12 groups of
  // one warp, 2-3 K-tiles each; 8B down at k = 5 gained 3 us with them). _gG: G groups; _p: K by
  // pairs (the rule's), _n: without. v55 (H200): 8 groups won on Qwen3 q at k = 4 and 5 (0.5 us)
  // and lost on the long-K layers and at k = 2; not in the rule.
  run_case({"kg_qwen3_q_m32_k5_g12p", 4096, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_q_m32_k5_g8p", 4096, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_q_m32_k5_g6p", 4096, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 6, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_q_m32_k5_g8n", 4096, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32>>{});
  run_case({"kg_qwen3_q_m32_k4_g12p", 4096, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_q_m32_k4_g8p", 4096, 2048, 32, D, 0}, RowsRunner<RowsV<4, 8, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_q_m32_k2_g12p", 4096, 2048, 32, D, 0, 2}, RowsRunner<RowsV<2, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_q_m32_k2_g8p", 4096, 2048, 32, D, 0, 2}, RowsRunner<RowsV<2, 8, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_kv_m32_k5_g12p", 512, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_kv_m32_k5_g8p", 512, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_o_m32_k5_g12p", 2048, 4096, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_o_m32_k5_g8p", 2048, 4096, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_down_m32_k5_g12p", 2048, 5120, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_qwen3_down_m32_k5_g8p", 2048, 5120, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32, true>>{});
  run_case({"kg_8b_down_m32_k5_g12p", 4096, 14336, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 2, 2, 32, true>>{});
  run_case({"kg_8b_down_m32_k5_g8p", 4096, 14336, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32, true>>{});
  // 16-row warp tiles (kNT = 1) where a CTA owns one granule (Qwen3 kv: 32 CTAs; down, o: 128), or
  // two over two warps (q): no zero-filled half tile. _t1 against 32-row tiles (_t2). v55 (H200):
  // _t1 1.6-3.7 us faster where a CTA owns one granule (the rule's configuration 5 since), level on q.
  run_case({"t1_qwen3_kv_m32_k4_t1", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_kv_m32_k4_t2", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  run_case({"t1_qwen3_down_m32_k4_t1", 2048, 5120, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_down_m32_k4_t2", 2048, 5120, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  run_case({"t1_qwen3_o_m32_k4_t1", 2048, 4096, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_o_m32_k4_t2", 2048, 4096, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  run_case({"t1_qwen3_q_m32_k4_t1w2", 4096, 2048, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_q_m32_k4_t2", 4096, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32, true>>{});
  run_case({"t1_qwen3_down_m32_k4_t1g15", 2048, 5120, 32, D, 0}, RowsRunner<RowsV<4, 15, 1, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_down_m32_k2_t1", 2048, 5120, 32, D, 0, 2}, RowsRunner<RowsV<2, 12, 1, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_down_m32_k5_t1", 2048, 5120, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 1, 2, 32, true>>{});
  run_case({"t1_qwen3_down_m16_k4_t1", 2048, 5120, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3>>{});
  run_case({"t1_qwen3_down_m16_k4_t2", 2048, 5120, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 3>>{});
  // K split over clusters of 2 or 4 CTAs (_sS) where the row-owning kernel leaves SMs idle: Qwen3 kv,
  // 32 granules, one per CTA, on 32 of 132 SMs. _gG: G K-groups of one warp per CTA, 16-row warp
  // tiles; _s1: configuration 5. v55 (H200): clusters of two won on the Llama-3 k/v layers (0.9-2.7
  // us; configuration 6 since), not on Qwen3 kv's 32 K-tiles; clusters of four lost everywhere.
  run_case({"split_qwen3_kv_m32_k4_g12_s1", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true>>{});
  run_case({"split_qwen3_kv_m32_k4_g8_s2", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 8, 1, 1, 2, 32, true, 2>>{});
  run_case({"split_qwen3_kv_m32_k4_g12_s2", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true, 2>>{});
  run_case({"split_qwen3_kv_m32_k4_g8_s4", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 8, 1, 1, 2, 32, true, 4>>{});
  run_case({"split_qwen3_kv_m32_k4_g4_s4", 512, 2048, 32, D, 0}, RowsRunner<RowsV<4, 4, 1, 1, 2, 32, true, 4>>{});
  run_case({"split_qwen3_kv_m32_k5_g12_s1", 512, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 12, 1, 1, 2, 32, true>>{});
  run_case({"split_qwen3_kv_m32_k5_g8_s4", 512, 2048, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 1, 2, 32, true, 4>>{});
  run_case({"split_qwen3_kv_m16_k4_g12_s1", 512, 2048, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3>>{});
  run_case({"split_qwen3_kv_m16_k4_g8_s4", 512, 2048, 16, D, 0}, RowsRunner<RowsV<4, 8, 1, 1, 3, 16, false, 4>>{});
  run_case({"split_qwen3_kv_m16_k4_g8_s2", 512, 2048, 16, D, 0}, RowsRunner<RowsV<4, 8, 1, 1, 3, 16, false, 2>>{});
  // Llama-3 k/v projections (N = 1024, 64 granules; K = 4096 and 8192): longer K per granule.
  run_case({"split_8b_kv_m32_k4_g12_s1", 1024, 4096, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true>>{});
  run_case({"split_8b_kv_m32_k4_g12_s2", 1024, 4096, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true, 2>>{});
  run_case({"split_8b_kv_m32_k4_g8_s2", 1024, 4096, 32, D, 0}, RowsRunner<RowsV<4, 8, 1, 1, 2, 32, true, 2>>{});
  run_case({"split_8b_kv_m16_k4_g12_s1", 1024, 4096, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3>>{});
  run_case({"split_8b_kv_m16_k4_g12_s2", 1024, 4096, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3, 16, false, 2>>{});
  run_case({"split_70b_kv_m32_k4_g12_s1", 1024, 8192, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true>>{});
  run_case({"split_70b_kv_m32_k4_g12_s2", 1024, 8192, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 2, 32, true, 2>>{});
  run_case({"split_70b_kv_m16_k4_g12_s1", 1024, 8192, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3>>{});
  run_case({"split_70b_kv_m16_k4_g12_s2", 1024, 8192, 16, D, 0}, RowsRunner<RowsV<4, 12, 1, 1, 3, 16, false, 2>>{});
  run_case({"split_odd_m19_k5_g8_s4", 520, 2080, 19, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 1, 2, 32, true, 4>>{});
  run_case({"split_odd_m10_k2_g4_s2", 200, 2080, 10, D, 0, 2}, RowsRunner<RowsV<2, 4, 1, 1, 3, 16, false, 2>>{});
  // 32 activation rows per stage (M = 17..32; KBIT_KERNEL=rows's configurations, then variants),
  // against the wgmma kernel's rule below.
  run_case({"rows32_8b_gateup_m32", 14336, 4096, 32, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 2, 32>>{});
  run_case({"rows32_8b_gateup_m32_g4", 14336, 4096, 32, D, 0}, RowsRunner<RowsV<4, 4, 4, 2, 2, 32>>{});
  run_case({"rows32_8b_down_m32", 4096, 14336, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32>>{});
  run_case({"rows32_qwen3_gateup_m32", 5120, 2048, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 2, 32>>{});
  run_case({"rows32_qwen3_down_m32", 2048, 5120, 32, D, 0}, RowsRunner<RowsV<4, 12, 1, 2, 2, 32>>{});
  run_case({"rows32_70b_down_m32", 8192, 28672, 32, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 2, 32>>{});
  run_case({"rows32_8b_gateup_m24", 14336, 4096, 24, D, 0}, RowsRunner<RowsV<4, 3, 4, 2, 2, 32>>{});
  run_case({"rows32_odd_m17", 5128, 2080, 17, D, 0}, RowsRunner<RowsV<4, 6, 2, 2, 2, 32>>{});
  run_case({"rows32_8b_down_m32_k2", 4096, 14336, 32, D, 0, 2}, RowsRunner<RowsV<2, 8, 1, 2, 2, 32>>{});
  run_case({"rows32_8b_down_m32_k5", 4096, 14336, 32, D, 0, 5}, RowsRunner<RowsV<5, 8, 1, 2, 2, 32>>{});
  run_case({"rows32_8b_down_m32_k3", 4096, 14336, 32, D, 0, 3}, RowsRunner<RowsV<3, 12, 1, 2, 2, 32>>{});
  run_case({"rows32_8b_gateup_m32_k2", 14336, 4096, 32, D, 0, 2}, RowsRunner<RowsV<2, 3, 4, 2, 2, 32>>{});
  run_case({"rows32_8b_gateup_m32_k3", 14336, 4096, 32, D, 0, 3}, RowsRunner<RowsV<3, 3, 4, 2, 2, 32>>{});
  run_case({"rows32_8b_gateup_m32_k5", 14336, 4096, 32, D, 0, 5}, RowsRunner<RowsV<5, 3, 4, 2, 2, 32>>{});
  run_case({"rows32_qwen3_gateup_m32_k2", 5120, 2048, 32, D, 0, 2}, RowsRunner<RowsV<2, 6, 2, 2, 2, 32>>{});
#ifdef TC_ROWS_ONLY   // the row-owning kernel and the decode configurations beside it alone: a faster build
  (void)T;
  run_case({"70b_gateup_m32", 28672, 8192, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"70b_down_m32", 8192, 28672, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"8b_gateup_m32", 14336, 4096, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"8b_down_m32", 4096, 14336, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"qwen3_gateup_m32", 5120, 2048, 32, W, 1}, Runner<Wg4<32, 1>, W>{});
  run_case({"qwen3_down_m32", 2048, 5120, 32, W, 1}, Runner<Wg4<32, 1>, W>{});
  run_case({"dec16_70b_gateup_m16", 28672, 8192, 16, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_8b_gateup_m16_nt2", 14336, 4096, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"dec16_70b_down_m16_h", 8192, 28672, 16, D, 0}, Runner<kbit::DecodeConfig<4, __half, 12, 4, 2, 16, 1>, D>{});
  run_case({"dec16_8b_down_m16_nt2", 4096, 14336, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
#else
  run_case({"dec_70b_gateup_m1", 28672, 8192, 1, D, 0}, Runner<Dec<4, 4, 1>, D>{});
  run_case({"dec_70b_gateup_m1_v34", 28672, 8192, 1, D, 0}, Runner<DecV<4, 16, 4, 3, 4>, D>{});
  run_case({"dec_70b_gateup_m1_a4", 28672, 8192, 1, D, 0}, Runner<DecV<4, 12, 4, 3, 4>, D>{});
  run_case({"dec_70b_down_m1", 8192, 28672, 1, D, 0}, Runner<Dec<4, 4, 1>, D>{});
  run_case({"dec_70b_down_m1_v34", 8192, 28672, 1, D, 0}, Runner<DecV<4, 16, 4, 3, 4>, D>{});
  run_case({"dec_70b_gateup_m4", 28672, 8192, 4, D, 0}, Runner<Dec<4, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m4_v34", 28672, 8192, 4, D, 0}, Runner<DecV<4, 16, 4, 3, 4>, D>{});
  run_case({"dec_70b_gateup_m8", 28672, 8192, 8, D, 0}, Runner<Dec<4, 4, 8>, D>{});
  run_case({"dec_70b_gateup_m8_v34", 28672, 8192, 8, D, 0}, Runner<DecV<4, 16, 2, 4, 8>, D>{});
  run_case({"dec_70b_down_m8", 8192, 28672, 8, D, 0}, Runner<Dec<4, 4, 8>, D>{});
  run_case({"dec_70b_down_m8_v34", 8192, 28672, 8, D, 0}, Runner<DecV<4, 16, 2, 4, 8>, D>{});
  run_case({"dec_70b_gateup_m8_k2", 28672, 8192, 8, D, 0, 2}, Runner<Dec<2, 4, 8>, D>{});
  run_case({"dec_70b_gateup_m8_k2_v34", 28672, 8192, 8, D, 0, 2}, Runner<DecV<2, 16, 2, 4, 8>, D>{});
  run_case({"dec_70b_gateup_m8_k3", 28672, 8192, 8, D, 0, 3}, Runner<Dec<3, 4, 8>, D>{});
  run_case({"dec_70b_gateup_m8_k3_v34", 28672, 8192, 8, D, 0, 3}, Runner<DecV<3, 16, 2, 4, 8>, D>{});
  // Ring depth against warps (bytes in flight per SM).
  run_case({"dec_70b_gateup_m1_s2", 28672, 8192, 1, D, 0}, Runner<DecV<4, 12, 4, 2, 1>, D>{});
  run_case({"dec_70b_gateup_m1_w16s2", 28672, 8192, 1, D, 0}, Runner<DecV<4, 16, 4, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m4_w16s2", 28672, 8192, 4, D, 0}, Runner<DecV<4, 16, 4, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m8_w16s2", 28672, 8192, 8, D, 0}, Runner<DecV<4, 16, 4, 2, 8>, D>{});
  run_case({"dec_70b_gateup_m1_k2_s2", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 16, 4, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m1_k3_s2", 28672, 8192, 1, D, 0, 3}, Runner<DecV<3, 16, 4, 2, 4>, D>{});
  run_case({"dec_8b_gateup_m1_s3nt2", 14336, 4096, 1, D, 0}, Runner<DecV<4, 16, 2, 3, 1>, D>{});
  run_case({"dec_8b_gateup_m4_s3nt2", 14336, 4096, 4, D, 0}, Runner<DecV<4, 16, 2, 3, 4>, D>{});
  run_case({"dec_70b_gateup_m1_k2", 28672, 8192, 1, D, 0, 2}, Runner<Dec<2, 4, 1>, D>{});
  run_case({"dec_70b_gateup_m1_k3", 28672, 8192, 1, D, 0, 3}, Runner<Dec<3, 4, 4>, D>{});
  // k = 2 and 3 after v40's shorter lookups: one activation row (the rule's
  // at k = 2 since v40; _a4 was before), deeper rings.
  run_case({"dec_70b_gateup_m1_k2_a4", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 16, 4, 3, 4>, D>{});
  run_case({"dec_70b_gateup_m1_k2_a1s4", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 16, 4, 4, 1>, D>{});
  run_case({"dec_70b_gateup_m1_k2_s4", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 16, 4, 4, 4>, D>{});
  // 128-row warp tiles (kNT = 8; 12 warps for their 168 registers: 16 spill)
  // at M = 1, one activation row (v43).
  run_case({"dec_70b_gateup_m1_k2_n8s2", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 1>, D>{});
  run_case({"dec_70b_gateup_m1_k2_n8s3", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 12, 8, 3, 1>, D>{});
  run_case({"dec_70b_gateup_m1_k2_n8s4", 28672, 8192, 1, D, 0, 2}, Runner<DecV<2, 12, 8, 4, 1>, D>{});
  run_case({"dec_70b_down_m1_k2", 8192, 28672, 1, D, 0, 2}, Runner<Dec<2, 4, 1>, D>{});
  run_case({"dec_70b_down_m1_k2_n8s3", 8192, 28672, 1, D, 0, 2}, Runner<DecV<2, 12, 8, 3, 1>, D>{});
  run_case({"dec_8b_gateup_m1_k2_n8s3", 14336, 4096, 1, D, 0, 2}, Runner<DecV<2, 12, 8, 3, 1>, D>{});
  run_case({"dec_70b_gateup_m1_n8s2", 28672, 8192, 1, D, 0}, Runner<DecV<4, 12, 8, 2, 1>, D>{});
  run_case({"dec_70b_down_m1_n8s2", 8192, 28672, 1, D, 0}, Runner<DecV<4, 12, 8, 2, 1>, D>{});
  run_case({"dec_70b_gateup_m4_k2_n8", 28672, 8192, 4, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m4_n8", 28672, 8192, 4, D, 0}, Runner<DecV<4, 12, 8, 2, 4>, D>{});
  run_case({"dec_70b_down_m4", 8192, 28672, 4, D, 0}, Runner<Dec<4, 4, 4>, D>{});
  run_case({"dec_70b_down_m4_n8", 8192, 28672, 4, D, 0}, Runner<DecV<4, 12, 8, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m2", 28672, 8192, 2, D, 0}, Runner<Dec<4, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m2_n8", 28672, 8192, 2, D, 0}, Runner<DecV<4, 12, 8, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m2_k2", 28672, 8192, 2, D, 0, 2}, Runner<Dec<2, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m2_k2_n8", 28672, 8192, 2, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m6_k2", 28672, 8192, 6, D, 0, 2}, Runner<Dec<2, 4, 8>, D>{});
  run_case({"dec_70b_gateup_m6_k2_n8", 28672, 8192, 6, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 8>, D>{});
  run_case({"dec_n133_m3_k2_n8", 16904, 8224, 3, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 4>, D>{});
  run_case({"dec_n133_m6_k2_n8", 16904, 8224, 6, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 8>, D>{});
  run_case({"dec_70b_gateup_m8_k2_n8", 28672, 8192, 8, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 8>, D>{});
  run_case({"dec_70b_down_m4_k2", 8192, 28672, 4, D, 0, 2}, Runner<Dec<2, 4, 4>, D>{});
  run_case({"dec_70b_down_m4_k2_n8", 8192, 28672, 4, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 4>, D>{});
  run_case({"dec_70b_down_m8_k2", 8192, 28672, 8, D, 0, 2}, Runner<Dec<2, 4, 8>, D>{});
  run_case({"dec_70b_down_m8_k2_n8", 8192, 28672, 8, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 8>, D>{});
  run_case({"dec_few_m4_k2_n8", 5128, 2048, 4, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 4>, D>{});
  run_case({"dec_few_m8_k2_n8", 5128, 2048, 8, D, 0, 2}, Runner<DecV<2, 12, 8, 2, 8>, D>{});
  run_case({"dec_70b_gateup_m4_k2", 28672, 8192, 4, D, 0, 2}, Runner<Dec<2, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m4_k2_s4", 28672, 8192, 4, D, 0, 2}, Runner<DecV<2, 16, 4, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m1_k3_s4", 28672, 8192, 1, D, 0, 3}, Runner<DecV<3, 16, 4, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m4_k3", 28672, 8192, 4, D, 0, 3}, Runner<Dec<3, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m4_k3_s4", 28672, 8192, 4, D, 0, 3}, Runner<DecV<3, 16, 4, 4, 4>, D>{});
  run_case({"dec_70b_gateup_m1_k5", 28672, 8192, 1, D, 0, 5}, Runner<Dec<5, 4, 1>, D>{});
  run_case({"dec_70b_gateup_m1_k5_v34", 28672, 8192, 1, D, 0, 5}, Runner<DecV<5, 16, 2, 4, 1>, D>{});
  run_case({"dec_8b_gateup_m1", 14336, 4096, 1, D, 0}, Runner<Dec<4, 4, 1>, D>{});
  run_case({"dec_8b_gateup_m1_v34", 14336, 4096, 1, D, 0}, Runner<DecV<4, 16, 2, 4, 1>, D>{});
  run_case({"dec_8b_down_m1", 4096, 14336, 1, D, 0}, Runner<Dec<4, 4, 1>, D>{});
  run_case({"dec_8b_down_m1_v34", 4096, 14336, 1, D, 0}, Runner<DecV<4, 16, 2, 4, 1>, D>{});
  run_case({"dec_8b_gateup_m1_k2", 14336, 4096, 1, D, 0, 2}, Runner<Dec<2, 4, 1>, D>{});
  run_case({"dec_8b_gateup_m1_k3", 14336, 4096, 1, D, 0, 3}, Runner<Dec<3, 4, 4>, D>{});
  run_case({"dec_8b_gateup_m1_k5", 14336, 4096, 1, D, 0, 5}, Runner<Dec<5, 4, 1>, D>{});
  run_case({"dec_8b_gateup_m8_k2", 14336, 4096, 8, D, 0, 2}, Runner<Dec<2, 2, 8>, D>{});
  run_case({"dec_8b_gateup_m8_k3", 14336, 4096, 8, D, 0, 3}, Runner<Dec<3, 2, 8>, D>{});
  run_case({"dec_70b_down_m1_k3", 8192, 28672, 1, D, 0, 3}, Runner<Dec<3, 4, 4>, D>{});
  run_case({"dec_8b_gateup_m4", 14336, 4096, 4, D, 0}, Runner<Dec<4, 2, 4>, D>{});
  // Small layers on the pair grid (448 tiles; clusters of two CTAs, finish_pair): for the sanitizers.
  // K % 64 == 32 leaves a half K-tile.
  run_case({"dec_pairs_small_m4", 14336, 672, 4, D, 0}, Runner<Dec<4, 2, 4>, D>{});
  run_case({"dec_pairs_small_m1", 28672, 1184, 1, D, 0}, Runner<Dec<4, 4, 1>, D>{});
  run_case({"dec_8b_down_m4", 4096, 14336, 4, D, 0}, Runner<Dec<4, 2, 4>, D>{});
  run_case({"dec_8b_gateup_m8", 14336, 4096, 8, D, 0}, Runner<Dec<4, 2, 8>, D>{});
  run_case({"dec_8b_down_m8", 4096, 14336, 8, D, 0}, Runner<Dec<4, 2, 8>, D>{});
  // 32-row tiles on Llama-3-70B gate/up (896 tiles: whole tiles on 128 CTAs, KBIT_DECODE_ALIGN)
  run_case({"dec_70b_gateup_m1_nt2a1", 28672, 8192, 1, D, 0}, Runner<DecV<4, 16, 2, 4, 1>, D>{});
  run_case({"dec_70b_gateup_m4_nt2", 28672, 8192, 4, D, 0}, Runner<Dec<4, 2, 4>, D>{});
  run_case({"dec_70b_gateup_m8_nt2", 28672, 8192, 8, D, 0}, Runner<Dec<4, 2, 8>, D>{});
  run_case({"dec16_70b_gateup_m16_nt2", 28672, 8192, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"70b_gateup_m16", 28672, 8192, 16, T, 0}, Runner<Tiled4<2>, T>{});
  // Few units per warp: 5128 x 2048, 32-row tiles of 32 K-tiles, ~39 units
  // per CTA: tiles split between ~13 warps and 2-3 CTAs.
  run_case({"dec_few_m8_k2", 5128, 2048, 8, D, 0, 2}, Runner<Dec<2, 2, 8>, D>{});
  run_case({"dec_few_m8", 5128, 2048, 8, D, 0}, Runner<Dec<4, 2, 8>, D>{});
  // 64-row tiles of 16 warps with helper sums (kSumByHelpers) on a small layer
  // (racecheck-sized; the 4-stage k = 3 variant gave one wrong call in v40).
  run_case({"dec_few_m1_k3", 5128, 2048, 1, D, 0, 3}, Runner<DecV<3, 16, 4, 3, 4>, D>{});
  run_case({"dec_few_m1_k3_s4", 5128, 2048, 1, D, 0, 3}, Runner<DecV<3, 16, 4, 4, 4>, D>{});
  run_case({"dec_few_m1_k2_a1", 5128, 2048, 1, D, 0, 2}, Runner<DecV<2, 16, 4, 3, 1>, D>{});
  run_case({"dec_few_m1_k2_n8", 5128, 2048, 1, D, 0, 2}, Runner<Dec<2, 8, 1>, D>{});
  run_case({"dec_few_m1_n8", 5128, 2048, 1, D, 0}, Runner<DecV<4, 12, 8, 2, 1>, D>{});
  // Lane-permuted tables (kLanePerm, v41): k = 3 with 8 rows on 32-row tiles, k = 2 and 4 with 16-row slots.
  run_case({"dec_few_m8_k3", 5128, 2048, 8, D, 0, 3}, Runner<DecV<3, 16, 2, 4, 8>, D>{});
  run_case({"dec16_few_m16_k2", 5128, 2048, 16, D, 0, 2}, Runner<DecV<2, 12, 4, 2, 16>, D>{});
  run_case({"dec16_few_m16_nt4", 5128, 2048, 16, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_few_m16", 5128, 2048, 16, D, 0}, Runner<Dec<4, 2, 16>, D>{});   // (KBIT_KERNEL=decode's)
  // Decode kernel with 16-row slots (two n8 MMAs per dequantized fragment,
  // the 16 activation rows in the ring stages) against the tiled kernel.
  run_case({"dec16_70b_gateup_m16", 28672, 8192, 16, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_70b_gateup_m12", 28672, 8192, 12, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_70b_down_m16", 8192, 28672, 16, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_70b_down_m16_h", 8192, 28672, 16, D, 0},
           Runner<kbit::DecodeConfig<4, __half, 12, 4, 2, 16, 1>, D>{});   // helpers (decode_helpers)
  run_case({"70b_down_m16", 8192, 28672, 16, T, 0}, Runner<Tiled4<2>, T>{});
  run_case({"dec16_8b_gateup_m16", 14336, 4096, 16, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_8b_gateup_m16_nt2", 14336, 4096, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"8b_gateup_m16", 14336, 4096, 16, T, 0}, Runner<Tiled4<2>, T>{});
  run_case({"8b_gateup_m16_wg", 14336, 4096, 16, W, 1}, Runner<Wg4<16, 1>, W>{});
  run_case({"dec16_70b_gateup_m16_k2", 28672, 8192, 16, D, 0, 2}, Runner<DecV<2, 12, 4, 2, 16>, D>{});
  run_case({"dec16_70b_gateup_m16_k3", 28672, 8192, 16, D, 0, 3}, Runner<DecV<3, 12, 4, 2, 16>, D>{});
  run_case({"dec16_70b_gateup_m16_k5", 28672, 8192, 16, D, 0, 5}, Runner<DecV<5, 12, 2, 3, 16>, D>{});
  run_case({"70b_gateup_m16_k2", 28672, 8192, 16, T, 0, 2}, Runner<TiledK<2, 2>, T>{});
  run_case({"70b_gateup_m16_k3", 28672, 8192, 16, T, 0, 3}, Runner<TiledK<3, 2>, T>{});
  run_case({"70b_gateup_m16_k5", 28672, 8192, 16, T, 0, 5}, Runner<TiledK<5, 2>, T>{});
  run_case({"dec16_70b_gateup_m16_w16nt2", 28672, 8192, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
#if (KBIT_DECODE_PROBE & 2080) == 2080   // (part buffers of one column: 3 stages fit)
  run_case({"dec16_70b_gateup_m16_s3", 28672, 8192, 16, D, 0}, Runner<DecV<4, 12, 4, 3, 16>, D>{});
  run_case({"dec16_70b_down_m16_s3", 8192, 28672, 16, D, 0}, Runner<DecV<4, 12, 4, 3, 16>, D>{});
#endif
  run_case({"dec16_70b_gateup_m16_w8s3", 28672, 8192, 16, D, 0}, Runner<DecV<4, 8, 4, 3, 16>, D>{});
  run_case({"dec16_70b_gateup_m16_w8s2", 28672, 8192, 16, D, 0}, Runner<DecV<4, 8, 4, 2, 16>, D>{});
  run_case({"dec16_70b_down_m16_w8s3", 8192, 28672, 16, D, 0}, Runner<DecV<4, 8, 4, 3, 16>, D>{});
  run_case({"dec16_70b_gateup_m16_nt2s3", 28672, 8192, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  // 96-row warp tiles of 8 warps (kNT = 6; 160-222 registers): a third fewer
  // activation bytes copied per weight than 64-row tiles (v43).
  run_case({"dec16_70b_gateup_m16_w8n6", 28672, 8192, 16, D, 0}, Runner<DecV<4, 8, 6, 2, 16>, D>{});
  run_case({"dec16_70b_down_m16_w8n6", 8192, 28672, 16, D, 0}, Runner<DecV<4, 8, 6, 2, 16>, D>{});
  run_case({"dec16_70b_gateup_m16_k2_w8n6", 28672, 8192, 16, D, 0, 2}, Runner<DecV<2, 8, 6, 2, 16>, D>{});
  run_case({"dec16_70b_gateup_m16_k3_w8n6", 28672, 8192, 16, D, 0, 3}, Runner<DecV<3, 8, 6, 2, 16>, D>{});
  run_case({"dec16_8b_gateup_m16_w8n6", 14336, 4096, 16, D, 0}, Runner<DecV<4, 8, 6, 2, 16>, D>{});
  run_case({"dec16_8b_down_m16_w8n6", 4096, 14336, 16, D, 0}, Runner<DecV<4, 8, 6, 2, 16>, D>{});
  run_case({"dec16_few_m16_w8n6", 5128, 2048, 16, D, 0}, Runner<DecV<4, 8, 6, 2, 16>, D>{});
  run_case({"dec_70b_gateup_m8_w8n6", 28672, 8192, 8, D, 0}, Runner<DecV<4, 8, 6, 3, 8>, D>{});
  run_case({"dec_70b_down_m8_w8n6", 8192, 28672, 8, D, 0}, Runner<DecV<4, 8, 6, 3, 8>, D>{});
  run_case({"dec_few_m8_w8n6", 5128, 2048, 8, D, 0}, Runner<DecV<4, 8, 6, 3, 8>, D>{});
  run_case({"dec16_8b_down_m16", 4096, 14336, 16, D, 0}, Runner<DecV<4, 12, 4, 2, 16>, D>{});
  run_case({"dec16_8b_down_m16_nt2", 4096, 14336, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"8b_down_m16", 4096, 14336, 16, T, 0}, Runner<Tiled4<2>, T>{});
  run_case({"dec16_qwen3_gateup_m16", 5120, 2048, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"dec16_qwen3_down_m16", 2048, 5120, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"dec16_qwen3_q_m16", 4096, 2048, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  run_case({"dec16_qwen3_o_m16", 2048, 4096, 16, D, 0}, Runner<DecV<4, 16, 2, 2, 16>, D>{});
  // 32-row tiles with 16-row slots: 12 warps with 2 or 3 stages against the
  // rule's 16 warps with 2 (3 do not fit at 16 warps).
  run_case({"dec16_8b_gateup_m16_w12s3", 14336, 4096, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  run_case({"dec16_8b_gateup_m16_w12s2", 14336, 4096, 16, D, 0}, Runner<DecV<4, 12, 2, 2, 16>, D>{});
  run_case({"dec16_8b_down_m16_w12s3", 4096, 14336, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  run_case({"dec16_8b_down_m16_w12s2", 4096, 14336, 16, D, 0}, Runner<DecV<4, 12, 2, 2, 16>, D>{});
  run_case({"dec16_qwen3_gateup_m16_w12s3", 5120, 2048, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  run_case({"dec16_qwen3_down_m16_w12s3", 2048, 5120, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  run_case({"dec16_qwen3_q_m16_w12s3", 4096, 2048, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  run_case({"dec16_qwen3_o_m16_w12s3", 2048, 4096, 16, D, 0}, Runner<DecV<4, 12, 2, 3, 16>, D>{});
  wgmma_rule_cases();
  // Tiles per warp (wgmma_nt_for) against their neighbours, on down projections
  // (70B N = 8192: 384-row tiles leave the last of 22 a third full; 256 and 128
  // rows divide N) and on layers with N < 8192 at 33..64 rows (v50); three
  // tiles at 17..32 rows on Llama-3-8B were faster here (v50) and slower in the
  // harness (v51), which the rule follows. (The rule's side of the 8B down k = 3, 5 pairs:
  // 8b_down_m64_k3, _k5 in wgmma_rule_cases.)
  run_case({"70b_down_m64_nt2", 8192, 28672, 64, W, 2}, Runner<Wg4<64, 2>, W>{});
  run_case({"70b_down_m64_nt1", 8192, 28672, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
  run_case({"70b_down_m32_nt2", 8192, 28672, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"70b_gateup_m64_nt2", 28672, 8192, 64, W, 2}, Runner<Wg4<64, 2>, W>{});
  run_case({"8b_down_m64_nt1", 4096, 14336, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
  run_case({"8b_gateup_m64_nt1", 14336, 4096, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
  run_case({"8b_gateup_m32_nt1", 14336, 4096, 32, W, 1}, Runner<Wg4<32, 1>, W>{});
  run_case({"8b_down_m64_k2_nt1", 4096, 14336, 64, W, 1, 2}, Runner<WgK<2, 64, 1>, W>{});
  run_case({"8b_down_m64_k2_nt2", 4096, 14336, 64, W, 2, 2}, Runner<WgK<2, 64, 2>, W>{});
  run_case({"8b_down_m64_k3_nt1", 4096, 14336, 64, W, 1, 3}, Runner<WgK<3, 64, 1>, W>{});
  run_case({"8b_down_m64_k5_nt1", 4096, 14336, 64, W, 1, 5}, Runner<WgK<5, 64, 1>, W>{});
  run_case({"8b_down_m40_nt1", 4096, 14336, 40, W, 1}, Runner<Wg4<64, 1>, W>{});
  run_case({"8b_down_m40_nt2", 4096, 14336, 40, W, 2}, Runner<Wg4<64, 2>, W>{});
  run_case({"n4096k8192_m64_nt1", 4096, 8192, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
  run_case({"n4096k8192_m64_nt2", 4096, 8192, 64, W, 2}, Runner<Wg4<64, 2>, W>{});
  run_case({"n2048k16384_m64_nt1", 2048, 16384, 64, W, 1}, Runner<Wg4<64, 1>, W>{});
  run_case({"n2048k16384_m64_nt2", 2048, 16384, 64, W, 2}, Runner<Wg4<64, 2>, W>{});
  run_case({"8b_gateup_m64_nt3", 14336, 4096, 64, W, 3}, Runner<Wg4<64, 3>, W>{});
  run_case({"8b_gateup_m32_nt3", 14336, 4096, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"8b_down_m64_nt3", 4096, 14336, 64, W, 3}, Runner<Wg4<64, 3>, W>{});
  run_case({"8b_down_m32", 4096, 14336, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"8b_down_m32_nt3", 4096, 14336, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"8b_gateup_m32_k2", 14336, 4096, 32, W, 2, 2}, Runner<WgK<2, 32, 2>, W>{});
  run_case({"8b_gateup_m32_k2_nt3", 14336, 4096, 32, W, 3, 2}, Runner<WgK<2, 32, 3>, W>{});
  run_case({"8b_gateup_m32_k5", 14336, 4096, 32, W, 2, 5}, Runner<WgK<5, 32, 2>, W>{});
  run_case({"8b_gateup_m32_k5_nt3", 14336, 4096, 32, W, 3, 5}, Runner<WgK<5, 32, 3>, W>{});
  run_case({"n4096k8192_m32", 4096, 8192, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"n4096k8192_m32_nt3", 4096, 8192, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"n8192k4096_m32", 8192, 4096, 32, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"n8192k4096_m32_nt3", 8192, 4096, 32, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"8b_gateup_m24", 14336, 4096, 24, W, 2}, Runner<Wg4<32, 2>, W>{});
  run_case({"8b_gateup_m24_nt3", 14336, 4096, 24, W, 3}, Runner<Wg4<32, 3>, W>{});
  run_case({"qwen3_gateup_m16", 5120, 2048, 16, W, 1}, Runner<Wg4<16, 1>, W>{});
  run_case({"qwen3_down_m16", 2048, 5120, 16, W, 1}, Runner<Wg4<16, 1>, W>{});
  // k = 5 (the pair table's replicas: wgmma_k5_copies)
  run_case({"70b_gateup_m32_k5", 28672, 8192, 32, W, 3, 5}, Runner<WgK<5, 32, 3>, W>{});
  run_case({"70b_down_m64_k5", 8192, 28672, 64, W, 3, 5}, Runner<WgK<5, 64, 3>, W>{});
  run_case({"70b_gateup_m128_k5", 28672, 8192, 128, W, 1, 5}, Runner<WgK<5, 128, 1>, W>{});
  run_case({"8b_gateup_m64_k5", 14336, 4096, 64, W, 2, 5}, Runner<WgK<5, 64, 2>, W>{});
  run_case({"qwen3_gateup_m64_k5", 5120, 2048, 64, W, 1, 5}, Runner<WgK<5, 64, 1>, W>{});
  run_case({"qwen3_down_m64_k5", 2048, 5120, 64, W, 1, 5}, Runner<WgK<5, 64, 1>, W>{});
  run_case({"qwen3_gateup_m32_k5", 5120, 2048, 32, W, 1, 5}, Runner<WgK<5, 32, 1>, W>{});
  // k = 5 at 16 rows: the wgmma kernel (32 replicas) against the decode kernel's
  // 16-row slots (dec16_*_k5, the rule)
  run_case({"70b_gateup_m16_k5_wg", 28672, 8192, 16, W, 2, 5}, Runner<WgK<5, 16, 2>, W>{});
  run_case({"8b_down_m16_k5_wg", 4096, 14336, 16, W, 2, 5}, Runner<WgK<5, 16, 2>, W>{});
  run_case({"dec16_8b_down_m16_k5", 4096, 14336, 16, D, 0, 5}, Runner<DecV<5, 12, 2, 3, 16>, D>{});
  // (small layers for the sanitizers: the 128 KB table, tiles split between CTAs)
  run_case({"small_m64_k5", 1152, 2048, 64, W, 3, 5}, Runner<WgK<5, 64, 3>, W>{});
  run_case({"small_m128_k5", 768, 2048, 128, W, 1, 5}, Runner<WgK<5, 128, 1>, W>{});
#endif  // TC_ROWS_ONLY
#endif  // TC_SYNC
#endif  // TC_WGMMA_ONLY
  return 0;
}
