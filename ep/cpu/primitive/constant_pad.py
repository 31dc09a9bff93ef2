"""ConstantPad's CPU kernel: a span per unit size over dst's rows, run by ParallelFor (and one with
streaming stores for 4- and 8-byte units, which only large outputs of long rows compile).

A row of dst (its last merged dim) is [pad | a run of src | pad], or all pad when one of its outer
indices lies outside src; a span finds where its first row starts with one division per dim and
steps the outer index like an odometer after that.
"""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np

from ep.common.jit import bound, scalar_function, template
from ep.common.math.intrinsics import VECTOR_BYTES, stack_array, stream_copy_vector, stream_fence, stream_fill_vector, stream_store
from ep.common.primitive.byte_units import unit_dtype
from ep.common.primitive.constant_pad import ConstantPadFactoryImpl, ConstantPadKernels, PadPlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.cpu.parallel_for import PARALLEL_THRESHOLD, TASK_BYTES, ParallelFor, input_array, output_array
from ep.cpu.primitive.copy_nd import STREAM_BYTES
from ep.include.primitive.constant_pad import ConstantPadFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The span's int64 parameters: these scalars, then per outer dim (outermost first) its dst size,
# src size, padding before and src stride.
_ROW, _SRC_ROW, _BEFORE, _STREAM, _NUM_OUTER, _OUTER = range(6)
# Slots for an outer index: a merged pad has at most MAX_NUM_DIMS dims (a literal for stack_array).
_MAX_OUTER = MAX_NUM_DIMS
# Rows at least this long are streamed (in a large output): short rows put a row's unaligned ends,
# stored one by one, on most cache lines, which measured several times slower than ordinary stores.
STREAM_ROW_BYTES = 4096


@scalar_function
def _fill(out, start, stop, value):
    # Unsigned positions: Numba skips its wraparound checks and LLVM vectorizes the loop.
    for j in range(np.uint64(start), np.uint64(stop)):
        out[j] = value


@scalar_function
def _stream_run(dst, d, n, src, s, copy, value):
    # dst[d : d + n] = src[s : s + n] (copy) or value, all with streaming stores: whole vectors
    # from dst's first vector boundary on, the elements around them one by one (an ordinary store
    # to a line being streamed would flush it half written).
    unit = dst.itemsize
    per_vector = VECTOR_BYTES // unit
    lo = ((-(dst.ctypes.data + d * unit)) & (VECTOR_BYTES - 1)) // unit
    lo = lo if lo < n else n
    hi = lo + (n - lo) // per_vector * per_vector
    if copy:
        for j in range(lo, hi, per_vector):
            stream_copy_vector(dst, d + j, src, s + j)
    else:
        for j in range(lo, hi, per_vector):
            stream_fill_vector(dst, d + j, value)
    for i in range(lo + n - hi):
        e = i if i < lo else i - lo + hi
        stream_store(dst, d + e, src[s + e] if copy else value)


@scalar_function
def _write_row(dst, d, row, lo, hi, src, s, before, value, stream):
    # Row dst[d : d + row] with ordinary stores: [pad | src[s + lo - before : s + hi - before] | pad]
    # over [0, lo), [lo, hi) and [hi, row), or all pad when s < 0 (stream: unused, _stream_row's).
    # By offsets, not slices (ParallelFor's rule).
    if s < 0:
        _fill(dst, d, d + row, value)
    else:
        _fill(dst, d, d + lo, value)
        s_, d_ = np.uint64(s + lo - before), np.uint64(d + lo)
        for j in range(np.uint64(hi - lo)):
            dst[d_ + j] = src[s_ + j]
        _fill(dst, d + hi, d + row, value)


@scalar_function
def _stream_row(dst, d, row, lo, hi, src, s, before, value, stream):
    # _write_row's row, with streaming stores when stream.
    if stream:
        if s < 0:
            _stream_run(dst, d, row, src, 0, False, value)
        else:
            _stream_run(dst, d, lo, src, 0, False, value)
            _stream_run(dst, d + lo, hi - lo, src, s + lo - before, True, value)
            _stream_run(dst, d + hi, row - hi, src, 0, False, value)
    else:
        _write_row(dst, d, row, lo, hi, src, s, before, value, stream)


@template("write_row")
def _pad_rows(start, stop, args):
    src, dst, params, value = args
    row = params[_ROW]
    src_row = params[_SRC_ROW]
    before = params[_BEFORE]
    num_outer = params[_NUM_OUTER]
    # The host asks for streaming stores for large outputs of 4- or 8-byte elements; they need
    # dst aligned to its element, which an unaligned view on the CPU may not be.
    stream = params[_STREAM] != 0 and dst.ctypes.data % dst.itemsize == 0
    # The run of src in a row: dst [lo, hi) from src [lo - before, hi - before).
    lo = before if before > 0 else 0
    lo = lo if lo < row else row
    hi = before + src_row
    hi = hi if hi < row else row
    hi = hi if hi > lo else lo
    # The outer index of row `start`, innermost last, in the frame.
    index = stack_array(_MAX_OUTER, np.int64)
    q = start
    for k in range(num_outer - 1, -1, -1):
        size = params[_OUTER + 4 * k]
        p = q // size
        index[k] = q - p * size
        q = p
    for r in range(start, stop):
        # Where the row reads src, or -1 when an outer index lies outside src.
        s = 0
        for k in range(num_outer):
            i = index[k] - params[_OUTER + 4 * k + 2]
            if i < 0 or i >= params[_OUTER + 4 * k + 1]:
                s = -1
                break
            s += i * params[_OUTER + 4 * k + 3]
        bound.write_row(dst, r * row, row, lo, hi, src, s, before, value, stream)
        # The next row's outer index.
        k = num_outer - 1
        while k >= 0:
            index[k] += 1
            if index[k] < params[_OUTER + 4 * k]:
                break
            index[k] = 0
            k -= 1
    if stream:
        stream_fence()


@function_cache("kernels")
def _span(unit: int, stream: bool) -> ParallelFor:
    """The pad of unit-byte elements, with streaming stores (where the host asks for them) or
    ordinary ones only: the streaming runs are most of the span's compile time, so a pad that
    never streams does not compile them."""
    dtype = unit_dtype(unit)
    arg_types = (input_array(dtype), output_array(dtype), input_array(np.dtype(np.int64)), numba.from_dtype(dtype))
    name = f"constant_pad_stream_u{8 * unit}" if stream else f"constant_pad_u{8 * unit}"
    return ParallelFor(_pad_rows, name, arg_types, write_row=_stream_row if stream else _write_row)


class CpuConstantPadKernels(ConstantPadKernels):
    def prepare(self, plan: PadPlan, unit: int) -> tuple:
        """(the span, its parameters, rows, elements, grain in rows)."""
        outer = []
        for k in range(len(plan.dst_dims) - 1):
            outer += [plan.dst_dims[k], plan.src_dims[k], plan.before[k], plan.src_strides[k]]
        row = plan.dst_dims[-1]
        stream = unit >= 4 and plan.count * unit >= STREAM_BYTES and row * unit >= STREAM_ROW_BYTES
        params = np.array([row, plan.src_dims[-1], plan.before[-1], int(stream), len(plan.dst_dims) - 1, *outer], np.int64)
        rows = plan.count // row
        grain = max(TASK_BYTES // (unit * row), 1) if plan.count >= PARALLEL_THRESHOLD else 0
        return _span(unit, stream), params, rows, plan.count, grain

    def pad(self, stream, prepared, src, dst, value) -> None:
        span, params, rows, count, grain = prepared
        dtype = value.dtype
        span.run((src.view(dtype), dst.view(dtype), params, value), rows, count, grain)

    def all_kernels(self) -> Iterator[object]:
        for unit in (1, 2, 4, 8):
            yield _span(unit, False)
            if unit >= 4:
                yield _span(unit, True)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU, ConstantPadFactory, ConstantPadFactoryImpl(DeviceType.kCPU, CpuConstantPadKernels())
)
