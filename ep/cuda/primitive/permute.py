"""Permute's CUDA kernels, OneFlow's design: dims merged (ep/common/primitive/permute.py), a
transpose of rows and cols >= TILE through TILE x (TILE + 1) shared-memory tiles (the extra column
keeps a tile's column reads off a single bank), 32-bit offsets with fast divmod; any other
permute is CopyNd's strided copy (16-byte units where the last dim stays and the rows allow).
"""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import divisor
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, split_args, split_offsets
from ep.common.primitive.byte_units import as_units, unit_dtype
from ep.common.primitive.permute import PermuteFactoryImpl, PermuteKernels, TransposePlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import THREADS_PER_BLOCK, CudaKernel
from ep.cuda.primitive.copy_nd import KERNELS as COPY_KERNELS
from ep.include.primitive.permute import PermuteFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# A tile's side in elements: a warp reads a tile row and writes a tile column.
TILE = 32
_ELEMENTS = TILE * TILE
# A tile's row length in shared memory (constants a kernel reads as literals).
_TILE_ROW = TILE + 1


@template("UNIT")
def _transpose(
    src, dst, num_tiles, tiles_c, tiles_c_m, tiles_c_s, tiles_r, tiles_r_m, tiles_r_s, rows, cols, src_row_stride, dst_col_stride,
    ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer,
):
    # One block per tile at a time: tile = (outer index, tile row, tile column). Its threads read
    # the tile's rows from src (consecutive threads, consecutive cols), then write its columns to
    # dst (consecutive threads, consecutive rows): both sides coalesced. Elements e of a pass
    # stride by the block's size, so any block size runs it (the simulator's 8 threads too).
    tile = cuda.shared.array((TILE, _TILE_ROW), bound.UNIT)
    first = np.uint32(cuda.threadIdx.x)
    step = np.uint32(cuda.blockDim.x)
    t = np.uint32(cuda.blockIdx.x)
    while t < num_tiles:
        rest, tc = fast_divmod.fast_divmod(t, tiles_c, tiles_c_m, tiles_c_s)
        o, tr = fast_divmod.fast_divmod(rest, tiles_r, tiles_r_m, tiles_r_s)
        s, d = split_offsets(o, ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer, fast_divmod.fast_divmod)
        # In uint32 again: Numba widens 32-bit products to 64 bits.
        s, d = np.uint32(s), np.uint32(d)
        r0 = np.uint32(tr * TILE)
        c0 = np.uint32(tc * TILE)
        # Two passes, reading then writing: a warp takes tile row k, its lanes consecutive
        # elements of a src row, then of a dst row (a src column).
        for writing in range(2):
            e = first
            while e < _ELEMENTS:
                k = np.uint32(e >> 5)
                lane = np.uint32(e & (TILE - 1))
                r = np.uint32(r0 + (lane if writing else k))
                c = np.uint32(c0 + (k if writing else lane))
                if r < rows and c < cols:
                    if writing:
                        dst[np.uint32(d + c * dst_col_stride + r)] = tile[lane, k]
                    else:
                        tile[k, lane] = src[np.uint32(s + r * src_row_stride + c)]
                e = np.uint32(e + step)
            cuda.syncthreads()
        t = np.uint32(t + cuda.gridDim.x)


class CudaPermuteKernels(PermuteKernels):
    copy = COPY_KERNELS

    @function_cache("kernels")
    def kernel(self, unit: int) -> CudaKernel:
        """The tiled transpose of unit-byte elements (32-bit offsets)."""
        units = numba.from_dtype(unit_dtype(unit))[::1]
        size = numba.uint32
        dims = numba.types.UniTuple(size, SPLIT_DIMS)
        argtypes = (units, units, *([size] * 11), size, *([dims] * 5), size, size)
        return CudaKernel(_transpose, f"permute_tiles_u{8 * unit}", argtypes, UNIT=numba.from_dtype(unit_dtype(unit)))

    def tiles(self, plan: TransposePlan) -> bool:
        # OneFlow's rule: tiles pay where both sides fill a warp; beyond 32-bit offsets the copy's
        # 64-bit kernel runs.
        return plan.rows >= TILE and plan.cols >= TILE and not fast_divmod.needs_wide(plan.count)

    def prepare(self, plan: TransposePlan, data_type: DataType) -> tuple:
        """(unit, kernel, work, elements, arguments after the buffers)."""
        tiles_r, tiles_c = -(-plan.rows // TILE), -(-plan.cols // TILE)
        num_tiles = int(np.prod(plan.outer_dims, dtype=np.int64)) * tiles_r * tiles_c
        split = split_args(plan.outer_dims, plan.outer_src_strides, plan.outer_dst_strides, False)
        args = (
            num_tiles, *divisor(tiles_c, False), *divisor(tiles_r, False),
            plan.rows, plan.cols, plan.src_row_stride, plan.dst_col_stride, *split,
        )
        unit = data_type.itemsize
        return unit, self.kernel(unit), num_tiles * THREADS_PER_BLOCK, plan.count, args

    def transpose(self, stream, prepared, src, dst) -> None:
        unit, kernel, work, count, args = prepared
        kernel.launch(stream, work, as_units(src, count, unit), as_units(dst, count, unit), *args)

    def all_kernels(self) -> Iterator[object]:
        yield from self.copy.all_kernels()
        for unit in (1, 2, 4, 8):
            yield self.kernel(unit)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, PermuteFactory, PermuteFactoryImpl(DeviceType.kCUDA, CudaPermuteKernels()))
