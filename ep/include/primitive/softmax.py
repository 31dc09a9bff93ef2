"""Softmax and LogSoftmax over each row (OneFlow's ep/include/primitive/softmax.h, log_softmax.h)."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class Softmax(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, rows: int, cols: int, x, y) -> None:
        """y[r, c] = exp(x[r, c]) / sum_c exp(x[r, c]) for each of rows rows of cols elements;
        x and y are flat C-contiguous storage of rows * cols elements."""


class SoftmaxFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> Softmax | None:
        """A Softmax over elements of dtype, or None if unsupported."""


class LogSoftmax(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, rows: int, cols: int, x, y) -> None:
        """y[r, c] = x[r, c] - log(sum_c exp(x[r, c])) for each of rows rows of cols elements."""


class LogSoftmaxFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> LogSoftmax | None:
        """A LogSoftmax over elements of dtype, or None if unsupported."""
