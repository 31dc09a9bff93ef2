"""Predicates and logic, with bool results but for bitwise and not_equal_zero: comparisons (is_close
too), tests of a value's content (is_inf, is_nan, is_finite, signbit), logical ops on truth values (nonzero
is true) and bitwise ops on the integer dtypes and bool.
"""
from __future__ import annotations

import math
import operator

from ep.common.jit import scalar_function
from ep.common.math.intrinsics import float_bits, wide_integer
from ep.common.math.ops.record import BITS, BinaryFunctor, UnaryFunctor, of_a_b, of_a_b_in_type, of_x
from ep.common.math.special import as_type
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


# comparison


# A comparison is its operator on a and b, in the operands' type.
EQUAL = BinaryFunctor(
    BinaryOp.kEqual, of_a_b(operator.eq), ALL_TYPES, to_bool=True, doc="a == b", commutative=True
)
NOT_EQUAL = BinaryFunctor(
    BinaryOp.kNotEqual, of_a_b(operator.ne), ALL_TYPES, to_bool=True, doc="a != b", commutative=True
)
LESS_THAN = BinaryFunctor(
    BinaryOp.kLessThan, of_a_b(operator.lt), ALL_TYPES, to_bool=True, doc="a < b"
)
LESS_EQUAL = BinaryFunctor(
    BinaryOp.kLessEqual, of_a_b(operator.le), ALL_TYPES, to_bool=True, doc="a <= b"
)
GREATER_THAN = BinaryFunctor(
    BinaryOp.kGreaterThan, of_a_b(operator.gt), ALL_TYPES, to_bool=True, doc="a > b"
)
GREATER_EQUAL = BinaryFunctor(
    BinaryOp.kGreaterEqual, of_a_b(operator.ge), ALL_TYPES, to_bool=True, doc="a >= b"
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


IS_INF = UnaryFunctor(
    UnaryOp.kIsInf, of_x(math.isinf), ALL_TYPES, to_bool=True, doc="x is +inf or -inf"
)


@scalar_function
def is_nan(x, attr0, attr1):
    return x != x


IS_NAN = UnaryFunctor(UnaryOp.kIsNan, is_nan, ALL_TYPES, to_bool=True, doc="x is NaN")


IS_FINITE = UnaryFunctor(
    UnaryOp.kIsFinite, of_x(math.isfinite), ALL_TYPES, to_bool=True, doc="x is neither infinite nor NaN",
)


@scalar_function
def signbit(x, attr0, attr1):
    # The float's bits as a signed integer: negative for -0.0 and a negative NaN too.
    return float_bits(x) < 0


@scalar_function
def int_signbit(x, attr0, attr1):
    wide = wide_integer(x)
    return wide < wide - wide


SIGNBIT = UnaryFunctor(
    UnaryOp.kSignbit, signbit, ALL_TYPES, to_bool=True, int_formula=int_signbit,
    doc="x's sign bit is set (-0.0 and -NaN too)",
)


# logical


def _of_truth(fn):
    """The formula fn(a != 0, b != 0) of a logical op: fn of the operands' truth values."""

    @scalar_function
    def formula(a, b, attr0, attr1):
        return fn(a != 0, b != 0)

    return formula


LOGICAL_AND = BinaryFunctor(
    BinaryOp.kLogicalAnd, _of_truth(operator.and_), ALL_TYPES, to_bool=True, doc="a and b, nonzero being true",
    commutative=True,
)
LOGICAL_OR = BinaryFunctor(
    BinaryOp.kLogicalOr, _of_truth(operator.or_), ALL_TYPES, to_bool=True, doc="a or b, nonzero being true",
    commutative=True,
)
LOGICAL_XOR = BinaryFunctor(
    BinaryOp.kLogicalXor, _of_truth(operator.ne), ALL_TYPES, to_bool=True, doc="a xor b, nonzero being true",
    commutative=True,
)


@scalar_function
def logical_not(x, attr0, attr1):
    return x == 0


LOGICAL_NOT = UnaryFunctor(UnaryOp.kLogicalNot, logical_not, ALL_TYPES, to_bool=True, doc="not x, nonzero being true")


# bitwise


BITWISE_AND = BinaryFunctor(BinaryOp.kBitwiseAnd, of_a_b_in_type(operator.and_), BITS, doc="a & b", commutative=True)
BITWISE_OR = BinaryFunctor(BinaryOp.kBitwiseOr, of_a_b_in_type(operator.or_), BITS, doc="a | b", commutative=True)
BITWISE_XOR = BinaryFunctor(BinaryOp.kBitwiseXor, of_a_b_in_type(operator.xor), BITS, doc="a ^ b", commutative=True)


@scalar_function
def bitwise_not(x, attr0, attr1):
    # x ^ all-ones of x's type: ~x for integers, not x for bool (where ~True is -2).
    return as_type(x ^ as_type(-1, x), x)


BITWISE_NOT = UnaryFunctor(UnaryOp.kBitwiseNot, bitwise_not, BITS, doc="~x; not x for bool")
