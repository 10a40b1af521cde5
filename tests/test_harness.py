"""eval/run.py on the CPU: stop rule, statistics, spec parsing and formatting,
task files, POPCORN output, ptxas report parsing, a full CPU test run."""
import json
import os

import pytest
import torch

import run


def test_stats():
    s = run.stats([1.0, 2.0, 3.0, 4.0])
    assert s.runs == 4 and s.mean == 2.5 and s.best == 1.0 and s.worst == 4.0 and s.median == 2.5
    assert abs(s.std - 1.2909944) < 1e-6 and abs(s.err - s.std / 2) < 1e-12


def test_stop_rule():
    steady = [100.0] * 10                              # 1 ms of samples, zero error
    assert not run.should_stop(steady, elapsed_s=0.001)          # < 100 ms of samples
    assert run.should_stop([100.0] * 1001, elapsed_s=0.2)        # 100 ms, zero error
    noisy = [100.0, 200.0] * 600
    assert not run.should_stop(noisy, elapsed_s=0.2)             # error too large
    assert run.should_stop(noisy, elapsed_s=5.0, budget_s=2.0)   # budget spent
    assert not run.should_stop([1e6], elapsed_s=5.0, budget_s=2.0)   # fewer than min_runs
    assert run.should_stop([1.0] * 10000, elapsed_s=0.0)         # run cap


def test_parse_and_format_spec_lines():
    assert run.parse_spec_line("m: 128; k: 256; l: 1; seed: 1111") == dict(m=128, k=256, l=1, seed=1111)
    assert run.parse_spec_line("dtype: float16; full_range: true; x: 1.5") == dict(
        dtype="float16", full_range=True, x=1.5)
    spec = dict(problem="nvfp4_gemv", m=128, k=256, l=1, seed=1111)
    assert run.parse_spec_line(run.format_spec(spec)) == dict(m=128, k=256, l=1, seed=1111)
    with pytest.raises(ValueError):
        run.parse_spec_line("nothing here")


@pytest.mark.parametrize("problem", run.PROBLEMS)
def test_task_files(problem):
    t = run.load_tasks(problem)
    assert t["tests"] and t["benchmarks"]
    assert any(s.get("cpu") for s in t["benchmarks"])
    names = [run.spec_name(s) for s in t["benchmarks"]]
    assert len(names) == len(set(names))


def test_kbit_task_coverage():
    tests = run.load_tasks("kbit_gemm")["tests"]
    ms = {s["m"] for s in tests}
    assert {0, 1, 3, 17, 65, 300} <= ms
    assert any(s["n"] % 8 for s in tests) and any(s["k"] % 64 == 32 for s in tests)
    assert {s["bits"] for s in tests} == {2, 3, 4, 5} and {s["dtype"] for s in tests} == {"float16", "bfloat16"}
    assert any(s["experts"] > 1 for s in tests)


def test_popcorn_lines(tmp_path):
    path = tmp_path / "popcorn.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    p = run.Popcorn(str(fd))
    p.log("check", "pass")
    p.log("benchmark.0.mean", 123.4)
    p.close()
    assert path.read_text() == "check: pass\nbenchmark.0.mean: 123.4\n"
    run.Popcorn(None).log("x", 1)                         # no fd: no-op


PTXAS = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90a'
ptxas info    : Function properties for _Z3fooPf
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function '_Z3barv' for 'sm_90a'
ptxas info    : Function properties for _Z3barv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]
"""


def test_parse_ptxas():
    r = run.parse_ptxas(PTXAS)
    assert [x.name for x in r] == ["_Z3fooPf", "_Z3barv"]
    assert (r[0].registers, r[0].spill_stores, r[0].spill_loads, r[0].stack, r[0].smem) == (80, 4, 12, 8, 1024)
    assert (r[1].registers, r[1].spill_stores, r[1].smem) == (12, 0, 0)


def test_main_cpu_test_mode(tmp_path, monkeypatch):
    """The harness end to end on the portable path (the CPU, or KBIT_PORTABLE=1 on a GPU)."""
    monkeypatch.setenv("KBIT_PORTABLE", "1")
    out = tmp_path / "r.json"
    rc = run.main(["--mode", "test", "--problem", "nvfp4_gemv", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert len(res) == len(run.load_tasks("nvfp4_gemv")["tests"]) and all(r["ok"] for r in res)


def test_main_tasks_folder(tmp_path, monkeypatch):
    """--tasks: specs from another folder; without --problem, only the problems
    it has a file for; a folder without any is an error; the extra benchmark
    set is well formed (GPU-only specs with unique names)."""
    monkeypatch.setenv("KBIT_PORTABLE", "1")
    spec = dict(problem="kbit_gemm", m=3, n=40, k=64, bits=2, dtype="float16", experts=1, seed=7)
    (tmp_path / "kbit_gemm.json").write_text(json.dumps({"tests": [spec]}))
    out = tmp_path / "r.json"
    assert run.main(["--mode", "test", "--tasks", str(tmp_path), "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert [(r["problem"], r["spec"]["m"], r["spec"]["n"]) for r in res] == [("kbit_gemm", 3, 40)] and res[0]["ok"]
    with pytest.raises(SystemExit):
        run.main(["--mode", "test", "--tasks", str(tmp_path / "none")])
    extra = run.load_tasks("kbit_gemm", run.TASKS / "extra")["benchmarks"]
    names = [run.spec_name(s) for s in extra]
    assert extra and len(names) == len(set(names)) and not any(s.get("cpu") for s in extra)


def test_failing_submission_exit_code(tmp_path, monkeypatch):
    bad = tmp_path / "bad.py"
    bad.write_text("def custom_kernel(data):\n    return data[6]\n")      # returns the garbage c
    rc = run.main(["--mode", "test", "--problem", "nvfp4_gemv", "--submission", str(bad)])
    assert rc == run.EXIT_VALIDATION_FAIL


def test_benchmark_cpu_row(tmp_path, monkeypatch):
    monkeypatch.setenv("KBIT_PORTABLE", "1")
    out = tmp_path / "b.json"
    rc = run.main(["--mode", "benchmark", "--problem", "kbit_gemm", "--filter", "qwen3cn_kv_m1_",
                   "--budget-s", "0.2", "--json", str(out), "--peak-gbs", "100"] +
                  (["--graph"] if torch.cuda.is_available() else []))
    assert rc == 0
    (r,) = json.loads(out.read_text())
    assert r["ok"] and r["stats"]["runs"] >= 3 and r["sol_us"] > 0 and r["baselines"]


def test_summary_lines_eager_and_graph():
    """The summary: the eager line over stats["mean"], and with graph timings a
    second line over graph_us and the graph baselines (what the tables rank)."""
    def res(name, mean, graph, base, base_graph):
        return run.Result("kbit_gemm", "benchmark", name, {}, True, stats={"mean": mean}, graph_us=graph,
                          sol_us=1.0, baselines={"cublas": base}, baselines_graph={"cublas": base_graph})
    lines = []
    run.summarize([res("a", 20.0, 4.0, 40.0, 16.0), res("b", 5.0, 1.0, 5.0, 1.0)], lines.append)
    eager, graph = lines
    assert eager.startswith("benchmarks: 2 timed, geomean 10.00 µs, mean %SOL 12.5%")
    assert eager.endswith("speed-up 1.41x")
    assert graph.startswith("graph: 2 timed, geomean 2.00 µs, mean %SOL 62.5%")
    assert graph.endswith("speed-up 2.00x")
    lines.clear()
    run.summarize([res("a", 20.0, None, 40.0, 16.0)], lines.append)
    assert len(lines) == 1   # no graph timings, no graph line
