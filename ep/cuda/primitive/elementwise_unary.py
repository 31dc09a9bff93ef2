"""ElementwiseUnary's CUDA kernel: one grid-stride kernel per (op, src dtype, dst dtype)."""
from __future__ import annotations

import functools

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, template
from ep.common.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl, ElementwiseUnaryKernels, unary_bindings
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.include.primitive.elementwise_unary import ElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.unary_op import UnaryOp

# Ops that compute in float64 at every dtype (ops/transcendental.py).
FLOAT64_FORMULAS = frozenset({UnaryOp.kDigamma, UnaryOp.kTrigamma, UnaryOp.kLgamma})


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
        # A float64 formula takes register pairs: under the 32-register cap of full occupancy most
        # would spill (the ptxas check found 33-60 registers), so they declare no launch bounds.
        in_float64 = op in FLOAT64_FORMULAS or np.float64 in (src_dtype.compute_dtype, dst_dtype.compute_dtype)
        return CudaKernel(_unary, name, argtypes, full_occupancy=not in_float64, **unary_bindings(op, src_dtype, dst_dtype))


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, ElementwiseUnaryFactory, ElementwiseUnaryFactoryImpl(DeviceType.kCUDA, CudaElementwiseUnaryKernels())
)
