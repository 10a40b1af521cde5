"""Where event time exceeds graph time: one benchmark case timed four ways
(medians of 50, µs), for the default kernels and for KBIT_KERNEL=tiled.
  flush+call   L2 flush, then events around the call (the harness's way)
  sync+call    flush, synchronize, then events around the call (GPU idle at launch)
  call only    events around back-to-back calls, no flush
  flush only   events around the flush, for scale
Usage: python3 scripts/launch_gap.py CASE [CASE ...]"""
import os
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))
import submission as S  # noqa: E402
from run import Timer, generate, load_tasks  # noqa: E402

flush = Timer(torch.device("cuda")).flush   # the harness's L2 flush


def timed(fn, pre=None, sync=False, n=50):
    out = []
    for _ in range(n):
        if pre:
            pre()
        if sync:
            torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        out.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in out)


for name in sys.argv[1:]:
    spec = next(s for s in load_tasks("kbit_gemm")["benchmarks"] if s["name"] == name)
    data = generate(spec, "cuda")
    for kernel in ("default", "tiled"):
        if kernel == "tiled":
            os.environ["KBIT_KERNEL"] = "tiled"
        else:
            os.environ.pop("KBIT_KERNEL", None)
        call = lambda: S.custom_kernel(data)  # noqa: E731
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        print(f"{name:34s} {kernel:8s} flush+call {timed(call, flush):8.2f}  sync+call {timed(call, flush, True):8.2f}"
              f"  call only {timed(call):8.2f}  flush only {timed(flush):8.2f}", flush=True)
os.environ.pop("KBIT_KERNEL", None)
