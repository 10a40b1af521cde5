"""The kbit format (SPEC 3.1) and the nvfp4 helpers of reference.py, on the CPU."""
import math

import pytest
import torch

import reference as R


def test_codebook_values_match_spec():
    torch.testing.assert_close(R.codebook(2), torch.tensor([-1.0, -0.2769936, 0.2769936, 1.0]),
                               rtol=0, atol=1e-6)
    first_half = torch.tensor([-1, -0.7075688, -0.5422091, -0.4168189, -0.3109047, -0.2159463,
                               -0.127341, -0.0420954])
    torch.testing.assert_close(R.codebook(4)[:8], first_half, rtol=0, atol=1e-6)


@pytest.mark.parametrize("bits", R.BITS)
def test_codebook_shape_symmetry_order(bits):
    c = R.codebook(bits)
    assert c.dtype == torch.float32 and c.numel() == 1 << bits
    assert c[0] == -1 and c[-1] == 1
    assert torch.equal(c, -c.flip(0))
    assert (c[1:] > c[:-1]).all() and (c != 0).all()


def test_codebook_rejects_bad_bits():
    for bits in (1, 6):
        with pytest.raises(ValueError):
            R.codebook(bits)


def test_e4m4_every_code_round_trips():
    codes = torch.arange(256, dtype=torch.uint8)
    assert torch.equal(R.e4m4_encode(R.e4m4_decode(codes)), codes)


def test_e4m4_decode_formula():
    v = R.e4m4_decode(torch.tensor([0x00, 0x01, 0x0F, 0x10, 0xB0, 0xB8, 0xFF], dtype=torch.uint8))
    exp = torch.tensor([0.0, 2 ** -10 / 16, 2 ** -10 * 15 / 16, 2 ** -10, 1.0, 1.5, 31.0])
    torch.testing.assert_close(v, exp, rtol=0, atol=0)


def test_e4m4_encode_monotone_saturating_ties():
    x = torch.linspace(-1, 40, 100001)
    codes = R.e4m4_encode(x)
    assert (codes[1:] >= codes[:-1]).all()
    assert codes[x <= 0].eq(0).all() and codes[x >= 31].eq(255).all()
    v = R.e4m4_decode(torch.arange(256, dtype=torch.uint8)).double()
    mids = (v[:-1] + v[1:]) / 2
    got = R.e4m4_encode(mids).long()
    lo = torch.arange(255)
    assert torch.equal(got, torch.where(lo % 2 == 0, lo, lo + 1))    # ties -> even code
    assert int(R.e4m4_encode(torch.tensor(1.99))) == 0xC0            # carry into the exponent
    with pytest.raises(ValueError):
        R.e4m4_encode(torch.tensor(float("nan")))


def test_tensor_scale():
    assert R.tensor_scale(0.0) == 1.0
    assert R.tensor_scale(1.0) == 2.0 ** -4
    assert R.tensor_scale(1.0001) == 2.0 ** -3
    assert R.tensor_scale(0.75) == 2.0 ** -4


def _brute_force_indices(w, cb, unit):
    """argmin_i |w - c_i * unit| in float64, ties to the lower index."""
    levels = cb.double()[None, :] * unit.double()[:, None]           # [blocks, L]
    dist = (w.double()[:, :, None] - levels[:, None, :]).abs()       # [blocks, 32, L]
    return dist.argmin(-1)                                            # first minimum = lower index


@pytest.mark.parametrize("bits", R.BITS)
def test_quantize_matches_definition(bits):
    g = torch.Generator().manual_seed(bits)
    w = torch.randn(24, 256, generator=g) * 0.05
    w[0, :32] = 0                                                    # an all-zero block
    w[1, :32] = torch.linspace(-1, 1, 32) * w.abs().max()            # exact extremes
    packed, absmax, cb = R.quantize(w, bits)
    assert packed.shape == (1, 24, 8, bits) and absmax.shape == (1, 24, 8) and cb.numel() == 1 << bits
    s = R.tensor_scale(float(w.abs().max()))
    torch.testing.assert_close(cb, R.codebook(bits) * s, rtol=0, atol=0)
    blocks = w.reshape(-1, 32)
    codes = R.e4m4_encode(blocks.abs().amax(-1) / s)
    assert torch.equal(absmax.reshape(-1), codes)
    unit = R.e4m4_decode(codes).double() * s
    idx = R.unpack_bits(packed.reshape(-1, bits))
    assert torch.equal(idx, _brute_force_indices(blocks, R.codebook(bits), unit))


def test_quantize_ties_go_to_the_lower_index():
    cb = R.codebook(2)
    w = torch.zeros(1, 32)
    w[0, 0] = 1.0                                                    # amax 1 -> s = 2^-4, byte 16.0
    w[0, 1] = float((cb[1] + cb[2]) / 2)                             # exactly between levels 1 and 2 (= 0)
    w[0, 2] = 1e-30                                                  # just above the tie
    packed, absmax, _ = R.quantize(w, 2)
    idx = R.unpack_bits(packed.reshape(-1, 2))[0]
    assert float(w[0, 1]) == 0.0 and int(idx[1]) == 1 and int(idx[2]) == 2


@pytest.mark.parametrize("bits,min_db", [(2, 5), (3, 10), (4, 15), (5, 20)])
def test_sqnr_on_normal_data(bits, min_db):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(1024, 1024, generator=g)
    packed, absmax, cb = R.quantize(w, bits)
    bp, ba = R.repack(packed, absmax)
    deq = R.dequantize(bp, ba, cb, 1024, 1024)[0]
    sqnr = 10 * math.log10(float(w.square().sum() / (w - deq).square().sum()))
    assert sqnr >= min_db, sqnr


@pytest.mark.parametrize("bits", R.BITS)
def test_per_block_dequant_error_bound(bits):
    g = torch.Generator().manual_seed(bits)
    w = torch.randn(64, 512, generator=g) * torch.exp(torch.randn(64, 1, generator=g))
    packed, absmax, cb = R.quantize(w, bits)
    deq = R.dequantize(*R.repack(packed, absmax), cb, 64, 512)[0]
    c = R.codebook(bits)
    max_gap = float((c[1:] - c[:-1]).max())
    amax = w.reshape(64, 16, 32).abs().amax(-1, keepdim=True)
    err = (w - deq).reshape(64, 16, 32).abs()
    assert (err <= (max_gap / 2 + 1 / 16) * amax + 1e-6).all()


def test_pack_unpack_round_trip():
    g = torch.Generator().manual_seed(1)
    for bits in R.BITS:
        idx = torch.randint(0, 1 << bits, (7, 5, 32), generator=g)
        words = R.pack_bits(idx, bits)
        assert words.dtype == torch.int32 and words.shape == (7, 5, bits)
        assert torch.equal(R.unpack_bits(words), idx)
    idx = torch.zeros(32, dtype=torch.int64)
    idx[3] = 0b101
    w = R.pack_bits(idx, 3)
    assert w.tolist() == [1 << 3, 0, 1 << 3]          # bit j of word b = bit b of element j


@pytest.mark.parametrize("seed", range(6))
def test_repack_round_trip_with_padding(seed):
    g = torch.Generator().manual_seed(seed)
    E = int(torch.randint(1, 4, (1,), generator=g))
    N = int(torch.randint(1, 40, (1,), generator=g))
    K = 32 * int(torch.randint(1, 7, (1,), generator=g))
    bits = R.BITS[seed % 4]
    packed = torch.randint(-2 ** 31, 2 ** 31 - 1, (E, N, K // 32, bits), generator=g, dtype=torch.int64).to(torch.int32)
    absmax = torch.randint(0, 256, (E, N, K // 32), generator=g).to(torch.uint8)
    bp, ba = R.repack(packed, absmax)
    k_tiles, n_pad = R.tiled_shape(N, K)
    assert bp.shape == (E, k_tiles, n_pad, 2, bits) and ba.shape == (E, k_tiles, n_pad, 2)
    p2, a2 = R.unrepack(bp, ba, N, K)
    assert torch.equal(p2, packed) and torch.equal(a2, absmax)
    # element (e, n, kk) lives where the SPEC says; padding is zero
    for e, n, kk in ((0, 0, 0), (E - 1, N - 1, K - 1), (E // 2, N // 2, K // 2)):
        assert torch.equal(bp[e, kk // 64, n, (kk % 64) // 32], packed[e, n, kk // 32])
    assert bp[:, :, N:].eq(0).all() and ba[:, :, N:].eq(0).all()
    if K % 64 == 32:
        assert bp[:, -1, :, 1].eq(0).all() and ba[:, -1, :, 1].eq(0).all()


def test_generate_input_kbit_properties():
    d = R.generate_input("kbit_gemm", m=50, n=20, k=96, bits=3, dtype="bfloat16", experts=9, seed=3,
                         device="cpu")
    assert d.a.dtype == torch.bfloat16 and d.c.dtype == torch.bfloat16 and d.a.shape == (50, 96)
    assert d.b_packed.shape == (9, 2, 24, 2, 3) and d.offsets.tolist()[0] == 0 and d.offsets.tolist()[-1] == 50
    assert (d.offsets[1:] >= d.offsets[:-1]).all()
    counts = (d.offsets[1:] - d.offsets[:-1]).tolist()
    again = R.generate_input("kbit_gemm", m=50, n=20, k=96, bits=3, dtype="bfloat16", experts=9, seed=3,
                             device="cpu")
    assert all(torch.equal(x, y) for x, y in zip(d[:5], again[:5]))                  # reproducible
    big = R.generate_input("kbit_gemm", m=8, n=8, k=64, bits=4, dtype="float16", experts=64, seed=1, device="cpu")
    assert 0 in (big.offsets[1:] - big.offsets[:-1]).tolist()                          # empty experts occur
    assert sum(counts) == 50
    with pytest.raises(ValueError):
        R.generate_input("kbit_gemm", m=1, n=8, k=48, bits=4, dtype="float16", seed=0, device="cpu")
    with pytest.raises(ValueError):
        R.generate_input("no_such_problem", m=1)


# ---- nvfp4 -------------------------------------------------------------------

def test_fp4_decode_low_nibble_first():
    x = torch.tensor([[[0x21]], [[0xF7]]], dtype=torch.uint8)            # [2, 1, 1]
    v = R.fp4_decode(x.view(torch.float4_e2m1fn_x2))
    assert v.shape == (2, 2, 1)
    assert v[0, :, 0].tolist() == [0.5, 1.0] and v[1, :, 0].tolist() == [6.0, -6.0]


def test_to_blocked_layout():
    rows, cols = 200, 6
    sf = torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)
    flat = R.to_blocked(sf)
    rest = R._cdiv(cols, 4)
    for r, c in ((0, 0), (5, 3), (37, 2), (130, 5), (199, 4)):
        off = ((r // 128) * rest + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4
        assert flat[off] == sf[r, c]


@pytest.mark.parametrize("full_range", [False, True])
def test_generate_nvfp4_layouts(full_range):
    m, k, l = 200, 320, 3
    a, b, sfa, sfb, sfa_p, sfb_p, c = R.generate_input("nvfp4_gemv", m=m, k=k, l=l, seed=5,
                                                       full_range=full_range, device="cpu")
    assert a.shape == (m, k // 2, l) and a.dtype == torch.float4_e2m1fn_x2 and a.stride() == (k // 2, 1, m * k // 2)
    assert b.shape == (128, k // 2, l) and c.shape == (m, 1, l) and c.dtype == torch.float16
    assert sfa.shape == (m, k // 16, l) and sfa_p.shape == (32, 4, 2, 4, 5, l)
    for li in range(l):                                          # permuted copy = blocked layout of sfa
        flat = sfa_p[..., li].permute(2, 4, 0, 1, 3).reshape(-1).view(torch.uint8)
        ref = R.to_blocked(sfa[:, :, li].contiguous().view(torch.uint8))
        n = m * 0 + ref.numel()
        blocked = torch.zeros_like(ref)
        blocked[:] = flat[:n]
        keep = R.to_blocked(torch.ones(m, k // 16, dtype=torch.uint8)).bool()
        assert torch.equal(blocked[keep], ref[keep])
    nib = torch.cat([a.view(torch.uint8).flatten() & 15, a.view(torch.uint8).flatten() >> 4]).unique()
    if full_range:
        assert nib.numel() == 16
    else:
        assert set(nib.tolist()) <= {0, 1, 2, 3}


def test_nvfp4_reference_small_by_hand():
    a = torch.zeros(1, 32, 1, dtype=torch.uint8)
    a[0, 0, 0] = 0x32          # elements 0, 1 = 1.0, 1.5
    b = torch.zeros(128, 32, 1, dtype=torch.uint8)
    b[0, 0, 0] = 0x24          # elements 0, 1 = 2.0, 1.0
    sfa = torch.full((1, 4, 1), 2.0).to(torch.float8_e4m3fn)
    sfb = torch.full((128, 4, 1), 0.5).to(torch.float8_e4m3fn)
    data = (a.view(torch.float4_e2m1fn_x2), b.view(torch.float4_e2m1fn_x2), sfa, sfb, None, None,
            torch.zeros(1, 1, 1, dtype=torch.float16))
    out = R.nvfp4_reference(data)
    assert float(out[0, 0]) == (1.0 * 2 * 2.0 * 0.5) + (1.5 * 2 * 1.0 * 0.5)
