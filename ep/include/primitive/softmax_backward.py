"""The backward of Softmax and LogSoftmax (OneFlow's ep/include/primitive/softmax_backward.h,
log_softmax_backward.h): the input's gradient from the forward's output y and its gradient dy."""
from __future__ import annotations

import abc

from ep.include.primitive.primitive import Factory, Primitive


class SoftmaxBackward(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, rows: int, cols: int, y, dy, dx) -> None:
        """dx[r, c] = y[r, c] * (dy[r, c] - sum_c y[r, c] * dy[r, c]) for each of rows rows of cols
        elements; y, dy and dx are flat C-contiguous storage of rows * cols elements."""


class SoftmaxBackwardFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> SoftmaxBackward | None:
        """A SoftmaxBackward over elements of dtype, or None if unsupported."""


class LogSoftmaxBackward(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, rows: int, cols: int, y, dy, dx) -> None:
        """dx[r, c] = dy[r, c] - exp(y[r, c]) * sum_c dy[r, c] for each of rows rows of cols elements
        (y the log-softmax)."""


class LogSoftmaxBackwardFactory(Factory):
    @abc.abstractmethod
    def New(self, dtype) -> LogSoftmaxBackward | None:
        """A LogSoftmaxBackward over elements of dtype, or None if unsupported."""
