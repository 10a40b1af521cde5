"""Tuning experiment for the decode kernel: build variants of (warps per CTA,
16-row tiles per warp, ring depth) in parallel, then graph-time each on a few
benchmark cases (L2 flushed; µs, median of 5 graph replays of 20 calls).
Decode variants run with KBIT_KERNEL=decode (every case on the decode kernel);
a variant "tiled" times the tiled GEMM kernel (KBIT_KERNEL=tiled) instead. The
first line is the floor of this measurement: a one-element add, graph-timed
the same way.
A variant with "=" in it is a KBIT_DEFINES list instead (e.g.
"KBIT_DECODE_ACT_ROWS=1,KBIT_DECODE_ACT_STAGES=4"), "default" the tree as it is;
both with the decode kernel forced.
Usage: python3 scripts/decode_variants.py "16,4,4 20,4,3 tiled default KBIT_X=1" case [case ...]"""
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


def variant_env(cfg):
    if cfg == "tiled":
        return {"KBIT_KERNEL": "tiled"}
    if cfg == "default":
        return {"KBIT_KERNEL": "decode"}
    if "=" in cfg:
        return {"KBIT_KERNEL": "decode", "KBIT_DEFINES": cfg}
    return {"KBIT_KERNEL": "decode", "KBIT_DECODE_CFG": cfg}


def prebuild(cfg):
    env = dict(os.environ, **variant_env(cfg))
    r = subprocess.run([sys.executable, "-c", "import torch, submission as S; S._module_for(torch.device('cuda'))"],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    return cfg, r.returncode, r.stderr[-2000:]


failed = []
unique = list(dict.fromkeys(variants))   # a variant listed twice is timed twice, built once
with ThreadPoolExecutor(len(unique)) as ex:
    for cfg, rc, err in ex.map(prebuild, unique):
        print(f"built {cfg}: rc={rc}", err[-600:] if rc else "", flush=True)
        if rc:
            failed.append(cfg)
variants = [v for v in variants if v not in failed]   # a failed build is reported and skipped

timer = Timer(torch.device("cuda"))
one = torch.zeros(1, device="cuda")
print(f"floor (graph time of a one-element add): {timer.graph_us(lambda: one.add_(1)):.2f} us", flush=True)
specs = {s["name"]: s for s in load_tasks("kbit_gemm")["benchmarks"]}
datas = {c: generate(specs[c], "cuda") for c in cases}
rows = {c: [] for c in cases}
for cfg in variants:
    for name in ("KBIT_KERNEL", "KBIT_DECODE_CFG", "KBIT_DEFINES"):
        os.environ.pop(name, None)
    os.environ.update(variant_env(cfg))
    # Both caches: build() keys its modules by (family, arch) only, so a
    # variant would otherwise run the first variant's module.
    S._modules.clear()
    S._device_modules.clear()
    for c in cases:
        d = datas[c]
        rows[c].append(timer.graph_us(lambda: S.custom_kernel(d)))
    print(f"{cfg}: module {[m.__name__ for m in S._modules.values()]}", flush=True)
# A plain read of (nearly) the same bytes: a float32 sum over the packed
# weight planes (the scales, 1/16 more bytes at k = 4, left out), the kernel the
# streaming-bandwidth measurement uses: what a streaming kernel of this size
# achieves, ramp-up and tail included.
sums = {}
for c in cases:
    flat = datas[c].b_packed.view(-1).view(torch.float32)
    out = torch.zeros((), dtype=torch.float32, device="cuda")
    sums[c] = timer.graph_us(lambda: torch.sum(flat, dim=0, out=out))
print(f"{'case':34s}" + "".join(f"{v:>12s}" for v in variants) + f"{'torch.sum':>12s}")
for c in cases:
    print(f"{c:34s}" + "".join(f"{x:12.2f}" for x in rows[c]) + f"{sums[c]:12.2f}", flush=True)
