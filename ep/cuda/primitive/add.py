"""Add's CUDA kernel: one grid-stride kernel per (dtype, arity), an element per thread and step."""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math.binary_functor import binary_attr_dtype, binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.fast_divmod import needs_wide
from ep.common.primitive.add import MAX_ARITY, AddFactoryImpl, AddKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel
from ep.cuda.pack import pack_functions
from ep.include.primitive.add import AddFactory
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "compute", "load", "store", "ARITY", "INDEX", "opaque")
def _add(s0, s1, s2, s3, s4, s5, s6, s7, dst, count, attr0, attr1):
    # ARITY is a constant of the build: the loop over sources unrolls, each srcs[k] then a known
    # argument, and the unused sources are never read.
    srcs = (s0, s1, s2, s3, s4, s5, s6, s7)
    i = bound.INDEX(cuda.grid(1))
    step = bound.INDEX(cuda.gridsize(1))
    while i < count:
        # compute() is free when compiled; on the simulator it keeps the loaded values' dtype.
        acc = bound.compute(bound.load(s0[i]))
        for k in range(1, bound.ARITY):
            acc = bound.formula(acc, bound.compute(bound.load(srcs[k][i])), attr0, attr1)
        dst[i] = bound.store(acc)
        i = bound.opaque(bound.INDEX(i + step))


class CudaAddKernel(CudaKernel):
    """Two builds, 32-bit and 64-bit indices; a launch picks by count."""

    def __init__(self, dtype: DataType, arity: int, wide: bool) -> None:
        src = numba.from_dtype(dtype.storage_dtype)[::1]
        attr = numba.from_dtype(binary_attr_dtype(dtype))
        index = numba.int64 if wide else numba.uint32
        argtypes = (*[src] * MAX_ARITY, src, index, attr, attr)
        super().__init__(
            _add, f"add_{arity}_{dtype.value}{'_wide' if wide else ''}", argtypes,
            # float64 takes register pairs: under the 32-register cap of full occupancy it could spill.
            full_occupancy=dtype is not DataType.kDouble,
            formula=binary_formula(BinaryOp.kAdd, dtype), compute=dtype.compute_dtype.type,
            load=load_fn(dtype, DeviceType.kCUDA), store=store_fn(dtype, DeviceType.kCUDA),
            ARITY=arity, INDEX=np.int64 if wide else np.uint32, opaque=pack_functions(1)[3],
        )


class LaunchBySize:
    """The 32-bit build of a (dtype, arity), or the 64-bit one where count needs it."""

    def __init__(self, dtype: DataType, arity: int) -> None:
        self.narrow, self.wide = CudaAddKernel(dtype, arity, False), CudaAddKernel(dtype, arity, True)

    def launch(self, stream, work: int, srcs: tuple, dst, count: int, attr0, attr1) -> None:
        kernel = self.wide if needs_wide(count) else self.narrow
        kernel.launch(stream, work, *srcs, dst, count, attr0, attr1)


class CudaAddKernels(AddKernels):
    @function_cache("kernels")
    def kernel(self, dtype: DataType, arity: int) -> LaunchBySize:
        return LaunchBySize(dtype, arity)

    def all_kernels(self):
        for launcher in super().all_kernels():
            yield launcher.narrow
            yield launcher.wide


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, AddFactory, AddFactoryImpl(DeviceType.kCUDA, CudaAddKernels()))
