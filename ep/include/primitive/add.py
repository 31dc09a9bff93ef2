"""Add: dst = srcs[0] + ... + srcs[arity - 1], elementwise (OneFlow's ep/include/primitive/add.h)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class Add(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, srcs: Sequence[object], arity: int, dst, count: int) -> None:
        """Write the sum of srcs[0][i], ..., srcs[arity - 1][i] to dst[i] for i < count: arity >= 1
        flat C-contiguous buffers (dst may be one of them; a buffer overlapping dst otherwise is a
        ValueError), each element summed as the binary add op."""


class AddFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> Add | None:
        """An Add of dtype, or None if unsupported."""
