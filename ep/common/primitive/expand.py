"""Expand on every device: New's resolution, Launch's checks and a plan cached per dims; kernels in strided_copy."""
from __future__ import annotations

import math
from typing import Iterator, NamedTuple

from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.strided_copy import BroadcastDimsCache, CopyLaunch, StridedCopyKernels, plan_copy
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.stream import STREAM_TYPES, check_stream
from ep.include.primitive.expand import Expand, ExpandFactory


class ExpandShape(NamedTuple):
    """What a Launch for one (src_dims, dst_dims) needs besides the buffers: counts, strides, and plans by alignment."""

    src_count: int
    dst_count: int
    dst_dims: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    launches: dict[int, CopyLaunch]


def _expand_shape(src_dims: tuple[int, ...], dst_dims: tuple[int, ...]) -> ExpandShape:
    padded = (1,) * (len(dst_dims) - len(src_dims)) + src_dims
    strides = broadcast_strides(padded, dst_dims)
    return ExpandShape(math.prod(src_dims), math.prod(dst_dims), dst_dims, strides, contiguous_strides(dst_dims), {})


class ExpandImpl(Expand):
    def __init__(self, device_type: DeviceType, kernels: StridedCopyKernels, dtype: DataType) -> None:
        self.device_type = device_type
        self.dtype = dtype
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]
        self._shapes = BroadcastDimsCache(_expand_shape, ("src_dims", "dst_dims"))

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        # Written for tiny launches, whose cost is this function: one lookup, a few checks, one call.
        if type(stream) is not self._stream_type:
            check_stream(stream, self.device_type)
        shape = self._shapes.get(src_dims, dst_dims)
        src = storage(src, "src", self.device_type, self.dtype, shape.src_count)
        dst = storage(dst, "dst", self.device_type, self.dtype, shape.dst_count, writable=True)
        if shape.dst_count == 0:
            return
        kernels = self._kernels
        alignment = kernels.alignment(src, dst)
        launch = shape.launches.get(alignment)
        if launch is None:
            itemsize = self.dtype.itemsize
            launch = plan_copy(kernels, itemsize, shape.dst_dims, shape.src_strides, shape.dst_strides, src, dst, "dst_dims")
            shape.launches[alignment] = launch
        kernels.launch(stream, launch, src, dst)


class ExpandFactoryImpl(GenericFactory, ExpandFactory):
    primitive_type = ExpandImpl

    def New(self, dtype) -> Expand | None:
        return self._new((as_data_type(dtype),))

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in ALL_TYPES:
            yield None, (dtype,)
