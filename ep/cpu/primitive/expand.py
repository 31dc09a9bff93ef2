"""Expand on the CPU: one prange loop per (unit width, number of dims), moving raw units."""
from __future__ import annotations

import functools
import math

from numba import prange

from ep.common.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.device import DeviceType
from ep.common.jit import scalar_function
from ep.common.nd_index_offset_helper import contiguous_strides, map_offset
from ep.common.stream import check_stream
from ep.common.strided_copy import CopyPlan, prepare_expand, prepare_strided
from ep.cpu.kernel import CpuKernel
from ep.include.primitive.expand import Expand, ExpandFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The widest unit: slices of uint64 already copy at memcpy speed.
WIDEST_UNIT = 8
# Units per task: a long row (a broadcast row, a big fill) is split so that every core gets work,
# and short runs are grouped so that no task is tiny.
CHUNK = 1 << 14
# Below this many units a plain loop beats slicing, whose setup costs more than the moves.
SHORT_RUN = 16


@scalar_function
def _move(src, s, step, dst, d, n):
    # Slice assignment for long runs: Numba's element loop carries negative-index checks that keep
    # LLVM from vectorizing it, while a slice copy or fill runs at memcpy/memset speed.
    if n < SHORT_RUN:
        for j in range(n):
            dst[d + j] = src[s + j * step]
    elif step == 1:
        dst[d : d + n] = src[s : s + n]
    elif step == 0:
        dst[d : d + n] = src[s]
    else:
        dst[d : d + n] = src[s : s + (n - 1) * step + 1 : step]


def _strided_copy(src, dst, num_tasks, pieces, row_units, run, inner_stride, run_stride, row_strides, src_strides):
    # A row is the last two plan dims: consecutive runs run_stride apart in src. Each task copies
    # CHUNK units of one row, dividing only to find where it starts.
    for task in prange(num_tasks):
        row = task // pieces
        begin = (task - row * pieces) * CHUNK
        end = min(begin + CHUNK, row_units)
        base = map_offset(row, row_strides, src_strides)
        k = begin // run
        j = begin - k * run
        u = begin
        while u < end:
            n = min(run - j, end - u)
            _move(src, base + k * run_stride + j * inner_stride, inner_stride, dst, row * row_units + u, n)
            u += n
            k += 1
            j = 0


@functools.cache
def _kernel(unit: int, ndim: int) -> CpuKernel:
    return CpuKernel(_strided_copy, f"expand_u{8 * unit}_{ndim}d")


def launch_copy(plan: CopyPlan, src, dst) -> None:
    """Run plan's copy from src units to dst units."""
    dims, strides = plan.dims, plan.src_strides
    runs_per_row, run_stride = (dims[-2], strides[-2]) if len(dims) > 1 else (1, 0)
    row_dims, row_src_strides = dims[:-2] or (1,), strides[:-2] or (0,)
    row_units = runs_per_row * plan.run
    pieces = -(-row_units // CHUNK)
    _kernel(plan.unit, len(row_dims))(
        plan.count,
        src,
        dst,
        math.prod(row_dims) * pieces,
        pieces,
        row_units,
        plan.run,
        plan.inner_stride,
        run_stride,
        contiguous_strides(row_dims),
        row_src_strides,
    )


class ExpandImpl(Expand):
    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        check_stream(stream, DeviceType.kCPU)
        prepared = prepare_expand(DeviceType.kCPU, self.dtype, src_dims, src, dst_dims, dst, WIDEST_UNIT)
        if prepared is not None:
            launch_copy(*prepared)

    def LaunchStrided(self, stream, src, dst) -> None:
        check_stream(stream, DeviceType.kCPU)
        prepared = prepare_strided(DeviceType.kCPU, self.dtype, src, dst, WIDEST_UNIT)
        if prepared is not None:
            launch_copy(*prepared)


@functools.cache
def _primitive(dtype: DataType) -> ExpandImpl:
    return ExpandImpl(dtype)


class ExpandFactoryImpl(ExpandFactory):
    def New(self, dtype) -> Expand | None:
        return _primitive(as_data_type(dtype))

    def Combinations(self):
        for dtype in ALL_TYPES:
            yield None, (dtype,)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ExpandFactory, ExpandFactoryImpl)
