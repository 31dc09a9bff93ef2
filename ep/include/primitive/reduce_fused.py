"""ReduceFused: a Reduce of an ElementwiseFused expression's value, computed as its arguments are
read (ep.fuse's reductions: x and y read once, only the reduced result written)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class ReduceFused(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, args: Sequence[object], src_dims: Sequence[int], dst_dims: Sequence[int], dst, correction: float = 1) -> None:
        """Reduce the expression's value over the dims of src_dims where dst_dims has 1 (Reduce's
        layout: the reduced dims one run once dims of size 1 are dropped) into dst: args[i] is
        argument i, flat C-contiguous storage of src_dims' elements for an Input, a real number
        for a Scalar; correction as Reduce's (kVar, kStd)."""


class ReduceFusedFactory(Factory):
    @abc.abstractmethod
    def New(self, op, expression, dst_dtype, *dtypes) -> ReduceFused | None:
        """A ReduceFused of op (a ReduceOp) over expression (one ElementwiseFused node) of
        arguments of dtypes into dst_dtype, where Reduce takes op from the expression's dtype into
        dst_dtype; None otherwise. At most 16 arguments."""
