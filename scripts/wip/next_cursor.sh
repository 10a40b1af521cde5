#!/usr/bin/env bash
# Branch cursor-wip, next session, one device call (~9-10 min): the row-owning kernel's copy
# cursor against main in the extension. Carry build/old (main's tree:
#   rm -rf build/old && mkdir -p build/old && git archive main | tar -x -C build/old).
# Both trees build in parallel; the harness A/B (ab step, alternating) on the layers the rows
# kernel serves; the GPU suite and memcheck on this tree. (Racecheck: tc_bench, results.md v56.)
set -u
OUT=${OUT:-out}; mkdir -p $OUT/raw; export PYTHONUNBUFFERED=1 KBIT_BUILD_DIR=/tmp/kbit_build
R=$OUT; export OUT=$OUT/raw
python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))" > $OUT/build_new.txt 2>&1 &
(cd build/old && KBIT_BUILD_DIR=/tmp/kbit_build_old python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))") > $OUT/build_old.txt 2>&1 &
wait; echo "built"
STEPS=ab ROUNDS=2 BENCH="(qwen3cn_(gateup|down|q|o|kv)|llama3_8b_(gateup|down))_m(16|32)_k4_fp16" \
  timeout 240 bash scripts/device_run.sh --graph --budget-s 0.05 > $R/cursor_ab.txt 2>&1
OUT=$OUT/extra STEPS=ab ROUNDS=2 BENCH="llama3_8b_gateup_m32_k[235]" \
  timeout 90 bash scripts/device_run.sh --graph --budget-s 0.05 --tasks eval/tasks/extra > $R/cursor_ab_extra.txt 2>&1
grep -v "^NVIDIA" $R/cursor_ab.txt $R/cursor_ab_extra.txt | tail -46
SANITIZE_KERNELS="auto rows" STEPS=memcheck timeout 80 bash scripts/device_run.sh > $R/memcheck.txt 2>&1; tail -1 $R/memcheck.txt
timeout 180 python3 -m pytest -q -x tests/test_gpu_wrappers.py tests/test_gpu_kernels.py > $R/pytest_gpu.txt 2>&1
echo "pytest: $(tail -1 $R/pytest_gpu.txt)"
cd $R && tar -czf raw.tgz raw && rm -rf raw
