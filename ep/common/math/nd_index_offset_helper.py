"""NdIndexOffsetHelper: flat offset <-> n-d index over C-contiguous dims, inside CPU and CUDA kernels.

Kernels get dims and strides as tuples (UniTuple) of integers; the functions here are scalar
functions, so the same code runs in @njit and numba.cuda kernels.
"""
from __future__ import annotations

from typing import Sequence

from ep.common.jit import scalar_function


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
