"""Expand on the CPU: one kernel, driven by a plan cached per (src_dims, dst_dims).

Launches below the parallel threshold run on the calling thread and move elements of the
buffers' own dtype, so that a tiny launch pays for no views (and, for flat aligned writable
arrays, calls the compiled kernel without Numba's type dispatch); larger ones run on every
thread and move raw units of up to 8 bytes (ep.common.primitive.strided_copy), with streaming stores
once the output reaches STREAM_BYTES. On the CPU a unit ignores the buffers' addresses: x86
moves unaligned words at full speed, and Numba types an unaligned view as such, so no launch
has to look up an address.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numba
import numpy as np
from numba import prange

from ep.common.runtime.buffer import storage
from ep.common.primitive.byte_units import as_units
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.jit import scalar_function
from ep.common.runtime.stream import CpuStream, check_stream
from ep.common.primitive.strided_copy import CopyPlan, check_broadcast_dims, expand_plan, prepare_strided
from ep.cpu.kernel import PARALLEL_THRESHOLD, CpuKernel
from ep.common.math.intrinsics import VECTOR_BYTES, stream_copy_vector, stream_fence, stream_fill_vector, stream_store
from ep.include.primitive.expand import Expand, ExpandFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

# The widest unit: slices of uint64 already copy at memcpy speed.
WIDEST_UNIT = 8
# dst bytes per parallel task: every core gets many tasks, and a task's start costs a few divisions.
TASK_BYTES = 1 << 16
# Below this many units a plain loop beats slicing, whose setup costs more than the moves.
SHORT_RUN = 16
# Plans kept per primitive; a program cycling through more shapes rebuilds them.
MAX_CACHED_PLANS = 512

# Outputs at least this large are written with streaming stores: they would not stay in the
# caches anyway, and ordinary stores would read every line first.
STREAM_BYTES = 8 << 20

# The kernel's int64 parameters: these scalars, then the row dims and their src strides.
(_COUNT, _CHUNK, _NUM_TASKS, _RUN, _INNER_STRIDE, _RUNS_PER_ROW, _RUN_STRIDE, _STREAM, _NUM_ROW_DIMS, _ROW_DIMS) = range(10)


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
def _row_offset(params, num_row_dims, row):
    # Where row (a flat index over the row dims) starts in src.
    offset = 0
    for i in range(num_row_dims - 1, -1, -1):
        dim = params[_ROW_DIMS + i]
        q = row // dim
        offset += (row - q * dim) * params[_ROW_DIMS + num_row_dims + i]
        row = q
    return offset


def _expand_copy(src, dst, params):
    # dst is rows of runs_per_row runs of `run` units; run k of a row reads from
    # row offset + k * run_stride, stepping inner_stride. A task copies the dst units
    # [task * chunk, ...), dividing only where it starts and once per row it enters.
    count = params[_COUNT]
    chunk = params[_CHUNK]
    run = params[_RUN]
    inner_stride = params[_INNER_STRIDE]
    runs_per_row = params[_RUNS_PER_ROW]
    run_stride = params[_RUN_STRIDE]
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
        base = _row_offset(params, num_row_dims, row)
        while u < end:
            n = min(run - j, end - u)
            if stream:
                _stream(src, base + k * run_stride + j * inner_stride, inner_stride, dst, u, n, address + u * dst.itemsize)
            else:
                _move(src, base + k * run_stride + j * inner_stride, inner_stride, dst, u, n)
            u += n
            j = 0
            k += 1
            if k == runs_per_row and u < end:
                k = 0
                row += 1
                base = _row_offset(params, num_row_dims, row)
        if stream:
            stream_fence()


_KERNEL = CpuKernel(_expand_copy, "expand_copy")


def kernel_params(plan: CopyPlan, parallel: bool) -> np.ndarray:
    """plan as the kernel's parameters; a parallel launch is split into tasks of TASK_BYTES."""
    dims, strides = plan.dims, plan.src_strides
    runs_per_row, run_stride = (dims[-2], strides[-2]) if len(dims) > 1 else (1, 0)
    row_dims, row_strides = dims[:-2], strides[:-2]
    count = plan.count
    chunk = max(TASK_BYTES // plan.unit, 1) if parallel else count
    stream = parallel and plan.unit >= 4 and plan.inner_stride in (0, 1) and count * plan.unit >= STREAM_BYTES
    scalars = (count, chunk, -(-count // chunk), plan.run, plan.inner_stride, runs_per_row, run_stride, int(stream), len(row_dims))
    return np.array(scalars + row_dims + row_strides, np.int64)


class _Launch(NamedTuple):
    """What a Launch for one (src_dims, dst_dims) needs besides the buffers."""

    src_count: int
    dst_count: int
    parallel: bool  # serial launches move elements of the buffers' own dtype, parallel ones raw units
    params: np.ndarray
    unit: int


_ndarray = np.ndarray
# Element dtypes Numba would not move bit for bit: bools are normalized to 0 or 1, float16 has no CPU type.
_ELEMENT_VIEW = {DataType.kBool: np.dtype(np.uint8), DataType.kFloat16: np.dtype(np.uint16)}


@functools.cache
def _serial_entry(element_dtype: np.dtype) -> Callable:
    # The serial kernel compiled for flat, aligned, writable arrays of element_dtype. Calling it
    # directly skips Numba's per-call type dispatch (a third of a tiny launch); Launch calls it
    # only with arrays of exactly these types.
    array = numba.types.Array(numba.from_dtype(element_dtype), 1, "C")
    return _KERNEL.serial.compile((array, array, numba.types.Array(numba.int64, 1, "C")))


class ExpandImpl(Expand):
    def __init__(self, dtype: DataType) -> None:
        self.dtype = dtype
        self._np_dtype = dtype.dtype
        self._element_view = _ELEMENT_VIEW.get(dtype)
        self._plans: dict[tuple[tuple[int, ...], tuple[int, ...]], _Launch] = {}
        self._serial_entry: Callable | None = None  # compiled on the first serial launch

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        # Written for tiny launches, whose cost is this function: one lookup, a few checks, one call.
        if type(stream) is not CpuStream:
            check_stream(stream, DeviceType.kCPU)
        # The cache is keyed by the caller's tuples. Floats and bools compare equal to ints, so a
        # hit counts only when every dim is an int; anything else takes the checking path.
        try:
            launch = self._plans[src_dims, dst_dims]
        except (KeyError, TypeError):
            launch = self._new_launch(src_dims, dst_dims)
        else:
            for d in src_dims:
                if type(d) is not int:
                    launch = self._new_launch(src_dims, dst_dims)
            for d in dst_dims:
                if type(d) is not int:
                    launch = self._new_launch(src_dims, dst_dims)
        src_count, dst_count, parallel, params, unit = launch
        dtype = self._np_dtype
        # exact: both arrays have the types _serial_entry was compiled for (once flattened).
        if type(src) is _ndarray and src.dtype is dtype and src.size >= src_count:
            flags = src.flags
            if not flags.c_contiguous:
                src = self._storage(src, "src", src_count, False)
            exact = flags.aligned and flags.writeable
        else:
            src = self._storage(src, "src", src_count, False)
            exact = False
        if type(dst) is _ndarray and dst.dtype is dtype and dst.size >= dst_count:
            flags = dst.flags
            if not (flags.c_contiguous and flags.writeable):
                dst = self._storage(dst, "dst", dst_count, True)
            exact = exact and flags.aligned
        else:
            dst = self._storage(dst, "dst", dst_count, True)
        if dst_count == 0:
            return
        src, dst = src.ravel(), dst.ravel()
        if parallel:
            _KERNEL.parallel(as_units(src, src_count, unit), as_units(dst, dst_count, unit), params)
            return
        if self._element_view is not None:
            src, dst = src.view(self._element_view), dst.view(self._element_view)
        if exact:
            entry = self._serial_entry
            if entry is None:
                entry = self._serial_entry = _serial_entry(src.dtype)
            entry(src, dst, params)
        else:
            _KERNEL.serial(src, dst, params)

    def _storage(self, obj, name: str, count: int, writable: bool):
        # storage() explains what is wrong, or returns flat storage, viewed back as the dtype.
        return storage(obj, name, DeviceType.kCPU, self.dtype, count, writable).view(self._np_dtype)

    def _new_launch(self, src_dims, dst_dims) -> _Launch:
        src_dims, dst_dims = check_broadcast_dims(src_dims, dst_dims, ("src_dims", "dst_dims"))
        key = (src_dims, dst_dims)
        launch = self._plans.get(key)
        if launch is None:
            launch = _new_launch(self.dtype.itemsize, src_dims, dst_dims)
            if len(self._plans) >= MAX_CACHED_PLANS:
                self._plans.clear()
            self._plans[key] = launch
        return launch

    def LaunchStrided(self, stream, src, dst) -> None:
        check_stream(stream, DeviceType.kCPU)
        prepared = prepare_strided(DeviceType.kCPU, self.dtype, src, dst, WIDEST_UNIT)
        if prepared is not None:
            plan, src, dst = prepared
            parallel = dst.nbytes >= PARALLEL_THRESHOLD * self.dtype.itemsize
            (_KERNEL.parallel if parallel else _KERNEL.serial)(src, dst, kernel_params(plan, parallel))


def _new_launch(itemsize: int, src_dims: tuple[int, ...], dst_dims: tuple[int, ...]) -> _Launch:
    src_count, dst_count = math.prod(src_dims), math.prod(dst_dims)
    if dst_count == 0:
        return _Launch(src_count, 0, False, np.zeros(0, np.int64), itemsize)
    parallel = dst_count >= PARALLEL_THRESHOLD
    # No buffers: units ignore addresses on the CPU. A serial launch moves whole elements.
    plan = expand_plan(src_dims, dst_dims, itemsize, (), WIDEST_UNIT if parallel else itemsize)
    return _Launch(src_count, dst_count, parallel, kernel_params(plan, parallel), plan.unit)


@functools.cache
def _primitive(dtype: DataType) -> ExpandImpl:
    return ExpandImpl(dtype)


class ExpandFactoryImpl(ExpandFactory):
    def New(self, dtype) -> Expand | None:
        return _primitive(as_data_type(dtype))

    def Combinations(self):
        for dtype in ALL_TYPES:
            yield None, (dtype,)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ExpandFactory, ExpandFactoryImpl)
