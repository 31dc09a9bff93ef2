"""DimScatter's CUDA kernel: a grid-stride loop over lines, a thread walking each with
scatter_line (no atomics: two lines write disjoint elements of out, so the result is the same on
every run). Consecutive threads take consecutive lines, which are consecutive elements where the
scatter dim is not the innermost."""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from ep.common.jit import bound, template
from ep.common.math.binary_functor import binary_attr_dtype
from ep.common.primitive.dim_scatter import TABLE_TYPE, DimScatterFactoryImpl, DimScatterKernels, ScatterPlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cuda.kernel import CudaKernel, device_function
from ep.include.primitive.dim_scatter import DimScatterFactory, ScatterOp
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


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
        name, line = self.line(op, dtype, index_dtype, DeviceType.kCUDA)
        storage = numba.from_dtype(dtype.storage_dtype)
        argtypes = (
            numba.from_dtype(index_dtype.dtype)[::1], storage[::1], storage[::1], numba.int64, TABLE_TYPE,
            *(numba.int64,) * 6, numba.from_dtype(binary_attr_dtype(dtype)),
        )
        return CudaKernel(_scatter_lines, name, argtypes, full_occupancy=False, line=device_function(line))

    def run(self, primitive, plan: ScatterPlan, stream, index, src, out) -> None:
        kernel = self.kernel(primitive.op, primitive.kernel_dtype, primitive.index_dtype)
        kernel.launch(
            stream, plan.lines, index, src, out, plan.line_ndim, plan.table, plan.lines, plan.length, plan.index_step, plan.src_step,
            plan.out_step, plan.size, primitive.attr,
        )

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, DimScatterFactory, DimScatterFactoryImpl(DeviceType.kCUDA, CudaDimScatterKernels()))
