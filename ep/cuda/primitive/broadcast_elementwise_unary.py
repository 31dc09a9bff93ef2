"""BroadcastElementwiseUnary's CUDA kernels: a flat plan runs ElementwiseUnary's own packed kernel;
any other runs a grid-stride kernel per (op, src dtype, dst dtype) that maps each dst element's
flat position to both buffers' offsets with split_offsets (32-bit positions and fast_divmod, 64-bit
offsets: strides may span more than 2**31 elements). A dst of more than 2**31 - 1 elements runs
as launches of boxes that fit (nd_index_offset_helper.boxes), as Where's does."""
from __future__ import annotations

import math
from typing import Callable, Iterator

import numba
from numba import cuda, types

from ep.common.jit import bound, template
from ep.common.math import fast_divmod
from ep.common.math.fast_divmod import index_bindings, size_type
from ep.common.math.nd_index_offset_helper import SPLIT_DIMS, boxes, split_args, split_offsets
from ep.common.math.unary_functor import unary_combinations
from ep.common.primitive.broadcast_elementwise_unary import (
    BroadcastElementwiseUnaryFactoryImpl,
    BroadcastElementwiseUnaryKernels,
    UnaryBroadcastPlan,
)
from ep.common.primitive.elementwise_unary import unary_bindings
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import pack_functions
from ep.cuda.primitive.elementwise_unary import UNARY_KERNELS, computes_in_float64
from ep.include.primitive.broadcast_elementwise_unary import BroadcastElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store", "INDEX", "DIVMOD", "opaque")
def _strided(src, dst, count, ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer, attr0, attr1):
    i = bound.INDEX(cuda.grid(1))
    step = bound.INDEX(cuda.gridsize(1))
    while i < count:
        # ndim is the same for every thread: the unrolled dims' breaks never diverge.
        os, od = split_offsets(i, ndim, sizes, multipliers, shifts, src_strides, dst_strides, src_outer, dst_outer, bound.DIVMOD)
        dst[od] = bound.store(bound.formula(bound.load(src[os]), attr0, attr1))
        i = bound.opaque(bound.INDEX(i + step))


_INDEX = size_type(wide=False)
# intrinsics.opaque, or the simulator's stand-in: the grid-stride step LLVM does not unroll.
_OPAQUE = pack_functions(1)[3]
_SIZES = types.UniTuple(_INDEX, SPLIT_DIMS)
_STRIDES = types.UniTuple(numba.int64, SPLIT_DIMS)


def _parts(plan: UnaryBroadcastPlan, limit: int) -> list[tuple]:
    """(first src and dst elements, elements, the kernel's split arguments) per launch: one, or one
    per box of at most limit elements, so every position a kernel computes fits in 32 bits."""
    parts = []
    for start, box in boxes(plan.dims, limit):
        k = len(plan.dims) - len(box)
        firsts = tuple(sum(i * s for i, s in zip(start, strides)) for strides in (plan.src_strides, plan.dst_strides))
        parts.append((firsts, math.prod(box), split_args(box, plan.src_strides[k:], plan.dst_strides[k:], wide=False)))
    return parts


class CudaBroadcastElementwiseUnaryKernels(BroadcastElementwiseUnaryKernels):
    @function_cache("kernels")
    def kernel(self, op, src_dtype, dst_dtype) -> CudaKernel:
        compute = numba.from_dtype(src_dtype.compute_dtype)
        argtypes = (
            numba.from_dtype(src_dtype.storage_dtype)[::1], numba.from_dtype(dst_dtype.storage_dtype)[::1],
            _INDEX, _INDEX, _SIZES, _SIZES, _SIZES, _STRIDES, _STRIDES, numba.int64, numba.int64, compute, compute,
        )
        return CudaKernel(
            _strided, f"broadcast_unary_{op.value}_{src_dtype.value}_{dst_dtype.value}", argtypes,
            full_occupancy=not computes_in_float64(op, src_dtype, dst_dtype), opaque=_OPAQUE,
            **index_bindings(wide=False), **unary_bindings(DeviceType.kCUDA, op, src_dtype, dst_dtype),
        )

    def all_kernels(self) -> Iterator[CudaKernel]:
        for op, src_dtype, dst_dtype in unary_combinations():
            yield self.kernel(op, src_dtype, dst_dtype)

    def launcher(self, op, src_dtype, dst_dtype, plan: UnaryBroadcastPlan) -> Callable[..., None]:
        count = plan.count
        kernel = self.kernel(op, src_dtype, dst_dtype)
        limit = fast_divmod.FAST_DIVMOD_LIMIT
        # Beyond the limit the boxes are cut at the first run, after storage() has checked the
        # buffers: dims no buffer could hold would take billions of boxes.
        parts = _parts(plan, limit) if count <= limit else None

        def run(stream, src, dst, attr0, attr1) -> None:
            nonlocal parts
            if parts is None:
                parts = _parts(plan, limit)
            for (first_src, first_dst), elements, split in parts:
                views = (src, dst) if not (first_src or first_dst) else (src[first_src:], dst[first_dst:])
                kernel.launch(stream, elements, *views, elements, *split, attr0, attr1)

        return run


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, BroadcastElementwiseUnaryFactory, BroadcastElementwiseUnaryFactoryImpl(DeviceType.kCUDA, CudaBroadcastElementwiseUnaryKernels(UNARY_KERNELS))
)
