"""Scalar operands: what counts as one, the dtype it computes in beside an array, and its value
converted to a primitive's dtype."""
from __future__ import annotations

import functools
import math

import numpy as np

from ep.common.runtime.data_type import INTEGER_TYPES, DataType

#: The types of scalar operands (is_scalar); ml_dtypes' bfloat16 scalars are no np.floating.
SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating, DataType.kBFloat16.dtype.type)
_BFLOAT16 = DataType.kBFloat16.dtype
_BOOL = DataType.kBool
# Each integer dtype's (min, max), by NumPy dtype: np.iinfo took half of an integer scalar's conversion.
_RANGES = {dt.dtype: (int(np.iinfo(dt.dtype).min), int(np.iinfo(dt.dtype).max)) for dt in INTEGER_TYPES}
# The representative of each Python scalar type's kind (see promotion_key).
_WEAK = {bool: False, int: 0, float: 0.0}



def is_scalar(obj: object) -> bool:
    """True for a Python or NumPy real scalar (a scalar operand), False for anything else."""
    return isinstance(obj, SCALAR_TYPES)


def result_dtype(a: object, b: object) -> np.dtype:
    """The dtype op(a, b) is computed in, as NumPy 2 promotes its operands (NEP 50).

    Arrays (anything with a dtype) and NumPy scalars are typed; a Python bool, int or float is
    weak: it keeps an array's dtype when that dtype holds its kind (int8 + 3 -> int8, float16 + 1.5
    -> float16), else takes NumPy's default of its kind (int8 + 1.5 -> float64, bool + 3 -> int64).
    A Python int out of the dtype's range is refused later, by scalar_value, as NumPy refuses it.
    """
    return promote(promotion_key(a), promotion_key(b))


def promotion_key(x: object):
    """What promotion depends on: a dtype, or for a weak scalar a representative of its kind.

    NumPy 2 (NEP 50) promotes a Python scalar by its kind, never by its value, so False, 0 and 0.0
    stand for every bool, int and float (subclasses included).
    """
    if isinstance(x, (bool, int, float, np.generic)):
        return scalar_promotion_key(type(x))
    return np.dtype(x.dtype)


def scalar_promotion_key(kind: type):
    """promotion_key of every scalar of type kind (a Python or NumPy scalar type)."""
    weak = _WEAK.get(kind)
    if weak is not None:
        return weak
    if issubclass(kind, np.generic):
        return np.dtype(kind)
    if issubclass(kind, bool):
        return False
    return 0 if issubclass(kind, int) else 0.0


# typed: False, 0 and 0.0 are equal keys otherwise. Keys are dtypes and three representatives,
# so the cache holds a few dozen entries.
@functools.lru_cache(maxsize=256, typed=True)
def promote(a, b) -> np.dtype:
    """NumPy 2's promotion of two promotion keys (promotion_key's), and PyTorch's where one is
    bfloat16 (NumPy has no bfloat16 of its own; ml_dtypes' refuses most pairs): with a bool or an
    integer it stays bfloat16, with float16 it gives float32, with a wider float that float.
    TypeError naming a, b."""
    if _BFLOAT16 in (a, b):
        other = b if a == _BFLOAT16 else a
        if isinstance(other, np.dtype) and other.kind == "f" and other != _BFLOAT16:
            return np.dtype(np.float32) if other.itemsize == 2 else other
        if not isinstance(other, np.dtype) or other.kind in "biuf":
            return _BFLOAT16
    try:
        return np.result_type(a, b)
    except TypeError as error:  # NumPy's DTypePromotionError (structured, datetime, ...) names nothing
        raise TypeError(f"a, b: {_kind(a)} and {_kind(b)} have no common dtype; {error}") from None


def _kind(key) -> str:
    return f"dtype {key}" if isinstance(key, np.dtype) else f"a Python {type(key).__name__}"


def scalar_value(value: object, name: str, dtype: DataType):
    """A scalar operand converted to dtype (as OneFlow's Scalar overloads do), in its compute dtype.

    A float given to an integer dtype is truncated toward zero. Raises TypeError for a non-scalar;
    OverflowError, as NumPy does, for an integer outside the dtype's range (or a float's); and
    ValueError for NaN or inf given to an integer dtype.
    """
    if not is_scalar(value):
        raise TypeError(f"{name}: {value!r} is not a real scalar")
    compute = dtype.compute_dtype.type
    if dtype is _BOOL:
        return np.bool_(value != 0)
    if dtype.is_floating:
        try:
            value = dtype.dtype.type(value)
        except OverflowError:
            raise OverflowError(f"{name}: {value!r} is out of the range of {dtype.value}") from None
        # A half is rounded to its own precision first, then computed in float32.
        return value if dtype.compute_dtype is dtype.dtype else compute(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"{name}: {value!r} has no {dtype.value} value")
        whole = math.trunc(float(value))  # NumPy's float32 and float16 have no __trunc__
    else:
        whole = int(value)
    low, high = _RANGES[dtype.dtype]
    if not low <= whole <= high:
        raise OverflowError(f"{name}: {value!r} is out of the range of {dtype.value} [{low}, {high}]")
    return compute(whole)


def scalar_bits(value: object, name: str, dtype: DataType) -> np.unsignedinteger:
    """scalar_value(value, name, dtype) as an element of dtype, read as the unsigned integer of its
    size: how a kernel that writes a value as bytes takes it (-0.0 and NaN payloads as converted;
    a scalar of dtype itself bit for bit)."""
    if isinstance(value, np.generic) and value.dtype == dtype.dtype:
        return np.asarray(value).view(f"u{dtype.itemsize}")[()]
    element = np.asarray(scalar_value(value, name, dtype)).astype(dtype.dtype)
    return element.view(f"u{dtype.itemsize}")[()]


def integer_out_of_range(value: object, dtype: DataType) -> int:
    """For a Python or NumPy integer outside integer dtype's range: 1 above it, -1 below; else 0."""
    if not dtype.is_integer or isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return 0
    low, high = _RANGES[dtype.dtype]
    value = int(value)
    return 1 if value > high else -1 if value < low else 0
