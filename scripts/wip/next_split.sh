#!/usr/bin/env bash
# Branch split-wip, next session, one device call (~9 min): configuration 6 (K split over
# clusters of two CTAs in the row-owning kernel) on and off, built in parallel; harness A/B on the
# k/v layers it changes (Llama-3-8B and -70B kv in the extra tasks; Qwen3 kv must not move);
# the whole GPU suite on the split-on build; memcheck of the sanitizer cases by rule and forced.
set -u
OUT=${OUT:-out}; mkdir -p $OUT/raw; export PYTHONUNBUFFERED=1 KBIT_BUILD_DIR=/tmp/kbit_build
R=$OUT; export OUT=$OUT/raw
ON=KBIT_DEFINES=KBIT_ROWS_SPLIT=1; OFF=KBIT_DEFINES=KBIT_ROWS_SPLIT=0
STEPS=variants VARIANTS="$ON;$OFF" ROUNDS=2 BENCH="_kv_m(16|32)_" timeout 420 \
  bash scripts/device_run.sh --graph --budget-s 0.05 --tasks eval/tasks/extra > $R/split_ab.txt 2>&1
env $ON SANITIZE_KERNELS="auto rows" STEPS=memcheck timeout 100 bash scripts/device_run.sh > $R/memcheck.txt 2>&1
grep -v "^NVIDIA" $R/split_ab.txt $R/memcheck.txt
# (If the call's 600 s cut this, run it again alone: a second call rebuilds, ~300 s.)
env $ON timeout 200 python3 -m pytest -q -x tests/test_gpu_wrappers.py tests/test_gpu_kernels.py > $R/pytest_gpu.txt 2>&1
echo "pytest: $(tail -1 $R/pytest_gpu.txt)"
env $ON python3 eval/run.py --mode test > $R/tests.txt 2>&1; grep -E "FAIL|^tests" $R/tests.txt | tail -3
cd $R && tar -czf raw.tgz raw
