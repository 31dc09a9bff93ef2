"""Expand on every device: New's resolution, Launch's checks and a plan cached per dims; kernels in strided_copy."""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.primitive.broadcast_dims import BroadcastDimsPrimitive
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.primitive.strided_copy import CopyArgs, StridedCopyKernels
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.expand import Expand, ExpandFactory


class ExpandImpl(BroadcastDimsPrimitive, Expand):
    def __init__(self, device_type: DeviceType, kernels: StridedCopyKernels, dtype: DataType) -> None:
        super().__init__(device_type, kernels, dtype, self._copy_args, ("src_dims", "dst_dims"))

    def _copy_args(self, src_dims: tuple[int, ...], dst_dims: tuple[int, ...]) -> CopyArgs:
        # Expand is a copy of dst_dims elements reading src with stride 0 along its broadcast dims.
        padded = (1,) * (len(dst_dims) - len(src_dims)) + src_dims
        src_count, dst_count = math.prod(src_dims), math.prod(dst_dims)
        strides = broadcast_strides(padded, dst_dims)
        launches = {} if dst_count else None
        return CopyArgs(self.dtype, src_count, dst_count, 0, 0, dst_dims, strides, contiguous_strides(dst_dims), launches)

    def run(self, stream, args: CopyArgs, src, dst) -> None:
        if args.launches is not None:  # None: an empty dst
            self._kernels.run(stream, args, src, dst, "dst_dims")


class ExpandFactoryImpl(DtypeFactory, ExpandFactory):
    primitive_type = ExpandImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        for src_dims in ((1, 3), (2, 1)):  # a broadcast row and a broadcast column
            x = values(math.prod(src_dims), dtypes[0], src_dims)
            args = {"src_dims": src_dims, "src": x, "dst_dims": (2, 3), "dst": zeros(6, dtypes[0])}
            yield Sample(dtypes, args, {"dst": np.broadcast_to(x, (2, 3)).ravel()})
