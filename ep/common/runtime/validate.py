"""The one place integer arguments are checked: sizes, dims and offsets, named in every error."""
from __future__ import annotations

import operator

import numpy as np

# The most dims a primitive takes, as OneFlow's max_num_dims default.
MAX_NUM_DIMS = 8
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def integer(value: object, name: str) -> int:
    """value as a Python int (anything with __index__ but bool); TypeError naming name otherwise."""
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: {value!r} is not an integer")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: {value!r} is not an integer") from None


def count(value: object, name: str = "count") -> int:
    """A non-negative integer (a size or an element count) that fits in int64."""
    if type(value) is int and 0 <= value <= INT64_MAX:
        return value
    value = integer(value, name)
    if value < 0:
        raise ValueError(f"{name}: {value} is negative; expected >= 0")
    if value > INT64_MAX:
        raise ValueError(f"{name}: {value} does not fit in int64")
    return value


def counted_dims(name: str, num_dims: object, dims_: object, max_num_dims: int) -> tuple[int, ...]:
    """OneFlow's (num_<name>_dims, <name>_dims) pair checked: num_dims a count within max_num_dims
    and the length of dims; TypeError or ValueError naming the one that is wrong."""
    num_dims = count(num_dims, f"num_{name}_dims")
    if num_dims > max_num_dims:
        raise ValueError(f"num_{name}_dims: {num_dims} is above max_num_dims={max_num_dims}")
    checked = dims(dims_, f"{name}_dims", max_num_dims)
    if len(checked) != num_dims:
        raise ValueError(f"{name}_dims: has {len(checked)} dims; expected num_{name}_dims={num_dims}")
    return checked


def int64(value: object, name: str) -> int:
    """An integer in int64's range (an offset)."""
    value = integer(value, name)
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name}: {value} does not fit in int64")
    return value


# Collections that iterate in no order the caller chose: never a shape, dims or paddings.
_UNORDERED = (set, frozenset, dict, type({}.keys()), type({}.values()), type({}.items()))


def check_sequence(value: object, name: str, what: str) -> None:
    """TypeError naming name unless value is a sequence of what: a string, a non-iterable and a
    set or dict (whose order is not the caller's: NumPy and torch refuse them too) are not."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name}: {value!r} is not a sequence of {what}")
    if isinstance(value, _UNORDERED):
        raise TypeError(f"{name}: {value!r} is a {type(value).__name__}, not a sequence of {what}; expected a tuple or list")


def dims(value: object, name: str, max_num_dims: int = MAX_NUM_DIMS) -> tuple[int, ...]:
    """value as a tuple of at most max_num_dims sizes; TypeError or ValueError naming the entry otherwise."""
    if type(value) is tuple and len(value) <= max_num_dims:
        # Shapes are tuples of non-negative ints: check them without a call per dim.
        for d in value:
            if type(d) is not int or not 0 <= d <= INT64_MAX:
                break
        else:
            return value
    check_sequence(value, name, "sizes")
    checked = tuple(count(d, f"{name}[{i}]") for i, d in enumerate(value))
    if len(checked) > max_num_dims:
        raise ValueError(f"{name}: has {len(checked)} dims; expected at most {max_num_dims}")
    return checked
