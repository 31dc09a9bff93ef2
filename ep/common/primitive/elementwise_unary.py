"""ElementwiseUnary on every device: New's resolution, Launch's checks, and what a device supplies."""
from __future__ import annotations

import abc
from typing import Iterator

from ep.common.math.convert import load_fn, store_fn
from ep.common.math.unary_functor import UNARY_FUNCTORS, resolve_unary, unary_combinations
from ep.common.primitive.factory import GenericFactory
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
from ep.common.runtime.validate import INT64_MAX, count as check_count
from ep.include.primitive.elementwise_unary import ElementwiseUnary, ElementwiseUnaryFactory


def unary_bindings(device: DeviceType, op, src_dtype: DataType, dst_dtype: DataType) -> dict[str, object]:
    """The slots of device's unary template for (op, src, dst): formula, load and store."""
    return {
        "formula": UNARY_FUNCTORS[op].formula_for(src_dtype),
        "load": load_fn(src_dtype, device),
        "store": store_fn(dst_dtype, device, src_dtype.compute_dtype),
    }


class ElementwiseUnaryKernels(abc.ABC):
    """What a device supplies: its kernel for (op, src, dst), launched as
    kernel.launch(stream, count, src, dst, count, attr0, attr1) on flat storage."""

    @abc.abstractmethod
    def kernel(self, op, src_dtype: DataType, dst_dtype: DataType):
        """The device kernel of (op, src_dtype, dst_dtype), compiled on its first launch."""

    def all_kernels(self) -> Iterator[object]:
        for op, src_dtype, dst_dtype in unary_combinations():
            yield self.kernel(op, src_dtype, dst_dtype)


class ElementwiseUnaryImpl(ElementwiseUnary):
    def __init__(self, device_type: DeviceType, kernels: ElementwiseUnaryKernels, op, src_dtype, dst_dtype, attrs) -> None:
        self.device_type = device_type
        self.op, self.src_dtype, self.dst_dtype, self.attrs = op, src_dtype, dst_dtype, attrs
        self._kernel = kernels.kernel(op, src_dtype, dst_dtype)
        self._stream_type = STREAM_TYPES[device_type]

    def Launch(self, stream, src, dst, count: int) -> None:
        # Exact types skip the general checks: a tiny launch costs little more than these lines.
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        if type(count) is not int or not 0 <= count <= INT64_MAX:
            count = check_count(count)
        # storage's arguments by position (writable, stream): keywords cost a twentieth of a tiny launch.
        src = storage(src, "src", self.device_type, self.src_dtype, count, False, stream)
        dst = storage(dst, "dst", self.device_type, self.dst_dtype, count, True, stream)
        if count:
            # The attributes by name, not *self.attrs: a star call costs a fifth of a tiny launch.
            attr0, attr1 = self.attrs
            self._kernel.launch(stream, count, src, dst, count, attr0, attr1)


class ElementwiseUnaryFactoryImpl(GenericFactory, ElementwiseUnaryFactory):
    primitive_type = ElementwiseUnaryImpl

    def New(self, op, src_dtype, dst_dtype, attr0=None, attr1=None) -> ElementwiseUnary | None:
        return self._new(resolve_unary(op, src_dtype, dst_dtype, attr0, attr1))

    def Combinations(self):
        for op, src_dtype, dst_dtype in unary_combinations():
            yield op, (src_dtype, dst_dtype)
