#!/usr/bin/env bash
# A/B benchmark in one device call: the working tree against an older tree in
# build/old (e.g. `git archive <commit> | tar -x -C build/old`, carried to the
# device). Builds both (separate build directories), runs the GPU tests and
# `--mode test` on the new tree, then `eval/run.py --mode benchmark --graph`
# on F in both trees, alternating, and a second round on F2 (default F).
# Prints new vs old graph µs per case; JSON results in $OUT/{new,old}{1,2}.json.
# Usage: F='regex' [F2='regex'] bash scripts/ab_benchmark.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-out}; mkdir -p "$OUT"
B='import torch, submission as S, reference as R; d=R.generate_input(m=1,n=64,k=64,bits=2,dtype="float16",device="cuda"); S.custom_kernel(d); print("built")'
(cd build/old && KBIT_BUILD_DIR=/tmp/kb_old python3 -c "$B") > $OUT/build_old.txt 2>&1 &
KBIT_BUILD_DIR=/tmp/kb_new python3 -c "$B" > $OUT/build_new.txt 2>&1
wait
echo "old: $(tail -n 1 $OUT/build_old.txt)  new: $(tail -n 1 $OUT/build_new.txt)"
KBIT_BUILD_DIR=/tmp/kb_new timeout 300 python3 -m pytest -q -x tests/test_gpu_wrappers.py tests/test_gpu_kernels.py 2>&1 | tail -2
KBIT_BUILD_DIR=/tmp/kb_new timeout 200 python3 eval/run.py --mode test > $OUT/modetest.txt 2>&1; grep -E "FAIL|^tests" $OUT/modetest.txt | tail -3
F=${F:-'_m1_k2_|70b_gateup_m1_k4_fp16|qwen3cn_q_m1_k4'}
for r in 1 2; do
  [ $r = 2 ] && F=${F2:-$F}
  KBIT_BUILD_DIR=/tmp/kb_new python3 eval/run.py --mode benchmark --problem kbit_gemm --graph --filter "$F" --json $OUT/new$r.json > $OUT/new$r.txt 2>&1
  (cd build/old && KBIT_BUILD_DIR=/tmp/kb_old python3 eval/run.py --mode benchmark --problem kbit_gemm --graph --filter "$F" --json $OUT/old$r.json > $OUT/old$r.txt 2>&1)
done
python3 - <<'PY'
import json, os
out = os.environ.get("OUT", "out")
for r in (1, 2):
    new = {x["name"]: x for x in json.load(open(f"{out}/new{r}.json")) if x.get("kind") == "benchmark"}
    old = {x["name"]: x for x in json.load(open(f"{out}/old{r}.json")) if x.get("kind") == "benchmark"}
    print("round", r)
    for n in new:
        a, b = new[n], old.get(n, {})
        print(f"  {n:34s} new {a.get('graph_us', 0):8.2f} old {b.get('graph_us', 0):8.2f} sol {a.get('sol_us', 0):7.2f} {a.get('ok')}")
PY
