"""Cast: dst[i] = src[i] converted from from_dtype to to_dtype (OneFlow's ep/include/primitive/cast.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class Cast(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src, dst, count: int) -> None:
        """Write src[i] converted to the destination dtype to dst[i] for i < count (flat C-contiguous
        storage), by the unary cast op's rules (UnaryOp.kCast)."""


class CastFactory(Factory):
    @abc.abstractmethod
    def New(self, from_dtype, to_dtype) -> Cast | None:
        """A Cast from from_dtype to to_dtype, or None if unsupported."""
