#!/usr/bin/env bash
# One device call: build, GPU tests, sanitizers, host overhead, ncu, benchmarks.
# Usage (repo root on the GPU machine): STEPS="build tests sanitize|memcheck|racecheck|synccheck host ncu bench bench_tiled variants ab" \
#   BENCH='regex' BENCH_ROUNDS=n BENCH_TILED='regex' NCU='case1 case2' ROUNDS=n bash scripts/device_run.sh [extra eval/run.py args]
# ab: BENCH in this tree and in build/old (an older tree carried to the device,
# e.g. `git archive <commit> | tar -x -C build/old`), alternating, ROUNDS times.
# Logs go to $OUT (or ./out).
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
# The device tool brings back at most 8 files from $OUT: with more, everything
# goes into one archive, out.tgz (at the script's end, also after a failing step).
pack_out() {
  [ "$(find "$OUT" -type f | wc -l)" -gt 8 ] || return 0
  tar czf "/tmp/out.$$.tgz" -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv "/tmp/out.$$.tgz" "$OUT/out.tgz"
  echo "($OUT: more than 8 files, packed into $OUT/out.tgz)"
}
trap pack_out EXIT
export PYTHONUNBUFFERED=1 KBIT_BUILD_DIR=/tmp/kbit_build
STEPS=${STEPS:-build tests sanitize host bench}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
# Graph-time table of benchmark runs side by side: print_table ROUNDS LABEL=PREFIX...
# reads $OUT/PREFIX<round>.json; "nan!" marks a case a run failed (build or check).
print_table() {
  python3 - "$OUT" "$@" <<'PY'
import json, sys
out, rounds, cols = sys.argv[1], int(sys.argv[2]), [c.split("=", 1) for c in sys.argv[3:]]
def load(f):
    try:
        return {x["name"]: x for x in json.load(open(f"{out}/{f}")) if x.get("kind") == "benchmark"}
    except (OSError, ValueError):
        return {}
for r in range(1, rounds + 1):
    runs = [load(f"{prefix}{r}.json") for _, prefix in cols]
    print(f"round {r}: {'case':34s} " + " ".join(f"{label:>8s}" for label, _ in cols) + f" {'SOL':>7s} {'baseline':>8s}")
    for n, a in next((x for x in runs if x), {}).items():
        base = a.get("baselines_graph") or {}
        b = base.get("cublas") or next(iter(base.values()), 0) or 0
        ts = " ".join(f"{x.get(n, {}).get('graph_us') or float('nan'):8.2f}" + ("" if x.get(n, {}).get("ok") else "!")
                      for x in runs)
        print(f"         {n:34s} {ts} {a.get('sol_us') or float('nan'):7.2f} {b:8.2f}")
PY
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
if has build; then
  t0=$(date +%s)
  # With an ab step, build/old's module builds beside this tree's (one nvcc process each), so the
  # A/B call waits for one build, not two.
  if has ab && [ -f build/old/submission.py ]; then
    (cd build/old && KBIT_BUILD_DIR=/tmp/kbit_build_old python3 -c "import torch, submission as S; print('built old family', S._module_for(torch.device('cuda'))[1])") > "$OUT/build_old.txt" 2>&1 &
  fi
  python3 -c "import torch, submission as S, reference as R; d=R.generate_input(m=1,n=64,k=64,bits=4,dtype='float16',device='cuda'); S.custom_kernel(d); print('built family', S._module_for(torch.device('cuda'))[1])" 2>&1 | tail -3
  wait; [ -f "$OUT/build_old.txt" ] && tail -1 "$OUT/build_old.txt"
  echo "build: $(( $(date +%s) - t0 )) s"
fi
if has tests; then
  python3 -m pytest -q -x tests/test_gpu_wrappers.py tests/test_gpu_kernels.py 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -4
  python3 eval/run.py --mode test > "$OUT/tests.txt" 2>&1; grep -E "FAIL|^tests" "$OUT/tests.txt" | tail -5
fi
# sanitize = memcheck + racecheck + synccheck (one after another; ~12 min on an H100, ~5 in parallel
# on the decode kernels alone); SANITIZE_KERNELS trims the case list. Racecheck runs on a build
# without the wgmma kernel's copy warp: it cannot follow that ring's mbarrier-ordered slot reuse
# and flags it (docs/results.md v22, scripts/racecheck_probe.cu); a second build, cached like the first.
# It does not finish cluster launches either (v47), so that build has no pairs of decode CTAs and no
# K split over clusters in the row-owning kernel.
for tool in memcheck racecheck synccheck; do
  if has sanitize || has $tool; then
    defines=${KBIT_DEFINES:-}
    [ $tool = racecheck ] && defines=${defines:+$defines,}KBIT_WGMMA_COPY_WARP=0,KBIT_DECODE_PAIRS=0,KBIT_ROWS_SPLIT=0
    # PYTORCH_NO_CUDA_MEMORY_CACHING: every tensor its own cudaMalloc, so memcheck sees each tensor's
    # bounds (inside the caching allocator's blocks a read past a tensor's end is not reported; v29).
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 KBIT_DEFINES=$defines compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 scripts/sanitize_cases.py > "$OUT/$tool.txt" 2>&1
    echo "$tool rc=$? $(tail -1 "$OUT/$tool.txt")"
  fi
done
if has host; then python3 scripts/host_overhead.py 2>&1 | tee "$OUT/host.txt"; fi
if has ncu; then
  for c in ${NCU:-}; do
    ncu --clock-control none -k regex:"kbit_|nvfp4" --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
      python3 scripts/profile_case.py "$c" > "$OUT/ncu_$c.txt" 2>&1
    echo "== ncu $c"; grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued|Grid Size|Block Limit" "$OUT/ncu_$c.txt" | sed 's/  \+/ /g'
  done
fi
# BENCH_ROUNDS=n (n > 1): n runs into bench_r1..n.json / .txt for scripts/standings.py, each
# summarized by its last line and failures. (Run eval/run.py through this script, or with
# KBIT_BUILD_DIR as set above: without it the family builds again, into torch's own folder, ~5 min.)
if has bench; then
  if [ "${BENCH_ROUNDS:-1}" -gt 1 ]; then
    for r in $(seq "$BENCH_ROUNDS"); do
      python3 eval/run.py --mode benchmark ${BENCH:+--filter "$BENCH"} --json "$OUT/bench_r$r.json" "$@" > "$OUT/bench_r$r.txt" 2>&1
      echo "run $r: $(grep -E "^(benchmarks|graph):" "$OUT/bench_r$r.txt" | tr "\n" " ") $(grep -c "^  FAIL" "$OUT/bench_r$r.txt") failed"
    done
  else
    python3 eval/run.py --mode benchmark ${BENCH:+--filter "$BENCH"} --json "$OUT/bench.json" "$@" > "$OUT/bench.txt" 2>&1
    grep -E "^  (pass|FAIL)|streaming|^(benchmarks|graph):" "$OUT/bench.txt" | cut -c1-130
  fi
fi
# The same benchmarks with the tiled GEMM kernel for every M (the decode crossover).
if has bench_tiled; then
  KBIT_KERNEL=tiled python3 eval/run.py --mode benchmark ${BENCH_TILED:+--filter "$BENCH_TILED"} \
    --json "$OUT/bench_tiled.json" "$@" > "$OUT/bench_tiled.txt" 2>&1
  grep -E "^  (pass|FAIL)|benchmarks:" "$OUT/bench_tiled.txt" | cut -c1-130
fi
# Variants of this tree: VARIANTS="ENV=V ENV2=V2;ENV=V3;..." (environment
# assignments per variant, e.g. KBIT_KERNEL=wgmma, or compile-time knobs
# through KBIT_DEFINES=KBIT_X=1,KBIT_Y=2, see submission.py): built in
# parallel (builds of the same source share one locked directory), then BENCH
# for each, ROUNDS times.
if has variants; then
  IFS=';' read -r -a vs <<< "${VARIANTS:-}"
  for i in "${!vs[@]}"; do
    env ${vs[$i]} python3 -c "import torch, submission as S; S._module_for(torch.device('cuda'))" > "$OUT/vbuild$i.txt" 2>&1 &
  done
  wait; echo "variants built"
  # (Even rounds run the variants in reverse order: see the ab step.)
  for r in $(seq "${ROUNDS:-1}"); do
    order=("${!vs[@]}"); [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${!vs[@]}" | tac))
    for i in "${order[@]}"; do
      env ${vs[$i]} python3 eval/run.py --mode benchmark ${BENCH:+--filter "$BENCH"} --json "$OUT/v${i}_$r.json" "$@" > "$OUT/v${i}_$r.txt" 2>&1
    done
  done
  for i in "${!vs[@]}"; do echo "v$i: ${vs[$i]}"; done
  print_table "${ROUNDS:-1}" $(for i in "${!vs[@]}"; do echo "v$i=v${i}_"; done)
fi
# A/B against build/old: both trees in one call, alternating (each builds in its own directory),
# both timed by this tree's harness (build/old's submission.py through --submission).
# Odd rounds run this tree first, even rounds build/old first: in v41 the tree run first in every
# round was 0.33 us slower on average where both trees had the same kernel code (docs/results.md v41).
if has ab; then
  ab_new() { python3 eval/run.py --mode benchmark ${BENCH:+--filter "$BENCH"} --json "$OUT/new$1.json" "${@:2}" > "$OUT/new$1.txt" 2>&1; }
  ab_old() { KBIT_BUILD_DIR=/tmp/kbit_build_old python3 eval/run.py --submission build/old/submission.py --mode benchmark \
      ${BENCH:+--filter "$BENCH"} --json "$OUT/old$1.json" "${@:2}" > "$OUT/old$1.txt" 2>&1; }
  for r in $(seq "${ROUNDS:-2}"); do
    if [ $((r % 2)) = 1 ]; then ab_new "$r" "$@"; ab_old "$r" "$@"; else ab_old "$r" "$@"; ab_new "$r" "$@"; fi
  done
  print_table "${ROUNDS:-2}" new=new old=old
fi
