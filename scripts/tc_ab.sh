#!/bin/bash
# tc_bench A/B of this tree against a base tree in one device call: both built
# (in parallel, ~20-35 s with TC_WGMMA_ONLY), both listings dumped for
# scripts/sass_loops.py --against, then ROUNDS rounds alternating the order.
# The base is a copy of ptx/ and scripts/ from another commit, carried to the
# device (the run tool's carry: ["build/base"]):
#
#   rm -rf build/base && mkdir -p build/base && git archive main ptx scripts | tar -x -C build/base
#   TC_FLAGS="-DTC_WGMMA_ONLY" ROUNDS=2 bash scripts/tc_ab.sh [case-substring | =case ...]   (on the device)
#
# NEW_FLAGS go to this tree's build only: a compile-time switch against the
# same commit (build/base from HEAD), e.g. NEW_FLAGS="-DKBIT_WGMMA_TILE_LOOP=1"; KEEP_BASE=1
# on later runs in the same call reuses the base build.
#   python3 scripts/sass_loops.py new.sass.gz --against base.sass.gz wgmma_kernel            (here)
#
# Several switches in one call: BUILDS="a:-DKBIT_X=1;b:-DKBIT_Y=2" (builds
# tc_a, tc_b beside the base; each round runs every build once, the order
# rotating; ab_summary.txt holds one table per variant against the base).
#
# Outputs in $OUT (or /tmp/out): NAME.sass.gz per build (new or each variant,
# and base), loops.txt (sass_loops.py --against per variant), ab.txt, and
# ab_summary.txt (scripts/ab_summary.py: a line per case, printed last). The
# build logs stay in /tmp/tc_ab_logs (a failed build's tail is printed).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" build
[ -f build/base/scripts/tc_bench.cu ] || { echo "no build/base (see the header)"; exit 2; }
F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr ${TC_FLAGS:--DTC_WGMMA_ONLY}"
t0=$(date +%s)
# The builds against the base: one "new" (NEW_FLAGS), or with
# BUILDS="name:flags;name:flags" one per entry (names in letters, digits, _),
# all in parallel with the base; the rounds then run every build once each,
# the order rotating, and the summary compares each with the base.
if [ -n "${BUILDS:-}" ]; then IFS=';' read -ra VS <<< "$BUILDS"; else VS=("new:${NEW_FLAGS:-}"); fi
NAMES=()
LOGS=/tmp/tc_ab_logs; mkdir -p "$LOGS"
for v in "${VS[@]}"; do
  n=${v%%:*}; f=${v#*:}; [ "$n" = "$v" ] && f=""
  [[ $n =~ ^[A-Za-z0-9_]+$ ]] && [ "$n" != base ] || { echo "bad variant name '$n'"; exit 2; }
  NAMES+=("$n"); rm -f "build/tc_$n"
  nvcc $F $f -I. -Iptx -Iscripts -o "build/tc_$n" scripts/tc_bench.cu > "$LOGS/build_$n.log" 2>&1 &
done
# (KEEP_BASE=1: reuse build/tc_base from an earlier run in the same call)
[ -n "${KEEP_BASE:-}" ] && [ -x build/tc_base ] ||
  (cd build/base && nvcc $F -I. -Iptx -Iscripts -o ../tc_base scripts/tc_bench.cu) > "$LOGS/build_base.log" 2>&1 &
wait
echo "builds: $(( $(date +%s) - t0 )) s"
for b in "${NAMES[@]}" base; do
  [ -x "build/tc_$b" ] || { echo "build $b failed:"; tail -5 "$LOGS/build_$b.log"; exit 1; }
  cuobjdump -sass "build/tc_$b" | gzip > "$OUT/$b.sass.gz"
done
# The loops before the clocks: a LOST table base or a GREW loop explains a
# difference before any timing does (exit status 1 then; the rounds still run).
for n in "${NAMES[@]}"; do
  echo "== $n against base"
  python3 scripts/sass_loops.py "$OUT/$n.sass.gz" --against "$OUT/base.sass.gz" wgmma_kernel 2>&1
done > "$OUT/loops.txt"
grep -E "^==|lost|GREW" "$OUT/loops.txt" | tail -8
run() { echo "=== round $1 $2"; build/tc_$2 "${@:3}" 2>&1 | grep -v "^device\|^graph us\|^case"; }
ALL=("${NAMES[@]}" base)
for r in $(seq 1 "${ROUNDS:-2}"); do
  k=${#ALL[@]}
  for j in $(seq 0 $((k - 1))); do run "$r" "${ALL[$(( (j + r - 1) % k ))]}" "$@"; done
done | tee "$OUT/ab.txt"
python3 scripts/ab_summary.py "$OUT/ab.txt" | tee "$OUT/ab_summary.txt"
