// kbit_rows.cuh — the row-owning kernel (sm90 family): dense kbit_gemm at
// M = 9..32 on layers below 2^26 weights (launch.cuh rows_kernel_pays; any
// M <= 32 under KBIT_KERNEL=rows). It takes away the two costs docs/results.md v51
// measured in the decode kernel's 16-row slots: each warp copying its own
// activations, and tiles split between CTAs finished through the workspace.
//
// * Rows, not units. CTA c owns 16-row granules [c G / C, (c + 1) G / C) of
//   the G = ceil(N / 16) granules for all of K: no tile spans CTAs, so nothing
//   goes through the workspace. A warp tile reaching past the CTA's rows
//   copies only the CTA's rows and zero-fills the rest; in groups of two
//   warps and in the 32-row stages' 3 x 4 its 16-row tiles past them are not
//   computed (RowsConfig::kLiveLoops, since v58).
// * K-groups. The CTA's warps form kGroups groups of kGroupWarps warps. Warp j
//   of group g owns tile (j + g kGroupWarps / 4) % kGroupWarps (16 kNT rows)
//   of the CTA's rows (rotated so that the part-filled last tiles fall on
//   every scheduler, warp % 4, alike), group g the K-tiles
//   [g T / kGroups, (g + 1) T / kGroups). A group's warps walk the same K-tiles
//   together through one ring: each warp copies its own rows' plane words and
//   scale bytes, the group's lanes the kRows activation rows, and one
//   named barrier per K-tile (bar.sync 1 + g) makes the stage visible to the
//   group and frees the slot the next copies go to. The activations cross
//   from L2 once per group instead of once per warp tile. With kSyncTiles =
//   2 the barrier is passed once per two K-tiles, and the warp computes both
//   stages between passes (launch.cuh rows_sync_tiles).
// * The end. Groups 1 .. kGroups - 1 leave their sums in shared memory; after
//   a CTA barrier group 0 adds them in group order (the same bits on every
//   run) and writes C.
// * 16 or 32 activation rows per stage (kRows): at M = 17..32 each
//   dequantized fragment feeds four n8 MMA pairs instead of two.
// The dequantization and MMAs per warp and K-tile are the decode kernel's
// (kbit_decode.cuh: table, index words, decode_stage_scales, stage_mma),
// except with kPairPerm (launch.cuh rows_pair_perm: 32 rows, every k): K
// permuted by pairs so that a lane loads one block's plane words per row and
// K-tile instead of two, and the scale is applied before the MMA
// (dequant_pairs, stage_mma_pair_perm below; design.md, "Fewer plane-word
// loads"). It uses the canonical codebook table (kLanePerm off).
//
// Measured: docs/results.md v52 (H100, M = 16) and v53 (H200, M = 32). At
// M = 16 the Qwen3-Coder-Next layers 1.3-3.6 us faster than the decode
// kernel's 16-row slots, Llama-3-8B gate/up 0.5-1.0; the 70B layers 8-10 us
// slower (32-row warp tiles: two dequantization chains per warp, not four),
// which the rule leaves to the decode kernel. At M = 32 see rows_kernel_pays.
//
// tc_bench times it alone (the binary built here runs on the device):
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I. -Iptx -Iscripts \
//        -DTC_ROWS_ONLY -o build/tc_rows scripts/tc_bench.cu        (~20 s)
//   build/tc_rows rows_ dec16_
#pragma once

#define KBIT_HAS_ROWS 1   // (launch.cuh: rows_kernel_pays, KBIT_KERNEL=rows)

namespace kbit {

template <int kBits_, typename T_, int kGroups_, int kGroupWarps_, int kNT_, int kStages_, int kRows_ = 16,
          bool kPairPerm_ = false, int kSplit_ = 1, int kSyncTiles_ = 1, bool kPairFields_ = false>
struct RowsConfig : DecodeConfig<kBits_, T_, kGroups_ * kGroupWarps_, kNT_, 2, 16, 0> {
  using Base = DecodeConfig<kBits_, T_, kGroups_ * kGroupWarps_, kNT_, 2, 16, 0>;
  // kPairPerm (launch.cuh rows_pair_perm; stage_mma_pair_perm below): lane t of
  // a quad takes 8 consecutive pairs of one block, so it loads that block's
  // plane words only (half the plane-word loads), and the scale is applied
  // before the MMA.
  static constexpr bool kPairPerm = kPairPerm_;
  // A lane takes fields 2 (t % 2) and 2 (t % 2) + 1 of every index byte, not
  // field t, so the lane-permuted table replicas (which rotate the fields by
  // the lane's quarter t) do not fit it: the canonical table (this shadows
  // Base::kLanePerm for every function templated on the configuration).
  static constexpr bool kLanePerm = kPairPerm ? false : Base::kLanePerm;
  // kPairFields (with K by pairs at k = 3, 4; launch.cuh rows_shape says
  // where): the lane's two index words take their fields as pair_field
  // (below) places them, so that planes 1 and 2 are rotated once for both
  // words instead of once per word; the table then holds a replica set per
  // word (its rows' unused half at k = 4), and 256 rows at k = 3 instead of 64
  // (the word's fourth field is left unmasked). Per row and K-tile four
  // instructions fewer at k = 4 (4 SHF and 6 LOP3 for both words instead of 8
  // and 6), six at k = 3 (2 SHF and 4 LOP3 instead of 6, 4 and 2 masks); the
  // table build writes twice (k = 4) or eight times (k = 3) as many bytes.
  static constexpr bool kPairFields = kPairFields_ && kPairPerm && (kBits_ == 3 || kBits_ == 4);
  static constexpr int kEntries = kPairFields ? 256 : Base::kEntries;   // (build_pair_field_lut)
  static constexpr int kLutBytes = kEntries * Base::kEntryBytes;
  // Activation rows per stage: 16 (M <= 16), or 32 (M = 17..32: each
  // dequantized fragment feeds four n8 MMA pairs instead of two). The table,
  // index words and lane constants are the 16-row slot's (Base); the slot's
  // shape and accumulators are these.
  static constexpr int kRows = kRows_;
  static constexpr int BLOCK_M = kRows;
  static constexpr int kMH = kRows / 8;       // n8 parts of the slot
  static constexpr int kAccRegs = 4 * kMH;    // accumulators per 16-row tile and thread
  static constexpr int kGroups = kGroups_;
  static constexpr int kGroupWarps = kGroupWarps_;
  static constexpr int kRingStages = kStages_;
  static constexpr int kCtaRows = kGroupWarps * Base::BLOCK_N;   // rows a CTA can own
  // One group stage: the plane words of the CTA's rows (warp j's at j kWarpW),
  // their scale bytes, then the kRows activation rows (128 bytes each, chunk c
  // of row r at c ^ (r % 8), as in the decode kernel's stages).
  static constexpr int kWarpW = Base::BLOCK_N * 8 * kBits_;
  static constexpr int kScaleOff = kGroupWarps * kWarpW;
  static constexpr int kActOff = cdiv(kScaleOff + kCtaRows * 2, 128) * 128;
  static constexpr int kGroupStage = kActOff + kRows * 128;
  static constexpr int kRingOff = kLutBytes;
  static constexpr int kRingBytes = kGroups * kRingStages * kGroupStage;
  // K-tiles per pass of the group's barrier (1 or 2): with 2, a warp computes
  // two stages between barriers, so the barrier and the copy bookkeeping
  // come half as often and the two stages' dequantization share one basic
  // block. (In the 12 x 1 and 6 x 2 loops ptxas also kept the table base in a
  // uniform register with 2 and not with 1: docs/results.md v57.) The ring
  // holds the kSyncTiles stages being read and kRingStages - kSyncTiles being
  // copied.
  static constexpr int kSyncTiles = kSyncTiles_;
  // The main loop instanced per count of live 16-row tiles (kbit_rows_kernel,
  // since v58), where that measured faster: groups of two warps (6 x 2) and
  // the 32-row stages' 3 x 4. The 4 x 4 at M <= 16 was level to slower (H200,
  // Llama-3-8B gate/up: tc_bench 18.1 vs 18.2 us, harness 18.3-18.4 vs 18.5)
  // and 2 x 7 is not measured: those compute every tile, as groups of one
  // warp do (whose part-filled tiles lie only in CTAs that own fewer granules
  // than others, not the slowest).
  static constexpr bool kLiveLoops = kGroupWarps_ == 2 || (kGroupWarps_ == 4 && kRows_ == 32);
  static constexpr int kScalesOff = kRingOff + kRingBytes;   // per warp and synced stage: BLOCK_N float2
  static constexpr int kPartStride = kCtaRows + 4;   // words per activation row of a part (bank spread)
  static constexpr int kPartBytes = (kGroups - 1) * kRows * kPartStride * 4;
  // The groups' parts after the scales, or where the rings were (once every
  // group is past its loop: one CTA barrier more) where that does not fit.
  static constexpr int kAfterScales = kScalesOff + kGroups * kGroupWarps * kSyncTiles * Base::BLOCK_N * 8;
  static constexpr bool kPartsOnRing = kAfterScales + kPartBytes > 227 * 1024;
  static constexpr int kPartOff = kPartsOnRing ? kRingOff : kAfterScales;
  // K split over a cluster of kSplit CTAs (1: none): the CTAs of a cluster own
  // the same rows, each a contiguous share of the K-tiles, and ranks 1 ..
  // kSplit - 1 send their CTA's sums to rank 0 (st.async into its split
  // slots), which adds them in rank order.
  static constexpr int kSplit = kSplit_;
  static constexpr int kSplitOff = kPartsOnRing ? kAfterScales : kAfterScales + kPartBytes;
  static constexpr int kSplitSlot = kRows * kPartStride;   // floats
  static constexpr int kSmemBytes = kSplitOff + (kSplit - 1) * kSplitSlot * 4;
  static_assert(kSplit >= 1 && kSplit <= 8, "clusters of at most 8 CTAs (the portable size)");
  static_assert(kRows == 16 || kRows == 32, "16 or 32 activation rows per stage");
  static_assert(!kPartsOnRing || kPartBytes <= kRingBytes, "the parts must fit where the rings were");
  static_assert(kSmemBytes <= 227 * 1024, "must fit one SM");
  static_assert(kSyncTiles == 1 || kSyncTiles == 2, "one or two K-tiles per barrier");
  static_assert(kRingStages >= 2 * kSyncTiles, "the ring holds the stages being read and as many being copied");
  static_assert(kGroups + 1 <= 16, "named barriers 1 .. kGroups");
};

// An int as a type: the argument that instances a generic lambda (the table
// builder's replica set, the main loop's live tiles).
template <int N>
struct IntConst {
  static constexpr int value = N;
};

// The row-owning kernel's index bytes with K by pairs at k = 3 and 4
// (RowsConfig kPairFields; dequant_pairs below). A lane of parity
// p = t % 2 builds index word w (w = 0, 1) from field 2p + w of every plane
// byte, and plane b's two bits go to field pair_field(p, w, b) of the index
// byte: plane 0 stays where it lies, planes 1 and 2 move by as many fields in
// both words (one rotation each serves both words), and plane 3 (k = 4) takes
// the field left over (a rotation per word). At k = 3 the field left over
// keeps plane 0's bits of another pair, which the table's 256 rows ignore.
__host__ __device__ constexpr int pair_field(int p, int w, int b) {
  return b == 0 ? 2 * p + w : b == 3 ? (w ? 0 : 3) : b + w - p;
}
// The canonical index (pair_value's bit order) of table row e in replica set w
// of the lanes of parity p.
template <int kBits>
__host__ __device__ constexpr int pair_field_canonical(int e, int p, int w) {
  int c = 0;
  for (int b = 0; b < kBits; ++b) c |= ((e >> (2 * pair_field(p, w, b))) & 3) << (2 * b);
  return c;
}
// The lane's constants (PairPermConsts below): the right rotations
// rot(p, 0), rot(p, 1) of planes 1 and 2 (both words), rot(p, 2 + w) of plane
// 3 in word w, and the bit-select mask of plane b (1..3) in word w.
__host__ __device__ constexpr uint32_t pair_field_rot(int p, int i) {
  const int up = i < 2 ? pair_field(p, 0, i + 1) - 2 * p : pair_field(p, i - 2, 3) - 2 * p - (i - 2);
  return uint32_t(-2 * up) & 31u;   // a right rotation that moves the field up by `up` fields
}
__host__ __device__ constexpr uint32_t pair_field_mask(int p, int w, int b) {
  return 0x03030303u << (2 * pair_field(p, w, b));
}
// Compile-time check of the whole scheme: for every lane parity, word and
// index byte, the word built as dequant_pairs builds it (rotations,
// bit-selects) from plane words holding the pair's bits c (the other bits
// set), read through pair_field_canonical, gives c. Every step moves single
// bits, so c = 0, all ones and each single bit cover every value (and catch
// another pair's bits leaking in); all 2^(2k) values took ~1.2 s of nvcc per
// translation unit, this ~0.05.
constexpr uint32_t pair_field_rotr(uint32_t x, uint32_t s) { return s ? (x >> s) | (x << (32 - s)) : x; }
constexpr uint32_t pair_field_select(uint32_t a, uint32_t b, uint32_t m) { return (a & m) | (b & ~m); }
template <int kBits>
constexpr bool pair_fields_ok() {
  for (int p = 0; p < 2; ++p)
    for (int w = 0; w < 2; ++w)
      for (int s = 0; s < 4; ++s)
        for (int i = -2; i < 2 * kBits; ++i) {
          const int c = i == -2 ? 0 : i == -1 ? (1 << (2 * kBits)) - 1 : 1 << i;
          const int at = 8 * s + 2 * (2 * p + w);   // the pair's bits in each plane word
          uint32_t q[4] = {};
          for (int b = 0; b < kBits; ++b)
            q[b] = (0x9E3779B9u * uint32_t(b + 1) & ~(3u << at)) | uint32_t((c >> (2 * b)) & 3) << at;
          uint32_t x = pair_field_select(pair_field_rotr(q[1], pair_field_rot(p, 0)), q[0], pair_field_mask(p, w, 1));
          x = pair_field_select(pair_field_rotr(q[2], pair_field_rot(p, 1)), x, pair_field_mask(p, w, 2));
          if (kBits == 4) x = pair_field_select(pair_field_rotr(q[3], pair_field_rot(p, 2 + w)), x, pair_field_mask(p, w, 3));
          if (pair_field_canonical<kBits>(int(x >> (8 * s)) & 255, p, w) != c) return false;
        }
  return true;
}
static_assert(pair_fields_ok<3>() && pair_fields_ok<4>(), "pair_field: the index words must read back the pairs");

// kPairFields: the table's 256 rows hold two replica sets (set w at bytes
// 128 w .. 128 w + 127 of a row, lane l's replica at 4 l), and lane l's replica
// of row e in set w is the value of canonical index pair_field_canonical(e,
// l % 2, w). A builder writes one set of one row per unit (8 chunks, each
// (v0, v1, v0, v1) for lanes of parity 0, 1): unit u = (e / 32) * 64 + w * 32 +
// e % 32, so that a warp's units share w and the fields' positions are
// compile-time constants (the set chosen by a warp-uniform branch). Store s of
// unit u writes chunk (s + u) % 8 of its set, so that the eight units of a
// quarter warp hit eight bank groups (as build_decode_lut).
template <class Cfg>
__device__ __forceinline__ void build_pair_field_lut(uint8_t* lut, const float* cb_s, float inv_max, int tid) {
  constexpr int kUnits = 256 * 2;
  constexpr int kBuilders = 1 << (31 - __builtin_clz(Cfg::kThreads));   // 256 of 384 threads, 512 of 512
  static_assert(Cfg::kEntries == 256 && Cfg::kEntryBytes == 256 && kUnits % kBuilders == 0 && kBuilders % 64 == 0,
                "256 rows of two 128-byte sets; a warp's units in one set");
  if (kBuilders < Cfg::kThreads && tid >= kBuilders) return;
#pragma unroll
  for (int r = 0; r < kUnits / kBuilders; ++r) {
    const int u = tid + r * kBuilders, w = (u >> 5) & 1, e = (u >> 6 << 5) | (u & 31);
    const auto chunk = [&](auto set) {
      constexpr int kSet = decltype(set)::value;
      const uint32_t v0 = pair_value<Cfg>(pair_field_canonical<Cfg::kBits>(e, 0, kSet), cb_s, inv_max);
      const uint32_t v1 = pair_value<Cfg>(pair_field_canonical<Cfg::kBits>(e, 1, kSet), cb_s, inv_max);
      return make_uint4(v0, v1, v0, v1);
    };
    const uint4 x = w ? chunk(IntConst<1>{}) : chunk(IntConst<0>{});
#pragma unroll
    for (int s = 0; s < 8; ++s)
      *reinterpret_cast<uint4*>(lut + e * 256 + (8 * w + ((s + u) & 7)) * 16) = x;
  }
}

// The warp's kNT 16-row tiles of one K-tile with K permuted by pairs: lane
// (g, t) takes the fields f = 2 (t % 2) + w (w = 0, 1) of every byte s of the
// plane words of block b = t / 2, i.e. block b's pairs 4 s + f. Index word w
// of a row is index_word with the rotations of lane quarter f (icw[w]); byte
// s of it is the pair of MMA step s: registers a0 / a1 (rows g, g + 8) from
// w = 0, a2 / a3 from w = 1. The B fragment of step s is then activation row
// n's elements 32 b + 8 s + 4 (t % 2) .. + 3: one 64-bit load (b0, b1) from
// 16-byte chunk (4 b + s) ^ (n % 8) of the stage, at byte 8 (t % 2). A k16
// step mixes the two blocks (lanes t < 2 and t >= 2), so each fragment
// register is scaled (its row's scale of block b) before the MMA, which
// accumulates in fp32 directly.
// With kPairFields the lane's constants are pair_field's instead: rot[0],
// rot[1] move planes 1 and 2 (both words), rot[2 + w] plane 3 in word w;
// mask[w][b - 1] is plane b's field in word w (pair_field_rot, _mask; the
// scheme is checked at compile time by pair_fields_ok above).
template <class Cfg>
struct PairPermConsts {
  IndexConsts<Cfg> w[2];
  uint32_t rot[4];
  uint32_t mask[2][3];
  __device__ __forceinline__ explicit PairPermConsts(int t)
      : w{IndexConsts<Cfg>(2 * (t & 1)), IndexConsts<Cfg>(2 * (t & 1) + 1)} {
    const int p = t & 1;
#pragma unroll
    for (int i = 0; i < 4; ++i) rot[i] = pair_field_rot(p, i);
#pragma unroll
    for (int q = 0; q < 2; ++q)
#pragma unroll
      for (int b = 1; b < 4; ++b) mask[q][b - 1] = pair_field_mask(p, q, b);
  }
};

// kPairFields: the two index words of one row's plane words q (pair_field's
// fields; at k = 3 the fourth field holds stale bits, which the table ignores).
template <class Cfg>
__device__ __forceinline__ void pair_field_words(uint32_t (&x)[2], const uint32_t (&q)[Cfg::kBits],
                                                 const PairPermConsts<Cfg>& c) {
  const uint32_t r1 = ptx::rotr(q[1], c.rot[0]), r2 = ptx::rotr(q[2], c.rot[1]);
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    x[w] = ptx::lop3<0xE4>(r2, ptx::lop3<0xE4>(r1, q[0], c.mask[w][0]), c.mask[w][1]);
    if constexpr (Cfg::kBits == 4) x[w] = ptx::lop3<0xE4>(ptx::rotr(q[3], c.rot[2 + w]), x[w], c.mask[w][2]);
  }
}

// The A registers of the four MMA steps of block b for rows g (pa) and g + 8
// (pb), before scaling: f[s] = {row g field f0, row g + 8 field f0, row g
// field f0 + 1, row g + 8 field f0 + 1} of index byte s (f0 = 2 (t % 2)), i.e.
// a0..a3 of step s. Per k as dequant_block: k = 2 the row-pair table (rows g
// and g + 8 in one 64-bit entry), k = 5 the 10-bit index with plane 4 in its
// own word, k = 3 with the fourth field masked (no repeated rows here).
template <class Cfg>
__device__ __forceinline__ void dequant_pairs(uint32_t (&f)[4][4], const uint32_t (&pa)[Cfg::kBits],
                                              const uint32_t (&pb)[Cfg::kBits], const PairPermConsts<Cfg>& icw,
                                              uint32_t lut, uint32_t lane_word) {
  static_assert(!Cfg::kLanePerm && !Cfg::kRepeatRows, "the canonical table without repeated rows");
  if constexpr (Cfg::kPairFields) {
    uint32_t xa[2], xb[2];
    pair_field_words<Cfg>(xa, pa, icw);
    pair_field_words<Cfg>(xb, pb, icw);
#pragma unroll
    for (int w = 0; w < 2; ++w)
#pragma unroll
      for (int s = 0; s < 4; ++s) {   // word w's replica set lies 128 w bytes into the row
        f[s][2 * w] = lookup_byte(lut + 128u * w, xa[w], lane_word, lut_sel(s));
        f[s][2 * w + 1] = lookup_byte(lut + 128u * w, xb[w], lane_word, lut_sel(s));
      }
  } else {   // (an else, not a return: cicc flags the loop after a return as unreachable)
#pragma unroll
    for (int w = 0; w < 2; ++w) {
      const IndexConsts<Cfg>& ic = icw.w[w];
      if constexpr (Cfg::kBits == 2) {
        const uint32_t q = row_pair_index_word<Cfg>(pa, pb, ic);
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          const uint2 v = lookup_row_pair(lut, q, lane_word, lut_sel(s));
          f[s][2 * w] = v.x;
          f[s][2 * w + 1] = v.y;
        }
      } else if constexpr (Cfg::kBits == 5) {
        Index10 xa, xb;
        index10_words<Cfg>(pa, pb, ic, xa, xb);
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          f[s][2 * w] = lookup_index10(lut, index10_of(xa, s), lane_word);
          f[s][2 * w + 1] = lookup_index10(lut, index10_of(xb, s), lane_word);
        }
      } else {
        constexpr uint32_t kClean = Cfg::kBits == 4 ? 0xFFFFFFFFu : 0x3F3F3F3Fu;
        const uint32_t xa = index_word<Cfg, Cfg::kBits>(pa, ic) & kClean;
        const uint32_t xb = index_word<Cfg, Cfg::kBits>(pb, ic) & kClean;
#pragma unroll
        for (int s = 0; s < 4; ++s) {
          f[s][2 * w] = lookup_byte(lut, xa, lane_word, lut_sel(s));
          f[s][2 * w + 1] = lookup_byte(lut, xb, lane_word, lut_sel(s));
        }
      }
    }
  }
}

template <class Cfg, int kLive = Cfg::kNT>
__device__ __forceinline__ void stage_mma_pair_perm(float (&acc)[Cfg::kNT][Cfg::kAccRegs], const uint32_t* w_s,
                                                    const float* scales, uint32_t act_s, const PairPermConsts<Cfg>& icw,
                                                    uint32_t lut_s, uint32_t lane_word, int g, int t) {
  using T = typename Cfg::T;
  const int b = t >> 1;
  // B fragments of the K-tile: [h][s] = (b0, b1) of n8 part h, step s.
  uint2 bfr[Cfg::kMH][4];
#pragma unroll
  for (int h = 0; h < Cfg::kMH; ++h)
#pragma unroll
    for (int s = 0; s < 4; ++s)
      bfr[h][s] = ptx::ld_shared_const_v2_u32(act_s + uint32_t((8 * h + g) * 128 + (((4 * b + s) ^ g) << 4) + 8 * (t & 1)));
#pragma unroll
  for (int nt = 0; nt < kLive; ++nt) {
    const int r = nt * 16 + g;
    const uint32_t sa = Elem<T>::pack(scales[2 * r + b], scales[2 * r + b]);
    const uint32_t sb = Elem<T>::pack(scales[2 * (r + 8) + b], scales[2 * (r + 8) + b]);
    uint32_t pa[Cfg::kBits], pb[Cfg::kBits];
    load_block_planes<Cfg::kBits>(pa, pb, w_s, r, b);
    uint32_t f[4][4];
    dequant_pairs<Cfg>(f, pa, pb, icw, lut_s, lane_word);
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const uint32_t a[4] = {Elem<T>::mul2(f[s][0], sa), Elem<T>::mul2(f[s][1], sb), Elem<T>::mul2(f[s][2], sa),
                             Elem<T>::mul2(f[s][3], sb)};
#pragma unroll
      for (int h = 0; h < Cfg::kMH; ++h) {
        float(&c)[4] = *reinterpret_cast<float(*)[4]>(&acc[nt][4 * h]);
        ptx::mma_m16n8k16<T>(c, a, bfr[h][s].x, bfr[h][s].y, c);
      }
    }
  }
}

// A number of live 16-row tiles as a type (the main loop's instances).
template <int N>
using Tiles = IntConst<N>;

// The tile of a CTA's rows that warp j of group g owns: j rotated by the
// scheduler round (warp / 4) of the group's first warp, so that the tiles past
// a CTA's last granule (half or empty ones) fall on every scheduler alike
// rather than all on one. (The round of the group's first warp, not the
// warp's own: a group of 7 warps spans two rounds, and the tiles must stay a
// permutation of the group's; tests/test_rows_rule.py checks that for every
// configuration.)
__host__ __device__ constexpr int rows_warp_tile(int group, int j, int group_warps) {
  return group_warps > 1 ? (j + group * group_warps / 4) % group_warps : 0;
}

struct RowsParams : KbitParams {
  int granules;   // ceil(N / 16)
};

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1) kbit_rows_kernel(const RowsParams p) {
  using T = typename Cfg::T;
  constexpr int kLevels = 1 << Cfg::kBits;
  __shared__ float cb_s[32];
  extern __shared__ __align__(128) uint8_t rows_smem[];
  uint8_t* lut = rows_smem;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int group = warp / Cfg::kGroupWarps, wj = warp - group * Cfg::kGroupWarps;
  const int g = lane >> 2, t = lane & 3;

  // ---- what this CTA, group and warp own -------------------------------------
  // (K split: the CTA's rank in its cluster of kSplit, whose CTAs own the same rows.)
  const int split_rank = Cfg::kSplit > 1 ? int(blockIdx.x % Cfg::kSplit) : 0;
  const unsigned cta = blockIdx.x / Cfg::kSplit, ctas = gridDim.x / Cfg::kSplit;
  const int gr0 = int((long long)cta * p.granules / ctas);
  const int gr1 = int((long long)(cta + 1) * p.granules / ctas);
  const int row_cta = gr0 * 16, row_end = min(gr1 * 16, p.N);   // this CTA's output rows
  // The warp's tile of the CTA's rows (rows_warp_tile).
  const int wtile = rows_warp_tile(group, wj, Cfg::kGroupWarps);
  const int n0 = row_cta + wtile * Cfg::BLOCK_N;                 // the warp's first row
  // Its 16-row tiles that hold any of the CTA's rows (0 .. kNT).
  const int live_tiles = max(0, min(Cfg::kNT, cdiv(row_end - n0, 16)));
  const int k_tiles = p.layout.k_tiles;
  constexpr int kKGroups = Cfg::kGroups * Cfg::kSplit;   // the K-groups of a cluster
  const int kgroup = split_rank * Cfg::kGroups + group;
  const int kt_begin = kgroup * k_tiles / kKGroups, kt_end = (kgroup + 1) * k_tiles / kKGroups;
  const int nk = kt_end - kt_begin;

  float cb_v = 0.f;
  if (tid < kLevels) cb_v = __ldg(p.codebook + tid);
  bool offsets_ok = true;   // a dense call: offsets {0, M}, M <= kRows (checked before anything is written)
  if (tid == 0) offsets_ok = __ldg(p.offsets) == 0 && __ldg(p.offsets + 1) == p.M && p.M <= Cfg::kRows;

  // ---- copies ------------------------------------------------------------------
  // Only this CTA's rows that exist in memory are copied: rows past n_pad do
  // not exist, and the next CTA's rows (a warp tile can reach past this CTA's
  // last granule) are not this CTA's to read. The rest of the stage is
  // zero-filled.
  const uint32_t ring0 = ptx::smem_u32(rows_smem + Cfg::kRingOff) + uint32_t(group * Cfg::kRingStages * Cfg::kGroupStage);
  const int w_rows = max(0, min(Cfg::BLOCK_N, min(gr1 * 16, p.layout.n_pad) - n0));   // a multiple of 8
  const int w_bytes = w_rows * 8 * Cfg::kBits;
  const char* w_base = reinterpret_cast<const char*>(p.b_packed + p.layout.packed_row(0, kt_begin, min(n0, p.layout.n_pad - 8)));
  const char* s_base = reinterpret_cast<const char*>(p.b_absmax + p.layout.absmax_row(0, kt_begin, min(n0, p.layout.n_pad - 8)));
  const size_t w_step = size_t(p.layout.n_pad) * 8 * Cfg::kBits, s_step = size_t(p.layout.n_pad) * 2;
  // The group's 8 kRows activation chunks of a K-tile: chunk idx = i * group lanes
  // + this lane's index in the group, row r = idx / 8, column chunk c = idx % 8
  // (the same c for every i: the group's lanes are a multiple of 8).
  constexpr int kGroupLanes = Cfg::kGroupWarps * 32;
  constexpr int kAChunkCount = Cfg::kRows * 8;
  constexpr int kAChunks = cdiv(kAChunkCount, kGroupLanes);
  const int a_idx = wj * 32 + lane, a_c = a_idx & 7;
  uint32_t a_ok = 0;   // bit i: chunk i is the group's and its row exists (< M)
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    const int idx = i * kGroupLanes + a_idx;
    a_ok |= uint32_t(idx < kAChunkCount && (idx >> 3) < p.M) << i;
  }
  const char* a_src = static_cast<const char*>(p.a) + (size_t((a_ok & 1u) ? a_idx >> 3 : 0) * p.K + size_t(kt_begin) * kTileK + a_c * 8) * 2;
  // The copy cursor. issue() copies the group's next K-tile into the next slot:
  // per K-tile the sources advance by constant strides and the slot by one
  // stage, and the per-lane choices (which copies exist, which zero-fill) are
  // made once here. (Recomputing the addresses from the K-tile's index took
  // ~90 of the ~290 instructions per K-tile and warp of the 8B gate/up M = 32
  // loop at k = 2: 64-bit products, the slot's modulo, selects.)
  const char* w_src = w_base;   // the warp's plane words of the next K-tile
  const char* s_src = s_base;   // its scale bytes
  const char* a_tile = a_src;   // this lane's activation chunk 0 of it
  const size_t a_rstep = size_t(kGroupLanes / 8) * p.K * 2;   // chunk i lies i rows of the group's lanes further
  // From this K-tile of the group's range on, chunk a_c lies past K (K % 64 == 32: the last
  // K-tile's second half; K / kTileK - kt_begin is past the range where K % 64 == 0).
  const int a_cut = a_c >= 4 ? p.K / kTileK - kt_begin : 1 << 30;
  uint32_t issue_off = 0;   // the next slot's offset in the group's ring
  int issue_it = 0;
  const auto next_slot = [](uint32_t off) {
    return off + Cfg::kGroupStage == uint32_t(Cfg::kRingStages * Cfg::kGroupStage) ? 0u : off + Cfg::kGroupStage;
  };
  const auto issue = [&]() {
    const uint32_t s = ring0 + issue_off;
#pragma unroll
    for (int i = 0; i < cdiv(Cfg::kWarpW / 16, 32); ++i) {
      const int off = (i * 32 + lane) * 16;
      if (Cfg::kWarpW % 512 == 0 || off < Cfg::kWarpW) {
        const bool ok = off < w_bytes;
        ptx::cp_async_cg16(s + wj * Cfg::kWarpW + off, w_src + (ok ? off : 0), ok ? 16u : 0u);
      }
    }
    if (lane * 16 < Cfg::BLOCK_N * 2) {
      const bool ok = lane * 16 < w_bytes / (4 * Cfg::kBits);
      ptx::cp_async_cg16(s + Cfg::kScaleOff + wj * Cfg::BLOCK_N * 2 + lane * 16, s_src + (ok ? lane * 16 : 0),
                         ok ? 16u : 0u);
    }
    const bool col_in_k = issue_it < a_cut;
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int idx = i * kGroupLanes + a_idx, r = idx >> 3;
      if (kGroupLanes * kAChunks == kAChunkCount || idx < kAChunkCount) {
        const bool ok = (a_ok >> i & 1) && col_in_k;   // (else a zero-fill from an address inside A)
        ptx::cp_async_cg16(s + Cfg::kActOff + r * 128 + ((a_c ^ (r & 7)) << 4), ok ? a_tile + i * a_rstep : a_src,
                           ok ? 16u : 0u);
      }
    }
    w_src += w_step;
    s_src += s_step;
    a_tile += kTileK * 2;
    issue_off = next_slot(issue_off);
    ++issue_it;
  };
  constexpr int kSync = Cfg::kSyncTiles;
#pragma unroll 1
  for (int it = 0; it < Cfg::kRingStages - kSync; ++it) {
    if (it < nk) issue();
    ptx::cp_async_commit();
  }

  // K split: rank 0's mbarrier for the other ranks' sums (their st.async bytes
  // complete it; the one arrival is rank 0's at the end), then every thread
  // arrives on the cluster barrier, which the senders wait on before their
  // first store (as the decode kernel's pairs of CTAs, finish_pair).
  __shared__ __align__(8) uint64_t split_bar;
  if constexpr (Cfg::kSplit > 1) {
    if (split_rank == 0 && tid == 0) {
      ptx::mbarrier_init(ptx::smem_u32(&split_bar), 1);
      ptx::mbarrier_expect_tx_relaxed(ptx::smem_u32(&split_bar),
                                      uint32_t((Cfg::kSplit - 1) * min(p.M, Cfg::kRows) * Cfg::kCtaRows * 4));
      ptx::fence_mbarrier_init();
    }
    ptx::cluster_arrive_relaxed();
  }

  // ---- the table ------------------------------------------------------------------
  if (tid < kLevels) cb_s[tid] = cb_v;
  __syncthreads();
  float cb_max = 0.f;
#pragma unroll
  for (int i = 0; i < kLevels; ++i) cb_max = fmaxf(cb_max, fabsf(cb_s[i]));
  if (!(cb_max > 0.f)) cb_max = 1.f;
  if constexpr (Cfg::kPairFields) build_pair_field_lut<Cfg>(lut, cb_s, 1.f / cb_max, tid);
  else build_decode_lut<Cfg>(lut, cb_s, 1.f / cb_max, tid);
  if (!__syncthreads_and(offsets_ok)) {
    // Offsets that are not {0, M}: make it loud and touch nothing else.
    ptx::cp_async_wait<0>();
    T* c = static_cast<T*>(p.c);
    const size_t total = size_t(p.M) * p.N;
    for (size_t i = size_t(blockIdx.x) * Cfg::kThreads + tid; i < total; i += size_t(gridDim.x) * Cfg::kThreads)
      c[i] = Elem<T>::from_float(__int_as_float(0x7fc00000));
    return;
  }

  // The index-word constants: a lane's fields (ic), or with kPairPerm those of
  // fields 2 (t % 2) and 2 (t % 2) + 1 (icw). With kPairPerm, ic is unused, but
  // its opaque moves (kOpaqueConsts) stay: building it only without kPairPerm
  // took k = 4's 3 x 4 configuration from 142 to 127 registers and made it 9 %
  // slower on Llama-3-8B gate/up at M = 32 (tc_bench, H200: 27.3-27.7 against
  // 25.1-25.3 us; docs/results.md v55).
  const IndexConsts<Cfg> ic(t);
  const auto icw = [&] {
    if constexpr (Cfg::kPairPerm) return PairPermConsts<Cfg>(t);
    else return 0;
  }();
  const uint32_t lane_word = Cfg::kBits == 5 ? uint32_t(lane & 15) * 4 : uint32_t(lane) * (Cfg::kQuad ? 8 : 4);
  const uint32_t lut_s = ptx::smem_u32(lut);
  float* scales = reinterpret_cast<float*>(rows_smem + Cfg::kScalesOff) + warp * kSync * Cfg::BLOCK_N * 2;
  const int act_row = lane & 7;
  const uint32_t act_lane = uint32_t(act_row * 128 + (((lane >> 3) ^ act_row) << 4));

  float acc[Cfg::kNT][Cfg::kAccRegs];
  for_each_acc<Cfg>(acc, g, t, [](float& x, int, int) { x = 0.f; });

  // One stage's MMAs: the warp's plane words and the group's activation rows
  // of ring slot `slot`, its scales decoded into sc; kLive of the warp's kNT
  // tiles (the rest lie past the CTA's rows).
  const auto stage_mmas = [&](uint32_t slot, const float* sc, auto live) {
    constexpr int kLive = decltype(live)::value;
    const uint8_t* stage = rows_smem + (slot - ptx::smem_u32(rows_smem));
    if constexpr (kLive == 0) {
      return;
    } else if constexpr (Cfg::kPairPerm) {
      stage_mma_pair_perm<Cfg, kLive>(acc, reinterpret_cast<const uint32_t*>(stage + wj * Cfg::kWarpW), sc,
                                      slot + Cfg::kActOff, icw, lut_s, lane_word, g, t);
    } else {
      uint32_t bf[Cfg::kMH][2][4];   // per 8 activation rows (rows 8h .. 8h + 7 lie 1024 h bytes further)
#pragma unroll
      for (int blk = 0; blk < 2; ++blk)
#pragma unroll
        for (int h = 0; h < Cfg::kMH; ++h)
          ptx::ldmatrix_x4(bf[h][blk], slot + Cfg::kActOff + h * 8 * 128 + (act_lane ^ uint32_t(blk * 64)));
      stage_mma<Cfg, kLive>(acc, reinterpret_cast<const uint32_t*>(stage + wj * Cfg::kWarpW), sc, bf, ic, lut_s,
                            lane_word, g);
    }
  };
  const auto decode_scales = [&](uint32_t slot, float* sc) {
    decode_stage_scales<Cfg>(sc, rows_smem + (slot - ptx::smem_u32(rows_smem)) + Cfg::kScaleOff, wj * Cfg::BLOCK_N,
                             lane);
  };

  // ---- main loop: the group's K-tiles, together, kSync per barrier -----------------
  // With Cfg::kLiveLoops a warp computes only its live tiles (live_tiles:
  // those holding any of the CTA's rows; the others hold zero-filled plane
  // words and are not stored): the loop is instanced once per count that can
  // occur (kNT, kNT / 2, 0) and chosen before it, warp-uniform, no branch
  // inside; since v58, with the tiles rotated over the schedulers (wtile).
  // tc_bench on an H200 against computing every tile (docs/results.md v58):
  // Qwen3 gate/up M = 16 (CTAs of 2-3 granules, 6 x 2) 7.6 -> 6.9 us,
  // Llama-3-8B gate/up M = 32 (3 x 4) 23.8 -> 22.8, M = 16 (4 x 4) level.
  // (v52 had skipped them in a second copy of the loop without the rotation:
  // ~1 us slower at Llama-3-8B gate/up M = 16 on an H100.)
  const auto main_loop = [&](auto live) {
    constexpr bool kAny = decltype(live)::value > 0;
    uint32_t read_off = 0;   // the next stage's offset in the group's ring
    int it = 0;
#pragma unroll 1
    for (; it + kSync <= nk; it += kSync) {
      ptx::cp_async_wait<Cfg::kRingStages - 2 * kSync>();   // this lane's copies of stages it .. it + kSync - 1
      ptx::bar_sync(1 + group, Cfg::kGroupWarps * 32);   // the group's copies; the last pass's stages read by all
#pragma unroll
      for (int q = 0; q < kSync; ++q) {   // K-tiles it + kRingStages - kSync + q, into the slots read last pass
        if (it + Cfg::kRingStages - kSync + q < nk) issue();
        ptx::cp_async_commit();
      }
      uint32_t slot[kSync];
#pragma unroll
      for (int q = 0; q < kSync; ++q) {
        slot[q] = ring0 + read_off;
        read_off = next_slot(read_off);
        if (kAny) decode_scales(slot[q], scales + q * Cfg::BLOCK_N * 2);
      }
#pragma unroll
      for (int q = 0; q < kSync; ++q) stage_mmas(slot[q], scales + q * Cfg::BLOCK_N * 2, live);
    }
    if constexpr (kSync > 1) {   // an odd K-tile left, already copied (nothing is left to issue)
      if (it < nk) {
        ptx::cp_async_wait<0>();
        ptx::bar_sync(1 + group, Cfg::kGroupWarps * 32);
        if (kAny) decode_scales(ring0 + read_off, scales);
        stage_mmas(ring0 + read_off, scales, live);
      }
    }
  };
  // (Cfg::kLiveLoops: where the instances measured faster.)
  constexpr int kHalf = Cfg::kNT / 2;
  if constexpr (!Cfg::kLiveLoops) {
    main_loop(Tiles<Cfg::kNT>{});
  } else {
    if (live_tiles > kHalf) {
      main_loop(Tiles<Cfg::kNT>{});
    } else if (live_tiles > 0) {
      if constexpr (kHalf > 0) main_loop(Tiles<kHalf>{});
    } else {
      main_loop(Tiles<0>{});
    }
  }
  ptx::cp_async_wait<0>();
  // Every group passes its named barrier equally often (one more time where
  // it had a K-tile fewer). The exchange below is ordered by the CTA barrier
  // either way, but compute-sanitizer's racecheck reports it as a hazard
  // wherever groups passed their barriers a different number of times
  // (H100, CUDA 13.0: Llama-3-8B down, 224 K-tiles in 12 or 15 groups; not
  // with 8 groups, nor with this loop). A group passes it nk / kSync + nk % kSync
  // times, which does not fall as nk grows by one.
  const auto passes = [](int n) { return n / kSync + n % kSync; };
  for (int b = passes(nk); b < passes(cdiv(k_tiles, kKGroups)); ++b) ptx::bar_sync(1 + group, Cfg::kGroupWarps * 32);

  // ---- the groups' sums, in group order -------------------------------------------
  float* parts = reinterpret_cast<float*>(rows_smem + Cfg::kPartOff);
  const int wrow = wtile * Cfg::BLOCK_N;   // the warp's first row among the CTA's
  if constexpr (Cfg::kPartsOnRing) __syncthreads();   // every group's last stage read
  if (group > 0) {
    float* mine = parts + (group - 1) * Cfg::kRows * Cfg::kPartStride;
    for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) { mine[m * Cfg::kPartStride + wrow + n] = x; });
  }
  __syncthreads();
  if (group == 0) {
    T* c = static_cast<T*>(p.c);
    const float out_scale = cb_max;
    const auto cta_sum = [&](float x, int n, int m) {
#pragma unroll
      for (int q = 0; q < Cfg::kGroups - 1; ++q) x += parts[(q * Cfg::kRows + m) * Cfg::kPartStride + wrow + n];
      return x;
    };
    const float* split = reinterpret_cast<const float*>(rows_smem + Cfg::kSplitOff);
    if constexpr (Cfg::kSplit > 1) {
      const uint32_t bar = ptx::smem_u32(&split_bar);
      if (split_rank > 0) {   // send the CTA's sums (rows m < M) to rank 0's slot split_rank - 1
        ptx::cluster_wait();   // rank 0's mbarrier is initialised
        const uint32_t dst = ptx::mapa_shared(ptx::smem_u32(split + (split_rank - 1) * Cfg::kSplitSlot), 0);
        const uint32_t dst_bar = ptx::mapa_shared(bar, 0);
        for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
          if (m < p.M)
            ptx::st_async_u32(dst + 4u * uint32_t(m * Cfg::kPartStride + wrow + n), __float_as_uint(cta_sum(x, n, m)),
                              dst_bar);
        });
        return;
      }
      if (tid == 0) ptx::mbarrier_arrive(bar);   // (the phase's one arrival; the bytes complete it)
      ptx::mbarrier_wait_parity_cluster(bar, 0);
    }
    for_each_acc<Cfg>(acc, g, t, [&](float& x, int n, int m) {
      float sum = cta_sum(x, n, m);
#pragma unroll
      for (int r = 0; r < Cfg::kSplit - 1; ++r) sum += split[r * Cfg::kSplitSlot + m * Cfg::kPartStride + wrow + n];
      const int row = n0 + n;
      if (m < p.M && row < row_end) c[size_t(m) * p.N + row] = Elem<T>::from_float(sum * out_scale);
    });
  }
}

// Host: the grid for N rows on `sms` SMs (one CTA per SM, fewer where there
// are fewer granules), or 0 where a CTA's share does not fit Cfg (kCtaRows).
inline int rows_grid(int N, int sms, int cta_rows) {
  const int granules = cdiv(N, 16), ctas = sms < granules ? sms : granules;
  return cdiv(granules, ctas) * 16 <= cta_rows ? ctas : 0;
}

// Host: the kernel's parameters for a planned call (launch.cuh RowsRunFn
// launches it: RowsPlanFn raised the kernel's shared-memory limit; grid from
// rows_grid, in clusters of kSplit CTAs where kSplit > 1), or the error.
template <class Cfg>
const char* kbit_rows_params(const KbitParams& kp, int grid, RowsParams* p) {
  if (kp.E != 1 || kp.M > Cfg::kRows || kp.M < 1 || grid < 1) return "kbit_rows: dense layers with at most the configuration's activation rows (16 or 32)";
  if (kp.layout.k_tiles < Cfg::kGroups * Cfg::kSplit) return "kbit_rows: fewer K-tiles than K-groups";
  static_cast<KbitParams&>(*p) = kp;
  p->granules = cdiv(kp.N, 16);
  return nullptr;
}

}  // namespace kbit
