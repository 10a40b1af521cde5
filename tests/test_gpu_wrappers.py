"""PTX wrapper unit tests on the GPU: the MMA fragment order and ldmatrix's
lane/register mapping, with a tiny kernel against torch (skip without CUDA)."""
from pathlib import Path

import pytest
import torch

from conftest import requires_sm80

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def ext():
    import submission as S
    from torch.utils.cpp_extension import load_inline
    cap = torch.cuda.get_device_capability()
    src = ('#include <torch/extension.h>\n' + S._expand("sm80.cuh", set()) +
           (HERE / "ptx_wrappers_test.cu").read_text())
    return load_inline(name="kbit_wrapper_tests_" + S.arch_tag("sm80", cap), cpp_sources=[
        "void mma_fragment(torch::Tensor, torch::Tensor, torch::Tensor);\n"
        "void ldmatrix(torch::Tensor, torch::Tensor);"],
        cuda_sources=[src], functions=["mma_fragment", "ldmatrix"],
        extra_cuda_cflags=S.NVCC_FLAGS + [S.gencode(S.arch_tag("sm80", cap))])


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
