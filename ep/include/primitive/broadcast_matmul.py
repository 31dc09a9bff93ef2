"""BroadcastMatmul: matrices with batch dims broadcast as NumPy broadcasts them (OneFlow's
ep/include/primitive/broadcast_matmul.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class BroadcastMatmul(Primitive):
    @abc.abstractmethod
    def Launch(
        self, stream, alpha, num_a_dims: int, a_dims, a, num_b_dims: int, b_dims, b, beta, num_c_dims: int, c_dims, c
    ) -> None:
        """c = alpha * op(a) @ op(b) + beta * c over broadcast batch dims: a_dims, b_dims and c_dims
        are the stored (C-contiguous) shapes, at least 2 dims each, the last two a matrix (a's
        (m, k), or (k, m) with trans_a; b's (k, n), or (n, k) with trans_b; c's (m, n)); the batch
        dims before them broadcast from the right, and c's are their broadcast. c must not overlap
        a or b."""


class BroadcastMatmulFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype, trans_a, trans_b, max_num_dims: int) -> BroadcastMatmul | None:
        """A BroadcastMatmul of dtype (float16 computed in float32) for operands of at most
        max_num_dims dims, or None if unsupported."""
