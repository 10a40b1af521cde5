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
