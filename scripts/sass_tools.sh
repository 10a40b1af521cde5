#!/usr/bin/env bash
# SASS listings without a GPU: NVIDIA's cuobjdump and nvdisasm from PyPI
# (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm; ~5.5 MB), unpacked into
# build/sass_tools (ignored by git), then a listing of scripts/tc_bench.cu
# built here with nvcc for sm_90a, for scripts/sass_loops.py.
#
#   bash scripts/sass_tools.sh install
#   bash scripts/sass_tools.sh listing OUT.sass.gz [nvcc flags ...]
#     e.g. bash scripts/sass_tools.sh listing /tmp/new.sass.gz -DTC_WGMMA_ONLY -DKBIT_WGMMA_TILE_LOOP=1
#   python3 scripts/sass_loops.py /tmp/new.sass.gz --against /tmp/base.sass.gz wgmma_kernel
#   SRC=scripts/wgmma_listing.cu: every wgmma configuration (all k, both dtypes)
#     instead, those tc_bench does not run included
#
# The listing is ptxas's, which the disassembler only prints: with this
# machine's nvcc 13.0 it matched the H200's (CUDA 13.0) instruction for
# instruction in every wgmma loop compared (docs/results.md v67), so a lost
# table base or a grown loop can be seen here before any device time is spent.
set -eu
cd "$(dirname "$0")/.."
TOOLS=build/sass_tools
case "${1:-}" in
  install)
    mkdir -p "$TOOLS/whl"
    python3 -m pip download --quiet --no-deps -d "$TOOLS/whl" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
    for w in "$TOOLS"/whl/*.whl; do python3 -m zipfile -e "$w" "$TOOLS/x"; done
    mkdir -p "$TOOLS/bin"
    for t in cuobjdump nvdisasm; do
      cp "$(find "$TOOLS/x" -path "*/bin/$t" | head -1)" "$TOOLS/bin/$t"; chmod +x "$TOOLS/bin/$t"
    done
    "$TOOLS/bin/cuobjdump" --version | tail -1
    ;;
  listing)
    [ -x "$TOOLS/bin/cuobjdump" ] || { echo "run: bash scripts/sass_tools.sh install" >&2; exit 2; }
    out=$2; shift 2
    cubin=$(mktemp --suffix=.cubin)
    nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -I. -Iptx -Iscripts -cubin -o "$cubin" "$@" \
      "${SRC:-scripts/tc_bench.cu}"
    PATH="$PWD/$TOOLS/bin:$PATH" cuobjdump -sass "$cubin" | gzip > "$out"
    rm -f "$cubin"
    ;;
  *) sed -n 2,14p "$0"; exit 2 ;;
esac
