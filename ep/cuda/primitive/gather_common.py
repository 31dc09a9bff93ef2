"""What the CUDA kernels of Gather, BatchGather and UnsortedSegmentSum share: index widths, the
divisions by invariant sizes, and the bounds check that runs before either writes.

Each kernel comes in two index widths: 32-bit, with fast_divmod's multiply-high in place of
every division, when every buffer fits in 2**31 - 1 elements, and 64-bit with plain division
otherwise.
"""
from __future__ import annotations

import functools

import numba
import numpy as np
from numba import cuda

from ep.common.jit import scalar_function, template
from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT, fast_divmod, fast_divmod_params
from ep.common.primitive.gather import GatherSizes, gather_row
from ep.common.runtime.data_type import INDEX_TYPES, DataType
from ep.cuda.kernel import CudaKernel


@scalar_function
def _divmod64(n, divisor, multiplier, shift):
    quotient = n // divisor
    return quotient, n - quotient * divisor


def index_bindings(wide: bool) -> dict:
    """The INDEX type and DIVMOD slots of a kernel's 64-bit (wide) or 32-bit variant."""
    return {"INDEX": np.int64, "DIVMOD": _divmod64} if wide else {"INDEX": np.uint32, "DIVMOD": fast_divmod}


def size_type(wide: bool):
    """The Numba type of a size argument of a 64-bit (wide) or 32-bit kernel."""
    return numba.int64 if wide else numba.uint32


def divisor(value: int, wide: bool) -> tuple[int, int, int]:
    """(divisor, multiplier, shift) kernel arguments for dividing by value."""
    return (value, 0, 0) if wide else (value, *fast_divmod_params(value))


def needs_wide(*counts: int) -> bool:
    """Whether buffers of these element counts need the 64-bit kernels."""
    return max(counts) > FAST_DIVMOD_LIMIT


@template()
def _first_bad(indices, count, lo, hi, size, wrap, first):
    t = cuda.grid(1)
    step = cuda.gridsize(1)
    while t < count:
        if gather_row(np.int64(indices[t]), lo, hi, size, wrap) < 0:
            cuda.atomic.min(first, 0, t)
        t += step


@functools.cache
def bounds_kernel(indices_dtype: DataType) -> CudaKernel:
    """The kernel that finds the first index selecting no row, with an atomic min of positions."""
    argtypes = (numba.from_dtype(indices_dtype.dtype)[::1], *([numba.int64] * 5), numba.int64[::1])
    return CudaKernel(_first_bad, f"gather_bounds_{indices_dtype.value}", argtypes)


def bounds_kernels():
    """The bounds-check kernel of every index dtype."""
    return [bounds_kernel(dtype) for dtype in INDEX_TYPES]


def first_bad(stream, indices, indices_dtype: DataType, sizes: GatherSizes, wrap: bool) -> int:
    """The position of the first of the launch's indices (flat device storage) that selects no
    row, or -1; only that one number comes back to the host."""
    count = sizes.index_count
    if count == 0:
        return -1
    first = cuda.to_device(np.array([count], np.int64), stream=stream.native)
    bounds_kernel(indices_dtype).launch(stream, count, indices, count, sizes.lo, sizes.hi, sizes.gather, int(wrap), first)
    position = first.copy_to_host(stream=stream.native)
    stream.Sync()
    return int(position[0]) if position[0] < count else -1


def checked_launch(primitive, plan: tuple, stream, indices, src, dst) -> tuple[int, tuple]:
    """(-1, or with check_bounds the first bad index's position; the buffers as flat storage)."""
    sizes = plan[0]
    buffers = primitive.checked_buffers(sizes, indices, src, dst)
    bad = first_bad(stream, buffers[0], primitive.indices_dtype, sizes, primitive.wrap) if primitive.check else -1
    return bad, buffers
