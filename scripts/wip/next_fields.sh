#!/usr/bin/env bash
# Branch fields-wip, one device call (~3 min on binaries built here and carried in build/):
#   build/tcr_old, build/tcr_new: tc_bench -DTC_ROWS_ONLY with KBIT_ROWS_PAIR_FIELDS=0 / 1
#   build/tc_old, build/tc_lp:    tc_bench -DTC_ROWS_ONLY -DTC_SYNC, the first with KBIT_ROWS_PAIR_FIELDS=0,
#                                 the second with KBIT_DECODE_LANE_PERM=2 (lane-permuted index words at
#                                 k = 4 in the 16-row configurations)
# Pair fields on the 32-row (K by pairs) cases, k = 3 and 4 (k = 2, 5 unchanged: controls), three
# rounds alternating old / new; the lane permutation on the M = 16 rule cases; the main loops' SASS;
# memcheck of the new binary's odd and k = 3 / 4 cases.
set -u
# PART=ab (~9 min): the extension built with KBIT_ROWS_PAIR_FIELDS=1 and =0 (variants step), harness
#   A/B on the M = 32 row-owning layers at k = 4 (main tasks) and k = 3 (extra tasks), two rounds.
# PART=tests (~8 min): the GPU suite and memcheck of "auto rows" on this tree.
if [ "${PART:-}" = ab ]; then
  OUT=$(realpath ${OUT:-out}); mkdir -p $OUT/raw; R=$OUT; export OUT=$OUT/raw
  V="KBIT_DEFINES=KBIT_ROWS_PAIR_FIELDS=1;KBIT_DEFINES=KBIT_ROWS_PAIR_FIELDS=0"
  STEPS=variants VARIANTS="$V" ROUNDS=2 BENCH="(qwen3cn_(gateup|down|q|o)|llama3_8b_(gateup|down))_m32_k4_fp16" \
    timeout 480 bash scripts/device_run.sh --graph --budget-s 0.05 > $R/ab_k4.txt 2>&1
  grep -v "^NVIDIA" $R/ab_k4.txt | tail -16
  OUT=$OUT/extra STEPS=variants VARIANTS="$V" ROUNDS=2 BENCH="(llama3_8b_(gateup|down)|qwen3cn_(gateup|q))_m32_k3" \
    timeout 90 bash scripts/device_run.sh --graph --budget-s 0.05 --tasks eval/tasks/extra > $R/ab_k3.txt 2>&1
  grep -v "^NVIDIA" $R/ab_k3.txt | tail -10
  cd $R && tar -czf raw_ab.tgz raw && rm -rf raw; exit 0
fi
# PART=tc2 (~1 min; build/tcr_old, build/tcr_new (the first form: the generic table build),
#   build/tcr_new2 (build_pair_field_lut), all -DTC_ROWS_ONLY): three rounds on the M = 32 cases,
#   the Qwen3 ones (short K: the table build against the loop) first; memcheck and racecheck of tcr_new2.
if [ "${PART:-}" = tc2 ]; then
  OUT=$(realpath ${OUT:-out}); mkdir -p $OUT
  C="=rowsP32_qwen3_gateup_m32 =rowsP32_qwen3_q_m32 =rowsP32_qwen3_q_m32_k3 =t1_qwen3_down_m32_k4_t1 =t1_qwen3_o_m32_k4_t1 =rowsP32_8b_gateup_m32 =rowsP32_8b_gateup_m32_k3 =rowsP32_8b_down_m32 =rowsP32_8b_down_m32_k3 =rowsP32_odd_m17_k3"
  for r in 1 2 3; do for b in tcr_old tcr_new tcr_new2; do echo "== round $r $b"; timeout 60 build/$b $C 2>&1 | grep -E "^(rows|t1_)"; done; done > $OUT/tc2.txt 2>&1
  python3 - $OUT/tc2.txt <<'PY'
import sys, collections
t = collections.defaultdict(list); b = None
for line in open(sys.argv[1]):
    if line.startswith("=="): b = line.split()[-1]; continue
    f = line.split()
    if len(f) >= 6: t[(f[0], b)] += [float(f[4]), float(f[5])]
print(f"{'case':28s} {'old':>13s} {'new':>13s} {'new2':>13s}")
for c in sorted({k[0] for k in t}):
    print(f"{c:28s} " + " ".join(f"{min(t[(c, b)]):6.2f}-{max(t[(c, b)]):6.2f}" if t[(c, b)] else f"{'-':>13s}" for b in ("tcr_old", "tcr_new", "tcr_new2")))
PY
  TC_CHECK_ONLY=1 timeout 100 compute-sanitizer --tool memcheck build/tcr_new2 =rowsP32_odd_m17_k3 =rowsP32_qwen3_q_m32 =t1_qwen3_o_m32_k4_t1 > $OUT/mc2.txt 2>&1; tail -1 $OUT/mc2.txt
  TC_CHECK_ONLY=1 timeout 100 compute-sanitizer --tool racecheck build/tcr_new2 =rowsP32_odd_m17_k3 =t1_qwen3_o_m32_k4_t1 > $OUT/rc2.txt 2>&1; tail -1 $OUT/rc2.txt
  exit 0
fi
if [ "${PART:-}" = tests ]; then
  OUT=$(realpath ${OUT:-out}); mkdir -p $OUT/raw; export PYTHONUNBUFFERED=1 KBIT_BUILD_DIR=/tmp/kbit_build; R=$OUT; export OUT=$OUT/raw
  python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))" > $OUT/build_new.txt 2>&1; echo "built rc=$?"
  timeout 300 python3 -m pytest -q tests/test_gpu_wrappers.py tests/test_gpu_kernels.py > $R/pytest_gpu.txt 2>&1
  echo "pytest: $(tail -1 $R/pytest_gpu.txt)"; grep -E "FAILED|Error" $R/pytest_gpu.txt | head -5
  SANITIZE_KERNELS="auto rows" STEPS=memcheck timeout 150 bash scripts/device_run.sh > $R/memcheck.txt 2>&1; tail -1 $R/memcheck.txt
  grep -h "False" $OUT/memcheck.txt | head -5
  # the landed form on the two layers the rule gives pair fields (no A/B: call 3 has it)
  STEPS=bench BENCH="llama3_8b_(gateup|down)_m32_k4_fp16" timeout 80 bash scripts/device_run.sh --graph --budget-s 0.05 > $R/bench.txt 2>&1
  grep -E "llama3_8b" $R/bench.txt | tail -4
  cd $R && tar -czf raw_tests.tgz raw && rm -rf raw; exit 0
fi
OUT=$(realpath ${OUT:-out}); mkdir -p $OUT
P32="=rowsP32_8b_gateup_m32 =rowsP32_8b_gateup_m32_k3 =rowsP32_8b_down_m32 =rowsP32_8b_down_m32_k3 =rowsP32_qwen3_gateup_m32 =rowsP32_odd_m17_k3 =rowsP32_8b_gateup_m32_k2 =rowsP32_8b_gateup_m32_k5"
M16="=sync1_8b_gateup_m16 =sync1_qwen3_gateup_m16 =sync2_qwen3_gateup_m16 =sync2_8b_down_m16 =sync1_qwen3_down_m16"
for r in 1 2 3; do
  for b in tcr_old tcr_new; do echo "== round $r $b"; timeout 100 build/$b $P32 2>&1 | grep "^rows"; done
  for b in tc_old tc_lp; do echo "== round $r $b"; timeout 100 build/$b $M16 2>&1 | grep "^sync"; done
done > $OUT/tc.txt 2>&1
python3 - $OUT/tc.txt <<'PY'
import sys, collections
t = collections.defaultdict(list); b = None
for line in open(sys.argv[1]):
    if line.startswith("=="): b = line.split()[-1]; continue
    f = line.split()
    if len(f) >= 6: t[(f[0], b)] += [float(f[4]), float(f[5])]; t[(f[0], b, "err")] = f[3]
cases = sorted({k[0] for k in t})
for c in cases:
    for pair in (("tcr_old", "tcr_new"), ("tc_old", "tc_lp")):
        if (c, pair[0]) in t:
            a, n = t[(c, pair[0])], t[(c, pair[1])]
            print(f"{c:28s} {pair[0]:8s} {min(a):6.2f}-{max(a):6.2f}  {pair[1]:8s} {min(n):6.2f}-{max(n):6.2f}  err {t[(c, pair[1], 'err')]}")
PY
for b in tcr_old tcr_new; do cuobjdump -sass build/$b | gzip > $OUT/$b.sass.gz; echo "== $b"; python3 scripts/sass_loops.py $OUT/$b.sass.gz Li4E6__halfLi3ELi4ELi2ELi2ELi32ELb1 Li3E6__halfLi3ELi4ELi2ELi2ELi32ELb1 Li4E6__halfLi6ELi2ELi2ELi2ELi32ELb1; done 2>&1 | tee $OUT/sass.txt | tail -30
TC_CHECK_ONLY=1 timeout 120 compute-sanitizer --tool memcheck build/tcr_new =rowsP32_odd_m17_k3 =rowsP32_8b_gateup_m32 =rowsP32_8b_down_m32_k3 > $OUT/mc.txt 2>&1; tail -4 $OUT/mc.txt
