"""CPU kernels behind Gather and BatchGather, and the index and gradient kernels ep.ops.gather uses.

Gather is BatchGather with one batch, so one kernel serves both: a prange over chunks of output
rows, each row one contiguous copy of inner elements. It runs on the buffers' own storage dtype
(Numba compiles one specialization per storage and index dtype on first use), so that a launch
makes no views. One pass over the indices first tells whether every index is in range as given
or once negatives wrap (then the element loops need no range check), and, for ep.ops, which
index is the first bad one, before anything is written. Reads from params too large for the
caches are prefetched: rows a few ahead, or for an element gather the next slab, since their
addresses come from indices and the hardware prefetcher cannot guess them. A tiny launch of one
slab runs a serial kernel with fewer arguments, and every launch looks its sizes up in a cache.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numba
import numpy as np
from numba import prange

from ep.common.runtime.buffer import storage
from ep.common.math.intrinsics import prefetch
from ep.common.math.convert import load_fn, store_fn
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.primitive.gather import INT64_MAX, INT64_MIN, accumulator_dtype, gather_plan
from ep.common.jit import scalar_function
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel

# Rows are split into this many chunks (or fewer), enough to balance any core count.
_CHUNKS = 256
# A params buffer this large is not expected in the caches: the kernel then prefetches the rows it
# reads next, whose addresses come from indices and so are beyond the hardware prefetcher.
_PREFETCH_BYTES = 1 << 21
# How many rows ahead the row loop prefetches (measured on a Zen 3: 2 to 8 are alike).
_AHEAD = 4
# An element gather (inner == 1) prefetches the next slab of params, a line at a time spread over
# its work on the current one, when the slab is at most this large and its indices are dense
# enough to read most of its cache lines (columns of a matrix).
_SLAB_PREFETCH_BYTES = 1 << 16
_LINE_BYTES = 64

# Below this many indices the pass over them runs on the calling thread: a parallel region of its
# own would cost a fork and a join, which on a busy machine can wait out another process's slice.
_PARALLEL_INDICES = 1 << 18

# What the pass over the indices finds: all in [lo, hi]; all in range once negatives wrap; neither.
_DIRECT, _WRAPPED, _CHECKED = 0, 1, 2


@scalar_function
def _row_of(value, lo, hi, size, wrap):
    """The row an index value selects, value - lo when lo <= value <= hi (a negative value first
    gains size when wrap), else -1."""
    if wrap and value < 0:
        value += size
    return value - lo if lo <= value <= hi else -1


@scalar_function
def _mode(low, high, lo, hi, size, wrap):
    """What indices between low and high (their least and greatest) are: _DIRECT, _WRAPPED or _CHECKED."""
    if lo <= low and high <= hi:
        return _DIRECT
    if wrap and lo == 0 and -size <= low and high <= hi:
        return _WRAPPED
    return _CHECKED


@scalar_function
def _first_bad(indices, count, lo, hi, size, wrap):
    """The position of the first of count indices that selects no row, or -1."""
    for t in range(count):
        if _row_of(np.int64(indices[t]), lo, hi, size, wrap) < 0:
            return t
    return -1


@scalar_function
def _gather_rows(segment, src, dst, count, gather, inner, lo, hi, wrap, mode, ahead, next_src, next_lines):
    """dst's count rows of inner elements: the rows of src (one slab of in_) that segment's
    indices select, zeros for the others. Along the way the first next_lines cache lines of
    next_src are prefetched, spread over the rows."""
    if gather == 0:
        dst[: count * inner] = 0
    elif inner == 1:
        # Blocks of elements with one prefetch each: a steady stream of line fetches the loads
        # never wait on, where a burst at the start would fill the miss queues.
        line = max(1, _LINE_BYTES // src.itemsize)
        block = max(1, count // next_lines) if next_lines else max(1, count)
        fetched = 0
        for start in range(0, count, block):
            if fetched < next_lines:
                prefetch(next_src, fetched * line)
                fetched += 1
            stop = min(start + block, count)
            # Unsigned positions: Numba then skips its negative-index wraparound.
            if mode == _DIRECT:
                for i in range(start, stop):
                    dst[i] = src[np.uint64(np.int64(segment[i]) - lo)]
            elif mode == _WRAPPED:
                for i in range(start, stop):
                    value = np.int64(segment[i])
                    dst[i] = src[np.uint64(value + gather if value < 0 else value)]
            else:
                for i in range(start, stop):
                    r = _row_of(np.int64(segment[i]), lo, hi, gather, wrap)
                    if r >= 0:
                        dst[i] = src[r]
                    else:
                        dst[i] = 0
        for k in range(fetched, next_lines):
            prefetch(next_src, k * line)
    else:
        line = max(1, _LINE_BYTES // src.itemsize)
        for i in range(count):
            if ahead and i + ahead < count:
                r = _row_of(np.int64(segment[i + ahead]), lo, hi, gather, wrap)
                if r >= 0:
                    for k in range(0, inner, line):
                        prefetch(src, r * inner + k)
            r = _row_of(np.int64(segment[i]), lo, hi, gather, wrap)
            d = np.uint64(i * inner)
            if r >= 0:
                s = np.uint64(r * inner)
                for k in range(np.uint64(inner)):
                    dst[d + k] = src[s + k]
            else:
                for k in range(np.uint64(inner)):
                    dst[d + k] = 0


def _gather(indices, in_, out, index_count, rows, rows_per_chunk, num_indices, outer, gather, inner, lo, hi, wrap, check, ahead):
    # The least and greatest index decide the loops' mode (_mode); with check, a bad index ends
    # the launch before any write.
    low = INT64_MAX
    high = INT64_MIN
    if index_count < _PARALLEL_INDICES:
        for t in range(index_count):
            value = np.int64(indices[t])
            low = min(low, value)
            high = max(high, value)
    else:
        for t in prange(index_count):
            value = np.int64(indices[t])
            low = min(low, value)
            high = max(high, value)
    mode = _mode(low, high, lo, hi, gather, wrap)
    if check and mode == _CHECKED:
        bad = _first_bad(indices, index_count, lo, hi, gather, wrap)
        if bad >= 0:
            return bad
    if rows * inner == 0:
        return -1
    line = max(1, _LINE_BYTES // in_.itemsize)
    slabs = rows // num_indices
    for chunk in prange((rows + rows_per_chunk - 1) // rows_per_chunk):
        _gather_chunk(indices, in_, out, chunk, rows, rows_per_chunk, num_indices, outer, gather, inner, lo, hi, wrap, mode, ahead, line, slabs)
    return -1


@scalar_function
def _gather_chunk(indices, in_, out, chunk, rows, rows_per_chunk, num_indices, outer, gather, inner, lo, hi, wrap, mode, ahead, line, slabs):
    """Rows [chunk * rows_per_chunk, ...) of out, at most rows_per_chunk of them."""
    row = chunk * rows_per_chunk
    stop = min(row + rows_per_chunk, rows)
    # A chunk is cut into segments of rows of one (batch, outer) slab; inside a segment the
    # loops see plain views, which is what lets LLVM vectorize them.
    while row < stop:
        batch_outer = row // num_indices
        i0 = row - batch_outer * num_indices
        count = min(num_indices - i0, stop - row)
        first_index = (batch_outer // outer) * num_indices + i0
        src = in_[batch_outer * gather * inner : (batch_outer + 1) * gather * inner]
        # An element gather reads its next slab while it works on this one (ahead says it is dense).
        next_lines = (gather + line - 1) // line if inner == 1 and ahead and batch_outer + 1 < slabs else 0
        _gather_rows(
            indices[first_index : first_index + count],
            src,
            out[row * inner : (row + count) * inner],
            count,
            gather,
            inner,
            lo,
            hi,
            wrap,
            mode,
            ahead,
            in_[(batch_outer + 1) * gather : (batch_outer + 2) * gather] if next_lines else src,
            next_lines,
        )
        row += count


def _gather_slab(indices, in_, out, num_indices, gather, inner, lo, hi, wrap, check):
    # A launch of one slab (batch and outer 1) small enough to run serially: no chunks, no
    # segments, fewer arguments; what tiny launches cost is mostly the call.
    low = INT64_MAX
    high = INT64_MIN
    for t in range(num_indices):
        value = np.int64(indices[t])
        low = min(low, value)
        high = max(high, value)
    mode = _mode(low, high, lo, hi, gather, wrap)
    if check and mode == _CHECKED:
        bad = _first_bad(indices, num_indices, lo, hi, gather, wrap)
        if bad >= 0:
            return bad
    if inner:
        _gather_rows(indices, in_, out, num_indices, gather, inner, lo, hi, wrap, mode, 0, in_, 0)
    return -1


# One kernel for every dtype: Numba compiles a specialization per buffer and index dtype.
_KERNEL = CpuKernel(_gather, "gather")
_SLAB_KERNEL = CpuKernel(_gather_slab, "gather_slab")


class _Plan(NamedTuple):
    """A CPU launch's buffer counts, the kernel build to run and its size arguments."""

    index_count: int
    in_count: int
    out_count: int
    run: Callable
    args: tuple
    # Whether run is the one-slab serial kernel, whose launches of plain buffers skip Numba's dispatch.
    slab: bool
    # Rows move as raw bytes in the widest unsigned unit (8, 4 or 2 bytes) dividing a row, when it
    # is wider than the element and both buffers are aligned to it: unit_args is then args with
    # inner counted in units. None where the element is already the widest unit.
    unit: np.dtype | None = None
    unit_args: tuple = ()


def _nothing(*args) -> int:
    # The launch of an empty out that checks no index.
    return -1


def _plan(itemsize: int, num_indices, batch, outer, gather, inner, offset, wrap: int = 0, check: int = 0) -> _Plan:
    plan = gather_plan(num_indices, batch, outer, gather, inner, offset)
    if plan.out_count == 0 and not check:
        return _Plan(plan.index_count, plan.in_count, plan.out_count, _nothing, (), False)
    rows = plan.batch * plan.outer * plan.num_indices
    serial = plan.out_count + plan.index_count < PARALLEL_THRESHOLD
    if serial and plan.batch * plan.outer == 1:
        args = (plan.num_indices, plan.gather, plan.inner, plan.lo, plan.hi, wrap, check)
        return _Plan(plan.index_count, plan.in_count, plan.out_count, _SLAB_KERNEL.serial, args, True)
    if plan.inner == 1:
        slab_bytes = plan.gather * itemsize
        dense = _LINE_BYTES * plan.num_indices >= slab_bytes
        ahead = int(plan.in_count * itemsize >= _PREFETCH_BYTES and slab_bytes <= _SLAB_PREFETCH_BYTES and dense)
    else:
        ahead = _AHEAD if plan.in_count * itemsize >= _PREFETCH_BYTES else 0
    args = (
        plan.index_count,
        rows,
        max(1, -(-rows // _CHUNKS)),
        plan.num_indices,
        plan.outer,
        plan.gather,
        plan.inner,
        plan.lo,
        plan.hi,
        wrap,
        check,
        ahead,
    )
    run = _KERNEL.serial if serial else _KERNEL.parallel
    row_bytes = plan.inner * itemsize
    width = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    if plan.inner == 1 or width <= itemsize:
        return _Plan(plan.index_count, plan.in_count, plan.out_count, run, args, False)
    unit_args = args[:6] + (row_bytes // width,) + args[7:]
    unit = np.dtype(f"uint{8 * width}")
    return _Plan(plan.index_count, plan.in_count, plan.out_count, run, args, False, unit, unit_args)


class GatherLauncher:
    """Checks and runs CPU Gather and BatchGather launches of one params and one indices dtype."""

    def __init__(self, params_dtype: DataType, indices_dtype: DataType) -> None:
        self.params_dtype, self.indices_dtype = params_dtype, indices_dtype
        self._dtype = params_dtype.storage_dtype
        self._index_dtype = indices_dtype.dtype
        # plan(num_indices, batch, outer, gather, inner, offset[, wrap, check]) -> _Plan, or a
        # TypeError or ValueError naming a bad size. The cache is keyed by the caller's own
        # arguments (typed, so True never passes for 1): a repeated launch skips every check and
        # derivation of its sizes; unhashable arguments take uncached_plan.
        self.uncached_plan = functools.partial(_plan, self._dtype.itemsize)
        self.plan = functools.lru_cache(maxsize=1024, typed=True)(self.uncached_plan)
        self._slab_entry: Callable | None = None  # compiled on the first one-slab launch

    def prepare(self, num_indices, batch, outer, gather, inner, offset, wrap: int, check: int) -> Callable:
        """(stream, indices, in_, out) -> -1, or with check the position of the first bad index: a
        launch of these sizes, its buffers checked at each call.

        wrap and check (0 or 1) are ep.ops' index rule: wrap gives a negative index the gather size
        first (offset must be 0); check stops the launch at a bad index (out of range after that)
        before anything is written.
        """
        return functools.partial(self.run, self.uncached_plan(num_indices, batch, outer, gather, inner, offset, wrap, check))

    def run(self, plan: _Plan, stream, indices, in_, out) -> int:
        """Check the buffers against plan and run it (the stream is already checked); -1, or
        with the plan's check the position of the first bad index."""
        dtype = self._dtype
        # The common case in a few attribute reads (they are most of what a tiny launch costs):
        # 1-d C-contiguous aligned NumPy buffers of the primitive's dtypes and long enough.
        # Anything else goes through storage(), which also reshapes, views float16 and names
        # what is wrong.
        if (
            type(indices) is np.ndarray
            and type(in_) is np.ndarray
            and type(out) is np.ndarray
            and indices.dtype is self._index_dtype
            and in_.dtype is dtype
            and out.dtype is dtype
            and indices.ndim == 1
            and in_.ndim == 1
            and out.ndim == 1
            and indices.size >= plan.index_count
            and in_.size >= plan.in_count
            and out.size >= plan.out_count
            and (index_flags := indices.flags).c_contiguous
            and index_flags.aligned
            and (in_flags := in_.flags).c_contiguous
            and in_flags.aligned
            and (out_flags := out.flags).c_contiguous
            and out_flags.aligned
            and out_flags.writeable
        ):
            if plan.slab:
                # The buffers have exactly the types the entry was compiled for (read-only inputs
                # are only read), so the call skips Numba's type dispatch.
                return (self._slab_entry or self._compile_slab_entry())(indices, in_, out, *plan.args)
            return _run_in_units(plan, indices, in_, out)
        indices = storage(indices, "indices", DeviceType.kCPU, self.indices_dtype, plan.index_count)
        in_ = storage(in_, "in_", DeviceType.kCPU, self.params_dtype, plan.in_count)
        out = storage(out, "out", DeviceType.kCPU, self.params_dtype, plan.out_count, writable=True)
        return _run_in_units(plan, indices, in_, out)

    def _compile_slab_entry(self) -> Callable:
        index_array = numba.types.Array(numba.from_dtype(self._index_dtype), 1, "C")
        array = numba.types.Array(numba.from_dtype(self._dtype), 1, "C")
        self._slab_entry = _SLAB_KERNEL.serial.compile((index_array, array, array) + (numba.int64,) * 7)
        return self._slab_entry


def _run_in_units(plan: _Plan, indices, in_, out) -> int:
    """Run plan, moving rows in its raw unit when both buffers are aligned to it."""
    unit = plan.unit
    if unit is not None and in_.ctypes.data % unit.itemsize == 0 and out.ctypes.data % unit.itemsize == 0:
        in_units = in_[: plan.in_count].view(unit)
        out_units = out[: plan.out_count].view(unit)
        return plan.run(indices, in_units, out_units, *plan.unit_args)
    return plan.run(indices, in_, out, *plan.args)


@functools.cache
def gather_launcher(params_dtype: DataType, indices_dtype: DataType) -> GatherLauncher:
    """The launcher of CPU gathers of params_dtype by indices_dtype."""
    return GatherLauncher(params_dtype, indices_dtype)


def prepare_gather(params_dtype: DataType, indices_dtype: DataType, num_indices, batch, outer, gather, inner, check: bool):
    """ep.ops.gather's launch of these sizes: (stream, indices, in_, out) -> -1, or the position
    of the first bad index when check. Negative indices count from the end; the index rule runs
    inside the gather kernel."""
    return gather_launcher(params_dtype, indices_dtype).prepare(num_indices, batch, outer, gather, inner, 0, 1, int(check))


def _prepare(indices, wrapped, count, size, first_bad):
    bad = count
    for t in prange(count):
        value = np.int64(indices[t])
        wrapped[t] = value + size if value < 0 else value
        if value < -size or value >= size:
            bad = min(bad, t)
    first_bad[0] = bad


@functools.cache
def _prepare_kernel(indices_dtype: np.dtype, wrapped_dtype: np.dtype) -> CpuKernel:
    return CpuKernel(_prepare, f"gather_prepare_{indices_dtype.name}_{wrapped_dtype.name}")


def prepare_indices(stream, indices, count: int, size: int, wrapped_dtype: DataType, check: bool):
    """(indices with negatives wrapped by size, in a new array of wrapped_dtype; first bad position or -1).

    A bad index is one outside [-size, size); the first one's position is found only when check.
    """
    indices = storage(indices, "indices", DeviceType.kCPU, as_data_type(indices.dtype, "indices"), count)
    wrapped = np.empty(count, wrapped_dtype.dtype)
    first_bad = np.empty(1, np.int64)
    _prepare_kernel(indices.dtype, wrapped.dtype)(count, indices, wrapped, count, size, first_bad)
    return wrapped, (int(first_bad[0]) if check and first_bad[0] < count else -1)


def _scatter_add(indices, dy, acc, dx, tasks, row_blocks, rows_per_block, num_indices, outer, gather, inner):
    # A task owns rows [r0, r1) of one (batch, outer) slab of acc: it zeroes them, then adds every
    # dy row whose index falls in them, in index order. No two tasks write the same element.
    for task in prange(tasks):
        batch_outer = task // row_blocks
        r0 = (task - batch_outer * row_blocks) * rows_per_block
        r1 = min(r0 + rows_per_block, gather)
        b = batch_outer // outer
        slab = batch_outer * gather * inner
        for k in range(slab + r0 * inner, slab + r1 * inner):
            acc[k] = 0
        for i in range(num_indices):
            index = np.int64(indices[b * num_indices + i])
            if r0 <= index < r1:
                dst = np.uint64(slab + index * inner)
                src = np.uint64((batch_outer * num_indices + i) * inner)
                for k in range(np.uint64(inner)):
                    acc[dst + k] += load(dy[src + k])  # noqa: F821 (bound by specialize)
        if FINISH:  # noqa: F821 (bound by specialize)
            for k in range(slab + r0 * inner, slab + r1 * inner):
                dx[k] = store(acc[k])  # noqa: F821 (bound by specialize)


@functools.cache
def _scatter_kernel(indices_dtype: np.dtype, dtype: DataType) -> CpuKernel:
    return CpuKernel(
        _scatter_add,
        f"gather_grad_{indices_dtype.name}_{dtype.value}",
        load=load_fn(dtype),
        store=store_fn(dtype),
        FINISH=accumulator_dtype(dtype) is not dtype,
    )


def gather_grad(
    stream, indices, dy, dx, dtype: DataType, batch: int, outer: int, gather: int, inner: int, num_indices: int
) -> None:
    """dx ([batch, outer, gather, inner]) = zeros plus dy ([batch, outer, num_indices, inner]) rows added at
    indices ([batch, num_indices], already wrapped); rows of out-of-range indices are dropped."""
    dx_count = batch * outer * gather * inner
    indices = storage(indices, "indices", DeviceType.kCPU, as_data_type(indices.dtype, "indices"), batch * num_indices)
    dy = storage(dy, "dy", DeviceType.kCPU, dtype, batch * outer * num_indices * inner)
    dx = storage(dx, "dx", DeviceType.kCPU, dtype, dx_count, writable=True)
    if dx_count == 0:
        return
    acc_dtype = accumulator_dtype(dtype)
    acc = dx if acc_dtype is dtype else np.empty(dx_count, acc_dtype.dtype)
    slabs = batch * outer
    # Split each slab's rows into blocks so that there are tasks for every thread.
    row_blocks = min(gather, -(-4 * numba.get_num_threads() // slabs))
    rows_per_block = -(-gather // row_blocks)
    row_blocks = -(-gather // rows_per_block)
    kernel = _scatter_kernel(indices.dtype, dtype)
    tasks = slabs * row_blocks
    kernel(dx_count + dy.size, indices, dy, acc, dx, tasks, row_blocks, rows_per_block, num_indices, outer, gather, inner)
