"""What Expand and ExpandGrad check alike: dims where one broadcasts to the other, a plan per pair, the buffers."""
from __future__ import annotations

import math
from typing import Callable

from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX, dims as check_dims

# Dims a caller may name before merging (NumPy's limit); what kernels index is bounded by MAX_NUM_DIMS.
MAX_CALLER_DIMS = 64


def check_broadcast_dims(small: object, large: object, names: tuple[str, str]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(small, large) as int tuples if small broadcasts to large (aligned from the right, each dim equal or 1)."""
    small, large = check_dims(small, names[0], MAX_CALLER_DIMS), check_dims(large, names[1], MAX_CALLER_DIMS)
    if len(small) > len(large):
        raise ValueError(f"{names[0]}: has {len(small)} dims, more than the {len(large)} of {names[1]}")
    lead = len(large) - len(small)
    for i, s in enumerate(small):
        d = large[lead + i]
        if s != d and s != 1:
            raise ValueError(f"{names[0]}[{i}] = {s} does not broadcast to {names[1]}[{lead + i}] = {d}; expected {d} or 1")
    if math.prod(large) > INT64_MAX:
        raise ValueError(f"{names[1]}: {large} holds more than 2**63 - 1 elements")
    return small, large


class BroadcastDimsPrimitive(Declared):
    """A primitive of dtype on device_type whose Launch takes (stream, src_dims, src, dst_dims, dst).

    make(small, large) plans a pair of checked dims; its result has src_count and dst_count, the
    elements each buffer must hold. names says which of (src_dims, dst_dims) is the small one. dst
    holds src's elements at other offsets (or sums of them): they share no memory.
    """

    launch = declare(
        Attr("src_dims"), In("src", size="plan.src_count"), Attr("dst_dims"), Out("dst", size="plan.dst_count"),
        plan=("src_dims", "dst_dims"),
    )

    def __init__(self, device_type: DeviceType, kernels: object, dtype: DataType, make: Callable, names: tuple[str, str]) -> None:
        self.device_type = device_type
        self.dtype = dtype
        self._kernels = kernels
        self._small_is_src = names[0] == "src_dims"
        self._make, self._names = make, names

    def plan(self, src_dims, dst_dims):
        small, large = (src_dims, dst_dims) if self._small_is_src else (dst_dims, src_dims)
        return self._make(*check_broadcast_dims(small, large, self._names))
