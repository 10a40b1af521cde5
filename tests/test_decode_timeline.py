"""The reader of the decode kernel's timeline probe (scripts/decode_timeline.py,
probe 256 of ptx/kbit_decode.cuh), on rows built here: the CTA rows and the
per-warp mark rows are read from their own places only, rows left in reused
memory by an earlier call (another CTA count, or a row out of place) are
skipped, and a warp without units reads as nan. CPU only."""
import math
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import decode_timeline as T  # noqa: E402


def _rows(ctas, warps, extra_rows=8):
    """C as the probe leaves it: ctas CTA rows, then 4 x ctas warp rows."""
    w = torch.zeros((5 * ctas + extra_rows, 16), dtype=torch.int64)
    for b in range(ctas):
        w[b, 0] = 1000 + 10 * b          # start, ns
        w[b, 1] = 1000 + 10 * b + 50000  # end, ns: 50 us
        w[b, 9] = 100000                 # SM clocks from start to end: 2 GHz
        w[b, 15] = (T.MARK << 48) | (ctas << 16) | b
        for i, marker in enumerate(sorted(T.WARP_MARKS)):
            v = torch.full((16,), -1, dtype=torch.int32)
            v[:warps] = torch.tensor([2000 * (i + 1) + b] * warps, dtype=torch.int32)
            r = (1 + i) * ctas + b
            w[r, :8] = v.view(torch.int64)
            w[r, 15] = (marker << 48) | (ctas << 16) | b
    return w


def test_rows_read_from_their_places():
    ctas, warps = 3, 12
    t = T.timeline(_rows(ctas, warps).view(torch.float16))
    assert len(t) == ctas
    assert t[1]["start"] == pytest.approx(0.01) and t[0]["cta"] == pytest.approx(50.0)
    # marks in order end, acc, wait, part (markers 0x71AF..0x71B2), 2 GHz
    kinds = [T.WARP_MARKS[m] for m in sorted(T.WARP_MARKS)]
    for i, kind in enumerate(kinds):
        got = t[2]["marks"][kind]
        assert got[:warps] == pytest.approx([(2000 * (i + 1) + 2) / 2e3] * warps)
        assert all(math.isnan(x) for x in got[warps:])   # no such warps
    assert t[2]["warps"] == t[2]["marks"]["end"]


def test_stale_rows_are_skipped():
    ctas = 3
    w = _rows(ctas, 16, extra_rows=40)
    # A CTA row of an earlier call with 40 CTAs, at its own place: another count.
    w[30, 15] = (T.MARK << 48) | (40 << 16) | 30
    # This call's count, out of place (a row of CTA 1 at row 31).
    w[31, 15] = (T.MARK << 48) | (ctas << 16) | 1
    # A warp row out of place, with other values.
    w[32, :8] = torch.full((16,), 7, dtype=torch.int32).view(torch.int64)
    w[32, 15] = (sorted(T.WARP_MARKS)[1] << 48) | (ctas << 16) | 0
    t = T.timeline(w.view(torch.float16))
    assert len(t) == ctas
    acc = T.WARP_MARKS[sorted(T.WARP_MARKS)[1]]
    assert t[0]["marks"][acc][0] == pytest.approx(4000 / 2e3)


def test_no_rows_is_an_error():
    with pytest.raises(RuntimeError, match="no timeline rows"):
        T.timeline(torch.zeros((8, 16), dtype=torch.int64).view(torch.float16))
