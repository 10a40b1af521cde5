"""scripts/sass_loops.py on a small hand-written listing: the main loop is the
longest backward branch's span, and its shared loads are counted by how they
address shared memory."""
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import sass_loops  # noqa: E402

LISTING = """
		Function : kernel_a
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   LDS R2, [R3+UR4] ;
        /*0020*/                   PRMT R5, R6, 0x5504, R7 ;
        /*0030*/                   LDS R8, [R5+UR4] ;
        /*0040*/                   IMAD.IADD R9, R5, 0x1, R10 ;
        /*0050*/                   LDS R11, [R9] ;
        /*0060*/              @!P0 BRA 0x10 ;
        /*0070*/                   ISETP.NE.AND P1, PT, R1, RZ, PT ;
        /*0080*/               @P1 BRA 0x70 ;
        /*0090*/                   EXIT ;
		Function : kernel_b
        /*0000*/                   EXIT ;
"""


def test_main_loop_and_lookups(tmp_path, capsys):
    funcs = sass_loops.functions(LISTING.split("\n"))
    assert list(funcs) == ["kernel_a", "kernel_b"]
    body = sass_loops.main_loop(funcs["kernel_a"])
    assert len(body) == 6 and body[0].startswith("LDS R2") and body[-1] == "BRA 0x10"   # (predicate dropped)
    s = sass_loops.summary(body)
    assert (s["instructions"], s["lds_ur"], s["lds_reg"]) == (6, 2, 1)
    assert sass_loops.main_loop(funcs["kernel_b"]) == []
    path = tmp_path / "x.sass.gz"
    with gzip.open(path, "wt") as f:
        f.write(LISTING)
    assert sass_loops.main([str(path), "kernel_a", "--ops", "1"]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[1].split()[:3] == ["6", "2", "1"] and out[1].endswith("kernel_a") and "LDS" in out[2]
