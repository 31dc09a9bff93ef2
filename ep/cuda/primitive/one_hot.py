"""OneHot's CUDA kernel: one grid-stride kernel per (index dtype, out element bytes, index width),
storing 16-byte packs of out (ep.cuda.pack) where out is aligned to them.

A thread's pack starts at a flat offset of out, split into (row, column) by one division by the
classes (fast_divmod in 32 bits); its lanes then step along the row, reading the next row's index
where a row ends inside the pack. With check_bounds Gather's bounds check is queued first
(gather_common.check_later): a bad index is raised by the stream's next Sync, its row holding
off_value.
"""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.primitive.fill import UNIT_DTYPES
from ep.common.primitive.gather import GatherSizes, gather_row
from ep.common.primitive.one_hot import OUT_BYTES, OneHotFactoryImpl, OneHotKernels
from ep.common.runtime.buffer import address
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.element import pack_grid, pack_item
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import pack_bindings, pack_bytes, pack_count, pack_lanes
from ep.cuda.primitive import gather_common
from ep.include.primitive.one_hot import OneHotFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("INDEX", "DIVMOD", "PACK", "DST", "pack_array", "store_pack", "opaque")
def _one_hot(indices, dst, count, packs, depth, depth_m, depth_s, lo, hi, on, off):
    # packs: work items 0 to packs - 1 are full packs of PACK elements, the rest one element each.
    y = bound.pack_array(bound.DST)
    w, step, work = pack_grid(count, packs, bound.PACK, bound.INDEX)
    while w < work:
        full, i, lanes = pack_item(w, packs, bound.PACK, bound.INDEX)
        row, col = bound.DIVMOD(i, depth, depth_m, depth_s)
        hot = gather_row(np.int64(indices[row]), lo, hi, depth, False)
        for k in range(bound.PACK):
            if k < lanes:
                y[k] = on if np.int64(col) == hot else off
                col = bound.INDEX(col + 1)
                # A row ending inside the pack: the next lanes belong to the next row (which exists,
                # as they are elements of out).
                if col == depth and k + 1 < lanes:
                    col = bound.INDEX(0)
                    row = bound.INDEX(row + 1)
                    hot = gather_row(np.int64(indices[row]), lo, hi, depth, False)
        bound.store_pack(dst, i, y, full)
        w = bound.opaque(bound.INDEX(w + step))


@function_cache("kernels")
def one_hot_kernel(indices_dtype: DataType, out_bytes: int, wide: bool) -> CudaKernel:
    """The kernel of an index dtype, out element size and index width (fast_divmod.needs_wide)."""
    unit = UNIT_DTYPES[out_bytes]
    size = fast_divmod.size_type(wide)
    value = numba.from_dtype(unit)
    argtypes = (
        numba.from_dtype(indices_dtype.dtype)[::1], value[::1], size, size, size, size, size,
        numba.int64, numba.int64, value, value,
    )
    bindings = pack_bindings(pack_lanes(unit), unit, unit)
    slots = {slot: bindings[slot] for slot in ("PACK", "DST", "pack_array", "store_pack", "opaque")}
    name = f"one_hot_{indices_dtype.value}_u{8 * out_bytes}_{'i64' if wide else 'i32'}"
    return CudaKernel(_one_hot, name, argtypes, full_occupancy=True, **slots, **fast_divmod.index_bindings(wide))


class CudaOneHotKernels(OneHotKernels):
    def plan(self, indices_dtype: DataType, out_bytes: int, sizes: GatherSizes, count: int) -> tuple:
        """(the kernel, its lanes and pack bytes, its arguments after the packs, the bounds check's
        LaunchPlan)."""
        wide = fast_divmod.needs_wide(count, sizes.index_count)
        lanes = pack_lanes(UNIT_DTYPES[out_bytes])
        divisor = fast_divmod.divisor(max(sizes.gather, 1), wide)
        kernel = one_hot_kernel(indices_dtype, out_bytes, wide)
        return kernel, lanes, pack_bytes(lanes, UNIT_DTYPES[out_bytes]), (*divisor, sizes.lo, sizes.hi), gather_common.LaunchPlan()

    def run(self, primitive, plan, stream, indices, out, on, off) -> int:
        sizes, count, (kernel, lanes, pack, args, kept) = plan
        if primitive.check:
            gather_common.check_later(primitive, stream, indices, sizes, kept)
        if count:
            packs, work = pack_count(lanes, count, address(out) % pack)
            kernel.launch(stream, work, indices, out, count, packs, *args, on, off)
        return -1

    def all_kernels(self) -> Iterator[CudaKernel]:
        for indices_dtype in INDEX_TYPES:
            for out_bytes in OUT_BYTES:
                for wide in (False, True):
                    yield one_hot_kernel(indices_dtype, out_bytes, wide)
        yield from gather_common.bounds_kernels()


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, OneHotFactory, OneHotFactoryImpl(DeviceType.kCUDA, CudaOneHotKernels()))
