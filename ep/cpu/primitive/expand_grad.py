"""ExpandGrad's CPU kernel: tasks of blocks of dst elements, each summing its strided set of src; one
span over the tasks per dtype, run by ParallelFor, one build for every size."""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np

from ep.common.jit import bound, scalar_function, specialize, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.intrinsics import add_reassociable
from ep.common.math.reduce import kahan_add
from ep.common.math.nd_index_offset_helper import map_offset
from ep.common.primitive.expand_grad import ExpandGradFactoryImpl, ExpandGradKernels
from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, ExpandGradPlan
from ep.common.primitive.reduce import ReducePlan
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.cpu.primitive.reduce import KERNELS as REDUCE_KERNELS, sum_block
from ep.include.primitive.expand_grad import ExpandGradFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.reduce import ReduceOp

# dst elements per task along a kept innermost dim.
BLOCK = 512


@template("accumulate", "load", "SUM_BLOCK")
def _sum_view(src, offset, step, n):
    # The sum of src[offset + j * step] for j < n, by unsigned offsets (ParallelFor's rule; with
    # step 1 as fast as the contiguous slice it replaced).
    s, st = np.uint64(offset), np.uint64(step)
    if bound.SUM_BLOCK:  # a constant, 0 but for float sums: the branch is compiled for them only
        # Blocks of SUM_BLOCK added in any order (LLVM vectorizes them), the blocks' sums added
        # with compensation, as Reduce's blocked sums: as accurate as NumPy's pairwise sum.
        a = c = bound.accumulate(0)
        whole = np.uint64(n // bound.SUM_BLOCK * bound.SUM_BLOCK)
        for j0 in range(np.uint64(0), whole, np.uint64(bound.SUM_BLOCK)):
            total = bound.accumulate(0)
            for j in range(j0, j0 + np.uint64(bound.SUM_BLOCK)):
                total = add_reassociable(total, bound.load(src[s + j * st]))
            a, c = kahan_add(a, c, total)
        total = bound.accumulate(0)
        for j in range(whole, np.uint64(n)):
            total = add_reassociable(total, bound.load(src[s + j * st]))
        a, c = kahan_add(a, c, total)
        return a - c
    total = bound.accumulate(0)
    for j in range(np.uint64(n)):
        total = add_reassociable(total, bound.load(src[s + j * st]))
    return total


@template("accumulate", "load", "store", "sum_view")
def _expand_grad(start, stop, args):
    # Tasks [start, stop). A task is a block of dst elements along dst's innermost dim. When that
    # dim is kept, the block is contiguous in src too, and adding whole src rows into `sums`
    # (host-allocated accumulators) reads src in order; otherwise the block is one element summing
    # runs of its innermost summed dim. Loops index by unsigned offsets, never slices (ParallelFor's
    # rule).
    src, dst, sums, strides, pieces, row, num_outer, inner, inner_stride = args
    # The plan's four stride tuples, one row each (an array: ParallelFor passes no tuple nested in args).
    dst_strides, src_strides = strides[0], strides[1]
    outer_strides, outer_src_strides = strides[2], strides[3]
    for task in range(start, stop):
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
                total += bound.sum_view(src, offset, inner_stride, inner)
            dst[first] = bound.store(total)
        else:
            f = np.uint64(first)
            for b in range(np.uint64(n)):
                sums[f + b] = 0
            for k in range(num_outer):
                offset = base + map_offset(k, outer_strides, outer_src_strides)
                for j in range(inner):
                    s = np.uint64(offset + j * inner_stride)
                    for b in range(np.uint64(n)):
                        sums[f + b] += bound.load(src[s + b])
            for b in range(np.uint64(n)):
                dst[f + b] = bound.store(sums[f + b])


class CpuExpandGradKernels(ExpandGradKernels):
    @function_cache("kernels")
    def kernel(self, dtype: DataType) -> ParallelFor:
        """dtype's span over the tasks."""
        accumulate, load = ACCUMULATE_DTYPES[dtype], load_fn(dtype, DeviceType.kCPU)
        block = sum_block() if np.dtype(accumulate).kind == "f" else 0
        sum_view = scalar_function(specialize(_sum_view, f"sum_view_{dtype.value}", accumulate=accumulate, load=load, SUM_BLOCK=block))
        bindings = {"accumulate": accumulate, "load": load, "store": store_fn(dtype, DeviceType.kCPU), "sum_view": sum_view}
        storage, int64 = dtype.storage_dtype, np.dtype(np.int64)
        arg_types = (
            input_array(storage),
            output_array(storage),
            output_array(np.dtype(accumulate)),
            input_array(int64, 2),
            *(numba.int64,) * 5,
        )
        return ParallelFor(_expand_grad, f"expand_grad_{dtype.value}", arg_types, **bindings)

    def launch(self, stream, dtype: DataType, plan: ExpandGradPlan, src, dst) -> None:
        accumulate = np.dtype(ACCUMULATE_DTYPES[dtype])
        if len(plan.summed_dims) == 1 and accumulate.kind == "f":
            # One run of summed dims, of floats: Reduce's sum, whose blocked sums over columns took
            # 0.86 ms, not 2.0, summing float32 (4096, 4096) over its first dim (and erred a tenth).
            outer = plan.count // plan.row
            _reduce_run(dtype, plan.src_count, outer, plan.summed_dims[0], plan.row)(stream, src, dst)
            return
        if plan.stages and accumulate == dtype.storage_dtype:
            # Runs apart, of float32 or float64 (partial sums in float16 would round): Reduce's sums
            # run by run: float32 (64, 64, 64) into (1, 64, 1) took 26 us in one span, 10 us so; (32, 64,
            # 56, 56) into (1, 64, 1, 1) 158 and 131 us (AMD EPYC).
            for k, (outer, length, inner) in enumerate(plan.stages):
                partial = dst if k == len(plan.stages) - 1 else np.empty(outer * inner, accumulate)
                _reduce_run(dtype, outer * length * inner, outer, length, inner)(stream, src, partial)
                src = partial
            return
        pieces = -(-plan.row // BLOCK)
        sums = np.empty(plan.count if plan.row > 1 else 0, ACCUMULATE_DTYPES[dtype])
        strides = np.array((plan.dst_strides, plan.src_strides, plan.outer_strides, plan.outer_src_strides), np.int64)
        args = (src, dst, sums, strides, pieces, plan.row, plan.num_outer, plan.inner, plan.inner_stride)
        work = plan.count * plan.num_outer * plan.inner
        self.kernel(dtype).run(args, plan.count // plan.row * pieces, work)

    def all_kernels(self) -> Iterator[object]:
        for dtype in ACCUMULATE_DTYPES:
            yield self.kernel(dtype)


@function_cache("plans")
def _reduce_run(dtype: DataType, src_count: int, outer: int, length: int, inner: int):
    """Reduce's run of a sum of dtype over (outer, length, inner) into outer * inner elements."""
    plan = ReducePlan(src_count, outer * inner, outer, length, inner, 1.0)
    return REDUCE_KERNELS.launcher(ReduceOp.kSum, dtype, dtype, plan)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU, ExpandGradFactory, ExpandGradFactoryImpl(DeviceType.kCPU, CpuExpandGradKernels())
)
