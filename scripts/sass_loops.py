#!/usr/bin/env python3
"""The main loop of each kernel in a `cuobjdump -sass` listing: its length in
instructions, its instruction mix, and how its shared-memory table lookups
address the table.

The decode and row-owning kernels look up their dequantization table with one
PRMT (the address within the table) and one LDS. ptxas folds the table's base
into the LDS as `[R+UR]` only where it keeps that base in a uniform register;
where it does not, every lookup costs an IMAD.IADD more (docs/design.md,
"Two K-tiles per barrier pass"; results.md v57: the 3-stage M = 16
configurations of the row-owning kernel lost it, ~30 instructions per warp
and K-tile). The device has cuobjdump, this machine does not:

    cuobjdump -sass BINARY | gzip > $OUT/bin.sass.gz         (on the device)
    python3 scripts/sass_loops.py bin.sass.gz rows_kernel     (here)

Arguments: the listing (plain or .gz, or - for stdin), then substrings of the
function names to report (all functions without any). --ops N prints the N
most frequent opcodes of each loop.
"""
import argparse
import collections
import gzip
import re
import sys

INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"\bBRA\b.*?(0x[0-9a-f]+)")
LDS_UR = re.compile(r"^LDS(\.\w+)*\s+R\d+,\s*\[R\d+\+UR\d+")
LDS_REG = re.compile(r"^LDS(\.\w+)*\s+R\d+,\s*\[R\d+\]$")


def functions(lines):
    """{name: [(address, instruction text without predicate)]} in listing order."""
    out, name = {}, None
    for line in lines:
        if "Function :" in line:
            name = line.split("Function :", 1)[1].strip()
            out[name] = []
            continue
        m = INSTR.search(line)
        if name and m:
            text = re.sub(r"^@!?U?P\w+\s+", "", m.group(2).strip())
            out[name].append((int(m.group(1), 16), text))
    return out


def main_loop(instrs):
    """The longest span [target, branch] of a backward branch: the main loop."""
    best = None
    for addr, text in instrs:
        m = BRANCH.search(text)
        if m and int(m.group(1), 16) < addr:
            span = (int(m.group(1), 16), addr)
            if best is None or span[1] - span[0] > best[1] - best[0]:
                best = span
    if best is None:
        return []
    return [text for addr, text in instrs if best[0] <= addr <= best[1]]


def summary(body):
    ops = collections.Counter(text.split()[0] for text in body)
    return {
        "instructions": len(body),
        "lds_ur": sum(bool(LDS_UR.match(t)) for t in body),
        "lds_reg": sum(bool(LDS_REG.match(t)) for t in body),
        "ops": ops,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("listing")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--ops", type=int, default=0)
    args = ap.parse_args(argv)
    if args.listing == "-":
        lines = sys.stdin.read().split("\n")
    else:
        opener = gzip.open if args.listing.endswith(".gz") else open
        with opener(args.listing, "rt") as f:
            lines = f.read().split("\n")
    print(f"{'loop':>5s} {'LDS [R+UR]':>10s} {'LDS [R]':>7s}  function")
    for name, instrs in functions(lines).items():
        if args.names and not any(s in name for s in args.names):
            continue
        s = summary(main_loop(instrs))
        print(f"{s['instructions']:5d} {s['lds_ur']:10d} {s['lds_reg']:7d}  {name}")
        for op, n in s["ops"].most_common(args.ops):
            print(f"{'':18s}{op:28s} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
