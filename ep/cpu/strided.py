"""Where a row of a strided CPU span starts in each of its operands: the spans that map each row's
start once, then step along the row with the operands' innermost strides (BroadcastElementwiseUnary's
and Where's general paths)."""
from __future__ import annotations

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.nd_index_offset_helper import offset_to_index


@scalar_function
def row_offsets(offset: int, strides: np.ndarray, offsets: np.ndarray) -> None:
    """offsets[k] = where the element at flat offset of the launch's dims lies in operand k, for
    k < offsets.size: strides holds a row of element strides per operand, and the dims' contiguous
    strides in its last row. The innermost dim is not read (offset starts a row). offsets is an
    array of the span's, not a returned tuple: a tuple's length could not follow the operands'."""
    ndim = strides.shape[1]
    positions = strides[strides.shape[0] - 1]
    for k in range(offsets.size):
        offsets[k] = 0
    for d in range(ndim - 1):
        index = offset_to_index(offset, positions, d)
        for k in range(offsets.size):
            offsets[k] += index * strides[k, d]
