"""Integer functions of two arguments: gcd, lcm and the bit shifts, on the integer dtypes (bool is
refused, as torch refuses it; NumPy's left_shift and right_shift compute bools as int8: aliases.py).

They work in 64 bits and wrap to the operands' type: gcd and lcm on the magnitudes as uint64, so
the most negative value has its true magnitude (gcd(-128, 6) of int8 is 2, as NumPy gives; torch
gives -2 from an overflowing abs); a shift by a negative amount or by the width or more gives what
shifting one bit at a time would (0, or -1 for a negative value shifted right), as NumPy and PyTorch.
"""
from __future__ import annotations

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.intrinsics import wide_integer
from ep.common.math.ops.record import BinaryFunctor
from ep.common.math.special import as_type
from ep.common.runtime.data_type import INTEGER_TYPES
from ep.include.primitive.binary_op import BinaryOp


@scalar_function
def magnitude(x):
    """|x| of an integer as uint64, exact for the most negative int64 too."""
    wide = wide_integer(x)
    bits = np.uint64(wide)
    return bits if wide >= wide - wide else bits - bits - bits


@scalar_function
def gcd_of_magnitudes(x, y):
    while y != y - y:
        x, y = y, x % y
    return x


@scalar_function
def gcd(a, b, attr0, attr1):
    return as_type(gcd_of_magnitudes(magnitude(a), magnitude(b)), a)


@scalar_function
def lcm(a, b, attr0, attr1):
    x, y = magnitude(a), magnitude(b)
    g = gcd_of_magnitudes(x, y)
    return as_type(g - g if g == g - g else x // g * y, a)


GCD = BinaryFunctor(
    BinaryOp.kGcd, gcd, INTEGER_TYPES, commutative=True, divides_integers=True,
    doc="the greatest common divisor of |a| and |b| (0 for two zeros), wrapped to the dtype",
)
LCM = BinaryFunctor(
    BinaryOp.kLcm, lcm, INTEGER_TYPES, commutative=True, divides_integers=True,
    doc="the least common multiple of |a| and |b| (0 if either is 0); integers wrap",
)

# Shift amounts from this on (or negative) shift every bit out of a 64-bit value.
_WIDTH = 64


@scalar_function
def left_shift(a, b, attr0, attr1):
    x, s = wide_integer(a), wide_integer(b)
    if s < s - s or s >= _WIDTH:
        return as_type(x - x, a)
    return as_type(x << s, a)


@scalar_function
def right_shift(a, b, attr0, attr1):
    x, s = wide_integer(a), wide_integer(b)
    if s < s - s or s >= _WIDTH:
        return as_type(-1, a) if x < x - x else as_type(0, a)
    return as_type(x >> s, a)


BITWISE_LEFT_SHIFT = BinaryFunctor(
    BinaryOp.kBitwiseLeftShift, left_shift, INTEGER_TYPES,
    doc="a << b; 0 for b < 0 or b at least a's width",
)
BITWISE_RIGHT_SHIFT = BinaryFunctor(
    BinaryOp.kBitwiseRightShift, right_shift, INTEGER_TYPES,
    doc="a >> b, arithmetic for signed dtypes; for b < 0 or b at least a's width: -1 if a < 0, else 0",
)
