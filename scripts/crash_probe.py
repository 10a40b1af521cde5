"""Calls the kbit binding directly with a 3-D `a` (must return a message)."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import reference as R  # noqa: E402
import submission as S  # noqa: E402

d = R.generate_input("kbit_gemm", m=5, n=40, k=96, bits=3, dtype="float16", experts=3, seed=1, device="cuda")
mod, fam = S._module_for(d.a.device)
print("family", fam, flush=True)
print(repr(mod.kbit_gemm(d.a.float(), *d[1:], 0)), flush=True)
print(repr(mod.kbit_gemm(d.a[None], *d[1:], 0)), flush=True)
