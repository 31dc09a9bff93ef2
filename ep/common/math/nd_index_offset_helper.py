"""NdIndexOffsetHelper: flat offset <-> n-d index over C-contiguous dims, inside CPU and CUDA kernels.

Kernels get dims and strides as tuples (UniTuple) of integers, or on the CPU as rows of an int64
array; the functions here are scalar functions, so the same code runs in @njit and numba.cuda kernels.

split_offsets is the form for kernels of any rank up to MAX_NUM_DIMS with divisions by invariant
sizes (fast_divmod in 32 bits): split_args lays out its arguments on the host, and boxes cuts a
shape too large for 32-bit offsets into launches that each fit.
"""
from __future__ import annotations

import math
from typing import Iterator, Sequence

from ep.common.jit import scalar_function
from ep.common.math.fast_divmod import divisors
from ep.common.runtime.validate import MAX_NUM_DIMS


def contiguous_strides(dims: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of dims (host side)."""
    strides = []
    stride = 1
    for dim in reversed(tuple(dims)):
        strides.append(stride)
        stride *= max(int(dim), 1)
    return tuple(reversed(strides))


def broadcast_strides(src_dims: Sequence[int], dst_dims: Sequence[int]) -> tuple[int, ...]:
    """src's contiguous strides with 0 where src has size 1 and dst does not (equal ranks)."""
    strides = contiguous_strides(src_dims)
    return tuple(0 if s == 1 and d != 1 else st for s, d, st in zip(src_dims, dst_dims, strides))


@scalar_function
def offset_to_index(offset, strides, dim):
    """The index along dim of the element at offset, for strides from contiguous_strides."""
    if dim == 0:
        return offset // strides[0]
    return (offset % strides[dim - 1]) // strides[dim]


@scalar_function
def index_to_offset(index, strides):
    """The flat offset of an n-d index (a tuple) for the given strides."""
    offset = 0
    for dim in range(len(strides)):
        offset += index[dim] * strides[dim]
    return offset


@scalar_function
def map_offset(offset, strides, other_strides):
    """dot(nd index of offset under strides, other_strides): the same element's offset elsewhere.

    With other_strides from broadcast_strides this is where a broadcast element reads from.
    """
    result = 0
    for dim in range(len(strides)):
        index = offset // strides[dim]
        offset -= index * strides[dim]
        result += index * other_strides[dim]
    return result


# The length of split_offsets' tuples: every dim but the outermost.
SPLIT_DIMS = MAX_NUM_DIMS - 1


@scalar_function
def packed_offsets(params, base, ndim, index):
    """Where index (flat over ndim dims) starts in two strided buffers, from one int64 array that
    holds the dims at params[base:], then their strides in the first and in the second buffer."""
    first = 0
    second = 0
    for i in range(ndim - 1, -1, -1):
        dim = params[base + i]
        q = index // dim
        position = index - q * dim
        first += position * params[base + ndim + i]
        second += position * params[base + 2 * ndim + i]
        index = q
    return first, second


@scalar_function
def split_offsets(n, ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1, divmod):
    """(offset under strides0, offset under strides1) of the element at flat offset n of a
    C-contiguous shape of ndim dims, with ndim - 1 divisions.

    split_args lays out the arguments: for each dim but the outermost, innermost first, its size as
    divmod's arguments (sizes, multipliers, shifts) and its two strides; outer0 and outer1 are the
    outermost dim's strides. The loop runs to len(sizes), a constant, so it unrolls and every tuple
    index is static; the uniform break skips the unused dims.
    """
    # Zeros of the strides' type: mixing it with n's (uint32 or int64) never makes a float.
    offset0 = outer0 - outer0
    offset1 = outer1 - outer1
    for d in range(len(sizes)):
        if d + 1 >= ndim:
            break
        n, index = divmod(n, sizes[d], multipliers[d], shifts[d])
        offset0 += index * strides0[d]
        offset1 += index * strides1[d]
    # What is left of n is the outermost index.
    return offset0 + n * outer0, offset1 + n * outer1


def split_args(dims: Sequence[int], strides0: Sequence[int], strides1: Sequence[int], wide: bool) -> tuple:
    """split_offsets' arguments after n for dims (outermost first) and two strides of them:
    (ndim, sizes, multipliers, shifts, strides0, strides1, outer0, outer1), the tuples innermost
    first and padded to SPLIT_DIMS; wide picks divmod64's arguments, else fast_divmod's."""
    if not dims:
        dims, strides0, strides1 = (1,), (0,), (0,)
    inner = tuple(reversed(tuple(dims)))[:-1]
    sizes, multipliers, shifts = divisors(inner, SPLIT_DIMS, wide)
    return len(dims), sizes, multipliers, shifts, _inner_first(strides0), _inner_first(strides1), strides0[0], strides1[0]


def _inner_first(strides: Sequence[int]) -> tuple[int, ...]:
    # All but the outermost, reversed and padded with 0 to SPLIT_DIMS.
    inner = tuple(reversed(tuple(strides)))[:-1]
    return inner + (0,) * (SPLIT_DIMS - len(inner))


def boxes(dims: Sequence[int], limit: int) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(start index, box dims) of boxes that tile a C-contiguous shape of dims in order, each of
    at most limit elements and contiguous: box dims are a range of one dim k and the whole dims
    inside it (its rank is len(dims) - k), k the outermost dim whose inner dims fit in limit."""
    dims = tuple(dims)
    if not dims:
        yield (), ()
        return
    k = 0
    while math.prod(dims[k + 1 :]) > limit:
        k += 1
    inner = dims[k + 1 :]
    step = limit // max(math.prod(inner), 1)
    for outer in _indices(dims[:k]):
        for j in range(0, dims[k], step):
            yield outer + (j,) + (0,) * len(inner), (min(step, dims[k] - j),) + inner


def _indices(dims: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    # Every index of dims, C order.
    if not dims:
        yield ()
        return
    for i in range(dims[0]):
        for rest in _indices(dims[1:]):
            yield (i,) + rest
