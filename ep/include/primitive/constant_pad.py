"""ConstantPad: dst = src padded with a constant on each side of each dim (OneFlow's ep/include/primitive/constant_pad.h)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class ConstantPad(Primitive):
    @abc.abstractmethod
    def Launch(
        self,
        stream,
        num_dims: int,
        src_dims: Sequence[int],
        src,
        padding_before: Sequence[int],
        padding_after: Sequence[int],
        pad_value,
        dst,
    ) -> None:
        """Write src (C-contiguous storage of shape src_dims) into dst (C-contiguous storage of shape
        src_dims[i] + padding_before[i] + padding_after[i]) at offset padding_before, and pad_value
        (converted to the primitive's dtype) everywhere else.

        A negative padding crops that many elements from its side (torch.nn.functional.pad's rule,
        this port's addition to OneFlow's non-negative paddings); no dst dim may end up negative.
        """


class ConstantPadFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> ConstantPad | None:
        """A ConstantPad of elements of dtype, or None if unsupported."""
