"""CopyNd's and Expand's CUDA kernel: one grid-stride copy per (unit width, index width), moving raw units.

Every number of dims runs in the same kernel: split_offsets finds where a run starts in src and dst
with one division per dim (unrolled over MAX_NUM_DIMS, the rank a uniform branch). Offsets are
32-bit with fast_divmod's multiply-high when the copy and both buffers' spans fit in 2**31 - 1
units (fast_divmod.needs_wide), else 64-bit with plain division.
"""
from __future__ import annotations

from typing import Iterator

import numba
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import divisor, index_bindings, size_type
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, split_args, split_offsets
from ep.common.primitive.byte_units import UNITS, as_units, unit_dtype
from ep.common.primitive.copy_nd import CopyNdFactoryImpl
from ep.common.primitive.strided_copy import CopyArgs, CopyLaunch, CopyPlan, StridedCopyKernels, span
from ep.common.runtime.buffer import kept_for
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import THREADS_PER_BLOCK, CudaKernel, keep_launch
from ep.cuda.pack import move16_function
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# 16-byte units are one 128-bit load and store (pack.move16_function).
WIDEST_UNIT = 16
# Runs of at least this many units are copied a block at a time: the block finds where its piece
# of a run starts once, and its threads stride through the piece without dividing.
LONG_RUN = THREADS_PER_BLOCK
PIECE = 16 * THREADS_PER_BLOCK


@template("INDEX", "DIVMOD", "wide16", "move16")
def _copy(
    src, dst, count, run, run_m, run_s, inner_stride,
    ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer,
    num_tasks, pieces, pieces_m, pieces_s,
):
    if num_tasks > 0:
        # Long runs: task = (run, piece of at most PIECE units), one block per task.
        task = bound.INDEX(cuda.blockIdx.x)
        while task < num_tasks:
            r, piece = bound.DIVMOD(task, pieces, pieces_m, pieces_s)
            begin = bound.INDEX(piece * PIECE)
            end = min(bound.INDEX(begin + PIECE), run)
            s, d = split_offsets(r, ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer, bound.DIVMOD)
            # In INDEX again: Numba widens 32-bit products to 64 bits.
            s, d = bound.INDEX(s), bound.INDEX(d)
            j = bound.INDEX(begin + cuda.threadIdx.x)
            while j < end:
                if bound.wide16:
                    bound.move16(dst, (d + j) * 2, src, (s + j * inner_stride) * 2)
                else:
                    dst[d + j] = src[s + j * inner_stride]
                j = bound.INDEX(j + cuda.blockDim.x)
            task = bound.INDEX(task + cuda.gridDim.x)
    else:
        # Short runs: one thread per unit copied.
        i = bound.INDEX(cuda.grid(1))
        step = bound.INDEX(cuda.gridsize(1))
        while i < count:
            r, j = bound.DIVMOD(i, run, run_m, run_s)
            s, d = split_offsets(r, ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer, bound.DIVMOD)
            s, d = bound.INDEX(s), bound.INDEX(d)
            if bound.wide16:
                bound.move16(dst, (d + j) * 2, src, (s + j * inner_stride) * 2)
            else:
                dst[d + j] = src[s + j * inner_stride]
            i = bound.INDEX(i + step)


class CudaStridedCopyKernels(StridedCopyKernels):
    widest_unit = WIDEST_UNIT
    aligned_units = True

    @function_cache("kernels")
    def kernel(self, unit: int, wide: bool) -> CudaKernel:
        """The copy of unit-byte units with 64-bit (wide) or 32-bit offsets, for every number of dims."""
        units = numba.from_dtype(unit_dtype(unit))[::1]
        size = size_type(wide)
        dims = numba.types.UniTuple(size, SPLIT_DIMS)
        argtypes = (units, units, *([size] * 5), size, *([dims] * 5), size, size, *([size] * 4))
        # The 64-bit variant's divisions need more than 32 registers: under the full-occupancy cap
        # it would spill. It runs only for buffers beyond 2**31 - 1 units.
        name = f"strided_copy_u{8 * unit}_{'i64' if wide else 'i32'}"
        return CudaKernel(
            _copy, name, argtypes, full_occupancy=not wide, wide16=unit == 16, move16=move16_function(), **index_bindings(wide)
        )

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
            pieces, num_tasks, work = 1, 0, plan.count
        wide = fast_divmod.needs_wide(plan.count, span(plan.dims, plan.src_strides), span(plan.dims, plan.dst_strides))
        split = split_args(plan.dims[:-1], plan.src_strides[:-1], plan.dst_strides[:-1], wide)
        args = (plan.count, *divisor(plan.run, wide), plan.inner_stride, *split, num_tasks, *divisor(pieces, wide))
        return plan.unit, self.kernel(plan.unit, wide), work, args

    def run(self, stream, args: CopyArgs, src, dst, name: str) -> None:
        # A repeated copy with the same buffers finds its configured kernel and arguments kept on
        # the stream; the entry holds args, so that no other plan takes its id while it lives.
        key = (id(args), id(src), id(dst))
        launch = kept_for(stream.launches, key, src, dst)
        if launch is None:
            keep_launch(stream, key, (*super().run(stream, args, src, dst, name), args), src, dst)
        else:
            launch[0](*launch[1])

    def launch(self, stream, launch: CopyLaunch, src, dst) -> tuple:
        """Launch, and return (the configured kernel, its arguments) for run() to keep."""
        unit, kernel, work, args = launch.prepared
        configured = kernel.configured(stream, work)
        arguments = (as_units(src, launch.src_span, unit), as_units(dst, launch.dst_span, unit), *args)
        configured(*arguments)
        return configured, arguments

    def all_kernels(self) -> Iterator[object]:
        for unit in UNITS:
            for wide in (False, True):
                yield self.kernel(unit, wide)


KERNELS = CudaStridedCopyKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, CopyNdFactory, CopyNdFactoryImpl(DeviceType.kCUDA, KERNELS))
