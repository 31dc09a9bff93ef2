"""BatchMatmul: batch_size independent Matmuls of consecutive matrices (OneFlow's
ep/include/primitive/batch_matmul.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class BatchMatmul(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, batch_size: int, m: int, n: int, k: int, alpha, a, b, beta, c) -> None:
        """For each i < batch_size, c[i] = alpha * op(a[i]) @ op(b[i]) + beta * c[i], where a holds
        batch_size matrices of m * k elements one after another (stored as Matmul's a), b of
        k * n and c of m * n; c must not overlap a or b."""


class BatchMatmulFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype, trans_a, trans_b) -> BatchMatmul | None:
        """A BatchMatmul of dtype (float16 computed in float32), or None if unsupported."""
