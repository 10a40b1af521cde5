"""Writes eval/tasks/*.json, the task specs (plain data), from the lists below.
Run it after editing the lists; the JSON files are what the harness reads."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent / "tasks"


def kbit_tests():
    t = []
    odd = [  # (m, n, k, bits, dtype, experts): M in {0,1,3,17,65,300}, N % 8 != 0, K % 64 == 32
        (1, 100, 96, 4, "float16", 1), (3, 260, 128, 2, "bfloat16", 1), (17, 136, 224, 3, "float16", 1),
        (65, 72, 64, 5, "bfloat16", 1), (300, 521, 160, 4, "float16", 1), (0, 64, 64, 4, "float16", 1),
        (1, 1, 32, 2, "float16", 1), (8, 4100, 1056, 4, "bfloat16", 1), (129, 390, 480, 4, "bfloat16", 1),
        (300, 129, 96, 5, "float16", 1),
    ]
    for bits in (2, 3, 4, 5):
        for dt in ("float16", "bfloat16"):
            odd.append((5, 200, 352, bits, dt, 1))
            odd.append((33, 264, 288, bits, dt, 1))
    grouped = [
        (17, 136, 96, 4, "float16", 5), (40, 72, 224, 3, "bfloat16", 12), (3, 264, 128, 5, "float16", 8),
        (300, 136, 160, 2, "bfloat16", 4), (0, 64, 64, 4, "bfloat16", 3), (64, 520, 512, 4, "float16", 64),
        (65, 100, 96, 5, "bfloat16", 7), (1, 48, 64, 3, "float16", 16),
    ]
    # 9..16 rows per expert (16-row activation tiles: the mma.sync and wgmma
    # kernels' second-smallest tile), every k and dtype, K % 64 == 32; dense
    # (none of the shapes above has 9..16 rows) and grouped.
    rows16 = [(12, 200, 352, bits, dt, 1) for bits in (2, 3, 4, 5) for dt in ("float16", "bfloat16")]
    rows16 += [(16, 4100, 1056, 4, "float16", 1), (13, 136, 224, 3, "bfloat16", 1),
               (40, 136, 352, 4, "float16", 3), (45, 264, 160, 5, "bfloat16", 4)]
    for i, (m, n, k, bits, dt, e) in enumerate(odd + grouped + rows16):
        t.append(dict(problem="kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dt, experts=e, seed=1000 + i))
    return t


DENSE = {  # name: (K = in_features, N = out_features)
    "qwen3cn_gateup": (2048, 5120), "qwen3cn_down": (5120, 2048), "qwen3cn_q": (2048, 4096),
    "qwen3cn_o": (4096, 2048), "qwen3cn_kv": (2048, 512),
    "llama3_8b_gateup": (4096, 14336), "llama3_8b_down": (14336, 4096),
    "llama3_70b_gateup": (8192, 28672), "llama3_70b_down": (28672, 8192),
}
MS = (1, 4, 16, 32, 64, 128)
CPU_SET = {("qwen3cn_kv", 1), ("qwen3cn_kv", 16), ("qwen3cn_q", 1), ("qwen3cn_gateup", 4)}


def kbit_benchmarks():
    b = []

    def add(name, m, bits, dt, **extra):
        k, n = DENSE[name]
        b.append(dict(problem="kbit_gemm", name=f"{name}_m{m}_k{bits}_{'bf16' if dt == 'bfloat16' else 'fp16'}",
                      m=m, n=n, k=k, bits=bits, dtype=dt, experts=1, seed=4242,
                      cpu=(name, m) in CPU_SET and bits == 4 and dt == "float16", **extra))

    for name in DENSE:
        for m in MS:
            add(name, m, 4, "float16")
    for name in ("llama3_70b_gateup", "llama3_8b_down", "qwen3cn_gateup"):
        for bits in (2, 3, 5):
            for m in (1, 16, 64):
                add(name, m, bits, "float16")
    for name in ("llama3_8b_gateup", "llama3_8b_down", "llama3_70b_gateup", "llama3_70b_down"):
        for m in (1, 16, 64):
            add(name, m, 4, "bfloat16")
    # M = 8 (beyond the SPEC's M list): the decode issue's target names M = 8
    # on the Llama-3 layers, the largest batch the decode kernel is built for.
    for name in ("llama3_8b_gateup", "llama3_8b_down", "llama3_70b_gateup", "llama3_70b_down"):
        add(name, 8, 4, "float16")
    moe = [  # name, experts, K, N, tokens, top-k
        ("qwen3cn_moe_gateup", 512, 2048, 1024, 1, 10), ("qwen3cn_moe_gateup", 512, 2048, 1024, 4, 10),
        ("qwen3cn_moe_gateup", 512, 2048, 1024, 16, 10), ("qwen3cn_moe_down", 512, 512, 2048, 1, 10),
        ("qwen3cn_moe_down", 512, 512, 2048, 4, 10), ("qwen3cn_moe_down", 512, 512, 2048, 16, 10),
        ("glm47_routed", 64, 2048, 1536, 16, 4), ("glm47_routed", 64, 2048, 1536, 64, 4),
    ]
    for name, e, k, n, tokens, topk in moe:
        b.append(dict(problem="kbit_gemm", name=f"{name}_t{tokens}_k4_bf16", m=tokens * topk, n=n, k=k,
                      bits=4, dtype="bfloat16", experts=e, seed=4242, cpu=False))
    # a small grouped case so the CPU run covers the grouped path too
    b.append(dict(problem="kbit_gemm", name="small_moe_e8_t4_k4_bf16", m=16, n=512, k=512, bits=4,
                  dtype="bfloat16", experts=8, seed=4242, cpu=True))
    return b


def nvfp4_tasks():
    tests = [dict(problem="nvfp4_gemv", m=m, k=k, l=l, seed=1111) for m, k, l in
             ((128, 256, 1), (128, 1536, 1), (128, 3072, 1), (256, 7168, 1), (2432, 4608, 2),
              (384, 7168, 2), (512, 512, 2), (512, 4096, 2), (512, 1536, 2))]
    tests += [dict(problem="nvfp4_gemv", m=m, k=k, l=l, seed=2222, full_range=True) for m, k, l in
              ((128, 256, 1), (384, 7168, 2), (1000, 2048, 3))]
    bench = [dict(problem="nvfp4_gemv", name=f"nvfp4_m{m}_k{k}_l{l}", m=m, k=k, l=l, seed=1111,
                  cpu=(m, k, l) == (7168, 2048, 4))
             for m, k, l in ((7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4))]
    return tests, bench


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    (HERE / "kbit_gemm.json").write_text(json.dumps(
        {"tests": kbit_tests(), "benchmarks": kbit_benchmarks()}, indent=1) + "\n")
    t, b = nvfp4_tasks()
    (HERE / "nvfp4_gemv.json").write_text(json.dumps({"tests": t, "benchmarks": b}, indent=1) + "\n")
    print("wrote", sorted(p.name for p in HERE.glob("*.json")))
