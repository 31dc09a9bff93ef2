"""Permute's CPU kernel: a transpose in cache-blocked tiles, one span per element dtype; a permute
whose last dim stays runs as CopyNd's strided copy.

A work item is one tile of TILE x TILE elements of the two transposed dims under one outer index:
its src rows and dst rows stay in L1 while it is moved, where a plain strided copy would touch a
new cache line for every element it writes (or reads).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.jit import bound, template
from ep.common.math.intrinsics import prefetch, stack_array
from ep.common.math.nd_index_offset_helper import packed_offsets
from ep.common.primitive.permute import PermuteFactoryImpl, PermuteKernels, TransposePlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.cpu.primitive.copy_nd import KERNELS as COPY_KERNELS
from ep.include.primitive.permute import PermuteFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# A tile's side in elements.
TILE = 64
# Its elements: a literal for stack_array.
_TILE_ELEMENTS = TILE * TILE

# The span's int64 parameters: these scalars, then the outer dims and their src and dst strides.
_ROWS, _COLS, _SRC_ROW_STRIDE, _DST_COL_STRIDE, _TILES_R, _TILES_C, _NUM_OUTER, _OUTER = range(8)


@template("DTYPE")
def _transpose_span(start, stop, args):
    # Items are tiles, the tile column fastest: item = (outer index, tile row, tile column).
    src, dst, params = args
    rows = params[_ROWS]
    cols = params[_COLS]
    src_row_stride = params[_SRC_ROW_STRIDE]
    dst_col_stride = params[_DST_COL_STRIDE]
    tiles_r = params[_TILES_R]
    tiles_c = params[_TILES_C]
    num_outer = params[_NUM_OUTER]
    per_line = 64 // dst.itemsize
    buffer = stack_array(_TILE_ELEMENTS, bound.DTYPE)
    for item in range(start, stop):
        t = item // tiles_c
        tc = item - t * tiles_c
        o = t // tiles_r
        tr = t - o * tiles_r
        s, d = packed_offsets(params, _OUTER, num_outer, o)
        r0 = tr * TILE
        c0 = tc * TILE
        nr = rows - r0 if rows - r0 < TILE else TILE
        nc = cols - c0 if cols - c0 < TILE else TILE
        # The tile goes through a contiguous buffer: src's rows are read whole into it, then dst's
        # rows written whole from it. Rows of src (and of dst) a power-of-two stride apart share
        # an L1 set; read column by column straight from src, a tile of more rows than the cache
        # has ways would evict itself. The next tile along (same rows, the next TILE cols) is
        # prefetched line by line meanwhile: its TILE rows are more streams than the hardware
        # prefetcher follows. Slices from the tile's corners: every index below is a non-negative
        # loop variable, so Numba's wraparound checks go.
        x = src[s + r0 * src_row_stride + c0 :]
        for r in range(nr):
            row = x[r * src_row_stride :]
            for k in range(TILE, 2 * TILE, per_line):
                prefetch(row, k)
            line = buffer[r * TILE :]
            for c in range(nc):
                line[c] = row[c]
        y = dst[d + c0 * dst_col_stride + r0 :]
        for c in range(nc):
            row = y[c * dst_col_stride :]
            for k in range(0, TILE, per_line):
                prefetch(row, TILE * dst_col_stride + k)
            column = buffer[c:]
            for r in range(nr):
                row[r] = column[r * TILE]


@function_cache("kernels")
def _span(dtype: np.dtype) -> ParallelFor:
    """The tiled transpose of elements of dtype."""
    return ParallelFor(_transpose_span, f"permute_tiles_{dtype}", (input_array(dtype), output_array(dtype), input_array(np.dtype(np.int64))), DTYPE=dtype.type)


_BOOL = np.dtype(np.bool_)
_UINT8 = np.dtype(np.uint8)


class CpuPermuteKernels(PermuteKernels):
    copy = COPY_KERNELS

    def tiles(self, plan: TransposePlan) -> bool:
        # Every transpose: a tile of one short side still reads or writes whole lines.
        return True

    def prepare(self, plan: TransposePlan, data_type: DataType) -> tuple[np.ndarray, int, int]:
        """The span's parameters, its item count (tiles) and its work (elements)."""
        tiles_r, tiles_c = -(-plan.rows // TILE), -(-plan.cols // TILE)
        outer = plan.outer_dims
        scalars = (plan.rows, plan.cols, plan.src_row_stride, plan.dst_col_stride, tiles_r, tiles_c, len(outer))
        params = np.array(scalars + outer + plan.outer_src_strides + plan.outer_dst_strides, np.int64)
        return params, int(np.prod(outer, dtype=np.int64)) * tiles_r * tiles_c, plan.count

    def transpose(self, stream, prepared, src, dst) -> None:
        params, items, work = prepared
        if src.dtype is _BOOL:  # Numba would normalize bools to 0 or 1: move their bytes
            src, dst = src.view(_UINT8), dst.view(_UINT8)
        _span(src.dtype).run((src, dst, params), items, work)

    def all_kernels(self) -> Iterator[object]:
        yield from self.copy.all_kernels()
        for dtype in sorted({dtype.storage_dtype for dtype in DataType} - {_BOOL}, key=str):
            yield _span(dtype)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, PermuteFactory, PermuteFactoryImpl(DeviceType.kCPU, CpuPermuteKernels()))
