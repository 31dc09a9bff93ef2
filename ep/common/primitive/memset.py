"""Memset on every device: Launch's checks; it launches Fill's one-byte kernel (fill.py)."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.element import ElementKernels
from ep.common.primitive.fill import fill_kernel
from ep.common.primitive.sample import Sample, zeros
from ep.common.runtime.byte_storage import byte_storage
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
from ep.common.runtime.validate import INT64_MAX, count as check_count, integer
from ep.include.primitive.memset import Memset, MemsetFactory


def byte_value(value: object, name: str = "value") -> np.uint8:
    """value as a byte: an integer (not a bool) in [0, 255]; TypeError or ValueError naming name."""
    value = integer(value, name)
    if not 0 <= value <= 255:
        raise ValueError(f"{name}: {value} is not a byte; expected 0 <= {name} <= 255")
    return np.uint8(value)


class MemsetImpl(Memset):
    def __init__(self, device_type: DeviceType, kernels: ElementKernels) -> None:
        self.device_type = device_type
        self._kernel = fill_kernel(kernels, 1)
        self._stream_type = STREAM_TYPES[device_type]

    def Launch(self, stream, ptr, value: int, count: int) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        if type(count) is not int or not 0 <= count <= INT64_MAX:
            count = check_count(count)
        byte = byte_value(value)
        ptr = byte_storage(ptr, "ptr", self.device_type, count, writable=True, stream=stream)
        if count:
            self._kernel.launch(stream, count, ptr, count, (byte,))


class MemsetFactoryImpl(GenericFactory, MemsetFactory):
    primitive_type = MemsetImpl

    def New(self) -> Memset | None:
        return self._new(())

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        # Bytes of any array: listed as uint8, the unit it writes.
        yield None, (DataType.kUInt8,)

    def Kernels(self) -> Iterator[object]:
        yield fill_kernel(self.kernels, 1)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        expected = np.array([0xAB] * 6 + [0, 0], np.uint8)
        yield Sample((), {"ptr": zeros(8, DataType.kUInt8), "value": 0xAB, "count": 6}, {"ptr": expected})
