// nvfp4_gemv.cuh — portable NVFP4 batched scaled GEMV (sm80 and sm90 families).
//
//   c[i, 0, l] = sum_k a[i, k, l] sfa[i, k/16, l] b[0, k, l] sfb[0, k/16, l]
//
// a is read exactly once with 16-byte streaming loads; its scales come from sfa
// (or from the 128x4 blocked copy when sfa is not on the GPU): staged in shared
// memory for the CTA's whole row range where they fit (see "Scales"), else
// loaded by each lane beside its chunk. Each fp4 code is
// mapped to a signed 8-bit integer (twice its value: 0, +-1, +-2, +-3, +-4, +-6,
// +-8, +-12) by two byte permutes, and 16-element group sums are exact integer
// dp4a dot products; the group's two scales are applied once in fp32. b (the
// vector, shared by all rows of one batch) is decoded once per CTA into shared
// memory. All L batches run in one launch (grid.y = l).
//
// Streaming. A warp owns rows row0 + warp, row0 + warp + 8, ... of its CTA's
// row range; lane `lane` reads 16-byte chunks lane, lane + 32, ... of each row.
// The chunks a lane reads, row after row, form one stream, loaded in groups of
// kG into two register sets that alternate: one group is summed while the next
// is in flight, across row boundaries (a k = 2048 row is only two chunks per
// lane: v1, one row at a time, waited a full DRAM round trip per row). The
// first group is issued before the CTA decodes b, so the set-up hides under it
// (b's own loads go out just before that group: behind it they waited for it).
// One persistent wave of CTAs: b is decoded once per CTA, not once per 8 rows.
//
// Scales. A lane needs 2 sfa bytes per chunk. Loaded beside each chunk, they
// are one 64- or 128-byte warp request per 512 or 1024 bytes of a, scattered
// over as many places in sfa as there are warps; the bench's probe
// (docs/results.md v19) read a with them 2.0-5.8 us slower than a plain read
// of the same bytes. The CTA's rows are contiguous in sfa (plain layout), so
// the CTA instead copies all its scales, one contiguous span, with 16-byte
// cp.async under the set-up, and the lanes read them from shared memory.
//
// Version log
//   v1  prmt + dp4a integer group sums, warp per row, b decoded in shared memory.
//   v2  double-buffered register groups across rows, loads before the set-up,
//       one wave of CTAs;
//       positive and negative codes summed in separate dp4a chains.
//   v3  the CTA's sfa rows staged in shared memory under the set-up; the
//       set-up's b and sfb loads issued together.
//   v4  the set-up's b and sfb loads issued before the first group of a; the
//       sm90 family converts sfa codes with cvt.rn.f16x2.e4m3x2 (no table loads).
#pragma once

namespace kbit {

struct Nvfp4Params {
  const uint8_t* a;    // fp4x2 bytes, element (i, kb, l) at i * a_si + kb + l * a_sl
  const uint8_t* b;    // row 0 used: (kb, l) at kb + l * b_sl
  const uint8_t* sfa;  // plain: (i, j, l) at i * sfa_si + j + l * sfa_sl; blocked: see sf_offset
  const uint8_t* sfb;
  __half* c;           // (i, l) at i * c_si + l * c_sl
  long long a_si, a_sl, b_sl, sfa_si, sfa_sl, sfb_sl, c_si, c_sl;
  int m, k, l;
  int sfa_blocked, sfb_blocked;
};

// Byte offset of scale (i, j) of batch l in the cuBLAS 128x4 blocked layout
// ([l][rows/128][cols/4][32][4][4]); rows padded to 128, cols to 4.
__device__ __forceinline__ long long nvfp4_sf_offset(int i, int j, int l, int rows, int cols) {
  const int rest_m = cdiv(rows, 128), rest_k = cdiv(cols, 4);
  return ((((long long)l * rest_m + i / 128) * rest_k + j / 4) * 512) + (i % 32) * 16 +
         ((i % 128) / 32) * 4 + (j % 4);
}

// fp4 magnitude codes 0..7 -> 2 * value as bytes: {0,1,2,3,4,6,8,12}.
constexpr uint32_t kFp4Lo = 0x03020100u, kFp4Hi = 0x0C080604u;

// Eight fp4 codes (one word of a) against eight int8 values of b (bv0: codes
// 0..3, bv1: codes 4..7). prmt reads only the low 16 bits of its selector (four
// nibbles), and a selector nibble >= 8 replicates the sign bit of a positive
// table byte, i.e. yields 0: the word itself selects the positive codes, the
// word ^ 0x88888888 the negative ones. The two sums stay in separate chains
// (pos - neg is taken once per 16 elements).
__device__ __forceinline__ void fp4x8_dot(uint32_t w, uint32_t bv0, uint32_t bv1, int& pos, int& neg) {
  const uint32_t wn = w ^ 0x88888888u;
  pos = ptx::dp4a_s32(ptx::prmt(kFp4Lo, kFp4Hi, w), bv0, pos);
  neg = ptx::dp4a_s32(ptx::prmt(kFp4Lo, kFp4Hi, wn), bv0, neg);
  pos = ptx::dp4a_s32(ptx::prmt(kFp4Lo, kFp4Hi, w >> 16), bv1, pos);
  neg = ptx::dp4a_s32(ptx::prmt(kFp4Lo, kFp4Hi, wn >> 16), bv1, neg);
}

// b decoded to signed int8 in two halves per 32-element chunk (lanes read 16 B
// at a 16 B stride: no bank conflicts), sfb as float * 1/4 (undoes the 2x of both
// integer operands).
constexpr int kNvfp4Threads = 256;
constexpr int kNvfp4Warps = kNvfp4Threads / 32;
// Measured on the H100 (scripts/nvfp4_bench.cu, docs/results.md): groups of two
// chunks with 4 CTAs (32 warps) per SM beat deeper groups at lower occupancy,
// and every register cap below 64 spilled.
constexpr int kNvfp4GroupChunks = 2;   // 16-byte loads per lane per group (see the kernel)
constexpr int kNvfp4MinCtas = 4;       // __launch_bounds__ minimum: 64 registers
#ifndef KBIT_NVFP4_CVT
#define KBIT_NVFP4_CVT KBIT_HAS_E4M3_CVT   // sfa decoded by cvt (sm90 family), else by table
#endif
#ifndef KBIT_NVFP4_SF_STAGED
#define KBIT_NVFP4_SF_STAGED 1          // 0: per-lane scale loads only (A/B)
#endif

// Shared memory: b as int8, sfb as float, the e4m3 table, then (staged scales)
// the CTA's sfa rows, k / 16 bytes each.
__host__ __device__ constexpr size_t nvfp4_smem_base_bytes(int k) {
  return (size_t(k) + size_t(k / 16) * 4 + 256 * 4 + 15) / 16 * 16;
}
__host__ __device__ constexpr size_t nvfp4_smem_bytes(int k, int staged_rows) {
  return nvfp4_smem_base_bytes(k) + size_t(staged_rows) * (k / 16);
}

// kG consecutive elements of a lane's stream, in registers. An element is kV
// adjacent chunks (kV * 16 bytes of a) and their 2 kV sfa bytes.
template <int kG, int kV>
struct Nvfp4Group {
  uint4 a[kG][kV];
  uint32_t sf[kG];
};

// A lane's position in its stream: chunks `chunk` .. chunk + kV - 1, where
// chunk = (slot * 32 + lane) * kV (16 bytes, 32 codes each), of row `row`, with
// the addresses of those chunks and of their sfa bytes. Moving to the next
// slot adds 512 kV bytes to `a` and a fixed step to `sf`: 64 kV bytes in plain
// sfa, 16 kV blocks of 512 bytes in the blocked layout (32 chunks = 64 scales =
// 16 four-column blocks). Only a new row recomputes them.
struct Nvfp4Cursor {
  int row, chunk;
  const uint8_t* a;
  const uint8_t* sf;
};

// b in shared memory: chunk c at index (c % kV) * (chunks / kV) + c / kV of
// b_lo / b_hi, so that the lanes of a warp read consecutive 16-byte entries
// (no bank conflicts) for every kV.
template <int kV>
__device__ __forceinline__ int nvfp4_b_index(int c, int chunks) {
  return (c % kV) * (chunks / kV) + c / kV;
}

template <int kV, bool kStaged>
struct Nvfp4Stream {
  const Nvfp4Params& p;
  int l, lane, chunks, row_begin, row_end;
  long long sf_step;
  const uint8_t* sf_s;   // kStaged: sfa rows row_begin .. row_end - 1 in shared memory

  __device__ __forceinline__ Nvfp4Cursor start(int row) const {
    Nvfp4Cursor at;
    at.row = row;
    at.chunk = kV * lane;
    at.a = p.a + (long long)row * p.a_si + (long long)l * p.a_sl + 16 * kV * lane;
    if constexpr (kStaged)
      at.sf = sf_s + (row - row_begin) * (p.k / 16) + 2 * kV * lane;
    else
      at.sf = p.sfa + (p.sfa_blocked ? nvfp4_sf_offset(row, 2 * kV * lane, l, p.m, p.k / 16)
                                     : (long long)row * p.sfa_si + (long long)l * p.sfa_sl + 2 * kV * lane);
    return at;
  }
  // The next slot of the row, or the first of the warp's next row. Returns
  // whether the row ended.
  __device__ __forceinline__ bool advance(Nvfp4Cursor& at) const {
    at.chunk += 32 * kV;
    at.a += 512 * kV;
    at.sf += sf_step;
    if (at.chunk - kV * lane < chunks) return false;
    at = start(at.row + kNvfp4Warps);
    return true;
  }
  // The 2 kV scale bytes of the cursor's chunks (staged: in shared memory).
  __device__ __forceinline__ uint32_t scales(const Nvfp4Cursor& at) const {
    return kV == 1 ? uint32_t(*reinterpret_cast<const uint16_t*>(at.sf)) : *reinterpret_cast<const uint32_t*>(at.sf);
  }

  // Issues the loads of the next kG elements (past the warp's rows or the row's
  // last chunk: nothing).
  template <int kG>
  __device__ __forceinline__ void load(Nvfp4Cursor& in, Nvfp4Group<kG, kV>& g) const {
#pragma unroll
    for (int u = 0; u < kG; ++u) {
      if (in.row < row_end && in.chunk < chunks) {
#pragma unroll
        for (int v = 0; v < kV; ++v) g.a[u][v] = ptx::ld_global_nc_na_v4(in.a + 16 * v);
        if constexpr (!kStaged) g.sf[u] = scales(in);
      }
      advance(in);
    }
  }

  // Adds the next kG elements to acc; at the end of a row, reduces acc over
  // the warp and writes c. Branches are warp-uniform except the chunk bound.
  template <int kG>
  __device__ __forceinline__ void consume(Nvfp4Cursor& out, const Nvfp4Group<kG, kV>& g, float& acc,
                                          const uint4* b_lo, const uint4* b_hi, const float* sfb_s,
                                          const float* fp8) const {
#pragma unroll
    for (int u = 0; u < kG; ++u) {
      if (out.row >= row_end) return;
      if (out.chunk < chunks) {
        const uint32_t sf = kStaged ? scales(out) : g.sf[u];
#pragma unroll
        for (int v = 0; v < kV; ++v) {
          const int bi = nvfp4_b_index<kV>(out.chunk + v, chunks);
          const uint4 blo = b_lo[bi], bhi = b_hi[bi];
          const uint4 av = g.a[u][v];
          int p0 = 0, n0 = 0, p1 = 0, n1 = 0;
          fp4x8_dot(av.x, blo.x, blo.y, p0, n0);
          fp4x8_dot(av.y, blo.z, blo.w, p0, n0);
          fp4x8_dot(av.z, bhi.x, bhi.y, p1, n1);
          fp4x8_dot(av.w, bhi.z, bhi.w, p1, n1);
          const float2 sb = *reinterpret_cast<const float2*>(sfb_s + 2 * (out.chunk + v));
          // The two sfa scales of the chunk. (A preprocessor switch: the sm80
          // family has no cvt wrapper to name, even in a discarded branch.)
#if KBIT_NVFP4_CVT
          const uint32_t h = ptx::cvt_f16x2_e4m3x2(sf >> (16 * v));
          const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
          const float s0 = f.x, s1 = f.y;
#else
          const float s0 = fp8[(sf >> (16 * v)) & 0xFFu], s1 = fp8[(sf >> (16 * v + 8)) & 0xFFu];
#endif
          acc = fmaf(float(p0 - n0), s0 * sb.x, acc);
          acc = fmaf(float(p1 - n1), s1 * sb.y, acc);
        }
      }
      const int row = out.row;
      if (advance(out)) {                            // row done: reduce over the warp
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, d);
        if (lane == 0) p.c[(long long)row * p.c_si + (long long)l * p.c_sl] = __float2half_rn(acc);
        acc = 0.f;
      }
    }
  }
};

// kG: elements per lane per group; two groups alternate, so a warp keeps
// between kG and 2 kG elements in flight. (A ring refilled one element at a
// time measured slower: the consumer of one load then also waited for the
// loads issued after it.) kV: chunks per element (1 or 2; 2 needs k % 2048 == 0
// to keep every lane busy, and 4-byte aligned scales). kStaged: the CTA's sfa
// rows staged in shared memory (nvfp4_sf_staged_ok, and they fit).
template <int kG, int kV, bool kStaged, int kMinCtas>
__global__ void __launch_bounds__(kNvfp4Threads, kMinCtas)
nvfp4_gemv_kernel(const Nvfp4Params p) {
  static_assert(kV == 1 || kV == 2, "one or two chunks per element");
  extern __shared__ __align__(128) uint8_t nvfp4_smem[];
  uint8_t* smem = nvfp4_smem;
  const int chunks = p.k / 32;                       // 32 elements = 16 bytes of a
  uint4* b_lo = reinterpret_cast<uint4*>(smem);      // elements 32c .. 32c+15 as int8
  uint4* b_hi = b_lo + chunks;                       // elements 32c+16 .. 32c+31
  float* sfb_s = reinterpret_cast<float*>(b_hi + chunks);   // k/16 floats
  float* fp8 = sfb_s + p.k / 16;                     // e4m3 decode table
  uint8_t* sf_s = smem + nvfp4_smem_base_bytes(p.k);  // staged sfa rows

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int l = blockIdx.y;
  // Rows [row_begin, row_end) of batch l, split evenly over the CTAs of the batch.
  const int row_begin = int((long long)blockIdx.x * p.m / gridDim.x);
  const int row_end = int((long long)(blockIdx.x + 1) * p.m / gridDim.x);
  const long long sf_step = kStaged ? 64ll * kV : (p.sfa_blocked ? 16ll * 512 : 64ll) * kV;
  const Nvfp4Stream<kV, kStaged> st{p, l, lane, chunks, row_begin, row_end, sf_step, sf_s};

  // Set-up loads: sfb and b of batch l (the e4m3 table is computed). They go
  // out before the first group of a, not behind it: at k = 16384, where a
  // thread decodes 8 words of b, that took the call from 28.6 to 27.2 us and
  // left the set-up almost free (without any set-up: 26.9; bench,
  // docs/results.md v31). Each thread issues all its b (or sfb) loads of a
  // pass before it uses any, so that a pass costs one L2 round trip, not one
  // per word. Per thread and pass (the per-lane scale path holds 2 kG more
  // registers for its first group: fewer b words there, so that sm_80 does
  // not spill).
  constexpr int kBWords = kStaged ? 8 : 4, kSfbBytes = 4;
  uint32_t code[kSfbBytes];                          // a pass of sfb codes
  auto load_sfb = [&](int j0) {
#pragma unroll
    for (int u = 0; u < kSfbBytes; ++u) {
      const int j = j0 + u * kNvfp4Threads;
      const long long off = p.sfb_blocked ? nvfp4_sf_offset(0, j, l, 128, p.k / 16)
                                          : (long long)j + (long long)l * p.sfb_sl;
      code[u] = j < p.k / 16 ? p.sfb[off] : 0u;
    }
  };
  const uint8_t* b = p.b + (long long)l * p.b_sl;
  uint32_t w[kBWords];                               // a pass of b words (8 elements each)
  auto load_b = [&](int q0) {
#pragma unroll
    for (int u = 0; u < kBWords; ++u) {
      const int q = q0 + u * kNvfp4Threads;
      w[u] = q < p.k / 8 ? *reinterpret_cast<const uint32_t*>(b + 4 * q) : 0u;
    }
  };
  load_sfb(tid);
  load_b(tid);

  Nvfp4Group<kG, kV> g0, g1;
  Nvfp4Cursor in = st.start(row_begin + warp), out = in;
  st.load(in, g0);
  if constexpr (kStaged) {   // the CTA's scales: 16-byte pieces, k / 256 per row
    const int per_row = p.k / 256, pieces = (row_end - row_begin) * per_row;
    const uint8_t* sfa = p.sfa + (long long)l * p.sfa_sl;
    for (int q = tid; q < pieces; q += kNvfp4Threads) {
      const int r = q / per_row;
      ptx::cp_async_cg16(ptx::smem_u32(sf_s + 16 * q),
                         sfa + (long long)(row_begin + r) * p.sfa_si + 16 * (q - r * per_row), 16);
    }
    ptx::cp_async_commit();
  }

  // Set-up under the first group: the e4m3 table, b decoded, then sfb.
  for (int i = tid; i < 256; i += kNvfp4Threads) fp8[i] = e4m3_decode(i);
  for (int q0 = tid; q0 < p.k / 8; q0 += kBWords * kNvfp4Threads) {
    if (q0 != tid) load_b(q0);
#pragma unroll
    for (int u = 0; u < kBWords; ++u) {
      const int q = q0 + u * kNvfp4Threads;
      if (q >= p.k / 8) break;
      // signed bytes: pos - neg per byte (no borrow: one of the two is zero)
      const uint32_t wn = w[u] ^ 0x88888888u;
      const uint32_t v0 = __vsub4(ptx::prmt(kFp4Lo, kFp4Hi, w[u]), ptx::prmt(kFp4Lo, kFp4Hi, wn));
      const uint32_t v1 =
          __vsub4(ptx::prmt(kFp4Lo, kFp4Hi, w[u] >> 16), ptx::prmt(kFp4Lo, kFp4Hi, wn >> 16));
      const int chunk = q / 4, part = q % 4;         // 4 words of 8 elements per chunk
      const int bi = nvfp4_b_index<kV>(chunk, chunks);
      uint32_t* dst = reinterpret_cast<uint32_t*>(part < 2 ? b_lo + bi : b_hi + bi);
      dst[(part & 1) * 2 + 0] = v0;
      dst[(part & 1) * 2 + 1] = v1;
    }
  }
  __syncthreads();                                   // the e4m3 table
  for (int j0 = tid; j0 < p.k / 16; j0 += kSfbBytes * kNvfp4Threads) {
    if (j0 != tid) load_sfb(j0);
#pragma unroll
    for (int u = 0; u < kSfbBytes; ++u) {
      const int j = j0 + u * kNvfp4Threads;
      if (j < p.k / 16) sfb_s[j] = 0.25f * fp8[code[u]];
    }
  }
  if constexpr (kStaged) ptx::cp_async_wait<0>();
  __syncthreads();

  float acc = 0.f;
  while (out.row < row_end) {
    st.load(in, g1);
    st.consume(out, g0, acc, b_lo, b_hi, sfb_s, fp8);
    if (out.row >= row_end) break;
    st.load(in, g0);
    st.consume(out, g1, acc, b_lo, b_hi, sfb_s, fp8);
  }
}

// Whether the kernel may stage sfa: the plain layout, every row 16-byte
// aligned and a whole number of 16-byte pieces.
inline bool nvfp4_sf_staged_ok(const Nvfp4Params& p) {
  return KBIT_NVFP4_SF_STAGED && !p.sfa_blocked && p.k % 256 == 0 &&
         reinterpret_cast<uintptr_t>(p.sfa) % 16 == 0 && p.sfa_si % 16 == 0 && p.sfa_sl % 16 == 0;
}

// Chunks per stream element: two where every lane stays busy (k a multiple of
// 2048: whole 64-chunk slots) and the scales allow 4-byte loads, else one.
inline int nvfp4_chunks_per_element(const Nvfp4Params& p) {
  const bool aligned = reinterpret_cast<uintptr_t>(p.sfa) % 4 == 0 &&
                       (p.sfa_blocked || (p.sfa_si % 4 == 0 && p.sfa_sl % 4 == 0));
  return (p.k / 32) % 64 == 0 && aligned ? 2 : 1;
}

// CTAs per batch: together one wave over the GPU (`resident` CTAs fit at once),
// and no more than one CTA per kNvfp4Warps rows.
inline int nvfp4_ctas_per_batch(int m, int l, int resident) {
  int gx = cdiv(resident, l);
  const int max_gx = cdiv(m, kNvfp4Warps);
  return gx < 1 ? 1 : gx > max_gx ? max_gx : gx;
}

}  // namespace kbit
