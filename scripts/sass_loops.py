#!/usr/bin/env python3
"""The main loop of each kernel in a `cuobjdump -sass` listing: its length in
instructions, its instruction mix, and how its shared-memory table lookups
address the table. The main loop is the longest loop before the function's
last EXIT; with --hot, the shortest loop that holds a tensor-core instruction
(the wgmma kernel's loop over a tile part's units, inside the loop over the
share's parts, where Cfg::kTileLoop).

The decode and row-owning kernels look up their dequantization table with one
PRMT (the address within the table) and one LDS. ptxas folds the table's base
into the LDS as `[R+UR]` only where it keeps that base in a uniform register;
where it does not, every lookup costs an IMAD.IADD more (docs/design.md,
"Two K-tiles per barrier pass"; results.md v57: the 3-stage M = 16
configurations of the row-owning kernel lost it, ~30 instructions per warp
and K-tile). A listing comes from the device's cuobjdump or, without a GPU,
from scripts/sass_tools.sh (NVIDIA's cuobjdump and nvdisasm from PyPI; the
same listing as the device's for the same nvcc):

    cuobjdump -sass BINARY | gzip > $OUT/bin.sass.gz         (on the device)
    bash scripts/sass_tools.sh listing bin.sass.gz [flags]    (here: tc_bench.cu)
    python3 scripts/sass_loops.py bin.sass.gz rows_kernel

Arguments: the listing (plain or .gz, or - for stdin), then substrings of the
function names to report (all functions without any). --ops N prints the N
most frequent opcodes of each loop.

--against BASE compares with a second listing, e.g. main's build: each
function's loop beside BASE's, marked `changed` where its length or lookups
differ and `LOST` where its table lookups lost the uniform-register base
(fewer `LDS [R+UR]`, more `LDS [R]` whose address an add made: the
"(added)" column; a lookup addressed by its PRMT alone, as with a base-free
table, does not count), and `GREW` where the loop is more than --grow percent
(default 5) longer. The exit status is 1 if any loop is marked either way, so
a device script can stop before timing a build whose loop ptxas has changed
(v63: set-up code alone cost the grouped decode loops their base, 4-7 %;
v64: with a base-free table the same set-up code left the base alone but
made the decode loops 40-50 % longer, results.md v64):

    python3 scripts/sass_loops.py new.sass.gz --against main.sass.gz decode_kernel || exit 1
"""
import argparse
import collections
import gzip
import re
import sys

INSTR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"\bBRA\b.*?(0x[0-9a-f]+)")
LDS_UR = re.compile(r"^LDS(\.\w+)*\s+R\d+,\s*\[R\d+\+UR\d+")
LDS_REG = re.compile(r"^LDS(\.\w+)*\s+R\d+,\s*\[(R\d+)\]$")
DEST = re.compile(r"^([A-Z0-9_.]+)\s+(R\d+)\b")
ADDS = ("IADD", "IADD3", "IMAD.IADD", "VIADD")   # (v63's lost bases: IMAD.IADD)


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


# Tensor-core instructions, for --hot.
TENSOR = re.compile(r"^(HGMMA|HMMA|IMMA|QMMA|OMMA|UTC\w*MMA)\b")


def loops(instrs):
    """The spans [target, branch] of the backward branches that lie before the
    function's last EXIT. ptxas puts slow paths after it, e.g. an mbarrier
    wait's retry, whose branch back into the code would span most of the
    function (the wgmma kernel's listings until v66: 20-30 % more than its
    loop)."""
    exits = [addr for addr, text in instrs if text.startswith("EXIT")]
    last = exits[-1] if exits else None
    out = []
    for addr, text in instrs:
        m = BRANCH.search(text)
        if m and int(m.group(1), 16) < addr and (last is None or addr < last):
            out.append((int(m.group(1), 16), addr))
    return out


def main_loop(instrs, hot=False):
    """The main loop: the longest loop, or (hot) the shortest loop that holds
    a tensor-core instruction, e.g. the wgmma kernel's loop over a tile part's
    units inside its loop over the parts (v66; the longest loop if none)."""
    spans = loops(instrs)
    body = lambda span: [text for addr, text in instrs if span[0] <= addr <= span[1]]
    if hot:
        with_mma = [s for s in spans if any(TENSOR.match(t) for t in body(s))]
        if with_mma:
            return body(min(with_mma, key=lambda s: s[1] - s[0]))
    if not spans:
        return []
    return body(max(spans, key=lambda s: s[1] - s[0]))


def address_source(body, i, reg):
    """The opcode that last wrote `reg` before body[i] (within the loop), or None."""
    for text in reversed(body[:i]):
        m = DEST.match(text)
        if m and m.group(2) == reg:
            return m.group(1)
    return None


def summary(body):
    ops = collections.Counter(text.split()[0] for text in body)
    lds_reg = [(i, m.group(2)) for i, m in ((i, LDS_REG.match(t)) for i, t in enumerate(body)) if m]
    return {
        "instructions": len(body),
        "lds_ur": sum(bool(LDS_UR.match(t)) for t in body),
        "lds_reg": len(lds_reg),
        # LDS [R] whose address an add made: a table base added per lookup
        # (an address straight from a PRMT, as with a base-free table, is not).
        "lds_add": sum(address_source(body, i, reg) in ADDS for i, reg in lds_reg),
        "ops": ops,
    }


def read_listing(path, hot=False):
    """{name: loop summary} of a listing file (plain or .gz, or - for stdin)."""
    if path == "-":
        lines = sys.stdin.read().split("\n")
    else:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            lines = f.read().split("\n")
    return {name: summary(main_loop(instrs, hot)) for name, instrs in functions(lines).items()}


def lost_base(s, base):
    """The loop's table lookups lost their uniform-register base against base's:
    fewer [R+UR] loads and more loads from an added address."""
    return s["lds_ur"] < base["lds_ur"] and s["lds_add"] > base["lds_add"]


def grew(s, base, pct):
    """The loop is more than pct percent longer than base's."""
    return s["instructions"] * 100 > base["instructions"] * (100 + pct)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("listing")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--ops", type=int, default=0)
    ap.add_argument("--against", metavar="BASE",
                    help="a second listing to compare with (exit 1 if a base is lost or a loop grew)")
    ap.add_argument("--hot", action="store_true",
                    help="the shortest loop holding a tensor-core instruction instead of the longest loop")
    ap.add_argument("--grow", type=float, default=5.0, metavar="PCT",
                    help="with --against: a loop longer than BASE's by more than PCT %% is marked GREW (default 5)")
    args = ap.parse_intermixed_args(argv)
    found = read_listing(args.listing, args.hot)
    base = read_listing(args.against, args.hot) if args.against else None
    head = f"{'loop':>5s} {'LDS [R+UR]':>10s} {'LDS [R]':>7s} {'(added)':>7s}"
    print(head + (f" | {head}  {'':7s}" if base is not None else "") + "  function")
    lost = longer = 0
    for name, s in found.items():
        if args.names and not any(x in name for x in args.names):
            continue
        line = f"{s['instructions']:5d} {s['lds_ur']:10d} {s['lds_reg']:7d} {s['lds_add']:7d}"
        if base is not None:
            b = base.get(name)
            if b is None:
                line += f" | {'(not in BASE)':>32s}  {'':7s}"
            else:
                key = ("instructions", "lds_ur", "lds_reg", "lds_add")
                mark = ("LOST" if lost_base(s, b) else "GREW" if grew(s, b, args.grow)
                        else "changed" if any(s[k] != b[k] for k in key) else "")
                lost += mark == "LOST"
                longer += mark == "GREW"
                line += f" | {b['instructions']:5d} {b['lds_ur']:10d} {b['lds_reg']:7d} {b['lds_add']:7d}  {mark:7s}"
        print(f"{line}  {name}")
        for op, n in s["ops"].most_common(args.ops):
            print(f"{'':18s}{op:28s} {n}")
    if lost:
        print(f"{lost} loop(s) lost the table base's uniform register against {args.against}")
    if longer:
        print(f"{longer} loop(s) more than {args.grow:g} % longer than in {args.against}")
    return 1 if lost or longer else 0


if __name__ == "__main__":
    sys.exit(main())
