"""Runs one benchmark spec a few times, for ncu:
  ncu --clock-control none -k regex:kbit_gemm --launch-skip 3 --launch-count 1 \\
      python3 scripts/profile_case.py llama3_70b_gateup_m1_k4_fp16"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))
import submission as S  # noqa: E402
from run import generate, load_tasks  # noqa: E402

name = sys.argv[1]
problem = "nvfp4_gemv" if name.startswith("nvfp4") else "kbit_gemm"
spec = next(s for s in load_tasks(problem)["benchmarks"] if s["name"] == name)
data = generate(spec, "cuda")
for _ in range(5):
    S.custom_kernel(data)
torch.cuda.synchronize()
