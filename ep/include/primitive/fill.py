"""Fill: dst[i] = scalar over count elements (OneFlow's ep/include/primitive/fill.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class Fill(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, dst, scalar, count: int) -> None:
        """Write scalar, converted to the primitive's dtype, to dst[i] for i < count; dst is flat
        C-contiguous storage."""


class FillFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> Fill | None:
        """A Fill writing elements of dtype, or None if unsupported."""
