"""The generated-code check: every CUDA kernel's PTX assembled by ptxas, and read for what a GPU would pay.

Without a GPU, this is what tells how a kernel would run: ptxas (the nvcc component of the same
CUDA toolkit release as NVVM) reports registers, spills and shared memory; occupancy follows from
them as the CUDA occupancy calculator computes it; and the PTX shows float64 instructions, 64-bit
divisions in loops and 128-bit accesses. `python -m ep.cuda.ptx --ptxas` runs it on every kernel.
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tempfile
from typing import Iterable

from numba import types
from numba.np.numpy_support import as_dtype

from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.fast_divmod import fast_divmod
from ep.common.math.intrinsics import move16
from ep.cuda.kernel import FULL_OCCUPANCY, THREADS_PER_BLOCK


@dataclasses.dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of a compute capability (CUDA C Programming Guide, table of technical specifications)."""

    threads: int
    blocks: int
    registers: int
    shared: int


LIMITS = {
    (8, 0): SmLimits(threads=2048, blocks=32, registers=65536, shared=167936),
    (9, 0): SmLimits(threads=2048, blocks=32, registers=65536, shared=233472),
}
WARP = 32
# Registers are allocated per warp in units of 256; shared memory per block in units of 128 bytes,
# plus 1 KiB the system reserves per block (sm_80 and later).
REGISTER_UNIT = 256
SHARED_UNIT = 128
SHARED_RESERVED = 1024

# Kernels (a pattern of their names) allowed f64 instructions without float64 data, with why.
FLOAT64_ALLOWED = {
    r"^(broadcast_)?(unary|binary)_(sin|cos|tan|sinc)_": "libdevice's sinf/cosf/tanf reduce arguments beyond 105615 (Payne-Hanek)"
    " with one f64 multiply: a cold path",
    r"^(broadcast_)?(unary|binary)_(lgamma|digamma|trigamma|erfinv)_": "computed in float64 on purpose (ops/transcendental.py,"
    " special.py: float32 loses accuracy for negative x and in the recurrence; erfinv's Newton steps)",
}


# Kernels (a pattern of their names) allowed 64-bit div/rem in their loops although their index math
# is 32-bit: the op itself divides integers (its formula promotes them to int64, as NumPy's do).
DIVISION_ALLOWED = {
    rf"^binary_({'|'.join(op.value for op, record in BINARY_FUNCTORS.items() if record.divides_integers)})_":
    "the op's own integer division, not index math",
    r"^fused_(flat|strided)_divides$": "an ElementwiseFused expression's own integer division, not index math",
}


@dataclasses.dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack: int
    shared: int


@dataclasses.dataclass(frozen=True)
class Traits:
    """What a kernel is, as far as the check cares."""

    float64_data: bool
    index32: bool
    # How many 128-bit loads and stores the PTX must hold at least: one each for 16-byte units
    # (move16), one per buffer with 16-byte packs (ep.cuda.pack).
    wide_loads: int
    wide_stores: int


@dataclasses.dataclass
class Row:
    """One kernel at one compute capability: its resources, occupancy and findings."""

    family: str
    name: str
    cc: tuple[int, int]
    resources: Resources
    occupancy: float
    findings: list[str]
    exempt: bool


def ptxas_path() -> str:
    """ptxas from the nvidia-cuda-nvcc wheel (the test extra), else PTXAS or the one on PATH."""
    if "PTXAS" in os.environ:
        return os.environ["PTXAS"]
    try:
        import nvidia
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", ()):
        for sub in ("cu13/bin", "cuda_nvcc/bin"):
            path = os.path.join(root, sub, "ptxas")
            if os.path.exists(path):
                return path
    return "ptxas"


_RESOURCE_PATTERNS = {
    "registers": re.compile(r"Used (\d+) registers"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "stack": re.compile(r"(\d+) bytes stack frame"),
    "shared": re.compile(r"(\d+) bytes smem"),
}


def parse_resources(log: str) -> Resources:
    """The resources in ptxas -v's report of one entry function."""
    found = {}
    for field, pattern in _RESOURCE_PATTERNS.items():
        match = pattern.search(log)
        found[field] = int(match.group(1)) if match else 0
    if not _RESOURCE_PATTERNS["registers"].search(log):
        raise ValueError(f"ptxas -v reported no register count:\n{log}")
    return Resources(**found)


def assemble(ptx: str, cc: tuple[int, int]) -> Resources:
    """Assemble ptx for sm_<cc> and return what ptxas reports (it raises on an assembler error)."""
    with tempfile.TemporaryDirectory() as directory:
        source = os.path.join(directory, "kernel.ptx")
        with open(source, "w") as file:
            file.write(ptx)
        result = subprocess.run(
            [ptxas_path(), f"-arch=sm_{cc[0]}{cc[1]}", "-v", source, "-o", os.path.join(directory, "kernel.cubin")],
            capture_output=True,
            text=True,
        )
    if result.returncode != 0:
        raise RuntimeError(f"ptxas failed:\n{result.stderr}")
    return parse_resources(result.stdout + result.stderr)


def occupancy(registers: int, threads: int, shared: int, cc: tuple[int, int]) -> float:
    """Resident warps over the SM's maximum, as the CUDA occupancy calculator computes it."""
    limits = LIMITS[cc]
    warps = -(-threads // WARP)
    max_warps = limits.threads // WARP
    blocks = min(limits.blocks, max_warps // warps)
    if registers:
        per_warp = -(-registers * WARP // REGISTER_UNIT) * REGISTER_UNIT
        blocks = min(blocks, (limits.registers // per_warp) // warps)
    per_block = -(-(shared + SHARED_RESERVED) // SHARED_UNIT) * SHARED_UNIT
    blocks = min(blocks, limits.shared // per_block)
    return blocks * warps / max_warps


def traits(kernel) -> Traits:
    """A CudaKernel's traits, from its argument types and template bindings (with those of the
    specializations bound to it: Gather's visit)."""
    bindings = _bindings(kernel._fn)
    dtypes = [t.dtype if isinstance(t, types.Array) else t for t in kernel.argtypes]
    # Copy and gather templates name their 16-byte switch differently; move16 is bound to both.
    wide16 = bindings.get("move16") is move16 and (bindings.get("wide16") or bindings.get("WIDE16")) is True
    loads = stores = int(wide16)
    if "PACK" in bindings:
        # An elementwise template's dst (a fused kernel's dst, dst1, ...) are the buffers it stores;
        # its other buffers are loaded.
        names = kernel._fn.__code__.co_varnames[: kernel._fn.__code__.co_argcount]
        for name, argtype in zip(names, kernel.argtypes):
            if isinstance(argtype, types.Array) and bindings["PACK"] * as_dtype(argtype.dtype).itemsize == 16:
                if name == "dst" or (name.startswith("dst") and name[3:].isdigit()):
                    stores += 1
                # Not loaded in packs: a fill kernel's value buffer (TensorFill, one element read once) and
                # a one-hot's indices (one per row).
                elif name not in ("source", "indices"):
                    loads += 1
    return Traits(
        float64_data=any(t == types.float64 for t in dtypes),
        index32=bindings.get("DIVMOD") is fast_divmod,
        wide_loads=loads,
        wide_stores=stores,
    )


def _bindings(fn) -> dict:
    """A specialization's bindings, over those of the specializations bound to it."""
    own = vars(fn.__globals__["bound"])
    merged = {}
    for value in own.values():
        inner = getattr(value, "py_func", value)
        if getattr(inner, "kernel_digest", None) is not None:
            merged.update(_bindings(inner))
    return merged | own


def _instructions(ptx: str) -> list[str]:
    """The PTX's lines with directives, declarations and comments left out (labels kept)."""
    lines = []
    for line in ptx.splitlines():
        line = line.split("//", 1)[0].strip()
        if line and not line.startswith((".", "{", "}", ")", "(")):
            lines.append(line)
    return lines


_LABEL = re.compile(r"^(\$\w+):$")
_BRANCH = re.compile(r"\bbra(?:\.uni)?\s+(\$\w+);")
_FLOAT64 = re.compile(r"^(?:@!?%p\d+\s+)?[\w.]*\.f64\b")
_DIV64 = re.compile(r"^(?:@!?%p\d+\s+)?(?:div|rem)\.[su]64\b")
_ELEMENT_LOAD = re.compile(r"\bld\.global(?:\.(?!v\d)\w+)*\.[bsuf](?:8|16|32|64)\b")
_WIDE_LOAD = re.compile(r"\bld\.global(?:\.\w+)*\.v(?:2\.[bsuf]64|4\.[bsuf]32)\b")
_WIDE_STORE = re.compile(r"\bst\.global(?:\.\w+)*\.v(?:2\.[bsuf]64|4\.[bsuf]32)\b")


def loop_bodies(lines: list[str]) -> list[list[str]]:
    """The lines from each label to a later branch back to it: the kernel's loops."""
    labels = {}
    bodies = []
    for position, line in enumerate(lines):
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = position
            continue
        branch = _BRANCH.search(line)
        if branch and branch.group(1) in labels:
            bodies.append(lines[labels[branch.group(1)] : position + 1])
    return bodies


def code_findings(name: str, ptx: str, kernel_traits: Traits) -> list[str]:
    """What the PTX of a kernel does that its traits say it should not."""
    lines = _instructions(ptx)
    findings = []
    if not kernel_traits.float64_data and not any(re.match(pattern, name) for pattern in FLOAT64_ALLOWED):
        float64 = [line for line in lines if _FLOAT64.match(line)]
        if float64:
            findings.append(f"{len(float64)} f64 instructions without float64 data (first: {float64[0]})")
    if kernel_traits.index32 and not any(re.match(pattern, name) for pattern in DIVISION_ALLOWED):
        divisions = {line for body in loop_bodies(lines) for line in body if _DIV64.match(line)}
        if divisions:
            findings.append(f"64-bit div/rem in a loop of a 32-bit-index kernel: {sorted(divisions)[0]}")
    loads = sum(1 for line in lines if _WIDE_LOAD.search(line))
    stores = sum(1 for line in lines if _WIDE_STORE.search(line))
    # A wide load per input buffer the kernel reads: each packed input also has an element load
    # (its single-element work items), so a buffer the formula never reads (is_nan of an integer,
    # identity_backward's x) is counted out with its element load.
    element_loads = sum(1 for line in lines if _ELEMENT_LOAD.search(line))
    wide_loads = min(kernel_traits.wide_loads, element_loads) if kernel_traits.wide_loads else 0
    if loads < wide_loads or stores < kernel_traits.wide_stores:
        findings.append(
            f"16-byte units or packs without 128-bit loads and stores: {loads} of {wide_loads} loads,"
            f" {stores} of {kernel_traits.wide_stores} stores"
        )
    return findings


def check(family: str, kernel, ptx: str, cc: tuple[int, int]) -> Row:
    """Assemble a kernel's PTX for cc and list what is wrong with it."""
    resources = assemble(ptx, cc)
    fraction = occupancy(resources.registers, THREADS_PER_BLOCK, resources.shared, cc)
    findings = code_findings(kernel.name, ptx, traits(kernel))
    if resources.spill_stores or resources.spill_loads:
        findings.append(f"spills: {resources.spill_stores} bytes stored, {resources.spill_loads} loaded")
    # Every kernel keeps every SM full (100% occupancy) but those that declare they cannot
    # (CudaKernel's full_occupancy=False, each with its reason): no list of families kept by hand.
    if kernel.launch_bounds == FULL_OCCUPANCY and fraction < 1:
        findings.append(f"occupancy {fraction:.0%} < 100% with {resources.registers} registers")
    return Row(family, kernel.name, cc, resources, fraction, findings, kernel.launch_bounds != FULL_OCCUPANCY)


def tables(rows: Iterable[Row]) -> str:
    """One table per family and compute capability: kernels, max registers, occupancy range, findings."""
    groups: dict[tuple[str, tuple[int, int]], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.family, row.cc), []).append(row)
    out = []
    for (family, cc), group in sorted(groups.items()):
        registers = [row.resources.registers for row in group]
        occupancies = [row.occupancy for row in group]
        findings = sum(len(row.findings) for row in group)
        out.append(f"{family} sm_{cc[0]}{cc[1]}")
        exempt = sum(row.exempt for row in group)
        out.append("  kernels  max registers  mean registers  occupancy (min-max)  below 100% allowed  findings")
        out.append(
            f"  {len(group):7d}  {max(registers):13d}  {sum(registers) / len(group):14.1f}"
            f"  {min(occupancies):8.0%} - {max(occupancies):4.0%}  {exempt:18d}  {findings:8d}"
        )
    return "\n".join(out)
