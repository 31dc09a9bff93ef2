"""CopyNd's and Expand's CPU kernel: one copy of raw units, driven by a plan's parameters.

Launches below the parallel threshold run on the calling thread and move elements of the
buffers' own dtype, so that a tiny launch pays for no views (and, for flat aligned writable
arrays, calls the compiled kernel without Numba's type dispatch); larger ones run on every
thread and move raw units of up to 8 bytes, with streaming stores once the output reaches
STREAM_BYTES. On the CPU a unit ignores the buffers' addresses: x86 moves unaligned words at
full speed, and Numba types an unaligned view as such, so no launch has to look up an address.
"""
from __future__ import annotations

import functools
from typing import Callable, Iterator, NamedTuple

import numba
import numpy as np
from numba import prange

from ep.common.jit import scalar_function, template
from ep.common.math.intrinsics import VECTOR_BYTES, stream_copy_vector, stream_fence, stream_fill_vector, stream_store
from ep.common.primitive.byte_units import as_units
from ep.common.primitive.copy_nd import CopyNdFactoryImpl
from ep.common.primitive.strided_copy import CopyLaunch, CopyPlan, StridedCopyKernels
from ep.common.runtime.device import DeviceType
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The widest unit: slices of uint64 already copy at memcpy speed.
WIDEST_UNIT = 8
# Units copied per parallel task: every core gets many tasks, and a task's start costs a few divisions.
TASK_BYTES = 1 << 16
# Below this many units a plain loop beats slicing, whose setup costs more than the moves.
SHORT_RUN = 16
# Outputs at least this large are written with streaming stores: they would not stay in the
# caches anyway, and ordinary stores would read every line first.
STREAM_BYTES = 8 << 20

# The kernel's int64 parameters: these scalars, then the row dims and their src and dst strides.
(
    _COUNT,
    _CHUNK,
    _NUM_TASKS,
    _RUN,
    _INNER_STRIDE,
    _RUNS_PER_ROW,
    _RUN_STRIDE,
    _RUN_DST_STRIDE,
    _STREAM,
    _NUM_ROW_DIMS,
    _ROW_DIMS,
) = range(11)


@scalar_function
def _move(src, s, step, dst, d, n):
    # Slice assignment for long runs: Numba's element loop carries negative-index checks that keep
    # LLVM from vectorizing it, while a slice copy or fill runs at memcpy/memset speed.
    if n < SHORT_RUN:
        for j in range(n):
            dst[d + j] = src[s + j * step]
    elif step == 1:
        dst[d : d + n] = src[s : s + n]
    elif step == 0:
        dst[d : d + n] = src[s]
    else:
        dst[d : d + n] = src[s : s + (n - 1) * step + 1 : step]


@scalar_function
def _stream(src, s, step, dst, d, n, address):
    # _move for a copy (step 1) or fill (step 0) with streaming stores only; address is dst[d]'s,
    # a multiple of the unit (4 or 8 bytes). Units up to a vector boundary, vectors, units.
    unit = dst.itemsize
    per_vector = VECTOR_BYTES // unit
    head = min(((-address) & (VECTOR_BYTES - 1)) // unit, n)
    vectors_end = head + (n - head) // per_vector * per_vector
    if step == 1:
        for j in range(head):
            stream_store(dst, d + j, src[s + j])
        for j in range(head, vectors_end, per_vector):
            stream_copy_vector(dst, d + j, src, s + j)
        for j in range(vectors_end, n):
            stream_store(dst, d + j, src[s + j])
    else:
        value = src[s]
        for j in range(head):
            stream_store(dst, d + j, value)
        for j in range(head, vectors_end, per_vector):
            stream_fill_vector(dst, d + j, value)
        for j in range(vectors_end, n):
            stream_store(dst, d + j, value)


@scalar_function
def _row_offsets(params, num_row_dims, row):
    # Where row (a flat index over the row dims) starts in src and in dst.
    s = 0
    d = 0
    for i in range(num_row_dims - 1, -1, -1):
        dim = params[_ROW_DIMS + i]
        q = row // dim
        index = row - q * dim
        s += index * params[_ROW_DIMS + num_row_dims + i]
        d += index * params[_ROW_DIMS + 2 * num_row_dims + i]
        row = q
    return s, d


@template()
def _copy(src, dst, params):
    # The copy is rows of runs_per_row runs of `run` units; run k of a row reads from its src
    # offset + k * run_stride, stepping inner_stride, and writes from its dst offset + k *
    # run_dst_stride. A task copies the units [task * chunk, ...) in that order, dividing only
    # where it starts and once per row it enters.
    count = params[_COUNT]
    chunk = params[_CHUNK]
    run = params[_RUN]
    inner_stride = params[_INNER_STRIDE]
    runs_per_row = params[_RUNS_PER_ROW]
    run_stride = params[_RUN_STRIDE]
    run_dst_stride = params[_RUN_DST_STRIDE]
    num_row_dims = params[_NUM_ROW_DIMS]
    row_units = runs_per_row * run
    address = dst.ctypes.data
    # The host asks for streaming only for copies and fills of 4- or 8-byte units; they need
    # dst aligned to its unit, which an unaligned view on the CPU may not be.
    stream = params[_STREAM] != 0 and address % dst.itemsize == 0
    for task in prange(params[_NUM_TASKS]):
        u = task * chunk
        end = min(u + chunk, count)
        row = u // row_units
        k = (u - row * row_units) // run
        j = u - row * row_units - k * run
        base, dst_base = _row_offsets(params, num_row_dims, row)
        while u < end:
            n = min(run - j, end - u)
            s = base + k * run_stride + j * inner_stride
            d = dst_base + k * run_dst_stride + j
            if stream:
                _stream(src, s, inner_stride, dst, d, n, address + d * dst.itemsize)
            else:
                _move(src, s, inner_stride, dst, d, n)
            u += n
            j = 0
            k += 1
            if k == runs_per_row and u < end:
                k = 0
                row += 1
                base, dst_base = _row_offsets(params, num_row_dims, row)
        if stream:
            stream_fence()


_KERNEL = CpuKernel(_copy, "strided_copy")


@functools.cache
def _serial_entry(element_dtype: np.dtype) -> Callable:
    # The serial kernel compiled for flat, aligned, writable arrays of element_dtype. Calling it
    # directly skips Numba's per-call type dispatch (a third of a tiny launch); launch() calls it
    # only with arrays of exactly these types.
    array = numba.types.Array(numba.from_dtype(element_dtype), 1, "C")
    return _KERNEL.serial.compile((array, array, numba.types.Array(numba.int64, 1, "C")))


class CpuLaunch(NamedTuple):
    params: np.ndarray
    unit: int
    parallel: bool  # serial launches move elements of the buffers' own dtype, parallel ones raw units
    # [(element dtype, _serial_entry(element dtype))] once a serial launch ran: a plan serves one dtype.
    entry: list


_ndarray = np.ndarray
_BOOL = np.dtype(np.bool_)
_UINT8 = np.dtype(np.uint8)


class CpuStridedCopyKernels(StridedCopyKernels):
    widest_unit = WIDEST_UNIT
    aligned_units = False

    def moves_elements(self, count: int) -> bool:
        return count < PARALLEL_THRESHOLD

    def prepare(self, plan: CopyPlan, elements: bool) -> CpuLaunch:
        """plan as the kernel's parameters; a parallel launch is split into tasks of TASK_BYTES."""
        dims, strides, dst_strides = plan.dims, plan.src_strides, plan.dst_strides
        if len(dims) > 1:
            runs_per_row, run_stride, run_dst_stride = dims[-2], strides[-2], dst_strides[-2]
        else:
            runs_per_row, run_stride, run_dst_stride = 1, 0, 0
        row_dims = dims[:-2]
        count = plan.count
        parallel = not elements
        chunk = max(TASK_BYTES // plan.unit, 1) if parallel else count
        stream = parallel and plan.unit >= 4 and plan.inner_stride in (0, 1) and count * plan.unit >= STREAM_BYTES
        scalars = (count, chunk, -(-count // chunk), plan.run, plan.inner_stride, runs_per_row, run_stride, run_dst_stride)
        scalars += (int(stream), len(row_dims))
        params = np.array(scalars + row_dims + strides[:-2] + dst_strides[:-2], np.int64)
        return CpuLaunch(params, plan.unit, parallel, [None])

    def launch(self, stream, launch: CopyLaunch, src, dst) -> None:
        params, unit, parallel, entry = launch.prepared
        if parallel:
            _KERNEL.parallel(as_units(src, launch.src_span, unit), as_units(dst, launch.dst_span, unit), params)
            return
        if src.dtype is _BOOL:  # Numba would normalize bools to 0 or 1: move their bytes
            src, dst = src.view(_UINT8), dst.view(_UINT8)
        # Exactly the types _serial_entry compiled for: skip the dispatch.
        if type(src) is _ndarray and type(dst) is _ndarray and (f := src.flags).aligned and f.writeable and dst.flags.aligned:
            compiled = entry[0]  # read once: another thread may set it meanwhile
            if compiled is None or compiled[0] is not src.dtype:
                compiled = entry[0] = (src.dtype, _serial_entry(src.dtype))
            compiled[1](src, dst, params)
        else:
            _KERNEL.serial(src, dst, params)

    def all_kernels(self) -> Iterator[object]:
        yield _KERNEL


KERNELS = CpuStridedCopyKernels()

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, CopyNdFactory, CopyNdFactoryImpl(DeviceType.kCPU, KERNELS))
