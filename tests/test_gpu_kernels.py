"""The kernels on the GPU, through check_implementation (skip without CUDA):
every kbit test spec (every k, both dtypes, odd shapes, grouped with empty
experts), every nvfp4 test spec, determinism, CUDA-graph capture, bad offsets;
and the harness's plain-read ceiling kernel."""
import os

import numpy as np
import pytest
import torch

import reference as R
import submission as S
from conftest import requires_sm80
from run import clone_input, generate, load_tasks, poison

KBIT_TESTS = load_tasks("kbit_gemm")["tests"]
NVFP4_TESTS = load_tasks("nvfp4_gemv")["tests"]


def _name(spec):
    return "-".join(f"{k}{v}" for k, v in spec.items() if k not in ("problem", "seed"))


def _outputs(data, runs=3):
    """The outputs of `runs` calls on fresh, poisoned copies of one input."""
    outs = []
    for _ in range(runs):
        arg = clone_input(data)
        poison(arg)
        outs.append(S.custom_kernel(arg).clone())
    return outs


def _check_same_bits(data):
    """Three runs on fresh, poisoned copies: each passes the checker, all give
    the same bits."""
    outs = _outputs(data)
    for out in outs:
        ok, msg = R.check_implementation(data, out)
        assert ok, msg
        assert torch.equal(out, outs[0])


def _run(spec, seed=None):
    data = generate({**spec, **({"seed": seed} if seed is not None else {})}, "cuda")
    arg = clone_input(data)
    poison(arg)
    out = S.custom_kernel(arg)
    torch.cuda.synchronize()
    return data, out


@requires_sm80
@pytest.mark.parametrize("spec", KBIT_TESTS, ids=_name)
def test_kbit_spec(spec):
    assert os.environ.get("KBIT_PORTABLE") != "1"
    data, out = _run(spec)
    ok, msg = R.check_implementation(data, out)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("kernel", ["tiled", "decode", "decode64", "wgmma", "gemv", "rows"])
@pytest.mark.parametrize("spec", [s for s in KBIT_TESTS if s["m"] > 0], ids=_name)
def test_kbit_each_kernel(spec, kernel, monkeypatch):
    """Every kernel at every test shape, whichever the shape rule picks: the
    mma.sync tiled kernel for every M, the decode kernel wherever it applies (at
    most 8 rows per expert, or 16 rows of a dense layer; elsewhere the tiled
    kernel runs), with the warp tile
    the shape rule picks (32 rows at these sizes) and with 64-row tiles, the
    wgmma tiled kernel for every M (sm90 family; elsewhere the shape rule), and
    the CUDA-core kernel wherever it applies (dense, M = 1; elsewhere the
    shape rule), and the row-owning kernel wherever it serves (dense
    M <= 32, sm90 family; elsewhere the shape rule)."""
    monkeypatch.setenv("KBIT_KERNEL", kernel)
    data, out = _run(spec)
    ok, msg = R.check_implementation(data, out)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("kernel", ["decode", "decode64", "gemv", "rows"])
@pytest.mark.parametrize("experts,m,k", [(1, 1, 4128), (1, 3, 4128), (1, 4, 4160), (1, 6, 4160), (1, 11, 4128),
                                          (1, 27, 4160), (16, 1, 4160), (16, 20, 4160)])
def test_kbit_decode_kernel_repeatable_and_graph(experts, m, k, kernel, monkeypatch):
    """The decode kernel's split tiles (warp-level stream-K; CTA slots in the
    workspace for tiles split between CTAs) at a size with many splits, both warp tiles, activations in the ring stages
    (dense m <= 4, also with K % 64 == 32 and fewer rows than the stage holds;
    dense m = 6 with 32-row tiles: 8-row stages; dense m = 11: 16-row slots)
    and in registers (dense m = 6 with 64-row tiles; grouped layers, m = 1 and
    20, always): every run
    passes, and a captured graph replays on new activations and routing. The
    CUDA-core kernel (gemv) takes the dense m = 1 case; the row-owning kernel
    the dense m = 11 and (32-row stages, K permuted by pairs) m = 27 cases."""
    monkeypatch.setenv("KBIT_KERNEL", kernel)
    spec = dict(problem="kbit_gemm", m=m, n=1000, k=k, bits=4, dtype="float16", experts=experts, seed=7)
    data = generate(spec, "cuda")
    arg = clone_input(data)
    for _ in range(3):
        poison(arg)
        ok, msg = R.check_implementation(data, S.custom_kernel(arg))
        assert ok, msg
    _check_graph_replay(spec, data, arg)


def _check_graph_replay(spec, data, arg):
    """Capture one call on `arg` (already warm), write new activations and routing
    into the same buffers, replay, and check against the new input."""
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        S.custom_kernel(arg)
    fresh = generate({**spec, "seed": spec["seed"] + 1}, "cuda")
    arg.a.copy_(fresh.a)
    arg.offsets.copy_(fresh.offsets)
    arg.c.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    check = R.KbitGemmInput(fresh.a, data.b_packed, data.b_absmax, data.codebook, fresh.offsets, arg.c)
    ok, msg = R.check_implementation(check, arg.c)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("spec", NVFP4_TESTS, ids=_name)
def test_nvfp4_spec(spec):
    data, out = _run(spec)
    ok, msg = R.check_implementation(data, out)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("m,n,k,experts", [(1, 8192, 8192, 1), (16, 4096, 14336, 1), (40, 1024, 2048, 512),
                                           (200, 1000, 4160, 1)])
def test_kbit_repeatable(m, n, k, experts):
    """The tiled kernels sum split tiles with fp32 atomics, so the summation
    order may vary between runs (the decode kernel, m = 1 here, adds them in a
    fixed order). The fp32 reordering noise is relative to the partial sums, not
    to the result: near-zero outputs can move by several fp16 ulps. Every run
    passes the checker, and runs differ by at most one ulp of the value plus
    1e-5 of the output's rms."""
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=4, dtype="float16", experts=experts, seed=3)
    data = generate(spec, "cuda")
    outs = _outputs(data)
    for out in outs:
        ok, msg = R.check_implementation(data, out)
        assert ok, msg
    for out in outs[1:]:
        diff = (out.float() - outs[0].float()).abs()
        rms = float(outs[0].float().square().mean().sqrt())
        bound = (torch.finfo(torch.float16).eps * torch.maximum(out.float().abs(), outs[0].float().abs())
                 + 1e-5 * rms)
        assert (diff <= bound).all(), float((diff / bound).max())


@requires_sm80
@pytest.mark.parametrize("kernel", ["decode", "decode64"])
@pytest.mark.parametrize("m,n,k,experts", [(1, 1024, 16384, 1), (4, 1000, 16384, 1), (2, 72, 16384, 1),
                                           (6, 520, 8192, 1), (13, 1000, 16384, 1), (16, 72, 16384, 1),
                                           (1, 1024, 2048, 40)])
def test_kbit_decode_split_tiles_same_bits(kernel, m, n, k, experts, monkeypatch):
    """The decode kernel adds the parts of a tile split between CTAs in CTA order
    (slots in the workspace, not fp32 atomics), so every run gives the same bits:
    dense layers with activations in the ring stages (m <= 4; one row per stage
    at m = 1 with 32-row tiles on 2^24 weights or more; 8-row stages at m = 6
    with 32-row tiles; 16-row slots at m = 13 and 16) and in registers (m = 6
    with 64-row tiles), narrow layers whose few tiles span many CTAs (m = 2,
    16), and a grouped one.
    Between the runs a call of the tiled kernel, which shares the workspace and
    the counters, checks that the decode kernel leaves both zeroed."""
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=4, dtype="float16", experts=experts, seed=5)
    other = generate(dict(problem="kbit_gemm", m=2, n=72, k=16384, bits=4, dtype="float16", experts=1, seed=6),
                     "cuda")
    data = generate(spec, "cuda")
    outs = []
    for _ in range(4):
        monkeypatch.setenv("KBIT_KERNEL", kernel)
        arg = clone_input(data)
        poison(arg)
        outs.append(S.custom_kernel(arg).clone())
        monkeypatch.setenv("KBIT_KERNEL", "tiled")
        arg2 = clone_input(other)
        poison(arg2)
        ok, msg = R.check_implementation(other, S.custom_kernel(arg2))
        assert ok, msg
    for out in outs:
        ok, msg = R.check_implementation(data, out)
        assert ok, msg
        assert torch.equal(out, outs[0])


@requires_sm80
@pytest.mark.parametrize("m,n,k,experts", [(5, 4096, 8192, 1), (8, 4128, 8192, 1), (40, 2048, 544, 16),
                                           (10, 1000, 2048, 512), (1, 4104, 8192, 1)])
def test_kbit_default_rule_shapes(m, n, k, experts, monkeypatch):
    """Shapes the shape rule sends to the decode kernel since v26 (no kernel
    forced): dense layers of at least 2^25 weights at M = 5..8 (32-row warp
    tiles, the 8 activation rows in the ring stages; N = 4128 leaves a
    partial tile) and a grouped layer of 2^25.4 weights over its rows; and
    one it sends to the CUDA-core kernel since v28, a grouped layer of 2^24.3
    (one token's routed experts of Qwen3-Coder-Next, a partial strip); and
    since v35 a dense M = 1 layer of 2^25 weights (k = 4: the decode kernel's
    64-row tiles of 12 warps, one activation row). Every run passes the
    checker and gives the same bits (both kernels add their parts in a fixed
    order)."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=4, dtype="float16", experts=experts, seed=11)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits,m,n,k", [(b, m, n, k) for b in (2, 3, 4, 5) for m, n, k in
                                        ((16, 5128, 2048), (10, 4096, 14336), (13, 14336, 4096))])
def test_kbit_decode_dense16_small_layers(bits, m, n, k, monkeypatch):
    """Dense M = 9..16 on layers of 2^23..2^27 weights (no kernel forced):
    since v38 the decode kernel's 16-row slots in 32-row tiles (16 warps; 12
    at k = 5), before the wgmma kernel, tiles split between up to a few CTAs
    each, their slots read back through the ring. N = 5128 leaves a partial
    tile. Every run passes the checker and gives the same bits."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype="float16", experts=1, seed=19)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("m,n,k", [(12, 4104, 6176), (16, 5128, 2080), (9, 4096, 14336)])
def test_kbit_rows_two_tiles_per_barrier(bits, m, n, k, monkeypatch):
    """The row-owning kernel passing its group barrier once per two K-tiles
    (since v57, k = 2..4, sm90 family): configuration 7 (12 K-groups of one
    warp, at least 8 K-tiles each: 97 and 224 K-tiles here) and 3 (6 K-groups
    of two warps; 33 K-tiles), with K-tile counts that leave some K-groups an
    odd K-tile after their pairs; the first two with K % 64 == 32 and N % 16
    == 8. k = 5 keeps one K-tile per pass. Every run passes the checker and
    gives the same bits."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype="bfloat16" if bits == 3 else "float16",
                experts=1, seed=37)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m,n,k,forced", [(32, 14336, 4096, False), (24, 5128, 2080, False), (17, 520, 2048, False),
                                          (32, 4104, 14336, False), (21, 4104, 6176, False), (20, 8200, 8192, True)])
def test_kbit_rows_32_activation_rows(bits, dtype, m, n, k, forced, monkeypatch):
    """Dense M = 17..32 on the row-owning kernel's 32-row stages: shapes the
    rule gives it (Llama-3-8B gate/up; N % 16 == 8 with K % 64 == 32, so a
    CTA's last warp tile and the last K-tile are partial; a layer of 33
    granules, one per CTA, which since v55 takes 16-row warp tiles
    (configuration 5); since v54 a down projection: 12 K-groups of one warp,
    also at k = 2 and 5) and, forced, a layer of over 2^26 weights (6 K-groups of two
    warps). K is permuted by pairs (the scale applied before the MMA): at k =
    4 since v53, at every k since v54. Since v59 at k = 3 and 4 the 8B gate/up
    (3 x 4) and down (configuration 7: 12 x 1 from 8 K-tiles per K-group; also
    with N % 16 == 8 and K % 64 == 32, M = 21) shapes take pair fields. Every
    run passes the checker and gives the same bits (the K-groups' sums meet in
    a fixed order)."""
    if forced:
        monkeypatch.setenv("KBIT_KERNEL", "rows")
    else:
        monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dtype, experts=1, seed=23)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("m,n,k", [(16, 10552, 2080), (11, 6328, 4096), (32, 10552, 2080), (27, 6328, 2048),
                                   (16, 27448, 2048)])
def test_kbit_rows_ragged_last_tiles(bits, m, n, k, monkeypatch):
    """CTAs of the row-owning kernel whose 32-row warp tiles reach past their
    rows (since v58 a group's tiles are rotated over the schedulers, and 6 x
    2 and the 32-row stages' 3 x 4 compute only the live 16-row tiles): on
    132 SMs N = 10552 gives every CTA 5 granules (80 rows: tiles full, full,
    half, empty; 4 x 4 at M = 16, which computes every tile, 3 x 4 at M =
    32) and N = 6328 gives 3 (48 rows: full, half; 6 x 2); N % 16 == 8
    leaves the last granule half in memory; N = 27448 gives 13 granules (2 x
    7: six and a half tiles). M = 11 and 16 take the 16-row
    stages, 27 and 32 the 32-row stages with K permuted by pairs (K % 64 ==
    32 in two of them). On other SM counts the shares differ; the checks
    hold either way. Every run passes the checker and gives the same bits."""
    monkeypatch.setenv("KBIT_KERNEL", "rows")
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype="bfloat16" if bits == 2 else "float16",
                experts=1, seed=41)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m,n,k", [(32, 1024, 4096), (16, 1000, 4128), (23, 520, 8192)])
def test_kbit_rows_split_k(bits, dtype, m, n, k, monkeypatch):
    """The row-owning kernel with K split over clusters of two CTAs
    (configuration 6, since v55; sm90 family): layers of at most 8 x SMs rows
    with at least 64 K-tiles at M = 9..32 (the Llama-3-8B k/v projection; N %
    16 == 8 with K % 64 == 32; 33 granules). Rank 1 sends its sums to rank 0
    through distributed shared memory and rank 0 adds them after its own, so
    every run passes the checker and gives the same bits. (Other families and
    GPUs whose clusters would not all be resident take other kernels: the
    checks hold either way.)"""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dtype, experts=1, seed=29)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits,m", [(2, 8), (4, 8), (2, 16), (4, 16), (5, 16)])
def test_kbit_decode_few_units_per_warp_same_bits(bits, m, monkeypatch):
    """The decode kernel (forced) on a 5128 x 2048 layer at M = 8 and 16: 32-row
    tiles of 32 K-tiles over ~39 units per CTA, so each warp holds 2-3 units,
    a tile is split between ~13 warps of a CTA and 2-3 CTAs, and N leaves a
    partial tile. Since v38 the 16-row slots come back through the warp's
    ring (finish_spanning_tile_ring), the 8-row slots by register loads.
    (v37 blamed the ring form for bits that changed between runs here; v38
    found that those runs had gone to the tiled and wgmma kernels.) Every
    run passes the checker and gives the same bits."""
    monkeypatch.setenv("KBIT_KERNEL", "decode")
    spec = dict(problem="kbit_gemm", m=m, n=5128, k=2048, bits=bits, dtype="float16", experts=1, seed=19)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits,m", [(b, m) for b in (2, 3, 4, 5) for m in (1, 4, 8, 12, 16) if (b, m) != (5, 8)])
def test_kbit_decode_large_layer(bits, m, monkeypatch):
    """Dense layers of at least 2^27 weights at M <= 16 (no kernel forced): on
    the H100 the decode kernel with 64-row warp tiles, since v35 with 12 warps
    at k = 4 (one activation row per ring stage at M = 1, four at M = 4, eight
    at M = 8) and at k = 5, M = 1 (one row), and with the eight rows in the
    stages at M = 8 for k = 2 and 3 (16 warps); k = 5 at M = 4 keeps 32-row
    tiles; since v36 at M = 9..16 16-row slots with the rows in the stages
    (12 warps; 64-row tiles, at k = 5 32-row). (k = 5 at M = 8 goes to the
    tiled kernel, whose split-tile sums may differ in the last bits between
    runs: test_kbit_repeatable.) N = 16392 leaves a partial tile. Every run passes the checker and gives the same
    bits."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=16392, k=8192, bits=bits, dtype="float16", experts=1, seed=17)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits,m,n,k,dtype", [(4, 1, 8192, 16416, "float16"), (4, 4, 8192, 16416, "float16"),
                                              (4, 8, 8192, 16416, "float16"), (4, 16, 8192, 16416, "float16"),
                                              (4, 12, 8192, 16416, "bfloat16"), (2, 4, 8192, 16416, "float16"),
                                              (3, 1, 8192, 16416, "float16"), (5, 1, 8192, 16416, "float16"),
                                              (4, 1, 4096, 8224, "float16"), (4, 8, 4096, 8224, "float16"),
                                              (4, 13, 4096, 8224, "float16"),
                                              (4, 1, 28672, 4704, "float16"), (4, 8, 28672, 4704, "bfloat16"),
                                              (4, 16, 28672, 4704, "float16"), (3, 4, 28672, 4704, "float16"),
                                              (4, 4, 14336, 4128, "float16"), (4, 16, 14336, 4128, "bfloat16")])
def test_kbit_decode_aligned_grid(bits, m, n, k, dtype, monkeypatch):
    """Dense layers whose tile count a grid of 96-100 % of the SMs divides
    (no kernel forced; launch.cuh, decode_aligned_grid, since v46): on a
    132-SM GPU N = 8192 gives 128 tiles of 64 rows on layers of 2^27+
    weights, N = 4096 128 tiles of 32 rows (at M = 1 by the 32-row
    preference where only they align), so each of 128 CTAs takes whole
    tiles and no tile is split between CTAs; tiles split between the warps
    of a CTA remain. At M = 12 and 16 on 64-row tiles (one per CTA) their
    parts are added by helper warps (decode_helpers), in fp16 and bf16.
    Since v47, N = 28672 at k = 4, M = 1 and 8 (448 tiles of 64 rows, 2^27+
    weights) and N = 14336 at M = 4 and 16 (448 tiles of 32 rows) run on 128
    CTAs in clusters of two (on GPUs with clusters and 132 SMs): each pair
    takes 7 whole tiles, and the one its CTAs share is added through
    distributed shared memory (decode_pair_ctas, finish_pair). N = 28672 at
    M = 16 (16-row slots in 64-row tiles) and at k = 3, M = 4 (helper sums)
    keep the full grid and the workspace slots: the same layers on the
    other path.
    K % 64 == 32 leaves a half K-tile. Every run passes the checker and gives
    the same bits."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dtype, experts=1, seed=23)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("m,n,k,dtype", [(1, 16392, 8224, "float16"), (1, 16392, 8192, "bfloat16"),
                                         (3, 16904, 8224, "float16"), (6, 16904, 8224, "bfloat16"),
                                         (8, 16904, 8192, "float16")])
def test_kbit_decode_k2_tile128(m, n, k, dtype, monkeypatch):
    """k = 2 on layers of 2^27+ weights (no kernel forced): the decode kernel's
    128-row warp tiles (12 warps, 2 stages) at M = 1 since v43 (one activation
    row per ring stage) and at M = 2..8 since v44 where every CTA has a tile
    (4 or 8 rows per stage; N = 16904 is 133 tiles, one more than an H100's or
    H200's SMs; test_decode_rule.py checks the choices). N = 16392 and 16904
    leave a last tile of 8 rows, K = 8224 (K % 64 == 32) a last K-tile of one
    block; M = 3 and 6 leave rows of the stages unused. Every run passes the
    checker and gives the same bits."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=2, dtype=dtype, experts=1, seed=23)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("experts,m,n,k", [(1, 1, 1000, 4128), (1, 1, 72, 96), (1, 1, 520, 2080), (1, 1, 4096, 2048),
                                           (1, 1, 8, 32), (1, 1, 264, 16384), (1, 1, 8, 53248), (1, 3, 520, 2080),
                                           (64, 10, 1000, 2080), (3, 20, 72, 96), (512, 4, 72, 1056)])
def test_kbit_gemv_kernel(bits, dtype, experts, m, n, k, monkeypatch):
    """The CUDA-core kernel (KBIT_KERNEL=gemv) at every k and both dtypes: a
    last strip of 8 columns (N = 1000, 72, 8, 264), K % 64 == 32 (4128, 96,
    2080), fewer K-tiles than warps (K = 32, 96), many K-tiles per warp
    (16384); grouped layers with mostly empty experts (64 and 512 experts:
    the expert search spans 3 and 17 groups of 32 offsets) and with
    several rows per expert (3 experts, 20 rows); and where it does not
    apply, so that the choice by shape runs: K = 53248, whose fp32
    activations do not fit one CTA's shared memory, and dense M = 3. Every run
    passes the checker and gives the same bits (the warps' sums are added in
    a fixed order)."""
    monkeypatch.setenv("KBIT_KERNEL", "gemv")
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dtype, experts=experts, seed=13)
    _check_same_bits(generate(spec, "cuda"))


@requires_sm80
@pytest.mark.parametrize("kernel", ["tiled", "decode", "decode64", "wgmma"])
def test_kbit_split_tiles_many_contributors(kernel, monkeypatch):
    """Stress of the split-tile arrival protocols (tiled kernels: workspace
    adds and one acq_rel counter atomic per warp or CTA; decode kernel: CTA
    slots and one relaxed count per CTA): a narrow, deep layer splits each of its
    few tiles among a hundred or more contributors, which arrive at nearly the
    same time. Twenty back-to-back calls without a host sync in between, each
    on a poisoned output, all pass the checker."""
    monkeypatch.setenv("KBIT_KERNEL", kernel)
    spec = dict(problem="kbit_gemm", m=2, n=72, k=16384, bits=4, dtype="float16", experts=1, seed=9)
    data = generate(spec, "cuda")
    outs = []
    for _ in range(20):
        arg = clone_input(data)
        poison(arg)
        outs.append(S.custom_kernel(arg))
    torch.cuda.synchronize()
    for out in outs:
        ok, msg = R.check_implementation(data, out)
        assert ok, msg


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("experts,m,n", [(1, 200, 1000), (2, 300, 520)])
def test_kbit_wgmma_128_row_tiles(bits, experts, m, n, monkeypatch):
    """The wgmma kernel's 128-row tiles (sm90 family; elsewhere the shape
    rule) at every k, both ways they run: a dense layer of at most one wave of
    tiles takes 8 MMA warps and one CTA per tile (forced: at any fill), a
    grouped layer 12 MMA warps and stream-K. Both with the copy warpgroup."""
    monkeypatch.setenv("KBIT_KERNEL", "wgmma")
    spec = dict(problem="kbit_gemm", m=m, n=n, k=544, bits=bits, dtype="bfloat16" if bits % 2 else "float16",
                experts=experts, seed=11)
    data, out = _run(spec)
    ok, msg = R.check_implementation(data, out)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
@pytest.mark.parametrize("m,n", [(20, 200), (20, 700), (50, 200), (50, 700)])
def test_kbit_wgmma_tiles_per_warp(bits, m, n, monkeypatch):
    """The wgmma kernel's wide tiles at 17..64 rows (sm90 family; elsewhere
    the shape rule): forced, two 16-row tiles per MMA warp where N < 512 and
    three where N >= 512, at 32- and 64-row activation tiles, every k."""
    monkeypatch.setenv("KBIT_KERNEL", "wgmma")
    spec = dict(problem="kbit_gemm", m=m, n=n, k=800, bits=bits, dtype="float16" if bits % 2 else "bfloat16",
                experts=1, seed=12)
    data, out = _run(spec)
    ok, msg = R.check_implementation(data, out)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("m,n,k,bits,dtype", [(64, 5120, 2048, 4, "float16"), (56, 5128, 2080, 3, "bfloat16"),
                                              (128, 2056, 5120, 5, "float16"), (48, 2048, 4128, 2, "bfloat16"),
                                              (100, 1032, 2080, 4, "bfloat16")])
def test_kbit_wgmma_aligned_grid(m, n, k, bits, dtype):
    """Dense layers of fewer 64-row tiles than CTAs at two CTAs per SM (the
    Qwen3-Coder-Next sizes at 33..128 rows; the choice by shape takes the
    wgmma kernel in the sm90 family): with KBIT_WGMMA_ALIGNED_GRID a whole
    number of CTAs per tile (on 132 SMs 240, 246, 238, 256 and 252 CTAs here;
    tests/test_wgmma_table.py checks the grids on the host), partial tiles in
    N and K included. Two runs, each checked."""
    spec = dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dtype, experts=1, seed=21)
    data = generate(spec, "cuda")
    for out in _outputs(data, runs=2):
        ok, msg = R.check_implementation(data, out)
        assert ok, msg


@requires_sm80
@pytest.mark.parametrize("bits", [4, 5])
@pytest.mark.parametrize("rows,n", [(40, 520), (70, 200)])
def test_kbit_wgmma_many_experts(bits, rows, n, monkeypatch):
    """512 experts (Qwen3-Coder-Next's count) with `rows` tokens each on
    average, through the wgmma kernel's configurations of one CTA per SM
    (forced; sm90 family): three 16-row tiles per warp at 64-row activation
    tiles, and 128-row tiles of 12 warps. Their pair tables (k = 4: 64 KB;
    k = 5: 64 or 128 KB, wgmma_k5_copies) leave room for a slot table of 512
    experts and more (tests/test_wgmma_table.py checks 1024 on the host)."""
    monkeypatch.setenv("KBIT_KERNEL", "wgmma")
    spec = dict(problem="kbit_gemm", m=512 * rows, n=n, k=256, bits=bits, dtype="float16" if bits == 5 else "bfloat16",
                experts=512, seed=13)
    data, out = _run(spec)
    ok, msg = R.check_implementation(data, out)
    assert ok, msg


@requires_sm80
@pytest.mark.parametrize("experts", [1, 64])
def test_kbit_cuda_graph(experts):
    """The call captures into a CUDA graph (no host sync, no allocation) and replays
    correctly on new activations and new routing written into the same buffers."""
    spec = dict(problem="kbit_gemm", m=32, n=1536, k=2048, bits=4, dtype="bfloat16", experts=experts, seed=5)
    data = generate(spec, "cuda")
    arg = clone_input(data)
    S.custom_kernel(arg)                      # warm: build, workspace
    _check_graph_replay(spec, data, arg)


@requires_sm80
@pytest.mark.parametrize("kernel", ["tiled", "decode", "decode64", "wgmma", "gemv"])
@pytest.mark.parametrize("experts,m,offsets", [(4, 20, [0, 5, 3, 12, 20]), (4, 20, [1, 5, 9, 12, 20]),
                                              (4, 20, [0, 5, 9, 12, 19]), (1, 3, [0, 2]), (1, 200, [0, 100])])
def test_kbit_bad_offsets_are_loud(kernel, experts, m, offsets, monkeypatch):
    """Offsets that do not partition the rows: the kernel writes NaN everywhere
    (no host sync by default); with KBIT_VALIDATE_OFFSETS=1 a ValueError. The
    grouped cases break each check of the slot table: a decreasing pair, a first
    offset past 0, a last short of M. (The tiled kernels place a dense layer's
    tiles by M, not by its offsets: 200 rows with offsets {0, 100} span several
    slots that the offsets do not describe.)"""
    monkeypatch.setenv("KBIT_KERNEL", kernel)
    data = generate(dict(problem="kbit_gemm", m=m, n=64, k=1024, bits=3, dtype="float16", experts=experts,
                         seed=1), "cuda")
    bad = R.KbitGemmInput(*data[:4], torch.tensor(offsets, dtype=torch.int32, device="cuda"),
                          data.c.clone())
    out = S.custom_kernel(bad)
    torch.cuda.synchronize()
    assert torch.isnan(out).all()
    os.environ["KBIT_VALIDATE_OFFSETS"] = "1"
    try:
        with pytest.raises(ValueError, match="offsets"):
            S.custom_kernel(bad)
    finally:
        del os.environ["KBIT_VALIDATE_OFFSETS"]


@requires_sm80
def test_kbit_misaligned_c_raises_value_error():
    """C must be 16-byte aligned (the tiled kernels' epilogues store 4-byte
    column pairs and, in the wgmma kernel, 16-byte pieces of whole rows): a
    contiguous view two bytes into a buffer is refused before any launch."""
    d = R.generate_input("kbit_gemm", m=64, n=264, k=1024, bits=4, dtype="float16", seed=3, device="cuda")
    buf = torch.empty(d.c.numel() + 8, dtype=d.c.dtype, device="cuda")
    c = buf[1:1 + d.c.numel()].view(d.c.shape)
    with pytest.raises(ValueError, match="c must be 16-byte aligned"):
        S.custom_kernel(R.KbitGemmInput(*d[:5], c))
    torch.cuda.synchronize()


@requires_sm80
def test_bad_nvfp4_input_raises_value_error_on_gpu():
    """nvfp4 on the GPU validates in C++: the CPU test's bad inputs raise
    ValueError with the same fragments, and so do scales the kernel cannot
    read (plain sfa not usable and its blocked copy on the CPU)."""
    from test_submission_cpu import bad_nvfp4_cases
    d = R.generate_input("nvfp4_gemv", m=128, k=256, l=2, seed=1, device="cuda")
    cases = bad_nvfp4_cases(d)
    row_major_sfa = d[2].contiguous()          # stride 2 along k/16: the kernel cannot read it
    cases.append((d[:2] + (row_major_sfa, d[3], d[4].cpu()) + d[5:], "not readable"))
    for data, match in cases:
        with pytest.raises(ValueError, match=match):
            S.custom_kernel(data)
        torch.cuda.synchronize()


@requires_sm80
def test_nvfp4_blocked_scales_path():
    """Where plain sfa / sfb cannot be read (row-major [rows, k/16, l]: stride l
    along k/16), the kernel reads the blocked copies: same result."""
    d = R.generate_input("nvfp4_gemv", m=300, k=2048, l=3, seed=4, full_range=True, device="cuda")
    want = S.custom_kernel(tuple(t.clone() for t in d)).clone()
    got = S.custom_kernel(d[:2] + (d[2].contiguous(), d[3].contiguous()) + d[4:6] + (d[6].clone(),))
    torch.cuda.synchronize()
    assert torch.equal(got, want)


@requires_sm80
@pytest.mark.parametrize("k,offset", [(2048, 4), (2048, 2), (1088, 0)])
def test_nvfp4_scale_paths(k, offset):
    """Plain sfa whose rows are 16-byte aligned (k % 256 == 0) is staged in
    shared memory a CTA's rows at a time; other plain sfa is loaded by each
    lane. The per-lane cases: sfa moved to a 4-byte (two chunks per lane
    element, as staged: the same bits) or 2-byte offset (one chunk per element),
    and k = 1088 (17 pieces of 64: rows of 68 bytes)."""
    d = R.generate_input("nvfp4_gemv", m=300, k=k, l=3, seed=5, full_range=True, device="cuda")
    want = S.custom_kernel(tuple(t.clone() for t in d)).clone()
    ok, msg = R.check_implementation(d, want)
    assert ok, msg
    if offset == 0:
        return
    m, ks, l = d[2].shape
    raw = torch.zeros(offset + l * m * ks, dtype=torch.uint8, device="cuda")
    sfa = raw[offset:].view(l, m, ks).permute(1, 2, 0)        # the strides of d[2], base moved by offset
    sfa.copy_(d[2].view(torch.uint8))
    sfa = sfa.view(torch.float8_e4m3fn)
    assert sfa.stride() == d[2].stride() and sfa.data_ptr() % 16 == offset
    got = S.custom_kernel(d[:2] + (sfa,) + d[3:6] + (d[6].clone(),))
    torch.cuda.synchronize()
    if offset == 4:
        assert torch.equal(got, want)
    ok, msg = R.check_implementation(d, got)
    assert ok, msg


@requires_sm80
def test_bad_input_raises_value_error_on_gpu():
    """The GPU fast path validates in C++: the same bad inputs as the CPU tests
    raise ValueError (no launch, no illegal access)."""
    from test_submission_cpu import BAD_KBIT
    for name, mutate, match in BAD_KBIT:
        print("bad input case:", name, flush=True)
        data = R.generate_input("kbit_gemm", m=5, n=40, k=96, bits=3, dtype="float16", experts=3, seed=1,
                                device="cuda")
        bad = mutate(R.KbitGemmInput(*(t if not isinstance(t, torch.Tensor) or t.is_cuda else t.cuda()
                                       for t in data)))
        if name == "offsets values" or name == "offsets end":
            bad = bad._replace(offsets=bad.offsets.cuda())
            continue    # values: checked on the device (NaN output) unless KBIT_VALIDATE_OFFSETS=1
        with pytest.raises(ValueError, match=match):
            S.custom_kernel(bad)
        torch.cuda.synchronize()


def _xor_words(t: torch.Tensor) -> int:
    return int(np.bitwise_xor.reduce(t.view(torch.int32).cpu().numpy().astype(np.uint32)))


@requires_sm80
@pytest.mark.parametrize("nbytes", [16, 16 * 1000, 16 * 999_983, 64 << 20])
def test_plain_read_reads_every_word(nbytes):
    """plain_read, the harness's streaming ceiling, reads every word of its
    buffer: the xor of its CTAs' checksums is the xor of all words (sizes that
    leave threads without a load, a partial last round, full rounds)."""
    gen = torch.Generator(device="cuda").manual_seed(nbytes)
    buf = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda", generator=gen)
    out = torch.zeros(S.plain_read_ctas(buf.device), dtype=torch.int32, device="cuda")
    S.plain_read(buf, out)
    assert _xor_words(out) == _xor_words(buf)
    g = torch.cuda.CUDAGraph()          # capturable, as the harness times it
    with torch.cuda.graph(g):
        S.plain_read(buf, out)
    out.zero_()
    g.replay()
    torch.cuda.synchronize()
    assert _xor_words(out) == _xor_words(buf)


@requires_sm80
def test_plain_read_bad_input_raises_value_error():
    buf = torch.zeros(4096, dtype=torch.uint8, device="cuda")
    out = torch.zeros(S.plain_read_ctas(buf.device), dtype=torch.int32, device="cuda")
    for bad, o in ((buf[1:17], out), (buf[:15], out), (buf.view(torch.int32), out), (buf, out[:1]),
                   (buf, out.to(torch.int64))):
        with pytest.raises(ValueError, match="plain_read"):
            S.plain_read(bad, o)


ONE_DTYPE_PROGRAM = r"""
import sys, torch
import reference as R, submission as S
from run import clone_input, poison
for m, e in ((1, 1), (16, 1), (40, 3)):       # decode / tiled / grouped paths of the sm80 family
    data = R.generate_input("kbit_gemm", m=m, n=264, k=320, bits=4, dtype="bfloat16", experts=e, seed=5,
                            device="cuda")
    arg = clone_input(data)
    poison(arg)
    ok, msg = R.check_implementation(data, S.custom_kernel(arg))
    assert ok, msg
data = R.generate_input("kbit_gemm", m=16, n=264, k=320, bits=4, dtype="float16", experts=1, seed=5, device="cuda")
before = data.c.clone()
try:
    S.custom_kernel(data)
except ValueError as exc:
    assert "without torch.float16 kernels" in str(exc), exc
else:
    sys.exit("an fp16 call on a bf16-only build did not raise")
torch.cuda.synchronize()
assert torch.equal(data.c.view(torch.int16), before.view(torch.int16)), "the refused call wrote C"
print("one-dtype build ok")
"""


@requires_sm80
def test_one_dtype_build():
    """KBIT_DTYPES=bf16 (the sm80 family, its own build: ~1-2 minutes the first
    time): bf16 calls pass the checker, an fp16 call is a ValueError that
    leaves C as it was. In a subprocess: a process keeps its first build."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "KBIT_DTYPES": "bf16", "KBIT_PTX_FAMILY": "sm80",
           "PYTHONPATH": os.pathsep.join([root, os.path.join(root, "eval")])}
    env.pop("KBIT_KERNEL", None)
    proc = subprocess.run([sys.executable, "-c", ONE_DTYPE_PROGRAM], env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0 and "one-dtype build ok" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-4000:]
