"""Per-call host overhead of custom_kernel on a small decode layer: wall time of
many back-to-back calls while the GPU keeps up (the kernels are shorter than the
host work), split into validation, dispatch and the binding call itself."""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import reference as R  # noqa: E402
import submission as S  # noqa: E402


def per_call_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


for experts, m in ((1, 1), (512, 10)):
    d = R.generate_input("kbit_gemm", m=m, n=512 if experts == 1 else 1024, k=2048, bits=4, dtype="bfloat16",
                         experts=experts, seed=1, device="cuda")
    S.custom_kernel(d)
    mod, fam = S._module_for(d.a.device)
    w = R.dequantize(d.b_packed, d.b_absmax, d.codebook, d.c.shape[1], d.a.shape[1])[0].to(d.a.dtype)
    rows = [("custom_kernel (validate + dispatch + launch)", lambda: S.custom_kernel(d)),
            ("validate_kbit only", lambda: S.validate_kbit(d)),
            ("binding call only (plan + launch)", lambda: mod.kbit_gemm(*d, 0)),
            ("torch.mm (cuBLAS), for scale", lambda: torch.mm(d.a, w.T))]
    print(f"experts={experts} m={m}")
    for name, fn in rows:
        print(f"  {name:48s} {per_call_us(fn):7.2f} us/call")

# nvfp4_gemv: a small GPU MODE-layout input (the kernel is shorter than the host work).
d = R.generate_input("nvfp4_gemv", m=256, k=512, l=2, seed=1, device="cuda")
S.custom_kernel(d)
mod, fam = S._module_for(d[0].device)
rows = [("custom_kernel (validate + dispatch + launch)", lambda: S.custom_kernel(d)),
        ("validate_nvfp4 (Python, CPU path) only", lambda: S.validate_nvfp4(d)),
        ("binding call only (validate + launch)", lambda: mod.nvfp4_gemv(*d, 0))]
print("nvfp4_gemv m=256 k=512 l=2")
for name, fn in rows:
    print(f"  {name:48s} {per_call_us(fn):7.2f} us/call")
