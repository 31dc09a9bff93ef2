"""ExpandGrad's CPU kernel: tasks of blocks of dst elements, each summing its strided set of src; one
build per dtype for every size (a prange over the tasks, or below PARALLEL_THRESHOLD a plain loop)."""
from __future__ import annotations

import functools
from typing import Iterator

import numba
import numpy as np
from numba import prange

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.nd_index_offset_helper import map_offset
from ep.common.primitive.expand_grad import ExpandGradFactoryImpl, ExpandGradKernels
from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, ExpandGradPlan
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.kernel import CpuKernel, call_task
from ep.include.primitive.expand_grad import ExpandGradFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# dst elements per task along a kept innermost dim.
BLOCK = 512


@template("accumulate", "load")
def _sum_view(view, n):
    # Four running sums: one would wait on each add's latency, as LLVM keeps float adds in order.
    t0 = t1 = t2 = t3 = bound.accumulate(0)
    quads = n // 4 * 4
    for j in range(0, quads, 4):
        t0 += bound.load(view[j])
        t1 += bound.load(view[j + 1])
        t2 += bound.load(view[j + 2])
        t3 += bound.load(view[j + 3])
    for j in range(quads, n):
        t0 += bound.load(view[j])
    return (t0 + t1) + (t2 + t3)


@template("accumulate", "load", "store", "sum_view")
def _expand_grad_task(
    src, dst, sums, task, pieces, row, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride
):
    # A task is a block of dst elements along dst's innermost dim. When that dim is kept, the block
    # is contiguous in src too, and adding whole src rows into `sums` (host-allocated accumulators)
    # reads src in order; otherwise the block is one element summing runs of its innermost summed dim.
    # Loops index slices, whose indices Numba knows are not negative, so that LLVM vectorizes them.
    r = task // pieces
    b0 = (task - r * pieces) * BLOCK
    first = r * row + b0
    # Not min(): Numba compiles its overload anew in each kernel.
    n = BLOCK if BLOCK < row - b0 else row - b0
    base = map_offset(first, dst_strides, src_strides)
    if n == 1:
        total = bound.accumulate(0)
        for k in range(num_outer):
            offset = base + map_offset(k, outer_strides, outer_src_strides)
            if inner_stride <= 1:  # 0 when nothing is summed: one element
                total += bound.sum_view(src[offset : offset + inner], inner)
            else:
                end = offset + (inner - 1) * inner_stride + 1
                total += bound.sum_view(src[offset:end:inner_stride], inner)
        dst[first] = bound.store(total)
    else:
        acc = sums[first : first + n]
        for b in range(n):
            acc[b] = 0
        for k in range(num_outer):
            offset = base + map_offset(k, outer_strides, outer_src_strides)
            for j in range(inner):
                src_row = src[offset + j * inner_stride : offset + j * inner_stride + n]
                for b in range(n):
                    acc[b] += bound.load(src_row[b])
        out = dst[first : first + n]
        for b in range(n):
            out[b] = bound.store(acc[b])


@template()
def _expand_grad(
    task, src, dst, sums, num_tasks, pieces, row, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride, parallel
):
    # The task, compiled on its own, called by its address; np.int64: prange's index is unsigned.
    if parallel:
        for t in prange(num_tasks):
            call_task(task, (src, dst, sums, np.int64(t), pieces, row, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride))
    else:
        for t in range(num_tasks):
            call_task(task, (src, dst, sums, np.int64(t), pieces, row, dst_strides, src_strides, outer_strides, outer_src_strides, num_outer, inner, inner_stride))


class CpuExpandGradKernels(ExpandGradKernels):
    @functools.cache
    def kernel(self, dtype: DataType) -> tuple[CpuKernel, CpuKernel]:
        """dtype's kernel and the task it calls."""
        accumulate, load = ACCUMULATE_DTYPES[dtype], load_fn(dtype, DeviceType.kCPU)
        sum_view = scalar_function(specialize(_sum_view, f"sum_view_{dtype.value}", accumulate=accumulate, load=load))
        bindings = {"accumulate": accumulate, "load": load, "store": store_fn(dtype, DeviceType.kCPU), "sum_view": sum_view}
        task = CpuKernel(_expand_grad_task, f"expand_grad_task_{dtype.value}", **bindings)
        return CpuKernel(_expand_grad, f"expand_grad_{dtype.value}"), task

    def launch(self, stream, dtype: DataType, plan: ExpandGradPlan, src, dst) -> None:
        kernel, task = self.kernel(dtype)
        pieces = -(-plan.row // BLOCK)
        sums = np.empty(plan.count if plan.row > 1 else 0, ACCUMULATE_DTYPES[dtype])
        args = (src, dst, sums, plan.count // plan.row * pieces, pieces, plan.row, *plan.args()[1:])
        # The task takes a task index where the kernel takes the task count.
        task_types = tuple(numba.typeof(arg) for arg in args)
        work = plan.count * plan.num_outer * plan.inner
        kernel.launch(stream, work, task.task(*task_types), *args)

    def all_kernels(self) -> Iterator[object]:
        for dtype in ACCUMULATE_DTYPES:
            yield from self.kernel(dtype)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU, ExpandGradFactory, ExpandGradFactoryImpl(DeviceType.kCPU, CpuExpandGradKernels())
)
