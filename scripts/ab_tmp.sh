set -u
F='llama3_70b_(gateup|down)_m(1|4)_k4_fp16|llama3_70b_gateup_m1_k[23]_fp16|llama3_70b_gateup_m1_k4_bf16'
STEPS="build" bash scripts/device_run.sh 2>&1 | tail -2
python3 -m pytest -q -x tests/test_gpu_kernels.py -k "kbit_spec or each_kernel or repeatable or many_contributors or graph" 2>&1 | tail -2
python3 eval/run.py --mode benchmark --graph --filter "$F" --json $OUT/new.json > $OUT/new.txt 2>&1
(cd build/old && KBIT_BUILD_DIR=/tmp/kbit_old python3 eval/run.py --mode benchmark --graph --filter "$F" --json $OUT/old.json > $OUT/old.txt 2>&1)
python3 - << 'PY'
import json, os
o = {r["name"]: r for r in json.load(open(os.environ["OUT"] + "/old.json"))}
n = {r["name"]: r for r in json.load(open(os.environ["OUT"] + "/new.json"))}
print(f"{'case':36s} {'old':>7s} {'new':>7s} {'SOL':>6s} {'cuBLAS':>7s} {'tiny':>7s} ok")
for k in n:
    a, b = o.get(k), n[k]
    bg = b.get("baselines_graph") or {}
    if a: print(f"{k:36s} {a['graph_us']:7.2f} {b['graph_us']:7.2f} {b['sol_us']:6.2f} {bg.get('cublas', 0):7.2f} {bg.get('int4_tinygemm', 0):7.2f} {b['ok']}")
PY
