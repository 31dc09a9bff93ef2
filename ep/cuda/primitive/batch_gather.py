"""BatchGather on CUDA: the gather kernel (gather_common) with a batch dimension."""
from __future__ import annotations

import functools

from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.primitive.gather import gather_combinations, gather_launch, resolve_gather
from ep.common.runtime.stream import check_stream
from ep.cuda.primitive.gather_common import WIDEST_UNIT, gather_kernels, launch_gather
from ep.include.primitive.batch_gather import BatchGather, BatchGatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


class BatchGatherImpl(BatchGather):
    def __init__(self, params_dtype: DataType, indices_dtype: DataType) -> None:
        self.params_dtype, self.indices_dtype = params_dtype, indices_dtype

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
        check_stream(stream, DeviceType.kCUDA)
        launch = gather_launch(
            DeviceType.kCUDA,
            self.params_dtype,
            self.indices_dtype,
            indices,
            num_indices,
            in_,
            batch_dim_size,
            outer_dim_size,
            gather_dim_size,
            inner_dim_size,
            out,
            offset,
            WIDEST_UNIT,
        )
        if launch is not None:
            launch_gather(stream, launch, batched=True)


@functools.cache
def _primitive(params_dtype: DataType, indices_dtype: DataType) -> BatchGatherImpl:
    return BatchGatherImpl(params_dtype, indices_dtype)


class BatchGatherFactoryImpl(BatchGatherFactory):
    def New(self, params_dtype, indices_dtype) -> BatchGather | None:
        resolved = resolve_gather(params_dtype, indices_dtype)
        return None if resolved is None else _primitive(*resolved)

    def Combinations(self):
        return gather_combinations()

    def Kernels(self):
        """Every CUDA kernel this factory can launch, for the PTX check."""
        return gather_kernels(batched=True)


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, BatchGatherFactory, BatchGatherFactoryImpl)
