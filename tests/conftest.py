import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "eval"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
requires_sm80 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 0),
                                   reason="needs a CUDA GPU of compute capability >= 8.0")
requires_sm90 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                                   reason="needs a CUDA GPU of compute capability >= 9.0 (the sm90 family)")


def build_host_program(tmp_path_factory, name, source):
    """Compiles `source` (a host program over the ptx/ headers, for tests that run
    launch-plan code without a GPU) with nvcc for sm_80 and returns the
    executable's path; skips the test where nvcc is missing. The program runs
    no device code, so its device pass compiles nothing (#ifndef __CUDA_ARCH__
    around all of it): ~3 s less of one core per build than the whole of the
    headers through cicc; and its host code is not optimised (-O0: 5.6 -> 5.1 s
    per build, v61). The families' builds compile the device code."""
    import shutil
    import subprocess
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc")
    d = tmp_path_factory.mktemp(name)
    (d / f"{name}.cu").write_text(f"#ifndef __CUDA_ARCH__\n{source}\n#endif\n")
    subprocess.run([nvcc, "-std=c++17", "-O0", "-arch=sm_80", "--expt-relaxed-constexpr", f"-I{ROOT / 'ptx'}",
                    str(d / f"{name}.cu"), "-o", str(d / name)], check=True)
    return d / name


def pytest_collection_modifyitems(session, config, items):
    """tests/test_compile.py's tests go last: they wait for the nvcc builds
    (pytest_collection_finish starts them), and every other module's CPU tests
    then run while the builds do, instead of after them (~1.5 minutes of one
    core in CI)."""
    items.sort(key=lambda item: item.module is not None and item.module.__name__ == "test_compile")


def pytest_collection_finish(session):
    """Start tests/test_compile.py's nvcc builds as soon as the tests are
    collected: they take most of CI's time (2 cores) and run in threads beside
    the other tests, which then no longer wait in front of them. (Not for
    --collect-only, which runs no test.)"""
    if session.config.option.collectonly:
        return
    for item in session.items:
        if item.module is not None and item.module.__name__ == "test_compile":
            item.module.start_builds(session.items)
            return
