"""The ncu source-page summariser (scripts/ncu_source_summary.py) on a CSV
built here in ncu's layout: stall shares over all samples, instruction shares
by opcode family, wavefronts by full opcode, predicates stripped, "-" read as
zero. CPU only."""
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import ncu_source_summary as N  # noqa: E402

HEADER = ["Address", "Source", "# Samples", "Instructions Executed", "L1 Wavefronts Shared",
          "stall_wait", "stall_math", "stall_wait (Not Issued)"]


def test_summary(tmp_path):
    rows = [["0x0", "      LDS.128 R4, [R2] ;", "6", "100", "200", "2", "4", "9"],
            ["0x10", "  @!P0 LDS R5, [R3] ;", "2", "300", "100", "2", "0", "9"],
            ["0x20", "      PRMT R6, R5, 0x5410, R4 ;", "2", "600", "-", "0", "2", "9"]]
    path = tmp_path / "src.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["Kernel Name", "k"])
        w.writerow(HEADER)
        w.writerows(rows)
    text = N.summarise(str(path))
    assert "10 samples, 1000 warp instructions, 300 shared wavefronts" in text
    assert "stalls: math 60.0%, wait 40.0%" in text            # (Not Issued) columns left out
    assert "instructions by op: PRMT 60.0%, LDS 40.0%" in text  # predicate stripped, LDS.128 is LDS
    assert "wavefronts by op: LDS.128 66.7%, LDS 33.3%" in text
    assert "LDS       80.0% of samples: wait 50%, math 50%" in text
