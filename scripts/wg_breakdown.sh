#!/bin/bash
# Where the wgmma kernel's time goes on the Llama-3 layers from 32 rows on, in
# one device call (~20 s of builds in parallel, ~10 s per build's run):
# tc_bench built with its wgmma cases alone (-DTC_WGMMA_ONLY), plain, with the
# per-CTA timeline (tl), with the loop-phase clocks (ph), and with timing probes
# (pN: KBIT_WGMMA_PROBE=N, results wrong by design; kbit_wgmma.cuh lists the
# bits; sN: KBIT_WGMMA_SYNC_REGS=N). The tl and ph builds are 2-4 us slower than plain (their clock reads):
# compare a probe with the plain build of the same call.
#
#   VARS="plain p16" bash scripts/wg_breakdown.sh [case-substring | =case ...]
#
# Logs and each build's table go to $OUT (or /tmp/out). Extra nvcc flags for
# every build: TC_FLAGS="-DKBIT_...=...".
# STALLS=1: instead of the tables, ncu's per-instruction source page of the
# first call of each named case (`=case` arguments) in each build, summarised
# by scripts/ncu_source_summary.py (where the warps stall, by opcode); the
# CSVs go to $OUT.
set -u
mkdir -p build
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo -I. -Iptx -Iscripts"
F="$F -DTC_WGMMA_ONLY ${TC_FLAGS:-}"
declare -A V=([plain]="" [tl]="-DTC_TIMELINE" [ph]="-DTC_PHASES" [p1]="-DKBIT_WGMMA_PROBE=1"
              [p2]="-DKBIT_WGMMA_PROBE=2" [p3]="-DKBIT_WGMMA_PROBE=3" [p4]="-DKBIT_WGMMA_PROBE=4"
              [p8]="-DKBIT_WGMMA_PROBE=8" [p16]="-DKBIT_WGMMA_PROBE=16" [p19]="-DKBIT_WGMMA_PROBE=19"
              [ph16]="-DTC_PHASES -DKBIT_WGMMA_PROBE=16" [ring]="-DTC_RING"
              [d1]="-DKBIT_WGMMA_DRAIN=1" [d2]="-DKBIT_WGMMA_DRAIN=2" [w0]="-DKBIT_WGMMA_WIDE_PIECES=0"
              [w2]="-DKBIT_WGMMA_WIDE_PIECES=2" [ef0]="-DKBIT_WGMMA_EARLY_FULL=0" [ef2]="-DKBIT_WGMMA_EARLY_FULL=2"
              [ew1]="-DKBIT_WGMMA_EARLY_WORDS=1" [ew2]="-DKBIT_WGMMA_EARLY_WORDS=2" [sp1]="-DKBIT_WGMMA_SCALE_PAIRS=1")
VARS=${VARS:-plain tl ph p1 p2 p3 p8 p16}
for v in $VARS; do   # (any pN: KBIT_WGMMA_PROBE=N; sN: KBIT_WGMMA_SYNC_REGS=N; a+b: both builds' flags)
  [ -n "${V[$v]+x}" ] && continue
  f=""
  for part in ${v//+/ }; do
    if [[ $part =~ ^p([0-9]+)$ ]]; then f="$f -DKBIT_WGMMA_PROBE=${BASH_REMATCH[1]}"
    elif [[ $part =~ ^s([0-3])$ ]]; then f="$f -DKBIT_WGMMA_SYNC_REGS=${BASH_REMATCH[1]}"
    elif [ -n "${V[$part]+x}" ]; then f="$f ${V[$part]}"
    else echo "unknown build '$part' (known: ${!V[*]}, pN, a+b)"; exit 2; fi
  done
  V[$v]=$f
done
t0=$(date +%s)
for v in $VARS; do nvcc $F ${V[$v]} -o build/tcw_${v//+/_} scripts/tc_bench.cu > "$OUT/build_${v//+/_}.log" 2>&1 & done
wait
echo "builds: $(( $(date +%s) - t0 )) s"
for v in $VARS; do
  echo "=== $v: ${V[$v]}"
  n=${v//+/_}   # (file names without '+')
  [ -x build/tcw_$n ] || { tail -5 "$OUT/build_$n.log"; continue; }
  if [ "${STALLS:-0}" = 1 ]; then
    for c in "$@"; do
      r=/tmp/wgst_${n}_${c#=}
      TC_CHECK_ONLY=1 ncu --clock-control none --set full --import-source no -k regex:kbit_wgmma --launch-count 1 \
        -f -o "$r" build/tcw_$n "$c" > "$OUT/ncu_${n}_${c#=}.log" 2>&1
      ncu --import "$r.ncu-rep" --page source --csv --print-source sass > "$OUT/src_${n}_${c#=}.csv" 2>&1
      python3 scripts/ncu_source_summary.py "$OUT/src_${n}_${c#=}.csv"
    done
    continue
  fi
  build/tcw_$n "$@" 2>&1 | grep -v "^device\|^graph us\|^case" | tee "$OUT/run_$n.txt"
done
