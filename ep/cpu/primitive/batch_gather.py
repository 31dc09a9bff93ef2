"""BatchGather on the CPU: the shared gather kernel (gather_common) with a batch dimension."""
from __future__ import annotations

import functools

from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.primitive.gather import gather_combinations, resolve_gather
from ep.common.runtime.stream import CpuStream, check_stream
from ep.cpu.primitive.gather_common import gather_launcher
from ep.include.primitive.batch_gather import BatchGather, BatchGatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


class BatchGatherImpl(BatchGather):
    def __init__(self, params_dtype: DataType, indices_dtype: DataType) -> None:
        self.params_dtype, self.indices_dtype = params_dtype, indices_dtype
        self._launcher = gather_launcher(params_dtype, indices_dtype)

    def Launch(
        self,
        stream,
        indices,
        num_indices,
        in_,
        batch_dim_size,
        outer_dim_size,
        gather_dim_size,
        inner_dim_size,
        out,
        offset=0,
    ) -> None:
        # A CpuStream is a cpu stream by construction; anything else gets the full check.
        if type(stream) is not CpuStream:
            check_stream(stream, DeviceType.kCPU)
        launcher = self._launcher
        try:
            plan = launcher.plan(num_indices, batch_dim_size, outer_dim_size, gather_dim_size, inner_dim_size, offset)
        except TypeError:
            # An unhashable argument, or a bad one: the uncached plan raises the error that names it.
            plan = launcher.uncached_plan(num_indices, batch_dim_size, outer_dim_size, gather_dim_size, inner_dim_size, offset)
        launcher.run(plan, stream, indices, in_, out)


@functools.cache
def _primitive(params_dtype: DataType, indices_dtype: DataType) -> BatchGatherImpl:
    return BatchGatherImpl(params_dtype, indices_dtype)


class BatchGatherFactoryImpl(BatchGatherFactory):
    def New(self, params_dtype, indices_dtype) -> BatchGather | None:
        resolved = resolve_gather(params_dtype, indices_dtype)
        return None if resolved is None else _primitive(*resolved)

    def Combinations(self):
        return gather_combinations()


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, BatchGatherFactory, BatchGatherFactoryImpl)
