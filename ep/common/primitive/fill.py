"""Fill on every device: New's resolution, Launch's checks, and the kernels a device supplies.

A fill does not care what its elements mean, only their bytes: the scalar is converted to the
primitive's dtype on the host (ep's one conversion rule, runtime.scalar.scalar_bits) and its bit
pattern is written as an unsigned integer of the element's size. So four kernels (1, 2, 4 and 8
bytes) serve every dtype, -0.0 and NaN payloads arrive as given, and TensorFill and Memset launch
the same kernels with the value read from a device buffer or given as a byte.
"""
from __future__ import annotations

import abc
from typing import Iterator

import numpy as np

from ep.common.jit import scalar_function
from ep.common.primitive.byte_units import unit_dtype
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.launch import Count, Declared, Out, Scalar, declare
from ep.common.primitive.sample import Sample, zeros
from ep.common.runtime.buffer import kept
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.fill import Fill, FillFactory

# The unsigned integer each element size is filled as (byte_units' unit of that size).
UNIT_DTYPES = {size: unit_dtype(size) for size in (1, 2, 4, 8)}


@scalar_function
def from_scalar(value):
    """A fill kernel's value when it is given as a launch argument (Fill, Memset)."""
    return value


@scalar_function
def from_buffer(src):
    """A fill kernel's value when it is read from a one-element device buffer (TensorFill)."""
    return src[0]


def as_units(flat, itemsize: int):
    """Flat storage viewed as unsigned integers of its element size (kept for a device array)."""
    unit = UNIT_DTYPES[itemsize]
    if type(flat) is np.ndarray:
        return flat if flat.dtype == unit else flat.view(unit)
    return flat if flat.dtype == unit else kept(_view, flat, unit)


def _view(flat, unit: np.dtype):
    return flat.view(unit)


class FillKernels(abc.ABC):
    """What a device supplies: per element size, a kernel launched as
    kernel.launch(stream, count, dst, source, count): dst flat storage viewed as UNIT_DTYPES[size],
    source the value's bits (from_scalar) or a one-element buffer of them (from_buffer), as the
    device's kernels were made for."""

    @abc.abstractmethod
    def kernel(self, itemsize: int):
        """The device kernel filling elements of itemsize bytes, compiled on its first launch."""

    def all_kernels(self) -> Iterator[object]:
        for itemsize in UNIT_DTYPES:
            yield self.kernel(itemsize)


class FillImpl(Declared, Fill):
    launch = declare(Out("dst"), Scalar("scalar", bits=True), Count("count"))

    def __init__(self, device_type: DeviceType, kernels: FillKernels, dtype: DataType) -> None:
        self.device_type, self.dtype = device_type, dtype
        self._kernel = kernels.kernel(dtype.itemsize)

    def run(self, stream, dst, scalar, count: int) -> None:
        if count:
            self._kernel.launch(stream, count, as_units(dst, self.dtype.itemsize), scalar, count)


class FillFactoryImpl(DtypeFactory, FillFactory):
    primitive_type = FillImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        dst = zeros(4, dtypes[0])
        yield Sample(dtypes, {"dst": dst, "scalar": 1, "count": 4}, {"dst": np.ones_like(dst)})
