"""CopyNd's and Expand's CPU kernel: one copy of elements, driven by a plan's parameters.

One span per element dtype serves every size and shape, run by ParallelFor in chunks of
TASK_BYTES. The buffers are moved as their own dtype, so a launch makes no views (bools aside).
Outputs from STREAM_BYTES on are written with streaming stores.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.jit import scalar_function, template
from ep.common.math.intrinsics import VECTOR_BYTES, stream_copy_vector, stream_fence, stream_fill_vector, stream_store
from ep.common.math.nd_index_offset_helper import packed_offsets
from ep.common.primitive.copy_nd import CopyNdFactoryImpl
from ep.common.primitive.strided_copy import CopyLaunch, CopyPlan, StridedCopyKernels
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.cpu.parallel_for import PARALLEL_THRESHOLD, TASK_BYTES, ParallelFor, input_array, output_array
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# Outputs at least this large are written with streaming stores: they would not stay in the
# caches anyway, and ordinary stores would read every line first.
STREAM_BYTES = 8 << 20

# The kernel's int64 parameters: these scalars, then the row dims and their src and dst strides.
(
    _RUN,
    _INNER_STRIDE,
    _RUNS_PER_ROW,
    _RUN_STRIDE,
    _RUN_DST_STRIDE,
    _STREAM,
    _NUM_ROW_DIMS,
    _ROW_DIMS,
) = range(8)


@scalar_function
def _move(src, s, step, dst, d, n):
    # Loops, not slice assignments, whose shape checks compile Numba's error formatting (seconds).
    # Unsigned positions for a copy or fill: Numba then skips its negative-index wraparound, which
    # kept LLVM from vectorizing the loop.
    if step == 1:
        s_, d_ = np.uint64(s), np.uint64(d)
        for j in range(np.uint64(n)):
            dst[d_ + j] = src[s_ + j]
    elif step == 0:
        value = src[s]
        d_ = np.uint64(d)
        for j in range(np.uint64(n)):
            dst[d_ + j] = value
    else:
        for j in range(n):
            dst[d + j] = src[s + j * step]


@scalar_function
def _stream_vectors(src, s, step, dst, d, n):
    # _move of whole vectors (n a multiple of a vector's elements, dst[d] aligned to one) for a
    # copy (step 1) or fill (step 0), with streaming stores.
    per_vector = VECTOR_BYTES // dst.itemsize
    if step == 1:
        for j in range(0, n, per_vector):
            stream_copy_vector(dst, d + j, src, s + j)
    else:
        value = src[s]
        for j in range(0, n, per_vector):
            stream_fill_vector(dst, d + j, value)


@template()
def _copy_span(start, end, args):
    # The copy is rows of runs_per_row runs of `run` elements; run k of a row reads from its src
    # offset + k * run_stride, stepping inner_stride, and writes from its dst offset + k *
    # run_dst_stride. A span copies the elements [start, end) in that order, dividing only where
    # it starts and once per row it enters.
    src, dst, params = args
    run = params[_RUN]
    inner_stride = params[_INNER_STRIDE]
    runs_per_row = params[_RUNS_PER_ROW]
    run_stride = params[_RUN_STRIDE]
    run_dst_stride = params[_RUN_DST_STRIDE]
    num_row_dims = params[_NUM_ROW_DIMS]
    row_units = runs_per_row * run
    address = dst.ctypes.data
    # The host asks for streaming only for copies and fills of 4- or 8-byte elements; they need
    # dst aligned to its element, which an unaligned view on the CPU may not be.
    stream = params[_STREAM] != 0 and address % dst.itemsize == 0
    unit = dst.itemsize
    per_vector = VECTOR_BYTES // unit
    u = start
    row = u // row_units
    k = (u - row * row_units) // run
    j = u - row * row_units - k * run
    # One call site of packed_offsets: every inlined copy is compiled again.
    while u < end:
        if k == runs_per_row:
            k = 0
            row += 1
        if k == 0 or u == start:
            base, dst_base = packed_offsets(params, _ROW_DIMS, num_row_dims, row)
        n = run - j if run - j < end - u else end - u
        s = base + k * run_stride + j * inner_stride
        d = dst_base + k * run_dst_stride + j
        if stream:
            # Whole vectors [lo, hi) of the run from a vector boundary of dst on, the elements
            # before and after them one by one: all streamed, since an ordinary store to a line
            # being streamed would flush it half written.
            lo = ((-(address + d * unit)) & (VECTOR_BYTES - 1)) // unit
            lo = lo if lo < n else n
            hi = lo + (n - lo) // per_vector * per_vector
            _stream_vectors(src, s + lo * inner_stride, inner_stride, dst, d + lo, hi - lo)
            # One loop over both ends (a loop per end, or over the pair of ranges, compiles slower).
            for i in range(lo + n - hi):
                e = i if i < lo else i - lo + hi
                stream_store(dst, d + e, src[s + e * inner_stride])
        else:
            # The run in one loop, not split at dst's first cache line: the split's second loop
            # cost more than aligned stores saved (AMD EPYC, ep.ops.expand of 1 MiB in runs of 64
            # float32: 28-31 -> 13 us; runs of 256 11-15 -> 9-10 us; long runs unchanged).
            _move(src, s, inner_stride, dst, d, n)
        u += n
        j = 0
        k += 1
    if stream:
        stream_fence()


_PARAMS = input_array(np.dtype(np.int64))


@function_cache("kernels")
def _span(dtype: np.dtype) -> ParallelFor:
    """The copy of elements of dtype."""
    return ParallelFor(_copy_span, f"strided_copy_{dtype}", (input_array(dtype), output_array(dtype), _PARAMS))


_BOOL = np.dtype(np.bool_)
_UINT8 = np.dtype(np.uint8)


class CpuStridedCopyKernels(StridedCopyKernels):
    # Every launch moves elements (moves_elements), so the widest unit is never asked for.
    widest_unit = 8
    aligned_units = False

    def moves_elements(self, count: int) -> bool:
        # Elements at every size: one build per dtype, and no views; long runs move at memcpy speed
        # as any type.
        return True

    def prepare(self, plan: CopyPlan, elements: bool) -> tuple[np.ndarray, int, int]:
        """plan as the span's parameters, its element count and its grain (TASK_BYTES)."""
        dims, strides, dst_strides = plan.dims, plan.src_strides, plan.dst_strides
        if len(dims) > 1:
            runs_per_row, run_stride, run_dst_stride = dims[-2], strides[-2], dst_strides[-2]
        else:
            runs_per_row, run_stride, run_dst_stride = 1, 0, 0
        row_dims = dims[:-2]
        count = plan.count
        parallel = count >= PARALLEL_THRESHOLD
        stream = parallel and plan.unit >= 4 and plan.inner_stride in (0, 1) and count * plan.unit >= STREAM_BYTES
        scalars = (plan.run, plan.inner_stride, runs_per_row, run_stride, run_dst_stride, int(stream), len(row_dims))
        params = np.array(scalars + row_dims + strides[:-2] + dst_strides[:-2], np.int64)
        return params, count, max(TASK_BYTES // plan.unit, 1) if parallel else 0

    def launch(self, stream, launch: CopyLaunch, src, dst) -> None:
        params, count, grain = launch.prepared
        if src.dtype is _BOOL:  # Numba would normalize bools to 0 or 1: move their bytes
            src, dst = src.view(_UINT8), dst.view(_UINT8)
        _span(src.dtype).run((src, dst, params), count, count, grain)

    def all_kernels(self) -> Iterator[object]:
        for dtype in sorted({dtype.storage_dtype for dtype in DataType} - {_BOOL}, key=str):
            yield _span(dtype)


KERNELS = CpuStridedCopyKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, CopyNdFactory, CopyNdFactoryImpl(DeviceType.kCPU, KERNELS))
