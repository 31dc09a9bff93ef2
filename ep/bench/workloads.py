"""The workloads: the size grid of issue 25 (relu, mul, add of a column, expand, gather, repeat at
16 elements, 1 MiB and 64 MiB), then issue 5's other gathers (G2, G3), unary ops (U2-U12; U7-U12
the other transcendentals of issue 13) and B3; then this round's ops: issue 26's permute, pad,
where, full, add_n, one_hot and cast, issue 27's softmax and matmul, issue 28's fused expressions
(W1-W3); C, the cold start, lives in cold_start.py."""
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
    # gather, batch_gather, expand, repeat, unary, cast, binary, permute, pad, where, full, add_n, cat, sum,
    # one_hot, softmax, matmul, batch_matmul, fused, cumsum, index_add
    kind: str
    build: Callable[[], Case] = field(repr=False)
    attrs: dict = field(default_factory=dict)
    memory_bound: bool = True
    # A tiny workload measures the cost of a call, not bandwidth.
    tiny: bool = False
    # rtol = atol of the check against the first peer's output; None: the runner's default.
    tolerance: float | None = None


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


def _unary(id_, op, count, memory_bound, dst=F32, low=-5.0, high=5.0) -> Workload:
    def build() -> Case:
        # [-5, 5] keeps every op in its interesting range (no saturated tails); log's starts above 0.
        x = _rng().uniform(low, high, count).astype(np.float32)
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


def _permute(id_, in_shape, dims) -> Workload:
    def build() -> Case:
        x = _rng().standard_normal(in_shape, dtype=np.float32)
        return Case({"x": x}, tuple(in_shape[d] for d in dims), F32, 2 * x.nbytes)

    return Workload(id_, f"permute {list(in_shape)} by {dims}", "permute", build, {"dims": dims})


def _pad(id_, in_shape, pad) -> Workload:
    # pad: torch's (before, after) pairs from the last dim backwards.
    out_shape = list(in_shape)
    for pair in range(len(pad) // 2):
        out_shape[-1 - pair] += pad[2 * pair] + pad[2 * pair + 1]
    out_shape = tuple(out_shape)

    def build() -> Case:
        x = _rng().standard_normal(in_shape, dtype=np.float32)
        return Case({"x": x}, out_shape, F32, _nbytes(x, math.prod(out_shape) * F32.itemsize))

    return Workload(id_, f"pad {list(in_shape)} by {pad} with 0", "pad", build, {"pad": pad, "value": 0.0})


def _where(id_, count) -> Workload:
    def build() -> Case:
        rng = _rng()
        condition = rng.random(count) < 0.5
        x, y = rng.standard_normal(count, dtype=np.float32), rng.standard_normal(count, dtype=np.float32)
        return Case({"condition": condition, "x": x, "y": y}, (count,), F32, _nbytes(condition, x, y, x))

    return Workload(id_, f"where {count} bool, float32, float32", "where", build)


def _full(id_, count) -> Workload:
    def build() -> Case:
        return Case({}, (count,), F32, count * F32.itemsize)

    return Workload(id_, f"full {count} float32 of 1.5", "full", build, {"value": 1.5, "shape": (count,)})


def _reduction(id_, op, shape, axis) -> Workload:
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    out_shape = tuple(n for d, n in enumerate(shape) if d not in axes)

    def build() -> Case:
        x = _rng().standard_normal(shape, dtype=np.float32)
        return Case({"x": x}, out_shape, F32, x.nbytes + 4 * math.prod(out_shape))

    # Sums of normals cancel: each library's rounding differs by more than a relative 1e-6 of a sum near 0.
    return Workload(id_, f"{op} {list(shape)} over dim{'s' if isinstance(axis, tuple) else ''} {axis}", op, build, {"axis": axis}, tolerance=1e-4)


def _cumsum(id_, shape, axis) -> Workload:
    def build() -> Case:
        x = _rng().standard_normal(shape, dtype=np.float32)
        return Case({"x": x}, shape, F32, 2 * x.nbytes)

    # NumPy's float32 running sums round at every step: over 2^24 normals they drift by 0.16 from
    # float64's (ep and torch accumulate in float64); the tolerance grows with the run.
    tolerance = max(1e-5, 1e-7 * shape[axis])
    return Workload(id_, f"cumsum {list(shape)} along dim {axis}", "cumsum", build, {"axis": axis}, tolerance=tolerance)


def _index_add(id_, rows, cols) -> Workload:
    def build() -> Case:
        rng = _rng()
        x, source = rng.standard_normal((rows, cols), dtype=np.float32), rng.standard_normal((rows, cols), dtype=np.float32)
        index = rng.integers(0, rows, rows, dtype=np.int64)  # repeats: some rows gain several, some none
        return Case({"x": x, "index": index, "source": source}, (rows, cols), F32, _nbytes(x, index, source, x.nbytes))

    return Workload(id_, f"index_add of {rows} x {cols} float32 rows along dim 0", "index_add", build, tolerance=1e-5)


def _cat(id_, count, n=4) -> Workload:
    def build() -> Case:
        rng = _rng()
        arrays = {f"a{i}": rng.standard_normal(count, dtype=np.float32) for i in range(n)}
        return Case(arrays, (n * count,), F32, 2 * n * count * F32.itemsize)

    return Workload(id_, f"cat of {n} x {count} float32", "cat", build)


def _add_n(id_, count, n=3) -> Workload:
    def build() -> Case:
        rng = _rng()
        arrays = {f"a{i}": rng.standard_normal(count, dtype=np.float32) for i in range(n)}
        return Case(arrays, (count,), F32, (n + 1) * count * F32.itemsize)

    return Workload(id_, f"add_n of {n} x {count} float32", "add_n", build)


def _one_hot(id_, count, classes) -> Workload:
    i64 = np.dtype(np.int64)

    def build() -> Case:
        indices = _rng().integers(0, classes, count, dtype=np.int64)
        return Case({"indices": indices}, (count, classes), i64, _nbytes(indices, count * classes * i64.itemsize))

    return Workload(id_, f"one_hot {count} int64 of {classes} classes -> int64", "one_hot", build, {"classes": classes})


def _softmax(id_, shape) -> Workload:
    def build() -> Case:
        x = _rng().standard_normal(shape, dtype=np.float32)
        return Case({"x": x}, shape, F32, 2 * x.nbytes)

    return Workload(id_, f"softmax {list(shape)} over the last dim", "softmax", build)


def _matmul(id_, a_shape, b_shape) -> Workload:
    out_shape = a_shape[:-1] + b_shape[-1:]
    kind = "batch_matmul" if len(a_shape) == 3 else "matmul"

    def build() -> Case:
        rng = _rng()
        a = rng.standard_normal(a_shape, dtype=np.float32)
        b = rng.standard_normal(b_shape, dtype=np.float32)
        return Case({"a": a, "b": b}, out_shape, F32, _nbytes(a, b, math.prod(out_shape) * F32.itemsize))

    # BLAS libraries sum in different orders: a float32 dot of k terms differs by ~sqrt(k) ulps.
    title = f"{'bmm' if kind == 'batch_matmul' else 'matmul'} {list(a_shape)} x {list(b_shape)}"
    return Workload(id_, title, kind, build, memory_bound=False, tolerance=1e-4)


# Issue 28's fused expressions: (formula, whether the inputs must be positive, outputs).
FUSED = {
    "W1": ("relu(x * y + z)", False, 1),
    "W2": ("a = x * 2 + y; b = log(a) - sqrt(z)", True, 2),
    "W3": ("tanh(X * row + col)", False, 1),
    "W4": ("sum(x * y, dim=-1)", False, 1),  # issue 41's fused reduction
}


def _fused(id_, expr, count, compile_peer) -> Workload:
    """An issue-28 expression with an output of count floats; W3's X is (rows, rows), row (rows,),
    col (rows, 1); W2's two outputs are the two rows of one (2, count) array; W4 reads x and y of
    (rows, rows) (count floats each) into rows sums."""
    formula, positive, outputs = FUSED[expr]
    rows = math.isqrt(count)
    names = ("X", "row", "col") if expr == "W3" else ("x", "y") if expr == "W4" else ("x", "y", "z")
    shapes = ((rows, rows), (rows,), (rows, 1)) if expr == "W3" else ((rows, rows),) * 2 if expr == "W4" else ((count,),) * 3

    def build() -> Case:
        rng = _rng()
        # W2 reads log(x * 2 + y) and sqrt(z): its inputs in [0.1, 1).
        make = (lambda s: rng.uniform(0.1, 1, s).astype(np.float32)) if positive else (lambda s: rng.standard_normal(s, dtype=np.float32))
        inputs = {name: make(shape) for name, shape in zip(names, shapes)}
        out_shape = (2, count) if outputs == 2 else (rows,) if expr == "W4" else shapes[0]
        return Case(inputs, out_shape, F32, _nbytes(*inputs.values(), outputs * count * F32.itemsize))

    title = f"{expr} {formula}, " + ", ".join(f"{n} {list(s)}" for n, s in zip(names, shapes))
    # W2's log and sqrt, and tanh, differ between libraries by an ulp or two; W4's sums of products
    # of normals cancel, as R1-R3's (each library's rounding differs by more than 1e-6 of a sum near 0).
    tolerance = 1e-4 if expr == "W4" else 1e-5
    return Workload(id_, title, "fused", build, {"expr": expr, "compile": compile_peer}, tolerance=tolerance)


def round_26_28(quick: bool) -> list[Workload]:
    """This round's ops (float32): issue 26's permute (a 2-D transpose, a 3-D (0, 2, 1), NCHW to
    NHWC, each also at ~1 MiB), pad, where, full, add_n of 3, one_hot and a cast to float16 at ~1
    MiB and ~64 MiB of output; issue 27's softmax and matmul (one 1024^3, a batch of 4096 64^3);
    issue 28's W1-W3 at 2^24 elements and ~1 MiB. --quick keeps the ~1 MiB sizes, softmax's
    [512, 1000], a 256^3 matmul and a batch of 64, and leaves torch.compile out."""
    small = [
        _permute("permute2d-1MiB", (512, 512), (1, 0)),
        _permute("permute3d-1MiB", (4, 256, 256), (0, 2, 1)),
        _permute("permute4d-1MiB", (4, 64, 32, 32), (0, 2, 3, 1)),
    ]
    large = [
        _permute("permute2d-64MiB", (4096, 4096), (1, 0)),
        _permute("permute3d-64MiB", (64, 512, 512), (0, 2, 1)),
        _permute("permute4d-25MiB", (32, 64, 56, 56), (0, 2, 3, 1)),
    ]
    for label, count in (("1MiB", 1 << 18), ("64MiB", 1 << 24)):
        found = [
            _pad(f"pad-{label}", (math.isqrt(count) - 4,) * 2, (2, 2, 2, 2)),
            _where(f"where-{label}", count),
            _full(f"full-{label}", count),
            _add_n(f"add_n-{label}", count),
            _one_hot(f"one_hot-{label}", count // 256, 128),  # int64: 8 bytes an element
            _unary(f"cast-{label}", "cast", 2 * count, True, np.float16),  # float16: 2 bytes
        ]
        (small if label == "1MiB" else large).extend(found)
    small.append(_softmax("softmax-512x1000", (512, 1000)))
    large += [_softmax("softmax-4096x4096", (4096, 4096)), _softmax("softmax-65536x128", (65536, 128))]
    if quick:
        small += [_matmul("matmul-256", (256, 256), (256, 256)), _matmul("bmm-64x64", (64, 64, 64), (64, 64, 64))]
    else:
        large += [_matmul("matmul-1024", (1024, 1024), (1024, 1024)), _matmul("bmm-4096x64", (4096, 64, 64), (4096, 64, 64))]
    for expr in FUSED:
        small.append(_fused(f"{expr}-1MiB", expr, 1 << 18, not quick))
        large.append(_fused(f"{expr}-64MiB", expr, 1 << 24, not quick))
    return small if quick else small + large


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
    issue 13), a cast (U6), a comparison (B3), issue 45's atan2, logaddexp, hypot (B4-B6), erfinv
    (U13), cat, sums (R0-R8), cumsums (S1-S5) and index_add (X1-X3); then this round's ops (round_26_28).

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
        # Issue 45's functions of two arguments and erfinv, and cat of four 16 MiB arrays.
        _binary("B4", "atan2", (n(1 << 24),), (n(1 << 24),)),
        _binary("B5", "logaddexp", (n(1 << 24),), (n(1 << 24),)),
        _binary("B6", "hypot", (n(1 << 24),), (n(1 << 24),)),
        _unary("U13", "erfinv", n(1 << 22), False, low=-0.99, high=0.99),
        _cat("cat-4x16MiB", n(1 << 22)),
        # Issue 41's sums: 16 elements, one long row at ~1 MiB and ~64 MiB, rows and columns of
        # 4096; and maxima of those rows and columns.
        _reduction("R0", "sum", (16,), 0),
        _reduction("R1", "sum", (n(1 << 18),), 0),
        _reduction("R2", "sum", (n(1 << 24),), 0),
        _reduction("R3", "sum", (n(4096), 4096), -1),
        _reduction("R4", "sum", (n(4096), 4096), 0),
        _reduction("R5", "amax", (n(4096), 4096), -1),
        _reduction("R6", "amax", (n(4096), 4096), 0),
        # Sums over dims apart (a conv bias's gradient) at ~1 MiB and ~64 MiB.
        _reduction("R7", "sum", (64, n(64), 64), (0, 2)),
        _reduction("R8", "sum", (256, n(256), 256), (0, 2)),
        # Sums of short rows (a LayerNorm's statistics): 4096 rows of 64 and 2048 of 128, ~1 MiB.
        _reduction("R9", "sum", (n(4096), 64), -1),
        _reduction("R10", "sum", (n(2048), 128), -1),
        # Maxima of ~1 MiB: one row, and 64 rows of 4096.
        _reduction("R11", "amax", (n(1 << 18),), 0),
        _reduction("R12", "amax", (n(64), 4096), -1),
        # Issue 45's cumsum: 16 elements, one row of ~1 MiB and ~64 MiB, rows of 1000, columns.
        _cumsum("S1", (16,), 0),
        _cumsum("S2", (n(1 << 18),), 0),
        _cumsum("S3", (n(1 << 24),), 0),
        _cumsum("S4", (n(16384), 1000), 1),
        _cumsum("S5", (n(4096), 4096), 0),
        # Issue 45's index_add (DimScatter, no atomics): 16 elements, ~1 MiB and ~64 MiB, repeated rows.
        _index_add("X1", 4, 4),
        _index_add("X2", 512, 512),
        _index_add("X3", n(4096), 4096),
    ]
    return grid + others + round_26_28(quick)
