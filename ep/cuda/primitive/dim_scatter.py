"""DimScatter's CUDA kernel: a grid-stride loop over lines, a thread walking each with
scatter_line (no atomics: two lines write disjoint elements of out, so the result is the same on
every run). Consecutive threads take consecutive lines, which are consecutive elements where the
scatter dim is not the innermost."""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, specialize, template
from ep.common.math.binary_functor import binary_attr_dtype
from ep.common.primitive.dim_scatter import LINE_DIMS, DimScatterFactoryImpl, DimScatterKernels, ScatterPlan, kernel_dtype, kernel_keys, scatter_line
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel, device_function
from ep.include.primitive.dim_scatter import DimScatterFactory, ScatterOp
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The line table (ep.common.primitive.dim_scatter.ScatterPlan.table), passed by value.
_TABLE = numba.types.UniTuple(numba.int64, 4 * LINE_DIMS)


@template("line")
def _scatter_lines(index, src, out, line_ndim, table, lines, length, index_step, src_step, out_step, size, attr):
    line = np.int64(cuda.grid(1))
    step = np.int64(cuda.gridsize(1))
    while line < lines:
        bound.line(line, 1, index, src, out, line_ndim, table, length, index_step, src_step, out_step, size, attr)
        line += step


class CudaDimScatterKernels(DimScatterKernels):
    @function_cache("kernels")
    def kernel(self, op: ScatterOp, dtype: DataType, index_dtype: DataType) -> CudaKernel:
        """The lines of op on dtype (kernel_dtype's) by indices of index_dtype."""
        name = f"dim_scatter_{op.value}_{dtype.value}_{index_dtype.value}"
        line = device_function(specialize(scatter_line, f"{name}_line", **self.line_bindings(op, dtype, DeviceType.kCUDA)))
        storage = numba.from_dtype(dtype.storage_dtype)
        argtypes = (
            numba.from_dtype(index_dtype.dtype)[::1], storage[::1], storage[::1], numba.int64, _TABLE,
            *(numba.int64,) * 6, numba.from_dtype(binary_attr_dtype(dtype)),
        )
        return CudaKernel(_scatter_lines, name, argtypes, full_occupancy=False, line=line)

    def run(self, primitive, plan: ScatterPlan, stream, index, src, out) -> None:
        dtype = kernel_dtype(primitive.op, primitive.dtype)
        kernel = self.kernel(primitive.op, dtype, primitive.index_dtype)
        attr = binary_attr_dtype(dtype).type(0)
        kernel.launch(
            stream, plan.lines, index, src, out, plan.line_ndim, plan.table, plan.lines, plan.length, plan.index_step, plan.src_step, plan.out_step, plan.size, attr
        )

    def all_kernels(self) -> Iterator[CudaKernel]:
        for key in kernel_keys():
            yield self.kernel(*key)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, DimScatterFactory, DimScatterFactoryImpl(DeviceType.kCUDA, CudaDimScatterKernels()))
