"""Scalar arguments: what counts as one, and its value converted to a primitive's dtype."""
from __future__ import annotations

import math

import numpy as np

from ep.common.runtime.data_type import DataType

_SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def is_scalar(obj: object) -> bool:
    """True for a Python or NumPy real scalar (a scalar operand), False for anything else."""
    return isinstance(obj, _SCALAR_TYPES)


def scalar_value(value: object, name: str, dtype: DataType):
    """A scalar operand converted to dtype (as OneFlow's Scalar overloads do), in its compute dtype.

    Raises TypeError for a non-scalar, ValueError when the value has no such conversion: NaN or inf
    to an integer dtype, or an integer outside the dtype's range.
    """
    if not is_scalar(value):
        raise TypeError(f"{name}: {value!r} is not a real scalar")
    compute = dtype.compute_dtype.type
    if dtype is DataType.kBool:
        return np.bool_(value != 0)
    if dtype.is_floating:
        return compute(dtype.dtype.type(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"{name}: {value!r} has no {dtype.value} value")
        value = math.trunc(value)
    info = np.iinfo(dtype.dtype)
    if not info.min <= int(value) <= info.max:
        raise ValueError(f"{name}: {value!r} is out of the range of {dtype.value} [{info.min}, {info.max}]")
    return compute(int(value))
