"""TensorFill on every device: New's resolution and Launch's checks; it launches Fill's kernels
made to read the value from src on the device (fill.from_buffer)."""
from __future__ import annotations

from typing import Iterator

from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.fill import FillKernels, as_units
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType
from ep.common.runtime.stream import STREAM_TYPES, check_stream
from ep.common.runtime.validate import INT64_MAX, count as check_count
from ep.include.primitive.tensor_fill import TensorFill, TensorFillFactory


class TensorFillImpl(TensorFill):
    def __init__(self, device_type: DeviceType, kernels: FillKernels, dtype: DataType) -> None:
        self.device_type, self.dtype = device_type, dtype
        self._kernel = kernels.kernel(dtype.itemsize)
        self._stream_type = STREAM_TYPES[device_type]

    def Launch(self, stream, src, dst, count: int) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        if type(count) is not int or not 0 <= count <= INT64_MAX:
            count = check_count(count)
        # src must hold its element even when nothing is written: every argument is checked.
        src = storage(src, "src", self.device_type, self.dtype, 1, stream=stream)
        dst = storage(dst, "dst", self.device_type, self.dtype, count, writable=True, stream=stream)
        if count:
            itemsize = self.dtype.itemsize
            self._kernel.launch(stream, as_units(dst, itemsize), as_units(src, itemsize), count)


class TensorFillFactoryImpl(GenericFactory, TensorFillFactory):
    primitive_type = TensorFillImpl

    def New(self, dtype) -> TensorFill | None:
        return self._new((as_data_type(dtype),))

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        for dtype in ALL_TYPES:
            yield None, (dtype,)
