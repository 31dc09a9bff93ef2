"""Add's CPU kernel: one span per (dtype, arity), run by ParallelFor; every source read once."""
from __future__ import annotations

import numba

from ep.common.jit import bound, template
from ep.common.math.binary_functor import binary_attr_dtype, binary_formula
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.add import MAX_ARITY, AddFactoryImpl, AddKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.add import AddFactory
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


@template("formula", "load", "store", "ARITY")
def _add(start, stop, args):
    # ARITY is a constant of the build: LLVM unrolls the loop over sources, each xs[k] then a
    # known slice. Slices indexed by the range variable alone let LLVM vectorize.
    s0, s1, s2, s3, s4, s5, s6, s7, dst, attr0, attr1 = args
    xs = (
        s0[start:stop], s1[start:stop], s2[start:stop], s3[start:stop],
        s4[start:stop], s5[start:stop], s6[start:stop], s7[start:stop],
    )
    out = dst[start:stop]
    for i in range(stop - start):
        acc = bound.load(xs[0][i])
        for k in range(1, bound.ARITY):
            acc = bound.formula(acc, bound.load(xs[k][i]), attr0, attr1)
        out[i] = bound.store(acc)


class CpuAddKernel(ParallelFor):
    def launch(self, stream, work: int, srcs: tuple, dst, count: int, attr0, attr1) -> None:
        """AddKernels' launch: the sum of srcs into dst over count elements (a cpu stream runs it at once)."""
        self.run((*srcs, dst, attr0, attr1), count, work * (MAX_ARITY + 1))


class CpuAddKernels(AddKernels):
    @function_cache("kernels")
    def kernel(self, dtype: DataType, arity: int) -> CpuAddKernel:
        src = input_array(dtype.storage_dtype)
        attr = numba.from_dtype(binary_attr_dtype(dtype))
        arg_types = (*[src] * MAX_ARITY, output_array(dtype.storage_dtype), attr, attr)
        return CpuAddKernel(
            _add, f"add_{arity}_{dtype.value}", arg_types, ARITY=arity,
            formula=binary_formula(BinaryOp.kAdd, dtype), load=load_fn(dtype, DeviceType.kCPU), store=store_fn(dtype, DeviceType.kCPU),
        )


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, AddFactory, AddFactoryImpl(DeviceType.kCPU, CpuAddKernels()))
