"""OneHot's CPU kernel: one span per (index dtype, out element bytes), run by ParallelFor over rows.

A span writes its rows a block at a time: the block's off_value fill (a loop LLVM vectorizes),
then one on_value per row, while the block is still in cache. The bounds check runs first, on the
host (a min and a max of the indices, then the first bad position), so a refused launch writes
nothing.
"""
from __future__ import annotations

from typing import Iterator, NamedTuple

import numba
import numpy as np

from ep.common.jit import template
from ep.common.primitive.fill import UNIT_DTYPES
from ep.common.primitive.gather import GatherSizes, first_bad_index, gather_row
from ep.common.primitive.one_hot import OUT_BYTES, OneHotFactoryImpl, OneHotKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.one_hot import OneHotFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Elements of out a block holds (64 KiB of 8-byte elements): filled, then its ones set, in cache.
BLOCK_ELEMENTS = 1 << 13


@template()
def _one_hot(start, stop, args):
    indices, out, on, off, depth, lo, hi, block = args
    r = start
    while r < stop:
        end = min(stop, r + block)
        # A slice indexed by the range variable alone: LLVM vectorizes the fill.
        rows = out[r * depth : end * depth]
        for i in range((end - r) * depth):
            rows[i] = off
        for k in range(r, end):
            c = gather_row(np.int64(indices[k]), lo, hi, depth, False)
            if c >= 0:
                out[k * depth + c] = on
        r = end


class _Plan(NamedTuple):
    """A launch's span and the rows each of its blocks holds."""

    span: ParallelFor
    block: int


class CpuOneHotKernels(OneHotKernels):
    @function_cache("kernels")
    def kernel(self, indices_dtype: DataType, out_bytes: int) -> ParallelFor:
        unit = UNIT_DTYPES[out_bytes]
        value = numba.from_dtype(unit)
        types = (input_array(indices_dtype.dtype), output_array(unit), value, value, *([numba.int64] * 4))
        return ParallelFor(_one_hot, f"one_hot_{indices_dtype.value}_u{8 * out_bytes}", types)

    def plan(self, indices_dtype: DataType, out_bytes: int, sizes: GatherSizes, count: int) -> _Plan:
        return _Plan(self.kernel(indices_dtype, out_bytes), max(1, BLOCK_ELEMENTS // max(sizes.gather, 1)))

    def run(self, primitive, plan, stream, indices, out, on, off) -> int:
        sizes, count, (span, block) = plan
        rows = sizes.index_count
        if primitive.check and rows:
            values = indices[:rows]
            if values.min() < sizes.lo or values.max() > sizes.hi:
                return first_bad_index(indices, sizes, False)
        span.run((indices, out, on, off, sizes.gather, sizes.lo, sizes.hi, block), rows, count)
        return -1

    def all_kernels(self) -> Iterator[ParallelFor]:
        for indices_dtype in INDEX_TYPES:
            for out_bytes in OUT_BYTES:
                yield self.kernel(indices_dtype, out_bytes)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, OneHotFactory, OneHotFactoryImpl(DeviceType.kCPU, CpuOneHotKernels()))
