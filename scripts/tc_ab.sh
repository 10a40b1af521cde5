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
# Outputs in $OUT (or /tmp/out): new.sass.gz, base.sass.gz, loops.txt (sass_loops.py
# --against, its last lines printed before the rounds), ab.txt, and
# ab_summary.txt (scripts/ab_summary.py: a line per case, printed last).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" build
[ -f build/base/scripts/tc_bench.cu ] || { echo "no build/base (see the header)"; exit 2; }
F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr ${TC_FLAGS:--DTC_WGMMA_ONLY}"
t0=$(date +%s)
rm -f build/tc_new
nvcc $F ${NEW_FLAGS:-} -I. -Iptx -Iscripts -o build/tc_new scripts/tc_bench.cu > "$OUT/build_new.log" 2>&1 &
# (KEEP_BASE=1: reuse build/tc_base from an earlier run in the same call, for several NEW_FLAGS)
[ -n "${KEEP_BASE:-}" ] && [ -x build/tc_base ] ||
  (cd build/base && nvcc $F -I. -Iptx -Iscripts -o ../tc_base scripts/tc_bench.cu) > "$OUT/build_base.log" 2>&1 &
wait
echo "builds: $(( $(date +%s) - t0 )) s"
for b in new base; do
  [ -x build/tc_$b ] || { echo "build $b failed:"; tail -5 "$OUT/build_$b.log"; exit 1; }
  cuobjdump -sass build/tc_$b | gzip > "$OUT/$b.sass.gz"
done
# The loops before the clocks: a LOST table base or a GREW loop explains a
# difference before any timing does (exit status 1 then; the rounds still run).
python3 scripts/sass_loops.py "$OUT/new.sass.gz" --against "$OUT/base.sass.gz" wgmma_kernel > "$OUT/loops.txt" 2>&1
tail -3 "$OUT/loops.txt"
run() { echo "=== round $1 $2"; build/tc_$2 "${@:3}" 2>&1 | grep -v "^device\|^graph us\|^case"; }
for r in $(seq 1 "${ROUNDS:-2}"); do
  if [ $((r % 2)) = 1 ]; then run "$r" new "$@"; run "$r" base "$@"; else run "$r" base "$@"; run "$r" new "$@"; fi
done | tee "$OUT/ab.txt"
python3 scripts/ab_summary.py "$OUT/ab.txt" | tee "$OUT/ab_summary.txt"
