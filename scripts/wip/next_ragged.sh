#!/usr/bin/env bash
# Branch ragged-wip: the row-owning kernel's live tiles only, in the extension. Carry build/old
# (main's tree: rm -rf build/old && mkdir -p build/old && git archive main | tar -x -C build/old).
# PART=ab (~8 min): both trees build in parallel; harness A/B (ab step, alternating, two rounds) on
# the layers whose CTAs own part-filled warp tiles (Qwen3 gate/up, Llama-3-8B gate/up) and 8B down
# as a control, k = 4 and the other k; memcheck of "auto rows" (with the new cases).
# PART=tests (~8 min cold): the GPU suite and memcheck of "auto rows".
set -u
OUT=$(realpath ${OUT:-out}); mkdir -p $OUT/raw; export PYTHONUNBUFFERED=1 KBIT_BUILD_DIR=/tmp/kbit_build
R=$OUT; export OUT=$OUT/raw
if [ "${PART:-ab}" = ab ]; then
  python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))" > $OUT/build_new.txt 2>&1 &
  (cd build/old && KBIT_BUILD_DIR=/tmp/kbit_build_old python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))") > $OUT/build_old.txt 2>&1 &
  wait; echo "built"
  STEPS=ab ROUNDS=2 BENCH="(qwen3cn_gateup|llama3_8b_(gateup|down))_m(16|32)_k4_fp16|qwen3cn_gateup_m16_k[235]_fp16" \
    timeout 200 bash scripts/device_run.sh --graph --budget-s 0.05 > $R/ragged_ab.txt 2>&1
  OUT=$OUT/extra STEPS=ab ROUNDS=2 BENCH="(llama3_8b|qwen3cn)_gateup_m32_k[235]" \
    timeout 120 bash scripts/device_run.sh --graph --budget-s 0.05 --tasks eval/tasks/extra > $R/ragged_ab_extra.txt 2>&1
  grep -v "^NVIDIA" $R/ragged_ab.txt $R/ragged_ab_extra.txt | sed 's/^[^:]*://' | tail -34
  SANITIZE_KERNELS="auto rows" STEPS=memcheck timeout 100 bash scripts/device_run.sh > $R/memcheck.txt 2>&1; tail -1 $R/memcheck.txt
else
  python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))" > $OUT/build_new.txt 2>&1
  timeout 300 python3 -m pytest -q -x tests/test_gpu_wrappers.py tests/test_gpu_kernels.py > $R/pytest_gpu.txt 2>&1
  echo "pytest: $(tail -1 $R/pytest_gpu.txt)"; grep -E "FAILED|Error" $R/pytest_gpu.txt | head -5
  SANITIZE_KERNELS="auto rows" STEPS=memcheck timeout 100 bash scripts/device_run.sh > $R/memcheck.txt 2>&1; tail -1 $R/memcheck.txt
  grep -h "False" $OUT/memcheck.txt | head -5
fi
cd $R && tar -czf raw_${PART:-ab}.tgz raw && rm -rf raw
