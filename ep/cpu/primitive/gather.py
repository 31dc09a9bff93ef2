"""Gather on the CPU, and the kernels BatchGather shares: one build for both and for every size,
chunks of output rows run by ParallelFor.

Each row is one contiguous copy of inner elements. The kernels run on the buffers' own storage
dtype (an entry and a span compiled per storage and index dtype on first use), so that a launch
makes no views. A compiled pass over the indices first tells whether every index is in range as
given or once negatives wrap (then the element loops need no range check); with check_bounds an
index out of range ends the launch before anything is written, and the host finds the first such
index (an error path, not worth compiling). Reads from params too large for the caches are
prefetched: rows a few ahead, or for an element gather with every index in range the next slab,
since their addresses come from indices and the hardware prefetcher cannot guess them.
Such an element gather reads through 32-bit positions in the slab, converted once for all the
slabs that share the indices, and streams a large output past the caches. The copies are
compiled on their own, so that a first launch compiles only the one it needs: for element gathers
with every index in range a span that streams and one that never does (chosen by the output's
size), for other element gathers a plain loop, and one span for rows.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numba
import numpy as np

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.math.intrinsics import prefetch, stack_array, stream_fence, stream_store
from ep.common.primitive.gather import GatherFactoryImpl, GatherSizes, IndexedKernels, first_bad_index, gather_row, index_range
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX
from ep.cpu.kernel import CpuKernel
from ep.cpu.parallel_for import PARALLEL_THRESHOLD, TASK_BYTES, ParallelFor, input_array, output_array
from ep.cpu.primitive.copy_nd import STREAM_BYTES
from ep.include.primitive.gather import GatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Rows are split into this many chunks (or fewer, of TASK_BYTES at least), enough to balance any core count.
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
# Rows at least this long move as their elements (a vectorized loop), which is no slower than raw
# units, and skips the units' alignment checks (1.5 us a launch): a 1 MiB gather of 1 KiB rows
# on an AMD EPYC, float32 19.6 -> 16.5 us, bool 22.1 -> 15.9 us. Shorter rows gain from units
# (int8 rows of 24 bytes 151 -> 117 us, float32 pairs 72-80 -> 31 us).
_UNIT_ROW_BYTES = 64

# An element gather with every index in range converts them to 32-bit positions in the slab when
# the slab is at most this long.
_NARROW_LIMIT = 1 << 32
# It then copies elements in groups this large: unrolled, with one prefetch check a group.
_GROUP = 8
# Positions live in a buffer of this many on the span's stack (16 KB); an element gather whose
# segments could be longer runs in chunks of at most this many rows.
_POSITIONS = 4096

# What the pass over the indices finds: all in [lo, hi] (or all in range once negatives wrap);
# some not, which the loops check; some not, with check (the launch runs nothing).
_IN_RANGE, _CHECKED, _REFUSED = 0, 1, 2

# The kernels' int64 parameters (one array: each argument costs compile time).
# _LEAST and _HI bound the index values in range (index_range).
(
    _INDEX_COUNT,
    _ROWS,
    _NUM_INDICES,
    _OUTER,
    _GATHER,
    _INNER,
    _LO,
    _HI,
    _WRAP,
    _CHECK,
    _AHEAD,
    _LEAST,
) = range(12)


@scalar_function
def _plain_store(dst, d, value):
    dst[np.uint64(d)] = value


@scalar_function
def _streaming_store(dst, d, value):
    stream_store(dst, d, value)


@template("store")
def _gather_elements(src, positions, dst, count, next_src, next_lines, line):
    # dst[i] = src[positions[i]] for i < count, stored by store, in groups of _GROUP elements with
    # the next_lines line prefetches of next_src spread evenly over them.
    groups = count // _GROUP
    # Bresenham's spread: after group g, (g + 1) * next_lines // groups lines are fetched.
    due = 0
    fetched = 0
    for g in range(groups):
        due += next_lines
        while due >= groups:
            prefetch(next_src, fetched * line)
            fetched += 1
            due -= groups
        base = g * _GROUP
        # Unsigned positions: Numba then skips its negative-index wraparound.
        for j in range(_GROUP):
            bound.store(dst, base + j, src[positions[np.uint64(base + j)]])
    for i in range(groups * _GROUP, count):
        bound.store(dst, i, src[positions[np.uint64(i)]])
    for k in range(fetched, next_lines):
        prefetch(next_src, k * line)


# The element loop with ordinary stores, and with streaming ones (only 4- and 8-byte numbers stream).
_copy_elements = scalar_function(specialize(_gather_elements, "copy_elements", store=_plain_store))
_stream_elements = scalar_function(specialize(_gather_elements, "stream_elements", store=_streaming_store))


@scalar_function
def _segment(row, stop, num_indices, outer):
    """The segment of rows [row, stop) of out that starts at row and lies in one (batch, outer) slab:
    that slab, the position of its first index and its length."""
    batch_outer = row // num_indices
    i0 = row - batch_outer * num_indices
    count = num_indices - i0 if num_indices - i0 < stop - row else stop - row
    return batch_outer, (batch_outer // outer) * num_indices + i0, count


@scalar_function
def _copy_segment(src, positions, dst, count, next_src, next_lines, line, stream):
    # A segment's elements with ordinary stores: the span of a launch too small to stream.
    _copy_elements(src, positions, dst, count, next_src, next_lines, line)


@scalar_function
def _copy_or_stream_segment(src, positions, dst, count, next_src, next_lines, line, stream):
    # A copy of the loop per store: with one loop and a flag, LLVM merges the two stores of an
    # element (streaming, ordinary) into one ordinary store.
    if stream:
        _stream_elements(src, positions, dst, count, next_src, next_lines, line)
    else:
        _copy_elements(src, positions, dst, count, next_src, next_lines, line)


def _in_range_element_span(copy_segment: Callable, streams: bool) -> Callable:
    """The span template over rows of one element whose indices are all in range (the index pass's
    _IN_RANGE) in slabs of at most _NARROW_LIMIT elements, moving a segment's elements with
    copy_segment: _copy_or_stream_segment (streams: the host runs it for an output of STREAM_BYTES
    or more, _element_entry) or _copy_segment (the streaming loop is about a quarter of the span's
    compile time)."""

    @template()
    def span(row, stop, args):
        # Rows [row, stop) of out, cut into segments of one (batch, outer) slab each: the elements of
        # the slab src that the segment's indices select. Inside a segment the loops see plain
        # views, which is what lets LLVM vectorize them.
        indices, in_, out, params, mode = args
        num_indices, outer, gather = params[_NUM_INDICES], params[_OUTER], params[_GATHER]
        lo, wrap, ahead = params[_LO], params[_WRAP], params[_AHEAD]
        slabs = params[_ROWS] // num_indices
        line = _LINE_BYTES // in_.itemsize if in_.itemsize <= _LINE_BYTES else 1
        # In range once negatives wrap (with wrap): a negative index gains gather.
        wrap_add = gather if wrap else 0
        # The indices as 32-bit positions in the slab (gather <= 2**32): a few instructions an
        # element and half the index bytes in L1.
        positions = stack_array(_POSITIONS, np.uint32)
        positions_of = -1
        positions_count = 0
        # A large output is streamed past the caches (no read for ownership of its lines), when its
        # elements are 4 or 8 bytes and aligned (streaming stores need both).
        stream = streams and (out.itemsize == 4 or out.itemsize == 8) and out.ctypes.data % out.itemsize == 0
        while row < stop:
            batch_outer, first_index, count = _segment(row, stop, num_indices, outer)
            # Segments fit the positions' buffer (the host's chunks see to it; a longer one would
            # go in pieces).
            count = count if count <= _POSITIONS else _POSITIONS
            segment = indices[first_index : first_index + count]
            src = in_[batch_outer * gather : (batch_outer + 1) * gather]
            dst = out[row : row + count]
            # The next slab is read while this one is worked on (ahead says it is dense), a line at
            # a time spread over the elements: a steady stream of line fetches the loads never wait
            # on, where a burst at the start would fill the miss queues.
            next_lines = (gather + line - 1) // line if ahead and batch_outer + 1 < slabs else 0
            next_src = in_[(batch_outer + 1) * gather : (batch_outer + 2) * gather] if next_lines else src
            # The segment's indices as positions in its slab, converted once for every slab that
            # shares them (all the outer rows of a batch).
            if first_index != positions_of or count != positions_count:
                for i in range(count):
                    value = np.int64(segment[i])
                    positions[i] = np.uint32(value - lo + (wrap_add if value < 0 else 0))
                positions_of, positions_count = first_index, count
            copy_segment(src, positions, dst, count, next_src, next_lines, line, stream)
            row += count
        if stream:
            stream_fence()

    return span


# The in-range element spans: streaming a large output, and never streaming.
_gather_element_span = _in_range_element_span(_copy_or_stream_segment, True)
_gather_copy_element_span = _in_range_element_span(_copy_segment, False)


@template()
def _gather_checked_element_span(row, stop, args):
    # Rows [row, stop) of out for inner == 1 where some index is out of range (zeros for it) or a
    # slab is too long for 32-bit positions: rare, so a plain loop, quick to compile.
    indices, in_, out, params, mode = args
    num_indices, outer, gather = params[_NUM_INDICES], params[_OUTER], params[_GATHER]
    lo, hi, wrap = params[_LO], params[_HI], params[_WRAP]
    while row < stop:
        batch_outer, first_index, count = _segment(row, stop, num_indices, outer)
        segment = indices[first_index : first_index + count]
        src = in_[batch_outer * gather : (batch_outer + 1) * gather]
        dst = out[row : row + count]
        for i in range(count):
            r = gather_row(np.int64(segment[i]), lo, hi, gather, wrap)
            # Statements, not `src[r] if r >= 0 else 0`: Numba types that expression of uint64
            # and int as float64, which would round 64-bit units.
            if r >= 0:
                dst[i] = src[r]
            else:
                dst[i] = 0
        row += count


@template()
def _gather_row_span(row, stop, args):
    # Rows [row, stop) of out for any inner, cut into segments of one (batch, outer) slab each: the
    # rows of the slab src that the segment's indices select, zeros for the others, prefetching
    # the row `ahead` further on when ahead.
    indices, in_, out, params, mode = args
    num_indices, outer, gather, inner = params[_NUM_INDICES], params[_OUTER], params[_GATHER], params[_INNER]
    lo, hi, wrap, ahead = params[_LO], params[_HI], params[_WRAP], params[_AHEAD]
    line = _LINE_BYTES // in_.itemsize if in_.itemsize <= _LINE_BYTES else 1
    while row < stop:
        batch_outer, first_index, count = _segment(row, stop, num_indices, outer)
        segment = indices[first_index : first_index + count]
        src = in_[batch_outer * gather * inner : (batch_outer + 1) * gather * inner]
        dst = out[row * inner : (row + count) * inner]
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
        row += count


@template()
def _index_pass(indices, params):
    """The loops' mode: _IN_RANGE when every index is in range (in [least, hi]: as given, or once
    negatives wrap), else _REFUSED with check, else _CHECKED."""
    least, hi = params[_LEAST], params[_HI]
    outside = False
    for t in range(params[_INDEX_COUNT]):
        value = np.int64(indices[t])
        outside |= (value < least) | (value > hi)
    if not outside:
        return _IN_RANGE
    return _REFUSED if params[_CHECK] else _CHECKED


_PARAMS = input_array(np.dtype(np.int64))
# The index pass, a serial build per index dtype (a parallel loop of its own would cost compiling a
# second one, for indices that are few next to the rows they move).
_INDEX_PASS = CpuKernel(_index_pass, "gather_index_pass")


def _span_args(index_dtype: np.dtype, dtype: np.dtype) -> tuple:
    """A span's argument types: (indices, in, out, params, the index pass's mode)."""
    return (input_array(index_dtype), input_array(dtype), output_array(dtype), _PARAMS, numba.int64)


@function_cache("kernels")
def _span(index_dtype: np.dtype, dtype: np.dtype, elements: bool) -> ParallelFor:
    """The span over rows of any length, or (elements) of one element with some index out of range
    or slabs too long for 32-bit positions, for indices of index_dtype and buffers of dtype."""
    template, kind = (_gather_checked_element_span, "element") if elements else (_gather_row_span, "row")
    return ParallelFor(template, f"gather_{kind}_span_{dtype}_{index_dtype}", _span_args(index_dtype, dtype))


@function_cache("kernels")
def _in_range_span(index_dtype: np.dtype, dtype: np.dtype, stream: bool) -> ParallelFor:
    """The span over rows of one element whose indices are all in range, streaming a large output
    (stream) or never."""
    template, kind = (_gather_element_span, "stream") if stream else (_gather_copy_element_span, "copy")
    return ParallelFor(template, f"gather_in_range_{kind}_span_{dtype}_{index_dtype}", _span_args(index_dtype, dtype))


@function_cache("kernels")
def _compiled(
    index_dtype: np.dtype, dtype: np.dtype, elements: bool, narrow: bool, stream: bool
) -> tuple[Callable, ParallelFor, ParallelFor]:
    """The index pass's entry point for 1-d C-contiguous indices of index_dtype; the span a launch
    runs when every index is in range; and the one it runs otherwise. Element rows (elements) with
    32-bit positions (narrow) have an in-range span of their own, which streams (stream) or not."""
    index_pass = _INDEX_PASS.entry(input_array(index_dtype), _PARAMS, parallel=False)
    span = _span(index_dtype, dtype, elements)
    return index_pass, _in_range_span(index_dtype, dtype, stream) if elements and narrow else span, span


class _Entry:
    """_compiled for one index dtype, one buffer dtype and kind of rows, compiled on first use; a
    plan holds it, so that a launch finds its entry without a lookup."""

    __slots__ = ("_key", "_compiled")

    def __init__(self, index_dtype: np.dtype, dtype: np.dtype, elements: bool, narrow: bool, stream: bool) -> None:
        self._key = (index_dtype, dtype, elements, narrow, stream)
        self._compiled = None

    def get(self) -> tuple[Callable, ParallelFor, ParallelFor]:
        if self._compiled is None:
            self._compiled = _compiled(*self._key)
        return self._compiled


_entry = functools.cache(_Entry)


def _row_entry(index_dtype: np.dtype, dtype: np.dtype) -> _Entry:
    """The entry of a gather of rows of dtype wider than one element."""
    return _entry(index_dtype, dtype, False, False, False)


def _element_entry(index_dtype: np.dtype, dtype: np.dtype, sizes: GatherSizes, rows: int) -> _Entry:
    """The entry of an element gather of dtype: with 32-bit positions when a slab allows them, and
    streaming when its output of 4- or 8-byte elements is large enough (the one place that decides
    it; the streaming span then checks only the output's alignment)."""
    narrow = sizes.gather <= _NARROW_LIMIT
    stream = narrow and dtype.itemsize in (4, 8) and rows * dtype.itemsize >= STREAM_BYTES
    return _entry(index_dtype, dtype, True, narrow, stream)


class _Plan(NamedTuple):
    """A CPU launch's buffer counts, its rows, ParallelFor's grain and work, the kernel's parameters
    and its entries."""

    index_count: int
    in_count: int
    out_count: int
    rows: int
    grain: int
    work: int
    params: np.ndarray | None
    entry: _Entry
    # Rows shorter than _UNIT_ROW_BYTES move as raw bytes in the widest unsigned unit (8, 4 or 2
    # bytes) dividing a row, when it is wider than the element and both buffers are aligned to it:
    # unit_params is then params with inner counted in units. None where the element is already
    # the widest unit, or the row is long.
    unit: np.dtype | None = None
    unit_params: np.ndarray | None = None
    unit_entry: _Entry | None = None


def _plan(dtype: np.dtype, index_dtype: np.dtype, sizes: GatherSizes, wrap: int, check: int) -> _Plan | None:
    """The launch's plan, or None for an empty out that checks no index (nothing to run)."""
    if sizes.gathered_count == 0 and not check:
        return None
    counts = (sizes.index_count, sizes.params_count, sizes.gathered_count)
    # No rows when they are empty: rows * inner (out's count) then bounds every size argument.
    rows = sizes.batch * sizes.outer * sizes.num_indices if sizes.inner else 0
    work = sizes.gathered_count + sizes.index_count
    parallel = work >= PARALLEL_THRESHOLD
    itemsize = dtype.itemsize
    if sizes.inner == 1:
        slab_bytes = sizes.gather * itemsize
        dense = _LINE_BYTES * sizes.num_indices >= slab_bytes
        ahead = int(sizes.params_count * itemsize >= _PREFETCH_BYTES and slab_bytes <= _SLAB_PREFETCH_BYTES and dense)
    else:
        ahead = _AHEAD if sizes.params_count * itemsize >= _PREFETCH_BYTES else 0
    rows_per_chunk = max(1, -(-rows // _CHUNKS), TASK_BYTES // max(sizes.inner * itemsize, 1)) if parallel else max(rows, 1)
    if sizes.num_indices > _POSITIONS:
        # An element gather's segment (rows of one slab in one chunk) fits its positions' buffer.
        rows_per_chunk = min(rows_per_chunk, _POSITIONS)
    args = (
        sizes.index_count,
        rows,
        sizes.num_indices,
        sizes.outer,
        sizes.gather,
        sizes.inner,
        sizes.lo,
        sizes.hi,
        wrap,
        check,
        ahead,
        index_range(sizes, bool(wrap))[0],
    )
    row_bytes = sizes.inner * itemsize
    width = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    entry = _element_entry(index_dtype, dtype, sizes, rows) if sizes.inner == 1 else _row_entry(index_dtype, dtype)
    counts += (rows, rows_per_chunk, work)
    if sizes.inner == 1 or width <= itemsize or row_bytes >= _UNIT_ROW_BYTES:
        return _Plan(*counts, _params(args), entry)
    unit = np.dtype(f"uint{8 * width}")
    unit_args = args[:_INNER] + (row_bytes // width,) + args[_INNER + 1 :]
    unit_entry = _element_entry(index_dtype, unit, sizes, rows) if row_bytes == width else _row_entry(index_dtype, unit)
    return _Plan(*counts, _params(args), entry, unit, _params(unit_args), unit_entry)


def _params(args: tuple) -> np.ndarray | None:
    """args as the kernel's parameters, or None when one exceeds int64: a count (of indices or of
    out) no buffer holds, so the launch's buffer checks refuse it before it would run."""
    return np.array(args, np.int64) if max(args) <= INT64_MAX else None


def _run(plan: _Plan, indices, in_, out) -> bool:
    """Run plan on 1-d C-contiguous buffers of its dtypes, or nothing where the index pass refuses
    it (False); rows move in the plan's raw unit when both buffers are aligned to it."""
    unit = plan.unit
    if unit is not None and in_.ctypes.data % unit.itemsize == 0 and out.ctypes.data % unit.itemsize == 0:
        in_ = in_[: plan.in_count].view(unit)
        out = out[: plan.out_count].view(unit)
        params, entry = plan.unit_params, plan.unit_entry
    else:
        params, entry = plan.params, plan.entry
    index_pass, in_range_span, span = entry.get()
    mode = index_pass(indices, params)
    if mode == _IN_RANGE:
        span = in_range_span
    elif mode == _REFUSED:
        return False
    span.run((indices, in_, out, params, mode), plan.rows, plan.work, plan.grain)
    return True


class CpuGatherKernels(IndexedKernels):
    def plan(self, dtype: DataType, indices_dtype: DataType, sizes: GatherSizes, wrap: bool, check: bool) -> _Plan | None:
        return _plan(dtype.storage_dtype, indices_dtype.dtype, sizes, int(wrap), int(check))

    def run(self, primitive, plan, stream, indices, in_, out) -> int:
        sizes, plan = plan
        if plan is None:
            return -1
        # indices, in_ and out are checked flat storage (the primitive's declared launch).
        buffers = indices, in_, out
        return -1 if _run(plan, *buffers) else first_bad_index(buffers[0], sizes, primitive.wrap)

    def all_kernels(self):
        yield _INDEX_PASS
        for dtype in sorted({dtype.storage_dtype for dtype in DataType}, key=str):
            for index_dtype in INDEX_TYPES:
                for elements in (True, False):
                    yield _span(index_dtype.dtype, dtype, elements)
                yield _in_range_span(index_dtype.dtype, dtype, False)
                if dtype.itemsize in (4, 8):
                    yield _in_range_span(index_dtype.dtype, dtype, True)


CPU_GATHER_KERNELS = CpuGatherKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, GatherFactory, GatherFactoryImpl(DeviceType.kCPU, CPU_GATHER_KERNELS))
