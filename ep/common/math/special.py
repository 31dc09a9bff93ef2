"""Scalar helpers and special functions that Numba has on neither target, written once for both.

Numba's math.floor/ceil/trunc return integers and numba.cuda has no NumPy ufuncs, so float
rounding comes from LLVM intrinsics (floor, ceil, trunc compile on the CPU and in NVVM alike).
digamma and trigamma follow PyTorch's calc_digamma/calc_trigamma: reflection for negative x,
recurrence up to x >= 10, then the asymptotic series, carried far enough for float64.
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.intrinsics import cast_like, divide, round_down


@scalar_function
def as_type(value, x):
    """value converted to x's type: ints wrap and bool is value != 0, as NumPy's astype; a float
    to an integer type is truncated toward zero and saturated, NaN -> 0 (CUDA's cvt.rzi.sat).

    A Python float literal is float64 in Numba and promotes float32 arithmetic; as_type(0.5, x)
    keeps it in x's precision. Integer results go through it to wrap as NumPy does.
    """
    return cast_like(value, x)


@scalar_function
def round_half_even(x):
    """x rounded to the nearest integer, ties to even, as a float of x's type.

    NVVM rejects llvm.rint and llvm.roundeven, so this is built on floor; x - floor(x) is exact.
    """
    below = round_down(x)
    fraction = x - below
    half = as_type(0.5, x)
    odd = below - as_type(2, x) * round_down(below * half) != 0
    result = below + as_type(1, x) if fraction > half or (fraction == half and odd) else below
    # The result always has x's sign; copysign restores -0.0 for x in [-0.5, -0.0].
    return math.copysign(result, x)


@scalar_function
def digamma(x):
    """psi(x) = d/dx ln Gamma(x), computed in float64 (the recurrence would cost float32 its accuracy).

    -inf at +0, +inf at -0, NaN at the negative integers and -inf, as PyTorch.
    """
    x = np.float64(x)
    if x == 0:
        return math.copysign(math.inf, -x)
    result = 0.0
    if x < 0:
        offset = x - round_half_even(x)  # exact; NaN for -inf
        if offset == 0:
            return math.nan
        # psi(x) = psi(1 - x) - pi / tan(pi x). tan(pi x) has period 1 in x: taking it at the
        # offset from the nearest integer, |offset| <= 1/2, keeps it accurate next to the poles.
        result = -divide(math.pi, math.tan(math.pi * offset))
        x = 1.0 - x
    while x < 10.0:
        result -= divide(1.0, x)
        x += 1.0
    # ln x - 1/(2x) - sum B_2k / (2k x^2k), k = 1..7: truncation error below 5e-17 for x >= 10.
    z = divide(1.0, x * x)
    series = 1 / 132 - z * (691 / 32760 - z * (1 / 12))
    series = z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z * series))))
    return result + math.log(x) - divide(0.5, x) - series


@scalar_function
def trigamma(x):
    """psi'(x), the derivative of digamma, computed in float64. +inf at 0 and the negative integers."""
    x = np.float64(x)
    reflection = 0.0
    sign = 1.0
    if x <= 0:
        offset = x - round_half_even(x)  # exact; NaN for -inf
        if offset == 0:
            return math.inf
        # psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x); sin^2(pi x) has period 1 in x (see digamma).
        reflection = divide(math.pi, math.sin(math.pi * offset)) ** 2
        sign = -1.0
        x = 1.0 - x
    result = 0.0
    while x < 10.0:
        result += divide(1.0, x * x)
        x += 1.0
    # 1/x + 1/(2x^2) + sum B_2k / x^(2k+1), k = 1..7: truncation error below 1e-15 relative for x >= 10.
    z = divide(1.0, x * x)
    series = 1 / 6 - z * (1 / 30 - z * (1 / 42 - z * (1 / 30 - z * (5 / 66 - z * (691 / 2730 - z * (7 / 6))))))
    result += divide(1.0 + divide(0.5, x) + z * series, x)
    return reflection + sign * result


# Giles' approximation (fast_math.erfinv's), as float64 starts for the Newton steps.
_ERFINV_CENTRAL = tuple(float(c) for c in fast_math.ERFINV_CENTRAL)
_ERFINV_TAIL = tuple(float(c) for c in fast_math.ERFINV_TAIL)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


@scalar_function
def erfinv(x):
    """The inverse error function in float64: Giles' approximation (relative error ~1e-7 where
    float32 reaches, worse beyond), then Newton steps: on erf(z) - |x| for |x| <= 1/2, on
    log(erfc(z) / (1 - |x|)) beyond, which is nearly linear in z^2 however far the start (four steps
    reach float64's accuracy at 1 - 2**-53). +-inf at +-1, NaN beyond, -0.0 kept."""
    x = np.float64(x)
    a = abs(x)
    if not a < 1.0:
        return math.copysign(math.inf, x) if a == 1.0 else math.nan
    w = -math.log((1.0 - a) * (1.0 + a))
    if w < 5.0:
        t, coefficients = w - 2.5, _ERFINV_CENTRAL
    else:
        t, coefficients = math.sqrt(w) - 3.0, _ERFINV_TAIL
    p = 0.0
    for c in coefficients:
        p = p * t + c
    z = p * a
    if a > 0.5:
        q = 1.0 - a  # exact
        for _ in range(4):
            e = math.erfc(z)
            z += divide(math.log(divide(e, q)) * e, _TWO_OVER_SQRT_PI * math.exp(-z * z))
    else:
        for _ in range(2):
            z -= divide(math.erf(z) - a, _TWO_OVER_SQRT_PI * math.exp(-z * z))
    return math.copysign(z, x)
