"""BroadcastElementwiseUnary: dst = op(src broadcast to dst's dims), both with element strides
(OneFlow's ep/include/primitive/broadcast_elementwise_unary.h; OneFlow builds its expand on it)."""
from __future__ import annotations

import abc
from typing import Sequence

from ep.include.primitive.primitive import Factory, Primitive


class BroadcastElementwiseUnary(Primitive):
    @abc.abstractmethod
    def Launch(
        self, stream, num_src_dims: int, src_dims: Sequence[int], src_strides: Sequence[int], src,
        num_dst_dims: int, dst_dims: Sequence[int], dst_strides: Sequence[int], dst,
    ) -> None:
        """Write op(src[j]) to every element i of dst, j being i's index broadcast to src (NumPy's
        rule: src_dims aligned to the right of dst_dims, each 1 or equal). src and dst are flat
        storage read at sum(index * stride) over their dims (strides in elements, >= 0; dst's may
        not make two elements share memory)."""


class BroadcastElementwiseUnaryFactory(Factory):
    @abc.abstractmethod
    def New(self, op, src_dtype, dst_dtype, max_num_dims: int, attr0=None, attr1=None) -> BroadcastElementwiseUnary | None:
        """A BroadcastElementwiseUnary of op (an ElementwiseUnary op, with its attributes) from
        src_dtype to dst_dtype over at most max_num_dims dims; None where ElementwiseUnary has no
        such op and dtypes, or max_num_dims exceeds ep's limit."""
