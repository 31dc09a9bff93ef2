"""Planning ExpandGrad: which elements of the expanded gradient each input element sums.

After SimplifyBroadcastDims the dims alternate between kept dims (dst size == src size) and
summed dims (dst size 1). Element i of dst starts at map_offset(i, dst_strides, src_strides) in
src and sums `inner` elements `inner_stride` apart (the innermost summed dim) at each of
`num_outer` offsets map_offset(k, outer_strides, outer_src_strides) (the other summed dims).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.primitive.broadcast import simplify_broadcast_dims
from ep.common.primitive.reduce import reduce_dims, reduction_stages
from ep.common.runtime.data_type import HALF_TYPES, INTEGER_TYPES, DataType
from ep.common.runtime.validate import MAX_NUM_DIMS

# What each dtype sums in: float16 and bfloat16 in float32 (as OneFlow), integers in int64 (or
# uint64: wrapping like NumPy's sum with dtype=); bool has no sum.
ACCUMULATE_DTYPES = {
    **{dtype: np.uint64 if dtype is DataType.kUInt64 else np.int64 for dtype in INTEGER_TYPES},
    **{dtype: np.float32 for dtype in HALF_TYPES},
    DataType.kFloat: np.float32,
    DataType.kDouble: np.float64,
}


@dataclass(frozen=True)
class ExpandGradPlan:
    src_count: int
    count: int
    dst_strides: tuple[int, ...]
    src_strides: tuple[int, ...]
    outer_strides: tuple[int, ...]
    outer_src_strides: tuple[int, ...]
    num_outer: int
    inner: int
    inner_stride: int
    # dst's innermost dim when it is kept (its elements are contiguous in src too), else 1.
    row: int
    # The same sums as dims, outer to inner: an output's index over the kept dims and a summed
    # element's index over the summed dims, each dotted with its src strides, add to its offset.
    kept_dims: tuple[int, ...] = ()
    kept_strides: tuple[int, ...] = ()
    summed_dims: tuple[int, ...] = ()
    summed_strides: tuple[int, ...] = ()
    # Where the summed dims are apart: (outer, length, inner) of each of Reduce's one-run sums
    # that make the same sum one run at a time (reduction_stages), the last one's result dst.
    stages: tuple[tuple[int, int, int], ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.dst_strides)

    @property
    def dst_count(self) -> int:
        return self.count


def expand_grad_plan(src_dims: tuple[int, ...], dst_dims: tuple[int, ...]) -> ExpandGradPlan:
    """The plan for summing src of src_dims into dst of dst_dims (dst_dims broadcasts to src_dims)."""
    dst_simple, src_simple = simplify_broadcast_dims(dst_dims, src_dims)
    dst_simple, src_simple = dst_simple or (1,), src_simple or (1,)
    if len(dst_simple) > MAX_NUM_DIMS:
        raise ValueError(f"dst_dims: needs {len(dst_simple)} dims after simplification; at most {MAX_NUM_DIMS} are supported")
    src_strides = contiguous_strides(src_simple)
    summed = [d for d, (n, m) in enumerate(zip(dst_simple, src_simple)) if n != m]
    inner_dim = summed[-1] if summed else None
    outer = tuple(m if d in summed and d != inner_dim else 1 for d, m in enumerate(src_simple))
    return ExpandGradPlan(
        src_count=math.prod(src_dims),
        count=math.prod(dst_dims),
        dst_strides=contiguous_strides(dst_simple),
        src_strides=src_strides,
        outer_strides=contiguous_strides(outer),
        outer_src_strides=tuple(s if o != 1 else 0 for o, s in zip(outer, src_strides)),
        num_outer=math.prod(outer),
        inner=1 if inner_dim is None else src_simple[inner_dim],
        inner_stride=0 if inner_dim is None else src_strides[inner_dim],
        row=1 if inner_dim == len(src_simple) - 1 else src_simple[-1],
        kept_dims=tuple(m for d, m in enumerate(src_simple) if d not in summed),
        kept_strides=tuple(s for d, s in enumerate(src_strides) if d not in summed),
        summed_dims=tuple(src_simple[d] for d in summed),
        summed_strides=tuple(src_strides[d] for d in summed),
        stages=tuple(reduce_dims(*layout)[:3] for layout in reduction_stages(src_simple, summed)) if len(summed) > 1 else (),
    )
