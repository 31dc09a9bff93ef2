"""Real functions of two arguments, as PyTorch's functions of their names: atan2, hypot, copysign,
nextafter, ldexp, heaviside, xlogy, logaddexp, logaddexp2 (fmax and fmin sit with max and min in
arithmetic).

Integer and bool operands compute in float32 where torch.<name> takes them (atan2, copysign, ldexp,
xlogy); hypot, logaddexp, logaddexp2 and nextafter of integers are refused as torch refuses them
(NumPy's arctan2 computes in NumPy's float: aliases.py). heaviside keeps every dtype.
"""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.intrinsics import float_bits, float_from_bits
from ep.common.math.ops.record import FLOAT, BinaryFunctor, float_variants, of_a_b
from ep.common.math.special import as_type, divide
from ep.common.runtime.data_type import ALL_TYPES, DataType
from ep.include.primitive.binary_op import BinaryOp

LN2 = math.log(2)

ATAN2 = BinaryFunctor(
    BinaryOp.kAtan2, of_a_b(math.atan2), FLOAT, ints_to_float=True, float32_formula=of_a_b(fast_math.atan2),
    doc="the angle of the point (b, a) in [-pi, pi] (-pi from a = -0.0), as atan(a / b) with the quadrant (np.arctan2)",
)
HYPOT = BinaryFunctor(
    BinaryOp.kHypot, of_a_b(math.hypot), FLOAT, commutative=True, float32_formula=of_a_b(fast_math.hypot),
    doc="sqrt(a * a + b * b) without overflow; inf if either is infinite, NaN beside",
)
COPYSIGN = BinaryFunctor(
    BinaryOp.kCopysign, of_a_b(math.copysign), FLOAT, ints_to_float=True,
    doc="|a| with b's sign bit (-0.0 and a NaN's sign count)",
)


@scalar_function
def nextafter(a, b, attr0, attr1):
    if a != a or b != b:
        return a + b
    if a == b:
        return b
    if a == 0:
        # The least subnormal, toward b.
        return math.copysign(float_from_bits(1, a), b)
    bits = float_bits(a)
    step = as_type(1, bits) if (a < b) == (a > 0) else as_type(-1, bits)
    return float_from_bits(bits + step, a)


NEXTAFTER = BinaryFunctor(
    BinaryOp.kNextAfter, nextafter, (DataType.kFloat, DataType.kDouble),
    doc="the float after a toward b (b if equal); float32 and float64 only: float16 and bfloat16,"
    " computed in float32, would step by float32's spacing (torch takes them)",
)


@scalar_function
def ldexp(a, b, attr0, attr1):
    return a * as_type(2, a) ** b


LDEXP = BinaryFunctor(
    BinaryOp.kLdexp, ldexp, FLOAT, ints_to_float=True,
    doc="a * 2 ** b, as torch.ldexp (b may be fractional; float16 is computed in float32 and rounded once)",
)


@scalar_function
def heaviside(x, values, attr0, attr1):
    return values if x == 0 else as_type(x > 0, x)


HEAVISIDE = BinaryFunctor(
    BinaryOp.kHeaviside, heaviside, ALL_TYPES,
    doc="0 for a < 0, b for a == 0, 1 for a > 0; 0 for a NaN a, as torch.heaviside (np.heaviside gives NaN)",
)


def _xlogy_over(m):
    @scalar_function
    def xlogy(a, b, attr0, attr1):
        if b != b:
            return b
        if a == 0:
            return as_type(0, a)
        return a * m.log(b)

    return xlogy


xlogy, xlogy_float32 = float_variants(_xlogy_over)
XLOGY = BinaryFunctor(
    BinaryOp.kXlogy, xlogy, FLOAT, ints_to_float=True, float32_formula=xlogy_float32,
    doc="a * log(b), 0 where a == 0 unless b is NaN (torch.xlogy)",
)


def _logaddexp_over(m, base_log: float):
    """log(e**a + e**b), in base e (base_log ln 2: base 2), as the larger plus softplus of minus
    their distance: no overflow, and selects only (the loop vectorizes)."""

    @scalar_function
    def formula(a, b, attr0, attr1):
        k = as_type(base_log, a)
        d = a - b
        r = (a if d > 0 else b) + divide(m.softplus(-abs(d) * k), k)
        # d is NaN for a NaN and for equal infinities, whose result is themselves.
        return r if d == d else (a if a == b else d)

    return formula


logaddexp, logaddexp_float32 = float_variants(lambda m: _logaddexp_over(m, 1.0))
LOGADDEXP = BinaryFunctor(
    BinaryOp.kLogAddExp, logaddexp, FLOAT, float32_formula=logaddexp_float32, commutative=True,
    doc="log(exp(a) + exp(b)), without overflow",
)
logaddexp2, logaddexp2_float32 = float_variants(lambda m: _logaddexp_over(m, LN2))
LOGADDEXP2 = BinaryFunctor(
    BinaryOp.kLogAddExp2, logaddexp2, FLOAT, float32_formula=logaddexp2_float32, commutative=True,
    doc="log2(2 ** a + 2 ** b), without overflow",
)
