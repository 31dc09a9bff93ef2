"""ElementwiseUnary: dst[i] = op(src[i]) over count elements."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class ElementwiseUnary(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src, dst, count: int) -> None:
        """Write op(src[i]) to dst[i] for i < count; src and dst are flat C-contiguous storage."""


class ElementwiseUnaryFactory(Factory):
    @abc.abstractmethod
    def New(self, op, src_dtype, dst_dtype, attr0=None, attr1=None) -> ElementwiseUnary | None:
        """An ElementwiseUnary for op from src_dtype to dst_dtype, or None if unsupported."""
