"""Expand on every device: New's resolution, Launch's checks and a plan cached per dims; kernels in strided_copy."""
from __future__ import annotations

import math
from typing import Iterator, NamedTuple

from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.strided_copy import CopyLaunch, StridedCopyKernels, check_broadcast_dims, plan_copy
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.stream import STREAM_TYPES, check_stream
from ep.include.primitive.expand import Expand, ExpandFactory

# Plans kept per primitive; a program cycling through more shapes rebuilds them.
MAX_CACHED_PLANS = 512


class ExpandShape(NamedTuple):
    """What a Launch for one (src_dims, dst_dims) needs besides the buffers: counts, and plans by alignment."""

    src_dims: tuple[int, ...]
    dst_dims: tuple[int, ...]
    src_count: int
    dst_count: int
    launches: dict[int, CopyLaunch]


class ExpandImpl(Expand):
    def __init__(self, device_type: DeviceType, kernels: StridedCopyKernels, dtype: DataType) -> None:
        self.device_type = device_type
        self.dtype = dtype
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]
        self._shapes: dict[tuple, ExpandShape] = {}

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        # Written for tiny launches, whose cost is this function: one lookup, a few checks, one call.
        if type(stream) is not self._stream_type:
            check_stream(stream, self.device_type)
        # The cache is keyed by the caller's tuples. Floats and bools compare equal to ints, so a
        # hit counts only when every dim is an int; anything else takes the checking path.
        try:
            shape = self._shapes[src_dims, dst_dims]
        except (KeyError, TypeError):
            shape = self._new_shape(src_dims, dst_dims)
        else:
            for d in src_dims:
                if type(d) is not int:
                    shape = self._new_shape(src_dims, dst_dims)
            for d in dst_dims:
                if type(d) is not int:
                    shape = self._new_shape(src_dims, dst_dims)
        src = storage(src, "src", self.device_type, self.dtype, shape.src_count)
        dst = storage(dst, "dst", self.device_type, self.dtype, shape.dst_count, writable=True)
        if shape.dst_count == 0:
            return
        kernels = self._kernels
        alignment = kernels.alignment(src, dst)
        launch = shape.launches.get(alignment)
        if launch is None:
            padded = (1,) * (len(shape.dst_dims) - len(shape.src_dims)) + shape.src_dims
            launch = shape.launches[alignment] = plan_copy(
                kernels,
                self.dtype.itemsize,
                shape.dst_dims,
                broadcast_strides(padded, shape.dst_dims),
                contiguous_strides(shape.dst_dims),
                src,
                dst,
                "dst_dims",
            )
        kernels.launch(stream, launch, src, dst)

    def _new_shape(self, src_dims, dst_dims) -> ExpandShape:
        src_dims, dst_dims = check_broadcast_dims(src_dims, dst_dims, ("src_dims", "dst_dims"))
        key = (src_dims, dst_dims)
        shape = self._shapes.get(key)
        if shape is None:
            shape = ExpandShape(src_dims, dst_dims, math.prod(src_dims), math.prod(dst_dims), {})
            if len(self._shapes) >= MAX_CACHED_PLANS:
                self._shapes.clear()
            self._shapes[key] = shape
        return shape


class ExpandFactoryImpl(GenericFactory, ExpandFactory):
    primitive_type = ExpandImpl

    def New(self, dtype) -> Expand | None:
        return self._new((as_data_type(dtype),))

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in ALL_TYPES:
            yield None, (dtype,)
