"""A representative set of kernel calls for compute-sanitizer (memcheck,
racecheck): every k, both dtypes, partial tiles, split tiles, grouped with
empty experts, M = 1 .. 300 (each with the mma.sync tiled kernel, the decode kernel's two warp tiles
and, in the sm90 family, the wgmma tiled kernel: forced, two tiles per warp at M = 17 and 50 with
N < 512, three at M = 20 and 50 with N >= 512, all with the copy warpgroup, as are the 128-row tiles:
one CTA per tile at M = 300 dense, 12 MMA warps and stream-K at M = 300 grouped, and a whole number
of CTAs per tile on a dense layer of fewer 64-row tiles than CTAs (M = 56); the CUDA-core
kernel where it applies: dense M = 1 and every grouped case; the row-owning kernel at dense M <= 32),
a dense layer whose offsets are not {0, M}
(each kernel choice), and nvfp4 with plain and blocked scales.

SANITIZE_KERNELS (space-separated, "auto" for the choice by shape) limits the
kernel list, e.g. to the kernels a change touched when the device time is short;
"none" leaves only the nvfp4 cases (an empty value does not reach the script
through compute-sanitizer, which then runs every kernel)."""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import reference as R  # noqa: E402
import submission as S  # noqa: E402

CASES = [dict(m=1, n=100, k=96, bits=4, dtype="float16"), dict(m=17, n=136, k=224, bits=3, dtype="bfloat16"),
         dict(m=300, n=521, k=160, bits=5, dtype="float16"), dict(m=5, n=4100, k=1056, bits=2, dtype="bfloat16"),
         dict(m=40, n=72, k=224, bits=4, dtype="bfloat16", experts=12),
         dict(m=64, n=264, k=4096, bits=4, dtype="float16", experts=64),
         dict(m=3, n=2048, k=8192, bits=5, dtype="float16"),
         # 9..16 rows per expert (16-row tiles: the wide pair table at k <= 4),
         # and one row in all with experts (decode activations in the ring stages)
         dict(m=12, n=300, k=352, bits=3, dtype="float16"), dict(m=16, n=264, k=1024, bits=4, dtype="bfloat16"),
         dict(m=1, n=200, k=4160, bits=4, dtype="float16", experts=8),
         # few tiles, each split between many CTAs (the decode kernel's CTA slots)
         dict(m=2, n=72, k=16384, bits=4, dtype="float16"),
         # 17..64 rows (wgmma forced: three tiles per warp where N >= 512, else two);
         # over 64 rows per expert (wgmma: 128-row tiles of 12 MMA warps, stream-K)
         dict(m=50, n=520, k=544, bits=2, dtype="float16"), dict(m=50, n=264, k=288, bits=5, dtype="bfloat16"),
         dict(m=20, n=600, k=544, bits=4, dtype="float16"),
         dict(m=300, n=200, k=288, bits=4, dtype="bfloat16", experts=2),
         # k = 2's row-pair table in the wgmma kernel's 128-row tiles (one CTA per tile)
         dict(m=300, n=264, k=544, bits=2, dtype="bfloat16"),
         # dense M = 1 with a last strip of 8 columns and K % 64 == 32 (the CUDA-core kernel)
         dict(m=1, n=1000, k=2080, bits=2, dtype="bfloat16"), dict(m=1, n=520, k=4128, bits=3, dtype="float16"),
         # the decode kernel's 12-warp configurations (decode64): eight activation rows per
         # stage at M = 7 (k = 4, K % 64 == 32), one at M = 1 on 2^24 weights (k = 4 and 5;
         # k = 2 on decode64: 16 warps with one row since v40)
         dict(m=7, n=1000, k=2080, bits=4, dtype="float16"), dict(m=1, n=2056, k=8192, bits=4, dtype="bfloat16"),
         dict(m=1, n=2056, k=8192, bits=5, dtype="float16"), dict(m=1, n=2056, k=8192, bits=2, dtype="float16"),
         # the decode kernel's 16-row slots (decode, decode64; dense M = 9..16): tiles split
         # between warps and CTAs, K % 64 == 32 (the M = 12 and 16 cases above take them too)
         dict(m=13, n=1000, k=8224, bits=4, dtype="float16"),
         # k = 2's row-pair table (64-bit lookups) with 16-row slots
         dict(m=10, n=1000, k=4128, bits=2, dtype="float16"),
         # k = 5 with 16-row slots (decode: 32-row tiles of 12 warps, whose split tiles
         # the helper warps add: DecodeConfig::kSumByHelpers)
         dict(m=14, n=1000, k=4128, bits=5, dtype="bfloat16"),
         # k = 3 with activation rows in the stages: the lane-permuted table (kLanePerm)
         dict(m=3, n=1000, k=4128, bits=3, dtype="float16"),
         # 448 tiles: on 132 SMs the decode kernel's pair grid, clusters of two CTAs (launch.cuh
         # decode_pair_ctas, kbit_decode.cuh finish_pair): 32-row tiles at M = 4, 64-row tiles
         # at M = 1 with decode64 forced (the rule takes 896 tiles of 32 rows there, whole per CTA).
         # Racecheck runs without the pairs (device_run.sh): it did not finish a cluster launch.
         dict(m=4, n=14336, k=672, bits=4, dtype="float16"), dict(m=1, n=28672, k=1184, bits=4, dtype="bfloat16"),
         # the row-owning kernel's 32-row stages (rule: dense M = 17..32 below 2^26 weights), K
         # permuted by pairs; N % 16 == 8 and K % 64 == 32: a partial warp tile and K-tile. With
         # one granule per CTA (N <= 16 x SMs: N = 1032 and 1000 here, and the M = 10..16 cases
         # above) configuration 5, 16-row warp tiles in 12 K-groups of one warp; with K of at least
         # 64 K-tiles as well (M = 10, 13, 14 above, M = 27 here) configuration 6, K split over
         # clusters of two CTAs (racecheck runs without it: device_run.sh)
         dict(m=24, n=5128, k=2080, bits=4, dtype="float16"), dict(m=19, n=1032, k=2080, bits=5, dtype="bfloat16"),
         dict(m=29, n=1000, k=2080, bits=2, dtype="bfloat16"), dict(m=27, n=1000, k=4128, bits=3, dtype="bfloat16"),
         # two K-tiles per pass of the row-owning kernel's group barrier (M <= 16, k = 2..4):
         # configuration 7 (97 K-tiles over 12 K-groups: some end on an odd K-tile) and 3
         dict(m=12, n=4104, k=6176, bits=3, dtype="float16"), dict(m=16, n=5128, k=2080, bits=2, dtype="bfloat16"),
         # CTAs of 5 granules (132 SMs; the row-owning kernel's 4 x 4 at M = 16, 3 x 4 at M = 32):
         # 32-row warp tiles full, full, half and empty, only the live ones computed
         dict(m=16, n=10552, k=2080, bits=4, dtype="float16"), dict(m=30, n=10552, k=2080, bits=5, dtype="bfloat16"),
         # pair fields (M = 17..32, k = 3, 4): the 3 x 4 with part-filled tiles, and configuration 7
         # at 32 rows (12 K-groups of one warp, 97 K-tiles) with N % 16 == 8 and K % 64 == 32
         dict(m=32, n=10552, k=2080, bits=3, dtype="float16"), dict(m=21, n=4104, k=6176, bits=4, dtype="bfloat16"),
         # the wgmma kernel's aligned grid (KBIT_WGMMA_ALIGNED_GRID; dense, fewer 64-row tiles than
         # CTAs at two CTAs per SM): 41 tiles x 6 CTAs on 132 SMs, N % 128 == 8, K % 64 == 32
         dict(m=56, n=5128, k=2080, bits=4, dtype="float16")]
bad = 0
KERNELS = [k for k in os.environ.get("SANITIZE_KERNELS", "auto tiled decode decode64 wgmma gemv rows").split() if k != "none"]
for kernel in KERNELS:   # the choice by shape, then each kernel / tile everywhere
    os.environ["KBIT_KERNEL"] = "" if kernel == "auto" else kernel
    for spec in CASES:
        d = R.generate_input("kbit_gemm", seed=1, device="cuda", **spec)
        ok, msg = R.check_implementation(d, S.custom_kernel(R.KbitGemmInput(*(t.clone() for t in d))))
        bad += not ok
        print(kernel, spec, ok, msg)
    # Dense offsets that are not {0, M} (the tiled kernels place a dense layer's
    # tiles by M): NaN everywhere, nothing read or written out of bounds.
    d = R.generate_input("kbit_gemm", seed=1, device="cuda", m=200, n=264, k=1024, bits=4, dtype="float16")
    out = S.custom_kernel(R.KbitGemmInput(*d[:4], torch.tensor([0, 100], dtype=torch.int32, device="cuda"),
                                          d.c.clone()))
    ok = bool(torch.isnan(out).all())
    bad += not ok
    print(kernel, "dense offsets [0, 100] of 200 rows: all NaN", ok)
os.environ.pop("KBIT_KERNEL", None)
# k % 2048 == 0: two-chunk elements; (10, 16384, 1), (3, 4096, 2): fewer rows than warps in a CTA;
# k % 256 != 0 (50, 1088, 2): plain scales loaded per lane, all others staged in shared memory
for m, k, l in ((128, 256, 1), (384, 7168, 2), (77, 1536, 3), (100, 2048, 2), (10, 16384, 1), (3, 4096, 2),
                (50, 1088, 2)):
    d = R.generate_input("nvfp4_gemv", m=m, k=k, l=l, seed=1, device="cuda")
    ok, msg = R.check_implementation(d, S.custom_kernel(d))
    bad += not ok
    print("nvfp4", m, k, l, ok, msg)
    d2 = d[:2] + (d[2].cpu(), d[3].cpu()) + d[4:]        # scales on the host: blocked path
    ok, msg = R.check_implementation(d2, S.custom_kernel(d2))
    bad += not ok
    print("nvfp4 blocked", m, k, l, ok, msg)
torch.cuda.synchronize()
sys.exit(1 if bad else 0)
