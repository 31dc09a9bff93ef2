"""DimScatter's CPU kernel: ParallelFor over lines, each walked by scatter_line (race-free: two
lines write disjoint elements of out)."""
from __future__ import annotations

import numba

from ep.common.jit import bound, scalar_function, template
from ep.common.math.binary_functor import binary_attr_dtype
from ep.common.primitive.dim_scatter import TABLE_TYPE, DimScatterFactoryImpl, DimScatterKernels, ScatterPlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.dim_scatter import DimScatterFactory, ScatterOp
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Lines a task walks together: contiguous runs of 1 KiB of float32 in out and src per position.
BLOCK = 256


@template("line")
def _scatter_lines(start, stop, args):
    # Task t: lines [first, first + width) of one row of the innermost line dim (inner lines).
    index, src, out, line_ndim, table, length, index_step, src_step, out_step, size, attr, inner = args
    blocks = (inner + BLOCK - 1) // BLOCK
    for task in range(start, stop):
        row = task // blocks
        first = (task - row * blocks) * BLOCK
        width = inner - first if inner - first < BLOCK else BLOCK
        bound.line(row * inner + first, width, index, src, out, line_ndim, table, length, index_step, src_step, out_step, size, attr)


class CpuDimScatterKernels(DimScatterKernels):
    @function_cache("kernels")
    def kernel(self, op: ScatterOp, dtype: DataType, index_dtype: DataType) -> ParallelFor:
        name, line = self.line(op, dtype, index_dtype, DeviceType.kCPU)
        storage = dtype.storage_dtype
        arg_types = (
            input_array(index_dtype.dtype), input_array(storage), output_array(storage), numba.int64, TABLE_TYPE,
            *(numba.int64,) * 5, numba.from_dtype(binary_attr_dtype(dtype)), numba.int64,
        )
        return ParallelFor(_scatter_lines, name, arg_types, line=scalar_function(line))

    def run(self, primitive, plan: ScatterPlan, stream, index, src, out) -> None:
        span = self.kernel(primitive.op, primitive.kernel_dtype, primitive.index_dtype)
        args = (
            index, src, out, plan.line_ndim, plan.table, plan.length, plan.index_step, plan.src_step, plan.out_step, plan.size,
            primitive.attr, plan.inner,
        )
        tasks = plan.lines // plan.inner * -(-plan.inner // BLOCK)
        span.run(args, tasks, plan.lines * plan.length)

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, DimScatterFactory, DimScatterFactoryImpl(DeviceType.kCPU, CpuDimScatterKernels()))
