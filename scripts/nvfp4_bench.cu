// nvfp4_bench.cu — standalone timing of the portable nvfp4_gemv kernel on the
// GPU MODE benchmark shapes, for tuning without the 60-70 s extension build.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Iptx -I. -o /tmp/nvfp4_bench scripts/nvfp4_bench.cu \
//        [-DNVFP4_OLD=build/old/ptx/nvfp4_gemv.cuh] && /tmp/nvfp4_bench
//
// For each shape: the kernel with and without staged scales, at several group
// sizes and register caps, each
// checked against a float64 host reference on a sample of rows, timed with CUDA
// events after an L2 flush (median of 30), beside eval/run.py's plain read
// of the same number of bytes (what the memory system gives a kernel that does
// nothing else). With NVFP4_OLD, an older nvfp4_gemv.cuh (the v2 kernel of
// commit d7815f4: template <kG, kV, kMinCtas>, nvfp4_smem_bytes(k)) is built in
// its own namespace and timed with its own launch rule.
// The extension's numbers come from eval/run.py; this tool only ranks variants.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sm90.cuh"
#include "bench_util.cuh"   // CK, L2Flush, PlainRead, median_event_us
#include "nvfp4_gemv.cuh"
#define KBIT_STR2(x) #x
#define KBIT_STR(x) KBIT_STR2(x)
#ifdef NVFP4_OLD
namespace kbit {
namespace old {
#include KBIT_STR(NVFP4_OLD)
}  // namespace old
}  // namespace kbit
#endif

// a's bytes read in the kernel's order, without arithmetic: warp w of a CTA
// streams rows row_begin + w, + 8, ... (lane: 16-byte chunks lane, lane + 32,
// ..., four loads in flight). With kCtaRow, a CTA instead reads whole rows
// blockIdx.x, + gridDim.x, ... (thread t: chunks t, t + 256, ...), so all
// CTAs sweep one contiguous window of the matrix together.
template <bool kCtaRow, bool kSf = false>
__global__ void __launch_bounds__(256) rows_read_kernel(const uint8_t* a, int m, int kb, unsigned* sink,
                                                        const uint8_t* sfa = nullptr) {
  const uint4* base = reinterpret_cast<const uint4*>(a + size_t(blockIdx.y) * m * kb);
  const int n = kb / 16, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int step = kCtaRow ? 256 : 32, first = kCtaRow ? int(threadIdx.x) : lane;
  int row = kCtaRow ? int(blockIdx.x) : int((long long)blockIdx.x * m / gridDim.x) + warp;
  const int row_end = kCtaRow ? m : int((long long)(blockIdx.x + 1) * m / gridDim.x);
  const int row_step = kCtaRow ? int(gridDim.x) : 8;
  uint32_t x = 0;
  for (; row < row_end; row += row_step) {
    const uint4* r = base + size_t(row) * n;
    for (int c = first; c < n; c += 4 * step) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        v[u] = c + u * step < n ? kbit::ptx::ld_global_nc_na_v4(r + c + u * step) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < 4; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
      if constexpr (kSf) {   // and each chunk's two sfa bytes, as the kernel loads them (2 bytes per lane)
        const uint16_t* srow = reinterpret_cast<const uint16_t*>(sfa + (size_t(blockIdx.y) * m + row) * (kb / 8));
#pragma unroll
        for (int u = 0; u < 4; ++u) x ^= c + u * step < n ? srow[c + u * step] : 0u;
      }
    }
  }
  if (x == 0x9e3779b9u) *sink = x;
}

struct Bench {
  L2Flush flush{1024};
  unsigned* sink = flush.sink;
  PlainRead plain_read;
  explicit Bench(int sms) : plain_read(sms) {}
  template <class F>
  float median_us(F launch, int reps = 30) {
    return median_event_us([&] { flush(); }, launch, reps);
  }
};

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd() {   // xorshift64*: every output bit is usable
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return uint32_t((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

static double fp4_value(int code) {
  static const double v[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return (code & 8) ? -v[code & 7] : v[code & 7];
}
static double e4m3_value(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double v = e == 0 ? m / 512.0 : std::ldexp(1.0 + m / 8.0, e - 7);
  return (code & 0x80) ? -v : v;
}

struct Shape {
  int m, k, l;
};

int main() {
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs\n", prop.name, sms);
  Bench bench(sms);
  const Shape shapes[] = {{7168, 16384, 1}, {4096, 7168, 8}, {7168, 2048, 4}};
  for (const Shape& s : shapes) {
    const int m = s.m, k = s.k, l = s.l, kb = k / 2, ks = k / 16;
    // GPU MODE layouts: a [l][m][k/2], b [l][128][k/2], sfa [l][m][k/16],
    // sfb [l][128][k/16], c [l][m] (plain scales; codes of every fp4 value and
    // e4m3 scales from 1/8 to 1.875).
    std::vector<uint8_t> a(size_t(l) * m * kb), b(size_t(l) * 128 * kb), sfa(size_t(l) * m * ks),
        sfb(size_t(l) * 128 * ks);
    for (auto& x : a) x = uint8_t(rnd());
    for (auto& x : b) x = uint8_t(rnd());
    for (auto& x : sfa) x = uint8_t(0x20 + rnd() % 32);   // 2^-3 .. 1.875: no fp16 overflow
    for (auto& x : sfb) x = uint8_t(0x20 + rnd() % 32);
    uint8_t *da, *db, *dsa, *dsb;
    __half* dc;
    CK(cudaMalloc(&da, a.size()));
    CK(cudaMalloc(&db, b.size()));
    CK(cudaMalloc(&dsa, sfa.size()));
    CK(cudaMalloc(&dsb, sfb.size()));
    CK(cudaMalloc(&dc, size_t(l) * m * 2));
    CK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsa, sfa.data(), sfa.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsb, sfb.data(), sfb.size(), cudaMemcpyHostToDevice));

    kbit::Nvfp4Params p{};
    p.a = da; p.b = db; p.sfa = dsa; p.sfb = dsb; p.c = dc;
    p.a_si = kb; p.a_sl = (long long)m * kb; p.b_sl = 128ll * kb;
    p.sfa_si = ks; p.sfa_sl = (long long)m * ks; p.sfb_sl = 128ll * ks;
    p.c_si = 1; p.c_sl = m;
    p.m = m; p.k = k; p.l = l;

    // Host reference on 64 rows per batch (first, last and spread).
    std::vector<int> rows;
    for (int i = 0; i < 64; ++i) rows.push_back(int((long long)i * (m - 1) / 63));
    std::vector<double> ref(size_t(l) * rows.size()), mag(ref.size());
    for (int ll = 0; ll < l; ++ll)
      for (size_t r = 0; r < rows.size(); ++r) {
        double sum = 0, abs_sum = 0;
        for (int j = 0; j < k; ++j) {
          const int ca = (a[(size_t(ll) * m + rows[r]) * kb + j / 2] >> (4 * (j & 1))) & 15;
          const int cb = (b[size_t(ll) * 128 * kb + j / 2] >> (4 * (j & 1))) & 15;
          const double t = fp4_value(ca) * e4m3_value(sfa[(size_t(ll) * m + rows[r]) * ks + j / 16]) *
                           fp4_value(cb) * e4m3_value(sfb[size_t(ll) * 128 * ks + j / 16]);
          sum += t;
          abs_sum += std::fabs(t);
        }
        ref[ll * rows.size() + r] = sum;
        mag[ll * rows.size() + r] = abs_sum;
      }
    auto check = [&]() {
      std::vector<__half> c(size_t(l) * m);
      CK(cudaMemcpy(c.data(), dc, c.size() * 2, cudaMemcpyDeviceToHost));
      double worst = 0;
      int shown = 0;
      for (int ll = 0; ll < l; ++ll)
        for (size_t r = 0; r < rows.size(); ++r) {
          const double got = __half2float(c[size_t(ll) * m + rows[r]]);
          const double want = ref[ll * rows.size() + r];
          // fp16 output rounding plus float32 accumulation of |terms|
          double err = std::fabs(got - want) / (std::fabs(want) * 1e-3 + mag[ll * rows.size() + r] * 1e-5 + 1e-6);
          if (!(err <= 1e30)) err = 1e30;   // NaN or inf
          if (err > 1 && shown++ < 3) std::printf("    batch %d row %d: got %g, want %g\n", ll, rows[r], got, want);
          worst = std::max(worst, err);
        }
      return worst;   // <= 1: within bounds
    };

    const double bytes = double(a.size()) + sfa.size() + double(kb + ks) * l + 2.0 * m * l;
    uint4* rd;
    const size_t rd_n = size_t(bytes) / 16;
    CK(cudaMalloc(&rd, rd_n * 16));
    CK(cudaMemset(rd, 0, rd_n * 16));
    const float t_read = bench.median_us([&] { bench.plain_read(rd, rd_n * 16); });
    std::printf("\nm=%d k=%d l=%d: %.1f MB; plain read of the same bytes %.2f us (%.0f GB/s)\n", m, k, l,
                bytes / 1e6, t_read, bytes / t_read / 1e3);
    {  // a's bytes alone: a plain read, the kernel's row order, CTA-per-row order
      const double ab = double(a.size());
      const float t_plain = bench.median_us([&] { bench.plain_read(rd, a.size() / 16 * 16); });
      const int gx = kbit::nvfp4_ctas_per_batch(m, l, sms * 4);
      const float t_rows = bench.median_us([&] { rows_read_kernel<false><<<dim3(gx, l), 256>>>(da, m, kb, bench.sink); });
      const float t_cta = bench.median_us([&] { rows_read_kernel<true><<<dim3(gx, l), 256>>>(da, m, kb, bench.sink); });
      const float t_sf = bench.median_us([&] { rows_read_kernel<false, true><<<dim3(gx, l), 256>>>(da, m, kb, bench.sink, dsa); });
      CK(cudaGetLastError());
      std::printf("  a only (%.1f MB): plain read %.2f us, warp-row order %.2f us, CTA-row order %.2f us; "
                  "warp-row order with sfa (2 bytes per lane and chunk) %.2f us\n", ab / 1e6, t_plain, t_rows, t_cta, t_sf);
    }
    std::printf("  %-30s %8s %8s %7s %7s\n", "variant", "us", "GB/s", "%read", "check");

    // staged: the kernel stages each CTA's sfa rows in shared memory.
    auto run = [&](const char* name, auto kernel, int group, bool staged, int want_per_sm) {
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kbit::kNvfp4Threads,
                                                       kbit::nvfp4_smem_bytes(k, 0)));
      if (want_per_sm > per_sm) return;
      const int use = want_per_sm ? want_per_sm : per_sm;
      const int gx = kbit::nvfp4_ctas_per_batch(m, l, sms * use);
      const size_t smem = kbit::nvfp4_smem_bytes(k, staged ? kbit::cdiv(m, gx) : 0);
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kbit::kNvfp4Threads, smem));
      if (per_sm < use) std::printf("  (%s: staged scales leave %d CTAs per SM)\n", name, per_sm);
      CK(cudaMemset(dc, 0xFF, size_t(l) * m * 2));
      kernel<<<dim3(gx, l), kbit::kNvfp4Threads, smem>>>(p);
      CK(cudaGetLastError());
      CK(cudaDeviceSynchronize());
      const double chk = check();
      const float t = bench.median_us([&] { kernel<<<dim3(gx, l), kbit::kNvfp4Threads, smem>>>(p); });
      char label[64];
      std::snprintf(label, sizeof label, "%s g%d%s cta/sm %d%s", name, group, staged ? " staged" : "", use,
                    want_per_sm ? "" : "*");
      std::printf("  %-30s %8.2f %8.0f %6.0f%% %7s %.2g\n", label, t, bytes / t / 1e3, 100.0 * t_read / t,
                  chk <= 1.0 ? "ok" : "FAIL", chk);
    };
    // The extension's configuration (staged scales, then per-lane scale loads)
    // twice, then neighbours (group size, register cap).
    using kbit::kNvfp4GroupChunks, kbit::kNvfp4MinCtas;
    constexpr int kG2 = kNvfp4GroupChunks / 2;
    const bool two = kbit::nvfp4_chunks_per_element(p) == 2;
    for (int rep = 0; rep < 2; ++rep) {
      if (two) {
        run("v3 ext, 2 chunks", kbit::nvfp4_gemv_kernel<kG2, 2, true, kNvfp4MinCtas>, kG2, true, 0);
        run("v3 ext, 2 chunks", kbit::nvfp4_gemv_kernel<kG2, 2, false, kNvfp4MinCtas>, kG2, false, 0);
      }
      run("v3 1 chunk", kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks, 1, true, kNvfp4MinCtas>, kNvfp4GroupChunks,
          true, 0);
      run("v3 1 chunk", kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks, 1, false, kNvfp4MinCtas>, kNvfp4GroupChunks,
          false, 0);
    }
    // neighbours: smaller and deeper groups at 4 CTAs per SM, a register cap for 5
    run("v3 1 chunk", kbit::nvfp4_gemv_kernel<1, 1, true, kNvfp4MinCtas>, 1, true, 0);
    if (two) run("v3 2 chunks", kbit::nvfp4_gemv_kernel<2, 2, true, kNvfp4MinCtas>, 2, true, 0);
    run("v3 1 chunk", kbit::nvfp4_gemv_kernel<4, 1, true, kNvfp4MinCtas>, 4, true, 0);
    run("v3 1 chunk", kbit::nvfp4_gemv_kernel<kNvfp4GroupChunks, 1, true, 5>, kNvfp4GroupChunks, true, 0);
#ifdef NVFP4_OLD
    {  // the old (v2) kernel with its own launch rule and configuration
      namespace o = kbit::old::kbit;
      const bool two_old = o::nvfp4_chunks_per_element(reinterpret_cast<const o::Nvfp4Params&>(p)) == 2;
      const auto kernel = two_old ? o::nvfp4_gemv_kernel<o::kNvfp4GroupChunks / 2, 2, o::kNvfp4MinCtas>
                                  : o::nvfp4_gemv_kernel<o::kNvfp4GroupChunks, 1, o::kNvfp4MinCtas>;
      const size_t smem = o::nvfp4_smem_bytes(k);
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, smem));
      const int gx = o::nvfp4_ctas_per_batch(m, l, sms * per_sm);
      o::Nvfp4Params q;
      std::memcpy(&q, &p, sizeof q);
      for (int rep = 0; rep < 2; ++rep) {
        CK(cudaMemset(dc, 0xFF, size_t(l) * m * 2));
        kernel<<<dim3(gx, l), 256, smem>>>(q);
        CK(cudaDeviceSynchronize());
        const double chk = check();
        const float t = bench.median_us([&] { kernel<<<dim3(gx, l), 256, smem>>>(q); });
        std::printf("  %-30s %8.2f %8.0f %6.0f%% %7s\n", "old (its launch rule)", t, bytes / t / 1e3,
                    100.0 * t_read / t, chk <= 1.0 ? "ok" : "FAIL");
      }
    }
#endif
    CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dsa)); CK(cudaFree(dsb)); CK(cudaFree(dc)); CK(cudaFree(rd));
  }
  std::printf("\n* = CTAs per SM from the occupancy calculator (the extension's rule)\n");
  return 0;
}
