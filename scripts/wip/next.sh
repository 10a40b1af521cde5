#!/usr/bin/env bash
# Branch groups-wip, next session (carry build/s48 and build/s50; no extension build needed, ~1 min):
# 1. K-groups against K-tiles at 32 rows (kg_* cases of build/s50/tc_kg, tc_bench of groups-wip,
#    -DTC_ROWS_ONLY): does 8 (or 6) groups win back Qwen3 q at k = 5 without losing the long-K layers?
# 2. 16-row warp tiles (kNT = 1: t1_* cases, _t1 against the rule's _t2) where a CTA owns one granule.
# 3. The ic guard (IndexConsts built only without kPairPerm): tc_kg against build/s48/tc_pp (no guard,
#    otherwise the same kernel code) on the common rowsP32_ cases, alternating.
set -u
OUT=${OUT:-out}; mkdir -p $OUT; export OUT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for r in 1 2; do
  echo "== round $r"
  timeout 120 build/s50/tc_kg kg_ t1_ 2>&1 | grep -E "^(kg|t1)_|wrong"
  for b in tc_kg tc_pp; do
    d=build/s50; [ $b = tc_pp ] && d=build/s48
    timeout 60 $d/$b rowsP32_8b_gateup_m32 rowsP32_qwen3 rowsP32_odd_m17 2>&1 | grep -E "^rows|wrong" | sed "s/^/$b /"
  done
done | tee $OUT/tc_kg.txt
( export TC_CHECK_ONLY=1
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/s50/tc_kg kg_qwen3_q_m32_k5 t1_qwen3_kv t1_qwen3_q t1_qwen3_down_m32_k5 t1_qwen3_down_m16 rowsP32_odd > $OUT/memcheck_kg.txt 2>&1; echo "memcheck rc=$? $(tail -1 $OUT/memcheck_kg.txt)"
  timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 build/s50/tc_kg kg_qwen3_q_m32_k5_g8p t1_qwen3_kv_m32_k4_t1 t1_qwen3_down_m32_k4_t1g15 rowsP32_odd_m17_k5 > $OUT/racecheck_kg.txt 2>&1; echo "racecheck rc=$? $(tail -1 $OUT/racecheck_kg.txt)" )
