"""Gather on the CPU, and the kernels BatchGather shares: one kernel for both, a prange over chunks of output rows.

Each row is one contiguous copy of inner elements. The kernel runs on the buffers' own storage
dtype (Numba compiles one specialization per storage and index dtype on first use), so that a
launch makes no views. One pass over the indices first tells whether every index is in range as
given or once negatives wrap (then the element loops need no range check), and with check_bounds
which index is the first bad one, before anything is written. Reads from params too large for the
caches are prefetched: rows a few ahead, or for an element gather the next slab, since their
addresses come from indices and the hardware prefetcher cannot guess them. A tiny launch of one
slab runs a serial kernel with fewer arguments, called without Numba's dispatch.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numba
import numpy as np
from numba import prange

from ep.common.jit import scalar_function, template
from ep.common.math.intrinsics import prefetch
from ep.common.primitive.gather import GatherFactoryImpl, GatherSizes, IndexedKernels, first_bad_index, gather_row
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX, INT64_MIN
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel
from ep.include.primitive.gather import GatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

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
                    r = gather_row(np.int64(segment[i]), lo, hi, gather, wrap)
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
                r = gather_row(np.int64(segment[i + ahead]), lo, hi, gather, wrap)
                if r >= 0:
                    for k in range(0, inner, line):
                        prefetch(src, r * inner + k)
            r = gather_row(np.int64(segment[i]), lo, hi, gather, wrap)
            d = np.uint64(i * inner)
            if r >= 0:
                s = np.uint64(r * inner)
                for k in range(np.uint64(inner)):
                    dst[d + k] = src[s + k]
            else:
                for k in range(np.uint64(inner)):
                    dst[d + k] = 0


@scalar_function
def _least_greatest(indices, count):
    """The least and greatest of count indices, on the calling thread."""
    low = INT64_MAX
    high = INT64_MIN
    for t in range(count):
        value = np.int64(indices[t])
        low = min(low, value)
        high = max(high, value)
    return low, high


@scalar_function
def _index_mode(indices, count, low, high, lo, hi, size, wrap, check):
    """What count indices between low and high (their least and greatest) are: _DIRECT, _WRAPPED or
    _CHECKED; and with check the position of the first bad one, or -1."""
    if lo <= low and high <= hi:
        return _DIRECT, -1
    if wrap and lo == 0 and -size <= low and high <= hi:
        return _WRAPPED, -1
    return _CHECKED, first_bad_index(indices, count, lo, hi, size, wrap) if check else -1


@template()
def _gather(indices, in_, out, index_count, rows, rows_per_chunk, num_indices, outer, gather, inner, lo, hi, wrap, check, ahead):
    # The least and greatest index decide the loops' mode; with check, a bad index ends the launch
    # before any write.
    if index_count < _PARALLEL_INDICES:
        low, high = _least_greatest(indices, index_count)
    else:
        low = INT64_MAX
        high = INT64_MIN
        per_chunk = (index_count + _CHUNKS - 1) // _CHUNKS
        for chunk in prange(_CHUNKS):
            start = min(chunk * per_chunk, index_count)
            stop = min(start + per_chunk, index_count)
            chunk_low, chunk_high = _least_greatest(indices[start:stop], stop - start)
            low = min(low, chunk_low)
            high = max(high, chunk_high)
    mode, bad = _index_mode(indices, index_count, low, high, lo, hi, gather, wrap, check)
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


@template()
def _gather_slab(indices, in_, out, num_indices, gather, inner, lo, hi, wrap, check):
    # A launch of one slab (batch and outer 1) small enough to run serially: no chunks, no
    # segments, fewer arguments; what tiny launches cost is mostly the call.
    low, high = _least_greatest(indices, num_indices)
    mode, bad = _index_mode(indices, num_indices, low, high, lo, hi, gather, wrap, check)
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
    # The one-slab serial kernel compiled for plain C-contiguous buffers, which launches of such
    # buffers call without Numba's dispatch; None for other plans.
    entry: Callable | None = None
    # Rows move as raw bytes in the widest unsigned unit (8, 4 or 2 bytes) dividing a row, when it
    # is wider than the element and both buffers are aligned to it: unit_args is then args with
    # inner counted in units. None where the element is already the widest unit.
    unit: np.dtype | None = None
    unit_args: tuple = ()


def _nothing(*args) -> int:
    # The launch of an empty out that checks no index.
    return -1


@functools.cache
def _slab_entry(index_dtype: np.dtype, dtype: np.dtype) -> Callable:
    index_array = numba.types.Array(numba.from_dtype(index_dtype), 1, "C")
    array = numba.types.Array(numba.from_dtype(dtype), 1, "C")
    return _SLAB_KERNEL.serial.compile((index_array, array, array) + (numba.int64,) * 7)


def _plan(dtype: np.dtype, index_dtype: np.dtype, sizes: GatherSizes, wrap: int, check: int) -> _Plan:
    counts = (sizes.index_count, sizes.params_count, sizes.gathered_count)
    if sizes.gathered_count == 0 and not check:
        return _Plan(*counts, _nothing, ())
    rows = sizes.batch * sizes.outer * sizes.num_indices
    serial = sizes.gathered_count + sizes.index_count < PARALLEL_THRESHOLD
    if serial and sizes.batch * sizes.outer == 1:
        args = (sizes.num_indices, sizes.gather, sizes.inner, sizes.lo, sizes.hi, wrap, check)
        return _Plan(*counts, _SLAB_KERNEL.serial, args, _slab_entry(index_dtype, dtype))
    itemsize = dtype.itemsize
    if sizes.inner == 1:
        slab_bytes = sizes.gather * itemsize
        dense = _LINE_BYTES * sizes.num_indices >= slab_bytes
        ahead = int(sizes.params_count * itemsize >= _PREFETCH_BYTES and slab_bytes <= _SLAB_PREFETCH_BYTES and dense)
    else:
        ahead = _AHEAD if sizes.params_count * itemsize >= _PREFETCH_BYTES else 0
    args = (
        sizes.index_count,
        rows,
        max(1, -(-rows // _CHUNKS)),
        sizes.num_indices,
        sizes.outer,
        sizes.gather,
        sizes.inner,
        sizes.lo,
        sizes.hi,
        wrap,
        check,
        ahead,
    )
    run = _KERNEL.serial if serial else _KERNEL.parallel
    row_bytes = sizes.inner * itemsize
    width = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    if sizes.inner == 1 or width <= itemsize:
        return _Plan(*counts, run, args)
    unit_args = args[:6] + (row_bytes // width,) + args[7:]
    return _Plan(*counts, run, args, None, np.dtype(f"uint{8 * width}"), unit_args)


def _run_in_units(plan: _Plan, indices, in_, out) -> int:
    """Run plan, moving rows in its raw unit when both buffers are aligned to it."""
    unit = plan.unit
    if unit is not None and in_.ctypes.data % unit.itemsize == 0 and out.ctypes.data % unit.itemsize == 0:
        in_units = in_[: plan.in_count].view(unit)
        out_units = out[: plan.out_count].view(unit)
        return plan.run(indices, in_units, out_units, *plan.unit_args)
    return plan.run(indices, in_, out, *plan.args)


class CpuGatherKernels(IndexedKernels):
    def plan(self, dtype: DataType, indices_dtype: DataType, sizes: GatherSizes, wrap: bool, check: bool) -> _Plan:
        return _plan(dtype.storage_dtype, indices_dtype.dtype, sizes, int(wrap), int(check))

    def run(self, primitive, plan, stream, indices, in_, out) -> int:
        sizes, plan = plan
        dtype = primitive.plain_dtype
        # The common case in a few attribute reads (they are most of what a tiny launch costs):
        # 1-d C-contiguous aligned NumPy buffers of the primitive's dtypes and long enough.
        # Anything else goes through storage(), which also reshapes, views float16 and names
        # what is wrong.
        if (
            type(indices) is np.ndarray
            and type(in_) is np.ndarray
            and type(out) is np.ndarray
            and indices.dtype is primitive.indices_dtype.dtype
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
            if plan.entry is not None:
                # The buffers have exactly the types the entry was compiled for (read-only inputs
                # are only read), so the call skips Numba's type dispatch.
                return plan.entry(indices, in_, out, *plan.args)
            return _run_in_units(plan, indices, in_, out)
        return _run_in_units(plan, *primitive.checked_buffers(sizes, indices, in_, out))

    def all_kernels(self):
        return (_KERNEL, _SLAB_KERNEL)


CPU_GATHER_KERNELS = CpuGatherKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, GatherFactory, GatherFactoryImpl(DeviceType.kCPU, CPU_GATHER_KERNELS))
