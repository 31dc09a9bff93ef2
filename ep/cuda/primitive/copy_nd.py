"""CopyNd's and Expand's CUDA kernel: one grid-stride copy per (unit width, number of dims), moving raw units."""
from __future__ import annotations

import functools
from typing import Iterator

import numba
from numba import config, cuda

from ep.common.jit import bound, template
from ep.common.math.intrinsics import move16
from ep.common.primitive.byte_units import UNITS, as_units, unit_dtype
from ep.common.primitive.copy_nd import CopyNdFactoryImpl
from ep.common.primitive.strided_copy import CopyLaunch, CopyPlan, StridedCopyKernels, run_offsets
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.cuda.kernel import THREADS_PER_BLOCK, CudaKernel
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# 16-byte units are one 128-bit load and store (intrinsics.move16).
WIDEST_UNIT = 16
# Runs of at least this many units are copied a block at a time: the block finds where its piece
# of a run starts once, and its threads stride through the piece without dividing.
LONG_RUN = THREADS_PER_BLOCK
PIECE = 16 * THREADS_PER_BLOCK


def _move16_simulated(dst, dst_word, src, src_word):
    # The simulator runs kernels as Python, where an LLVM intrinsic cannot run.
    dst[dst_word] = src[src_word]
    dst[dst_word + 1] = src[src_word + 1]


@template("wide16", "move16")
def _copy(src, dst, count, run, inner_stride, run_strides, src_strides, dst_strides, num_tasks, pieces):
    if num_tasks > 0:
        # Long runs: task = (run, piece of at most PIECE units), one block per task.
        task = cuda.blockIdx.x
        while task < num_tasks:
            r = task // pieces
            begin = (task - r * pieces) * PIECE
            end = min(begin + PIECE, run)
            s, d = run_offsets(r, run_strides, src_strides, dst_strides)
            j = begin + cuda.threadIdx.x
            while j < end:
                if bound.wide16:
                    bound.move16(dst, (d + j) * 2, src, (s + j * inner_stride) * 2)
                else:
                    dst[d + j] = src[s + j * inner_stride]
                j += cuda.blockDim.x
            task += cuda.gridDim.x
    else:
        # Short runs: one thread per unit copied.
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < count:
            r = i // run
            j = i - r * run
            s, d = run_offsets(r, run_strides, src_strides, dst_strides)
            if bound.wide16:
                bound.move16(dst, (d + j) * 2, src, (s + j * inner_stride) * 2)
            else:
                dst[d + j] = src[s + j * inner_stride]
            i += step


class CudaStridedCopyKernels(StridedCopyKernels):
    widest_unit = WIDEST_UNIT
    aligned_units = True

    @functools.cache
    def kernel(self, unit: int, ndim: int) -> CudaKernel:
        units = numba.from_dtype(unit_dtype(unit))[::1]
        strides = numba.types.UniTuple(numba.int64, ndim)
        argtypes = (units, units, numba.int64, numba.int64, numba.int64, strides, strides, strides, numba.int64, numba.int64)
        move = _move16_simulated if config.ENABLE_CUDASIM else move16
        # run_offsets' 64-bit divisions need more than 32 registers from 2 dims on: those kernels
        # would spill under the full-occupancy cap (the ptxas check found it).
        name = f"strided_copy_u{8 * unit}_{ndim}d"
        return CudaKernel(_copy, name, argtypes, full_occupancy=ndim == 1, wide16=unit == 16, move16=move)

    def moves_elements(self, count: int) -> bool:
        # Every launch moves units: one kernel per unit width serves every dtype.
        return False

    def prepare(self, plan: CopyPlan, elements: bool) -> tuple:
        """(unit, kernel, work, arguments after the buffers)."""
        if plan.run >= LONG_RUN:
            pieces = -(-plan.run // PIECE)
            num_tasks = plan.count // plan.run * pieces
            work = num_tasks * THREADS_PER_BLOCK
        else:
            pieces, num_tasks, work = 0, 0, plan.count
        strides = (plan.run_strides, plan.outer_src_strides, plan.outer_dst_strides)
        args = (plan.count, plan.run, plan.inner_stride, *strides, num_tasks, pieces)
        return plan.unit, self.kernel(plan.unit, plan.ndim), work, args

    def launch(self, stream, launch: CopyLaunch, src, dst) -> None:
        unit, kernel, work, args = launch.prepared
        kernel.launch(stream, work, as_units(src, launch.src_span, unit), as_units(dst, launch.dst_span, unit), *args)

    def all_kernels(self) -> Iterator[object]:
        for unit in UNITS:
            for ndim in range(1, MAX_NUM_DIMS + 1):
                yield self.kernel(unit, ndim)


KERNELS = CudaStridedCopyKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, CopyNdFactory, CopyNdFactoryImpl(DeviceType.kCUDA, KERNELS))
