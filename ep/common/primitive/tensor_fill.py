"""TensorFill on every device: New's resolution and Launch's checks; it launches Fill's kernels
made to read the value from src on the device (fill.from_buffer)."""
from __future__ import annotations


from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.fill import FillKernels, as_units
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
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
            self._kernel.launch(stream, count, as_units(dst, itemsize), as_units(src, itemsize), count)


class TensorFillFactoryImpl(DtypeFactory, TensorFillFactory):
    primitive_type = TensorFillImpl
