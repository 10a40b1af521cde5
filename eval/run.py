"""The leaderboard harness: tests, benchmarks, leaderboard runs, profiles and
PTX compile checks for every problem of the module.

    python eval/run.py                       every problem: tests, then benchmarks
    python eval/run.py --mode test|benchmark|leaderboard|profile|compile
    python eval/run.py --problem kbit_gemm --filter 70b --graph --json out.json --plot roof.png

Conventions kept from the GPU MODE harness (shared/notes/gpumode-harness.md):
task specs are data (eval/tasks/<problem>.json: `tests` and `benchmarks`, each a
dict of generate_input arguments with a seed); inputs are cloned before the
call and outputs poisoned; leaderboard mode regenerates inputs with fresh seeds
for every timed call and re-checks every output; with POPCORN_FD set, results
are also written to that file descriptor as `key: value` lines.
Fixed weaknesses: the L2 flush buffer is allocated once (>= 2x L2); the stop
rule needs at least 100 ms of samples; the baseline is timed in the same run;
speed-of-light = minimal bytes / the streaming read bandwidth measured here.
With --graph, each benchmark also times a plain read of its minimal bytes
(the submission's `plain_read`, where it has one): the ceiling that reading
those bytes alone reaches on this GPU, launch and ramp-up included.
Without CUDA the portable path runs on the CPU, on the tests and the reduced
benchmark set (specs with "cpu": true).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, asdict
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
TASKS = Path(__file__).resolve().parent / "tasks"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import reference as R  # noqa: E402

PROBLEMS = R.PROBLEMS
EXIT_OK, EXIT_CUDA_FAIL, EXIT_VALIDATION_FAIL, EXIT_BAD_SPEC = 0, 110, 112, 113


# ----------------------------------------------------------------------------
# Task specs
# ----------------------------------------------------------------------------

def load_tasks(problem: str, folder: Path = TASKS) -> dict:
    """The task specs of a problem: FOLDER/<problem>.json (by default the
    leaderboard's, eval/tasks; --tasks names another folder, e.g.
    eval/tasks/extra)."""
    path = Path(folder) / f"{problem}.json"
    if not path.exists():
        raise FileNotFoundError(f"no task specs for {problem!r} at {path}")
    tasks = json.loads(path.read_text())
    for kind in ("tests", "benchmarks"):
        for spec in tasks.get(kind, []):
            if spec.get("problem", problem) != problem or "seed" not in spec:
                raise ValueError(f"bad spec in {path.name}/{kind}: {spec}")
    return tasks


_SPEC_ITEM = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*([^;]+?)\s*(?:;|$)")


def parse_spec_line(line: str) -> dict:
    """GPU MODE test-file line 'm: 128; k: 256; l: 1; seed: 1111' -> dict
    (ints, floats, booleans and strings)."""
    out = {}
    for key, val in _SPEC_ITEM.findall(line):
        if re.fullmatch(r"-?\d+", val):
            out[key] = int(val)
        elif re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", val):
            out[key] = float(val)
        elif val in ("true", "false", "True", "False"):
            out[key] = val.lower() == "true"
        else:
            out[key] = val.strip('"')
    if not out:
        raise ValueError(f"not a spec line: {line!r}")
    return out


def format_spec(spec: dict) -> str:
    return "; ".join(f"{k}: {v}" for k, v in spec.items() if k not in ("problem", "cpu"))


def spec_name(spec: dict) -> str:
    if "name" in spec:
        return spec["name"]
    return " ".join(f"{k}={v}" for k, v in spec.items() if k not in ("problem", "seed", "cpu"))


# ----------------------------------------------------------------------------
# Statistics and the stop rule
# ----------------------------------------------------------------------------

@dataclass
class Stats:
    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float
    median: float


def stats(samples: list) -> Stats:
    n = len(samples)
    mean = statistics.fmean(samples)
    std = statistics.stdev(samples) if n > 1 else 0.0
    return Stats(n, mean, std, std / math.sqrt(n) if n > 1 else float("inf"), min(samples),
                 max(samples), statistics.median(samples))


def should_stop(samples: list, elapsed_s: float, min_time_s: float = 0.1, rel_err: float = 1e-3,
                budget_s: float = 2.0, max_runs: int = 10000, min_runs: int = 3) -> bool:
    """Stop once at least `min_time_s` of samples (and `min_runs`) exist and the
    relative standard error of the mean is below `rel_err`, or the time budget /
    run cap is spent."""
    n = len(samples)
    if n >= max_runs or (elapsed_s >= budget_s and n >= min_runs):
        return True
    if n < max(min_runs, 2) or sum(samples) * 1e-6 < min_time_s:
        return False
    s = stats(samples)
    return s.mean > 0 and s.err / s.mean < rel_err


# ----------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------

class Timer:
    """Times one call: CUDA events with the L2 flushed before the call, or
    perf_counter on the CPU. The flush READS a buffer of >= 2x L2 (allocated
    once): the L2 then holds clean, unrelated lines. (Writing the buffer, as the
    GPU MODE harness does, leaves L2 full of dirty lines whose write-back the
    next kernel pays for.)"""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        if self.cuda:
            l2 = torch.cuda.get_device_properties(device).L2_cache_size
            self.flush_buf = torch.ones(max(2 * l2, 128 << 20) // 4, dtype=torch.int32, device=device)
            self.flush_out = torch.zeros((), dtype=torch.int64, device=device)
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def flush(self):
        if self.cuda:
            torch.sum(self.flush_buf, dim=0, dtype=torch.int64, out=self.flush_out)

    def time_us(self, fn: Callable[[], object], before: Optional[Callable[[], None]] = None) -> float:
        if before is not None:
            before()
        if self.cuda:
            self.flush()
            torch.cuda.synchronize(self.device)
            self.start.record()
            fn()
            self.end.record()
            self.end.synchronize()
            return self.start.elapsed_time(self.end) * 1e3
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e6

    def graph_us(self, fn: Callable[[], object], reps: int = 20) -> float:
        """Kernel time without launch gaps: a CUDA graph of `reps` (flush, call)
        pairs minus a graph of `reps` flushes, divided by reps (median of 5)."""
        if not self.cuda:
            raise RuntimeError("graph timing needs CUDA")
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(stream):
            fn()                                           # warm: builds, workspaces
        torch.cuda.current_stream(self.device).wait_stream(stream)
        torch.cuda.synchronize(self.device)
        g_both, g_flush = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(g_both, stream=stream):
            for _ in range(reps):
                self.flush()
                fn()
        with torch.cuda.graph(g_flush, stream=stream):
            for _ in range(reps):
                self.flush()
        out = []
        for _ in range(5):
            t = []
            for g in (g_both, g_flush):
                torch.cuda.synchronize(self.device)
                self.start.record()
                g.replay()
                self.end.record()
                self.end.synchronize()
                t.append(self.start.elapsed_time(self.end) * 1e3)
            out.append((t[0] - t[1]) / reps)
        return statistics.median(out)


def measure(timer: Timer, fn, before=None, budget_s: float = 2.0, min_time_s: float = 0.1,
            warmup: int = 3) -> Stats:
    for _ in range(warmup):
        if before is not None:
            before()
        fn()
    if timer.cuda:
        torch.cuda.synchronize(timer.device)
    samples, t0 = [], time.perf_counter()
    while not should_stop(samples, time.perf_counter() - t0, min_time_s=min_time_s, budget_s=budget_s):
        samples.append(timer.time_us(fn, before))
    return stats(samples)


def read_bandwidth_gbs(device: torch.device) -> float:
    """Streaming read bandwidth: a sum over a buffer far larger than L2 (median of 10)."""
    if device.type != "cuda":
        n = 1 << 26
        x = torch.ones(n, dtype=torch.float32)
        t = []
        for _ in range(5):
            t0 = time.perf_counter()
            x.sum()
            t.append(time.perf_counter() - t0)
        return 4 * n / statistics.median(t) / 1e9
    n = 1 << 29                                   # 2 GiB of float32
    x = torch.ones(n, dtype=torch.float32, device=device)
    timer = Timer(device)
    for _ in range(3):
        x.sum()
    t = [timer.time_us(lambda: x.sum()) for _ in range(10)]
    del x
    return 4 * n / (statistics.median(t) * 1e-6) / 1e9


# ----------------------------------------------------------------------------
# Problem facts: bytes moved, flops, baselines
# ----------------------------------------------------------------------------

def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def active_experts(data: R.KbitGemmInput) -> list:
    o = data.offsets.tolist()
    return [e for e in range(len(o) - 1) if o[e + 1] > o[e]]


def min_bytes(data) -> int:
    """Each input read once, the output written once. kbit: weights of the
    experts that have rows only."""
    if R.problem_of(data) == "kbit_gemm":
        E = data.b_packed.shape[0]
        n_active = len(active_experts(data))
        w = (_nbytes(data.b_packed) + _nbytes(data.b_absmax)) * n_active // E
        return w + _nbytes(data.a) + _nbytes(data.c) + _nbytes(data.codebook) + _nbytes(data.offsets)
    a, b, sfa, sfb, _, _, c = data
    m, kh, l = a.shape
    return m * kh * l + m * kh // 8 * l + kh * l + kh // 8 * l + _nbytes(c)


def flops(data) -> int:
    if R.problem_of(data) == "kbit_gemm":
        d = R.kbit_dims(data)
        return 2 * d["m"] * d["n"] * d["k"]
    m, kh, l = data[0].shape
    return 2 * m * 2 * kh * l


def make_baselines(data, device) -> dict:
    """name -> zero-argument callable, measured in the same run as the kernel.
    kbit: cuBLAS on the dequantized weights in the activation dtype (grouped:
    torch._grouped_mm on bf16 weights); for M <= 8 dense bf16 also torch's int4
    tinygemm (group 32). nvfp4: the portable reference path. Failing baselines
    are left out."""
    out = {}
    if R.problem_of(data) == "kbit_gemm":
        d = R.kbit_dims(data)
        dt = data.a.dtype
        if d["experts"] == 1:
            w = R.dequantize(data.b_packed, data.b_absmax, data.codebook, d["n"], d["k"])[0].to(dt)
            a = data.a.clone()
            if device.type == "cpu":
                a32, w32 = a.float(), w.float()
                out["torch.mm"] = lambda: a32 @ w32.T
            else:
                out["cublas"] = lambda: torch.mm(a, w.T)
                if d["m"] <= 8:
                    try:
                        gen = torch.Generator(device=device).manual_seed(0)
                        q = torch.randint(0, 256, (d["n"], d["k"] // 2), dtype=torch.uint8, device=device,
                                          generator=gen)
                        packed = torch._convert_weight_to_int4pack(q, 8)
                        sz = torch.ones(d["k"] // 32, d["n"], 2, dtype=torch.bfloat16, device=device)
                        ab = a.to(torch.bfloat16)
                        fn = lambda: torch._weight_int4pack_mm(ab, packed, 32, sz)  # noqa: E731
                        fn()
                        out["int4_tinygemm"] = fn
                    except Exception:
                        pass
        elif device.type == "cuda":
            try:
                # dequantize all experts (bf16 weights, as a serving stack would hold them)
                w = torch.empty(d["experts"], d["n"], d["k"], dtype=torch.bfloat16, device=device)
                for e0 in range(0, d["experts"], 64):
                    w[e0:e0 + 64] = R.dequantize(data.b_packed[e0:e0 + 64], data.b_absmax[e0:e0 + 64],
                                                 data.codebook, d["n"], d["k"]).to(torch.bfloat16)
                a = data.a.to(torch.bfloat16)
                offs = data.offsets[1:].contiguous()
                wt = w.transpose(-2, -1)
                fn = lambda: torch._grouped_mm(a, wt, offs=offs)  # noqa: E731
                fn()
                out["grouped_mm_bf16"] = fn
            except Exception:
                pass
    else:
        out["portable"] = lambda: R.nvfp4_reference(data)
    return out


# ----------------------------------------------------------------------------
# Submission, inputs
# ----------------------------------------------------------------------------

def load_submission(path: Path):
    spec = importlib.util.spec_from_file_location("kbit_submission_under_test", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(mod)
    if not hasattr(mod, "custom_kernel"):
        raise AttributeError(f"{path} has no custom_kernel")
    return mod


def clone_input(data):
    if isinstance(data, R.KbitGemmInput):
        return R.KbitGemmInput(*(t.clone() for t in data))
    return tuple(_clone_keep_layout(t) for t in data)


def _clone_keep_layout(t: torch.Tensor) -> torch.Tensor:
    """Clone with the same strides (the permuted nvfp4 views must stay views of a
    contiguous buffer in the same order)."""
    out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
    out.copy_(t)
    return out


def output_of(data) -> torch.Tensor:
    return data.c if isinstance(data, R.KbitGemmInput) else data[6]


def poison(data):
    out = output_of(data)
    out.fill_(float("nan"))


def generate(spec: dict, device) -> object:
    s = {k: v for k, v in spec.items() if k not in ("problem", "name", "cpu")}
    return R.generate_input(spec["problem"], device=device, **s)


# ----------------------------------------------------------------------------
# POPCORN output
# ----------------------------------------------------------------------------

class Popcorn:
    """`key: value` lines to the fd named by POPCORN_FD (no-op without it)."""

    def __init__(self, fd: Optional[str] = None):
        fd = fd if fd is not None else os.environ.get("POPCORN_FD")
        self.file = os.fdopen(int(fd), "w", buffering=1) if fd else None

    def log(self, key: str, value) -> None:
        if self.file is not None:
            self.file.write(f"{key}: {value}\n")

    def close(self):
        if self.file is not None:
            self.file.flush()


# ----------------------------------------------------------------------------
# Modes
# ----------------------------------------------------------------------------

@dataclass
class Result:
    problem: str
    kind: str
    name: str
    spec: dict
    ok: bool
    message: str = ""
    stats: Optional[dict] = None
    graph_us: Optional[float] = None
    sol_us: Optional[float] = None
    ceiling_us: Optional[float] = None    # graph time of a plain read of `bytes` (--graph)
    bytes: Optional[int] = None
    flops: Optional[int] = None
    baselines: dict = field(default_factory=dict)       # name -> mean us
    baselines_graph: dict = field(default_factory=dict)


def run_tests(problem, mod, device, popcorn, results, log, folder=TASKS):
    tasks = load_tasks(problem, folder).get("tests", [])
    for i, spec in enumerate(tasks):
        name = spec_name(spec)
        popcorn.log(f"test.{i}.spec", format_spec(spec))
        try:
            data = generate(spec, device)
            arg = clone_input(data)
            poison(arg)
            out = mod.custom_kernel(arg)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            ok, msg = R.check_implementation(data, out)
        except Exception as exc:   # a crash is a failed test, with its reason
            ok, msg = False, f"{type(exc).__name__}: {exc}"
        popcorn.log(f"test.{i}.status", "pass" if ok else "fail")
        if not ok:
            popcorn.log(f"test.{i}.error", msg.replace("\n", " "))
        results.append(Result(problem, "test", name, spec, ok, msg))
        log(f"  {'pass' if ok else 'FAIL'}  {name:42s} {msg}")


def run_benchmarks(problem, mod, device, popcorn, results, log, args, read_gbs, leaderboard=False):
    tasks = load_tasks(problem, args.tasks).get("benchmarks", [])
    if device.type != "cuda":
        tasks = [s for s in tasks if s.get("cpu")]
    if args.filter:
        tasks = [s for s in tasks if re.search(args.filter, spec_name(s))]
    timer = Timer(device)
    for i, spec in enumerate(tasks):
        name = spec_name(spec)
        popcorn.log(f"benchmark.{i}.spec", format_spec(spec))
        try:
            res = _bench_one(spec, name, mod, device, timer, read_gbs, args, leaderboard)
        except Exception as exc:
            res = Result(problem, "benchmark", name, spec, False, f"{type(exc).__name__}: {exc}")
        results.append(res)
        if res.stats:
            s = res.stats
            popcorn.log(f"benchmark.{i}.runs", s["runs"])
            for k in ("mean", "std", "err", "best", "worst"):
                popcorn.log(f"benchmark.{i}.{k}", round(s[k] * 1e3, 1))     # ns
        popcorn.log(f"benchmark.{i}.status", "pass" if res.ok else "fail")
        log(_row(res))
        if device.type == "cuda":
            torch.cuda.empty_cache()


def _bench_one(spec, name, mod, device, timer, read_gbs, args, leaderboard) -> Result:
    problem = spec["problem"]
    data = generate(spec, device)
    arg = clone_input(data)
    poison(arg)
    out = mod.custom_kernel(arg)
    ok, msg = R.check_implementation(data, out)
    res = Result(problem, "benchmark", name, spec, ok, msg, bytes=min_bytes(data), flops=flops(data))
    res.sol_us = res.bytes / (read_gbs * 1e9) * 1e6
    if not ok:
        return res
    if leaderboard:
        # fresh inputs (seed bumped) for every timed call; every output re-checked
        samples, t0, seed = [], time.perf_counter(), spec["seed"]
        while not should_stop(samples, time.perf_counter() - t0, budget_s=args.budget_s, min_runs=3):
            seed += 13
            fresh = generate({**spec, "seed": seed}, device)
            arg = clone_input(fresh)
            poison(arg)
            samples.append(timer.time_us(lambda: mod.custom_kernel(arg)))
            if not args.no_recheck:
                ok, msg = R.check_implementation(fresh, output_of(arg))
                if not ok:
                    res.ok, res.message = False, f"leaderboard recheck (seed {seed}): {msg}"
                    return res
            del fresh, arg
        res.stats = asdict(stats(samples))
    else:
        res.stats = asdict(measure(timer, lambda: mod.custom_kernel(arg), before=lambda: poison(arg),
                                   budget_s=args.budget_s))
        ok, msg = R.check_implementation(data, output_of(arg))   # the last timed output
        if not ok:
            res.ok, res.message = False, f"after timing: {msg}"
            return res
    if args.graph and device.type == "cuda":
        try:   # a path that synchronizes (the portable one) cannot be captured
            res.graph_us = timer.graph_us(lambda: mod.custom_kernel(arg))
        except Exception as exc:
            res.message += f" [graph timing unavailable: {type(exc).__name__}]"
    if args.graph and device.type == "cuda":
        try:
            res.ceiling_us = plain_read_us(mod, timer, res.bytes, device)
        except Exception as exc:
            res.message += f" [plain read unavailable: {type(exc).__name__}: {exc}]"
    for bname, fn in make_baselines(data, device).items():
        try:
            res.baselines[bname] = measure(timer, fn, budget_s=min(args.budget_s, 1.0)).mean
            if args.graph and device.type == "cuda":
                try:
                    res.baselines_graph[bname] = timer.graph_us(fn)
                except Exception:
                    pass   # baselines that synchronize cannot be captured
        except Exception as exc:
            res.message += f" [{bname} failed: {type(exc).__name__}]"
    return res


def plain_read_us(mod, timer: Timer, nbytes: int, device) -> Optional[float]:
    """Graph time of reading `nbytes` (rounded up to 16) once with the
    submission's `plain_read` kernel; None where it has none (the portable
    path under KBIT_PORTABLE=1 raises, and the row says so)."""
    fn = getattr(mod, "plain_read", None)
    if fn is None:
        return None
    buf = torch.empty((nbytes + 15) // 16 * 16, dtype=torch.uint8, device=device)
    return timer.graph_us(lambda: fn(buf))


def _row(r: Result) -> str:
    if not r.stats:
        return f"  FAIL  {r.name:38s} {r.message}"
    mean = r.stats["mean"]
    base_name = next(iter(r.baselines), None)
    base = r.baselines.get(base_name) if base_name else None
    sp = f"{base / mean:6.2f}x" if base else "   n/a "
    g = f"{r.graph_us:8.2f}" if r.graph_us is not None else "       -"
    rd = f"{r.ceiling_us:8.2f}" if r.ceiling_us is not None else "       -"
    return (f"  {'pass' if r.ok else 'FAIL'}  {r.name:38s} {mean:9.2f} ±{r.stats['err']:6.2f} {g} "
            f"{r.sol_us:8.2f} {100 * r.sol_us / mean:6.1f}% {base if base else float('nan'):9.2f} {sp} {rd}")


HEADER = (f"  {'':4s}  {'case':38s} {'mean µs':>9s} {'±err':>7s} {'graph µs':>8s} {'SOL µs':>8s} "
          f"{'%SOL':>7s} {'base µs':>9s} {'speedup':>7s} {'read µs':>8s}")


def _summary_line(label: str, times: list, sols: list, speedups: list) -> str:
    """`label: n timed, geomean, mean %SOL[, geomean speed-up]` over per-case times (µs),
    SOL / time fractions and baseline / time ratios."""
    geomean = lambda xs: math.exp(statistics.fmean(math.log(x) for x in xs))
    line = f"{label}: {len(times)} timed, geomean {geomean(times):.2f} µs, mean %SOL {100 * statistics.fmean(sols):.1f}%"
    return line + (f", geomean speed-up {geomean(speedups):.2f}x" if speedups else "")


def summarize(results: list, log) -> None:
    bench = [r for r in results if r.kind == "benchmark" and r.stats]
    tests = [r for r in results if r.kind == "test"]
    if tests:
        log(f"tests: {sum(r.ok for r in tests)}/{len(tests)} passed")
    if bench:
        log(_summary_line("benchmarks", [r.stats["mean"] for r in bench],
                          [r.sol_us / r.stats["mean"] for r in bench],
                          [next(iter(r.baselines.values())) / r.stats["mean"] for r in bench if r.baselines]))
    # With --graph, the same over graph time: the eager mean above includes the host's
    # launch path (it moved the geomean by up to 19 % between four runs of one H200
    # build, v67), the graph time is the kernels' own.
    graphed = [r for r in bench if r.graph_us]
    if graphed:
        log(_summary_line("graph", [r.graph_us for r in graphed], [r.sol_us / r.graph_us for r in graphed],
                          [next(iter(r.baselines_graph.values())) / r.graph_us for r in graphed if r.baselines_graph]))


def run_profile(problem, mod, device, args, log):
    tasks = load_tasks(problem, args.tasks).get("benchmarks", [])
    if device.type != "cuda":
        tasks = [s for s in tasks if s.get("cpu")]
    if args.filter:
        tasks = [s for s in tasks if re.search(args.filter, spec_name(s))]
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    for spec in tasks:
        data = generate(spec, device)
        arg = clone_input(data)
        mod.custom_kernel(arg)
        with profile(activities=acts) as prof:
            for _ in range(5):
                mod.custom_kernel(arg)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
        log(f"== {spec_name(spec)} (5 calls)")
        log(prof.key_averages().table(sort_by=key, row_limit=8))


# ----------------------------------------------------------------------------
# Compile mode: every PTX family with nvcc -cubin, ptxas resource report
# ----------------------------------------------------------------------------

_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


@dataclass
class KernelReport:
    name: str
    arch: str
    registers: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    stack: int = 0
    smem: int = 0


def parse_ptxas(text: str) -> list:
    """ptxas -v output -> one KernelReport per entry function."""
    reports, cur = [], None
    for line in text.splitlines():
        m = _PTXAS_ENTRY.search(line)
        if m:
            cur = KernelReport(m.group(1), m.group(2))
            reports.append(cur)
            continue
        if cur is None:
            continue
        m = _PTXAS_STACK.search(line)
        if m:
            cur.stack, cur.spill_stores, cur.spill_loads = (int(x) for x in m.groups())
            continue
        m = _PTXAS_USED.search(line)
        if m:
            cur.registers = int(m.group(1))
            cur.smem = int(m.group(2) or 0)
    return reports


def demangle(names: list) -> list:
    try:
        out = subprocess.run(["cu++filt"], input="\n".join(names), capture_output=True, text=True,
                             timeout=30).stdout.splitlines()
        if len(out) == len(names):
            return [_shorten(n) for n in out]
    except (OSError, subprocess.SubprocessError):
        pass
    return names


def _shorten(name: str) -> str:
    name = re.sub(r"kbit::KbitConfig<(.*)>", r"<\1>", name)
    name = re.sub(r"\(kbit::\w+\)|\(const kbit::\w+\)", "", name)
    return name.replace("kbit::", "").replace("__nv_bfloat16", "bf16").replace("__half", "f16")


def compile_source(source: str, arch: str, extra_flags: Optional[list] = None, host: bool = False,
                   nvcc: str = "nvcc", timeout: int = 900, lineinfo: bool = True):
    """nvcc of `source` for sm_<arch> with the module's flags and ptxas -v:
    `-cubin` (device code only), or with host=True an object file (device and
    host code, as load_inline builds it). lineinfo=False leaves out -lineinfo
    (the line tables only: the same instructions and registers, ~8 % less
    ptxas time). Returns (returncode, output, reports)."""
    from submission import NVCC_FLAGS, TORCH_NVCC_DEFINES, gencode
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "tu.cu"
        src.write_text(source)
        mode = ["-c", "-Xcompiler", "-fPIC"] if host else ["-cubin"]
        flags = [f for f in NVCC_FLAGS if lineinfo or f != "-lineinfo"]
        cmd = [nvcc, *mode, *flags, *TORCH_NVCC_DEFINES, gencode(arch), "-Xptxas", "-v",
               *(extra_flags or []), str(src), "-o", str(Path(tmp) / "tu.out")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    text = proc.stdout + proc.stderr
    return proc.returncode, text, parse_ptxas(text)


def report_ok(rc: int, reports: list) -> bool:
    """A build passes when nvcc succeeded, ptxas reported kernels and none spills."""
    return rc == 0 and bool(reports) and not any(r.spill_stores or r.spill_loads for r in reports)


def compile_jobs(families: list) -> list:
    """The builds of `families`: (family, arch, host) per target, the first
    target of a family as an object file (host code too), the others as cubins."""
    import submission as S
    return [(f, arch, i == 0) for f in families for i, arch in enumerate(S.COMPILE_TARGETS[f])]


def compile_job(job: tuple, extra_flags: Optional[list] = None, lineinfo: bool = True) -> tuple:
    """Runs one build of compile_jobs(); returns (job, rc, output, reports, seconds)."""
    import submission as S
    fam, arch, host = job
    t0 = time.perf_counter()
    rc, text, reps = compile_source(S.assemble_source(fam), arch, extra_flags=extra_flags, host=host,
                                    lineinfo=lineinfo)
    return job, rc, text, reps, time.perf_counter() - t0


def log_compile_result(result: tuple, log, wide: bool = False) -> bool:
    """Prints one build's registers, spills and shared memory per kernel; True
    when it passed (report_ok). Names are cut at 70 characters unless `wide`
    (without cu++filt they stay mangled, and instances of one configuration
    template differ only at the end)."""
    (fam, arch, host), rc, text, reps, dt = result
    good = report_ok(rc, reps)
    kind = "object (device + host code)" if host else "cubin"
    log(f"== family {fam}, sm_{arch}, {kind}: {'ok' if good else 'FAILED'} ({dt:.0f} s, {len(reps)} kernels)")
    if rc != 0:
        log("\n".join(l for l in text.splitlines() if "error" in l.lower())[:4000] or text[-4000:])
        return False
    names = demangle([r.name for r in reps])
    log(f"   {'kernel':70s} {'regs':>5s} {'spill st/ld':>12s} {'stack':>6s} {'smem':>6s}")
    for r, n in zip(reps, names):
        flag = "  <-- SPILL" if r.spill_stores or r.spill_loads else ""
        log(f"   {(n if wide else n[:70]):70s} {r.registers:5d} {r.spill_stores:5d}/{r.spill_loads:<6d} {r.stack:6d} "
            f"{r.smem:6d}{flag}")
    return good


def run_compile(families: list, log, jobs: int = 2, wide: bool = False) -> bool:
    """Build every family's translation unit for its targets (compile_jobs) and
    print registers, spills and shared memory per kernel. False on any error or
    spill."""
    from concurrent.futures import ThreadPoolExecutor
    ok = True
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(compile_job, compile_jobs(families)):
            ok = log_compile_result(result, log, wide) and ok
    return ok


# ----------------------------------------------------------------------------
# Roofline plot
# ----------------------------------------------------------------------------

def plot_roofline(results: list, path: str, read_gbs: float, peak_tflops: float, log) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log(f"--plot: matplotlib is not installed; no plot written to {path}")
        return
    pts = [r for r in results if r.kind == "benchmark" and r.stats and r.bytes]
    if not pts:
        log("--plot: no timed benchmarks to plot")
        return
    fig, ax = plt.subplots(figsize=(9, 6))
    xs = [r.flops / r.bytes for r in pts]
    ys = [r.flops / (r.stats["mean"] * 1e-6) / 1e12 for r in pts]
    lo, hi = min(xs) / 2, max(xs) * 2
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(grid, [min(read_gbs * 1e9 * x / 1e12, peak_tflops) for x in grid], "k-",
            label=f"roof: {read_gbs:.0f} GB/s, {peak_tflops:.0f} TFLOP/s")
    ax.scatter(xs, ys, c=["tab:blue" if r.problem == "kbit_gemm" else "tab:orange" for r in pts], s=14)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / minimal byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("kbit_gemm (blue), nvfp4_gemv (orange)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    log(f"roofline written to {path}")


def peak_tflops(device) -> float:
    if device.type != "cuda":
        return 1.0
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(2):
        a @ a
    t = Timer(device)
    us = statistics.median(t.time_us(lambda: a @ a) for _ in range(5))
    return 2 * 8192 ** 3 / (us * 1e-6) / 1e12


# ----------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", choices=PROBLEMS, action="append",
                    help="problem(s) to run (default: all)")
    ap.add_argument("--mode", default="all",
                    choices=["all", "test", "benchmark", "leaderboard", "profile", "compile"])
    ap.add_argument("--submission", default=str(ROOT / "submission.py"), help="file exposing custom_kernel")
    ap.add_argument("--json", help="write all results to this file")
    ap.add_argument("--plot", help="roofline PNG (needs matplotlib)")
    ap.add_argument("--graph", action="store_true", help="also time CUDA-graph replays")
    ap.add_argument("--filter", help="only benchmarks whose name matches this regular expression")
    ap.add_argument("--peak-gbs", type=float, help="read bandwidth for speed-of-light (default: measured)")
    ap.add_argument("--budget-s", type=float, default=2.0, help="time budget per timed case")
    ap.add_argument("--no-recheck", action="store_true", help="leaderboard: skip re-checking outputs")
    ap.add_argument("--family", action="append", help="compile mode: families (default: all)")
    ap.add_argument("--wide", action="store_true", help="compile mode: kernel names whole, not cut at 70 characters")
    ap.add_argument("--tasks", default=str(TASKS),
                    help="folder of task specs, <problem>.json (default: the leaderboard's, eval/tasks)")
    args = ap.parse_args(argv)

    def log(msg=""):
        print(msg, flush=True)

    if args.mode == "compile":
        import submission as S
        fams = args.family or list(S.FAMILIES)
        return EXIT_OK if run_compile(fams, log, wide=args.wide) else 1

    # (Without --problem: the problems that the tasks folder has specs for.)
    problems = args.problem or [p for p in PROBLEMS if (Path(args.tasks) / f"{p}.json").exists()]
    if not problems:
        ap.error(f"no task specs (<problem>.json) in {args.tasks}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        log(f"device: {props.name} (cc {props.major}.{props.minor}, {props.multi_processor_count} SMs, "
            f"L2 {props.L2_cache_size >> 20} MB), torch {torch.__version__}")
    else:
        log(f"device: no CUDA GPU: running the portable path on the CPU (tests and the reduced "
            f"benchmark set), torch {torch.__version__}")
    mod = load_submission(Path(args.submission))
    popcorn = Popcorn()
    results: list = []
    read_gbs = None
    modes = ["test", "benchmark"] if args.mode == "all" else [args.mode]
    for problem in problems:
        for mode in modes:
            log(f"\n### {problem}: {mode}")
            if mode == "test":
                run_tests(problem, mod, device, popcorn, results, log, args.tasks)
            elif mode == "profile":
                run_profile(problem, mod, device, args, log)
            else:
                if read_gbs is None:
                    read_gbs = args.peak_gbs or read_bandwidth_gbs(device)
                    log(f"streaming read bandwidth: {read_gbs:.0f} GB/s "
                        f"({'given' if args.peak_gbs else 'measured'})")
                log(HEADER)
                run_benchmarks(problem, mod, device, popcorn, results, log, args, read_gbs,
                               leaderboard=mode == "leaderboard")
    log("")
    summarize(results, log)
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1, default=str))
        log(f"results written to {args.json}")
    if args.plot:
        plot_roofline(results, args.plot, read_gbs or 1.0, peak_tflops(device), log)
    failed = [r for r in results if not r.ok]
    popcorn.log("check", "fail" if failed else "pass")
    popcorn.close()
    return EXIT_VALIDATION_FAIL if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
