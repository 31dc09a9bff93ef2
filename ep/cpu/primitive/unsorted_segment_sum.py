"""UnsortedSegmentSum on the CPU: ParallelFor over blocks of out's rows, race-free without atomics;
one build for every size.

A task owns rows [r0, r1) of one (batch, outer) slab of out: it zeroes them, then adds every data
row whose segment id falls in them, in id order, so no two tasks write one element. With check,
the ids are checked on the host first, so that a bad one ends the launch before any write.
"""
from __future__ import annotations

import numba
import numpy as np

from ep.common.jit import bound, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.gather import GatherSizes, IndexedKernels, first_bad_index, gather_row
from ep.common.primitive.unsorted_segment_sum import SUM_TYPES, UnsortedSegmentSumFactoryImpl, accumulator_dtype
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import ParallelFor, input_array, output_array
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.unsorted_segment_sum import UnsortedSegmentSumFactory


@template("load", "store", "FINISH")
def _segment_tasks(start, stop, args):
    # Tasks [start, stop). Task t: rows [r0, r1) of one (batch, outer) slab of out, zeroed, then
    # every data row whose id falls in them added, in id order.
    ids, data, acc, out, row_blocks, rows_per_block, num_ids, outer, segments, inner, lo, hi, wrap = args
    for task in range(start, stop):
        batch_outer = task // row_blocks
        r0 = (task - batch_outer * row_blocks) * rows_per_block
        # Not min(): Numba compiles its overload anew in each kernel.
        r1 = r0 + rows_per_block if r0 + rows_per_block < segments else segments
        b = batch_outer // outer
        slab = batch_outer * segments * inner
        for k in range(slab + r0 * inner, slab + r1 * inner):
            acc[k] = 0
        for i in range(num_ids):
            r = gather_row(np.int64(ids[b * num_ids + i]), lo, hi, segments, wrap)
            if r0 <= r < r1:
                dst = np.uint64(slab + r * inner)
                src = np.uint64((batch_outer * num_ids + i) * inner)
                for k in range(np.uint64(inner)):
                    acc[dst + k] += bound.load(data[src + k])
        if bound.FINISH:
            for k in range(slab + r0 * inner, slab + r1 * inner):
                out[k] = bound.store(acc[k])


class CpuUnsortedSegmentSumKernels(IndexedKernels):
    @function_cache("kernels")
    def kernel(self, dtype: DataType, ids_dtype: DataType) -> ParallelFor:
        """The tasks summing dtype by ids of ids_dtype."""
        acc_dtype = accumulator_dtype(dtype)
        storage = dtype.storage_dtype
        arg_types = (
            input_array(ids_dtype.dtype),
            input_array(storage),
            output_array(acc_dtype.storage_dtype),
            output_array(storage),
            *(numba.int64,) * 9,
        )
        return ParallelFor(
            _segment_tasks,
            f"unsorted_segment_sum_{dtype.value}_{ids_dtype.value}",
            arg_types,
            load=load_fn(dtype, DeviceType.kCPU),
            store=store_fn(dtype, DeviceType.kCPU),
            FINISH=acc_dtype is not dtype,
        )

    def plan(self, dtype, indices_dtype, sizes: GatherSizes, wrap, check) -> tuple:
        """The kernel, its task count, its size arguments after the buffers, and its work."""
        slabs = sizes.batch * sizes.outer
        # Split each slab's rows into blocks so that there are tasks for every thread.
        row_blocks = min(sizes.gather, -(-4 * numba.get_num_threads() // max(slabs, 1)))
        rows_per_block = -(-sizes.gather // row_blocks) if row_blocks else 0
        row_blocks = -(-sizes.gather // rows_per_block) if rows_per_block else 0
        tasks = slabs * row_blocks if sizes.inner else 0
        args = (row_blocks, rows_per_block, sizes.num_indices, sizes.outer, sizes.gather, sizes.inner, sizes.lo, sizes.hi, int(wrap))
        return self.kernel(dtype, indices_dtype), tasks, args, sizes.params_count + sizes.gathered_count

    def run(self, primitive, plan, stream, ids, data, out) -> int:
        sizes, (kernel, tasks, args, work) = plan
        if primitive.check and (bad := first_bad_index(ids, sizes, primitive.wrap)) >= 0:
            return bad
        acc_dtype = accumulator_dtype(primitive.dtype)
        acc = out if acc_dtype is primitive.dtype else np.empty(sizes.params_count, acc_dtype.dtype)
        # One task a chunk: tasks are already sized for the threads.
        kernel.run((ids, data, acc, out) + args, tasks, work, 1)
        return -1

    def all_kernels(self):
        for dtype in SUM_TYPES:
            for ids_dtype in INDEX_TYPES:
                yield self.kernel(dtype, ids_dtype)


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU,
    UnsortedSegmentSumFactory,
    UnsortedSegmentSumFactoryImpl(DeviceType.kCPU, CpuUnsortedSegmentSumKernels()),
)
