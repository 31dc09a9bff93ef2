"""Comparisons, giving bool: equal, not_equal, less/greater (or equal), is_close; and the unary not_equal_zero."""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math.ops.record import BinaryFunctor, UnaryFunctor
from ep.common.math.special import as_type
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def equal(a, b, attr0, attr1):
    return a == b


EQUAL = BinaryFunctor(BinaryOp.kEqual, equal, ALL_TYPES, to_bool=True)


@scalar_function
def not_equal(a, b, attr0, attr1):
    return a != b


NOT_EQUAL = BinaryFunctor(BinaryOp.kNotEqual, not_equal, ALL_TYPES, to_bool=True)


@scalar_function
def less_than(a, b, attr0, attr1):
    return a < b


LESS_THAN = BinaryFunctor(BinaryOp.kLessThan, less_than, ALL_TYPES, to_bool=True)


@scalar_function
def less_equal(a, b, attr0, attr1):
    return a <= b


LESS_EQUAL = BinaryFunctor(BinaryOp.kLessEqual, less_equal, ALL_TYPES, to_bool=True)


@scalar_function
def greater_than(a, b, attr0, attr1):
    return a > b


GREATER_THAN = BinaryFunctor(BinaryOp.kGreaterThan, greater_than, ALL_TYPES, to_bool=True)


@scalar_function
def greater_equal(a, b, attr0, attr1):
    return a >= b


GREATER_EQUAL = BinaryFunctor(BinaryOp.kGreaterEqual, greater_equal, ALL_TYPES, to_bool=True)

_IS_CLOSE_ATTRS = (("atol", 1e-8), ("rtol", 1e-5))


@scalar_function
def is_close(a, b, atol, rtol):
    """|a - b| <= atol + rtol * |b|, computed in the attributes' float type (equal infinities are close)."""
    x = as_type(a, atol)
    y = as_type(b, atol)
    if x == y:
        return True
    error = abs(x - y)
    return math.isfinite(error) and error <= atol + rtol * abs(y)


IS_CLOSE = BinaryFunctor(BinaryOp.kIsClose, is_close, ALL_TYPES, _IS_CLOSE_ATTRS, to_bool=True)


@scalar_function
def is_close_equal_nan(a, b, atol, rtol):
    if a != a and b != b:
        return True
    return is_close(a, b, atol, rtol)


IS_CLOSE_EQUAL_NAN = BinaryFunctor(
    BinaryOp.kIsCloseEqualNan, is_close_equal_nan, ALL_TYPES, _IS_CLOSE_ATTRS, to_bool=True
)


@scalar_function
def not_equal_zero(x, attr0, attr1):
    return as_type(x != 0, x)


NOT_EQUAL_ZERO = UnaryFunctor(UnaryOp.kNotEqualZero, not_equal_zero, ALL_TYPES)
