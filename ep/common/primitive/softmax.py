"""Softmax, LogSoftmax and their backward on every device: New's resolution, Launch's checks, and
the kernels a device supplies (one SoftmaxKernels per op, ep.common.math.softmax's scheme)."""
from __future__ import annotations

import abc
from typing import Iterator

from ep.common.math.softmax import LOG_SOFTMAX, LOG_SOFTMAX_BACKWARD, SOFTMAX, SOFTMAX_BACKWARD, SoftmaxOp
from ep.common.primitive.factory import DtypeFactory
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import FLOATING_TYPES, DataType
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
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


class _RowsPrimitive:
    """Launch's checks, shared by the four primitives: every argument before any kernel runs."""

    def __init__(self, device_type: DeviceType, kernels: SoftmaxKernels, dtype: DataType) -> None:
        self.device_type, self.dtype, self._kernels = device_type, dtype, kernels
        self._stream_type = STREAM_TYPES[device_type]

    def _run(self, stream, rows, cols, inputs: tuple[tuple[object, str], ...], out, out_name: str) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        rows, cols = check_rows(rows, cols)
        total = rows * cols
        flat = [storage(obj, name, self.device_type, self.dtype, total, stream=stream) for obj, name in inputs]
        dst = storage(out, out_name, self.device_type, self.dtype, total, writable=True, stream=stream)
        if total:
            a, b = flat if len(flat) == 2 else (flat[0], flat[0])
            self._kernels.launch(stream, self.dtype, rows, cols, a, b, dst)


class SoftmaxImpl(_RowsPrimitive, Softmax):
    def Launch(self, stream, rows: int, cols: int, x, y) -> None:
        self._run(stream, rows, cols, ((x, "x"),), y, "y")


class LogSoftmaxImpl(_RowsPrimitive, LogSoftmax):
    def Launch(self, stream, rows: int, cols: int, x, y) -> None:
        self._run(stream, rows, cols, ((x, "x"),), y, "y")


class SoftmaxBackwardImpl(_RowsPrimitive, SoftmaxBackward):
    def Launch(self, stream, rows: int, cols: int, y, dy, dx) -> None:
        self._run(stream, rows, cols, ((y, "y"), (dy, "dy")), dx, "dx")


class LogSoftmaxBackwardImpl(_RowsPrimitive, LogSoftmaxBackward):
    def Launch(self, stream, rows: int, cols: int, y, dy, dx) -> None:
        self._run(stream, rows, cols, ((y, "y"), (dy, "dy")), dx, "dx")


class _RowsFactory(DtypeFactory):
    """New(dtype) of the four factories: the floating dtypes (float16 computed in float32)."""

    dtypes = FLOATING_TYPES


class SoftmaxFactoryImpl(_RowsFactory, SoftmaxFactory):
    primitive_type = SoftmaxImpl


class LogSoftmaxFactoryImpl(_RowsFactory, LogSoftmaxFactory):
    primitive_type = LogSoftmaxImpl


class SoftmaxBackwardFactoryImpl(_RowsFactory, SoftmaxBackwardFactory):
    primitive_type = SoftmaxBackwardImpl


class LogSoftmaxBackwardFactoryImpl(_RowsFactory, LogSoftmaxBackwardFactory):
    primitive_type = LogSoftmaxBackwardImpl


# Per op: its factory interface and generic implementation, which each device registers with its kernels.
FACTORIES = {
    SOFTMAX: (SoftmaxFactory, SoftmaxFactoryImpl),
    LOG_SOFTMAX: (LogSoftmaxFactory, LogSoftmaxFactoryImpl),
    SOFTMAX_BACKWARD: (SoftmaxBackwardFactory, SoftmaxBackwardFactoryImpl),
    LOG_SOFTMAX_BACKWARD: (LogSoftmaxBackwardFactory, LogSoftmaxBackwardFactoryImpl),
}
