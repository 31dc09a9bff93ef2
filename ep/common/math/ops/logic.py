"""Predicates and logic, with bool results but for bitwise and not_equal_zero: comparisons (is_close
too), tests of a value's content (is_inf, is_nan, is_finite), logical ops on truth values (nonzero
is true) and bitwise ops on the integer dtypes and bool.
"""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math.ops.record import BITS, BinaryFunctor, UnaryFunctor
from ep.common.math.special import as_type
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


# comparison


@scalar_function
def equal(a, b, attr0, attr1):
    return a == b


EQUAL = BinaryFunctor(BinaryOp.kEqual, equal, ALL_TYPES, to_bool=True, doc="a == b", aliases=("eq",))


@scalar_function
def not_equal(a, b, attr0, attr1):
    return a != b


NOT_EQUAL = BinaryFunctor(BinaryOp.kNotEqual, not_equal, ALL_TYPES, to_bool=True, doc="a != b", aliases=("ne",))


@scalar_function
def less_than(a, b, attr0, attr1):
    return a < b


LESS_THAN = BinaryFunctor(BinaryOp.kLessThan, less_than, ALL_TYPES, to_bool=True, doc="a < b", aliases=("less", "lt"))


@scalar_function
def less_equal(a, b, attr0, attr1):
    return a <= b


LESS_EQUAL = BinaryFunctor(BinaryOp.kLessEqual, less_equal, ALL_TYPES, to_bool=True, doc="a <= b", aliases=("le",))


@scalar_function
def greater_than(a, b, attr0, attr1):
    return a > b


GREATER_THAN = BinaryFunctor(
    BinaryOp.kGreaterThan, greater_than, ALL_TYPES, to_bool=True,
    doc="a > b",
    aliases=("greater", "gt"),
)


@scalar_function
def greater_equal(a, b, attr0, attr1):
    return a >= b


GREATER_EQUAL = BinaryFunctor(
    BinaryOp.kGreaterEqual, greater_equal, ALL_TYPES, to_bool=True,
    doc="a >= b",
    aliases=("ge",),
)

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


IS_CLOSE = BinaryFunctor(
    BinaryOp.kIsClose, is_close, ALL_TYPES, _IS_CLOSE_ATTRS, to_bool=True,
    doc="|a - b| <= atol + rtol * |b| or a == b, as np.isclose; NaN is close to nothing",
    aliases=("isclose",),
)


@scalar_function
def is_close_equal_nan(a, b, atol, rtol):
    if a != a and b != b:
        return True
    return is_close(a, b, atol, rtol)


IS_CLOSE_EQUAL_NAN = BinaryFunctor(
    BinaryOp.kIsCloseEqualNan, is_close_equal_nan, ALL_TYPES, _IS_CLOSE_ATTRS, to_bool=True,
    doc="is_close, and NaN is close to NaN (np.isclose with equal_nan=True)",
)


@scalar_function
def not_equal_zero(x, attr0, attr1):
    return as_type(x != 0, x)


NOT_EQUAL_ZERO = UnaryFunctor(UnaryOp.kNotEqualZero, not_equal_zero, ALL_TYPES, doc="x != 0 as 1 or 0 in x's dtype")


# content


@scalar_function
def is_inf(x, attr0, attr1):
    return math.isinf(x)


IS_INF = UnaryFunctor(UnaryOp.kIsInf, is_inf, ALL_TYPES, to_bool=True, doc="x is +inf or -inf", aliases=("isinf",))


@scalar_function
def is_nan(x, attr0, attr1):
    return x != x


IS_NAN = UnaryFunctor(UnaryOp.kIsNan, is_nan, ALL_TYPES, to_bool=True, doc="x is NaN", aliases=("isnan",))


@scalar_function
def is_finite(x, attr0, attr1):
    return math.isfinite(x)


IS_FINITE = UnaryFunctor(
    UnaryOp.kIsFinite, is_finite, ALL_TYPES, to_bool=True,
    doc="x is neither infinite nor NaN",
    aliases=("isfinite",),
)


# logical


@scalar_function
def logical_and(a, b, attr0, attr1):
    return a != 0 and b != 0


LOGICAL_AND = BinaryFunctor(
    BinaryOp.kLogicalAnd, logical_and, ALL_TYPES, to_bool=True,
    doc="a and b, nonzero being true",
)


@scalar_function
def logical_or(a, b, attr0, attr1):
    return a != 0 or b != 0


LOGICAL_OR = BinaryFunctor(BinaryOp.kLogicalOr, logical_or, ALL_TYPES, to_bool=True, doc="a or b, nonzero being true")


@scalar_function
def logical_xor(a, b, attr0, attr1):
    return (a != 0) != (b != 0)


LOGICAL_XOR = BinaryFunctor(
    BinaryOp.kLogicalXor, logical_xor, ALL_TYPES, to_bool=True,
    doc="a xor b, nonzero being true",
)


@scalar_function
def logical_not(x, attr0, attr1):
    return x == 0


LOGICAL_NOT = UnaryFunctor(UnaryOp.kLogicalNot, logical_not, ALL_TYPES, to_bool=True, doc="not x, nonzero being true")


# bitwise


@scalar_function
def bitwise_and(a, b, attr0, attr1):
    return as_type(a & b, a)


BITWISE_AND = BinaryFunctor(BinaryOp.kBitwiseAnd, bitwise_and, BITS, doc="a & b")


@scalar_function
def bitwise_or(a, b, attr0, attr1):
    return as_type(a | b, a)


BITWISE_OR = BinaryFunctor(BinaryOp.kBitwiseOr, bitwise_or, BITS, doc="a | b")


@scalar_function
def bitwise_xor(a, b, attr0, attr1):
    return as_type(a ^ b, a)


BITWISE_XOR = BinaryFunctor(BinaryOp.kBitwiseXor, bitwise_xor, BITS, doc="a ^ b")


@scalar_function
def bitwise_not(x, attr0, attr1):
    # x ^ all-ones of x's type: ~x for integers, not x for bool (where ~True is -2).
    return as_type(x ^ as_type(-1, x), x)


BITWISE_NOT = UnaryFunctor(UnaryOp.kBitwiseNot, bitwise_not, BITS, doc="~x; not x for bool", aliases=("invert",))
