"""custom_kernel(data): the single entry point of the module.

    build (once per GPU architecture, cached)  ->  validate the input  ->  dispatch

Both problems (reference.py, SPEC sections 3 and 4) dispatch on the input type:
a `KbitGemmInput` runs the fused kbit dequantize + GEMM, the GPU MODE 7-tuple runs
the NVFP4 batched GEMV. On a CUDA GPU of compute capability >= 8.0 the kernels
of `ptx/` are built into ONE CUDA translation unit for the PTX family of the
architecture (torch.utils.cpp_extension.load_inline, cached by a hash of the
sources and flags: a warm start does not recompile). Without CUDA, or with
KBIT_PORTABLE=1, a plain PyTorch implementation runs instead.

Environment
    KBIT_PTX_FAMILY=sm80|sm90|sm100   force a family (lower families run on newer GPUs)
    KBIT_PORTABLE=1                   use the PyTorch path even on a GPU
    KBIT_VALIDATE_OFFSETS=1           check the offsets' values on the host (one sync
                                      per call); without it, offsets that are not a
                                      partition of the rows make the kernel write NaN
    KBIT_VERBOSE_BUILD=1              show the compiler's output
    KBIT_DTYPES=fp16|bf16             build the kbit kernels of one activation dtype
                                      only: ~2/3 of the first build's time; a kbit
                                      call in the other dtype raises ValueError
    KBIT_NVCC_SPLIT=N                 build with nvcc --split-compile=N (N threads for
                                      the device optimiser; 0: one per CPU). Off by
                                      default: it changes the PTX of most kernels
                                      (docs/results.md v60), so it waits for an A/B
    KBIT_DECODE_CFG=W,NT,STAGES[,P]   tuning experiments: warps per CTA, 16-row tiles
                                      per warp (then at every shape) and ring depth of
                                      the decode kernel (0 = the shape rule's, by shape:
                                      ptx/launch.cuh; see scripts/decode_variants.py);
                                      P builds a timing probe that computes WRONG
                                      results (bit mask, ptx/kbit_decode.cuh: 1 leaves
                                      out the dequant, 2 the weight copies, 4 the
                                      activation loads, 32 the split-tile completion, ...)
    KBIT_KERNEL=tiled|decode|decode64|wgmma|gemv|rows
                                      kbit_gemm: the mma.sync tiled GEMM kernel for every
                                      M, the decode kernel wherever it applies (<= 8 rows
                                      per expert, or dense M <= 16; decode64: with
                                      64-row warp tiles at every shape), the wgmma
                                      tiled kernel for every M (sm90 family;
                                      elsewhere the choice by shape), or
                                      the CUDA-core kernel wherever it applies (dense
                                      M = 1; grouped), or the row-owning kernel wherever
                                      it serves (dense M <= 32, sm90 family), instead of
                                      the choice by shape; to
                                      measure the crossover and test each kernel
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Optional

import torch

import reference as R

ROOT = Path(__file__).resolve().parent
PTX = ROOT / "ptx"

FAMILIES = ("sm80", "sm90", "sm100")

# The translation unit of each family, in reading order: the family's PTX
# wrappers and stages (each includes what it builds on), the kernels written
# against them, then the host launchers. api.h goes first (shared with bindings).
TU_FILES = {
    "sm80": ["sm80.cuh", "kbit_gemm.cuh", "kbit_decode.cuh", "nvfp4_gemv.cuh", "kbit_gemv.cuh", "plain_read.cuh",
             "launch.cuh"],
    "sm90": ["sm90_wgmma.cuh", "kbit_gemm.cuh", "kbit_decode.cuh", "kbit_wgmma.cuh", "kbit_rows.cuh", "nvfp4_gemv.cuh",
             "kbit_gemv.cuh", "plain_read.cuh", "launch.cuh"],
    "sm100": ["sm100.cuh", "kbit_gemm.cuh", "kbit_decode.cuh", "nvfp4_gemv.cuh", "kbit_gemv.cuh", "sm100_kernels.cuh",
              "plain_read.cuh", "launch.cuh"],
}

# Targets `eval/run.py --mode compile` builds each family for (no GPU needed).
COMPILE_TARGETS = {"sm80": ["80"], "sm90": ["90a"], "sm100": ["100a", "103a"]}

# torch's load_inline adds these to every nvcc command; compile mode uses them too.
TORCH_NVCC_DEFINES = ["-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
                      "--expt-relaxed-constexpr"]
NVCC_FLAGS = ["-O3", "-std=c++17", "-lineinfo"]


# ----------------------------------------------------------------------------
# Assembling one translation unit
# ----------------------------------------------------------------------------

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')


def _expand(name: str, seen: set) -> str:
    """Text of ptx/<name> with its local #include "..." lines replaced by the
    files' text (each file once; `#pragma once` dropped)."""
    if name in seen:
        return ""
    seen.add(name)
    out = [f"// ---- ptx/{name} " + "-" * max(0, 70 - len(name))]
    for line in (PTX / name).read_text().splitlines():
        m = _INCLUDE.match(line)
        if m and (PTX / m.group(1)).exists():
            out.append(_expand(m.group(1), seen))
        elif line.strip() == "#pragma once":
            continue
        else:
            out.append(line)
    return "\n".join(out) + "\n"


# KBIT_DTYPES (ptx/common.cuh): the activation dtypes a build has kernels for,
# as a bit mask (fp16 1, bf16 2).
_DTYPES_KNOB = {"fp16": 1, "bf16": 2, "both": 3}
_DTYPE_BIT = {torch.float16: 1, torch.bfloat16: 2}


def built_dtypes_mask(source: str) -> int:
    """The KBIT_DTYPES mask a translation unit of assemble_source was built
    with (its #define, else both)."""
    m = re.search(r"^#define KBIT_DTYPES (\d+)$", source, re.M)
    return int(m.group(1)) if m else 3


def _knob_defines() -> str:
    """Compile-time knobs from the environment, as #defines ahead of the ptx/
    files (which hold their #ifndef defaults), for A/B builds:
    KBIT_DECODE_CFG="W,NT,STAGES[,PROBE]" sets the decode kernel's
    KBIT_DECODE_WARPS / _NT / _STAGES / _PROBE; KBIT_DEFINES="KBIT_NAME=INT,..."
    sets any knob (e.g. KBIT_WG128_WARPS) and wins over KBIT_DECODE_CFG."""
    knobs: dict = {}
    cfg = os.environ.get("KBIT_DECODE_CFG")
    if cfg:
        try:
            w, nt, st, *probe = (int(x) for x in cfg.split(","))
            if len(probe) > 1:
                raise ValueError
        except ValueError:
            raise ValueError(f"KBIT_DECODE_CFG={cfg!r}; expected W,NT,STAGES[,PROBE] (integers)") from None
        knobs.update(KBIT_DECODE_WARPS=w, KBIT_DECODE_NT=nt, KBIT_DECODE_STAGES=st)
        if probe:
            knobs["KBIT_DECODE_PROBE"] = probe[0]
    dtypes = os.environ.get("KBIT_DTYPES")
    if dtypes:
        _need(dtypes in _DTYPES_KNOB, f"KBIT_DTYPES={dtypes!r}; expected fp16, bf16 or both")
        if _DTYPES_KNOB[dtypes] != 3:   # (both: the default source, so the default build's cache)
            knobs["KBIT_DTYPES"] = _DTYPES_KNOB[dtypes]
    spec = os.environ.get("KBIT_DEFINES")
    for item in spec.split(",") if spec else ():
        name, _, value = (x.strip() for x in item.partition("="))
        if not re.fullmatch(r"KBIT_[A-Z0-9_]+", name) or not re.fullmatch(r"-?\d+", value):
            raise ValueError(f"KBIT_DEFINES={spec!r}; expected KBIT_NAME=INT[,KBIT_NAME=INT...]")
        knobs[name] = int(value)
    return "".join(f"#define {k} {v}\n" for k, v in knobs.items())


def assemble_source(family: str) -> str:
    """The CUDA translation unit of a PTX family (kernels and launchers, no torch)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown PTX family {family!r}; expected one of {FAMILIES}")
    seen: set = set()
    parts = [f"// kbit module, PTX family {family}: assembled by submission.py from ptx/\n"
             f'#define KBIT_FAMILY "{family}"\n'
             f"#define KBIT_TCGEN05 {1 if family == 'sm100' else 0}\n" + _knob_defines(),
             _expand("api.h", seen)]
    parts += [_expand(f, seen) for f in TU_FILES[family]]
    return "\n".join(parts)


def assemble_bindings() -> str:
    return _expand("api.h", set()) + "\n" + (PTX / "bindings.cpp").read_text()


def family_for(capability) -> Optional[str]:
    """The PTX family for a compute capability (major, minor), KBIT_PTX_FAMILY first."""
    forced = os.environ.get("KBIT_PTX_FAMILY")
    major, minor = capability
    if forced:
        if forced not in FAMILIES:
            raise ValueError(f"KBIT_PTX_FAMILY={forced!r}; expected one of {FAMILIES}")
        need = {"sm80": (8, 0), "sm90": (9, 0), "sm100": (10, 0)}[forced]
        if (major, minor) < need or (forced != "sm80" and major != need[0]):
            raise ValueError(f"KBIT_PTX_FAMILY={forced} cannot run on compute capability "
                             f"{major}.{minor}")
        return forced
    if major == 10 and minor in (0, 3):
        return "sm100"
    if (major, minor) == (9, 0):
        return "sm90"
    if major >= 8:
        return "sm80"
    return None


def arch_tag(family: str, capability) -> str:
    """nvcc target for a family on a GPU: the arch-specific 'a' targets for the
    families that use arch-specific instructions (wgmma / tcgen05 need them)."""
    major, minor = capability
    base = f"{major}{minor}"
    return base + "a" if family in ("sm90", "sm100") else base


def gencode(tag: str) -> str:
    return f"-gencode=arch=compute_{tag},code=sm_{tag}"


# ----------------------------------------------------------------------------
# Build (once per process and device architecture; cached on disk by content)
# ----------------------------------------------------------------------------

_modules: dict = {}
_build_lock = threading.Lock()


def build(family: str, capability) -> object:
    tag = arch_tag(family, capability)
    key = (family, tag)
    with _build_lock:
        if key in _modules:
            return _modules[key]
        from torch.utils.cpp_extension import load_inline
        cuda_src = assemble_source(family)
        cpp_src = assemble_bindings()
        flags = NVCC_FLAGS + [gencode(tag)] + _split_compile_flags()
        digest = hashlib.sha256("\n".join([cuda_src, cpp_src, " ".join(flags),
                                           torch.__version__]).encode()).hexdigest()[:16]
        name = f"kbit_{family}_{tag}_{digest}"
        kwargs = {}
        if os.environ.get("KBIT_BUILD_DIR"):
            build_dir = Path(os.environ["KBIT_BUILD_DIR"]) / name
            build_dir.mkdir(parents=True, exist_ok=True)
            kwargs["build_directory"] = str(build_dir)
        else:
            build_dir = _default_build_dir(name)
        # A first build is one nvcc process over the family's whole translation
        # unit (the sm90 family: ~290 s on an H200 machine, docs/results.md v60), so say so
        # instead of stalling silently; a cached module loads in about a second.
        fresh = build_dir is None or not (build_dir / f"{name}.so").exists()
        if fresh:
            _notice(f"kbit: compiling the {family} kernels for {tag} (first use of this source; "
                    f"several minutes, one nvcc process) into {build_dir or 'torch_extensions'}")
        t0 = time.perf_counter()
        module = load_inline(name=name, cpp_sources=[cpp_src], cuda_sources=[cuda_src],
                             extra_cuda_cflags=flags, extra_cflags=["-O2", "-std=c++17"],
                             verbose=os.environ.get("KBIT_VERBOSE_BUILD") == "1", **kwargs)
        if fresh:
            _notice(f"kbit: {family} kernels ready after {time.perf_counter() - t0:.0f} s (cached for later runs)")
        module.kbit_dtypes_mask = built_dtypes_mask(cuda_src)   # (the self-check's inputs)
        _modules[key] = module
        return module


def _split_compile_flags() -> list:
    """KBIT_NVCC_SPLIT=N: nvcc --split-compile=N (a build-time experiment; the
    flag is part of the cache key like every other)."""
    v = os.environ.get("KBIT_NVCC_SPLIT")
    if not v:
        return []
    _need(v.isdigit(), f"KBIT_NVCC_SPLIT={v!r}; expected a thread count (0: one per CPU)")
    return [f"--split-compile={int(v)}"]


def _default_build_dir(name: str) -> Optional[Path]:
    """The folder load_inline builds `name` in without a build_directory
    (torch's extension cache); None where this torch does not say."""
    try:
        from torch.utils.cpp_extension import _get_build_directory
        return Path(_get_build_directory(name, False))
    except Exception:
        return None


def _notice(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _module_for(device: torch.device):
    if os.environ.get("KBIT_PORTABLE") == "1" or device.type != "cuda":
        return None, None
    cap = torch.cuda.get_device_capability(device)
    family = family_for(cap)
    if family is None:
        return None, None
    return build(family, cap), family


# ----------------------------------------------------------------------------
# Validation (clear ValueErrors before any launch)
# ----------------------------------------------------------------------------

def _need(cond: bool, msg: str):
    if not cond:
        raise ValueError(msg)


def _tensor(x, name: str) -> torch.Tensor:
    _need(isinstance(x, torch.Tensor), f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def validate_kbit(data: R.KbitGemmInput) -> dict:
    """Checks every documented property of a kbit input; returns its dims."""
    a, bp, ba, cb, offs, c = (_tensor(x, n) for x, n in zip(data, R.KbitGemmInput._fields))
    _need(a.dim() == 2, f"a must be 2-D [M, K], got shape {tuple(a.shape)}")
    _need(a.dtype in (torch.float16, torch.bfloat16), f"a must be float16 or bfloat16, got {a.dtype}")
    M, K = a.shape
    _need(K > 0 and K % R.BLOCK == 0, f"K = {K} must be a positive multiple of {R.BLOCK}")
    _need(c.dim() == 2 and c.shape[0] == M, f"c must be [M={M}, N], got shape {tuple(c.shape)}")
    N = c.shape[1]
    _need(N >= 1, "N must be >= 1")
    _need(c.dtype == a.dtype, f"c dtype {c.dtype} differs from a dtype {a.dtype}")
    _need(bp.dtype == torch.int32 and bp.dim() == 5,
          f"b_packed must be int32 [E, K_tiles, N_pad, 2, k], got {bp.dtype} {tuple(bp.shape)}")
    E, k_tiles, n_pad, two, bits = bp.shape
    _need(bits in R.BITS, f"b_packed's last dimension (k) must be 2..5, got {bits}")
    exp_tiles, exp_pad = R.tiled_shape(N, K)
    _need((k_tiles, n_pad, two) == (exp_tiles, exp_pad, 2),
          f"b_packed shape {tuple(bp.shape)} does not match N={N}, K={K}: expected "
          f"[E, {exp_tiles}, {exp_pad}, 2, k]")
    _need(E >= 1, "at least one expert")
    _need(E <= 4096, f"at most 4096 experts are supported, got {E}")
    _need(ba.dtype == torch.uint8 and tuple(ba.shape) == (E, k_tiles, n_pad, 2),
          f"b_absmax must be uint8 {(E, k_tiles, n_pad, 2)}, got {ba.dtype} {tuple(ba.shape)}")
    _need(cb.dtype == torch.float32 and cb.dim() == 1 and cb.numel() == 1 << bits,
          f"codebook must be float32 [{1 << bits}] for k={bits}, got {cb.dtype} {tuple(cb.shape)}"
          + ("" if cb.numel() in (4, 8, 16, 32) else " (length must be 4, 8, 16 or 32)"))
    _need(offs.dtype == torch.int32 and tuple(offs.shape) == (E + 1,),
          f"offsets must be int32 [{E + 1}], got {offs.dtype} {tuple(offs.shape)}")
    dev = a.device
    for t, n in ((bp, "b_packed"), (ba, "b_absmax"), (cb, "codebook"), (offs, "offsets"), (c, "c")):
        _need(t.device == dev, f"{n} is on {t.device}, a is on {dev}")
    for t, n in ((a, "a"), (bp, "b_packed"), (ba, "b_absmax"), (cb, "codebook"), (offs, "offsets"),
                 (c, "c")):
        _need(t.is_contiguous(), f"{n} must be contiguous")
    if dev.type == "cuda":
        # (c: the tiled kernels store it in 4- and 16-byte pieces.)
        for t, n in ((a, "a"), (bp, "b_packed"), (ba, "b_absmax"), (c, "c")):
            _need(t.data_ptr() % 16 == 0, f"{n} must be 16-byte aligned (data_ptr % 16 == 0)")
    if dev.type != "cuda" or os.environ.get("KBIT_VALIDATE_OFFSETS") == "1":
        o = offs.tolist()
        _need(o[0] == 0 and o[-1] == M and all(x <= y for x, y in zip(o, o[1:])),
              f"offsets must be non-decreasing from 0 to M={M}, got {o[:8]}{'...' if len(o) > 8 else ''}")
    return dict(M=M, N=N, K=K, E=E, bits=bits)


_SF_PERM = (3, 4, 1, 5, 2, 0)


def _blocked_ok(sfp: torch.Tensor, rows: int, cols: int, l: int) -> bool:
    """Is sfp the [32, 4, rest, 4, rest_k, l] permuted view of a contiguous
    (l, rest, rest_k, 32, 4, 4) buffer?"""
    rest, rest_k = R._cdiv(rows, 128), R._cdiv(cols, 4)
    shape = (l, rest, rest_k, 32, 4, 4)
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    strides = strides[::-1]
    exp_shape = tuple(shape[i] for i in _SF_PERM)
    exp_strides = tuple(strides[i] for i in _SF_PERM)
    return tuple(sfp.shape) == exp_shape and tuple(sfp.stride()) == exp_strides


def validate_nvfp4(data) -> dict:
    _need(isinstance(data, tuple) and len(data) == 7, "nvfp4 input must be the 7-tuple "
          "(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)")
    a, b, sfa, sfb, sfa_p, sfb_p, c = (_tensor(x, n) for x, n in
                                       zip(data, ("a", "b", "sfa", "sfb", "sfa_permuted",
                                                  "sfb_permuted", "c")))
    fp4 = (torch.float4_e2m1fn_x2, torch.uint8)
    _need(a.dtype in fp4 and a.dim() == 3, f"a must be float4_e2m1fn_x2 [m, k/2, l], got {a.dtype} {tuple(a.shape)}")
    m, kh, l = a.shape
    k = 2 * kh
    _need(k % 64 == 0 and k > 0, f"k = {k} must be a positive multiple of 64")
    _need(b.dtype in fp4 and b.dim() == 3 and b.shape[1:] == (kh, l) and b.shape[0] >= 1,
          f"b must be float4_e2m1fn_x2 [rows, {kh}, {l}], got {b.dtype} {tuple(b.shape)}")
    _need(a.stride(1) == 1 and b.stride(1) == 1, "a and b must be K-major (stride 1 along k/2)")
    f8 = torch.float8_e4m3fn
    _need(sfa.dtype == f8 and tuple(sfa.shape) == (m, k // 16, l),
          f"sfa must be float8_e4m3fn {(m, k // 16, l)}, got {sfa.dtype} {tuple(sfa.shape)}")
    _need(sfb.dtype == f8 and sfb.dim() == 3 and sfb.shape[1:] == (k // 16, l),
          f"sfb must be float8_e4m3fn [rows, {k // 16}, {l}], got {sfb.dtype} {tuple(sfb.shape)}")
    _need(c.dtype == torch.float16 and tuple(c.shape) == (m, 1, l),
          f"c must be float16 {(m, 1, l)}, got {c.dtype} {tuple(c.shape)}")
    dev = a.device
    for t, n in ((b, "b"), (c, "c")):
        _need(t.device == dev, f"{n} is on {t.device}, a is on {dev}")
    for t, n, rows in ((sfa_p, "sfa_permuted", m), (sfb_p, "sfb_permuted", 128)):
        _need(t.dtype == f8 and _blocked_ok(t, rows, k // 16, l),
              f"{n} must be the [32, 4, rest_mn, 4, rest_k, l] blocked view of a contiguous buffer, "
              f"got {t.dtype} {tuple(t.shape)} strides {t.stride()}")
    if dev.type == "cuda":
        _need(a.data_ptr() % 16 == 0 and a.stride(0) % 16 == 0 and a.stride(2) % 16 == 0,
              "a rows must be 16-byte aligned")
        _need(b.data_ptr() % 4 == 0 and b.stride(2) % 4 == 0, "b must be 4-byte aligned")
        # Where the plain scales are not usable, the kernel reads the blocked copy.
        for plain, blocked, n in ((sfa, sfa_p, "sfa"), (sfb, sfb_p, "sfb")):
            _need(_plain_sf_usable(plain, dev) or (blocked.device == dev and blocked.data_ptr() % 2 == 0),
                  f"{n} (on {plain.device}) is not readable by the kernel and {n}_permuted is on "
                  f"{blocked.device}; a is on {dev}")
    return dict(m=m, k=k, l=l)


def _plain_sf_usable(sf: torch.Tensor, dev: torch.device) -> bool:
    """The kernel reads plain scales two at a time: same device, k-contiguous,
    even strides and address."""
    return (sf.device == dev and sf.stride(1) == 1 and sf.stride(0) % 2 == 0
            and sf.stride(2) % 2 == 0 and sf.data_ptr() % 2 == 0)


# ----------------------------------------------------------------------------
# Portable path (CPU, KBIT_PORTABLE=1, GPUs older than sm_80)
# ----------------------------------------------------------------------------

def portable_kbit(data: R.KbitGemmInput) -> torch.Tensor:
    data.c.copy_(R.kbit_reference(data).to(data.c.dtype))
    return data.c


def portable_nvfp4(data) -> torch.Tensor:
    c = data[6]
    c[:, 0, :] = R.nvfp4_reference(data).to(torch.float16)
    return c


# ----------------------------------------------------------------------------
# Blackwell paths: self-check at first use (SPEC section 2)
# ----------------------------------------------------------------------------

_tc_state: dict = {}      # (problem, device index) -> bool: tcgen05 path verified


def _selfcheck_inputs(problem: str, device, dtypes_mask: int = 3):
    """Small inputs for the self-check; kbit: those of the dtypes the module has
    kernels for (KBIT_DTYPES)."""
    if problem == "kbit_gemm":
        cases = ((16, 136, 192, 4, "float16", 1), (130, 264, 256, 3, "bfloat16", 1), (40, 128, 128, 5, "float16", 3),
                 (40, 128, 128, 5, "bfloat16", 3))
        return [R.generate_input("kbit_gemm", m=m, n=n, k=k, bits=bits, dtype=dt, experts=e, seed=7, device=device)
                for m, n, k, bits, dt, e in cases if _DTYPE_BIT[getattr(torch, dt)] & dtypes_mask]
    return [R.generate_input("nvfp4_gemv", m=256, k=512, l=2, seed=7, device=device)]


def _need_dtype_built(module, dtype) -> None:
    """A module built with KBIT_DTYPES=fp16|bf16 has no kernels of the other
    dtype: a clear ValueError before the binding is called."""
    mask = getattr(module, "kbit_dtypes_mask", 3)
    built = next(name for name, m in _DTYPES_KNOB.items() if m == mask)
    _need(_DTYPE_BIT.get(dtype, 0) & mask != 0,
          f"kbit: this module was built without {dtype} kernels (KBIT_DTYPES={built}); "
          f"unset KBIT_DTYPES for a module of both dtypes")


def _run_path(module, problem: str, data, path: int):
    if problem == "kbit_gemm":
        _need_dtype_built(module, data.a.dtype)
        bad = module.kbit_gemm(data.a, data.b_packed, data.b_absmax, data.codebook, data.offsets,
                               data.c, path)
        if bad:
            raise ValueError(bad)
        return data.c
    bad = module.nvfp4_gemv(*data, path)
    if bad:
        raise ValueError(bad)
    return data[6]


def tc_path_ok(module, problem: str, device: torch.device) -> bool:
    """Whether the tcgen05 path of `problem` may be used on `device`: decided once,
    by comparing it with the mma.sync / portable kernel on small inputs; on any
    disagreement or error, warn and use the portable kernel from then on."""
    key = (problem, device.index)
    if key in _tc_state:
        return _tc_state[key]
    ok, why = True, ""
    try:
        for data in _selfcheck_inputs(problem, device, getattr(module, "kbit_dtypes_mask", 3)):
            ref = _run_path(module, problem, data, 0).clone()
            got = _run_path(module, problem, data, 1)
            torch.cuda.synchronize(device)
            if not torch.equal(torch.isnan(ref), torch.isnan(got)) or \
                    not torch.allclose(got.float(), ref.float(), rtol=2e-2, atol=2e-2):
                ok, why = False, f"max difference {float((got.float() - ref.float()).abs().max()):.3g}"
                break
    except Exception as exc:   # a failing launch is a failed self-check
        ok, why = False, f"{type(exc).__name__}: {exc}"
    if not ok:
        warnings.warn(f"kbit: the tcgen05 path of {problem} disagrees with the portable kernel on "
                      f"this GPU ({why}); using the portable kernel", RuntimeWarning)
    _tc_state[key] = ok
    return ok


# ----------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------

# The per-call settings (KBIT_PTX_FAMILY, KBIT_PORTABLE, KBIT_KERNEL,
# KBIT_VALIDATE_OFFSETS) are read on every call, so a change takes effect at the
# next call. os.environ.get encodes the key and decodes the value each time
# (~0.7 us; four of them were a quarter of a decode call's Python time), so the
# fast path reads CPython's underlying bytes mapping where there is one.
_ENV_RAW = getattr(os.environ, "_data", None) if os.name == "posix" else None


def _env(name: str, _raw=_ENV_RAW) -> Optional[str]:
    if _raw is None:
        return os.environ.get(name)
    v = _raw.get(name.encode())
    return None if v is None else v.decode()


def _cuda_module(device: torch.device):
    """(module, family) for a CUDA device, cached per device index (the fast path
    of every call). (None, None) where the portable path runs instead."""
    key = (device.index, _env("KBIT_PTX_FAMILY"), _env("KBIT_PORTABLE"))
    hit = _device_modules.get(key)
    if hit is None:
        hit = _device_modules[key] = _module_for(device)
    return hit


def _kbit_path(module, family, device) -> int:
    """Kernel path of the binding: 1 tcgen05 (sm100, verified), 2 the tiled
    kernel for every M (KBIT_KERNEL=tiled), 3 the decode kernel wherever it
    applies (KBIT_KERNEL=decode), 4 the same with 64-row warp tiles at every
    shape (KBIT_KERNEL=decode64), 5 the wgmma tiled kernel for every M
    (KBIT_KERNEL=wgmma, sm90 family), 6 the CUDA-core kernel wherever it
    applies (KBIT_KERNEL=gemv: dense M = 1, and grouped layers), 7 the
    row-owning kernel wherever it serves (KBIT_KERNEL=rows: dense M <= 32,
    sm90 family), 0 the choice by shape."""
    if family == "sm100" and tc_path_ok(module, "kbit_gemm", device):
        return 1
    return _KERNEL_PATHS.get(_env("KBIT_KERNEL"), 0)


_KERNEL_PATHS = {"tiled": 2, "decode": 3, "decode64": 4, "wgmma": 5, "gemv": 6, "rows": 7}


def _nvfp4_path(module, family, device) -> int:
    """Kernel path of the nvfp4 binding: 1 tcgen05 (sm100, verified), else 0."""
    return 1 if family == "sm100" and tc_path_ok(module, "nvfp4_gemv", device) else 0


_device_modules: dict = {}


def plain_read(buf: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Read every byte of `buf` once and compute nothing: the streaming ceiling
    (ptx/plain_read.cuh) that `eval/run.py --graph` times beside each benchmark.
    `buf`: a contiguous uint8 CUDA tensor, 16-byte aligned, a multiple of 16
    bytes long. CTA i stores the xor of the int32 words it read in out[i]
    (`out`: int32, at least `plain_read_ctas(device)` words; a buffer kept per
    device where it is None); words of CTAs that did not run are left as they
    were. Returns `out`. Asynchronous, like custom_kernel."""
    _need(isinstance(buf, torch.Tensor) and buf.is_cuda, "plain_read needs a CUDA tensor")
    module, _ = _cuda_module(buf.device)
    _need(module is not None, "plain_read needs the CUDA module (not the portable path)")
    if out is None:
        out = _plain_read_out.get(buf.device.index)
        if out is None:
            out = _plain_read_out[buf.device.index] = torch.zeros(plain_read_ctas(buf.device), dtype=torch.int32,
                                                                  device=buf.device)
    bad = module.plain_read(buf, out)
    if bad:
        raise ValueError(bad)
    return out


def plain_read_ctas(device: torch.device) -> int:
    """The most CTAs plain_read launches on `device`: the words its `out` needs."""
    device = torch.device(device)
    if device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    module, _ = _cuda_module(device)
    _need(module is not None, "plain_read needs the CUDA module (not the portable path)")
    return module.plain_read_ctas(device.index)


_plain_read_out: dict = {}


def custom_kernel(data):
    """Compute the problem of `data` (reference.py) and return its output tensor,
    written in place (data.c for kbit_gemm, data[6] for nvfp4_gemv)."""
    if type(data) is tuple and len(data) == 7 and all(isinstance(t, torch.Tensor) for t in data) \
            and data[0].is_cuda:
        # GPU fast path of nvfp4_gemv: validated in C++ (validate_nvfp4's checks).
        module, family = _cuda_module(data[0].device)
        if module is not None:
            return _run_path(module, "nvfp4_gemv", data, _nvfp4_path(module, family, data[0].device))
    if type(data) is R.KbitGemmInput and all(isinstance(t, torch.Tensor) for t in data) and data.a.is_cuda:
        # GPU fast path: the binding validates in C++ (same checks and messages
        # as validate_kbit) before launching.
        module, family = _cuda_module(data.a.device)
        if module is not None:
            if _env("KBIT_VALIDATE_OFFSETS") == "1":
                validate_kbit(data)
            if module.kbit_dtypes_mask != 3:
                _need_dtype_built(module, data.a.dtype)
            bad = module.kbit_gemm(*data, _kbit_path(module, family, data.a.device))
            if bad:
                raise ValueError(bad)
            return data.c
    problem = R.problem_of(data)
    if problem == "kbit_gemm":
        dims = validate_kbit(data)
        if dims["M"] == 0:
            return data.c
        module, family = _cuda_module(data.a.device) if data.a.is_cuda else (None, None)
        if module is None:
            return portable_kbit(data)
        return _run_path(module, problem, data, _kbit_path(module, family, data.a.device))
    validate_nvfp4(data)
    module, family = _cuda_module(data[0].device) if data[0].is_cuda else (None, None)
    if module is None:
        return portable_nvfp4(data)
    return _run_path(module, problem, data, _nvfp4_path(module, family, data[0].device))
