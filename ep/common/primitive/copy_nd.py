"""CopyNd on every device: New's resolution, Launch's checks and the plan cache; kernels in strided_copy."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.primitive.factory import MaxDimsFactory
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.plan_cache import PlanCache
from ep.common.primitive.strided_copy import CopyArgs, StridedCopyKernels, span
from ep.common.runtime.buffer import address, storage
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
from ep.common.runtime.validate import count as check_count, dims as check_dims
from ep.include.primitive.copy_nd import CopyNd, CopyNdFactory


def _dims(value: object, name: str, num_dims: int) -> tuple[int, ...]:
    checked = check_dims(value, name, num_dims)
    if len(checked) != num_dims:
        raise ValueError(f"{name}: has {len(checked)} entries; expected num_dims = {num_dims}")
    return checked


def _dot(index: tuple[int, ...], strides: tuple[int, ...]) -> int:
    return sum(i * s for i, s in zip(index, strides))


class CopyNdImpl(CopyNd):
    def __init__(self, device_type: DeviceType, kernels: StridedCopyKernels, max_num_dims: int) -> None:
        self.device_type = device_type
        self.max_num_dims = max_num_dims
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]
        # Keyed by the caller's own arguments: a repeated launch skips every check.
        self._plans = PlanCache(self._check)

    def Launch(self, stream, data_type, num_dims, dst, dst_dims, dst_pos, src, src_dims, src_pos, extent, src_strides=None) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        args = self._plans.get(data_type, num_dims, dst_dims, dst_pos, src_dims, src_pos, extent, src_strides)
        src = storage(src, "src", self.device_type, args.data_type, args.src_count, stream=stream)
        dst = storage(dst, "dst", self.device_type, args.data_type, args.dst_count, writable=True, stream=stream)
        if args.launches is not None:  # None: an empty box
            if self.device_type is not DeviceType.kCPU or np.may_share_memory(src, dst):
                _refuse_overlap(src, dst, args)
            self._kernels.run(stream, args, src, dst, "extent")


    def _check(self, data_type, num_dims, dst_dims, dst_pos, src_dims, src_pos, extent, src_strides) -> CopyArgs:
        data_type = as_data_type(data_type, "data_type")
        num_dims = check_count(num_dims, "num_dims")
        if not 1 <= num_dims <= self.max_num_dims:
            raise ValueError(f"num_dims: {num_dims} is outside 1..{self.max_num_dims} (the max_num_dims given to New)")
        dst_dims, dst_pos = _dims(dst_dims, "dst_dims", num_dims), _dims(dst_pos, "dst_pos", num_dims)
        src_dims, src_pos = _dims(src_dims, "src_dims", num_dims), _dims(src_pos, "src_pos", num_dims)
        extent = _dims(extent, "extent", num_dims)
        for side, dims, pos in (("dst", dst_dims, dst_pos), ("src", src_dims, src_pos)):
            for i, (d, p, e) in enumerate(zip(dims, pos, extent)):
                if p + e > d:
                    raise IndexError(f"{side}_pos[{i}] + extent[{i}] = {p} + {e} = {p + e} exceeds {side}_dims[{i}] = {d}")
        if src_strides is None:
            src_strides = contiguous_strides(src_dims)
        else:
            src_strides = _dims(src_strides, "src_strides", num_dims)
        dst_strides = contiguous_strides(dst_dims)
        return CopyArgs(
            data_type,
            span(src_dims, src_strides),
            span(dst_dims, dst_strides),
            _dot(src_pos, src_strides),
            _dot(dst_pos, dst_strides),
            extent,
            src_strides,
            dst_strides,
            None if 0 in extent else {},
        )


def _refuse_overlap(src, dst, args: CopyArgs) -> None:
    """ValueError when the copied boxes' byte ranges intersect (a copy runs in no set order), unless
    they are the very same elements."""
    itemsize = args.data_type.itemsize
    lo0 = address(src) + args.src_offset * itemsize
    hi0 = lo0 + span(args.dims, args.src_strides) * itemsize
    lo1 = address(dst) + args.dst_offset * itemsize
    hi1 = lo1 + span(args.dims, args.dst_strides) * itemsize
    if lo0 == lo1 and args.src_strides == args.dst_strides:
        return  # each element copied onto itself
    if lo0 < hi1 and lo1 < hi0:
        raise ValueError(
            f"dst, src: the boxes copied span bytes [{lo1:#x}, {hi1:#x}) and [{lo0:#x}, {hi0:#x}), which intersect;"
            " expected separate memory (copy through a temporary)"
        )


class CopyNdFactoryImpl(MaxDimsFactory, CopyNdFactory):
    primitive_type = CopyNdImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        (dtype,) = dtypes
        x = values(6, dtype)
        # A box of a contiguous array, and a strided (transposed) view: element (i, j) at i + 2 j.
        for strides, picked in ((None, x), ((1, 2), x[np.arange(2)[:, None] + 2 * np.arange(3)])):
            args = {
                "data_type": dtype, "num_dims": 2, "dst": zeros(6, dtype), "dst_dims": (2, 3), "dst_pos": (0, 0), "src": x,
                "src_dims": (2, 3), "src_pos": (0, 0), "extent": (2, 3), "src_strides": strides,
            }
            yield Sample((2,), args, {"dst": picked.ravel()})
