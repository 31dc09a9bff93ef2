"""Fill on every device: New's resolution and Launch's checks; its kernel is a per-element one
(ep.common.primitive.element) that each device makes from fill_value.

A fill does not care what its elements mean, only their bytes: the scalar is converted to the
primitive's dtype on the host (ep's one conversion rule, runtime.scalar.scalar_bits) and its bit
pattern is written as an unsigned integer of the element's size. So four kernels (1, 2, 4 and 8
bytes) serve every dtype, -0.0 and NaN payloads arrive as given, and TensorFill and Memset launch
the same kind of kernel with the value read from a device buffer or given as a byte.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.jit import scalar_function
from ep.common.primitive.byte_units import unit_dtype
from ep.common.primitive.element import ElementKernels
from ep.common.primitive.factory import DtypeFactory
from ep.common.primitive.launch import Count, Declared, Out, Scalar, declare
from ep.common.primitive.sample import Sample, zeros
from ep.common.runtime.buffer import kept
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.include.primitive.fill import Fill, FillFactory

# The unsigned integer each element size is filled as (byte_units' unit of that size).
UNIT_DTYPES = {size: unit_dtype(size) for size in (1, 2, 4, 8)}
UNIT_TYPES = {size: DataType(dtype.name) for size, dtype in UNIT_DTYPES.items()}


@scalar_function
def fill_value(i, values):
    """Fill's and Memset's element: the value's bits, given at launch as values[0]."""
    return values[0]


def fill_kernel(kernels: ElementKernels, itemsize: int):
    """The kernel filling elements of itemsize bytes with the bits given at launch."""
    unit = UNIT_TYPES[itemsize]
    return kernels.kernel(fill_value, unit, (unit.dtype,))


def as_units(flat, itemsize: int):
    """Flat storage viewed as unsigned integers of its element size (kept for a device array)."""
    unit = UNIT_DTYPES[itemsize]
    if type(flat) is np.ndarray:
        return flat if flat.dtype == unit else flat.view(unit)
    return flat if flat.dtype == unit else kept(_view, flat, unit)


def _view(flat, unit: np.dtype):
    return flat.view(unit)


class FillImpl(Declared, Fill):
    launch = declare(Out("dst"), Scalar("scalar", bits=True), Count("count"))

    def __init__(self, device_type: DeviceType, kernels: ElementKernels, dtype: DataType) -> None:
        self.device_type, self.dtype = device_type, dtype
        self.kernel = fill_kernel(kernels, dtype.itemsize)

    def run(self, stream, dst, scalar, count: int) -> None:
        if count:
            self.kernel.launch(stream, count, as_units(dst, self.dtype.itemsize), count, (scalar,))


class FillFactoryImpl(DtypeFactory, FillFactory):
    primitive_type = FillImpl

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        dst = zeros(4, dtypes[0])
        yield Sample(dtypes, {"dst": dst, "scalar": 1, "count": 4}, {"dst": np.ones_like(dst)})
