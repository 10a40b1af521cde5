#!/usr/bin/env bash
# Branch ragged-wip, one device call (~4 min): the row-owning kernel computing only its CTA's
# rows (half or empty last tiles skipped, tiles rotated over the schedulers) against main, in
# tc_bench (-DTC_SYNC cases), alternating, three rounds; then memcheck and racecheck of the new one.
# Needs build/old = `git archive main` (carried).
set -u
OUT=$(realpath ${OUT:-out}); mkdir -p build
NV="nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I. -Iptx -Iscripts -DTC_ROWS_ONLY -DTC_SYNC"
(cd build/old && $NV -o ../tc_old scripts/tc_bench.cu > $OUT/build_old.txt 2>&1) &
$NV -o build/tc_new scripts/tc_bench.cu > $OUT/build_new.txt 2>&1
wait
ls -la build/tc_old build/tc_new | awk '{print $5, $9}'
CASES="=sync1_8b_gateup_m16 =sync2_8b_gateup_m16 =sync1_8b_gateup_m16_g3 =sync2_8b_down_m16 =sync1_qwen3_gateup_m16 =sync2_qwen3_gateup_m16 =sync1_8b_gateup_m32 =sync1_qwen3_gateup_m32 =sync2_qwen3_gateup_m32 =sync1_qwen3_gateup_m16_k5 =sync2_qwen3_gateup_m16_k5 =sync2_odd_m9 =sync2_odd_m17_k3"
for r in 1 2 3; do for v in old new; do
  build/tc_$v $CASES 2>&1 | grep "^sync" | awk -v v=$v -v r=$r '{print "r" r, v, $1, $4, $5, $6}'
done; done > $OUT/ab.txt
grep -c . $OUT/ab.txt
python3 - $OUT/ab.txt <<'PY'
import sys, collections, statistics
d = collections.defaultdict(list); err = {}
for line in open(sys.argv[1]):
    r, v, c, e, a, b = line.split(); d[(c, v)] += [float(a), float(b)]; err[(c, v)] = e
print(f"{'case':28s} {'old':>7s} {'new':>7s}  (min-max old | new; err new)")
for c in dict.fromkeys(c for c, _ in d):
    o, n = d[(c, 'old')], d[(c, 'new')]
    print(f"{c:28s} {statistics.median(o):7.2f} {statistics.median(n):7.2f}  ({min(o):.2f}-{max(o):.2f} | {min(n):.2f}-{max(n):.2f}; {err[(c, 'new')]})")
PY
[ "${SAN:-1}" = 1 ] && for tool in memcheck racecheck; do
  TC_CHECK_ONLY=1 timeout 200 compute-sanitizer --tool $tool build/tc_new =sync1_8b_gateup_m16 =sync2_qwen3_gateup_m16 =sync2_odd_m9 =sync1_qwen3_gateup_m32 > $OUT/$tool.txt 2>&1
  echo "== $tool"; grep -E "^sync|SUMMARY" $OUT/$tool.txt
done
