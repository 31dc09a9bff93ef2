"""CUDA kernels behind Gather and BatchGather, and the index and gradient kernels ep.ops.gather uses.

One thread per output move unit, worked back from its offset with divisions by invariant sizes.
Each kernel comes in two index widths: 32-bit, with fast_divmod's multiply-high in place of
every division, when every buffer fits in 2**31 - 1 elements, and 64-bit with plain division
otherwise. Move units of 16 bytes are one 128-bit load and store (byte_units.move16).
"""
from __future__ import annotations

import functools

import numba
import numpy as np
from numba import config, cuda

from ep.common.runtime.buffer import storage
from ep.common.math.intrinsics import move16
from ep.common.primitive.byte_units import UNITS, unit_dtype
from ep.common.math.convert import load_fn
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT, fast_divmod, fast_divmod_params
from ep.common.primitive.gather import GRAD_TYPES, GatherLaunch, accumulator_dtype, gather_launch
from ep.common.math.half import float_to_half
from ep.common.jit import scalar_function
from ep.cuda.kernel import CudaKernel

WIDEST_UNIT = 16
_INT32_MAX = (1 << 31) - 1


@scalar_function
def _divmod64(n, divisor, multiplier, shift):
    quotient = n // divisor
    return quotient, n - quotient * divisor


def _move16_simulated(dst, dst_word, src, src_word):
    # The simulator runs kernels as Python, where an LLVM intrinsic cannot run.
    dst[dst_word] = src[src_word]
    dst[dst_word + 1] = src[src_word + 1]


def _index_bindings(wide: bool) -> dict:
    """The index type and divmod of a kernel's 64-bit (wide) or 32-bit variant."""
    return {"INDEX": np.int64, "DIVMOD": _divmod64} if wide else {"INDEX": np.uint32, "DIVMOD": fast_divmod}


def _size_type(wide: bool):
    return numba.int64 if wide else numba.uint32


def _divisor(value: int, wide: bool) -> tuple[int, int, int]:
    """(divisor, multiplier, shift) kernel arguments for dividing by value."""
    return (value, 0, 0) if wide else (value, *fast_divmod_params(value))


def _needs_wide(*counts: int) -> bool:
    return max(counts) > FAST_DIVMOD_LIMIT


def _gather(indices, in_, out, total, inner, inner_m, inner_s, num, num_m, num_s, outer, outer_m, outer_s, gather, lo, hi):
    t = INDEX(cuda.grid(1))  # noqa: F821 (INDEX, DIVMOD, BATCHED, WIDE16 and move16 are bound by specialize)
    step = INDEX(cuda.gridsize(1))  # noqa: F821
    while t < total:
        row, k = DIVMOD(t, inner, inner_m, inner_s)  # noqa: F821
        batch_outer, i = DIVMOD(row, num, num_m, num_s)  # noqa: F821
        position = i
        if BATCHED:  # noqa: F821
            b, _ = DIVMOD(batch_outer, outer, outer_m, outer_s)  # noqa: F821
            position = INDEX(b * num + i)  # noqa: F821
        index = np.int64(indices[position])
        if lo <= index <= hi:
            src = INDEX(INDEX(batch_outer * gather + INDEX(index - lo)) * inner + k)  # noqa: F821
            if WIDE16:  # noqa: F821
                move16(out, t * 2, in_, src * 2)
            else:
                out[t] = in_[src]
        elif WIDE16:  # noqa: F821
            out[t * 2] = 0
            out[t * 2 + 1] = 0
        else:
            out[t] = 0
        t = INDEX(t + step)  # noqa: F821


@functools.cache
def _gather_kernel(indices_dtype: DataType, unit: int, wide: bool, batched: bool) -> CudaKernel:
    size = _size_type(wide)
    units = numba.from_dtype(unit_dtype(unit))[::1]
    argtypes = (numba.from_dtype(indices_dtype.dtype)[::1], units, units, *([size] * 11), numba.int64, numba.int64)
    name = f"{'batch_' if batched else ''}gather_{indices_dtype.value}_u{unit}_{'i64' if wide else 'i32'}"
    return CudaKernel(
        _gather,
        name,
        argtypes,
        BATCHED=batched,
        WIDE16=unit == 16,
        move16=_move16_simulated if config.ENABLE_CUDASIM else move16,
        **_index_bindings(wide),
    )


def gather_kernels(batched: bool):
    """Every Gather (or BatchGather) kernel specialization."""
    for indices_dtype in (DataType.kInt32, DataType.kInt64):
        for unit in UNITS:
            for wide in (False, True):
                yield _gather_kernel(indices_dtype, unit, wide, batched)


def launch_gather(stream, launch: GatherLaunch, batched: bool) -> None:
    """Run a checked Gather or BatchGather launch on stream."""
    total = launch.rows * launch.inner
    wide = _needs_wide(launch.in_.size, launch.out.size, launch.indices.size)
    kernel = _gather_kernel(as_data_type(launch.indices.dtype), launch.unit, wide, batched)
    kernel.launch(
        stream,
        total,
        launch.indices,
        launch.in_,
        launch.out,
        total,
        *_divisor(launch.inner, wide),
        *_divisor(launch.num_indices, wide),
        *_divisor(launch.outer, wide),
        launch.gather,
        launch.lo,
        launch.hi,
    )


def _prepare(indices, wrapped, count, size, first_bad):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        value = np.int64(indices[t])
        wrapped[t] = value + size if value < 0 else value
        if value < -size or value >= size:
            cuda.atomic.min(first_bad, 0, t)
        t += step


# (indices, wrapped) dtype pairs: int32 indices are widened when the axis is longer than int32.
_PREPARE_TYPES = ((DataType.kInt32, DataType.kInt32), (DataType.kInt32, DataType.kInt64), (DataType.kInt64, DataType.kInt64))


@functools.cache
def _prepare_kernel(indices_dtype: DataType, wrapped_dtype: DataType) -> CudaKernel:
    argtypes = (
        numba.from_dtype(indices_dtype.dtype)[::1],
        numba.from_dtype(wrapped_dtype.dtype)[::1],
        numba.int64,
        numba.int64,
        numba.int64[::1],
    )
    return CudaKernel(_prepare, f"gather_prepare_{indices_dtype.value}_{wrapped_dtype.value}", argtypes)


def prepare_indices(stream, indices, count: int, size: int, wrapped_dtype: DataType, check: bool):
    """(indices with negatives wrapped by size, in a new array of wrapped_dtype; first bad position or -1).

    A bad index is one outside [-size, size). The kernel finds the first with an atomic min of the
    positions; only that one number comes back to the host, and only when check.
    """
    indices_dtype = as_data_type(indices.dtype, "indices")
    indices = storage(indices, "indices", DeviceType.kCUDA, indices_dtype, count)
    wrapped = cuda.device_array(count, wrapped_dtype.dtype, stream=stream.native)
    if count == 0:
        return wrapped, -1
    first_bad = cuda.to_device(np.array([count], np.int64), stream=stream.native)
    _prepare_kernel(indices_dtype, wrapped_dtype).launch(stream, count, indices, wrapped, count, size, first_bad)
    if not check:
        return wrapped, -1
    position = int(first_bad.copy_to_host(stream=stream.native)[0])
    stream.Sync()
    return wrapped, (position if position < count else -1)


def _wrapped_gather(params_dtype: DataType, indices_dtype: DataType, sizes: tuple, check: bool, stream, indices, in_, out) -> int:
    # Negative indices wrapped (and checked) into a temporary by the prepare kernel, then the
    # gather kernel on it: one launch more than the CPU's fused kernel, the same result.
    num_indices, batch, outer, gather, inner = sizes
    # Wrapped values reach gather - 1, which int32 cannot hold for axes longer than int32.
    wrapped_dtype = DataType.kInt64 if gather > _INT32_MAX else indices_dtype
    wrapped, bad = prepare_indices(stream, indices, batch * num_indices, gather, wrapped_dtype, check)
    if bad >= 0:
        return bad
    launch = gather_launch(
        DeviceType.kCUDA, params_dtype, wrapped_dtype, wrapped, num_indices, in_, batch, outer, gather, inner, out, 0, WIDEST_UNIT
    )
    if launch is not None:
        launch_gather(stream, launch, batched=batch > 1)
    return -1


def prepare_gather(params_dtype: DataType, indices_dtype: DataType, num_indices, batch, outer, gather, inner, check: bool):
    """ep.ops.gather's launch of these sizes: (stream, indices, in_, out) -> -1, or the position
    of the first bad index when check. Negative indices count from the end."""
    return functools.partial(_wrapped_gather, params_dtype, indices_dtype, (num_indices, batch, outer, gather, inner), check)


def _fill_zero(array, count):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        array[t] = 0
        t += step


def _to_half(src, dst, count):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        dst[t] = float_to_half(src[t])
        t += step


def _scatter_add(indices, dy, acc, total, inner, inner_m, inner_s, num, num_m, num_s, outer, outer_m, outer_s, gather):
    t = INDEX(cuda.grid(1))  # noqa: F821 (INDEX, DIVMOD and load are bound by specialize)
    step = INDEX(cuda.gridsize(1))  # noqa: F821
    while t < total:
        row, k = DIVMOD(t, inner, inner_m, inner_s)  # noqa: F821
        batch_outer, i = DIVMOD(row, num, num_m, num_s)  # noqa: F821
        b, _ = DIVMOD(batch_outer, outer, outer_m, outer_s)  # noqa: F821
        index = np.int64(indices[INDEX(b * num + i)])  # noqa: F821
        if 0 <= index < gather:
            dst = INDEX(INDEX(batch_outer * gather + INDEX(index)) * inner + k)  # noqa: F821
            cuda.atomic.add(acc, dst, load(dy[t]))  # noqa: F821
        t = INDEX(t + step)  # noqa: F821


@functools.cache
def _scatter_kernel(indices_dtype: DataType, dtype: DataType, wide: bool) -> CudaKernel:
    size = _size_type(wide)
    acc = numba.from_dtype(accumulator_dtype(dtype).dtype)[::1]
    argtypes = (numba.from_dtype(indices_dtype.dtype)[::1], numba.from_dtype(dtype.storage_dtype)[::1], acc, *([size] * 11))
    name = f"gather_grad_{indices_dtype.value}_{dtype.value}_{'i64' if wide else 'i32'}"
    return CudaKernel(_scatter_add, name, argtypes, load=load_fn(dtype), **_index_bindings(wide))


@functools.cache
def _fill_kernel(dtype: DataType) -> CudaKernel:
    return CudaKernel(_fill_zero, f"gather_grad_zero_{dtype.value}", (numba.from_dtype(dtype.dtype)[::1], numba.int64))


@functools.cache
def _to_half_kernel() -> CudaKernel:
    return CudaKernel(_to_half, "gather_grad_to_half", (numba.float32[::1], numba.uint16[::1], numba.int64))


def helper_kernels():
    """The index and gradient kernels ep.ops.gather launches, for the PTX check."""
    for pair in _PREPARE_TYPES:
        yield _prepare_kernel(*pair)
    for indices_dtype in (DataType.kInt32, DataType.kInt64):
        for dtype in GRAD_TYPES:
            for wide in (False, True):
                yield _scatter_kernel(indices_dtype, dtype, wide)
    for dtype in dict.fromkeys(accumulator_dtype(dtype) for dtype in GRAD_TYPES):
        yield _fill_kernel(dtype)
    yield _to_half_kernel()


def gather_grad(
    stream, indices, dy, dx, dtype: DataType, batch: int, outer: int, gather: int, inner: int, num_indices: int
) -> None:
    """dx ([batch, outer, gather, inner]) = zeros plus dy ([batch, outer, num_indices, inner]) rows added at
    indices ([batch, num_indices], already wrapped) with atomics; out-of-range rows are dropped."""
    indices_dtype = as_data_type(indices.dtype, "indices")
    dx_count = batch * outer * gather * inner
    dy_count = batch * outer * num_indices * inner
    indices = storage(indices, "indices", DeviceType.kCUDA, indices_dtype, batch * num_indices)
    dy = storage(dy, "dy", DeviceType.kCUDA, dtype, dy_count)
    dx = storage(dx, "dx", DeviceType.kCUDA, dtype, dx_count, writable=True)
    if dx_count == 0:
        return
    acc_dtype = accumulator_dtype(dtype)
    acc = dx if acc_dtype is dtype else cuda.device_array(dx_count, acc_dtype.dtype, stream=stream.native)
    _fill_kernel(acc_dtype).launch(stream, dx_count, acc, dx_count)
    if dy_count:
        wide = _needs_wide(dx_count, dy_count, indices.size)
        _scatter_kernel(indices_dtype, dtype, wide).launch(
            stream,
            dy_count,
            indices,
            dy,
            acc,
            dy_count,
            *_divisor(inner, wide),
            *_divisor(num_indices, wide),
            *_divisor(outer, wide),
            gather,
        )
    if acc is not dx:
        _to_half_kernel().launch(stream, dx_count, acc, dx, dx_count)
