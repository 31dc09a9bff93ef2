"""Scan's CPU kernels: a span over tasks of (row or block of columns, chunk of the run), run by
ParallelFor, in one pass, or in three where the runs alone would leave threads idle.

src is read as (outer, length, inner). With inner == 1 a task steps along a contiguous run of a
row; with inner > 1 it steps up to BLOCK_COLS adjacent columns together, row by row (a loop LLVM
vectorizes across columns). A long run is cut into chunks of a size fixed by the layout alone
(not the thread count, so results do not depend on it): a first pass sums each chunk but the last
into states, a second turns each run's states into the carries that enter its chunks, in order,
and the third steps each chunk from its carry, writing the results.
"""
from __future__ import annotations

from typing import Iterator

import numba
import numpy as np

from ep.common.jit import bound, linked, template
from ep.common.math.convert import load_fn, store_fn
from ep.common.math.intrinsics import add_reassociable
from ep.common.math.reduce import scan_accumulate_dtype, scan_formulas
from ep.common.primitive.scan import INDEX_OPS, ScanFactoryImpl, ScanKernels, ScanPlan, combinations
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import PARALLEL_THRESHOLD, ParallelFor, input_array, output_array
from ep.cpu.primitive.reduce import task_span
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.scan import ScanFactory

# Columns a task scans together: their states stay in L1 as rows of them pass.
BLOCK_COLS = 256
# Elements a chunk of a cut run holds at least: a chunk costs a state and a second read of it.
MIN_CHUNK = 1 << 15
# Rows a task steps side by side, where runs are rows.
ROWS = 4
# Tasks a cut launch aims at: enough for the threads of any machine to even out (a constant, so
# that where a run is cut does not depend on the thread count).
TASKS = 64


@template("init", "step", "merge", "finish", "load", "store", "ACC", "SUMS", "TOTALS", "EXCLUSIVE")
def _scan(start, stop, args):
    # Tasks [start, stop): task = row_block * parts + part, elements [part * chunk, + chunk) of
    # its runs (task_span, as Reduce's). A state of run `line` and chunk `part` is at
    # p = part * lines + line of each third of states (and of indices). TOTALS: each chunk's
    # state stored there; else each chunk steps from its carry there (when cut) and writes dst.
    src, dst, states, indices, outer, length, inner, chunk, parts, blocks, group, lines, cut = args
    third = states.size // 3
    held = np.empty((3, BLOCK_COLS), bound.ACC)
    held_index = np.empty(BLOCK_COLS, np.int64)
    for task in range(start, stop):
        row_index, first_col, part, r0, r1 = task_span(task, parts, blocks, chunk, length, BLOCK_COLS)
        row = row_index * group
        base = row * length * inner
        width = BLOCK_COLS if BLOCK_COLS < inner - first_col else inner - first_col
        a, b, c = held[0, :width], held[1, :width], held[2, :width]
        ix = held_index[:width]
        first_line = part * lines + row * inner + first_col
        for k in range(width):
            if cut and not bound.TOTALS:
                p = first_line + k
                a[k], b[k], c[k], ix[k] = states[p], states[third + p], states[2 * third + p], indices[p]
            else:
                s = bound.init()
                a[k], b[k], c[k], ix[k] = s[0], s[1], s[2], s[3]
        if bound.TOTALS and bound.SUMS and inner == 1:
            # A chunk's sum in any order (LLVM vectorizes it): only the carries take it.
            total = bound.ACC(0)
            for j in range(base + r0, base + r1):
                total = add_reassociable(total, bound.ACC(bound.load(src[j])))
            a[0] = a[0] + total
        elif bound.TOTALS and inner == 1:
            # A chunk's state as four quarters stepped side by side (four chains in flight, not
            # one), merged in order.
            run = src[base + r0 : base + r1]
            q = (r1 - r0) // 4
            t0 = t1 = t2 = t3 = bound.init()
            for j in range(q):
                t0 = bound.step(t0, bound.load(run[j]), r0 + j)
                t1 = bound.step(t1, bound.load(run[q + j]), r0 + q + j)
                t2 = bound.step(t2, bound.load(run[2 * q + j]), r0 + 2 * q + j)
                t3 = bound.step(t3, bound.load(run[3 * q + j]), r0 + 3 * q + j)
            for j in range(4 * q, r1 - r0):
                t3 = bound.step(t3, bound.load(run[j]), r0 + j)
            s0 = bound.merge(bound.merge(bound.merge(t0, t1), t2), t3)
            a[0], b[0], c[0], ix[0] = s0[0], s0[1], s0[2], s0[3]
        elif inner == 1 and group == 4 and row + 4 <= outer:
            # Four rows stepped side by side: four dependency chains in flight, not one.
            s0 = s1 = s2 = s3 = bound.init()
            # Slices indexed from 0: no negative index to wrap around.
            src0, src1, src2, src3 = src[base : base + length], src[base + length : base + 2 * length], src[base + 2 * length : base + 3 * length], src[base + 3 * length : base + 4 * length]
            dst0, dst1, dst2, dst3 = dst[base : base + length], dst[base + length : base + 2 * length], dst[base + 2 * length : base + 3 * length], dst[base + 3 * length : base + 4 * length]
            for r in range(length):
                x0, x1, x2, x3 = bound.load(src0[r]), bound.load(src1[r]), bound.load(src2[r]), bound.load(src3[r])
                if bound.EXCLUSIVE:
                    dst0[r], dst1[r] = bound.store(bound.finish(s0, r, 0)), bound.store(bound.finish(s1, r, 0))
                    dst2[r], dst3[r] = bound.store(bound.finish(s2, r, 0)), bound.store(bound.finish(s3, r, 0))
                s0, s1, s2, s3 = bound.step(s0, x0, r), bound.step(s1, x1, r), bound.step(s2, x2, r), bound.step(s3, x3, r)
                if not bound.EXCLUSIVE:
                    dst0[r], dst1[r] = bound.store(bound.finish(s0, r + 1, 0)), bound.store(bound.finish(s1, r + 1, 0))
                    dst2[r], dst3[r] = bound.store(bound.finish(s2, r + 1, 0)), bound.store(bound.finish(s3, r + 1, 0))
        elif inner == 1:
            # Runs one after another (a group's last rows, or a chunk of a cut run), the state in
            # registers (an array's would put a store on every step's chain).
            for row_k in range(row, min(row + group, outer)):
                row_base = row_k * length
                s0 = (a[0], b[0], c[0], ix[0]) if row_k == row else bound.init()
                # Slices indexed from 0: no negative index to wrap around.
                run_src, run_dst = src[row_base + r0 : row_base + r1], dst[row_base + r0 : row_base + r1]
                for j in range(r1 - r0):
                    x = bound.load(run_src[j])
                    if bound.EXCLUSIVE and not bound.TOTALS:
                        run_dst[j] = bound.store(bound.finish(s0, r0 + j, 0))
                    s0 = bound.step(s0, x, r0 + j)
                    if not bound.EXCLUSIVE and not bound.TOTALS:
                        run_dst[j] = bound.store(bound.finish(s0, r0 + j + 1, 0))
                a[0], b[0], c[0], ix[0] = s0[0], s0[1], s0[2], s0[3]
        else:
            for r in range(r0, r1):
                row_start = base + r * inner + first_col
                line_src, line_dst = src[row_start : row_start + width], dst[row_start : row_start + width]
                for k in range(width):
                    x = bound.load(line_src[k])
                    s = (a[k], b[k], c[k], ix[k])
                    if bound.EXCLUSIVE and not bound.TOTALS:
                        line_dst[k] = bound.store(bound.finish(s, r, 0))
                    s = bound.step(s, x, r)
                    a[k], b[k], c[k], ix[k] = s[0], s[1], s[2], s[3]
                    if not bound.EXCLUSIVE and not bound.TOTALS:
                        line_dst[k] = bound.store(bound.finish(s, r + 1, 0))
        if bound.TOTALS:
            for k in range(width):
                p = first_line + k
                states[p], states[third + p], states[2 * third + p], indices[p] = a[k], b[k], c[k], ix[k]


@template("init", "merge")
def _carry(start, stop, args):
    # Runs [start, stop): each chunk's state (the last chunk's is not made) replaced by the merge
    # of the states of the chunks before it.
    states, indices, parts, lines = args
    third = states.size // 3
    for line in range(start, stop):
        carry = bound.init()
        for part in range(parts):
            p = part * lines + line
            held = (states[p], states[third + p], states[2 * third + p], indices[p])
            states[p], states[third + p], states[2 * third + p], indices[p] = carry[0], carry[1], carry[2], carry[3]
            if part + 1 < parts:
                carry = bound.merge(carry, held)


class CpuScanKernels(ScanKernels):
    @function_cache("kernels")
    def kernel(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, exclusive: bool, stage: str = "scan") -> ParallelFor:
        """op's span from src_dtype into dst_dtype: stage "scan" (the only pass, or the last),
        "totals" (a cut run's chunk states) or "carry"."""
        rule = scan_formulas(op.value, src_dtype.compute_dtype)
        acc = scan_accumulate_dtype(op.value, src_dtype.compute_dtype)
        name = f"scan_{op.value}_{src_dtype.value}_{dst_dtype.value}{'_exclusive' if exclusive else ''}_{stage}"
        if stage == "carry":
            return ParallelFor(_carry, name, (output_array(acc), output_array(np.dtype(np.int64)), numba.int64, numba.int64), init=rule.init, merge=linked(rule.merge))
        arg_types = (
            input_array(src_dtype.storage_dtype), output_array(dst_dtype.storage_dtype), output_array(acc),
            output_array(np.dtype(np.int64)), *(numba.int64,) * 8, numba.boolean,
        )
        # step, merge and finish linked: _scan calls each at several places (as Reduce's).
        return ParallelFor(
            _scan, name, arg_types, init=rule.init, step=linked(rule.step), merge=linked(rule.merge), finish=linked(rule.finish), load=load_fn(src_dtype, DeviceType.kCPU),
            store=store_fn(dst_dtype, DeviceType.kCPU, acc), ACC=acc.type, SUMS=op is ReduceOp.kSum, TOTALS=stage == "totals",
            EXCLUSIVE=exclusive,
        )

    @function_cache("plans")
    def _single(self, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, exclusive: bool) -> tuple:
        """(the state's dtype, the span, empty states and indices) of a launch in one pass: found
        once (a third of a 16-element launch was finding them). A cut run's spans are built with
        it, so that a small first launch leaves a large one nothing to compile."""
        acc = scan_accumulate_dtype(op.value, src_dtype.compute_dtype)
        for stage in ("totals", "carry"):
            self.kernel(op, src_dtype, dst_dtype, False, stage).compile()
        return acc, self.kernel(op, src_dtype, dst_dtype, exclusive), (np.empty(0, acc), np.empty(0, np.int64))

    def launch(self, stream, op: ReduceOp, src_dtype: DataType, dst_dtype: DataType, exclusive: bool, plan: ScanPlan, src, dst) -> None:
        acc, scan, none = self._single(op, src_dtype, dst_dtype, exclusive)
        length, inner = plan.length, plan.inner
        lines = plan.outer * inner
        blocks = -(-inner // BLOCK_COLS)
        tasks = plan.outer * blocks
        chunks = _chunks(tasks, length * min(inner, BLOCK_COLS), plan.count)
        # Rows of a task: four, stepped side by side, where the runs are rows and not cut.
        group = ROWS if inner == 1 and chunks == 1 else 1
        chunk = -(-length // chunks)
        chunks = -(-length // chunk)
        if chunks == 1:
            scan.run((src, dst, *none, plan.outer, length, inner, chunk, 1, blocks, group, lines, False), -(-tasks // group), plan.count)
            return
        # Chunk k's carry: the merge of chunks 0 .. k - 1's states (chunk 0's the state of none).
        states, indices = np.empty(3 * lines * chunks, acc), np.empty(lines * chunks, np.int64)
        totals = self.kernel(op, src_dtype, dst_dtype, False, "totals")
        totals.run((src, dst, states, indices, plan.outer, length, inner, chunk, chunks - 1, blocks, 1, lines, True), tasks * (chunks - 1), plan.count)
        self.kernel(op, src_dtype, dst_dtype, False, "carry").run((states, indices, chunks, lines), lines, lines * chunks)
        scan.run((src, dst, states, indices, plan.outer, length, inner, chunk, chunks, blocks, 1, lines, True), tasks * chunks, plan.count)

    def all_kernels(self) -> Iterator[object]:
        for op, (src, dst) in combinations():
            yield self.kernel(op, src, dst, False, "totals")
            yield self.kernel(op, src, dst, False, "carry")
            for exclusive in (False,) if op in INDEX_OPS else (False, True):
                yield self.kernel(op, src, dst, exclusive)


def _chunks(tasks: int, task_elements: int, count: int) -> int:
    """How many chunks to cut each run into: enough for TASKS tasks when the runs give fewer, each
    of at least MIN_CHUNK elements."""
    if count < PARALLEL_THRESHOLD or tasks >= TASKS:
        return 1
    return max(1, min(-(-TASKS // tasks), task_elements // MIN_CHUNK))


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ScanFactory, ScanFactoryImpl(DeviceType.kCPU, CpuScanKernels()))
