"""ElementwiseUnary's CUDA kernel: one grid-stride kernel per (op, src dtype, dst dtype)."""
from __future__ import annotations

import functools

import numba
from numba import cuda

from ep.common.jit import bound, template
from ep.common.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl, ElementwiseUnaryKernels, unary_bindings
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.elementwise_unary import ElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store")
def _unary(src, dst, count, attr0, attr1):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < count:
        dst[i] = bound.store(bound.formula(bound.load(src[i]), attr0, attr1))
        i += step


class CudaElementwiseUnaryKernels(ElementwiseUnaryKernels):
    @functools.cache
    def kernel(self, op, src_dtype, dst_dtype) -> CudaKernel:
        compute = numba.from_dtype(src_dtype.compute_dtype)
        argtypes = (
            numba.from_dtype(src_dtype.storage_dtype)[::1],
            numba.from_dtype(dst_dtype.storage_dtype)[::1],
            numba.int64,
            compute,
            compute,
        )
        name = f"unary_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        return CudaKernel(_unary, name, argtypes, **unary_bindings(op, src_dtype, dst_dtype))


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, ElementwiseUnaryFactory, ElementwiseUnaryFactoryImpl(DeviceType.kCUDA, CudaElementwiseUnaryKernels())
)
