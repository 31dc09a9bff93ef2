"""TensorFill on every device: New's resolution and Launch's checks; it launches Fill's kernels
made to read the value from src on the device (fill.from_buffer)."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.fill import FillKernels, as_units
from ep.common.primitive.launch import Count, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.tensor_fill import TensorFill, TensorFillFactory


class TensorFillImpl(Declared, TensorFill):
    # src holds the one value every element of dst gets (it must hold it even when nothing is
    # written: every argument is checked); src may be one of dst's elements, which only ever
    # takes its own value.
    launch = declare(In("src", size="1"), Out("dst", holds=("src",)), Count("count"))

    def __init__(self, device_type: DeviceType, kernels: FillKernels, dtype: DataType) -> None:
        self.device_type, self.dtype = device_type, dtype
        self._kernel = kernels.kernel(dtype.itemsize)

    def run(self, stream, src, dst, count: int) -> None:
        if count:
            itemsize = self.dtype.itemsize
            self._kernel.launch(stream, count, as_units(dst, itemsize), as_units(src, itemsize), count)


class TensorFillFactoryImpl(DtypeFactory, TensorFillFactory):
    primitive_type = TensorFillImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        src = values(1, dtypes[0])
        yield Sample(dtypes, {"src": src, "dst": zeros(4, dtypes[0]), "count": 4}, {"dst": np.repeat(src, 4)})
