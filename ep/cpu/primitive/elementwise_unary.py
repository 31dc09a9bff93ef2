"""ElementwiseUnary's CPU kernel: one build per (op, src dtype, dst dtype) for every size."""
from __future__ import annotations

import functools

from numba import prange

from ep.common.jit import bound, template
from ep.common.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl, ElementwiseUnaryKernels, unary_bindings
from ep.common.runtime.device import DeviceType
from ep.cpu.kernel import CpuKernel
from ep.include.primitive.elementwise_unary import ElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store")
def _unary(src, dst, count, attr0, attr1, parallel):
    if parallel:
        for i in prange(count):
            dst[i] = bound.store(bound.formula(bound.load(src[i]), attr0, attr1))
    else:
        for i in range(count):
            dst[i] = bound.store(bound.formula(bound.load(src[i]), attr0, attr1))


class CpuElementwiseUnaryKernels(ElementwiseUnaryKernels):
    @functools.cache
    def kernel(self, op, src_dtype, dst_dtype) -> CpuKernel:
        name = f"unary_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        return CpuKernel(_unary, name, **unary_bindings(op, src_dtype, dst_dtype))


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU, ElementwiseUnaryFactory, ElementwiseUnaryFactoryImpl(DeviceType.kCPU, CpuElementwiseUnaryKernels())
)
