"""submission.py without a GPU: the portable path on every test spec, input
validation (clear ValueErrors), family selection, translation-unit assembly,
and the Blackwell self-check / fallback logic."""
import types
import warnings

import os

import pytest
import torch

import reference as R
import submission as S
from run import clone_input, generate, load_tasks, poison

KBIT_TESTS = load_tasks("kbit_gemm")["tests"]
NVFP4_TESTS = load_tasks("nvfp4_gemv")["tests"]


@pytest.mark.parametrize("spec", KBIT_TESTS + NVFP4_TESTS,
                         ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items() if k not in ("problem", "seed")))
def test_portable_matches_reference(spec, monkeypatch):
    monkeypatch.setenv("KBIT_PORTABLE", "1")
    data = generate(spec, "cpu")
    arg = clone_input(data)
    poison(arg)
    ok, msg = R.check_implementation(data, S.custom_kernel(arg))
    assert ok, msg


def _kbit(**kw):
    spec = dict(m=5, n=40, k=96, bits=3, dtype="float16", experts=3, seed=1)
    spec.update(kw)
    return R.generate_input("kbit_gemm", device="cpu", **spec)


def _replace(data, **kw):
    return data._replace(**kw)


BAD_KBIT = [
    ("a dtype", lambda d: _replace(d, a=d.a.float()), "float16 or bfloat16"),
    ("a rank", lambda d: _replace(d, a=d.a[None]), "2-D"),
    ("K not multiple of 32", lambda d: _replace(d, a=d.a[:, :80].contiguous()), "multiple of 32"),
    ("c rows", lambda d: _replace(d, c=d.c[1:]), "c must be"),
    ("c dtype", lambda d: _replace(d, c=d.c.to(torch.bfloat16)), "dtype"),
    ("b_packed dtype", lambda d: _replace(d, b_packed=d.b_packed.long()), "int32"),
    ("b_packed shape", lambda d: _replace(d, b_packed=d.b_packed[:, :1].contiguous()), "does not match"),
    ("b_absmax", lambda d: _replace(d, b_absmax=d.b_absmax.int()), "uint8"),
    ("codebook length", lambda d: _replace(d, codebook=d.codebook[:5].contiguous()), "codebook"),
    ("codebook dtype", lambda d: _replace(d, codebook=d.codebook.double()), "float32"),
    ("offsets length", lambda d: _replace(d, offsets=d.offsets[:-1].contiguous()), "offsets"),
    ("offsets dtype", lambda d: _replace(d, offsets=d.offsets.long()), "int32"),
    ("offsets values", lambda d: _replace(d, offsets=torch.tensor([0, 3, 2, 5], dtype=torch.int32)), "non-decreasing"),
    ("offsets end", lambda d: _replace(d, offsets=torch.tensor([0, 1, 2, 4], dtype=torch.int32)), "non-decreasing"),
    ("a non-contiguous", lambda d: _replace(d, a=torch.cat([d.a, d.a], 1)[:, ::2]), "contiguous"),
    ("not a tensor", lambda d: _replace(d, codebook=[0.0] * 8), "torch.Tensor"),
]


@pytest.mark.parametrize("name,mutate,match", BAD_KBIT, ids=[b[0] for b in BAD_KBIT])
def test_bad_kbit_input_raises_value_error(name, mutate, match):
    with pytest.raises(ValueError, match=match):
        S.custom_kernel(mutate(_kbit()))


def bad_nvfp4_cases(d):
    """(bad input, message fragment) pairs built from a good nvfp4 input `d`
    (also run on the GPU by test_gpu_kernels, where C++ validates)."""
    fp4 = torch.float4_e2m1fn_x2
    return [(d[:6], "7-tuple"),
            ((d[0].view(torch.uint8).float(),) + d[1:], "float4"),
            (d[:6] + (d[6].float(),), "float16"),
            (d[:2] + (d[2][:, :3],) + d[3:], "sfa"),
            (d[:4] + (d[4].contiguous(),) + d[5:], "blocked"),
            (d[:3] + (d[3].float(),) + d[4:], "sfb"),
            (d[:1] + (d[1][:, :8],) + d[2:], "b must be"),
            (d[:6] + (d[6][:1],), "c must be"),
            ((torch.empty(d[0].shape[0], 100, d[0].shape[2], dtype=torch.uint8, device=d[0].device).view(fp4),)
             + d[1:], "multiple of 64")]


def test_bad_nvfp4_input_raises_value_error():
    d = R.generate_input("nvfp4_gemv", m=128, k=256, l=1, seed=1, device="cpu")
    for data, match in bad_nvfp4_cases(d):
        with pytest.raises(ValueError, match=match):
            S.custom_kernel(data)


def test_empty_m_returns_c():
    d = _kbit(m=0)
    assert S.custom_kernel(d) is d.c and d.c.shape == (0, 40)


def test_family_selection(monkeypatch):
    monkeypatch.delenv("KBIT_PTX_FAMILY", raising=False)
    assert S.family_for((8, 0)) == "sm80" and S.family_for((8, 9)) == "sm80"
    assert S.family_for((9, 0)) == "sm90" and S.family_for((10, 0)) == "sm100"
    assert S.family_for((10, 3)) == "sm100" and S.family_for((12, 0)) == "sm80"
    assert S.family_for((7, 5)) is None
    monkeypatch.setenv("KBIT_PTX_FAMILY", "sm80")
    assert S.family_for((9, 0)) == "sm80" and S.family_for((10, 0)) == "sm80"
    monkeypatch.setenv("KBIT_PTX_FAMILY", "sm90")
    with pytest.raises(ValueError):
        S.family_for((10, 0))
    monkeypatch.setenv("KBIT_PTX_FAMILY", "sm99")
    with pytest.raises(ValueError):
        S.family_for((9, 0))


def test_arch_flags():
    assert S.arch_tag("sm90", (9, 0)) == "90a" and S.arch_tag("sm100", (10, 3)) == "103a"
    assert S.arch_tag("sm80", (9, 0)) == "90" and S.arch_tag("sm80", (8, 6)) == "86"
    assert S.gencode("90a") == "-gencode=arch=compute_90a,code=sm_90a"


@pytest.mark.parametrize("family", S.FAMILIES)
def test_translation_unit_assembly(family):
    src = S.assemble_source(family)
    assert f'#define KBIT_FAMILY "{family}"' in src
    assert "torch/extension.h" not in src and "#pragma once" not in src
    assert src.count("// ---- ptx/common.cuh") == 1                 # each file once
    for f in S.TU_FILES[family]:
        assert f"// ---- ptx/{f}" in src
    assert ("tcgen05.mma" in src) == (family == "sm100")      # the instructions, not the word
    bind = S.assemble_bindings()
    assert "PYBIND11_MODULE" in bind and "namespace kbit_api" in bind


def test_selfcheck_falls_back_on_mismatch(monkeypatch):
    """A tcgen05 path that disagrees with the portable kernel is disabled with a
    warning (simulated: the 'tc' path returns a perturbed answer)."""
    calls = []

    def fake_run(module, problem, data, path):
        out = R.kbit_reference(data).to(data.c.dtype) if problem == "kbit_gemm" else \
            R.nvfp4_reference(data).to(torch.float16)[:, None, :]
        calls.append(path)
        return out * (1.5 if path == 1 else 1.0)

    monkeypatch.setattr(S, "_run_path", fake_run)
    monkeypatch.setattr(S, "_selfcheck_inputs",
                        lambda problem, device, mask=3: [_kbit()] if problem == "kbit_gemm" else
                        [R.generate_input("nvfp4_gemv", m=128, k=256, l=1, seed=1, device="cpu")])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    S._tc_state.clear()
    dev = torch.device("cpu")
    for problem in R.PROBLEMS:
        with pytest.warns(RuntimeWarning, match="disagrees"):
            assert S.tc_path_ok(None, problem, dev) is False
    assert S.tc_path_ok(None, "kbit_gemm", dev) is False           # decided once
    assert 1 in calls and 0 in calls
    S._tc_state.clear()


def test_selfcheck_accepts_agreement_and_catches_errors(monkeypatch):
    monkeypatch.setattr(S, "_selfcheck_inputs", lambda problem, device, mask=3: [_kbit()])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(S, "_run_path", lambda m, p, d, path: R.kbit_reference(d).to(d.c.dtype))
    S._tc_state.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert S.tc_path_ok(None, "kbit_gemm", torch.device("cpu")) is True

    def boom(m, p, d, path):
        if path == 1:
            raise RuntimeError("illegal instruction")
        return R.kbit_reference(d).to(d.c.dtype)

    monkeypatch.setattr(S, "_run_path", boom)
    S._tc_state.clear()
    with pytest.warns(RuntimeWarning, match="illegal instruction"):
        assert S.tc_path_ok(None, "kbit_gemm", torch.device("cpu")) is False
    S._tc_state.clear()


def test_env_reads_follow_changes(monkeypatch):
    """The fast path's environment reads see changes made after import, like
    os.environ.get (monkeypatch, os.environ assignments)."""
    monkeypatch.delenv("KBIT_KERNEL", raising=False)
    assert S._env("KBIT_KERNEL") is None
    monkeypatch.setenv("KBIT_KERNEL", "decode64")
    assert S._env("KBIT_KERNEL") == "decode64" == os.environ.get("KBIT_KERNEL")
    assert S._kbit_path(None, "sm90", None) == 4
    monkeypatch.setenv("KBIT_KERNEL", "tiled")
    assert S._kbit_path(None, "sm90", None) == 2
    monkeypatch.setenv("KBIT_KERNEL", "wgmma")
    assert S._kbit_path(None, "sm90", None) == 5


def test_tuning_defines(monkeypatch):
    """KBIT_DEFINES (A/B builds of compile-time knobs) reaches the translation
    unit as #defines ahead of the ptx/ files, and a malformed value is a clear
    error, not a silently different build."""
    monkeypatch.delenv("KBIT_DEFINES", raising=False)
    assert "KBIT_WG128_WARPS" not in S.assemble_source("sm90").split("// ---- ptx/api.h")[0]
    monkeypatch.setenv("KBIT_DEFINES", "KBIT_WG128_WARPS=8, KBIT_DECODE_STAGES=3")
    head = S.assemble_source("sm90").split("// ---- ptx/api.h")[0]
    assert "#define KBIT_WG128_WARPS 8\n" in head and "#define KBIT_DECODE_STAGES 3\n" in head
    # Both knob variables: one #define per knob, KBIT_DEFINES winning.
    monkeypatch.setenv("KBIT_DECODE_CFG", "8,0,4")
    head = S.assemble_source("sm90").split("// ---- ptx/api.h")[0]
    assert "#define KBIT_DECODE_WARPS 8\n" in head and head.count("KBIT_DECODE_STAGES") == 1
    assert "#define KBIT_DECODE_STAGES 3\n" in head
    monkeypatch.delenv("KBIT_DECODE_CFG")
    for bad in ("WG128_WARPS=8", "KBIT_WG128_WARPS=eight", "KBIT_WG128_WARPS", "KBIT_X=1;rm -rf /"):
        monkeypatch.setenv("KBIT_DEFINES", bad)
        with pytest.raises(ValueError, match="KBIT_DEFINES"):
            S.assemble_source("sm90")


def test_one_dtype_builds(monkeypatch):
    """KBIT_DTYPES=fp16|bf16 builds the kbit kernels of one dtype (a #define
    KBIT_DTYPES mask ahead of the ptx/ files); the Blackwell self-check then
    uses inputs of that dtype only; a bad value is a ValueError."""
    monkeypatch.delenv("KBIT_DEFINES", raising=False)
    monkeypatch.delenv("KBIT_DTYPES", raising=False)
    default = S.assemble_source("sm100")
    assert S.built_dtypes_mask(default) == 3
    for value, mask in (("fp16", 1), ("bf16", 2)):
        monkeypatch.setenv("KBIT_DTYPES", value)
        src = S.assemble_source("sm100")
        assert f"#define KBIT_DTYPES {mask}\n" in src.split("// ---- ptx/api.h")[0]
        assert S.built_dtypes_mask(src) == mask
    monkeypatch.setenv("KBIT_DTYPES", "both")
    assert S.assemble_source("sm100") == default   # the default build's source: no second build
    for mask, dtype in ((1, torch.float16), (2, torch.bfloat16)):
        inputs = S._selfcheck_inputs("kbit_gemm", "cpu", mask)
        assert inputs and all(d.a.dtype == dtype for d in inputs)
        assert any(d.offsets.numel() > 2 for d in inputs)   # a grouped case in each dtype
    monkeypatch.setenv("KBIT_DTYPES", "fp8")
    with pytest.raises(ValueError, match="KBIT_DTYPES"):
        S.assemble_source("sm90")
    # A call in the dtype the module lacks: ValueError before the binding is called.
    bf16_only = types.SimpleNamespace(kbit_dtypes_mask=2)
    S._need_dtype_built(bf16_only, torch.bfloat16)
    with pytest.raises(ValueError, match="without torch.float16 kernels"):
        S._run_path(bf16_only, "kbit_gemm", _kbit(), 0)   # (the namespace has no kbit_gemm to call)


def test_build_says_when_it_compiles(monkeypatch, tmp_path, capsys):
    """A first build (minutes of nvcc) says so on stderr before it starts and
    when it ends; a module already in the build folder loads without a word.
    (load_inline is replaced: nothing is compiled here.)"""
    import torch.utils.cpp_extension as cpp
    built = []

    def fake_load_inline(name, build_directory=None, **kw):
        built.append(name)
        (tmp_path / name / f"{name}.so").write_bytes(b"")   # what a real build leaves
        return types.SimpleNamespace()

    monkeypatch.setattr(cpp, "load_inline", fake_load_inline)
    monkeypatch.setenv("KBIT_BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(S, "_modules", {})
    S.build("sm90", (9, 0))
    err = capsys.readouterr().err
    assert "kbit: compiling the sm90 kernels for 90a" in err and str(tmp_path / built[0]) in err
    assert "sm90 kernels ready after" in err
    monkeypatch.setattr(S, "_modules", {})   # a new process: the module is on disk
    S.build("sm90", (9, 0))
    assert capsys.readouterr().err == "" and len(built) == 2


def test_split_compile_switch(monkeypatch, tmp_path):
    """KBIT_NVCC_SPLIT=N adds nvcc --split-compile=N to the build (and so to its
    cache key); unset, the flags are the module's; a value that is not a count
    is a ValueError before anything builds."""
    import torch.utils.cpp_extension as cpp
    seen = []

    def fake_load_inline(name, extra_cuda_cflags=(), **kw):
        seen.append((name, list(extra_cuda_cflags)))
        return types.SimpleNamespace()

    monkeypatch.setattr(cpp, "load_inline", fake_load_inline)
    monkeypatch.setenv("KBIT_BUILD_DIR", str(tmp_path))
    for value in (None, "4"):
        if value is None:
            monkeypatch.delenv("KBIT_NVCC_SPLIT", raising=False)
        else:
            monkeypatch.setenv("KBIT_NVCC_SPLIT", value)
        monkeypatch.setattr(S, "_modules", {})
        S.build("sm90", (9, 0))
    (name0, flags0), (name1, flags1) = seen
    assert not any(f.startswith("--split-compile") for f in flags0)
    assert flags1 == flags0 + ["--split-compile=4"] and name0 != name1
    monkeypatch.setenv("KBIT_NVCC_SPLIT", "many")
    monkeypatch.setattr(S, "_modules", {})
    with pytest.raises(ValueError, match="KBIT_NVCC_SPLIT"):
        S.build("sm90", (9, 0))
    assert len(seen) == 2
