#!/usr/bin/env bash
# One device call: build, GPU tests, sanitizer, harness tests and benchmarks.
# Usage (on the GPU machine, repo root): bash scripts/device_run.sh [bench-filter] [extra run.py args]
# Logs go to $OUT (or ./out); the last lines are a short table.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 KBIT_BUILD_DIR=/tmp/kbit_build
FILTER=${1:-}; shift || true
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
python3 -c "import torch, submission as S, reference as R; d=R.generate_input(m=1,n=64,k=64,bits=4,dtype='float16',device='cuda'); S.custom_kernel(d); print('built family', S._module_for(torch.device('cuda'))[1])" 2>&1 | tail -3
echo "build: $(( $(date +%s) - t0 )) s"
python3 -m pytest -q -x tests/test_gpu_wrappers.py tests/test_gpu_kernels.py 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -15
if [ "${SANITIZE:-1}" = 1 ]; then
  compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_cases.py > "$OUT/memcheck.txt" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.txt"
  compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/sanitize_cases.py > "$OUT/racecheck.txt" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.txt"
fi
python3 eval/run.py --mode test 2>&1 | tail -4
if [ -n "$FILTER" ]; then
  python3 eval/run.py --mode benchmark --filter "$FILTER" --json "$OUT/bench.json" "$@" 2>&1 | tee "$OUT/bench.txt" | tail -60
fi
