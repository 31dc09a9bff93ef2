"""TensorFill: dst[i] = src[0] over count elements, src a one-element buffer on the device
(OneFlow's ep/include/primitive/tensor_fill.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class TensorFill(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src, dst, count: int) -> None:
        """Write src's first element to dst[i] for i < count, read on the device in stream order
        (the host never waits for it); src and dst are flat C-contiguous storage of the dtype."""


class TensorFillFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> TensorFill | None:
        """A TensorFill of elements of dtype, or None if unsupported."""
