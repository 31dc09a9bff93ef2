"""Expand: broadcast a C-contiguous src into a C-contiguous dst (NumPy broadcasting, dims aligned from the right)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class Expand(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src_dims: Sequence[int], src, dst_dims: Sequence[int], dst) -> None:
        """Write src (storage of shape src_dims) broadcast to dst_dims into dst (storage of dst_dims).

        len(src_dims) <= len(dst_dims) and each src dim equals its dst dim or is 1.
        """


class ExpandFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> Expand | None:
        """An Expand moving elements of dtype, or None if unsupported."""
