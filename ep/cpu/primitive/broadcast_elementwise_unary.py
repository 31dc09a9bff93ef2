"""BroadcastElementwiseUnary's CPU kernels: a flat plan runs ElementwiseUnary's own span; any other
runs a strided span per (op, src dtype, dst dtype) over dst's rows (its innermost simplified dim),
each row's start mapped to both buffers' offsets once, then stepped with their innermost strides
(a row of one broadcast src element computes the op once)."""
from __future__ import annotations

from typing import Callable, Iterator

import numba
import numpy as np

from ep.common.jit import bound, template
from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.math.unary_functor import unary_combinations
from ep.common.primitive.broadcast_elementwise_unary import (
    BroadcastElementwiseUnaryFactoryImpl,
    BroadcastElementwiseUnaryKernels,
    UnaryBroadcastPlan,
)
from ep.common.primitive.elementwise_unary import unary_bindings
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.cpu.primitive.elementwise_unary import UNARY_KERNELS
from ep.cpu.strided import row_offsets
from ep.include.primitive.broadcast_elementwise_unary import BroadcastElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store")
def _strided(start, stop, args):
    # strides: rows of src's and dst's element strides over the plan's dims and the dims'
    # contiguous strides (an array: ParallelFor passes no tuple nested in args).
    src, dst, strides, cols, attr0, attr1 = args
    ndim = strides.shape[1]
    inner_src, inner_dst = strides[0, ndim - 1], strides[1, ndim - 1]
    offsets = np.empty(2, np.int64)
    for r in range(start, stop):
        row_offsets(r * cols, strides, offsets)
        os, od = offsets[0], offsets[1]
        if inner_src == 0:
            value = bound.store(bound.formula(bound.load(src[os]), attr0, attr1))
            for k in range(cols):
                dst[od + k * inner_dst] = value
        else:
            for k in range(cols):
                dst[od + k * inner_dst] = bound.store(bound.formula(bound.load(src[os + k * inner_src]), attr0, attr1))


class CpuBroadcastElementwiseUnaryKernels(BroadcastElementwiseUnaryKernels):
    @function_cache("kernels")
    def kernel(self, op, src_dtype, dst_dtype) -> ParallelFor:
        attr = numba.from_dtype(src_dtype.compute_dtype)  # unary_attrs' scalars
        types = (
            input_array(src_dtype.storage_dtype), output_array(dst_dtype.storage_dtype),
            input_array(np.dtype(np.int64), 2), numba.int64, attr, attr,
        )
        name = f"broadcast_unary_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        return ParallelFor(_strided, name, types, **unary_bindings(DeviceType.kCPU, op, src_dtype, dst_dtype))

    def all_kernels(self) -> Iterator[ParallelFor]:
        for op, src_dtype, dst_dtype in unary_combinations():
            yield self.kernel(op, src_dtype, dst_dtype)

    def launcher(self, op, src_dtype, dst_dtype, plan: UnaryBroadcastPlan) -> Callable[..., None]:
        count = plan.count
        run = self.kernel(op, src_dtype, dst_dtype).run
        strides = np.array((plan.src_strides, plan.dst_strides, contiguous_strides(plan.dims)), np.int64)
        cols = plan.dims[-1]
        rows = count // cols
        return lambda stream, src, dst, attr0, attr1: run((src, dst, strides, cols, attr0, attr1), rows, count)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU, BroadcastElementwiseUnaryFactory, BroadcastElementwiseUnaryFactoryImpl(DeviceType.kCPU, CpuBroadcastElementwiseUnaryKernels(UNARY_KERNELS))
)
