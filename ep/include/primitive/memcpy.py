"""Memcpy: count bytes from src to dst, between host and device memory as its MemcpyKind says
(OneFlow's ep/include/primitive/memcpy.h)."""
from __future__ import annotations

import abc

from ep.common.runtime.names import NamedEnum, lookup
from ep.include.primitive.primitive import Factory, Primitive


class MemcpyKind(NamedEnum):
    """Where a Memcpy's buffers live, as OneFlow names it: host (the CPU's memory) or device."""

    kAuto = "auto"  # from the buffers themselves
    kHtoD = "htod"
    kDtoH = "dtoh"
    kDtoD = "dtod"


def as_memcpy_kind(kind: object, name: str = "kind") -> MemcpyKind:
    """A MemcpyKind from a MemcpyKind or its name ("kHtoD", "htod")."""
    return lookup(MemcpyKind, kind, name, "a memcpy kind", "kHtoD")


class Memcpy(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, dst, src, count: int) -> None:
        """Copy the first count bytes of src to dst (C-contiguous arrays of any dtype, where the
        primitive's kind says), in stream order; the ranges must not overlap unless they are one."""


class MemcpyFactory(Factory):
    @abc.abstractmethod
    def New(self, kind) -> Memcpy | None:
        """A Memcpy of kind (a MemcpyKind or its name), or None if this device has none."""
