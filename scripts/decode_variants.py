"""Tuning experiment for the decode kernel: build variants of (warps per CTA,
16-row tiles per warp, ring depth) in parallel, then graph-time each on a few
benchmark cases (L2 flushed; µs, median of 5 graph replays of 20 calls).
A variant "tiled" times the tiled GEMM kernel (KBIT_KERNEL=tiled) instead.
Usage: python3 scripts/decode_variants.py "16,4,4 20,4,3 tiled" case [case ...]"""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))
import submission as S  # noqa: E402
from run import Timer, generate, load_tasks  # noqa: E402

variants = sys.argv[1].split()
cases = sys.argv[2:]


def prebuild(cfg):
    env = dict(os.environ, **({} if cfg == "tiled" else {"KBIT_DECODE_CFG": cfg}))
    r = subprocess.run([sys.executable, "-c", "import torch, submission as S; S._module_for(torch.device('cuda'))"],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    return cfg, r.returncode, r.stderr[-2000:]


with ThreadPoolExecutor(len(variants)) as ex:
    for cfg, rc, err in ex.map(prebuild, variants):
        print(f"built {cfg}: rc={rc}", err if rc else "", flush=True)

timer = Timer(torch.device("cuda"))
specs = {s["name"]: s for s in load_tasks("kbit_gemm")["benchmarks"]}
print(f"{'case':34s}" + "".join(f"{v:>12s}" for v in variants))
datas = {c: generate(specs[c], "cuda") for c in cases}
rows = {c: [] for c in cases}
for cfg in variants:
    os.environ.pop("KBIT_KERNEL", None)
    os.environ.pop("KBIT_DECODE_CFG", None)
    if cfg == "tiled":
        os.environ["KBIT_KERNEL"] = "tiled"
    else:
        os.environ["KBIT_DECODE_CFG"] = cfg
    S._device_modules.clear()
    for c in cases:
        d = datas[c]
        rows[c].append(timer.graph_us(lambda: S.custom_kernel(d)))
for c in cases:
    print(f"{c:34s}" + "".join(f"{x:12.2f}" for x in rows[c]), flush=True)
