"""ep.ops.full: a new array of one value (np.full, torch.full), written by the Fill primitive."""
from __future__ import annotations

import math
import sys

import numpy as np

from ep.common.primitive.operands import output, stream_for
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import GetDevice
from ep.common.runtime.scalar import is_scalar, scalar_value
from ep.common.runtime.validate import INT64_MAX, dims
from ep.include.primitive.fill import FillFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind


def full_dtype(fill_value: object) -> DataType:
    """The dtype NumPy 2 gives np.full(shape, fill_value): a bool's bool, a Python int's int64, a
    Python float's float64, a NumPy scalar's own. TypeError naming fill_value for anything else;
    OverflowError for a Python int outside int64 (NumPy makes uint64 or object arrays of those,
    which ep has not)."""
    if not is_scalar(fill_value):
        raise TypeError(f"fill_value: {fill_value!r} is not a real scalar (a bool, int or float, Python's or NumPy's)")
    if isinstance(fill_value, np.generic):
        return as_data_type(fill_value.dtype, "fill_value")
    if isinstance(fill_value, bool):
        return DataType.kBool
    if isinstance(fill_value, int):
        if not -(1 << 63) <= fill_value <= INT64_MAX:
            raise OverflowError(f"fill_value: {fill_value} does not fit int64, the dtype of a Python int; pass dtype=")
        return DataType.kInt64
    return DataType.kDouble


def _shape(shape: object) -> tuple[int, ...]:
    """shape (an int or a sequence of ints >= 0) as a tuple; TypeError or ValueError naming shape."""
    # One size: an int, a NumPy integer, or a 0-d integer array or tensor (np.full takes each).
    if hasattr(shape, "__index__") and getattr(shape, "ndim", 0) == 0 and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    return dims(shape, "shape", sys.maxsize)


@same_kind()
def full(shape, fill_value, *, dtype=None, device="cpu", out=None, stream=None):
    """A new C-contiguous array of shape (an int or a sequence of sizes) on device ("cpu", "cuda"
    or a Device) whose every element is fill_value (np.full, torch.full).

    fill_value is a real scalar, Python's or NumPy's. dtype defaults to out's dtype when out is
    given, else to the dtype NumPy 2 infers (bool, int64 for a Python int, float64 for a Python
    float, a NumPy scalar's own dtype). The value is converted as NumPy converts it, bit for bit
    (-0.0 and NaN payloads stay), a float to an integer dtype truncated toward zero, any nonzero
    value to True; an integer outside the dtype's range is an OverflowError (NumPy's for Python
    ints; ep refuses NumPy integer scalars too, where NumPy wraps them), NaN or inf to an integer
    dtype a ValueError. A float out of a float dtype's range becomes inf, with NumPy's
    RuntimeWarning. out (any array kind, on device) receives the result; stream defaults to the
    device's default stream.
    """
    shape = _shape(shape)
    if dtype is not None:
        dtype = as_data_type(dtype)
    elif out is not None:
        dtype = as_data_type(getattr(out, "dtype", None), "out")
    else:
        dtype = full_dtype(fill_value)
    scalar_value(fill_value, "fill_value", dtype)  # named as the caller's: the Launch would say scalar
    count = math.prod(shape)
    if count * dtype.itemsize > INT64_MAX:
        raise ValueError(f"shape: {shape} of {dtype.value} is {count * dtype.itemsize} bytes; expected at most 2**63 - 1")
    device = GetDevice(device)
    stream = stream_for(device, stream)
    out = output(out, shape, dtype, device, stream, "shape")
    NewPrimitive(FillFactory, device, dtype).launch_trusted(stream, out, fill_value, count)
    return out

