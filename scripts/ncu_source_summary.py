"""Summarises ncu's per-instruction source page (SASS) of one kernel: where the
warps stall, which opcodes are issued, and which take the shared-memory
wavefronts.

Make the CSV on the GPU machine, e.g. for a tc_bench case:
  TC_CHECK_ONLY=1 ncu --clock-control none --set full --import-source no -k regex:kbit_decode \\
      --launch-count 1 -o /tmp/r ./tc_new =dec_70b_gateup_m1_k3
  ncu --import /tmp/r.ncu-rep --page source --csv --print-source sass > src.csv
then: python3 scripts/ncu_source_summary.py src.csv [more.csv ...]
Stall shares are of all warp samples (ncu's "stall_*" columns, issued samples
included); instruction shares of executed warp instructions; an opcode is its
first word without predicate, and "by op" groups by the part before the first
dot (LDS.128 counts as LDS) except for the wavefront line, which keeps it."""
import collections
import csv
import re
import sys


def summarise(path, top=10):
    rows = list(csv.reader(open(path, newline="")))
    # Line 0 names the kernel; line 1 is the header.
    hdr, data = rows[1], [r for r in rows[2:] if len(r) == len(rows[1])]
    ix = {h: i for i, h in enumerate(hdr)}
    stall_cols = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    num = lambda r, c: int(r[ix[c]]) if r[ix[c]] not in ("", "-") else 0  # noqa: E731
    stalls, inst, wavefronts = collections.Counter(), collections.Counter(), collections.Counter()
    by_op = collections.defaultdict(collections.Counter)
    samples = 0
    for r in data:
        full = re.sub(r"^@!?U?P\w+\s+", "", r[ix["Source"]].strip()).split(" ")[0]
        op = full.split(".")[0]
        samples += num(r, "# Samples")
        inst[op] += num(r, "Instructions Executed")
        wavefronts[full] += num(r, "L1 Wavefronts Shared")
        for c in stall_cols:
            stalls[c] += num(r, c)
            by_op[op][c] += num(r, c)
    pct = lambda v, t: 100.0 * v / max(t, 1)  # noqa: E731
    n_inst, n_wf = sum(inst.values()), sum(wavefronts.values())
    out = [f"== {path}: {samples} samples, {n_inst} warp instructions, {n_wf} shared wavefronts",
           " stalls: " + ", ".join(f"{k[6:]} {pct(v, samples):.1f}%" for k, v in stalls.most_common(9)),
           " instructions by op: " + ", ".join(f"{k} {pct(v, n_inst):.1f}%" for k, v in inst.most_common(12)),
           " wavefronts by op: " + ", ".join(f"{k} {pct(v, n_wf):.1f}%" for k, v in wavefronts.most_common(8))]
    for op, c in sorted(by_op.items(), key=lambda kv: -sum(kv[1].values()))[:top]:
        t = sum(c.values())
        out.append(f"  {op:8s} {pct(t, samples):5.1f}% of samples: " +
                   ", ".join(f"{k[6:]} {pct(v, t):.0f}%" for k, v in c.most_common(4)))
    return "\n".join(out)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(summarise(p))
