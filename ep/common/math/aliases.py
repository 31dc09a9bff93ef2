"""What NumPy's and PyTorch's names of ep's ops compute on each dtype, where OneFlow's rule differs.

An op's enum lists its aliases; an alias means its library's function. Where that library
computes on other dtypes than OneFlow's op (NumPy's true_divide of ints gives float64, its power of
bools int8; torch.special.expit of ints gives float32) or refuses a dtype (NumPy's subtract of
bools), ep.ops casts the operands to the library's dtype or refuses them, and NewPrimitive has no
primitive of the alias for that dtype. ep's own snake_case names are PyTorch's: an integer or bool
input to a math function PyTorch computes in its default dtype takes float32 (torch.exp of int32:
the record's ints_to_float), and PyTorch's rounding of integers (ceil, floor, round, trunc)
returns them as they are (of bool: refused, as torch refuses it).
OneFlow's own names (kDiv, kExp) keep OneFlow's rules.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.names import _fold
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp

# OneFlow's names of the ops ("kExp"), which keep OneFlow's rules.
_ONEFLOW_NAMES = frozenset(UnaryOp.__members__) | frozenset(BinaryOp.__members__)


def _numpy_float(dtype: DataType) -> DataType:
    # NumPy's float ufuncs take the first of float16, float32, float64 the dtype casts to safely
    # (ml_dtypes' bfloat16 has loops of its own).
    return dtype if dtype.is_floating else as_data_type(np.promote_types(dtype.dtype, np.float16))


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


def _torch_float_no_bool(dtype: DataType) -> DataType | None:
    # torch.nn.functional.softsign is x / (1 + x.abs()), and torch.abs has no bool kernel.
    return None if dtype is DataType.kBool else _torch_float(dtype)


def _torch_bool_as_int64(dtype: DataType) -> DataType:
    # torch.square is torch.pow(x, 2): a bool tensor and an integer scalar give int64.
    return DataType.kInt64 if dtype is DataType.kBool else dtype


# What each rule says, for describe.
_SAYS = {
    _numpy_float: "NumPy's: an integer or bool input computes in the smallest float that holds it (float64 for int32)",
    _torch_float: "PyTorch's: an integer or bool input computes in float32",
    _true_divide: "NumPy's: integers and bools divide in float64",
    _bool_as_int8: "NumPy's: bools compute as int8",
    _no_bool: "NumPy's: bools are refused",
    _torch_float_no_bool: "PyTorch's: an integer input computes in float32, a bool is refused",
    _torch_bool_as_int64: "PyTorch's: bools compute as int64",
}

_RULES: dict[str, Callable[[DataType], DataType | None]] = {
    **dict.fromkeys(("arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "arctan2", "radians", "degrees"), _numpy_float),
    # torch.div divides integers in float32; OneFlow's kDiv truncates them.
    **dict.fromkeys(("psi", "gammaln", "expit", "div"), _torch_float),
    **dict.fromkeys(("divide", "true_divide"), _true_divide),
    # pow and fmod are NumPy's names too (numpy.pow, numpy.fmod); torch refuses bools there.
    **dict.fromkeys(("power", "pow", "fmod", "floor_divide", "remainder", "mod", "left_shift", "right_shift"), _bool_as_int8),
    # NumPy's subtract and torch.sub both refuse bools.
    **dict.fromkeys(("positive", "subtract", "sub"), _no_bool),
    "softsign": _torch_float_no_bool,
    "square": _torch_bool_as_int64,
}
_RULES = {_fold(alias): rule for alias, rule in _RULES.items()}


# PyTorch's rounding functions, which return integers as they are (and refuse bools), and NumPy's
# fix, which returns integers and bools as they are.
ROUNDING = frozenset(map(_fold, ("ceil", "floor", "round", "trunc")))
_FIX = _fold("fix")


def alias_dtype(op: object, dtype: DataType, ints_to_float: bool = False) -> DataType | None:
    """The dtype op computes dtype operands in: for a NumPy or PyTorch alias its library's (None
    where the library refuses them); for a name of PyTorch's, float32 where dtype is an integer or
    bool and the op's record says ints_to_float; else dtype itself."""
    if type(op) is not str or op in _ONEFLOW_NAMES:
        return dtype
    folded = _fold(op)
    rule = _RULES.get(folded)
    if rule is not None:
        return rule(dtype)
    if folded in ROUNDING and dtype is DataType.kBool:
        return None  # torch.ceil of bool is an error
    if ints_to_float and not dtype.is_floating:
        return DataType.kFloat
    return dtype


def alias_note(op: str, ints_to_float: bool = False) -> str | None:
    """What name op computes where its library's rule is not OneFlow's (describe's line), or None."""
    folded = _fold(op)
    rule = _RULES.get(folded)
    if rule is not None:
        return f"{op}: {_SAYS[rule]}"
    if folded in ROUNDING or folded == _FIX:
        return f"{op}: integers{' and bools' if folded == _FIX else ''} are returned as they are"
    if ints_to_float:
        return f"{op}: {_SAYS[_torch_float]}"
    return None


def rounds_to_itself(op: object, dtype: DataType) -> bool:
    """Whether op names a rounding function that returns dtype inputs as they are: PyTorch's of
    integers (torch.ceil of int32 is its input, int32), NumPy's fix of integers and bools."""
    if type(op) is not str or dtype.is_floating or op in _ONEFLOW_NAMES:
        return False
    folded = _fold(op)
    return folded == _FIX or dtype.is_integer and folded in ROUNDING


def refuse_alias(op: str, dtype: DataType, name: str) -> TypeError:
    """The error for an alias whose library refuses dtype operands."""
    return TypeError(f"{name}: {op!r} (NumPy's and PyTorch's name) does not support dtype {dtype.value}")


def checks_negative_powers(op: object, dtype: DataType) -> bool:
    """True for NumPy's power of integers, which refuses a negative exponent (ValueError) where
    OneFlow's pow gives 0 or +-1."""
    return type(op) is str and dtype.is_integer and _fold(op) == "power"
