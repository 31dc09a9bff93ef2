"""Reduce's CPU kernels: a span over tasks of (row or block of columns, slice of the reduced run),
run by ParallelFor, and a span merging the slices' states when a reduction was cut into slices.

src is read as (outer, length, inner). With inner == 1 a task reduces a contiguous run of a row:
an op with a block (ReduceFormulas.block: sums, products, extremes, any, all) takes blocks of it
in vector lanes, the others step four interleaved states (four chains in flight). With inner > 1
a task reduces adjacent columns, taking whole rows of them in order (a loop LLVM vectorizes across
the columns), as many as COLS_BYTES of their states' first member hold. When the outputs alone
would leave threads idle, each reduction is cut into slices whose states a second span merges, in
slice order: the same result every run (the slices depend only on the size and the pool's thread
count, NUMBA_NUM_THREADS).
"""
from __future__ import annotations

from typing import Callable

import numba
import numpy as np

from ep.common.cpu_target import full_vector_width_in_use
from ep.common.jit import bound, linked, scalar_function, template
from ep.common.math.convert import store_fn
from ep.common.math.reduce import accumulate_dtype, formulas
from ep.common.primitive.reduce import FusedSource, ReduceFactoryImpl, ReduceKernels, ReducePlan, source_element, source_type
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import PARALLEL_THRESHOLD, ParallelFor, input_array, output_array
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.reduce import ReduceFactory, ReduceOp

# Bytes of column totals (or of states' first members) a task over columns takes rows into: its
# rows' reads are long runs. Over dim 0 of float32 (4096, 4096), 256 columns a task against 2048:
# sums 5.3 against 0.83 ms (as long as a whole sum; float64 ran as fast with 1024 and 2048),
# argmax 8.5 against 5.2 ms, var 6.0 against 4.1 ms.
COLS_BYTES = 1 << 13
# Elements a slice of a cut reduction holds at least: fewer would cost more in states than they save.
MIN_SLICE = 1 << 14
# Below this many bytes read, a reduction runs on the calling thread: a read-only pass outruns the
# threads' start (sums of 128 to 256 KiB took 2 to 2.5 us less, of 512 KiB rows and of 1 MiB more).
SERIAL_BYTES = 1 << 19
# Tasks per thread a cut reduction aims at, so that uneven tasks even out.
TASKS_PER_THREAD = 4


def sum_block() -> int:
    """Elements a blocked sum adds in any order (in vector lanes) before compensating. Each block
    ends in a horizontal sum and a compensated step: a 64 MiB sum on one core of an AMD EPYC
    (512-bit vectors) took 1.65 ms with blocks of 256, 1.41 ms with 512 (torch 1.37). Longer runs
    in a lane lose accuracy: a sum of 10**6 float32 0.1s errs as NumPy's pairwise sum with 512
    there (and 256 compiled for AVX2), twice as much with 1024 (or 512 compiled for AVX2). Every
    op with a block takes blocks of this many: sums set it, the others' totals lose nothing."""
    return 512 if full_vector_width_in_use() else 256


@scalar_function
def _no_block(total, x):
    # The block slot of an op without one (never called: BLOCK is 0).
    return total


@scalar_function
def _no_quick(total, check, x):
    # The quick slot of an op without one (never called: QUICK is 0).
    return total, check


@scalar_function
def _no_suspect(total, check):
    # The suspect slot of an op without a quick block (never called).
    return True


def _cols(acc: np.dtype) -> int:
    """Columns a task of a reduction over columns (inner > 1) takes: as many as COLS_BYTES of
    their states' first member (or their totals) hold."""
    return COLS_BYTES // acc.itemsize


@scalar_function
def task_span(task: int, parts: int, blocks: int, chunk: int, length: int, cols: int) -> tuple[int, int, int, int, int]:
    """(row, first column, part, r0, r1) of task = (row * blocks + block) * parts + part: the
    cols columns of row from block * cols on (its one run where inner is 1), elements [r0, r1)
    of their runs (the part-th chunk). Reduce's and Scan's tasks."""
    row_block = task // parts
    part = task - row_block * parts
    row = row_block // blocks
    r0 = part * chunk
    r1 = r0 + chunk if r0 + chunk < length else length
    return row, (row_block - row * blocks) * cols, part, r0, r1


@template("init", "step", "merge", "element", "finish", "store", "block", "quick", "suspect", "ACC", "TOTAL", "IDENTITY", "BLOCK", "QUICK", "COLS")
def _reduce(start, stop, args):
    # Tasks [start, stop): task = (row * blocks + block) * slices + slice. A whole reduction stores
    # its result in dst; a slice stores its state in states/indices at slice * count + output.
    # src is read through element(src, i) (an array's, or a fused expression's over several
    # arrays), never sliced, and passed to no inlined function that branches: either costs atomic
    # reference counts, which contend between threads (source_element).
    src, dst, states, indices, length, inner, chunk, slices, blocks, count, correction = args
    parts = states.size // 3
    if inner == 1:
        # Rows: a loop of their own (the columns' held arrays and branches left out of its
        # registers), and no division where a task is a whole row: sums of 4096 rows of 64 took
        # 1.6-1.7x as long with the divisions, 1.05-1.1x as one loop with the columns.
        for task in range(start, stop):
            if slices == 1:
                row, part, r0, r1 = task, 0, 0, length
            else:
                row, _, part, r0, r1 = task_span(task, slices, 1, chunk, length, 1)
            first = row * length + r0
            n = r1 - r0
            if bound.BLOCK:  # a constant, 0 for ops without a block: the branch is compiled for the others only
                # Each block of BLOCK taken in any order (LLVM vectorizes it), the blocks' totals
                # stepped into one state (a compensated one for float sums).
                whole = n // bound.BLOCK * bound.BLOCK
                state = bound.init()
                for j0 in range(0, whole, bound.BLOCK):
                    # A constant trip count: LLVM vectorizes it (variable bounds ran at half the speed).
                    total = bound.TOTAL(bound.IDENTITY)
                    suspect = True
                    if bound.QUICK:  # a constant, as BLOCK
                        check = bound.ACC(0)
                        for j in range(bound.BLOCK):
                            total, check = bound.quick(total, check, bound.element(src, first + j0 + j))
                        suspect = bound.suspect(total, check)
                        if suspect:
                            total = bound.TOTAL(bound.IDENTITY)
                    if suspect:
                        for j in range(bound.BLOCK):
                            total = bound.block(total, bound.element(src, first + j0 + j))
                    state = bound.step(state, total, r0 + j0)
                total = bound.TOTAL(bound.IDENTITY)
                for j in range(whole, n):
                    total = bound.block(total, bound.element(src, first + j))
                state = bound.step(state, total, r0 + whole)
            else:
                # One output: four states over a contiguous run, merged in a fixed order.
                s0 = s1 = s2 = s3 = bound.init()
                quads = n // 4 * 4
                for j in range(0, quads, 4):
                    s0 = bound.step(s0, bound.element(src, first + j), r0 + j)
                    s1 = bound.step(s1, bound.element(src, first + j + 1), r0 + j + 1)
                    s2 = bound.step(s2, bound.element(src, first + j + 2), r0 + j + 2)
                    s3 = bound.step(s3, bound.element(src, first + j + 3), r0 + j + 3)
                for j in range(quads, n):
                    s0 = bound.step(s0, bound.element(src, first + j), r0 + j)
                state = bound.merge(bound.merge(s0, s1), bound.merge(s2, s3))
            if slices == 1:
                dst[row] = bound.store(bound.finish(state, length, correction))
            else:
                p = part * count + row
                states[p], states[parts + p], states[2 * parts + p], indices[p] = state[0], state[1], state[2], state[3]
        return
    # A task's states of its columns (and, for an op with a block, their totals: the fourth row).
    held = np.empty((4, bound.COLS), bound.ACC)
    held_index = np.empty(bound.COLS, np.int64)
    for task in range(start, stop):
        row, first_col, part, r0, r1 = task_span(task, slices, blocks, chunk, length, bound.COLS)
        base = row * length * inner
        width = bound.COLS if bound.COLS < inner - first_col else inner - first_col
        a, b, c = held[0, :width], held[1, :width], held[2, :width]
        ix = held_index[:width]
        s = bound.init()
        for k in range(width):
            a[k], b[k], c[k], ix[k] = s[0], s[1], s[2], s[3]
        if bound.BLOCK:
            # Each column's total of a block of BLOCK rows, stepped into its state once a block.
            # Rows are taken four at a time (a loop LLVM vectorizes across the columns): one row
            # at a time, the totals' loads and stores held sums to 60% of the speed.
            totals = held[3, :width]
            for rb in range(r0, r1, bound.BLOCK):
                re = rb + bound.BLOCK if rb + bound.BLOCK < r1 else r1
                quads = rb + (re - rb) // 4 * 4
                for k in range(width):
                    totals[k] = bound.IDENTITY
                for r in range(rb, quads, 4):
                    line = base + r * inner + first_col
                    for k in range(width):
                        # (t + (x0 + x1)) + (x2 + x3) for sums: half the roundings fall on the totals.
                        pair = bound.block(bound.block(bound.ACC(bound.IDENTITY), bound.element(src, line + k)), bound.element(src, line + inner + k))
                        other = bound.block(bound.block(bound.ACC(bound.IDENTITY), bound.element(src, line + 2 * inner + k)), bound.element(src, line + 3 * inner + k))
                        totals[k] = bound.block(bound.block(totals[k], pair), other)
                for r in range(quads, re):
                    line = base + r * inner + first_col
                    for k in range(width):
                        totals[k] = bound.block(totals[k], bound.element(src, line + k))
                for k in range(width):
                    t = bound.step((a[k], b[k], c[k], ix[k]), totals[k], rb)
                    a[k], b[k], c[k], ix[k] = t[0], t[1], t[2], t[3]
        else:
            for r in range(r0, r1):
                line = base + r * inner + first_col
                for k in range(width):
                    t = bound.step((a[k], b[k], c[k], ix[k]), bound.element(src, line + k), r)
                    a[k], b[k], c[k], ix[k] = t[0], t[1], t[2], t[3]
        for k in range(width):
            out = row * inner + first_col + k
            held_state = (a[k], b[k], c[k], ix[k])
            if slices == 1:
                dst[out] = bound.store(bound.finish(held_state, length, correction))
            else:
                p = part * count + out
                states[p], states[parts + p], states[2 * parts + p], indices[p] = held_state[0], held_state[1], held_state[2], held_state[3]


@template("init", "merge", "finish", "store")
def _merge_slices(start, stop, args):
    # Outputs [start, stop): their slices' states merged in slice order, then finished.
    dst, states, indices, slices, count, length, correction = args
    parts = states.size // 3
    for out in range(start, stop):
        state = bound.init()
        for part in range(slices):
            p = part * count + out
            state = bound.merge(state, (states[p], states[parts + p], states[2 * parts + p], indices[p]))
        dst[out] = bound.store(bound.finish(state, length, correction))


class CpuReduceKernels(ReduceKernels):
    @function_cache("kernels")
    def kernel(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, merging: bool = False, source: FusedSource | None = None) -> ParallelFor:
        """The span of op from src_dtype into dst_dtype, or (merging) the span merging its slices;
        source: a fused expression's (ReduceKernels.launch), its arguments read instead of an array."""
        rule = formulas(op.value, src_dtype.compute_dtype)
        acc = accumulate_dtype(op.value, src_dtype.compute_dtype)
        store = store_fn(dst_dtype, DeviceType.kCPU)
        acc_type, int64 = numba.from_dtype(acc), numba.int64
        name = f"reduce_{op.value}_{src_dtype.value}_{dst_dtype.value}"
        if merging:
            arg_types = (output_array(dst_dtype.storage_dtype), input_array(acc), input_array(np.dtype(np.int64)), int64, int64, int64, acc_type)
            return ParallelFor(_merge_slices, name + "_merge", arg_types, init=rule.init, merge=linked(rule.merge), finish=linked(rule.finish), store=store)
        arg_types = (
            source_type(src_dtype, source, input_array), output_array(dst_dtype.storage_dtype), output_array(acc),
            output_array(np.dtype(np.int64)), *(int64,) * 6, acc_type,
        )
        # step, merge and finish linked: _reduce calls them at a dozen places (block, in the
        # vectorized loops, stays inlined).
        return ParallelFor(
            _reduce, name if source is None else name.replace("reduce_", "reduce_fused_"), arg_types, init=rule.init,
            step=linked(rule.step), merge=linked(rule.merge), finish=linked(rule.finish), store=store, block=rule.block or _no_block,
            quick=rule.quick or _no_quick, suspect=rule.suspect or _no_suspect, ACC=acc.type,
            TOTAL=rule.total_type or acc.type, IDENTITY=rule.identity,
            BLOCK=sum_block() if rule.block else 0, QUICK=int(rule.quick is not None), COLS=_cols(acc),
            # A float16 NaN's payload need not be kept: a reduction's float16 result is float16's
            # quiet NaN of either sign (x86's conversion quiets a signalling one).
            element=source_element(DeviceType.kCPU, src_dtype, source, nan_payload=False),
        )

    def launcher(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, plan: ReducePlan, source=None) -> Callable[..., None]:
        acc = accumulate_dtype(op.value, src_dtype.compute_dtype)
        correction = acc.type(plan.correction if acc.kind == "f" else 0)
        count, length = plan.dst_count, plan.length
        cols = _cols(acc)
        blocks = -(-plan.inner // cols)
        tasks = plan.outer * blocks
        # work (elements touched) 0: on the calling thread, uncut.
        work = max(plan.src_count, count) if plan.src_count * src_dtype.itemsize >= SERIAL_BYTES else 0
        slices = _slices(tasks, length, min(plan.inner, cols), work)
        chunk = -(-length // slices) if length else 0
        slices = -(-length // chunk) if length else 1
        first = self.kernel(op, src_dtype, dst_dtype, False, source).run
        # Built with the first plan, cut or not: a small first call leaves a large one nothing to compile.
        merge = self.kernel(op, src_dtype, dst_dtype, True).run
        scalars = (length, plan.inner, chunk, slices, blocks, count, correction)
        if slices == 1:
            states, indices = np.empty(0, acc), np.empty(0, np.int64)  # not written: one for every launch
            return lambda stream, src, dst: first((src, dst, states, indices) + scalars, tasks, work)

        def run(stream, src, dst) -> None:
            states, indices = np.empty(3 * count * slices, acc), np.empty(count * slices, np.int64)
            first((src, dst, states, indices) + scalars, tasks * slices, work)
            merge((dst, states, indices, slices, count, length, correction), count, count * slices)

        return run


def _slices(tasks: int, length: int, width: int, work: int) -> int:
    """How many slices to cut each reduction into when the outputs give fewer than TASKS_PER_THREAD
    tasks a thread: the fewest that share the tasks out evenly among the threads (ParallelFor gives
    each thread one contiguous run of them), else that many; each of at least MIN_SLICE elements.
    Each slice costs a state stored and merged: sums of 3 rows of 65536 took 8.1 us, not 8.7, in
    2 slices a row, not 3."""
    threads = numba.config.NUMBA_NUM_THREADS
    if work < PARALLEL_THRESHOLD or tasks >= TASKS_PER_THREAD * threads:
        return 1
    wanted = -(-TASKS_PER_THREAD * threads // tasks)
    even = next((k for k in range(-(-threads // tasks), wanted) if tasks * k % threads == 0), wanted)
    return max(1, min(even, length * width // MIN_SLICE))


# One instance, so that ReduceFused (reduce_fused.py) launches the kernels Reduce compiled.
KERNELS = CpuReduceKernels()
REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ReduceFactory, ReduceFactoryImpl(DeviceType.kCPU, KERNELS))
