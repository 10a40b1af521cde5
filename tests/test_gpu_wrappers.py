"""PTX wrapper unit tests on the GPU: the MMA fragment order and ldmatrix's
lane/register mapping, with a tiny kernel against torch, the device-side
FastDiv multiplier against exact integer arithmetic, and the sm90 family's
e4m3 conversion against torch's float8 (skip without CUDA)."""
from pathlib import Path

import pytest
import torch

from conftest import requires_sm80, requires_sm90

HERE = Path(__file__).resolve().parent


def wrapper_test_source(family: str = "sm80", device_only: bool = False) -> str:
    """The extension's CUDA source: a family header (sm80, or sm90 for its
    own wrappers), fastdiv.h and tests/ptx_wrappers_test.cu. device_only: the
    test kernels without torch and the host functions (tests/test_compile.py
    builds both families' that way without a GPU, ~1 s each instead of ~60 s
    of torch headers)."""
    import submission as S
    seen: set = set()   # (fastdiv.h once, whether or not the family header includes it)
    head = "#define KBIT_WRAPPERS_DEVICE_ONLY 1\n" if device_only else "#include <torch/extension.h>\n"
    return (head + S._expand(f"{family}.cuh", seen) + S._expand("fastdiv.h", seen) +
            (HERE / "ptx_wrappers_test.cu").read_text())


@pytest.fixture(scope="module")
def ext():
    import submission as S
    from torch.utils.cpp_extension import load_inline
    cap = torch.cuda.get_device_capability()
    src = wrapper_test_source()
    return load_inline(name="kbit_wrapper_tests_" + S.arch_tag("sm80", cap), cpp_sources=[
        "void mma_fragment(torch::Tensor, torch::Tensor, torch::Tensor);\n"
        "void ldmatrix(torch::Tensor, torch::Tensor);\n"
        "void fastdiv_of(torch::Tensor, torch::Tensor);"],
        cuda_sources=[src], functions=["mma_fragment", "ldmatrix", "fastdiv_of"],
        extra_cuda_cflags=S.NVCC_FLAGS + [S.gencode(S.arch_tag("sm80", cap))])


@pytest.fixture(scope="module")
def ext90():
    import submission as S
    from torch.utils.cpp_extension import load_inline
    cap = torch.cuda.get_device_capability()
    return load_inline(name="kbit_wrapper_tests_" + S.arch_tag("sm90", cap), cpp_sources=[
        "void e4m3_cvt(torch::Tensor);"], cuda_sources=[wrapper_test_source("sm90")], functions=["e4m3_cvt"],
        extra_cuda_cflags=S.NVCC_FLAGS + [S.gencode(S.arch_tag("sm90", cap))])


@requires_sm90
def test_cvt_f16x2_e4m3x2_every_pair(ext90):
    """Every pair of e4m3 codes against torch's float8_e4m3fn, NaNs included
    (the nvfp4 kernel's sfa scales on the sm90 family)."""
    out = torch.full((2 * 65536,), -7.0, device="cuda")
    ext90.e4m3_cvt(out)
    codes = torch.arange(65536)
    lo = (codes & 0xFF).to(torch.uint8).view(torch.float8_e4m3fn).float()
    hi = (codes >> 8).to(torch.uint8).view(torch.float8_e4m3fn).float()
    ref = torch.stack([lo, hi], 1).reshape(-1)
    got = out.cpu()
    nan = torch.isnan(ref)
    assert torch.equal(torch.isnan(got), nan)
    assert torch.equal(got[~nan], ref[~nan])
    assert torch.equal(torch.signbit(got[~nan]), torch.signbit(ref[~nan]))   # -0 stays -0


@requires_sm80
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mma_fragment_order(ext, dtype):
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(16, 16, device="cuda", generator=g).to(dtype)
    B = torch.randn(8, 16, device="cuda", generator=g).to(dtype)    # [n][k]
    D = torch.full((16, 8), float("nan"), device="cuda")
    ext.mma_fragment(A, B, D)
    ref = A.double() @ B.double().T
    torch.testing.assert_close(D.double(), ref, rtol=1e-5, atol=1e-5)


@requires_sm80
def test_ldmatrix_x4_lane_mapping(ext):
    src = torch.arange(32 * 8, dtype=torch.int32, device="cuda").to(torch.int16)
    out = torch.zeros(32, 4, dtype=torch.int32, device="cuda")
    ext.ldmatrix(src, out)
    out = out.cpu().to(torch.int64) & 0xFFFFFFFF
    for lane in range(32):
        for j in range(4):
            row = 8 * j + lane // 4           # matrix j, row lane / 4
            lo = row * 8 + 2 * (lane % 4)     # elements 2 (lane % 4), +1
            assert int(out[lane, j]) == lo | ((lo + 1) << 16), (lane, j)


@requires_sm80
def test_fastdiv_of_on_device(ext):
    """The device builds FastDiv's multiplier from a double-precision quotient
    and one correction step; it must equal ceil(2^shift / d) exactly, the
    value the host computes and tests/test_fastdiv.py checks against `/`."""
    import random
    rng = random.Random(7)
    ds = list(range(1, 70000)) + [(1 << b) + o for b in range(16, 32) for o in (-1, 0, 1)]
    ds += [rng.randrange(1, 1 << 32) for _ in range(200000)] + [0x7FFFFFFF, 0x80000001, 0xFFFFFFFF]
    # (uint32 divisors passed as int32 bit patterns)
    d32 = torch.tensor([x - (1 << 32) if x >= 1 << 31 else x for x in ds], dtype=torch.int32, device="cuda")
    out = torch.zeros(len(ds), 2, dtype=torch.int32, device="cuda")
    ext.fastdiv_of(d32, out)
    got = (out.cpu().to(torch.int64) & 0xFFFFFFFF).tolist()
    bad = []
    for x, (mul, shift) in zip(ds, got):
        l = (x - 1).bit_length()
        want_shift = 31 + l
        want_mul = -(-(1 << want_shift) // x)
        if (mul, shift) != (want_mul, want_shift):
            bad.append((x, mul, shift, want_mul, want_shift))
    assert not bad, f"{len(bad)} divisors wrong, first: {bad[:5]}"
