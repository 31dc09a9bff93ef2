"""What the CUDA kernels of Gather, BatchGather and UnsortedSegmentSum share: one kernel pairing
each gathered element with the params element its index selects (Gather moves it, the segment sum
adds to it), its index widths and divisions by invariant sizes, and the bounds check that runs
before either writes.

With check_bounds the launch does not wait for its check: a bounds kernel records the first bad
index on the device, the gather writes zeros where an index selects no row (the segment sum adds
nothing), and the stream's next Sync() raises IndexOutOfRange with its position and value.

Each kernel comes in two index widths (ep/common/math/fast_divmod.py's needs_wide and
index_bindings): 32-bit, with fast_divmod's multiply-high in place of every division, when every
buffer fits in 2**31 - 1 elements, and 64-bit with plain division otherwise.
"""
from __future__ import annotations

import abc
import threading
from typing import NamedTuple

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.primitive.gather import GatherSizes, IndexedKernels, IndexedPrimitive, gather_row
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.common.runtime.device import caller_indices
from ep.cuda.kernel import CudaKernel, keep_launch
from ep.include.primitive.gather import IndexOutOfRange


# A record's empty slot: larger than any position.
_NONE = np.iinfo(np.int64).max
# A stream's record: [this launch's first bad position, the failing launch's context, its
# position, its value].
_SCRATCH, _CONTEXT, _POSITION, _VALUE = range(4)


@template()
def _first_bad(indices, count, lo, hi, size, wrap, record):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        if gather_row(np.int64(indices[t]), lo, hi, size, wrap) < 0:
            cuda.atomic.min(record, 0, t)
        t += step


@template()
def _keep_first(indices, context, record):
    # One thread, after _first_bad: this launch's bad index becomes the stream's error unless an
    # earlier launch's already is (the host reads it at Sync), and the scratch slot is reset.
    if cuda.grid(1) == 0:
        position = record[0]
        if position != _NONE:
            if record[1] == _NONE:
                record[1] = context
                record[2] = position
                record[3] = np.int64(indices[position])
            record[0] = _NONE


@template("INDEX", "DIVMOD", "BATCHED", "visit")
def _indexed(indices, params, gathered, total, inner, inner_m, inner_s, num, num_m, num_s, outer, outer_m, outer_s, rows, lo, hi, wrap):
    # Element t of gathered [batch, outer, num, inner] pairs with element p of params [batch,
    # outer, rows, inner], in the row its index selects (found false where it selects none).
    t = bound.INDEX(cuda.grid(1))
    step = bound.INDEX(cuda.gridsize(1))
    while t < total:
        row, k = bound.DIVMOD(t, inner, inner_m, inner_s)
        batch_outer, i = bound.DIVMOD(row, num, num_m, num_s)
        position = i
        if bound.BATCHED:
            b, _ = bound.DIVMOD(batch_outer, outer, outer_m, outer_s)
            position = bound.INDEX(b * num + i)
        r = gather_row(np.int64(indices[position]), lo, hi, rows, wrap)
        p = bound.INDEX(bound.INDEX(batch_outer * rows + bound.INDEX(max(r, 0))) * inner + k)
        bound.visit(params, gathered, t, p, r >= 0)
        t = bound.INDEX(t + step)


def indexed_kernel(name: str, indices_dtype: DataType, params, gathered, wide: bool, batched: bool, visit) -> CudaKernel:
    """The kernel (indices, params, gathered, *indexed_args) calling visit(params, gathered, t, p,
    found) for each gathered element t, p its params element; params and gathered are Numba array
    types, batched says whether indices has a row per batch."""
    size = fast_divmod.size_type(wide)
    argtypes = (numba.from_dtype(indices_dtype.dtype)[::1], params, gathered, *([size] * 11), *([numba.int64] * 3))
    bindings = fast_divmod.index_bindings(wide)
    return CudaKernel(_indexed, f"{name}_{'i64' if wide else 'i32'}", argtypes, BATCHED=batched, visit=visit, **bindings)


def indexed_args(sizes: GatherSizes, total: int, inner: int, wide: bool, wrap: bool) -> tuple:
    """An indexed_kernel's arguments after its buffers: total gathered elements (units), inner of
    them a row."""
    return (
        total,
        *fast_divmod.divisor(inner, wide),
        *fast_divmod.divisor(sizes.num_indices, wide),
        *fast_divmod.divisor(sizes.outer, wide),
        sizes.gather,
        sizes.lo,
        sizes.hi,
        int(wrap),
    )


@function_cache("kernels")
def bounds_kernel(indices_dtype: DataType) -> CudaKernel:
    """The kernel that finds the first index selecting no row, with an atomic min of positions."""
    argtypes = (numba.from_dtype(indices_dtype.dtype)[::1], *([numba.int64] * 5), numba.int64[::1])
    return CudaKernel(_first_bad, f"gather_bounds_{indices_dtype.value}", argtypes)


@function_cache("kernels")
def keep_first_kernel(indices_dtype: DataType) -> CudaKernel:
    """The one-thread kernel that records a launch's bad index (its value read on the device)."""
    argtypes = (numba.from_dtype(indices_dtype.dtype)[::1], numba.int64, numba.int64[::1])
    return CudaKernel(_keep_first, f"gather_bounds_record_{indices_dtype.value}", argtypes)


def bounds_kernels():
    """The bounds-check kernels of every index dtype."""
    for dtype in INDEX_TYPES:
        yield bounds_kernel(dtype)
        yield keep_first_kernel(dtype)


class _Context(NamedTuple):
    """What the error of a launch with a bad index says beyond its position and value."""

    name: str
    size: int
    expected: str
    shape: tuple[int, ...] | None


# Contexts are few (one per primitive kind and size): a record names one by its number here.
_contexts: dict[_Context, int] = {}
_context_list: list[_Context] = []
_contexts_lock = threading.Lock()


def _context_number(context: _Context) -> int:
    number = _contexts.get(context)
    if number is None:
        with _contexts_lock:
            number = _contexts.setdefault(context, len(_context_list))
            if number == len(_context_list):
                _context_list.append(context)
    return number


class BoundsRecord:
    """A stream's device record of the first bad index its checked launches met, read by Sync.

    Allocated once per stream (its first checked launch), so a launch allocates, copies and waits
    for nothing: its kernels write the record on the device and Sync raises the error.
    """

    def __init__(self, stream) -> None:
        self.stream = stream
        with cuda.gpus[stream.device.index]:
            self.array = cuda.to_device(np.full(4, _NONE, np.int64), stream=stream.native)

    def check(self) -> None:
        """After the stream's synchronization: raise IndexOutOfRange for the first bad index
        recorded since the last check (and clear it)."""
        record = self.array.copy_to_host(stream=self.stream.native)
        if record[_CONTEXT] == _NONE:
            return
        self.array.copy_to_device(np.full(4, _NONE, np.int64), stream=self.stream.native)
        self.stream.native.synchronize()
        context = _context_list[int(record[_CONTEXT])]
        raise IndexOutOfRange(context.name, int(record[_POSITION]), int(record[_VALUE]), context.size, context.expected, context.shape)


def bounds_record(stream) -> BoundsRecord:
    """The stream's BoundsRecord, made on its first checked launch."""
    for check in stream.deferred:
        if type(check) is BoundsRecord:
            return check
    record = BoundsRecord(stream)
    stream.deferred.append(record)
    return record


class LaunchPlan:
    """What a launch of given sizes keeps (IndexedKernels.plan): its launches by the buffers'
    alignment, filled by the device's run, and its bounds-error contexts by the caller's indices.
    Its launches on a stream (configured, with their buffers' views) are kept by the stream,
    keyed by the plan and a name or its buffers' ids (keep_launch)."""

    __slots__ = ("launches", "contexts")

    def __init__(self) -> None:
        self.launches: dict[int, tuple] = {}
        self.contexts: dict[object, int] = {}


def check_later(primitive, stream, indices, sizes: GatherSizes, plan: LaunchPlan) -> None:
    """Queue the bounds check of the launch's indices (flat device storage) on stream: nothing
    waits; a bad index is raised by the stream's next Sync, and its rows are written as zeros."""
    # Kept on the stream per plan: (bounds kernel, its arguments after the indices, keep-first kernel, the record).
    checks = stream.launches.get((plan, "bounds"))
    if checks is None:
        if sizes.index_count == 0:
            return
        checks = _keep_checks(primitive, stream, sizes, plan)
    caller = caller_indices.get()
    context = plan.contexts.get(caller)
    if context is None:
        name, shape = caller or (primitive.names[0], None)
        context = plan.contexts[caller] = _context_number(_Context(name, sizes.gather, primitive.expected(sizes), shape))
    bounds, args, keep_first, record = checks
    bounds(indices, *args)
    keep_first(indices, context, record)


def _keep_checks(primitive, stream, sizes: GatherSizes, plan: LaunchPlan) -> tuple:
    record = bounds_record(stream).array
    dtype, count = primitive.indices_dtype, sizes.index_count
    args = (count, sizes.lo, sizes.hi, sizes.gather, int(primitive.wrap), record)
    checks = (bounds_kernel(dtype).configured(stream, count), args, keep_first_kernel(dtype).configured(stream, 1), record)
    return keep_launch(stream, (plan, "bounds"), checks)


class CudaIndexedKernels(IndexedKernels):
    """IndexedKernels on CUDA: a plan keeps its launches (LaunchPlan), and a checked run queues its
    bounds check before the launch and never waits for it (check_later), so run returns -1."""

    def plan(self, dtype, indices_dtype, sizes, wrap, check) -> LaunchPlan:
        return LaunchPlan()

    def run(self, primitive: IndexedPrimitive, plan: tuple, stream, indices, src, dst) -> int:
        sizes, kept = plan
        if primitive.check:
            check_later(primitive, stream, indices, sizes, kept)
        self.enqueue(primitive, sizes, kept, stream, indices, src, dst)
        return -1

    @abc.abstractmethod
    def enqueue(self, primitive: IndexedPrimitive, sizes: GatherSizes, kept: LaunchPlan, stream, indices, src, dst) -> None:
        """Queue the primitive's kernels on stream over checked flat storage."""
