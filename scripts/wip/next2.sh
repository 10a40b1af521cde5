#!/usr/bin/env bash
# Branch groups-wip, second call if next.sh's t1_ cases win: the extension with and without
# configuration 5 (KBIT_ROWS_T1: 16-row warp tiles for CTAs of one granule), built in parallel
# (~300 s), then the harness on the shapes it changes (Qwen3 kv, down, o; N = 2056 has 129 granules).
set -u
OUT=${OUT:-out}; mkdir -p $OUT/raw; export PYTHONUNBUFFERED=1
export OUT=$OUT/raw
STEPS=variants VARIANTS="KBIT_DEFINES=KBIT_ROWS_T1=1;KBIT_DEFINES=KBIT_ROWS_T1=0" ROUNDS=2 \
  BENCH="qwen3cn_(kv|down|o)_m(16|32)" timeout 420 bash scripts/device_run.sh --graph --budget-s 0.05 > $OUT/../t1_lb.txt 2>&1
STEPS=variants VARIANTS="KBIT_DEFINES=KBIT_ROWS_T1=1;KBIT_DEFINES=KBIT_ROWS_T1=0" ROUNDS=1 \
  BENCH="qwen3cn_(kv|down|o)_m32" timeout 120 bash scripts/device_run.sh --graph --budget-s 0.05 --tasks eval/tasks/extra > $OUT/../t1_extra.txt 2>&1
cd $OUT/.. && tar -czf raw.tgz raw && grep -v "^NVIDIA" t1_lb.txt t1_extra.txt
