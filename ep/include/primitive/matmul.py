"""Matmul: c = alpha * op(a) @ op(b) + beta * c for row-major matrices (OneFlow's
ep/include/primitive/matmul.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class Matmul(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, m: int, n: int, k: int, alpha, a, b, beta, c) -> None:
        """c (m, n) = alpha * op(a) @ op(b) + beta * c, op(a) (m, k) and op(b) (k, n): a is stored
        (m, k), or (k, m) when New's trans_a is T; b (k, n), or (n, k) with trans_b. Flat
        C-contiguous storage; c must not overlap a or b. With beta == 0, c is not read."""


class MatmulFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype, trans_a, trans_b) -> Matmul | None:
        """A Matmul of dtype (float16 computed in float32), or None if unsupported; trans_a and
        trans_b are BlasTransposeType (or 'N'/'T', or bools)."""
