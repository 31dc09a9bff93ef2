"""ExpandGrad on every device: New's resolution, Launch's checks, a plan cached per dims, and what a device supplies."""
from __future__ import annotations

import abc
from typing import Iterator

from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, ExpandGradPlan, expand_grad_plan
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.strided_copy import BroadcastDimsCache
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.stream import STREAM_TYPES, check_stream
from ep.include.primitive.expand_grad import ExpandGrad, ExpandGradFactory


class ExpandGradKernels(abc.ABC):
    """What a device supplies: the launch of plan's sums of src into dst (flat storage of dtype)."""

    @abc.abstractmethod
    def launch(self, stream, dtype: DataType, plan: ExpandGradPlan, src, dst) -> None:
        """Sum src into dst as plan says (dst holds at least one element)."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a launch can run, for the PTX check."""


class ExpandGradImpl(ExpandGrad):
    def __init__(self, device_type: DeviceType, kernels: ExpandGradKernels, dtype: DataType) -> None:
        self.device_type = device_type
        self.dtype = dtype
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]
        # Keyed (dst_dims, src_dims): dst_dims is the one that broadcasts.
        self._plans = BroadcastDimsCache(lambda dst_dims, src_dims: expand_grad_plan(src_dims, dst_dims), ("dst_dims", "src_dims"))

    def Launch(self, stream, src_dims, src, dst_dims, dst) -> None:
        if type(stream) is not self._stream_type:
            check_stream(stream, self.device_type)
        plan = self._plans.get(dst_dims, src_dims)
        src = storage(src, "src", self.device_type, self.dtype, plan.src_count)
        dst = storage(dst, "dst", self.device_type, self.dtype, plan.count, writable=True)
        if plan.count:
            self._kernels.launch(stream, self.dtype, plan, src, dst)


class ExpandGradFactoryImpl(GenericFactory, ExpandGradFactory):
    primitive_type = ExpandGradImpl

    def New(self, dtype) -> ExpandGrad | None:
        dtype = as_data_type(dtype)
        return self._new((dtype,) if dtype in ACCUMULATE_DTYPES else None)

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in ACCUMULATE_DTYPES:
            yield None, (dtype,)
