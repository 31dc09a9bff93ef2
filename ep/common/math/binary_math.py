"""The scalar formula of every forward BroadcastElementwiseBinary op, written once for CPU and CUDA.

A formula is f(a, b, attr0, attr1) in the compute dtype (float16 is computed in float32) and
returns the operands' type (bool for predicates). Ops whose integer semantics differ have an
integer formula too (used for the integer dtypes and bool): it works in int64 and wraps the result
to the operands' type with as_type, as NumPy's integers wrap (bool is then result != 0).
Integer division and modulo by zero give 0, and the int64 overflow of MIN // -1 is sidestepped,
so no kernel ever traps. Float division is IEEE (special.divide: inf and NaN, never ZeroDivisionError).
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.intrinsics import frem
from ep.common.math.special import as_type, divide, round_down, round_toward_zero


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
    """(a // b, a % b) for integers in int64, Python's floor semantics; (0, 0) for b == 0."""
    a = np.int64(a)
    b = np.int64(b)
    if b == 0:
        return a - a, a - a
    if b == -1:
        # -a wraps for INT64_MIN, where a // -1 would trap.
        return -a, a - a
    return a // b, a % b


# math


@scalar_function
def add(a, b, attr0, attr1):
    return as_type(a + b, a)


@scalar_function
def sub(a, b, attr0, attr1):
    return as_type(a - b, a)


@scalar_function
def mul(a, b, attr0, attr1):
    return as_type(a * b, a)


@scalar_function
def div(a, b, attr0, attr1):
    return divide(a, b)


@scalar_function
def int_div(a, b, attr0, attr1):
    # C division: the quotient truncated toward zero.
    q, r = int_divmod(a, b)
    return as_type(q + 1 if r != 0 and (np.int64(a) < 0) != (np.int64(b) < 0) else q, a)


@scalar_function
def maximum(a, b, attr0, attr1):
    # NaN in either operand gives NaN, as np.maximum.
    return a if a >= b or a != a else b


@scalar_function
def minimum(a, b, attr0, attr1):
    return a if a <= b or a != a else b


@scalar_function
def power(a, b, attr0, attr1):
    return as_type(a**b, a)


@scalar_function
def int_power(a, b, attr0, attr1):
    """a ** b in int64 by repeated squaring; a negative exponent gives 0 (1 or -1 for bases 1 and -1)."""
    base = np.int64(a)
    exponent = np.int64(b)
    result = np.int64(1)
    if exponent < 0:
        if base == -1:
            result = base if exponent & 1 else -base
        elif base != 1:
            result = base - base
    while exponent > 0:
        if exponent & 1:
            result *= base
        base *= base
        exponent >>= 1
    return as_type(result, a)


@scalar_function
def float_fmod(a, b, attr0, attr1):
    return fmod(a, b)


@scalar_function
def int_fmod(a, b, attr0, attr1):
    # Python's remainder has b's sign; C's has a's.
    _, r = int_divmod(a, b)
    return as_type(r - np.int64(b) if r != 0 and (r < 0) != (np.int64(a) < 0) else r, a)


@scalar_function
def floor_div(a, b, attr0, attr1):
    return float_divmod(a, b)[0]


@scalar_function
def int_floor_div(a, b, attr0, attr1):
    return as_type(int_divmod(a, b)[0], a)


@scalar_function
def trunc_div(a, b, attr0, attr1):
    return round_toward_zero(divide(a, b))


@scalar_function
def floor_mod(a, b, attr0, attr1):
    if b == 0:
        # NumPy's remainder at a zero divisor is fmod's NaN, not divmod's.
        return fmod(a, b)
    return float_divmod(a, b)[1]


@scalar_function
def int_floor_mod(a, b, attr0, attr1):
    return as_type(int_divmod(a, b)[1], a)


# comparison


@scalar_function
def equal(a, b, attr0, attr1):
    return a == b


@scalar_function
def not_equal(a, b, attr0, attr1):
    return a != b


@scalar_function
def less_than(a, b, attr0, attr1):
    return a < b


@scalar_function
def less_equal(a, b, attr0, attr1):
    return a <= b


@scalar_function
def greater_than(a, b, attr0, attr1):
    return a > b


@scalar_function
def greater_equal(a, b, attr0, attr1):
    return a >= b


@scalar_function
def is_close(a, b, atol, rtol):
    """|a - b| <= atol + rtol * |b|, computed in the attributes' float type (equal infinities are close)."""
    x = as_type(a, atol)
    y = as_type(b, atol)
    if x == y:
        return True
    error = abs(x - y)
    return math.isfinite(error) and error <= atol + rtol * abs(y)


@scalar_function
def is_close_equal_nan(a, b, atol, rtol):
    if a != a and b != b:
        return True
    return is_close(a, b, atol, rtol)


# logical and bitwise


@scalar_function
def logical_and(a, b, attr0, attr1):
    return a != 0 and b != 0


@scalar_function
def logical_or(a, b, attr0, attr1):
    return a != 0 or b != 0


@scalar_function
def logical_xor(a, b, attr0, attr1):
    return (a != 0) != (b != 0)


@scalar_function
def bitwise_and(a, b, attr0, attr1):
    return as_type(a & b, a)


@scalar_function
def bitwise_or(a, b, attr0, attr1):
    return as_type(a | b, a)


@scalar_function
def bitwise_xor(a, b, attr0, attr1):
    return as_type(a ^ b, a)
