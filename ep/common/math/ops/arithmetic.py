"""Arithmetic: the unary abs, negative, sign, square, sqrt, rsqrt, reciprocal (with their derivatives),
the rounding ceil, floor, rint, round, trunc, frac, the angle units deg2rad, rad2deg, and the binary
add, sub, mul, div, max, min, fmax, fmin, pow, fmod, floor_div, trunc_div, floor_mod.

Binary ops whose integer semantics differ have an integer formula too (used for the integer dtypes
and bool): it works in int64 (uint64 in uint64: intrinsics.wide_integer) and wraps the result to
the operands' type with as_type, as NumPy's integers wrap (bool is then result != 0). Integer
division and modulo by zero give 0, and the int64 overflow of MIN // -1 is sidestepped, so no
kernel ever traps. Float division is IEEE
(special.divide: inf and NaN, never ZeroDivisionError).
"""
from __future__ import annotations

import math
import operator


from ep.common.jit import scalar_function
from ep.common.math.intrinsics import frem, product, round_down, round_toward_zero, round_up, wide_integer
from ep.common.math.ops.record import (
    FLOAT, NUMBERS, BinaryFunctor, UnaryFunctor, dy_times, of_a_b, of_a_b_in_type, of_x, of_x_in_type,
)
from ep.common.math.special import as_type, divide, round_half_even
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


# unary


@scalar_function
def sign(x, attr0, attr1):
    # PyTorch's (0 < x) - (x < 0): 0 for NaN, where NumPy's sign gives NaN.
    return as_type((x > 0) - (x < 0), x)


SIGN = UnaryFunctor(
    UnaryOp.kSign, sign, ALL_TYPES,
    doc="-1, 0 or 1 by x's sign; 0 for NaN, as torch.sign (np.sign gives NaN); a bool is itself",
)


ABS = UnaryFunctor(
    UnaryOp.kAbs, of_x_in_type(abs), NUMBERS, with_dy_x=dy_times(sign),
    doc="|x|; integers wrap (abs of the most negative value is itself)",
)


NEGATIVE = UnaryFunctor(
    UnaryOp.kNegative, of_x_in_type(operator.neg), NUMBERS, doc="-x; integers wrap"
)


@scalar_function
def square(x, attr0, attr1):
    return as_type(product(x, x), x)


@scalar_function
def square_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(2, x) * x


SQUARE = UnaryFunctor(UnaryOp.kSquare, square, NUMBERS, with_dy_x=square_backward_with_dy_x, doc="x * x; integers wrap")


@scalar_function
def sqrt(x, attr0, attr1):
    return math.sqrt(x)


@scalar_function
def sqrt_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, as_type(2, x) * sqrt(x, attr0, attr1))


SQRT = UnaryFunctor(UnaryOp.kSqrt, sqrt, FLOAT, ints_to_float=True, with_dy_x=sqrt_backward_with_dy_x, doc="square root")


@scalar_function
def rsqrt(x, attr0, attr1):
    return divide(as_type(1, x), math.sqrt(x))


@scalar_function
def rsqrt_backward_with_dy_x(dy, x, attr0, attr1):
    return -divide(dy, as_type(2, x) * x * sqrt(x, attr0, attr1))


RSQRT = UnaryFunctor(UnaryOp.kRsqrt, rsqrt, FLOAT, ints_to_float=True, with_dy_x=rsqrt_backward_with_dy_x, doc="1 / sqrt(x)")


@scalar_function
def reciprocal(x, attr0, attr1):
    return divide(as_type(1, x), x)


@scalar_function
def reciprocal_backward_with_dy_x(dy, x, attr0, attr1):
    return -divide(dy, x * x)


RECIPROCAL = UnaryFunctor(UnaryOp.kReciprocal, reciprocal, FLOAT, ints_to_float=True, with_dy_x=reciprocal_backward_with_dy_x, doc="1 / x")


@scalar_function
def reciprocal_no_nan(x, attr0, attr1):
    return as_type(0, x) if x == 0 else reciprocal(x, attr0, attr1)


@scalar_function
def reciprocal_no_nan_backward_with_dy_x(dy, x, attr0, attr1):
    return as_type(0, dy) if x == 0 else reciprocal_backward_with_dy_x(dy, x, attr0, attr1)


RECIPROCAL_NO_NAN = UnaryFunctor(
    UnaryOp.kReciprocalNoNan, reciprocal_no_nan, FLOAT, with_dy_x=reciprocal_no_nan_backward_with_dy_x,
    doc="1 / x, but 0 for x == 0",
)


# rounding to an integer value, in the float dtypes

CEIL = UnaryFunctor(UnaryOp.kCeil, of_x(round_up), FLOAT, doc="the least integer value >= x")
FLOOR = UnaryFunctor(UnaryOp.kFloor, of_x(round_down), FLOAT, doc="the greatest integer value <= x")
RINT = UnaryFunctor(UnaryOp.kRint, of_x(round_half_even), FLOAT, doc="the nearest integer value, halves to even")
# torch.round with decimals=0 is rint: half to even.
ROUND = UnaryFunctor(
    UnaryOp.kRound, of_x(round_half_even), FLOAT,
    doc="the nearest integer value, halves to even (np.round, torch.round)",
)
TRUNC = UnaryFunctor(UnaryOp.kTrunc, of_x(round_toward_zero), FLOAT, doc="x rounded toward zero")


@scalar_function
def frac(x, attr0, attr1):
    return x - round_toward_zero(x)


FRAC = UnaryFunctor(UnaryOp.kFrac, frac, FLOAT, doc="x - trunc(x), with x's sign; NaN for infinities (torch.frac)")


def _times(factor: float):
    """The formula x * factor, factor rounded to x's precision (as torch's deg2rad multiplies)."""

    @scalar_function
    def formula(x, attr0, attr1):
        return x * as_type(factor, x)

    return formula


DEG2RAD = UnaryFunctor(UnaryOp.kDeg2Rad, _times(math.pi / 180), FLOAT, ints_to_float=True, doc="x degrees in radians")
RAD2DEG = UnaryFunctor(UnaryOp.kRad2Deg, _times(180 / math.pi), FLOAT, ints_to_float=True, doc="x radians in degrees")


# binary: the division helpers first


@scalar_function
def fmod(a, b):
    """C fmod of two floats of the same type: the remainder with a's sign."""
    return frem(a, as_type(b, a))


@scalar_function
def float_divmod(a, b):
    """(a // b, a % b) for floats, as NumPy's npy_divmod: Python's floor semantics, IEEE at b == 0."""
    mod = fmod(a, b)
    if b == 0:
        return divide(a, b), mod
    div = divide(a - mod, b)
    zero = as_type(0, a)
    if mod != 0:
        if (b < zero) != (mod < zero):
            mod += b
            div -= as_type(1, a)
    else:
        mod = math.copysign(zero, b)
    if div != 0:
        floordiv = round_down(div)
        if div - floordiv > as_type(0.5, a):
            floordiv += as_type(1, a)
    else:
        floordiv = math.copysign(zero, divide(a, b))
    return floordiv, mod


@scalar_function
def int_divmod(a, b):
    """(a // b, a % b) for integers in int64 (uint64), Python's floor semantics; (0, 0) for b == 0."""
    a = wide_integer(a)
    b = wide_integer(b)
    zero = a - a
    if b == zero:
        return zero, zero
    if b == -1:  # never for uint64 (compared as float64: 2**64 - 1 is no -1)
        # -a wraps for INT64_MIN, where a // -1 would trap.
        return -a, zero
    return a // b, a % b


ADD = BinaryFunctor(
    BinaryOp.kAdd, of_a_b_in_type(operator.add), ALL_TYPES, doc="a + b; integers wrap", commutative=True
)
SUB = BinaryFunctor(
    BinaryOp.kSub, of_a_b_in_type(operator.sub), ALL_TYPES, doc="a - b; integers wrap"
)
MUL = BinaryFunctor(
    BinaryOp.kMul, of_a_b_in_type(product), ALL_TYPES, doc="a * b; integers wrap",
    commutative=True,
)


@scalar_function
def int_div(a, b, attr0, attr1):
    # C division: the quotient truncated toward zero.
    q, r = int_divmod(a, b)
    zero = q - q
    return as_type(q + as_type(1, q) if r != zero and (wide_integer(a) < zero) != (wide_integer(b) < zero) else q, a)


DIV = BinaryFunctor(
    BinaryOp.kDiv, of_a_b(divide), ALL_TYPES, int_formula=int_div, divides_integers=True,
    doc="a / b; integers and bool: truncated toward zero and x / 0 = 0 (NumPy and PyTorch give floats)",
)


def _picking_a_where(keeps_a, ignores_nan: bool = False):
    """The formula a where keeps_a(a, b), else b: NaN in either operand gives NaN, as np.maximum,
    or where ignores_nan, the other operand (NaN only if both are), as np.fmax."""

    @scalar_function
    def formula(a, b, attr0, attr1):
        nan_picks_a = b != b if ignores_nan else a != a
        return a if keeps_a(a, b) or nan_picks_a else b

    return formula


MAX = BinaryFunctor(
    BinaryOp.kMax, _picking_a_where(operator.ge), ALL_TYPES,
    doc="the greater of a and b; NaN if either is NaN (np.maximum, torch.maximum)",
)
MIN = BinaryFunctor(
    BinaryOp.kMin, _picking_a_where(operator.le), ALL_TYPES,
    doc="the lesser of a and b; NaN if either is NaN (np.minimum, torch.minimum)",
)
FMAX = BinaryFunctor(
    BinaryOp.kFmax, _picking_a_where(operator.ge, ignores_nan=True), ALL_TYPES,
    doc="the greater of a and b, ignoring a NaN (NaN only if both are), as np.fmax and torch.fmax",
)
FMIN = BinaryFunctor(
    BinaryOp.kFmin, _picking_a_where(operator.le, ignores_nan=True), ALL_TYPES,
    doc="the lesser of a and b, ignoring a NaN (NaN only if both are), as np.fmin and torch.fmin",
)


@scalar_function
def power(a, b, attr0, attr1):
    return as_type(a**b, a)


@scalar_function
def int_power(a, b, attr0, attr1):
    """a ** b in int64 (uint64) by repeated squaring; a negative exponent gives 0 (1 or -1 for bases 1 and -1)."""
    base = wide_integer(a)
    exponent = wide_integer(b)
    result = as_type(1, base)
    if exponent < exponent - exponent:
        if base == -1:
            result = base if exponent & 1 else -base
        elif base != 1:
            result = base - base
    while exponent > exponent - exponent:
        if exponent & as_type(1, exponent):
            result *= base
        base *= base
        exponent >>= as_type(1, exponent)
    return as_type(result, a)


POW = BinaryFunctor(
    BinaryOp.kPow, power, ALL_TYPES, int_formula=int_power,
    doc="a ** b; integers wrap, and a negative exponent gives 0 but for bases 1 and -1 (NumPy raises)",
)


@scalar_function
def int_fmod(a, b, attr0, attr1):
    # Python's remainder has b's sign; C's has a's.
    _, r = int_divmod(a, b)
    zero = r - r
    return as_type(r - wide_integer(b) if r != zero and (r < zero) != (wide_integer(a) < zero) else r, a)


FMOD = BinaryFunctor(
    BinaryOp.kFmod, of_a_b(fmod), ALL_TYPES, int_formula=int_fmod, divides_integers=True,
    doc="C's fmod: a - trunc(a / b) * b, with a's sign (np.fmod, torch.fmod); integers: x fmod 0 = 0",
)


@scalar_function
def floor_div(a, b, attr0, attr1):
    return float_divmod(a, b)[0]


def _int_divmod_part(index):
    """The integer formula of a // b (index 0) or a % b (index 1), in a's type."""

    @scalar_function
    def formula(a, b, attr0, attr1):
        return as_type(int_divmod(a, b)[index], a)

    return formula


FLOOR_DIV = BinaryFunctor(
    BinaryOp.kFloorDiv, floor_div, ALL_TYPES, int_formula=_int_divmod_part(0), divides_integers=True,
    doc="floor(a / b), as np.floor_divide; integers: x // 0 = 0",
)


@scalar_function
def trunc_div(a, b, attr0, attr1):
    return round_toward_zero(divide(a, b))


TRUNC_DIV = BinaryFunctor(
    BinaryOp.kTruncDiv, trunc_div, ALL_TYPES, int_formula=int_div, divides_integers=True,
    doc="trunc(a / b), as torch.div(a, b, rounding_mode='trunc'); integers: x / 0 = 0",
)


@scalar_function
def floor_mod(a, b, attr0, attr1):
    if b == 0:
        # NumPy's remainder at a zero divisor is fmod's NaN, not divmod's.
        return fmod(a, b)
    return float_divmod(a, b)[1]


FLOOR_MOD = BinaryFunctor(
    BinaryOp.kFloorMod, floor_mod, ALL_TYPES, int_formula=_int_divmod_part(1), divides_integers=True,
    doc="a - floor(a / b) * b, with b's sign, a zero's too (torch's zero takes a's) (np.remainder, torch.remainder); integers: x % 0 = 0",
)
