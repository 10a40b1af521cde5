"""Pure-PyTorch reference for the two problems of this module.

This file is the documentation of the formats: every kernel in `ptx/` reads
exactly what is built here. It is plain, readable PyTorch on purpose.

Problem `kbit_gemm` (SPEC section 3)
    C[M, N] = A[M, K] @ W[N, K]^T, W stored as k-bit codebook indices (k = 2..5)
    in bit planes, one E4M4 scale byte per block of 32 weights along K, E >= 1
    experts (mixture-of-experts layers) selected by row ranges `offsets`.

Problem `nvfp4_gemv` (SPEC section 4)
    The GPU MODE batched scaled GEMV on NVFP4 data (e2m1 values, e4m3 scales per
    16 elements), same input tuple and distributions as their reference.

Public API
    codebook, e4m4_encode, e4m4_decode, quantize, pack_bits, unpack_bits,
    repack, unrepack, dequantize, KbitGemmInput, generate_input, ref_kernel,
    check_implementation, fp4_decode, to_blocked.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Tuple

import torch

BLOCK = 32        # weights per E4M4 scale (one bit-plane word per bit)
TILE_K = 64       # K extent of one tile of the tiled layout (two blocks)
N_ALIGN = 8       # N is padded to a multiple of this in the tiled layout
BITS = (2, 3, 4, 5)


def _default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


# ----------------------------------------------------------------------------
# Codebook
# ----------------------------------------------------------------------------

def codebook(bits: int) -> torch.Tensor:
    """The 2^bits normal-quantile levels, float32, sorted, endpoints exactly +-1.

    c_i = z((i + 0.5) / 2^k) / z((2^k - 0.5) / 2^k), z = standard normal quantile.
    Computed in float64; the two halves are made exact negatives of each other.
    """
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits}")
    n = 1 << bits
    p = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    z = torch.special.ndtri(p)
    c = z / z[-1]
    c = (c - c.flip(0)) / 2          # exact antisymmetry: c[i] == -c[n-1-i]
    return c.to(torch.float32)


# ----------------------------------------------------------------------------
# E4M4 scale byte: (e << 4) | m, bias 11
#   e >= 1: 2^(e-11) * (1 + m/16)      e == 0: 2^-10 * m/16      0x00 -> 0
# ----------------------------------------------------------------------------

def _e4m4_table() -> torch.Tensor:
    codes = torch.arange(256, dtype=torch.int64)
    e = (codes >> 4).to(torch.float64)
    m = (codes & 15).to(torch.float64)
    normal = torch.exp2(e - 11) * (1 + m / 16)
    subnormal = 2.0 ** -10 * m / 16
    return torch.where(codes >= 16, normal, subnormal)   # float64, monotone


_E4M4 = _e4m4_table()
_E4M4_MID = (_E4M4[:-1] + _E4M4[1:]) / 2                  # exact in float64


def e4m4_decode(codes: torch.Tensor) -> torch.Tensor:
    """uint8 codes -> float32 values (exact)."""
    if codes.dtype != torch.uint8:
        raise ValueError(f"e4m4_decode expects uint8 codes, got {codes.dtype}")
    table = _E4M4.to(device=codes.device, dtype=torch.float32)
    return table[codes.long()]


def e4m4_encode(x: torch.Tensor) -> torch.Tensor:
    """float -> uint8 code: round to nearest, ties to the even code (= even
    mantissa, the carry into the exponent included); x <= 0 -> 0x00; saturates
    at 0xFF (31.0). Monotone. NaN raises ValueError."""
    x = torch.as_tensor(x)
    if torch.isnan(x).any():
        raise ValueError("e4m4_encode: NaN input")
    xd = x.to(torch.float64)
    mid = _E4M4_MID.to(xd.device)
    code = torch.searchsorted(mid, xd.contiguous(), right=False)   # number of midpoints < x
    tie = (code < 255) & (mid[code.clamp(max=254)] == xd)
    code = code + (tie & (code % 2 == 1)).long()                     # ties -> even code
    code = torch.where(xd <= 0, torch.zeros_like(code), code)
    return code.to(torch.uint8)


# ----------------------------------------------------------------------------
# Bit planes: a block's k indices -> k uint32 words (stored as int32);
# bit j of word b = bit b of the index of element j.
# ----------------------------------------------------------------------------

def _to_int32(words: torch.Tensor) -> torch.Tensor:
    """int64 values in [0, 2^32) -> int32 with the same bit pattern."""
    return torch.where(words >= 2 ** 31, words - 2 ** 32, words).to(torch.int32)


def pack_bits(idx: torch.Tensor, bits: int) -> torch.Tensor:
    """idx [..., 32] integer indices -> int32 [..., bits] bit-plane words."""
    if idx.shape[-1] != BLOCK:
        raise ValueError("pack_bits expects blocks of 32 indices in the last dimension")
    shifts = torch.arange(BLOCK, device=idx.device, dtype=torch.int64)
    idx = idx.to(torch.int64)
    planes = [(((idx >> b) & 1) << shifts).sum(-1) for b in range(bits)]
    return _to_int32(torch.stack(planes, dim=-1))


def unpack_bits(words: torch.Tensor) -> torch.Tensor:
    """int32 [..., bits] bit-plane words -> int64 [..., 32] indices."""
    bits = words.shape[-1]
    w = words.to(torch.int64) & 0xFFFFFFFF
    j = torch.arange(BLOCK, device=words.device, dtype=torch.int64)
    idx = torch.zeros(words.shape[:-1] + (BLOCK,), dtype=torch.int64, device=words.device)
    for b in range(bits):
        idx |= ((w[..., b, None] >> j) & 1) << b
    return idx


# ----------------------------------------------------------------------------
# Quantizer
# ----------------------------------------------------------------------------

def tensor_scale(amax_max: float) -> float:
    """Per-tensor power of two s = 2^(ceil(log2(max amax)) - 4) (1 for an all-zero
    tensor), so that every amax_b / s lies in E4M4 range (<= 16 <= 31)."""
    if amax_max <= 0:
        return 1.0
    mant, exp = math.frexp(amax_max)          # amax_max = mant * 2^exp, mant in [0.5, 1)
    ceil_log2 = exp - 1 if mant == 0.5 else exp
    return math.ldexp(1.0, ceil_log2 - 4)


def _quantize_blocks(blocks: torch.Tensor, cb: torch.Tensor, s: float,
                     bits: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """blocks float32 [..., 32] -> (packed int32 [..., bits], absmax uint8 [...])."""
    amax = blocks.abs().amax(-1)
    code = e4m4_encode(amax / s)
    unit = e4m4_decode(code).to(torch.float64) * s          # c_i * unit = level i of this block
    # argmin_i |w - c_i * unit|, ties to the lower index, equals the number of
    # midpoints (c_i + c_{i+1}) / 2 strictly below w / unit. In float64 the
    # midpoints are exact and the quotient cannot round onto a midpoint it is not
    # equal to (w has 24 significant bits, unit 5, a midpoint 25), so the count is
    # exact. A block whose scale decodes to 0 makes every level 0: all tie, index 0.
    cmid = ((cb[:-1].double() + cb[1:].double()) / 2).to(blocks.device)
    nonzero = unit > 0
    safe = torch.where(nonzero, unit, torch.ones_like(unit))
    idx = torch.bucketize(blocks.to(torch.float64) / safe[..., None], cmid, right=False)
    idx = torch.where(nonzero[..., None], idx, torch.zeros_like(idx))
    return pack_bits(idx, bits), code


def quantize(w: torch.Tensor, bits: int,
             chunk_elems: int = 1 << 24) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Quantize W [N, K] or [E, N, K] (K a multiple of 32).

    Returns (packed int32 [E, N, K/32, bits], absmax uint8 [E, N, K/32],
    codebook float32 [2^bits]) in the flat layout; the returned codebook is
    codebook(bits) * s (the per-tensor power of two folded in).
    Work is done in chunks of rows on w's device to bound temporary memory.
    """
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits}")
    if w.dim() == 2:
        w = w[None]
    if w.dim() != 3:
        raise ValueError(f"w must be [N, K] or [E, N, K], got shape {tuple(w.shape)}")
    E, N, K = w.shape
    if K % BLOCK != 0:
        raise ValueError(f"K = {K} must be a multiple of {BLOCK}")
    if not torch.isfinite(w).all():
        raise ValueError("w contains NaN or Inf")
    blocks = w.reshape(E * N, K // BLOCK, BLOCK)
    amax_max = 0.0
    rows = max(1, chunk_elems // max(K, 1))
    for r in range(0, E * N, rows):
        amax_max = max(amax_max, float(blocks[r:r + rows].abs().amax()) if K else 0.0)
    s = tensor_scale(amax_max)
    cb = codebook(bits)
    packed = torch.empty(E * N, K // BLOCK, bits, dtype=torch.int32, device=w.device)
    absmax = torch.empty(E * N, K // BLOCK, dtype=torch.uint8, device=w.device)
    for r in range(0, E * N, rows):
        p, a = _quantize_blocks(blocks[r:r + rows].float(), cb, s, bits)
        packed[r:r + rows] = p
        absmax[r:r + rows] = a
    return (packed.reshape(E, N, K // BLOCK, bits), absmax.reshape(E, N, K // BLOCK),
            (cb * s).to(torch.float32))


# ----------------------------------------------------------------------------
# Tiled layout (the kernel input)
#   b_packed int32 [E, K_tiles, N_pad, 2, k], b_absmax uint8 [E, K_tiles, N_pad, 2]
#   element (e, n, kk): b_packed[e, kk // 64, n, (kk % 64) // 32, :], bit kk % 32
#   padding (upper half tile when K % 64 == 32, columns n >= N) is zero.
# ----------------------------------------------------------------------------

def tiled_shape(n: int, k: int) -> Tuple[int, int]:
    """(K_tiles, N_pad) of the tiled layout for an [N, K] weight."""
    return _cdiv(k, TILE_K), _cdiv(n, N_ALIGN) * N_ALIGN


def repack(packed: torch.Tensor, absmax: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """Flat (int32 [E, N, K/32, k], uint8 [E, N, K/32]) -> tiled layout."""
    if packed.dim() == 3:
        packed, absmax = packed[None], absmax[None]
    E, N, KB, bits = packed.shape
    if absmax.shape != (E, N, KB):
        raise ValueError(f"absmax shape {tuple(absmax.shape)} does not match packed {tuple(packed.shape)}")
    k_tiles, n_pad = tiled_shape(N, KB * BLOCK)
    p = torch.zeros(E, n_pad, k_tiles * 2, bits, dtype=torch.int32, device=packed.device)
    a = torch.zeros(E, n_pad, k_tiles * 2, dtype=torch.uint8, device=packed.device)
    p[:, :N, :KB] = packed
    a[:, :N, :KB] = absmax
    b_packed = p.reshape(E, n_pad, k_tiles, 2, bits).permute(0, 2, 1, 3, 4).contiguous()
    b_absmax = a.reshape(E, n_pad, k_tiles, 2).permute(0, 2, 1, 3).contiguous()
    return b_packed, b_absmax


def unrepack(b_packed: torch.Tensor, b_absmax: torch.Tensor, n: int,
             k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Tiled layout -> flat (int32 [E, N, K/32, k], uint8 [E, N, K/32]); bit-exact
    inverse of repack."""
    E, k_tiles, n_pad, two, bits = b_packed.shape
    p = b_packed.permute(0, 2, 1, 3, 4).reshape(E, n_pad, k_tiles * 2, bits)
    a = b_absmax.permute(0, 2, 1, 3).reshape(E, n_pad, k_tiles * 2)
    return p[:, :n, :k // BLOCK].contiguous(), a[:, :n, :k // BLOCK].contiguous()


def dequantize(b_packed: torch.Tensor, b_absmax: torch.Tensor, codebook: torch.Tensor,
               n: int, k: int) -> torch.Tensor:
    """Tiled layout -> float32 [E, N, K]: codebook[idx] * e4m4_decode(byte)."""
    packed, absmax = unrepack(b_packed, b_absmax, n, k)
    idx = unpack_bits(packed)                                   # [E, N, K/32, 32]
    values = codebook.to(packed.device, torch.float32)[idx]
    scale = e4m4_decode(absmax)[..., None]
    return (values * scale).reshape(packed.shape[0], n, k)


# ----------------------------------------------------------------------------
# kbit_gemm: input, generator, reference, checker
# ----------------------------------------------------------------------------

class KbitGemmInput(NamedTuple):
    a: torch.Tensor          # [M, K] float16 / bfloat16, rows grouped by expert
    b_packed: torch.Tensor   # int32 [E, K_tiles, N_pad, 2, k]
    b_absmax: torch.Tensor   # uint8 [E, K_tiles, N_pad, 2]
    codebook: torch.Tensor   # float32 [2^k]
    offsets: torch.Tensor    # int32 [E + 1], expert e owns rows offsets[e]:offsets[e+1]
    c: torch.Tensor          # [M, N] output, same dtype as a


_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def _weights(gen: torch.Generator, e: int, n: int, k: int, device) -> torch.Tensor:
    """Realistic weights for `e` experts: normal, per-row scale spread
    (log-normal around 0.02) and a few outliers (1e-4 of the entries, x8..x20)."""
    w = torch.randn(e, n, k, generator=gen, device=device)
    row = 0.02 * torch.exp(0.4 * torch.randn(e, n, 1, generator=gen, device=device))
    w *= row
    outlier = torch.rand(e, n, k, generator=gen, device=device) < 1e-4
    boost = 8 + 12 * torch.rand(e, n, k, generator=gen, device=device)
    return torch.where(outlier, w * boost, w)


def _generate_kbit(m: int, n: int, k: int, bits: int, dtype: str = "float16",
                   experts: int = 1, seed: int = 0, device=None) -> KbitGemmInput:
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {list(_DTYPES)}, got {dtype!r}")
    if k % BLOCK or k <= 0 or n <= 0 or m < 0 or experts < 1:
        raise ValueError(f"bad shape m={m} n={n} k={k} experts={experts}")
    device = torch.device(device) if device is not None else _default_device()
    tdtype = _DTYPES[dtype]
    gen = torch.Generator(device=device)

    # Weights in chunks of experts (each chunk from its own seeded generator, so
    # the two passes below see the same numbers without holding all of W).
    per_chunk = max(1, (1 << 26) // (n * k))
    chunks = [(e0, min(experts, e0 + per_chunk)) for e0 in range(0, experts, per_chunk)]

    def chunk(i: int) -> torch.Tensor:
        gen.manual_seed(seed * 1000003 + 7919 * i + 1)
        e0, e1 = chunks[i]
        return _weights(gen, e1 - e0, n, k, device)

    amax_max = max(float(chunk(i).abs().amax()) for i in range(len(chunks)))
    s = tensor_scale(amax_max)
    cb = codebook(bits)
    k_tiles, n_pad = tiled_shape(n, k)
    b_packed = torch.empty(experts, k_tiles, n_pad, 2, bits, dtype=torch.int32, device=device)
    b_absmax = torch.empty(experts, k_tiles, n_pad, 2, dtype=torch.uint8, device=device)
    for i, (e0, e1) in enumerate(chunks):
        w = chunk(i)
        packed, absmax = _quantize_blocks(w.reshape(e1 - e0, n, k // BLOCK, BLOCK), cb, s, bits)
        b_packed[e0:e1], b_absmax[e0:e1] = repack(packed, absmax)

    gen.manual_seed(seed * 1000003 + 17)
    host = torch.Generator().manual_seed(seed * 31 + 5)
    a_scale = math.exp(float(torch.empty(()).uniform_(math.log(0.25), math.log(4.0), generator=host)))
    a = (torch.randn(m, k, generator=gen, device=device) * a_scale).to(tdtype)
    if experts == 1:
        counts = torch.tensor([m], dtype=torch.int64)
    else:
        picks = torch.randint(0, experts, (m,), generator=host)
        counts = torch.bincount(picks, minlength=experts)
    offsets = torch.zeros(experts + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(counts, 0).to(torch.int32)
    c = torch.randn(m, n, generator=gen, device=device).mul_(1e4).to(tdtype)   # garbage
    return KbitGemmInput(a, b_packed, b_absmax, (cb * s).to(device), offsets.to(device), c)


def kbit_dims(data: KbitGemmInput) -> dict:
    """Shape facts of a kbit input: m, n, k, bits, experts."""
    return dict(m=data.a.shape[0], k=data.a.shape[1], n=data.c.shape[1],
                bits=data.b_packed.shape[-1], experts=data.b_packed.shape[0])


def kbit_reference(data: KbitGemmInput) -> torch.Tensor:
    """C in float32 (float64 arithmetic on the CPU, float32 without TF32 on CUDA)."""
    d = kbit_dims(data)
    dev = data.a.device
    acc = torch.float64 if dev.type == "cpu" else torch.float32
    out = torch.zeros(d["m"], d["n"], dtype=acc, device=dev)
    offs = data.offsets.tolist()
    prev_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        for e in range(d["experts"]):
            r0, r1 = offs[e], offs[e + 1]
            if r1 <= r0:
                continue
            w = dequantize(data.b_packed[e:e + 1], data.b_absmax[e:e + 1], data.codebook,
                           d["n"], d["k"])[0]
            out[r0:r1] = data.a[r0:r1].to(acc) @ w.to(acc).T
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    return out.to(torch.float32)


# Checker tolerances per output dtype (calibrated in tests/test_checker.py: every
# known-wrong fixture fails, the exact answer rounded to the dtype passes).
#   elem: |out - ref| <= elem * rms(ref) + elem * |ref|    frob: ||out-ref|| / ||ref||
KBIT_TOL = {torch.float16: dict(elem=1e-2, frob=3e-3),
            torch.bfloat16: dict(elem=3e-2, frob=1e-2)}


def _first_indices(mask: torch.Tensor, limit: int = 5) -> list:
    return [tuple(int(v) for v in idx) for idx in mask.nonzero()[:limit].tolist()]


def _check_kbit(data: KbitGemmInput, output) -> Tuple[bool, str]:
    d = kbit_dims(data)
    if not isinstance(output, torch.Tensor):
        return False, f"output is {type(output).__name__}, expected a tensor"
    if tuple(output.shape) != (d["m"], d["n"]):
        return False, f"shape mismatch: got {tuple(output.shape)}, expected {(d['m'], d['n'])}"
    if output.dtype != data.a.dtype:
        return False, f"dtype mismatch: got {output.dtype}, expected {data.a.dtype}"
    if d["m"] == 0:
        return True, "ok (empty output)"
    ref = kbit_reference(data).to(output.device)
    out = output.to(torch.float32)
    bad_nonfinite = ~torch.isfinite(out) & torch.isfinite(ref)
    if bad_nonfinite.any():
        return False, (f"{int(bad_nonfinite.sum())} NaN/Inf where the reference is finite, "
                       f"first at {_first_indices(bad_nonfinite)}")
    tol = KBIT_TOL[output.dtype]
    rms = float(ref.square().mean().sqrt())
    err = (out - ref).abs()
    bound = tol["elem"] * rms + tol["elem"] * ref.abs()
    bad = err > bound
    if bad.any():
        first = _first_indices(bad)
        i, j = first[0]
        return False, (f"{int(bad.sum())} of {bad.numel()} elements off by more than "
                       f"{tol['elem']:g}*(rms + |ref|); first at {first}: got {float(out[i, j]):.6g}, "
                       f"expected {float(ref[i, j]):.6g} (rms {rms:.4g})")
    ref_norm = float(ref.norm())
    rel = float((out - ref).norm()) / ref_norm if ref_norm > 0 else float((out - ref).norm())
    if rel > tol["frob"]:
        return False, f"relative Frobenius error {rel:.3e} > {tol['frob']:g}"
    return True, f"ok (max |err|/rms {float(err.max()) / max(rms, 1e-30):.2e}, rel frob {rel:.2e})"


# ----------------------------------------------------------------------------
# nvfp4_gemv (GPU MODE compatible)
#
# float4_e2m1fn_x2: one byte holds two e2m1 values; the FIRST element (even k) is
# in the LOW nibble (bits 3..0), the second in the high nibble. Checked against
# PyTorch's torch/headeronly/util/Float4_e2m1fn_x2.h ("val1 : val0 = 7654 : 3210")
# and the OCP MX spec section 5.3.3 it cites.
# e2m1 codes: 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6; 8..15 the same negated.
# ----------------------------------------------------------------------------

FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                           -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
SF_VEC = 16          # elements per fp8 scale


def fp4_decode(x: torch.Tensor) -> torch.Tensor:
    """float4_e2m1fn_x2 (or uint8) [..., k/2, ...] along dim 1 -> float32 with that
    dimension doubled (low nibble first)."""
    u = x.view(torch.uint8)
    table = FP4_VALUES.to(u.device)
    lo = table[(u & 0xF).long()]
    hi = table[(u >> 4).long()]
    out = torch.stack([lo, hi], dim=2)                  # [m, k/2, 2, l]
    return out.reshape(u.shape[0], u.shape[1] * 2, *u.shape[2:])


def to_blocked(sf: torch.Tensor) -> torch.Tensor:
    """[rows, cols] scales -> the cuBLAS 128x4 blocked layout, flattened: each
    128-row x 4-column block is 512 bytes, entry (r, c) at (r % 32) * 16 +
    (r % 128 // 32) * 4 + c % 4. Rows/cols are zero-padded to 128 / 4."""
    rows, cols = sf.shape
    rp, cp = _cdiv(rows, 128) * 128, _cdiv(cols, 4) * 4
    padded = torch.zeros(rp, cp, dtype=sf.dtype, device=sf.device)
    padded[:rows, :cols] = sf
    blocks = padded.view(rp // 128, 4, 32, cp // 4, 4).permute(0, 3, 2, 1, 4)
    return blocks.reshape(-1)


def _fp8_codes(codes: torch.Tensor) -> torch.Tensor:
    return codes.to(torch.uint8).view(torch.float8_e4m3fn)


def _scale_tensors(gen: torch.Generator, l: int, mn: int, sf_k: int, device,
                   full_range: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    """(sf [mn, sf_k, l], sf_permuted [32, 4, ceil(mn/128), 4, ceil(sf_k/4), l])."""
    if full_range:
        # positive e4m3 values from 2^-6 to 8 (exponent codes 1..10), any mantissa
        codes = torch.randint(8, 88, (l, mn, sf_k), generator=gen, device=device)
        sf = _fp8_codes(codes)
    else:   # GPU MODE: integer values 0, 1, 2
        sf = torch.randint(0, 3, (l, mn, sf_k), generator=gen, device=device).to(torch.float8_e4m3fn)
    rest_mn, rest_k = _cdiv(mn, 128), _cdiv(sf_k, 4)
    # padded entries keep arbitrary values, as in the GPU MODE generator
    buf = torch.randint(0, 3, (l, rest_mn, rest_k, 32, 4, 4), generator=gen,
                        device=device).to(torch.float8_e4m3fn)
    view = buf.permute(3, 4, 1, 5, 2, 0)        # [32, 4, rest_mn, 4, rest_k, l]
    i = torch.arange(mn, device=device)
    j = torch.arange(sf_k, device=device)
    ii, jj = torch.meshgrid(i, j, indexing="ij")
    sf_mkl = sf.permute(1, 2, 0)                # [mn, sf_k, l]
    view[ii % 32, (ii % 128) // 32, ii // 128, jj % 4, jj // 4, :] = sf_mkl[ii, jj, :]
    return sf_mkl, view


def _generate_nvfp4(m: int, k: int, l: int, seed: int = 0, full_range: bool = False,
                    device=None):
    """(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c) as in GPU MODE nvfp4_gemv:
    a [m, k/2, l] and b [128, k/2, l] float4_e2m1fn_x2 (K-major, L outermost in
    memory), sfa [m, k/16, l] / sfb [128, k/16, l] float8_e4m3fn, the permuted
    copies in the 128x4 blocked layout, c [m, 1, l] float16 (garbage). Unlike GPU
    MODE (which returns sfa/sfb on the CPU) every tensor is on `device`.
    full_range=True draws every fp4 code (both nibbles) and a wide scale range."""
    if k % 64 or m <= 0 or l <= 0:
        raise ValueError(f"bad nvfp4 shape m={m} k={k} l={l} (k must be a multiple of 64)")
    device = torch.device(device) if device is not None else _default_device()
    gen = torch.Generator(device=device).manual_seed(seed)
    hi = 256 if full_range else 4
    a = torch.randint(0, hi, (l, m, k // 2), generator=gen, device=device, dtype=torch.uint8)
    b = torch.randint(0, hi, (l, 128, k // 2), generator=gen, device=device, dtype=torch.uint8)
    a = a.permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
    b = b.permute(1, 2, 0).view(torch.float4_e2m1fn_x2)
    c = torch.randn((l, m, 1), generator=gen, device=device).to(torch.float16).permute(1, 2, 0)
    sf_k = k // SF_VEC
    sfa, sfa_p = _scale_tensors(gen, l, m, sf_k, device, full_range)
    sfb, sfb_p = _scale_tensors(gen, l, 128, sf_k, device, full_range)
    return (a, b, sfa, sfb, sfa_p, sfb_p, c)


def nvfp4_reference(data) -> torch.Tensor:
    """c[:, 0, l] = sum_k a[:, k, l] * sfa[:, k/16, l] * b[0, k, l] * sfb[0, k/16, l],
    float32 [m, l]. Decoded products are exact in float32; the sum is taken in
    float64 on the CPU and float32 on CUDA. Same semantics as torch._scaled_mm
    with nvfp4 block scales (one fp32 accumulation of scaled products)."""
    a, b, sfa, sfb, _, _, c = data
    dev = c.device
    acc = torch.float64 if dev.type == "cpu" else torch.float32
    m, _, l = a.shape
    out = torch.empty(m, l, dtype=torch.float32, device=dev)
    for li in range(l):
        av = fp4_decode(a[:, :, li]) * sfa[:, :, li].to(dev).float().repeat_interleave(SF_VEC, 1)
        bv = fp4_decode(b[0:1, :, li])[0] * sfb[0, :, li].to(dev).float().repeat_interleave(SF_VEC)
        out[:, li] = (av.to(acc) @ bv.to(acc)).to(torch.float32)
    return out


NVFP4_RTOL = NVFP4_ATOL = 1e-3


def _check_nvfp4(data, output) -> Tuple[bool, str]:
    c = data[6]
    if not isinstance(output, torch.Tensor):
        return False, f"output is {type(output).__name__}, expected a tensor"
    if tuple(output.shape) != tuple(c.shape):
        return False, f"shape mismatch: got {tuple(output.shape)}, expected {tuple(c.shape)}"
    if output.dtype != torch.float16:
        return False, f"dtype mismatch: got {output.dtype}, expected torch.float16"
    ref = nvfp4_reference(data).to(output.device)
    out = output[:, 0, :].float()
    bad_nonfinite = ~torch.isfinite(out) & torch.isfinite(ref)
    if bad_nonfinite.any():
        return False, f"NaN/Inf where the reference is finite, first at {_first_indices(bad_nonfinite)}"
    bad = (out - ref).abs() > NVFP4_ATOL + NVFP4_RTOL * ref.abs()
    if bad.any():
        first = _first_indices(bad)
        i, li = first[0]
        return False, (f"{int(bad.sum())} of {bad.numel()} mismatched (rtol=atol=1e-3); first "
                       f"[m, l] at {first}: got {float(out[i, li]):.6g}, expected {float(ref[i, li]):.6g}")
    return True, "ok"


# ----------------------------------------------------------------------------
# Dispatch on the problem / input type
# ----------------------------------------------------------------------------

PROBLEMS = ("kbit_gemm", "nvfp4_gemv")


def generate_input(problem: str = "kbit_gemm", **spec):
    """Build the input of the named problem from a task spec (plain data).
    kbit_gemm: m, n, k, bits, dtype ("float16"|"bfloat16"), experts=1, seed.
    nvfp4_gemv: m, k, l, seed, full_range=False. `device` is optional."""
    spec = {key: v for key, v in spec.items() if key not in ("name", "problem", "cpu")}
    if problem == "kbit_gemm":
        return _generate_kbit(**spec)
    if problem == "nvfp4_gemv":
        return _generate_nvfp4(**spec)
    raise ValueError(f"unknown problem {problem!r}; expected one of {PROBLEMS}")


def problem_of(data) -> str:
    if isinstance(data, KbitGemmInput):
        return "kbit_gemm"
    if isinstance(data, tuple) and len(data) == 7:
        return "nvfp4_gemv"
    raise ValueError(f"input of type {type(data).__name__} is neither KbitGemmInput nor the "
                     f"7-tuple of nvfp4_gemv")


def ref_kernel(data):
    """The reference answer in the output dtype (written into data.c / data[6])."""
    if problem_of(data) == "kbit_gemm":
        out = kbit_reference(data).to(data.c.dtype)
        data.c.copy_(out)
        return data.c
    c = data[6]
    c[:, 0, :] = nvfp4_reference(data).to(torch.float16)
    return c


def check_implementation(data, output) -> Tuple[bool, str]:
    """(ok, message); the message names the first bad indices on failure."""
    if problem_of(data) == "kbit_gemm":
        return _check_kbit(data, output)
    return _check_nvfp4(data, output)
