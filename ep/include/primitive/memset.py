"""Memset: count bytes of ptr set to value (OneFlow's ep/include/primitive/memset.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class Memset(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, ptr, value: int, count: int) -> None:
        """Set the first count bytes of ptr (a C-contiguous array of any dtype on the device) to
        value, a byte (0 <= value <= 255)."""


class MemsetFactory(Factory):
    @abc.abstractmethod
    def New(self) -> Memset | None:
        """A Memset, or None if unsupported."""
