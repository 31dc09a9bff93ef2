"""Expand on CUDA: one grid-stride kernel per (unit width, number of dims), moving raw units."""
from __future__ import annotations

import functools

import numba
from numba import config, cuda

from ep.common.math.intrinsics import move16
from ep.common.primitive.byte_units import UNITS, unit_dtype
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.math.nd_index_offset_helper import map_offset
from ep.common.runtime.stream import check_stream
from ep.common.primitive.strided_copy import MAX_NUM_DIMS, CopyPlan, prepare_expand, prepare_strided
from ep.cuda.kernel import THREADS_PER_BLOCK, CudaKernel
from ep.include.primitive.expand import Expand, ExpandFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# 16-byte units are one 128-bit load and store (byte_units.move16).
WIDEST_UNIT = 16
# Runs of at least this many units are copied a block at a time: the block finds where its piece
# of a run starts once, and its threads stride through the piece without dividing.
LONG_RUN = THREADS_PER_BLOCK
PIECE = 16 * THREADS_PER_BLOCK


def _move16_simulated(dst, dst_word, src, src_word):
    # The simulator runs kernels as Python, where an LLVM intrinsic cannot run.
    dst[dst_word] = src[src_word]
    dst[dst_word + 1] = src[src_word + 1]


def _strided_copy(src, dst, count, run, inner_stride, run_strides, src_strides, num_tasks, pieces):
    if num_tasks > 0:
        # Long runs: task = (run, piece of at most PIECE units), one block per task.
        task = cuda.blockIdx.x
        while task < num_tasks:
            r = task // pieces
            begin = (task - r * pieces) * PIECE
            end = min(begin + PIECE, run)
            s = map_offset(r, run_strides, src_strides)
            d = r * run
            j = begin + cuda.threadIdx.x
            while j < end:
                if WIDE16:  # noqa: F821 (WIDE16 and move16 are bound by specialize)
                    move16(dst, (d + j) * 2, src, (s + j * inner_stride) * 2)
                else:
                    dst[d + j] = src[s + j * inner_stride]
                j += cuda.blockDim.x
            task += cuda.gridDim.x
    else:
        # Short runs: one thread per dst unit.
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < count:
            r = i // run
            s = map_offset(r, run_strides, src_strides) + (i - r * run) * inner_stride
            if WIDE16:  # noqa: F821
                move16(dst, i * 2, src, s * 2)
            else:
                dst[i] = src[s]
            i += step


@functools.cache
def _kernel(unit: int, ndim: int) -> CudaKernel:
    units = numba.from_dtype(unit_dtype(unit))[::1]
    strides = numba.types.UniTuple(numba.int64, ndim)
    argtypes = (units, units, numba.int64, numba.int64, numba.int64, strides, strides, numba.int64, numba.int64)
    return CudaKernel(
        _strided_copy,
        f"expand_u{8 * unit}_{ndim}d",
        argtypes,
        WIDE16=unit == 16,
        move16=_move16_simulated if config.ENABLE_CUDASIM else move16,
    )


def launch_copy(stream, plan: CopyPlan, src, dst) -> None:
    """Run plan's copy from src units to dst units on stream."""
    if plan.run >= LONG_RUN:
        pieces = -(-plan.run // PIECE)
        num_tasks = plan.count // plan.run * pieces
        work = num_tasks * THREADS_PER_BLOCK
    else:
        pieces, num_tasks, work = 0, 0, plan.count
    strides = (plan.run_strides, plan.outer_src_strides)
    _kernel(plan.unit, plan.ndim).launch(stream, work, src, dst, plan.count, plan.run, plan.inner_stride, *strides, num_tasks, pieces)


class ExpandImpl(Expand):
    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        check_stream(stream, DeviceType.kCUDA)
        prepared = prepare_expand(DeviceType.kCUDA, self.dtype, src_dims, src, dst_dims, dst, WIDEST_UNIT)
        if prepared is not None:
            launch_copy(stream, *prepared)

    def LaunchStrided(self, stream, src, dst) -> None:
        check_stream(stream, DeviceType.kCUDA)
        prepared = prepare_strided(DeviceType.kCUDA, self.dtype, src, dst, WIDEST_UNIT)
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
