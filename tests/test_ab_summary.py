"""scripts/ab_summary.py on a small tc_ab.sh output: per case both builds'
graph-time ranges, the per-round difference and the check."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import ab_summary  # noqa: E402

AB = """=== round 1 new
8b_gateup_m32                 31.20   yes    0.034    27.94    27.87     8.53      1
70b_down_m64                 124.78   yes    0.013    83.14    83.40    30.45    162
=== round 1 base
8b_gateup_m32                 31.20   yes    0.034    29.30    29.34     8.65      2
70b_down_m64                 124.78   yes    1.500    81.34    81.57    30.08    139
=== round 2 base
8b_gateup_m32                 31.20   yes    0.034    29.08    29.31     8.60      4
70b_down_m64                 124.78   yes    0.013    81.93    81.64    30.19    149
=== round 2 new
8b_gateup_m32                 31.20   yes    0.034    27.49    27.59     8.60      2
70b_down_m64                 124.78   yes    0.013    82.50    82.33    30.60    161
"""


def test_summary_lines():
    runs = ab_summary.parse(AB.split("\n"))
    assert list(runs) == ["new", "base"] and list(runs["new"]) == ["8b_gateup_m32", "70b_down_m64"]
    assert runs["base"]["8b_gateup_m32"] == [(1, 29.30, 29.34, 0.034), (2, 29.08, 29.31, 0.034)]
    lines = ab_summary.summary(runs)
    a = lines[1].split()
    # ranges over both graph columns and rounds; deltas of the second column by round
    assert a[:3] == ["8b_gateup_m32", "27.49-27.94", "29.08-29.34"] and a[3:5] == ["-1.47", "-1.72"]
    assert a[-1] == "ok"
    b = lines[2].split()
    assert b[3:5] == ["+1.83", "+0.69"] and b[-1] == "FAILED"   # (err 1.5 > 1 in base's round 1)


def test_one_table_per_variant():
    """tc_ab.sh BUILDS: every build beside base gets its own table against base."""
    text = AB + AB.replace(" new\n", " s3\n").replace("27.", "26.")
    runs = ab_summary.parse(text.split("\n"))
    tables = ab_summary.summaries(runs)
    assert [t[0].split()[1] for t in tables] == ["new", "s3"]
    s3 = tables[1][1].split()
    assert s3[0] == "8b_gateup_m32" and s3[1] == "26.49-26.94"
