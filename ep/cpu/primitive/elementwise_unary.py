"""ElementwiseUnary's CPU kernel: one span per (op, src dtype, dst dtype), run by ParallelFor, one
build for every size."""
from __future__ import annotations

import numba

from ep.common.jit import bound, template
from ep.common.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl, ElementwiseUnaryKernels, unary_bindings
from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.elementwise_unary import ElementwiseUnaryFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store")
def _unary(start, stop, args):
    # Slices indexed by the range variable alone: LLVM then knows every index is non-negative,
    # drops Numba's wraparound checks and vectorizes.
    src, dst, _, attr0, attr1 = args  # ElementwiseUnaryKernels' arguments (count: stop's bound)
    x = src[start:stop]
    out = dst[start:stop]
    for i in range(stop - start):
        out[i] = bound.store(bound.formula(bound.load(x[i]), attr0, attr1))


class CpuElementwiseUnaryKernels(ElementwiseUnaryKernels):
    @function_cache("kernels")
    def kernel(self, op, src_dtype, dst_dtype) -> ParallelFor:
        name = f"unary_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        attr = numba.from_dtype(src_dtype.compute_dtype)  # unary_attrs' scalars
        arg_types = (input_array(src_dtype.storage_dtype), output_array(dst_dtype.storage_dtype), numba.int64, attr, attr)
        return ParallelFor(_unary, name, arg_types, aligned=1, **unary_bindings(DeviceType.kCPU, op, src_dtype, dst_dtype))


# One instance, so that Cast (cast.py) launches the very kernels ElementwiseUnary compiled.
UNARY_KERNELS = CpuElementwiseUnaryKernels()
REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ElementwiseUnaryFactory, ElementwiseUnaryFactoryImpl(DeviceType.kCPU, UNARY_KERNELS))
