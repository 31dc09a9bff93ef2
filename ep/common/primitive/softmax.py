"""Softmax, LogSoftmax and their backward on every device: New's resolution, Launch's checks, and
the kernels a device supplies (one SoftmaxKernels per op, ep.common.math.softmax's scheme)."""
from __future__ import annotations

import abc
from typing import Callable, Iterator

import numpy as np

from ep.common.math.softmax import LOG_SOFTMAX, LOG_SOFTMAX_BACKWARD, SOFTMAX, SOFTMAX_BACKWARD, SoftmaxOp
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.launch import Attr, Declared, In, Out, declare
from ep.common.primitive.sample import Sample, float_rtol, values
from ep.common.runtime.data_type import FLOATING_TYPES, DataType
from ep.common.runtime.device import DeviceType
from ep.common.runtime.validate import INT64_MAX, count
from ep.include.primitive.softmax import LogSoftmax, LogSoftmaxFactory, Softmax, SoftmaxFactory
from ep.include.primitive.softmax_backward import (
    LogSoftmaxBackward,
    LogSoftmaxBackwardFactory,
    SoftmaxBackward,
    SoftmaxBackwardFactory,
)


class SoftmaxKernels(abc.ABC):
    """What a device supplies for one op: its kernels over rows of a (x, or y backward) and b (x
    again forward, dy backward) into dst, and the list of them for the PTX check."""

    def __init__(self, op: SoftmaxOp) -> None:
        self.op = op

    @abc.abstractmethod
    def launch(self, stream, dtype: DataType, rows: int, cols: int, a, b, dst) -> None:
        """The op over rows >= 1 rows of cols >= 1 elements of checked flat storage."""

    @abc.abstractmethod
    def all_kernels(self) -> Iterator[object]:
        """Every kernel launch() may run, for every dtype."""


def check_rows(rows: object, cols: object) -> tuple[int, int]:
    """rows and cols as sizes whose product fits in int64; TypeError or ValueError naming them."""
    rows, cols = count(rows, "rows"), count(cols, "cols")
    if rows * cols > INT64_MAX:
        raise ValueError(f"rows, cols: {rows} * {cols} elements do not fit in int64")
    return rows, cols


class _RowsPrimitive(Declared):
    """What the four primitives share: the plan of rows and cols, and the run on checked storage."""

    def __init__(self, device_type: DeviceType, kernels: SoftmaxKernels, dtype: DataType) -> None:
        self.device_type, self.dtype, self._kernels = device_type, dtype, kernels

    def plan(self, rows, cols) -> tuple[int, int, int]:
        rows, cols = check_rows(rows, cols)
        return rows, cols, rows * cols

    def _run(self, stream, plan: tuple[int, int, int], a, b, dst) -> None:
        rows, cols, total = plan
        if total:
            self._kernels.launch(stream, self.dtype, rows, cols, a, b, dst)


# The kernels read a whole row before they write it (the row's max and sum, then each element where
# it is written): an output may be exactly an input, never a shifted view of one.
_FORWARD = declare(
    Attr("rows"), Attr("cols"), In("x", size="plan[2]"), Out("y", size="plan[2]", reads_first=("x",)), plan=("rows", "cols")
)
_BACKWARD = declare(
    Attr("rows"), Attr("cols"), In("y", size="plan[2]"), In("dy", size="plan[2]"), Out("dx", size="plan[2]", reads_first=("y", "dy")),
    plan=("rows", "cols"),
)


class SoftmaxImpl(_RowsPrimitive, Softmax):
    launch = _FORWARD

    def run(self, stream, plan, x, y) -> None:
        self._run(stream, plan, x, x, y)


class LogSoftmaxImpl(_RowsPrimitive, LogSoftmax):
    launch = _FORWARD

    def run(self, stream, plan, x, y) -> None:
        self._run(stream, plan, x, x, y)


class SoftmaxBackwardImpl(_RowsPrimitive, SoftmaxBackward):
    launch = _BACKWARD

    def run(self, stream, plan, y, dy, dx) -> None:
        self._run(stream, plan, y, dy, dx)


class LogSoftmaxBackwardImpl(_RowsPrimitive, LogSoftmaxBackward):
    launch = _BACKWARD

    def run(self, stream, plan, y, dy, dx) -> None:
        self._run(stream, plan, y, dy, dx)


class _RowsFactory(DtypeFactory):
    """New(dtype) of the four factories: the floating dtypes (float16 computed in float32); their
    samples against NumPy's formula (`reference`, over float64 rows)."""

    dtypes = FLOATING_TYPES
    reference: Callable[..., np.ndarray]

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        (dtype,) = dtypes
        backward = self.primitive_type.launch is _BACKWARD
        # Rows of one block (the CPU's own span for cols <= its BLOCK of 8192) and longer ones.
        for cols in (3, 8193):
            x = values(cols, dtype).astype(np.float64) / 4
            if backward:  # y as the forward op gives it (probabilities or their logs), rounded to dtype
                y = np.exp(x) / np.exp(x).sum()
                y = (np.log(y) if self.primitive_type is LogSoftmaxBackwardImpl else y).astype(dtype.dtype)
                inputs = {"y": y, "dy": x.astype(dtype.dtype)}
            else:
                inputs = {"x": x.astype(dtype.dtype)}
            expected = type(self).reference(*(a.astype(np.float64) for a in inputs.values())).astype(dtype.dtype)
            out = "dx" if backward else "y"
            args = {"rows": 1, "cols": cols, **inputs, out: np.zeros(cols, dtype.dtype)}
            yield Sample(dtypes, args, {out: expected}, rtol=float_rtol(dtype))


class SoftmaxFactoryImpl(_RowsFactory, SoftmaxFactory):
    primitive_type = SoftmaxImpl

    @staticmethod
    def reference(x):
        return np.exp(x - x.max()) / np.exp(x - x.max()).sum()


class LogSoftmaxFactoryImpl(_RowsFactory, LogSoftmaxFactory):
    primitive_type = LogSoftmaxImpl

    @staticmethod
    def reference(x):
        return x - x.max() - np.log(np.exp(x - x.max()).sum())


class SoftmaxBackwardFactoryImpl(_RowsFactory, SoftmaxBackwardFactory):
    primitive_type = SoftmaxBackwardImpl

    @staticmethod
    def reference(y, dy):
        return y * (dy - (y * dy).sum())


class LogSoftmaxBackwardFactoryImpl(_RowsFactory, LogSoftmaxBackwardFactory):
    primitive_type = LogSoftmaxBackwardImpl

    @staticmethod
    def reference(y, dy):
        return dy - np.exp(y) * dy.sum()


# Per op: its factory interface and generic implementation, which each device registers with its kernels.
FACTORIES = {
    SOFTMAX: (SoftmaxFactory, SoftmaxFactoryImpl),
    LOG_SOFTMAX: (LogSoftmaxFactory, LogSoftmaxFactoryImpl),
    SOFTMAX_BACKWARD: (SoftmaxBackwardFactory, SoftmaxBackwardFactoryImpl),
    LOG_SOFTMAX_BACKWARD: (LogSoftmaxBackwardFactory, LogSoftmaxBackwardFactoryImpl),
}
