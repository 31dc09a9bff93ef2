"""The scalar formula of every ElementwiseUnary op, written once for the CPU and the CUDA kernels.

Each formula is f(x, attr0, attr1) in the compute dtype (float16 is computed in float32) and is
named after its op's value; ops without attributes ignore them. Formulas follow PyTorch's function
of the same name, NaN in gives NaN out (sign gives 0, as PyTorch). Constants go through as_type so
float32 math stays float32; integer results go through it so they wrap as NumPy's do. Float
division is `divide`, IEEE division without the CPU kernel's ZeroDivisionError check.

Ops built on exp, expm1, tanh, sigmoid, erf, erfc or log also have a `*_float32` variant, the same
formula over ep.common.math.fast_math's vectorizable float32 functions instead of libm's scalar calls
(unary_functor picks it when the compute dtype is float32, float16 included). Both come from one
`_*_with(fn)` factory (or `_of_x(fn)`), so a formula is written once and only the function it calls
differs; sigmoid and gelu use fast_math's own float32 formulations of the whole function.
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.math import fast_math
from ep.common.jit import scalar_function
from ep.common.math.special import as_type, divide, round_down, round_half_even, round_toward_zero, round_up
from ep.common.math.special import digamma as _digamma
from ep.common.math.special import trigamma as _trigamma

_SQRT1_2 = 1 / math.sqrt(2)
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _of_x(fn):
    """The formula fn(x) of an op without attributes, from a one-argument math function."""

    @scalar_function
    def formula(x, attr0, attr1):
        return fn(x)

    return formula


@scalar_function
def _sigmoid(x):
    one = as_type(1, x)
    return divide(one, one + math.exp(-x))


# activations


@scalar_function
def identity(x, attr0, attr1):
    return x


@scalar_function
def relu(x, attr0, attr1):
    # "not x <= 0" rather than "x > 0" lets NaN through, as PyTorch's relu.
    return x if not x <= 0 else as_type(0, x)


def _elu_with(expm1):
    @scalar_function
    def elu(x, alpha, attr1):
        return x if x > 0 else alpha * expm1(x)

    return elu


elu = _elu_with(math.expm1)
elu_float32 = _elu_with(fast_math.expm1)


def _celu_with(expm1):
    @scalar_function
    def celu(x, alpha, attr1):
        return x if x > 0 else alpha * expm1(divide(x, alpha))

    return celu


celu = _celu_with(math.expm1)
celu_float32 = _celu_with(fast_math.expm1)


@scalar_function
def gelu(x, attr0, attr1):
    # 0.5 x (1 + erf(x / sqrt 2)), as erfc so the negative tail keeps its relative accuracy.
    return as_type(0.5, x) * x * math.erfc(-x * as_type(_SQRT1_2, x))


# The erf form, as PyTorch's: 1 + erf cancels for x < -1, where the error stays below 6e-7
# absolute (the bound is absolute there), at under half the cost of the erfc form.
gelu_float32 = _of_x(fast_math.gelu)

sigmoid = _of_x(_sigmoid)
sigmoid_float32 = _of_x(fast_math.sigmoid)


def _fast_gelu_with(sigmoid_):
    @scalar_function
    def fast_gelu(x, attr0, attr1):
        # 0.5 x (1 + tanh(u)) == x sigmoid(2u): the same value without 1 + tanh's cancellation for x < 0.
        u = as_type(_SQRT_2_OVER_PI, x) * (x + as_type(0.044715, x) * x * x * x)
        return x * sigmoid_(as_type(2, x) * u)

    return fast_gelu


fast_gelu = _fast_gelu_with(_sigmoid)
fast_gelu_float32 = _fast_gelu_with(fast_math.sigmoid)


def _quick_gelu_with(sigmoid_):
    @scalar_function
    def quick_gelu(x, attr0, attr1):
        return x * sigmoid_(as_type(1.702, x) * x)

    return quick_gelu


quick_gelu = _quick_gelu_with(_sigmoid)
quick_gelu_float32 = _quick_gelu_with(fast_math.sigmoid)


@scalar_function
def hard_tanh(x, min_val, max_val):
    # Comparisons are false for NaN, which falls through unchanged.
    if x < min_val:
        return min_val
    return max_val if x > max_val else x


@scalar_function
def hard_sigmoid(x, attr0, attr1):
    six = as_type(6, x)
    return divide(hard_tanh(x + as_type(3, x), as_type(0, x), six), six)


@scalar_function
def hard_swish(x, attr0, attr1):
    return x * hard_sigmoid(x, attr0, attr1)


@scalar_function
def hard_shrink(x, lambd, attr1):
    return as_type(0, x) if -lambd <= x <= lambd else x


@scalar_function
def leaky_relu(x, alpha, attr1):
    return x if x > 0 else x * alpha


@scalar_function
def soft_plus(x, beta, threshold):
    # PyTorch's linear region above threshold, which also keeps exp from overflowing.
    return x if x * beta > threshold else divide(math.log1p(math.exp(x * beta)), beta)


def _mish_with(tanh_):
    @scalar_function
    def mish(x, attr0, attr1):
        # PyTorch's x tanh(log1p(exp(x))); softplus's default threshold changes no float64 value.
        return x * tanh_(soft_plus(x, as_type(1, x), as_type(20, x)))

    return mish


mish = _mish_with(math.tanh)
mish_float32 = _mish_with(fast_math.tanh)


def _selu_with(elu_):
    @scalar_function
    def selu(x, attr0, attr1):
        return as_type(_SELU_SCALE, x) * elu_(x, as_type(_SELU_ALPHA, x), attr1)

    return selu


selu = _selu_with(elu)
selu_float32 = _selu_with(elu_float32)


def _silu_with(sigmoid_):
    @scalar_function
    def silu(x, attr0, attr1):
        return x * sigmoid_(x)

    return silu


silu = _silu_with(_sigmoid)
silu_float32 = _silu_with(fast_math.sigmoid)


@scalar_function
def soft_shrink(x, alpha, attr1):
    if x > alpha:
        return x - alpha
    # x - x: 0 inside [-alpha, alpha], and NaN for NaN.
    return x + alpha if x < -alpha else as_type(x - x, x)


@scalar_function
def soft_sign(x, attr0, attr1):
    return divide(x, as_type(1, x) + abs(x))


tanh = _of_x(math.tanh)
tanh_float32 = _of_x(fast_math.tanh)


@scalar_function
def threshold(x, threshold_, value):
    return value if x <= threshold_ else x


@scalar_function
def square_relu(x, attr0, attr1):
    y = relu(x, attr0, attr1)
    return y * y


# math


@scalar_function
def abs_(x, attr0, attr1):
    return as_type(abs(x), x)


@scalar_function
def acos(x, attr0, attr1):
    return math.acos(x)


@scalar_function
def acosh(x, attr0, attr1):
    return math.acosh(x)


@scalar_function
def asin(x, attr0, attr1):
    return math.asin(x)


@scalar_function
def asinh(x, attr0, attr1):
    return math.asinh(x)


@scalar_function
def atan(x, attr0, attr1):
    return math.atan(x)


@scalar_function
def atanh(x, attr0, attr1):
    return math.atanh(x)


@scalar_function
def ceil(x, attr0, attr1):
    return round_up(x)


@scalar_function
def cos(x, attr0, attr1):
    return math.cos(x)


@scalar_function
def cosh(x, attr0, attr1):
    return math.cosh(x)


@scalar_function
def digamma(x, attr0, attr1):
    return as_type(_digamma(x), x)


@scalar_function
def trigamma(x, attr0, attr1):
    return as_type(_trigamma(x), x)


erf = _of_x(math.erf)
erf_float32 = _of_x(fast_math.erf)
erfc = _of_x(math.erfc)
erfc_float32 = _of_x(fast_math.erfc)
exp = _of_x(math.exp)
exp_float32 = _of_x(fast_math.exp)


@scalar_function
def exp2(x, attr0, attr1):
    return as_type(2, x) ** x


expm1 = _of_x(math.expm1)
expm1_float32 = _of_x(fast_math.expm1)


@scalar_function
def floor(x, attr0, attr1):
    return round_down(x)


@scalar_function
def lgamma(x, attr0, attr1):
    # In float64: float32 lgamma (CUDA's lgammaf above all) loses accuracy for negative x.
    return as_type(math.lgamma(np.float64(x)), x)


log = _of_x(math.log)
log_float32 = _of_x(fast_math.log)


@scalar_function
def log2(x, attr0, attr1):
    return math.log2(x)


@scalar_function
def log10(x, attr0, attr1):
    return math.log10(x)


@scalar_function
def log1p(x, attr0, attr1):
    return math.log1p(x)


@scalar_function
def log_sigmoid(x, attr0, attr1):
    # -softplus(-x) written so exp never overflows.
    return min(x, as_type(0, x)) - math.log1p(math.exp(-abs(x)))


@scalar_function
def negative(x, attr0, attr1):
    return as_type(-x, x)


@scalar_function
def reciprocal(x, attr0, attr1):
    return divide(as_type(1, x), x)


@scalar_function
def reciprocal_no_nan(x, attr0, attr1):
    return as_type(0, x) if x == 0 else reciprocal(x, attr0, attr1)


@scalar_function
def rint(x, attr0, attr1):
    return round_half_even(x)


@scalar_function
def round_(x, attr0, attr1):
    # torch.round with decimals=0 is rint: half to even.
    return round_half_even(x)


@scalar_function
def rsqrt(x, attr0, attr1):
    return divide(as_type(1, x), math.sqrt(x))


@scalar_function
def sign(x, attr0, attr1):
    # PyTorch's (0 < x) - (x < 0): 0 for NaN, where NumPy's sign gives NaN.
    return as_type((x > 0) - (x < 0), x)


@scalar_function
def sin(x, attr0, attr1):
    return math.sin(x)


@scalar_function
def sinh(x, attr0, attr1):
    return math.sinh(x)


@scalar_function
def sqrt(x, attr0, attr1):
    return math.sqrt(x)


@scalar_function
def square(x, attr0, attr1):
    return as_type(x * x, x)


@scalar_function
def tan(x, attr0, attr1):
    return math.tan(x)


@scalar_function
def trunc(x, attr0, attr1):
    return round_toward_zero(x)


# predicates and logic


@scalar_function
def not_equal_zero(x, attr0, attr1):
    return as_type(x != 0, x)


@scalar_function
def logical_not(x, attr0, attr1):
    return x == 0


@scalar_function
def is_inf(x, attr0, attr1):
    return math.isinf(x)


@scalar_function
def is_nan(x, attr0, attr1):
    return x != x


@scalar_function
def is_finite(x, attr0, attr1):
    return math.isfinite(x)


@scalar_function
def bitwise_not(x, attr0, attr1):
    # x ^ all-ones of x's type: ~x for integers, not x for bool (where ~True is -2).
    return as_type(x ^ as_type(-1, x), x)
