"""ExpandGrad on every device: New's resolution, Launch's checks, a plan cached per dims, and what a device supplies."""
from __future__ import annotations

import abc
import math
from typing import Iterator

from ep.common.primitive.expand_grad_plan import ACCUMULATE_DTYPES, ExpandGradPlan, expand_grad_plan
from ep.common.primitive.broadcast_dims import BroadcastDimsPrimitive
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.expand_grad import ExpandGrad, ExpandGradFactory
from ep.include.primitive.memcpy import MemcpyFactory, MemcpyKind
from ep.include.primitive.primitive import NewPrimitive


class ExpandGradKernels(abc.ABC):
    """What a device supplies: the launch of plan's sums of src into dst (flat storage of dtype)."""

    @abc.abstractmethod
    def launch(self, stream, dtype: DataType, plan: ExpandGradPlan, src, dst) -> None:
        """Sum src into dst as plan says (dst holds at least one element)."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel a launch can run, for the PTX check."""


def _plan(dst_dims: tuple[int, ...], src_dims: tuple[int, ...]) -> ExpandGradPlan:
    return expand_grad_plan(src_dims, dst_dims)


class ExpandGradImpl(BroadcastDimsPrimitive, ExpandGrad):
    def __init__(self, device_type: DeviceType, kernels: ExpandGradKernels, dtype: DataType) -> None:
        # dst_dims is the one that broadcasts.
        super().__init__(device_type, kernels, dtype, _plan, ("dst_dims", "src_dims"))

    def run(self, stream, plan, src, dst) -> None:
        if plan.src_count == plan.dst_count:
            # Nothing is summed: src as it is, bit for bit, as autograd passes dy through (a sum
            # from 0.0 would make -0.0 +0.0).
            copy = NewPrimitive(MemcpyFactory, self.device_type, MemcpyKind.kAuto)
            copy.Launch(stream, dst, src, plan.dst_count * self.dtype.itemsize)
        elif plan.dst_count:
            self._kernels.launch(stream, self.dtype, plan, src, dst)


class ExpandGradFactoryImpl(DtypeFactory, ExpandGradFactory):
    primitive_type = ExpandGradImpl
    dtypes = ACCUMULATE_DTYPES

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        x = values(6, dtypes[0], (2, 3))
        for dst_dims in ((1, 3), (2, 1)):  # summed over rows, over columns
            axis = dst_dims.index(1)
            args = {"src_dims": (2, 3), "src": x, "dst_dims": dst_dims, "dst": zeros(math.prod(dst_dims), dtypes[0])}
            yield Sample(dtypes, args, {"dst": x.sum(axis, dtype=x.dtype).ravel()})
