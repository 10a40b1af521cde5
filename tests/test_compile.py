"""Compile mode without a GPU: every PTX family builds with nvcc for its targets
with no spills, and a planted spill or syntax error fails loudly."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import run
import submission as S

ROOT = Path(__file__).resolve().parent.parent
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")

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
def test_family_compiles_without_spills(family):
    lines = []
    assert run.run_compile([family], lines.append), "\n".join(lines)
    assert any("kbit_gemm_kernel" in l or "kbit_gemm" in l for l in lines)


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
@pytest.mark.parametrize("tool", ["nvfp4_bench", "gemv_bench", "l2_flush_check", "stream_probe", "racecheck_probe",
                                  "tc_bench", "tc_bench -DTC_PHASES", "wgmma_rate", "wgmma_overlap"])
def test_standalone_tool_compiles(tool, tmp_path):
    """The standalone tools in scripts/ (nvfp4, CUDA-core and tensor-core kernel
    tuning, the L2 flush check, the streaming probe, the racecheck probe, the
    wgmma microbenchmarks; they share scripts/bench_util.cuh and ptx/) build
    against the current ptx/ headers, so they cannot silently rot. (The wgmma
    tools need compute_90a PTX: `-arch=sm_90a` gives a .target sm_90 that
    ptxas rejects for wgmma.)"""
    tool, *defines = tool.split()
    wgmma = tool in ("tc_bench", "wgmma_rate", "wgmma_overlap")
    arch = ["-gencode", "arch=compute_90a,code=sm_90a"] if wgmma else ["-arch=sm_90a"]
    proc = subprocess.run(["nvcc", "-O1", "-std=c++17", *arch, *defines, "--expt-relaxed-constexpr",
                           f"-I{ROOT / 'ptx'}", f"-I{ROOT / 'scripts'}",
                           "-o", str(tmp_path / tool), str(ROOT / "scripts" / f"{tool}.cu")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@needs_nvcc
@pytest.mark.parametrize("family,arch", [("sm80", "sm_80"), ("sm90", "sm_90a")])
def test_gpu_wrapper_tests_compile(tmp_path, family, arch):
    """The GPU wrapper tests' extension source (tests/ptx_wrappers_test.cu with
    a family header and fastdiv.h) compiles here (device code, -cubin: ~25 s
    instead of ~65 with the host compile of the torch headers), so a broken
    test kernel shows up in CI rather than in a device session."""
    import sysconfig
    from torch.utils.cpp_extension import include_paths
    from test_gpu_wrappers import wrapper_test_source
    src = tmp_path / "wrappers.cu"
    src.write_text(wrapper_test_source(family))
    incs = [f"-I{p}" for p in include_paths() + [sysconfig.get_paths()["include"]]]
    proc = subprocess.run(["nvcc", "-cubin", "-O1", "-std=c++17", f"-arch={arch}", *incs, "-o", str(tmp_path / "w.cubin"),
                           str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
