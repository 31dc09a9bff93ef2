"""CPU kernels behind Gather and BatchGather, and the index and gradient kernels ep.ops.gather uses.

Gather is BatchGather with one batch, so one kernel serves both: a prange over chunks of output
rows, each row one contiguous copy of inner units.
"""
from __future__ import annotations

import functools

import numba
import numpy as np
from numba import prange

from ep.common.buffer import storage
from ep.common.convert import load_fn, store_fn
from ep.common.data_type import DataType, as_data_type
from ep.common.device import DeviceType
from ep.common.gather_launch import GatherLaunch, accumulator_dtype
from ep.cpu.kernel import CpuKernel

# The widest move unit on the CPU is 8 bytes: each row is one contiguous loop that LLVM vectorizes
# into SIMD moves whatever the unit, so a 16-byte unit would only halve a trip count.
WIDEST_UNIT = 8

# Rows are split into this many chunks (or fewer), enough to balance any core count.
_CHUNKS = 256


def _gather(indices, in_, out, rows, rows_per_chunk, num_indices, outer, gather, inner, lo, hi):
    for chunk in prange((rows + rows_per_chunk - 1) // rows_per_chunk):
        row = chunk * rows_per_chunk
        stop = min(row + rows_per_chunk, rows)
        # A chunk is cut into segments of rows of one (batch, outer) slab; inside a segment the
        # loops see plain views, which is what lets LLVM vectorize them.
        while row < stop:
            batch_outer = row // num_indices
            i0 = row - batch_outer * num_indices
            count = min(num_indices - i0, stop - row)
            first_index = (batch_outer // outer) * num_indices + i0
            segment_indices = indices[first_index : first_index + count]
            dst = out[row * inner : (row + count) * inner]
            if gather == 0:
                dst[:] = 0
            elif inner == 1:
                src = in_[batch_outer * gather : (batch_outer + 1) * gather]
                for i in range(count):
                    index = np.int64(segment_indices[i])
                    valid = lo <= index <= hi
                    # Always read a row that exists, then select: branch-free, so it vectorizes.
                    value = src[index - lo if valid else 0]
                    dst[i] = value if valid else ZERO  # noqa: F821 (bound by specialize)
            else:
                src = in_[batch_outer * gather * inner : (batch_outer + 1) * gather * inner]
                for i in range(count):
                    index = np.int64(segment_indices[i])
                    # Unsigned offsets: Numba then skips its negative-index wraparound.
                    d = np.uint64(i * inner)
                    if lo <= index <= hi:
                        s = np.uint64((index - lo) * inner)
                        for k in range(np.uint64(inner)):
                            dst[d + k] = src[s + k]
                    else:
                        for k in range(np.uint64(inner)):
                            dst[d + k] = ZERO  # noqa: F821 (bound by specialize)
            row += count


@functools.cache
def _gather_kernel(indices_dtype: np.dtype, unit_dtype: np.dtype) -> CpuKernel:
    # The kernel depends on the index type and the move unit only, never on the params dtype.
    return CpuKernel(_gather, f"gather_{indices_dtype.name}_{unit_dtype.name}", ZERO=unit_dtype.type(0))


def launch_gather(launch: GatherLaunch) -> None:
    """Run a checked Gather or BatchGather launch."""
    rows = launch.rows
    rows_per_chunk = -(-rows // _CHUNKS)
    kernel = _gather_kernel(launch.indices.dtype, launch.out.dtype)
    kernel(
        rows * launch.inner,
        launch.indices,
        launch.in_,
        launch.out,
        rows,
        rows_per_chunk,
        launch.num_indices,
        launch.outer,
        launch.gather,
        launch.inner,
        launch.lo,
        launch.hi,
    )


def _prepare(indices, wrapped, count, size, first_bad):
    bad = count
    for t in prange(count):
        value = np.int64(indices[t])
        wrapped[t] = value + size if value < 0 else value
        if value < -size or value >= size:
            bad = min(bad, t)
    first_bad[0] = bad


@functools.cache
def _prepare_kernel(indices_dtype: np.dtype, wrapped_dtype: np.dtype) -> CpuKernel:
    return CpuKernel(_prepare, f"gather_prepare_{indices_dtype.name}_{wrapped_dtype.name}")


def prepare_indices(stream, indices, count: int, size: int, wrapped_dtype: DataType, check: bool):
    """(indices with negatives wrapped by size, in a new array of wrapped_dtype; first bad position or -1).

    A bad index is one outside [-size, size); the first one's position is found only when check.
    """
    indices = storage(indices, "indices", DeviceType.kCPU, as_data_type(indices.dtype, "indices"), count)
    wrapped = np.empty(count, wrapped_dtype.dtype)
    first_bad = np.empty(1, np.int64)
    _prepare_kernel(indices.dtype, wrapped.dtype)(count, indices, wrapped, count, size, first_bad)
    return wrapped, (int(first_bad[0]) if check and first_bad[0] < count else -1)


def _scatter_add(indices, dy, acc, dx, tasks, row_blocks, rows_per_block, num_indices, outer, gather, inner):
    # A task owns rows [r0, r1) of one (batch, outer) slab of acc: it zeroes them, then adds every
    # dy row whose index falls in them, in index order. No two tasks write the same element.
    for task in prange(tasks):
        batch_outer = task // row_blocks
        r0 = (task - batch_outer * row_blocks) * rows_per_block
        r1 = min(r0 + rows_per_block, gather)
        b = batch_outer // outer
        slab = batch_outer * gather * inner
        for k in range(slab + r0 * inner, slab + r1 * inner):
            acc[k] = 0
        for i in range(num_indices):
            index = np.int64(indices[b * num_indices + i])
            if r0 <= index < r1:
                dst = np.uint64(slab + index * inner)
                src = np.uint64((batch_outer * num_indices + i) * inner)
                for k in range(np.uint64(inner)):
                    acc[dst + k] += load(dy[src + k])  # noqa: F821 (bound by specialize)
        if FINISH:  # noqa: F821 (bound by specialize)
            for k in range(slab + r0 * inner, slab + r1 * inner):
                dx[k] = store(acc[k])  # noqa: F821 (bound by specialize)


@functools.cache
def _scatter_kernel(indices_dtype: np.dtype, dtype: DataType) -> CpuKernel:
    return CpuKernel(
        _scatter_add,
        f"gather_grad_{indices_dtype.name}_{dtype.value}",
        load=load_fn(dtype),
        store=store_fn(dtype),
        FINISH=accumulator_dtype(dtype) is not dtype,
    )


def gather_grad(
    stream, indices, dy, dx, dtype: DataType, batch: int, outer: int, gather: int, inner: int, num_indices: int
) -> None:
    """dx ([batch, outer, gather, inner]) = zeros plus dy ([batch, outer, num_indices, inner]) rows added at
    indices ([batch, num_indices], already wrapped); rows of out-of-range indices are dropped."""
    dx_count = batch * outer * gather * inner
    indices = storage(indices, "indices", DeviceType.kCPU, as_data_type(indices.dtype, "indices"), batch * num_indices)
    dy = storage(dy, "dy", DeviceType.kCPU, dtype, batch * outer * num_indices * inner)
    dx = storage(dx, "dx", DeviceType.kCPU, dtype, dx_count, writable=True)
    if dx_count == 0:
        return
    acc_dtype = accumulator_dtype(dtype)
    acc = dx if acc_dtype is dtype else np.empty(dx_count, acc_dtype.dtype)
    slabs = batch * outer
    # Split each slab's rows into blocks so that there are tasks for every thread.
    row_blocks = min(gather, -(-4 * numba.get_num_threads() // slabs))
    rows_per_block = -(-gather // row_blocks)
    row_blocks = -(-gather // rows_per_block)
    kernel = _scatter_kernel(indices.dtype, dtype)
    tasks = slabs * row_blocks
    kernel(dx_count + dy.size, indices, dy, acc, dx, tasks, row_blocks, rows_per_block, num_indices, outer, gather, inner)
