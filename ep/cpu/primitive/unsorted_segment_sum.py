"""UnsortedSegmentSum on the CPU: a prange over blocks of out's rows, race-free without atomics;
one build for every size, serial below PARALLEL_THRESHOLD.

A task owns rows [r0, r1) of one (batch, outer) slab of out: it zeroes them, then adds every data
row whose segment id falls in them, in id order, so no two tasks write one element.
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import numba
import numpy as np
from numba import prange

from ep.common.jit import bound, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.primitive.gather import GatherSizes, IndexedKernels, first_bad_index, gather_row
from ep.common.primitive.unsorted_segment_sum import SUM_TYPES, UnsortedSegmentSumFactoryImpl, accumulator_dtype
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel, buffer_type, call_task
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.unsorted_segment_sum import UnsortedSegmentSumFactory


@template("load", "store", "FINISH")
def _segment_task(ids, data, acc, out, task, row_blocks, rows_per_block, num_ids, outer, segments, inner, lo, hi, wrap):
    # Task `task`: rows [r0, r1) of one (batch, outer) slab of out, zeroed, then every data row
    # whose id falls in them added, in id order.
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


@template()
def _segment_sum(task, ids, data, acc, out, index_count, tasks, row_blocks, rows_per_block, num_ids, outer, segments, inner, lo, hi, wrap, check, parallel):
    # One build for every size: parallel picks the prange over tasks or a serial loop; both call
    # the task, compiled on its own, by its address: Numba's parallel passes see a loop around one
    # call, and the task is compiled once, not again inside the kernel and its parallel loop.
    # With check, a bad id ends the launch before any write. np.int64: prange's index is unsigned.
    if check:
        bad = first_bad_index(ids, index_count, lo, hi, segments, wrap)
        if bad >= 0:
            return bad
    if parallel:
        for t in prange(tasks):
            call_task(task, (ids, data, acc, out, np.int64(t), row_blocks, rows_per_block, num_ids, outer, segments, inner, lo, hi, wrap))
    else:
        for t in range(tasks):
            call_task(task, (ids, data, acc, out, np.int64(t), row_blocks, rows_per_block, num_ids, outer, segments, inner, lo, hi, wrap))
    return -1


_SIZES = (numba.int64,) * 13


class _Plan(NamedTuple):
    """The kernel of a launch, the task it calls and its size arguments after the buffers."""

    kernel: CpuKernel
    task: CpuKernel
    args: tuple


class CpuUnsortedSegmentSumKernels(IndexedKernels):
    @functools.cache
    def kernel(self, dtype: DataType) -> tuple[CpuKernel, CpuKernel]:
        """The kernel summing dtype and the task it calls (Numba specializes both per ids dtype)."""
        task = CpuKernel(
            _segment_task,
            f"unsorted_segment_task_{dtype.value}",
            by_address=True,
            load=load_fn(dtype, DeviceType.kCPU),
            store=store_fn(dtype, DeviceType.kCPU),
            FINISH=accumulator_dtype(dtype) is not dtype,
        )
        return CpuKernel(_segment_sum, f"unsorted_segment_sum_{dtype.value}"), task

    def plan(self, dtype, indices_dtype, sizes: GatherSizes, wrap, check) -> _Plan:
        slabs = sizes.batch * sizes.outer
        # Split each slab's rows into blocks so that there are tasks for every thread.
        row_blocks = min(sizes.gather, -(-4 * numba.get_num_threads() // max(slabs, 1)))
        rows_per_block = -(-sizes.gather // row_blocks) if row_blocks else 0
        row_blocks = -(-sizes.gather // rows_per_block) if rows_per_block else 0
        tasks = slabs * row_blocks if sizes.inner else 0
        args = (sizes.index_count, tasks, row_blocks, rows_per_block, sizes.num_indices, sizes.outer, sizes.gather)
        parallel = int(sizes.params_count + sizes.gathered_count >= PARALLEL_THRESHOLD)
        args += (sizes.inner, sizes.lo, sizes.hi, int(wrap), int(check), parallel)
        return _Plan(*self.kernel(dtype), args)

    def run(self, primitive, plan, stream, ids, data, out) -> int:
        sizes, plan = plan
        ids, data, out = primitive.checked_buffers(sizes, ids, data, out)
        if sizes.params_count == 0 and not primitive.check:
            return -1
        acc_dtype = accumulator_dtype(primitive.dtype)
        acc = out if acc_dtype is primitive.dtype else np.empty(sizes.params_count, acc_dtype.dtype)
        kernel, task = _compiled(plan.kernel, plan.task, buffer_type(ids), buffer_type(data), buffer_type(acc), buffer_type(out))
        return kernel(task, ids, data, acc, out, *plan.args)

    def all_kernels(self):
        for dtype in SUM_TYPES:
            yield from self.kernel(dtype)


@functools.cache
def _compiled(kernel: CpuKernel, task: CpuKernel, *buffer_types: numba.types.Array) -> tuple[Callable, int]:
    """kernel's compiled entry point for these buffer types (ids, data, acc, out), and the address
    of task compiled for the very types the kernel passes it."""
    return kernel.entry(numba.int64, *buffer_types, *_SIZES), task.task(*buffer_types, *_SIZES[:10])


REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU,
    UnsortedSegmentSumFactory,
    UnsortedSegmentSumFactoryImpl(DeviceType.kCPU, CpuUnsortedSegmentSumKernels()),
)
