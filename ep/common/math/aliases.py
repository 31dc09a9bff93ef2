"""What NumPy's and PyTorch's names of ep's ops compute on each dtype, where OneFlow's rule differs.

An op's enum lists its aliases; an alias means its library's function. Where that library
computes on other dtypes than OneFlow's op (NumPy's true_divide of ints gives float64, its power of
bools int8; torch.special.expit of ints gives float32) or refuses a dtype (NumPy's subtract of
bools), ep.ops casts the operands to the library's dtype or refuses them, and NewPrimitive has no
primitive of the alias for that dtype. OneFlow's own names (div, kDiv) keep OneFlow's rules.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.names import _fold


def _numpy_float(dtype: DataType) -> DataType:
    # NumPy's float ufuncs take the first of float16, float32, float64 the dtype casts to safely.
    return as_data_type(np.promote_types(dtype.dtype, np.float16))


def _torch_float(dtype: DataType) -> DataType:
    # PyTorch computes an integer or bool tensor's float functions in its default dtype.
    return dtype if dtype.is_floating else DataType.kFloat


def _true_divide(dtype: DataType) -> DataType:
    return dtype if dtype.is_floating else DataType.kDouble


def _bool_as_int8(dtype: DataType) -> DataType:
    # NumPy's integer arithmetic has no bool loop: bools take int8's.
    return DataType.kInt8 if dtype is DataType.kBool else dtype


def _no_bool(dtype: DataType) -> DataType | None:
    return None if dtype is DataType.kBool else dtype


_RULES: dict[str, Callable[[DataType], DataType | None]] = {
    **dict.fromkeys(("arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh"), _numpy_float),
    **dict.fromkeys(("psi", "gammaln", "expit"), _torch_float),
    **dict.fromkeys(("divide", "true_divide"), _true_divide),
    **dict.fromkeys(("power", "floor_divide", "remainder", "mod"), _bool_as_int8),
    **dict.fromkeys(("positive", "subtract"), _no_bool),
}
_RULES = {_fold(alias): rule for alias, rule in _RULES.items()}


def alias_dtype(op: object, dtype: DataType) -> DataType | None:
    """The dtype op computes dtype operands in: for a NumPy or PyTorch alias its library's (None
    where the library refuses them), else dtype itself."""
    if type(op) is not str:
        return dtype
    rule = _RULES.get(_fold(op))
    return dtype if rule is None else rule(dtype)


def refuse_alias(op: str, dtype: DataType, name: str) -> TypeError:
    """The error for an alias whose library refuses dtype operands."""
    return TypeError(f"{name}: {op!r} (NumPy's and PyTorch's name) does not support dtype {dtype.value}")


def checks_negative_powers(op: object, dtype: DataType) -> bool:
    """True for NumPy's power of integers, which refuses a negative exponent (ValueError) where
    OneFlow's pow gives 0 or +-1."""
    return type(op) is str and dtype.is_integer and _fold(op) == "power"
