"""Gather on CUDA: one thread per output move unit (gather_common)."""
from __future__ import annotations

import functools

from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.primitive.gather import gather_combinations, gather_launch, resolve_gather
from ep.common.runtime.stream import check_stream
from ep.cuda.primitive.gather_common import WIDEST_UNIT, gather_kernels, helper_kernels, launch_gather
from ep.include.primitive.gather import Gather, GatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY


class GatherImpl(Gather):
    def __init__(self, params_dtype: DataType, indices_dtype: DataType) -> None:
        self.params_dtype, self.indices_dtype = params_dtype, indices_dtype

    def Launch(self, stream, indices, num_indices, in_, outer_dim_size, gather_dim_size, inner_dim_size, out, offset=0) -> None:
        check_stream(stream, DeviceType.kCUDA)
        launch = gather_launch(
            DeviceType.kCUDA,
            self.params_dtype,
            self.indices_dtype,
            indices,
            num_indices,
            in_,
            1,
            outer_dim_size,
            gather_dim_size,
            inner_dim_size,
            out,
            offset,
            WIDEST_UNIT,
        )
        if launch is not None:
            launch_gather(stream, launch, batched=False)


@functools.cache
def _primitive(params_dtype: DataType, indices_dtype: DataType) -> GatherImpl:
    return GatherImpl(params_dtype, indices_dtype)


class GatherFactoryImpl(GatherFactory):
    def New(self, params_dtype, indices_dtype) -> Gather | None:
        resolved = resolve_gather(params_dtype, indices_dtype)
        return None if resolved is None else _primitive(*resolved)

    def Combinations(self):
        return gather_combinations()

    def Kernels(self):
        """Every CUDA kernel this factory can launch, for the PTX check, and the index and
        gradient kernels ep.ops.gather launches beside it (the PTX check is their only compile)."""
        yield from gather_kernels(batched=False)
        yield from helper_kernels()


REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, GatherFactory, GatherFactoryImpl)
