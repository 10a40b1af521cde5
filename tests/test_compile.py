"""Compile mode without a GPU: every PTX family builds with nvcc for its targets
with no spills, and a planted spill or syntax error fails loudly.

The long builds (the families' translation units, the standalone tools, the
wrapper tests' kernels: ~15 minutes of one core on a slow CI machine) are one
nvcc process each. pytest runs tests one after another, so they start together
in a pool of one worker per core when the first of them is asked for
(`start_builds`), longest first, and each test waits for its own; only the
builds of selected tests run. conftest.py starts them when collection ends and
runs this module's tests last, so the builds run beside the other modules' CPU
tests.

To keep CI under 10 minutes on 2 cores, the families build for the targets
SPEC §2 names (sm_80, sm_90a, sm_100a; `eval/run.py --mode compile` builds
sm_103a as well; the sm80 family in fp16 only and the sm90 family as its two
one-dtype halves, CI_DTYPES), a family's object build compiles its host code at
-O0 (HOST_FLAGS) and writes no line tables (LINEINFO), the tools build through
unoptimised PTX and without host code generation (tc_bench once, with its
phase hooks, -DTC_PHASES: the same kernels plus the hooks), and the wrapper
tests' kernels build without torch's headers."""
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import run
import submission as S

ROOT = Path(__file__).resolve().parent.parent
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

TOOLS = ["nvfp4_bench", "gemv_bench", "l2_flush_check", "stream_probe", "racecheck_probe",
         "tc_bench -DTC_PHASES", "tc_bench -DTC_WGMMA_ONLY", "wgmma_rate", "wgmma_overlap", "wgmma_ss_overlap",
         "cluster_reduce", "dequant_rate"]
CI_TARGETS = {"80", "90a", "100a"}   # SPEC §2 (every family has one of them)
WRAPPER_ARCHES = [("sm80", "sm_80"), ("sm90", "sm_90a")]
# Seconds of one core each build took on a 2-core machine (v61; sm100 v50): the pool
# starts the longest first, so the last to finish are short ones.
_COST = {("family", "sm90", "90a", 1): 225, ("family", "sm90", "90a", 2): 225, ("family", "sm100", "100a", 3): 150,
         ("family", "sm80", "80", 1): 85,
         ("tool", "tc_bench -DTC_PHASES"): 32, ("tool", "nvfp4_bench"): 5}


# The families' object builds: host code at -O0 (g++ takes the last -O). The
# device code, and so its registers and spills, is the same as load_inline's
# (-O3); the host code is still compiled, only not optimised. The sm90
# family's object build (281 kernels) took 342 s this way, beside a second
# build, against 387 s at -O3 alone; its device code alone took 322 s (v55,
# 2 cores). Its registers, spills, stack and shared memory were the same.
HOST_FLAGS = ["-Xcompiler", "-O0"]
# Nor do they write line tables (-lineinfo): the sm80 family's 121 kernels had
# the same registers, spills, stack and shared memory without them, and its
# ptxas took 46 s instead of 50 (v61, 2 cores).
LINEINFO = False


# Tools built to unoptimised PTX only: ptxas (CUDA 13.0) crashes on tc_bench's
# unoptimised PTX (segmentation fault, at -O0 and -O3 alike).
PTX_ONLY_TOOLS = {"tc_bench"}


def _tool_build(tool: str):
    """nvcc of scripts/<tool>.cu (with its -D flags) through unoptimised PTX
    (cicc -O0) to a cubin for sm_90a, or to the PTX for PTX_ONLY_TOOLS, in a
    temporary folder: (returncode, stderr). The front end checks all of the
    file's C++ (host code included: a planted host error fails it), every
    inline-asm operand reaches the PTX and ptxas assembles it; left out are
    cicc's optimiser and the host code's code generation, the two costs of a
    tool's build (the kernels' instructions are the families' wrappers, which
    the family builds optimise). 2-core machine (v61), one core each: the
    eight tools 88 s with both, 49 s without (tc_bench -DTC_PHASES 32 s of it)."""
    name, *defines = tool.split()
    out = ["--ptx"] if name in PTX_ONLY_TOOLS else ["-cubin"]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(["nvcc", *out, "-Xcicc", "-O0", "-std=c++17",
                               "-gencode", "arch=compute_90a,code=sm_90a", *defines, "--expt-relaxed-constexpr",
                               f"-I{ROOT / 'ptx'}", f"-I{ROOT / 'scripts'}",
                               "-o", str(Path(tmp) / "tool.out"), str(ROOT / "scripts" / f"{name}.cu")],
                              capture_output=True, text=True)
    return proc.returncode, proc.stderr


def _wrapper_build(family: str, arch: str):
    """nvcc -cubin of the GPU wrapper tests' kernels (their source without torch
    and the host functions): (returncode, stderr)."""
    from test_gpu_wrappers import wrapper_test_source
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "wrappers.cu"
        src.write_text(wrapper_test_source(family, device_only=True))
        proc = subprocess.run(["nvcc", "-cubin", "-O1", "-std=c++17", f"-arch={arch}",
                               "-o", str(Path(tmp) / "w.cubin"), str(src)], capture_output=True, text=True)
    return proc.returncode, proc.stderr


# The KBIT_DTYPES masks (ptx/common.cuh: 1 fp16, 2 bf16, 3 both) each family is
# built with in CI, one build per mask, all in the pool at once.
# * sm90 as its two one-dtype halves: it is the longest build (307 kernels;
#   ~360-470 s of one core on a 2-core machine, against ~150 s for the next),
#   and one process for all of it left one core idle for the last ~2.5 minutes
#   of CI. The halves together are the same kernels as the whole: each kernel
#   is compiled on its own, and (v61, 2 cores) the two halves' ptxas reports
#   were the whole build's, kernel by kernel. Each half compiles all the host
#   code, with the other dtype's dispatch arms returning an error.
# * sm80 in fp16 only: with both halves of sm90 CI was bound by its CPU time
#   (~17 minutes of user time in ~9.3 minutes on 2 cores, v61), so one family
#   gives up a dtype. The fp16 and bf16 instances of a configuration had the
#   same registers, spills, stack and shared memory in every one of sm90's
#   151 pairs and in 57 of sm80's 58 (the k = 5 CUDA-core kernel: 64 registers
#   in fp16, 63 in bf16), so fp16, the larger there, stands for both.
#   `eval/run.py --mode compile` still builds every family whole.
# * sm100 whole: it has never run on a GPU, so its build is its only check.
CI_DTYPES = {"sm90": (1, 2), "sm80": (1,)}
DTYPE_HALVES = {f for f, masks in CI_DTYPES.items() if sorted(masks) == [1, 2]}


def _family_keys(family: str) -> list:
    """The builds of a family in CI: one per target of run.compile_jobs among
    CI_TARGETS and KBIT_DTYPES mask of CI_DTYPES (the key's last field)."""
    masks = CI_DTYPES.get(family, (3,))
    return [("family", f, a, m) for f, a, _ in run.compile_jobs([family]) if a in CI_TARGETS for m in masks]


def _keys_of(item) -> list:
    """The builds a collected test of this module needs."""
    name = getattr(item, "originalname", item.name)
    params = getattr(getattr(item, "callspec", None), "params", {})
    if name == "test_family_compiles_without_spills":
        return _family_keys(params["family"])
    if name == "test_standalone_tool_compiles":
        return [("tool", params["tool"])]
    if name == "test_gpu_wrapper_tests_compile":
        return [("wrappers", params["family"])]
    return []


def _run_build(key):
    if key[0] == "family":
        (job,) = [j for j in run.compile_jobs([key[1]]) if j[1] == key[2]]
        flags = (HOST_FLAGS if job[2] else []) + ([f"-DKBIT_DTYPES={key[3]}"] if key[3] != 3 else [])
        return run.compile_job(job, flags, lineinfo=LINEINFO)
    if key[0] == "tool":
        return _tool_build(key[1])
    return _wrapper_build(key[1], dict(WRAPPER_ARCHES)[key[1]])


_pool = None      # the builds' pool, once started
_futures: dict = {}


def start_builds(items) -> None:
    """Submits every build the selected tests of this module need (`items`: the
    session's), longest first, to a pool of one worker per core; once. Called
    by conftest.py when collection ends, so the builds run beside the other
    modules' tests, and by `builds` otherwise."""
    global _pool
    if _pool is not None or shutil.which("nvcc") is None:
        return
    keys = []
    for item in items:
        if item.module is not None and item.module.__name__ == __name__:
            keys += [k for k in _keys_of(item) if k not in keys]
    if not keys:
        return
    keys.sort(key=lambda k: -_COST.get(k, 5))
    _pool = ThreadPoolExecutor(max_workers=max(1, min(len(keys), os.cpu_count() or 1)))
    _futures.update({k: _pool.submit(_run_build, k) for k in keys})


@pytest.fixture(scope="module")
def builds(request):
    """key -> Future of that build's result, for every build the selected tests
    of this module need (start_builds)."""
    start_builds(request.session.items)
    yield _futures
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)


PLANTED_SPILL = r"""
__global__ void planted_spill(float* out, int n) {
  float v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = out[(i * 977 + threadIdx.x) % n];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 48; ++i)
#pragma unroll
    for (int j = 0; j < 48; ++j) s = fmaf(v[i], v[j] + s, s);
  out[threadIdx.x] = s;
}
"""


def test_compile_log_names_cut_or_whole(monkeypatch):
    """The compile table cuts names at 70 characters; --wide (wide=True) keeps
    them whole, so that instances of one template can be told apart."""
    monkeypatch.setattr(run, "demangle", lambda names: names)   # (as without cu++filt)
    name = "_ZN4kbit18kbit_decode_kernelINS_12DecodeConfigILi4E13__nv_bfloat16Li16ELi4ELi2ELi0ELin1EEEEEv"
    rep = run.KernelReport(name=name, arch="90a", registers=122)
    result = (("sm90", "90a", False), 0, "", [rep], 1.0)
    for wide in (False, True):
        lines = []
        assert run.log_compile_result(result, lines.append, wide)
        row = next(l for l in lines if "kbit_decode_kernel" in l)
        assert (name in row) == wide and name[:70] in row and row.split()[-4] == "122"


@needs_nvcc
def test_planted_spill_fails():
    rc, text, reports = run.compile_source(PLANTED_SPILL, "80", extra_flags=["-maxrregcount=24"])
    assert rc == 0 and reports and reports[0].spill_stores > 0
    assert not run.report_ok(rc, reports)


@needs_nvcc
def test_planted_syntax_error_fails():
    rc, text, reports = run.compile_source("__global__ void broken( { }", "80")
    assert rc != 0 and "error" in text
    assert not run.report_ok(rc, reports)


@needs_nvcc
@pytest.mark.parametrize("family", S.FAMILIES)
def test_family_compiles_without_spills(family, builds):
    lines = []
    ok = True
    for key in _family_keys(family):
        ok = run.log_compile_result(builds[key].result(), lines.append) and ok
    assert ok, "\n".join(lines)
    assert any("kbit_gemm_kernel" in l or "kbit_gemm" in l for l in lines)
    # A one-dtype build has none of the other dtype's kbit kernels (mangled
    # __half: 6__half); the two halves of a family have as many each.
    own = {1: "6__half", 2: "__nv_bfloat16"}
    kbit = {}
    for key in _family_keys(family):
        names = [r.name for r in builds[key].result()[3]]
        if key[3] != 3:
            assert not any(own[3 - key[3]] in n for n in names), key
            kbit[key[3]] = sum(own[key[3]] in n for n in names)
    assert family not in DTYPE_HALVES or kbit[1] == kbit[2] > 0, kbit


@needs_nvcc
def test_compile_mode_exit_code_on_planted_error(tmp_path, monkeypatch):
    """--mode compile exits non-zero when a family's source does not build."""
    bad = tmp_path / "ptx"
    shutil.copytree(ROOT / "ptx", bad)
    with open(bad / "sm80.cuh", "a") as f:
        f.write("\nthis is not C++;\n")
    code = ("import sys; sys.argv=['run.py','--mode','compile','--family','sm80'];"
            f"import submission as S; from pathlib import Path; S.PTX = Path(r'{bad}');"
            "import run; sys.exit(run.main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "eval", capture_output=True, text=True,
                          env={**__import__('os').environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'eval'}"})
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "FAILED" in proc.stdout


@needs_nvcc
@pytest.mark.parametrize("tool", TOOLS)
def test_standalone_tool_compiles(tool, builds):
    """The standalone tools in scripts/ (nvfp4, CUDA-core and tensor-core kernel
    tuning, the L2 flush check, the streaming probe, the racecheck probe, the
    wgmma microbenchmarks, the split-tile epilogue miniature, the
    dequantization stage alone; they share
    scripts/bench_util.cuh and ptx/) build
    against the current ptx/ headers, so they cannot silently rot. tc_bench
    twice: its full case list (with the phase hooks), and the wgmma cases
    alone (-DTC_WGMMA_ONLY, scripts/wg_breakdown.sh and tc_ab.sh; ~5 s). (The wgmma
    tools need compute_90a PTX: `-arch=sm_90a` gives a .target sm_90 that
    ptxas rejects for wgmma.)"""
    rc, err = builds[("tool", tool)].result()
    assert rc == 0, err


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts").glob("*.sh")))
def test_device_script_parses(script):
    """The device scripts (scripts/*.sh: device_run.sh, wg_breakdown.sh,
    tc_ab.sh) parse (bash -n), so a typo fails here and not in a device call."""
    proc = subprocess.run(["bash", "-n", str(ROOT / "scripts" / script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@needs_nvcc
@pytest.mark.parametrize("family,arch", WRAPPER_ARCHES)
def test_gpu_wrapper_tests_compile(family, arch, builds):
    """The GPU wrapper tests' kernels (tests/ptx_wrappers_test.cu with a family
    header and fastdiv.h, without torch and the host functions: -cubin in ~1 s
    instead of ~60 with torch's headers) compile here, so a broken test kernel
    shows up in CI rather than in a device session. The host functions are
    compiled where the tests run, on a GPU."""
    rc, err = builds[("wrappers", family)].result()
    assert rc == 0, err[-3000:]
