"""The workloads: the size grid of issue 25 (relu, mul, add of a column, expand, gather, repeat at
16 elements, 1 MiB and 64 MiB), then issue 5's other gathers (G2, G3), unary ops (U2-U12; U7-U12
the other transcendentals of issue 13) and B3; C, the cold start, lives in cold_start.py."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

F32 = np.dtype(np.float32)


@dataclass
class Case:
    """One workload's host inputs and output, and the bytes it must read and write."""

    inputs: dict[str, np.ndarray]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    bytes: int


@dataclass(frozen=True)
class Workload:
    """What to run: kind picks the ep call and the peers' calls; attrs are its arguments."""

    id: str
    title: str
    kind: str  # gather, batch_gather, expand, repeat, unary, cast, binary
    build: Callable[[], Case] = field(repr=False)
    attrs: dict = field(default_factory=dict)
    memory_bound: bool = True
    # A tiny workload measures the cost of a call, not bandwidth.
    tiny: bool = False


def _rng() -> np.random.Generator:
    return np.random.default_rng(5)


def _nbytes(*arrays_or_sizes) -> int:
    return sum(int(a) if isinstance(a, int) else a.nbytes for a in arrays_or_sizes)


def _gather(id_, params_shape, indices_shape, axis, batch_dims=0) -> Workload:
    def build() -> Case:
        rng = _rng()
        params = rng.standard_normal(params_shape, dtype=np.float32)
        indices = rng.integers(0, params_shape[axis], indices_shape, dtype=np.int64)
        out_shape = params_shape[:axis] + indices_shape[batch_dims:] + params_shape[axis + 1 :]
        out_bytes = math.prod(out_shape) * F32.itemsize
        # Read: the indices and every gathered element; written: the output.
        return Case({"params": params, "indices": indices}, out_shape, F32, _nbytes(indices, out_bytes, out_bytes))

    kind = "batch_gather" if batch_dims else "gather"
    title = f"gather {list(params_shape)} by {list(indices_shape)} int64, axis {axis}"
    if batch_dims:
        title += f", batch_dims {batch_dims}"
    return Workload(id_, title, kind, build, {"axis": axis, "batch_dims": batch_dims})


def _expand(id_, in_shape, out_shape) -> Workload:
    def build() -> Case:
        x = _rng().standard_normal(in_shape, dtype=np.float32)
        return Case({"x": x}, out_shape, F32, _nbytes(x, math.prod(out_shape) * F32.itemsize))

    return Workload(id_, f"expand {list(in_shape)} -> {list(out_shape)}", "expand", build, {"sizes": out_shape})


def _repeat(id_, in_shape, repeats) -> Workload:
    out_shape = tuple(n * r for n, r in zip(in_shape, repeats))

    def build() -> Case:
        x = _rng().standard_normal(in_shape, dtype=np.float32)
        return Case({"x": x}, out_shape, F32, _nbytes(x, math.prod(out_shape) * F32.itemsize))

    return Workload(id_, f"repeat {list(in_shape)} by {repeats}", "repeat", build, {"repeats": repeats})


def _unary(id_, op, count, memory_bound, dst=F32, low=-5.0) -> Workload:
    def build() -> Case:
        # [-5, 5] keeps every op in its interesting range (no saturated tails); log's starts above 0.
        x = _rng().uniform(low, 5, count).astype(np.float32)
        return Case({"x": x}, (count,), np.dtype(dst), _nbytes(x, count * np.dtype(dst).itemsize))

    kind = "cast" if op == "cast" else "unary"
    title = f"{op} {count} float32" + (f" -> {np.dtype(dst).name}" if op == "cast" else "")
    return Workload(id_, title, kind, build, {"op": op, "dtype": np.dtype(dst)}, memory_bound)


def _binary(id_, op, a_shape, b_shape, dst=F32) -> Workload:
    out_shape = tuple(np.broadcast_shapes(a_shape, b_shape))

    def build() -> Case:
        rng = _rng()
        a = rng.standard_normal(a_shape, dtype=np.float32)
        b = rng.standard_normal(b_shape, dtype=np.float32)
        out_bytes = math.prod(out_shape) * np.dtype(dst).itemsize
        return Case({"a": a, "b": b}, out_shape, np.dtype(dst), _nbytes(a, b, out_bytes))

    attrs = {"op": op, "dtype": np.dtype(dst)}
    return Workload(id_, f"{op} {list(a_shape)} with {list(b_shape)}", "binary", build, attrs)


# The size grid of issue 25: each family at 16 elements, 1 MiB and 64 MiB (its float32 output).
SIZES = {"16": 16, "1MiB": 1 << 18, "64MiB": 1 << 24}


def _grid(label: str, count: int) -> list[Workload]:
    """relu, mul, add of a column, expand, gather and repeat, each with an output of count floats."""
    rows = max(1, math.isqrt(count))  # a square-ish (rows, count // rows) output
    cols = count // rows
    tiny = count < 1024
    gather = (
        _gather(f"gather-{label}", (16,), (16,), 0)
        if tiny
        else _gather(f"gather-{label}", (count // 256, 256), (count // 256,), 0)
    )
    expand = (
        _expand(f"expand-{label}", (1, 4), (4, 4))
        if tiny
        else _expand(f"expand-{label}", (count // 4096, 1, 256), (count // 4096, 16, 256))
    )
    found = [
        _unary(f"relu-{label}", "relu", count, True),
        _binary(f"mul-{label}", "mul", (count,), (count,)),
        _binary(f"addcol-{label}", "add", (rows, cols), (rows, 1)),
        expand,
        gather,
        _repeat(f"repeat-{label}", (max(1, rows // 4), max(1, cols // 2)), (4, 2)),
    ]
    # A tiny workload measures the cost of a call, not bandwidth.
    return [dataclasses.replace(w, memory_bound=False, tiny=True) for w in found] if tiny else found


def workloads(device: str, quick: bool) -> list[Workload]:
    """The size grid (SIZES; --quick leaves out 64 MiB), then the other workloads, float32 unless
    said: a gather along an inner axis and a batch gather (G2, G3), the transcendentals (U2-U12,
    issue 13), a cast (U6) and a comparison (B3).

    Those others have issue 5's sizes on the CPU; on CUDA they grow 4x (buffers of 256 MiB, so
    the GPU is measured at its bandwidth, not its launch latency); --quick divides them by 64.
    """
    mul, div = (1, 64) if quick else ((4, 1) if device == "cuda" else (1, 1))

    def n(size: int) -> int:
        return max(1, size * mul // div)

    grid = [w for label, count in SIZES.items() if not (quick and label == "64MiB") for w in _grid(label, count)]
    others = [
        _gather("G2", (n(4096), 4096), (2048,), 1),
        _gather("G3", (64, n(4096), 64), (64, n(2048)), 1, 1),
        _unary("U2", "exp", n(1 << 24), False),
        _unary("U3", "tanh", n(1 << 24), False),
        _unary("U4", "gelu", n(1 << 24), False),
        _unary("U5", "sigmoid", n(1 << 24), False),
        _unary("U6", "cast", n(1 << 24), True, np.float16),
        # The other float32 transcendentals of issue 13, at 4M elements.
        _unary("U7", "expm1", n(1 << 22), False),
        _unary("U8", "log", n(1 << 22), False, low=0.01),
        _unary("U9", "erf", n(1 << 22), False),
        _unary("U10", "silu", n(1 << 22), False),
        _unary("U11", "softplus", n(1 << 22), False),
        _unary("U12", "mish", n(1 << 22), False),
        _binary("B3", "less", (n(4096), 4096), (1, 4096), np.bool_),
    ]
    return grid + others
