"""float32 transcendental functions that LLVM vectorizes inside a prange loop, for CPU and CUDA.

Numba's math.exp and friends call scalar libm one element at a time; these are range reduction
plus polynomial or rational approximations (Cody-Waite reduction, Cephes polynomials, a fitted
rational erf) in float32 arithmetic only, with no calls, with selects instead of branches and
with bare IEEE divisions (`divide`: `/` checks for a zero divisor in a serial @njit kernel), so a
loop over them compiles to SIMD code (AVX2 or AVX-512), and a CUDA kernel inlines them. Each is within
2e-6 relative of the exact result (gelu: see its docstring); tests/test_fast_math.py sweeps them
against float64.

Python float literals are float64 in Numba and would promote the arithmetic, so every constant
is an np.float32 (or np.int32) module global, which Numba freezes as a constant of that type.
All functions take and return float32; float64 keeps libm's math.* (its accuracy bound is 1e-12).
"""
import math

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.intrinsics import divide as _divide
from ep.common.math.intrinsics import float32_from_int32 as _as_float32
from ep.common.math.intrinsics import int32_from_float32 as _as_int32
from ep.common.math.intrinsics import mul_add as _mul_add


_F0 = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_INF = np.float32(np.inf)
_NAN = np.float32(np.nan)
_SIGN = np.int32(-0x80000000)
_I0 = np.int32(0)
_EXP_BIAS = np.int32(127)
_MANT_BITS = np.int32(23)

# Cody-Waite: ln2 = _LN2_HI + _LN2_LO, where _LN2_HI has 9 significant bits so k * _LN2_HI is
# exact for every |k| < 2^15 and x - k * _LN2_HI loses nothing.
_LOG2E = np.float32(1.44269504088896341)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
# Adding then subtracting 1.5 * 2^23 rounds a float32 below 2^22 to the nearest integer.
_ROUNDER = np.float32(12582912.0)

# expm1(r) = r + r^2 * Q(r) on |r| <= ln2 / 2 (Cephes expf).
_E0 = np.float32(1.9875691500e-4)
_E1 = np.float32(1.3981999507e-3)
_E2 = np.float32(8.3334519073e-3)
_E3 = np.float32(4.1665795894e-2)
_E4 = np.float32(1.6666665459e-1)
_E5 = np.float32(5.0000001201e-1)
_E = (_E0, _E1, _E2, _E3, _E4, _E5)

# Beyond these exp overflows to inf / underflows to 0 in float32; clamping first keeps k in
# range for the 2^k bit trick, and the clamped result still overflows / underflows correctly.
_EXP_MAX = np.float32(89.0)
_EXP_MIN = np.float32(-104.0)
# expm1(x) rounds to -1 below about -17.3.
_EXPM1_MIN = np.float32(-30.0)
# Below this |x|, e^x - 1 rounds to x itself (x / 2, the next term, is under half an ulp of x).
_EXPM1_TINY = np.float32(2.0**-24)


@scalar_function
def _pow2(k):
    """2^k for an int32 (or integral float32) k in [-126, 127], by writing the exponent field."""
    return _as_float32((np.int32(k) + _EXP_BIAS) << _MANT_BITS)


@scalar_function
def _horner(t, coefficients):
    """coefficients[0] t^n + ... + coefficients[n], by Horner's rule: one fused multiply-add a step."""
    p = coefficients[0]
    for c in coefficients[1:]:
        p = _mul_add(p, t, c)
    return p


@scalar_function
def _clamp(x, low, high):
    """float32 x clamped to [low, high], and 0 for NaN (which the callers give back themselves)."""
    xc = high if x > high else x
    xc = low if xc < low else xc
    return _F0 if x != x else xc


@scalar_function
def _nearest_ln2_multiple(v):
    """k = v / ln2 rounded to an integral float32, for |v| < 2^21 ln2."""
    return _mul_add(v, _LOG2E, _ROUNDER) - _ROUNDER


@scalar_function
def _minus_k_ln2(v, k):
    """v - k ln2, exactly but for the last step's rounding (Cody-Waite)."""
    return _mul_add(k, -_LN2_LO, _mul_add(k, -_LN2_HI, v))


@scalar_function
def _expm1_reduced(r):
    """expm1(r) for |r| <= ln2 / 2."""
    return _mul_add(_horner(r, _E), r * r, r)


@scalar_function
def _exp_hilo(hi, lo):
    """exp(hi + lo) for a non-NaN hi + lo in [-104, 89], where lo carries bits that hi cannot.

    k = round((hi + lo) / ln2) and r = hi + lo - k * ln2, so exp = 2^k * exp(r); 2^k is applied
    as two factors so that k may run from -150 (subnormal results) to 128 (overflow to inf).
    """
    k = _nearest_ln2_multiple(hi + lo)
    r = _minus_k_ln2(hi, k) + lo
    p = _expm1_reduced(r) + _ONE
    # The split in integers: one conversion, where halving k in float32 costs three more.
    ki = np.int32(k)
    k1 = ki >> np.int32(1)
    return p * _pow2(k1) * _pow2(ki - k1)


@scalar_function
def exp(x):
    """e^x for float32 x; inf above ~88.72, 0 below ~-103.97 (subnormals on the way), NaN kept."""
    x = np.float32(x)
    y = _exp_hilo(_clamp(x, _EXP_MIN, _EXP_MAX), _F0)
    return x if x != x else y


@scalar_function
def expm1(x):
    """e^x - 1 for float32 x, accurate relative to the result near 0."""
    x = np.float32(x)
    xc = _clamp(x, _EXPM1_MIN, _EXP_MAX)
    k = _nearest_ln2_multiple(xc)
    p = _expm1_reduced(_minus_k_ln2(xc, k))
    # 2^k * (p + 1) - 1 = 2 * (t * p + (t - 1/2)) with t = 2^(k-1) in [2^-44, 2^127]: for k = 0
    # it is p exactly (full relative accuracy near 0), and 2^128 never has to be formed.
    t = _pow2(k - _ONE)
    y = _TWO * _mul_add(t, p, t - _HALF)
    # NaN stays NaN, and a tiny x is the result: the sum above would halve it, rounding an odd
    # subnormal to even, and give +0.0 for -0.0.
    return y if (x == x) & (abs(x) >= _EXPM1_TINY) else x


# log(1 + f) = f - f^2 / 2 + f^3 * P(f) on sqrt(1/2) - 1 <= f < sqrt(2) - 1 (Cephes logf).
_L0 = np.float32(7.0376836292e-2)
_L1 = np.float32(-1.1514610310e-1)
_L2 = np.float32(1.1676998740e-1)
_L3 = np.float32(-1.2420140846e-1)
_L4 = np.float32(1.4249322787e-1)
_L5 = np.float32(-1.6668057665e-1)
_L6 = np.float32(2.0000714765e-1)
_L7 = np.float32(-2.4999993993e-1)
_L8 = np.float32(3.3333331174e-1)
_L = (_L0, _L1, _L2, _L3, _L4, _L5, _L6, _L7, _L8)
_FLT_MIN = np.float32(1.17549435e-38)
_TWO_23 = np.float32(8388608.0)
_SQRT_HALF_BITS = np.int32(0x3F3504F3)
_ONE_BITS = np.int32(0x3F800000)
_MANT_MASK = np.int32(0x007FFFFF)


@scalar_function
def _log_reduced(e, f, coefficients=_L):
    """log(2^e * (1 + f)) for an integral float32 e and f in about [sqrt(1/2) - 1, sqrt(2) - 1)."""
    z = f * f
    y = _mul_add(f * z, _horner(f, coefficients), _mul_add(e, _LN2_LO, -_HALF * z))
    return _mul_add(e, _LN2_HI, f + y)


@scalar_function
def _exponent_offset(x):
    """x's bits offset by 1 - sqrt(1/2), for a normal float32 x: the exponent field of the result
    steps where x's significand m crosses sqrt(1/2), so x = m * 2^e with m in [sqrt(1/2), sqrt(2))."""
    # np.int32: Numba widens int32 arithmetic to int64, whose lanes halve the loop's vector width.
    return np.int32(_as_int32(x) + (_ONE_BITS - _SQRT_HALF_BITS))


@scalar_function
def _exponent(ix):
    """e of _exponent_offset's x = m * 2^e, as an int32."""
    return np.int32((ix >> _MANT_BITS) - _EXP_BIAS)


@scalar_function
def _significand_minus_one(ix):
    """m - 1 of _exponent_offset's x = m * 2^e, exactly."""
    return _as_float32((ix & _MANT_MASK) + _SQRT_HALF_BITS) - _ONE


@scalar_function
def log(x):
    """Natural log of float32 x: -inf at 0, NaN below 0 and for NaN, inf at inf."""
    x = np.float32(x)
    # Subnormals are scaled into the normal range first so the exponent field is meaningful.
    subnormal = x < _FLT_MIN
    xs = x * _TWO_23 if subnormal else x
    bias = np.float32(-23.0) if subnormal else _F0
    ix = _exponent_offset(xs)
    y = _log_reduced(np.float32(_exponent(ix)) + bias, _significand_minus_one(ix))
    y = -_INF if x == _F0 else y
    y = _INF if x == _INF else y
    return _NAN if not x >= _F0 else y


# Below this |x|, log1p(x) rounds to x (which also keeps -0.0 and subnormals as they are).
_LOG1P_TINY = np.float32(2.0**-24)
# From this exponent of 1 + x on, the rounding error of 1 + x is below what float32 resolves.
_LOG1P_EXACT_EXPONENT = np.int32(25)
_MIN_EXPONENT = np.int32(-126)


@scalar_function
def log1p(x):
    """log(1 + x) for float32 x, accurate relative to the result near 0; -inf at -1, NaN below."""
    x = np.float32(x)
    u = x + _ONE
    ix = _exponent_offset(u)
    k = _exponent(ix)
    # u rounds 1 + x; the rounding error c = (1 + x) - u is exact, and added to u's significand
    # (scaled by 2^-k) it makes f the significand of 1 + x itself, without a division.
    c = _F0 if k >= _LOG1P_EXACT_EXPONENT else x - (u - _ONE)
    f = _mul_add(c, _pow2(max(-k, _MIN_EXPONENT)), _significand_minus_one(ix))
    y = _log_reduced(np.float32(k), f)
    y = x if abs(x) < _LOG1P_TINY else y
    y = -_INF if u == _F0 else y
    y = _INF if x == _INF else y
    return _NAN if not u >= _F0 else y


@scalar_function
def _copysign(magnitude, sign_of):
    """magnitude with the sign bit of sign_of (so -0.0 stays -0.0)."""
    return _as_float32(_as_int32(magnitude) | (_as_int32(sign_of) & _SIGN))


# tanh(x) rounds to +-1 beyond this.
_TANH_MAX = np.float32(9.0)


@scalar_function
def tanh(x):
    """tanh of float32 x, as expm1(2|x|) / (expm1(2|x|) + 2) with x's sign."""
    x = np.float32(x)
    a = abs(x)
    a = _TANH_MAX if a > _TANH_MAX else a
    e = expm1(_TWO * a)
    return _copysign(_divide(e, e + _TWO), x)


# e^-a for a in [0, _EXP_MINUS_MAX] is p 2^-m with m in [0, 150]: 2^(_SCALE_OFFSET - m) is a normal
# float32 written straight from the bits of the rounding sum, and 2^-_SCALE_OFFSET takes the
# result down to the subnormals with one rounding.
_SCALE_OFFSET = 64
_EXP_MINUS_ROUNDER = np.float32(12582912.0 + 127 + _SCALE_OFFSET)
_SCALE_DOWN = np.float32(2.0**-_SCALE_OFFSET)
# Q(-r) for _E's Q(r): the odd powers' coefficients negated (_E runs from the highest power, 5).
_E_MINUS = tuple(np.float32(-c) if (len(_E) - 1 - i) % 2 else c for i, c in enumerate(_E))
# e^-a rounds to 0 beyond this.
_EXP_MINUS_MAX = np.float32(104.0)


@scalar_function
def _exp_minus(a):
    """e^-a for float32 a in [0, _EXP_MINUS_MAX] (subnormals on the way to 0), NaN kept.

    exp's reduction with a's sign folded into the constants, and 2^-m without a conversion: t's
    significand holds _EXP_MINUS_ROUNDER's integer minus m, so its bits shifted left by 23 are the
    bits of 2^(_SCALE_OFFSET - m).
    """
    t = _mul_add(a, -_LOG2E, _EXP_MINUS_ROUNDER)
    m = _EXP_MINUS_ROUNDER - t
    # r = a - m ln2 (Cody-Waite), and e^-a = 2^-m e^-r.
    r = _mul_add(m, -_LN2_LO, _mul_add(m, -_LN2_HI, a))
    p = _mul_add(_horner(r, _E_MINUS), r * r, -r) + _ONE
    return p * _as_float32(_as_int32(t) << _MANT_BITS) * _SCALE_DOWN


@scalar_function
def sigmoid(x):
    """1 / (1 + e^-x) for float32 x, accurate relative to the result on both tails."""
    x = np.float32(x)
    # e = e^-|x| never overflows, and e / (1 + e) keeps the left tail down to subnormals. The
    # clamp is one vminps that keeps a NaN, which then runs through to the result.
    a = abs(x)
    e = _exp_minus(_EXP_MINUS_MAX if a > _EXP_MINUS_MAX else a)
    # Picked by x's sign bit, which the vblendvps reads straight from x (-0.0 takes e = 1 alike).
    return _divide(e if _as_int32(x) < _I0 else _ONE, _ONE + e)


# log1p(u) for u in [0, 1]: 1 + u = 2^e (1 + f) with f in [sqrt(1/2) - 1, sqrt(2) - 1), e = 0 or 1.
_SQRT2_MINUS_ONE = np.float32(0.41421356)


@scalar_function
def _log1p_unit(u):
    """log(1 + u) for float32 u in [0, 1] (subnormals kept), NaN kept.

    log1p without its exponent handling: f = u below sqrt(2) - 1, else (u - 1) / 2, which one
    fused multiply-add gives exactly (u - 1 is in [-0.59, 0], a multiple of u's last bit).
    """
    big = u > _SQRT2_MINUS_ONE
    return _log_reduced(_ONE if big else _F0, _mul_add(u, _HALF, -_HALF) if big else u)


@scalar_function
def softplus(x):
    """log(1 + e^x) for float32 x, as max(x, 0) + log1p(e^-|x|): accurate relative to the result
    on both tails (down to subnormals), inf at inf, NaN kept."""
    x = np.float32(x)
    a = abs(x)
    u = _exp_minus(_EXP_MINUS_MAX if a > _EXP_MINUS_MAX else a)
    return (x if x > _F0 else _F0) + _log1p_unit(u)


# erf(x) = x * P(x^2) / R(x^2) on |x| <= _ERF_MAX: a relative minimax rational fit
# (Sanathanan-Koerner + Lawson iterations in float64), max error 2e-8 before float32 rounding.
_ERF_MAX = np.float32(3.92)
_P0 = np.float32(1.1283791458159071)
_P1 = np.float32(0.19056551481127956)
_P2 = np.float32(0.05276616402129537)
_P3 = np.float32(0.0037714979612998656)
_P4 = np.float32(0.00028484810093997934)
_P5 = np.float32(2.046622450235791e-06)
_R1 = np.float32(0.5022170223644805)
_R2 = np.float32(0.11417159394196426)
_R3 = np.float32(0.014981074624384066)
_R4 = np.float32(0.001163654708828071)
_R5 = np.float32(3.8054156442327014e-05)
_P = (_P5, _P4, _P3, _P2, _P1, _P0)
_R = (_R5, _R4, _R3, _R2, _R1, _ONE)
# erfc(a) = t * exp(-a^2 + Q(t)) with t = 1 / (1 + a / 2), a >= 0: Numerical Recipes' erfcc
# (Chebyshev fit, fractional error below 1.2e-7 everywhere).
_Q0 = np.float32(-1.26551223)
_Q1 = np.float32(1.00002368)
_Q2 = np.float32(0.37409196)
_Q3 = np.float32(0.09678418)
_Q4 = np.float32(-0.18628806)
_Q5 = np.float32(0.27886807)
_Q6 = np.float32(-1.13520398)
_Q7 = np.float32(1.48851587)
_Q8 = np.float32(-0.82215223)
_Q9 = np.float32(0.17087277)
_Q = (_Q9, _Q8, _Q7, _Q6, _Q5, _Q4, _Q3, _Q2, _Q1, _Q0)
# erfc(a) underflows to 0 beyond this; clamping keeps inf out of a^2.
_ERFC_MAX = np.float32(10.5)
_SQRT_HALF = np.float32(0.70710678118654752)
# Clears the low 12 significand bits of a float32, so the result squared is exact.
_HIGH_MASK = np.int32(-0x1000)


@scalar_function
def erf(x):
    """The error function of float32 x, accurate relative to the result (also near 0)."""
    x = np.float32(x)
    a = min(abs(x), _ERF_MAX)
    z = a * a
    p = _horner(z, _P)
    r = _horner(z, _R)
    # erf(x) rounds to +-1 from _ERF_MAX on; exactly 1 there keeps gelu's 1 + erf(x) at 0.
    y = _copysign(_ONE if a >= _ERF_MAX else _divide(a * p, r), x)
    return x if x != x else y


@scalar_function
def erfc(x):
    """1 - erf(x) for float32 x, accurate relative to the result on the right tail too."""
    x = np.float32(x)
    a = abs(x)
    a = _ERFC_MAX if a > _ERFC_MAX else a
    t = _divide(_ONE, _mul_add(_HALF, a, _ONE))
    q = _horner(t, _Q)
    # a^2 = ah^2 + (a - ah)(a + ah) with ah^2 exact: a^2 rounded to float32 would cost up to
    # 6e-6 relative in exp(-a^2) at a = 10.
    ah = _as_float32(_as_int32(a) & _HIGH_MASK)
    e = t * _exp_hilo(-(ah * ah), q - (a - ah) * (a + ah))
    y = e if x > _F0 else _TWO - e
    return x if x != x else y


@scalar_function
def gelu(x):
    """x / 2 * (1 + erf(x / sqrt(2))) for float32 x (PyTorch's exact gelu).

    Relative accuracy holds for x > -1; on the left tail the error stays below 6e-7 absolute,
    since 1 + erf cancels there (as in PyTorch). 0.5 * x * erfc(-x * sqrt(1/2)) is accurate
    relative there too, at twice the cost.
    """
    x = np.float32(x)
    return x * _mul_add(_HALF, erf(x * _SQRT_HALF), _HALF)


# atan(t) = t * P(t^2) on [0, 1]: a least-squares fit of atan(t) / t in t^2, reweighted toward
# minimax (Lawson); 2.7e-9 relative in float64, 1.5 ulp evaluated in float32.
_ATAN = tuple(np.float32(c) for c in (
    -0.0017874762415885925, 0.010877760127186775, -0.031087081879377365, 0.05783739313483238,
    -0.08394105732440948, 0.10947834700345993, -0.14263060688972473, 0.19998376071453094,
    -0.3333328664302826, 1.0,
))
_PI = np.float32(np.pi)
_HALF_PI = np.float32(np.pi / 2)
_QUARTER_PI = np.float32(np.pi / 4)
_THREE_QUARTERS_PI = np.float32(3 * np.pi / 4)


@scalar_function
def atan2(y, x):
    """The angle of the point (x, y) of float32 coordinates, in [-pi, pi], with C's atan2 at the
    signed zeros and infinities: atan of the smaller over the larger magnitude, then reflected."""
    y = np.float32(y)
    x = np.float32(x)
    ax, ay = abs(x), abs(y)
    steep = ay > ax
    big = ay if steep else ax
    t = _divide(ax if steep else ay, big)  # NaN for 0/0 and inf/inf, set below
    r = t * _horner(t * t, _ATAN)
    r = _HALF_PI - r if steep else r
    left = _as_int32(x) < _I0  # x's sign bit: -0.0 is on the left
    r = _PI - r if left else r
    r = (_PI if left else _F0) if big == _F0 else r
    r = (_THREE_QUARTERS_PI if left else _QUARTER_PI) if ax == _INF and ay == _INF else r
    return _copysign(r, y) if x == x and y == y else x + y


# Giles' single-precision erfinv (M. Giles, "Approximating the erfinv function", GPU Computing
# Gems, 2011): polynomials in w = -log(1 - x^2), one for w < 5 (in w - 2.5), one beyond (in
# sqrt(w) - 3); about 1e-7 relative where float32 reaches. special.erfinv refines it for float64.
ERFINV_CENTRAL = tuple(np.float32(c) for c in (
    2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941,
))
ERFINV_TAIL = tuple(np.float32(c) for c in (
    -0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
    -0.0076224613, 0.00943887047, 1.00167406, 2.83297682,
))
# P of log(1 + f) = f - f^2 / 2 + f^3 * P(f) on _log_reduced's interval to an absolute 6e-8, a
# near-minimax fit of degree 5 (logf's _L: 8): erfinv's polynomials need its log to an absolute
# 1e-7 only, and it saves three fused multiply-adds an element.
_ERFINV_LOG = tuple(np.float32(c) for c in (
    -0.10224097222089767, 0.16141128540039062, -0.17166920006275177, 0.19910244643688202,
    -0.2498057335615158, 0.3333469033241272,
))
_FIVE = np.float32(5.0)
_TWO_AND_HALF = np.float32(2.5)
_THREE = np.float32(3.0)


@scalar_function
def erfinv(x):
    """The inverse error function of float32 x: +-inf at +-1, NaN beyond, -0.0 kept."""
    x = np.float32(x)
    a = abs(x)
    # For a < 1, 1 - a^2 (one rounding) is at least 2^-23, normal: its log needs none of log's
    # special cases (a = 1, a > 1 and NaN are settled below).
    ix = _exponent_offset(_mul_add(-a, a, _ONE))
    w = -_log_reduced(np.float32(_exponent(ix)), _significand_minus_one(ix), _ERFINV_LOG)
    central = w < _FIVE
    t = w - _TWO_AND_HALF if central else np.float32(math.sqrt(w)) - _THREE
    p = _horner(t, ERFINV_CENTRAL) if central else _horner(t, ERFINV_TAIL)
    # p > 0: p * x has x's sign, -0.0 kept.
    p = _INF if a == _ONE else p
    return p * x if a <= _ONE else _NAN


@scalar_function
def hypot(a, b):
    """sqrt(a * a + b * b) of float32 a and b without overflow or underflow: the larger magnitude
    times sqrt(1 + r^2), r the ratio of the smaller to it; inf if either is infinite (NaN beside)."""
    a = abs(np.float32(a))
    b = abs(np.float32(b))
    big = a if a > b else b
    small = b if a > b else a
    r = _divide(small, big)
    h = big * np.float32(math.sqrt(_mul_add(r, r, _ONE)))
    h = small if big == _F0 else h  # both zero, or a NaN beside a zero
    return _INF if a == _INF or b == _INF else h
