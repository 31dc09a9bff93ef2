"""Where's CUDA kernel: one grid-stride kernel per (cond bytes, data bytes).

A thread takes z elements by flat offset and maps each to cond's, x's and y's offsets with
split_offsets (32-bit fast_divmod, one per dim but the outermost; the second call repeats the
first's divisions, which the compiler shares). Offsets are 32-bit: a z of more than 2**31 - 1
elements runs as launches of boxes that fit (nd_index_offset_helper.boxes).
"""
from __future__ import annotations

import math
from typing import Callable, Iterator

import numba
from numba import cuda, types

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import index_bindings, size_type
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, boxes, split_args, split_offsets
from ep.common.primitive.byte_units import as_units, unit_dtype
from ep.common.primitive.where import COND_BYTES, DATA_BYTES, WhereFactoryImpl, WhereKernels, WherePlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import pack_functions
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.where import WhereFactory


@template("INDEX", "DIVMOD", "opaque")
def _where(cond, x, y, z, count, ndim, sizes, multipliers, shifts, strides_c, strides_x, strides_y, outer_c, outer_x, outer_y):
    i = bound.INDEX(cuda.grid(1))
    step = bound.INDEX(cuda.gridsize(1))
    while i < count:
        # ndim is the same for every thread: the unrolled dims' breaks never diverge.
        oc, ox = split_offsets(i, ndim, sizes, multipliers, shifts, strides_c, strides_x, outer_c, outer_x, bound.DIVMOD)
        oy, _ = split_offsets(i, ndim, sizes, multipliers, shifts, strides_y, strides_y, outer_y, outer_y, bound.DIVMOD)
        z[i] = x[ox] if cond[oc] != 0 else y[oy]
        i = bound.opaque(bound.INDEX(i + step))


_INDEX = size_type(wide=False)
# intrinsics.opaque, or the simulator's stand-in: the grid-stride step LLVM does not unroll.
_OPAQUE = pack_functions(1)[3]
_DIMS = types.UniTuple(_INDEX, SPLIT_DIMS)


def _parts(plan: WherePlan, limit: int) -> list[tuple]:
    """(first element of cond, x, y and z, elements, the kernel's split arguments) per launch: one,
    or one per box of at most limit elements, so every offset a kernel computes fits in 32 bits."""
    parts = []
    for start, box in boxes(plan.dims, limit):
        k = len(plan.dims) - len(box)
        firsts = tuple(sum(i * s for i, s in zip(start, strides)) for strides in (*plan.strides, plan.dst_strides))
        sc, sx, sy = (strides[k:] for strides in plan.strides)
        ndim, sizes, multipliers, shifts, inner_c, inner_x, outer_c, outer_x = split_args(box, sc, sx, wide=False)
        inner_y, outer_y = split_args(box, sy, sy, wide=False)[4::2]
        parts.append((firsts, math.prod(box), (ndim, sizes, multipliers, shifts, inner_c, inner_x, inner_y, outer_c, outer_x, outer_y)))
    return parts


class CudaWhereKernels(WhereKernels):
    @function_cache("kernels")
    def kernel(self, cond_bytes: int, data_bytes: int) -> CudaKernel:
        cond, data = numba.from_dtype(unit_dtype(cond_bytes))[::1], numba.from_dtype(unit_dtype(data_bytes))[::1]
        argtypes = (cond, data, data, data, _INDEX, _INDEX, *([_DIMS] * 6), _INDEX, _INDEX, _INDEX)
        return CudaKernel(_where, f"where_{cond_bytes}_{data_bytes}", argtypes, **index_bindings(wide=False), opaque=_OPAQUE)

    def all_kernels(self) -> Iterator[CudaKernel]:
        for cond_bytes in COND_BYTES:
            for data_bytes in DATA_BYTES:
                yield self.kernel(cond_bytes, data_bytes)

    def launcher(self, cond_bytes: int, data_bytes: int, plan: WherePlan) -> Callable[..., None]:
        kernel = self.kernel(cond_bytes, data_bytes)
        limit = fast_divmod.FAST_DIVMOD_LIMIT
        # Beyond the limit the boxes are cut at the first run, after storage() has checked that the
        # buffers hold plan.count elements: dims no buffer could hold would take billions of boxes.
        parts = _parts(plan, limit) if plan.count <= limit else None
        counts = (*plan.counts, plan.count)

        def run(stream, c, x, y, z) -> None:
            nonlocal parts
            if parts is None:
                parts = _parts(plan, limit)
            buffers = (as_units(c, counts[0], cond_bytes), as_units(x, counts[1], data_bytes),
                       as_units(y, counts[2], data_bytes), as_units(z, counts[3], data_bytes))
            for firsts, count, split in parts:
                views = buffers if not any(firsts) else tuple(b[f:] for b, f in zip(buffers, firsts))
                kernel.launch(stream, count, *views, count, *split)

        return run


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, WhereFactory, WhereFactoryImpl(DeviceType.kCUDA, CudaWhereKernels()))
