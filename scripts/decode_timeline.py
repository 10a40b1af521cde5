"""Where a decode-kernel call spends its time, phase by phase (probe 256 of
ptx/kbit_decode.cuh: each CTA writes its timeline into C instead of results).

Per case, after an L2 flush as eval/run.py does, one call; medians over 7 calls
of (all in µs; CTA means unless named):
  skew       last CTA start - first CTA start (%globaltimer)
  cb/off val CTA start -> thread 0 has its codebook value / dense offsets
  w val      CTA start -> thread 0 has a weight word of its first copy (probe 512; else 0)
             (grouped layers: cb val / w val = thread 0 enters / leaves the split it
             computes inside the slot table; off val = the slot table and split are read)
  param, split, copies, acts, ends: CTA start -> thread 0 has a kernel parameter, has
             its units, has issued its prologue copies, its activation loads, its
             split-tile bookkeeping
  cb         CTA start -> the codebook barrier (codebook and offsets loaded)
  table      CTA start -> the table barrier (lookup table built)
  loop0/1    CTA start -> the first / last of its warps leaves the main loop
  cta        CTA start -> CTA end (split tiles completed)
  span       first CTA start -> last CTA end; mean/max over CTAs shown for cta
SM clocks are converted with each CTA's own clock rate (clocks / ns of its span).
Usage: python3 scripts/decode_timeline.py [--probe P] [--warm] case [case ...]
(P: further probe bits, e.g. 32 to leave the split-tile completion out, 512 for w val,
8192 for finer set-up stamps: "copies" becomes "located" (thread 0 has its first tile's rows)
and "ends" becomes "started" (its weight cursor is set), both before "acts".
--warm: after each flush, one call on a second input of the same case (another seed)
runs first, so the timed call finds the kernel's code and constants warm but its own
data cold: the difference to a plain run is what cold code costs.)
--warps: also each warp's end (µs from its CTA's start, mean over CTAs, by warp
index), to tell a spread that follows the warp index (issue priority) from one that
does not; and where the kernel's end goes: for each CTA the last of its warps to
  acc    have its last tile's accumulators (its main loop's work done),
  wait   be through its wait for the CTA's other parts of that tile,
  part   have stored or published that tile's sum,
  last   (CTAs that finish a tile split between CTAs) have its count back: the
         CTA comes last (ring form: and the first batch of slots landed),
  end    end (tiles split between CTAs completed),
as CTA means (µs from the CTA's start) and as the kernel's span if the CTAs ended
there (first CTA start -> the latest such point): span(acc) against span(end) is
what everything after the main loop costs the call.
The configuration is the shape rule's (KBIT_DECODE_CFG=0,0,0,P: only the probe set).
Timeline rows past the end of C are not written (few on the smallest layers)."""
import argparse
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "eval"))
import submission as S  # noqa: E402
from run import Timer, generate, load_tasks  # noqa: E402

MARK = 0x71AE
# Rows of per-warp marks (32-bit SM clocks from the CTA's start; -1: no units),
# the CTA in word 15: each warp's end, then for its last finished tile the
# accumulators landing, the wait for the CTA's other parts done, its sum stored;
# then, where its CTA came last on a tile split between CTAs, its count returned
# (ring form: and the first batch of slots landed).
WARP_MARKS = {0x71AF: "end", 0x71B0: "acc", 0x71B1: "wait", 0x71B2: "part", 0x71B3: "last"}


def timeline(c: torch.Tensor):
    raw = c.contiguous().view(-1).view(torch.uint8)
    words = raw[: raw.numel() // 128 * 128].view(torch.int64).view(-1, 16).cpu()
    # Word 15: marker << 48 | CTA count << 16 | CTA. A row counts only at its own
    # place (row CTA for the CTA rows, (1 + i) CTAs + CTA for the warp rows), with
    # this call's CTA count: C comes from reused memory, which may hold rows of an
    # earlier call.
    tags = [(int(w) >> 48 & 0xFFFF, int(w) >> 16 & 0xFFFF, int(w) & 0xFFFF) for w in words[:, 15].tolist()]
    counts = [g for i, (m, g, b) in enumerate(tags) if m == MARK and b == i]
    if not counts:
        raise RuntimeError("no timeline rows in C: was the probe build used?")
    ctas = statistics.mode(counts)
    rows = [words[b].tolist() for b in range(min(ctas, len(tags))) if tags[b] == (MARK, ctas, b)]
    g0 = min(r[0] for r in rows)
    out = []
    warp_rows = {k: {} for k in WARP_MARKS.values()}
    for i, (m, g, b) in enumerate(tags):
        kind = WARP_MARKS.get(m)
        if kind and g == ctas and b < ctas and i == (1 + m - 0x71AF) * ctas + b:
            warp_rows[kind][b] = words[i, :8].contiguous().view(torch.int32).tolist()
    for r in rows:
        ghz = r[9] / max(r[1] - r[0], 1)          # this CTA's SM clocks per ns
        us = lambda clk: clk / ghz / 1e3          # noqa: E731
        cta = int(r[15]) & 0xFFFF
        marks = {k: [us(x) if x >= 0 else float("nan") for x in v.get(cta, [])] for k, v in warp_rows.items()}
        out.append(dict(start=(r[0] - g0) / 1e3, end=(r[1] - g0) / 1e3, cbval=us(r[2]), wval=us(r[3]),
                        offval=us(r[4]), cb=us(r[5]), table=us(r[6]),
                        loop0=us(r[7]) if r[7] < 2**31 - 1 else float("nan"), loop1=us(r[8]), cta=us(r[9]),
                        par=us(r[10]), split=us(r[11]), pro=us(r[12]), act=us(r[13]), ends=us(r[14]),
                        warps=marks["end"], marks=marks))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", type=int, default=0, help="further probe bits")
    ap.add_argument("--warm", action="store_true", help="warm the code with a call on other data after each flush")
    ap.add_argument("--warps", action="store_true", help="each warp's loop end, by warp index")
    ap.add_argument("cases", nargs="+")
    args = ap.parse_args()
    os.environ["KBIT_DECODE_CFG"] = f"0,0,0,{256 | args.probe}"
    os.environ["KBIT_KERNEL"] = "decode"
    specs = {s["name"]: s for s in load_tasks("kbit_gemm")["benchmarks"]}
    timer = Timer(torch.device("cuda"))
    fine = bool(args.probe & 8192)
    cols = ["skew", "param", "split", "located" if fine else "copies", "acts", "started" if fine else "ends", "cb val",
            "off val", "w val", "cb", "table", "loop0", "loop1", "cta", "cta max", "span", "CTAs"]
    print(f"{'case':30s}" + "".join(f"{c:>8s}" for c in cols))
    for name in args.cases:
        data = generate(specs[name], "cuda")
        other = generate(dict(specs[name], seed=specs[name]["seed"] + 1), "cuda") if args.warm else None
        S.custom_kernel(data)
        torch.cuda.synchronize()
        per = []
        by_warp = []
        ends = {k: [] for k in ("acc", "wait", "part", "last", "end")}   # per call: (CTA mean, span)
        for _ in range(7):
            timer.flush()
            if other is not None:
                S.custom_kernel(other)
            c = S.custom_kernel(data)
            torch.cuda.synchronize()
            t = timeline(c)
            mean = lambda k: statistics.fmean(x[k] for x in t if x[k] == x[k])  # noqa: E731
            per.append([max(x["start"] for x in t), mean("par"), mean("split"), mean("pro"), mean("act"), mean("ends"),
                        mean("cbval"), mean("offval"), mean("wval"), mean("cb"),
                        mean("table"), mean("loop0"), mean("loop1"), mean("cta"), max(x["cta"] for x in t),
                        max(x["end"] for x in t), len(t)])
            by_warp += [x["warps"] for x in t if x["warps"]]
            g_first = min(x["start"] for x in t)
            for k in ends:
                last = [(x["start"], max(v for v in x["marks"][k] if v == v)) for x in t
                        if any(v == v for v in x["marks"][k])]
                if last:
                    ends[k].append((statistics.fmean(v for _, v in last), max(s + v for s, v in last) - g_first))
        med = [statistics.median(col) for col in zip(*per)]
        print(f"{name[:30]:30s}" + "".join(f"{v:8.2f}" for v in med[:-1]) + f"{int(med[-1]):8d}", flush=True)
        if args.warps and by_warp:
            n = max(len(w) for w in by_warp)
            col = lambda i: [w[i] for w in by_warp if i < len(w) and w[i] == w[i]]  # noqa: E731
            means = [statistics.fmean(col(i)) if col(i) else float("nan") for i in range(n)]
            spread = statistics.fmean(max(v for v in w if v == v) - min(v for v in w if v == v)
                                      for w in by_warp if any(v == v for v in w))
            # Rank of each warp within its CTA (0 = left first), averaged: a
            # spread that follows the index shows as ranks rising with it.
            ranks = [[] for _ in range(n)]
            for w in by_warp:
                order = sorted((v, i) for i, v in enumerate(w) if v == v)
                for rnk, (_, i) in enumerate(order):
                    ranks[i].append(rnk)
            print(f"  loop end by warp (us):  " + " ".join(f"{m:5.2f}" for m in means) + f"   in-CTA spread {spread:.2f}")
            print(f"  mean rank by warp:      " + " ".join(f"{statistics.fmean(r):5.1f}" if r else "  nan" for r in ranks),
                  flush=True)
            if not ends["last"]:   # (no CTA finished a tile split between CTAs, or C too small for the row)
                del ends["last"]
            if all(ends.values()):
                med = {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in ends.items()}
                print("  last warp of a CTA to   " + "  ".join(f"{k} {m[0]:6.2f}" for k, m in med.items()) + "   (CTA mean)")
                print("  span if CTAs ended at   " + "  ".join(f"{k} {m[1]:6.2f}" for k, m in med.items()), flush=True)


if __name__ == "__main__":
    main()
