"""`python -m ep warmup`: compile chosen kernels into Numba's disk cache before the first launch.

Each chosen registry combination (primitive, device, op, dtypes) is launched once on tiny arrays,
once per shape class that picks its own kernel (a binary op's elementwise, scalar, row, column and
general paths, the broadcast operand on either side; gather's element and row spans; softmax's
rows of one block and longer ones), so warmup compiles what real launches need, with their
argument types. Numba's compile events tell a combination that compiled from one that came from
the cache. Not launched (said so at the start): ElementwiseFused (its expressions are the
caller's), Memcpy, Memset and BroadcastElementwiseUnary.
Nor are the spans only large launches run (streaming stores from 8 MiB, an element gather's
out-of-range fallback, Reduce's merge of a cut reduction's slices, Scan's passes over a cut run): their first such launch
compiles them.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from typing import Callable, Iterable, Iterator

import numpy as np

import ep
from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.include.primitive.primitive import registry_rows
from ep.testing import to_device

# BroadcastElementwiseBinary's operand dims, one pair per path and side (None: a scalar value).
BINARY_DIMS = (
    ((4,), (4,)),  # elementwise
    ((4,), None), (None, (4,)),  # scalar
    ((2, 3), (1, 3)), ((1, 3), (2, 3)),  # row
    ((2, 3), (2, 1)), ((2, 1), (2, 3)),  # column
    ((2, 1, 3), (1, 2, 1)),  # general
)

# Gather's, BatchGather's and UnsortedSegmentSum's inner sizes: one element, and rows whose bytes
# make every raw unit (2, 4, 8 or 16 bytes) they move in, as one element or as a row of them.
INNER_SIZES = (1, 2, 3, 4, 6, 8, 12, 16)


class _Tiny:
    """Tiny arrays and a stream on one device, for one combination's launches."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.stream = ep.GetDevice(device).default_stream

    def new(self, factory: type, *args, **kwargs):
        primitive = ep.NewPrimitive(factory, self.device, *args, **kwargs)
        if primitive is None:
            raise RuntimeError(f"{factory.__name__}.New{args} returned None for a listed combination")
        return primitive

    def array(self, values: object, dtype: str):
        return to_device(np.asarray(values, dtype), self.device)

    def ones(self, count: int, dtype: str):
        return self.array(np.ones(count), dtype)

    def zeros(self, count: int, dtype: str):
        return self.array(np.zeros(count), dtype)


def _attrs(table: dict, enum_type: type, op: str) -> tuple:
    # Attributes are launch-time scalars: any value compiles the same kernel.
    return (1,) * len(table[enum_type[op]].attrs)


def _unary(tiny: _Tiny, op: str, src: str, dst: str) -> None:
    primitive = tiny.new(ep.ElementwiseUnaryFactory, op, src, dst, *_attrs(UNARY_FUNCTORS, ep.UnaryOp, op))
    primitive.Launch(tiny.stream, tiny.ones(4, src), tiny.zeros(4, dst), 4)


def _binary(tiny: _Tiny, op: str, src: str, dst: str) -> None:
    attrs = _attrs(BINARY_FUNCTORS, ep.BinaryOp, op)
    primitive = tiny.new(ep.BroadcastElementwiseBinaryFactory, op, src, dst, 3, *attrs)
    value = np.ones((), src)[()]
    for dims0, dims1 in BINARY_DIMS:
        a = value if dims0 is None else tiny.ones(math.prod(dims0), src)
        b = value if dims1 is None else tiny.ones(math.prod(dims1), src)
        out = tiny.zeros(math.prod(np.broadcast_shapes(dims0 or (), dims1 or ())), dst)
        primitive.Launch(tiny.stream, dims0 or (), a, dims1 or (), b, out)


def _gather(tiny: _Tiny, op: None, params: str, indices: str) -> None:
    primitive = tiny.new(ep.GatherFactory, params, indices, wrap_negative=True, check_bounds=True)
    for inner in INNER_SIZES:
        primitive.Launch(tiny.stream, tiny.array([0, 1], indices), 2, tiny.ones(2 * inner, params), 1, 2, inner, tiny.zeros(2 * inner, params))


def _batch_gather(tiny: _Tiny, op: None, params: str, indices: str) -> None:
    primitive = tiny.new(ep.BatchGatherFactory, params, indices, wrap_negative=True, check_bounds=True)
    for inner in INNER_SIZES:
        primitive.Launch(tiny.stream, tiny.array([0, 1], indices), 2, tiny.ones(2 * inner, params), 1, 1, 2, inner, tiny.zeros(2 * inner, params))


def _segment_sum(tiny: _Tiny, op: None, data: str, ids: str) -> None:
    primitive = tiny.new(ep.UnsortedSegmentSumFactory, data, ids, wrap_negative=True, check_bounds=True)
    for inner in INNER_SIZES:
        primitive.Launch(tiny.stream, tiny.array([0, 1], ids), 2, tiny.ones(2 * inner, data), 1, 1, 2, inner, tiny.zeros(2 * inner, data))


def _expand(tiny: _Tiny, op: None, dtype: str) -> None:
    primitive = tiny.new(ep.ExpandFactory, dtype)
    for src_dims in ((1, 3), (2, 1)):
        primitive.Launch(tiny.stream, src_dims, tiny.ones(math.prod(src_dims), dtype), (2, 3), tiny.zeros(6, dtype))


def _expand_grad(tiny: _Tiny, op: None, dtype: str) -> None:
    primitive = tiny.new(ep.ExpandGradFactory, dtype)
    for dst_dims in ((1, 3), (2, 1)):
        primitive.Launch(tiny.stream, (2, 3), tiny.ones(6, dtype), dst_dims, tiny.zeros(math.prod(dst_dims), dtype))


def _reduce(tiny: _Tiny, op: str, src: str, dst: str) -> None:
    primitive = tiny.new(ep.ReduceFactory, op, src, dst)
    # Along rows (inner 1), across columns, and the whole array.
    for dst_dims in ((2, 1), (1, 3), (1, 1)):
        primitive.Launch(tiny.stream, (2, 3), tiny.ones(6, src), dst_dims, tiny.zeros(math.prod(dst_dims), dst))


def _scan(tiny: _Tiny, op: str, src: str, dst: str) -> None:
    primitive = tiny.new(ep.ScanFactory, op, src, dst)
    # Along rows (four side by side, and one), and across columns.
    for dims, dim in (((4, 3), 1), ((1, 3), 1), ((2, 3), 0)):
        primitive.Launch(tiny.stream, dims, tiny.ones(math.prod(dims), src), dim, tiny.zeros(math.prod(dims), dst))


def _copy_nd(tiny: _Tiny, op: None, dtype: str) -> None:
    primitive = tiny.new(ep.CopyNdFactory, 2)
    for strides in (None, (1, 2)):  # a box of a contiguous array, and a strided (transposed) view
        src, dst = tiny.ones(6, dtype), tiny.zeros(6, dtype)
        primitive.Launch(tiny.stream, dtype, 2, dst, (2, 3), (0, 0), src, (2, 3), (0, 0), (2, 3), src_strides=strides)


def _permute(tiny: _Tiny, op: None, dtype: str) -> None:
    primitive = tiny.new(ep.PermuteFactory, 3)
    # A transpose of 32 x 32 (CUDA's shared-memory tiles, the CPU's tiles) and one whose last dim
    # stays (the strided copy).
    for dims, permutation in (((32, 32), (1, 0)), ((2, 3, 4), (1, 0, 2))):
        count = math.prod(dims)
        primitive.Launch(tiny.stream, dtype, len(dims), dims, tiny.ones(count, dtype), permutation, tiny.zeros(count, dtype))


def _constant_pad(tiny: _Tiny, op: None, dtype: str) -> None:
    primitive = tiny.new(ep.ConstantPadFactory, dtype)
    primitive.Launch(tiny.stream, 2, (2, 3), tiny.ones(6, dtype), (1, 0), (0, 1), 0, tiny.zeros(12, dtype))


def _softmax(factory: type, backward: bool) -> Callable[..., None]:
    def launch(tiny: _Tiny, op: None, dtype: str) -> None:
        primitive = tiny.new(factory, dtype)
        # Rows of one block (the CPU's own span for cols <= its BLOCK of 8192) and longer ones.
        for cols in (3, 8193):
            buffers = [tiny.ones(cols, dtype) for _ in range(3 if backward else 2)]
            primitive.Launch(tiny.stream, 1, cols, *buffers)

    return launch


def _cast(tiny: _Tiny, op: None, src: str, dst: str) -> None:
    tiny.new(ep.CastFactory, src, dst).Launch(tiny.stream, tiny.ones(4, src), tiny.zeros(4, dst), 4)


def _fill(tiny: _Tiny, op: None, dtype: str) -> None:
    tiny.new(ep.FillFactory, dtype).Launch(tiny.stream, tiny.zeros(4, dtype), 1, 4)


def _tensor_fill(tiny: _Tiny, op: None, dtype: str) -> None:
    tiny.new(ep.TensorFillFactory, dtype).Launch(tiny.stream, tiny.ones(1, dtype), tiny.zeros(4, dtype), 4)


def _where(tiny: _Tiny, op: None, cond: str, dtype: str) -> None:
    primitive = tiny.new(ep.WhereFactory, cond, dtype, 3)
    # The flat select and the broadcast rows.
    for cond_dims, x_dims in (((4,), (4,)), ((2, 1), (1, 3))):
        z_dims = tuple(np.broadcast_shapes(cond_dims, x_dims))
        c, x = tiny.ones(math.prod(cond_dims), cond), tiny.ones(math.prod(x_dims), dtype)
        primitive.Launch(tiny.stream, len(cond_dims), cond_dims, c, len(x_dims), x_dims, x, len(x_dims), x_dims, x, tiny.zeros(math.prod(z_dims), dtype))


def _add(tiny: _Tiny, op: None, dtype: str) -> None:
    primitive = tiny.new(ep.AddFactory, dtype)
    for arity in (2, 3):
        primitive.Launch(tiny.stream, [tiny.ones(4, dtype) for _ in range(arity)], arity, tiny.zeros(4, dtype), 4)


def _one_hot(tiny: _Tiny, op: None, indices: str, dtype: str) -> None:
    primitive = tiny.new(ep.OneHotFactory, indices, dtype, check_bounds=True)
    primitive.Launch(tiny.stream, tiny.array([0, 2], indices), tiny.zeros(6, dtype), 1, 0, 2, 0, 3)


def _matmul(factory: type) -> Callable[..., None]:
    """The launch of a (Batch, Broadcast) Matmul factory: one 2x2 product (the BLAS's for floats,
    ep's kernel for integers), each transpose pair."""

    def launch(tiny: _Tiny, op: None, dtype: str) -> None:
        for trans in ((False, False), (True, True)):
            primitive = tiny.new(factory, dtype, *trans, *((3,) if factory is ep.BroadcastMatmulFactory else ()))
            a, b, c = tiny.ones(4, dtype), tiny.ones(4, dtype), tiny.zeros(4, dtype)
            if factory is ep.MatmulFactory:
                primitive.Launch(tiny.stream, 2, 2, 2, 1, a, b, 0, c)
            elif factory is ep.BatchMatmulFactory:
                primitive.Launch(tiny.stream, 1, 2, 2, 2, 1, a, b, 0, c)
            else:
                primitive.Launch(tiny.stream, 1, 2, (2, 2), a, 2, (2, 2), b, 0, 2, (2, 2), c)

    return launch


# Per primitive (registry_rows' name): launch(tiny, op name or None, *dtypes) covering its kernels.
LAUNCHES: dict[str, Callable[..., None]] = {
    "ElementwiseUnary": _unary,
    "BroadcastElementwiseBinary": _binary,
    "Gather": _gather,
    "BatchGather": _batch_gather,
    "UnsortedSegmentSum": _segment_sum,
    "Expand": _expand,
    "ExpandGrad": _expand_grad,
    "Reduce": _reduce,
    "Scan": _scan,
    "CopyNd": _copy_nd,
    "Permute": _permute,
    "ConstantPad": _constant_pad,
    "Softmax": _softmax(ep.SoftmaxFactory, backward=False),
    "LogSoftmax": _softmax(ep.LogSoftmaxFactory, backward=False),
    "SoftmaxBackward": _softmax(ep.SoftmaxBackwardFactory, backward=True),
    "LogSoftmaxBackward": _softmax(ep.LogSoftmaxBackwardFactory, backward=True),
    "Cast": _cast,
    "Fill": _fill,
    "TensorFill": _tensor_fill,
    "Where": _where,
    "Add": _add,
    "OneHot": _one_hot,
    "Matmul": _matmul(ep.MatmulFactory),
    "BatchMatmul": _matmul(ep.BatchMatmulFactory),
    "BroadcastMatmul": _matmul(ep.BroadcastMatmulFactory),
}


def chosen_rows(
    devices: Iterable[str], ops: Iterable[str] | None = None, dtypes: Iterable[str] | None = None,
    primitives: Iterable[str] | None = None,
) -> list[dict]:
    """registry_rows on devices whose op is one of ops (as `ep list --op` matches one), whose first
    dtype (the data's; a unary or binary op's source) is one of dtypes and whose primitive is one
    of primitives; None chooses every one."""
    chosen: dict[tuple, dict] = {}
    for device in devices:
        for primitive in primitives or [None]:
            for op in ops or [None]:
                for row in registry_rows(device, primitive, op):
                    if dtypes is None or row["dtypes"][0] in dtypes:
                        chosen[row["device"], row["primitive"], row["op"], tuple(row["dtypes"])] = row
    return list(chosen.values())


@contextlib.contextmanager
def _compilations() -> Iterator[Callable[[], int]]:
    """Inside: a function giving how many functions Numba compiled so far for the CPU (a load
    from the disk cache is none). numba-cuda's kernels report no such event."""
    import numba.core.event

    with numba.core.event.install_recorder("numba:compile") as recorder:
        yield lambda: sum(event.is_start for _, event in recorder.buffer)


def _progress(rows: list[dict]) -> Iterator[dict]:
    """rows, with tqdm's bar when tqdm is installed, else a counter line on stderr."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        yield from tqdm(rows, desc="warmup", unit="combination", file=sys.stderr)
        return
    for position, row in enumerate(rows, 1):
        print(f"\rwarmup {position}/{len(rows)} {_label(row):70.70s}", end="", file=sys.stderr, flush=True)
        yield row
    if rows:
        print(file=sys.stderr)


def _label(row: dict) -> str:
    op = f" {row['op']}" if row["op"] else ""
    return f"{row['device']} {row['primitive']}{op} {','.join(row['dtypes'])}"


def cache_location() -> str:
    """Where Numba's disk cache is: NUMBA_CACHE_DIR, or its default beside ep's modules."""
    directory = os.environ.get("NUMBA_CACHE_DIR")
    return f"NUMBA_CACHE_DIR={directory}" if directory else "__pycache__ beside ep's modules (NUMBA_CACHE_DIR unset)"


def warm(rows: list[dict]) -> int:
    """Launch each row's combination once on tiny arrays, printing progress and a summary; 0 when
    every launch ran, 1 when one failed (each failure is printed)."""
    unlaunched = sorted({row["primitive"] for row in rows if row["primitive"] not in LAUNCHES})
    if unlaunched:
        print(f"warmup skips {', '.join(unlaunched)}: they compile on their first launch (ElementwiseFused per expression)")
        rows = [row for row in rows if row["primitive"] in LAUNCHES]
    compiled, functions, cached, on_cuda, failures = 0, 0, 0, 0, []
    start = time.perf_counter()
    with _compilations() as compilations:
        for row in _progress(rows):
            before = compilations()
            try:
                tiny = _Tiny(row["device"])
                LAUNCHES[row["primitive"]](tiny, row["op"], *row["dtypes"])
                tiny.stream.Sync()
            except Exception as error:  # report every failing combination, then fail
                failures.append(f"FAILED {_label(row)}: {type(error).__name__}: {error}")
                continue
            new = compilations() - before
            if row["device"] == "cuda":
                on_cuda += 1
            elif new:
                compiled, functions = compiled + 1, functions + new
            else:
                cached += 1
    seconds = time.perf_counter() - start
    for line in failures:
        print(line)
    cuda = f"{on_cuda} launched on cuda (compiled or loaded: numba-cuda does not say), " if on_cuda else ""
    print(
        f"warmup: {len(rows)} combinations in {seconds:.1f} s: {compiled} compiled ({functions} functions), "
        f"{cached} cached (on disk, or by an earlier combination), {cuda}{len(failures)} failed; cache: {cache_location()}"
    )
    return 1 if failures or not rows else 0
