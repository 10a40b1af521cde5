#!/usr/bin/env python3
"""Per case, the graph times of an A/B of tc_bench builds side by side:
scripts/tc_ab.sh's ab.txt (rounds of `=== round R new|base` blocks, each a
tc_bench table) to one line per case: both builds' range over the rounds
(both graph columns), the per-round difference of the second graph column
(new - base, µs), and whether every row of both passed its check (err <= 1,
tc_bench's bound); with several builds beside base (tc_ab.sh BUILDS), one
such table per build. tc_ab.sh prints it after the rounds.

    python3 scripts/ab_summary.py ab.txt
"""
import re
import sys

ROW = re.compile(r"^(\S+)\s+([\d.]+)\s+(yes|NO)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+")


def parse(lines):
    """{build: {case: [(round, graph1, graph2, err)]}} in case order."""
    runs, build, rnd = {}, None, None
    for line in lines:
        m = re.match(r"^=== round (\d+) (\S+)", line)
        if m:
            rnd, build = int(m.group(1)), m.group(2)
            runs.setdefault(build, {})
            continue
        m = ROW.match(line)
        if m and build is not None:
            runs[build].setdefault(m.group(1), []).append(
                (rnd, float(m.group(5)), float(m.group(6)), float(m.group(4))))
    return runs


def summary(runs, new="new", base="base"):
    out = [f"{'case':28s} {new + ' (us)':>15s} {base + ' (us)':>15s}  {'new - base per round':24s} check"]
    for case, a in runs.get(new, {}).items():
        b = runs.get(base, {}).get(case, [])
        rng = lambda xs: f"{min(min(x[1], x[2]) for x in xs):7.2f}-{max(max(x[1], x[2]) for x in xs):<7.2f}" if xs else "-"
        by_round = {r: g2 for r, _, g2, _ in b}
        deltas = " ".join(f"{g2 - by_round[r]:+.2f}" for r, _, g2, _ in a if r in by_round)
        ok = all(x[3] <= 1.0 for x in a + b)
        out.append(f"{case:28s} {rng(a):>15s} {rng(b):>15s}  {deltas:24s} {'ok' if ok else 'FAILED'}")
    return out


def summaries(runs):
    """One summary table per build other than base (tc_ab.sh: "new", or each
    of its BUILDS), in the order the builds first appear."""
    return [summary(runs, new=b) for b in runs if b != "base"]


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print("\n\n".join("\n".join(t) for t in summaries(parse(f.read().split("\n")))))
