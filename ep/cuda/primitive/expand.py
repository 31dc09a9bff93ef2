"""Expand on CUDA: one grid-stride kernel per (unit width, number of dims), moving raw units."""
from __future__ import annotations

import functools

import numba
from numba import cuda

from ep.common.byte_units import unit_dtype
from ep.common.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.device import DeviceType
from ep.common.nd_index_offset_helper import map_offset
from ep.common.stream import check_stream
from ep.common.strided_copy import MAX_NUM_DIMS, WIDEST_UNIT, CopyPlan, prepare_expand, prepare_strided
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.expand import Expand, ExpandFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

UNITS = tuple(u for u in (1, 2, 4, 8) if u <= WIDEST_UNIT)


def _strided_copy(src, dst, count, run, inner_stride, run_strides, src_strides):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < count:
        r = i // run
        dst[i] = src[map_offset(r, run_strides, src_strides) + (i - r * run) * inner_stride]
        i += step


@functools.cache
def _kernel(unit: int, ndim: int) -> CudaKernel:
    units = numba.from_dtype(unit_dtype(unit))[::1]
    strides = numba.types.UniTuple(numba.int64, ndim)
    argtypes = (units, units, numba.int64, numba.int64, numba.int64, strides, strides)
    return CudaKernel(_strided_copy, f"expand_u{8 * unit}_{ndim}d", argtypes)


def launch_copy(stream, plan: CopyPlan, src, dst) -> None:
    """Run plan's copy from src units to dst units on stream."""
    _kernel(plan.unit, plan.ndim).launch(
        stream, plan.count, src, dst, plan.count, plan.run, plan.inner_stride, plan.run_strides, plan.outer_src_strides
    )


class ExpandImpl(Expand):
    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        check_stream(stream, DeviceType.kCUDA)
        prepared = prepare_expand(DeviceType.kCUDA, self.dtype, src_dims, src, dst_dims, dst)
        if prepared is not None:
            launch_copy(stream, *prepared)

    def LaunchStrided(self, stream, src, dst) -> None:
        check_stream(stream, DeviceType.kCUDA)
        prepared = prepare_strided(DeviceType.kCUDA, self.dtype, src, dst)
        if prepared is not None:
            launch_copy(stream, *prepared)


@functools.cache
def _primitive(dtype: DataType) -> ExpandImpl:
    return ExpandImpl(dtype)


class ExpandFactoryImpl(ExpandFactory):
    def New(self, dtype) -> Expand | None:
        return _primitive(as_data_type(dtype))

    def Combinations(self):
        for dtype in ALL_TYPES:
            yield None, (dtype,)

    def Kernels(self):
        """Every CUDA kernel this factory can launch, for the PTX check."""
        for unit in UNITS:
            for ndim in range(1, MAX_NUM_DIMS + 1):
                yield _kernel(unit, ndim)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, ExpandFactory, ExpandFactoryImpl)
