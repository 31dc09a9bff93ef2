"""Activations, with their derivatives: relu and its smooth relatives, sigmoid, tanh, the gelus, hard and soft clamps.

Ops built on exp, expm1, tanh or sigmoid have a float32 variant: the formula is written once in a
`_*_over(m)` factory over a math module and instantiated over libm's and fast_math's (float_variants).
"""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.ops.record import FLOAT, NUMBERS, UnaryFunctor, float_variants, of_x, of_x_variants
from ep.common.math.ops.transcendental import cosh, erfc, exp
from ep.common.math.special import as_type, divide
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.unary_op import UnaryOp

_SQRT1_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
# fast_gelu's tanh argument is sqrt(2/pi) (x + 0.044715 x^3).
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_FAST_GELU_BETA = 0.044715
_QUICK_GELU_ALPHA = 1.702
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


sigmoid, sigmoid_float32 = of_x_variants("sigmoid")


@scalar_function
def sigmoid_backward_with_dy_y(dy, y, attr0, attr1):
    return dy * y * (as_type(1, y) - y)


@scalar_function
def sigmoid_backward_with_dy_x(dy, x, attr0, attr1):
    # s(x) (1 - s(x)) = s(x) s(-x): both factors keep their relative accuracy.
    return dy * sigmoid(x, attr0, attr1) * sigmoid(-x, attr0, attr1)


SIGMOID = UnaryFunctor(
    UnaryOp.kSigmoid, sigmoid, FLOAT, ints_to_float=True, float32_formula=sigmoid_float32, with_dy_x=sigmoid_backward_with_dy_x,
    with_dy_y=sigmoid_backward_with_dy_y,
    doc="1 / (1 + exp(-x))",
)


tanh, tanh_float32 = of_x_variants("tanh")


@scalar_function
def tanh_backward_with_dy_y(dy, y, attr0, attr1):
    # (1 - y)(1 + y): 1 - y*y would cancel for |y| near 1.
    return dy * ((as_type(1, y) - y) * (as_type(1, y) + y))


@scalar_function
def tanh_backward_with_dy_x(dy, x, attr0, attr1):
    # 1 - tanh^2 = 1 / cosh^2, without the cancellation for large |x|.
    c = cosh(x, attr0, attr1)
    return divide(dy, c * c)


TANH = UnaryFunctor(
    UnaryOp.kTanh, tanh, FLOAT, ints_to_float=True, float32_formula=tanh_float32, with_dy_x=tanh_backward_with_dy_x,
    with_dy_y=tanh_backward_with_dy_y,
    doc="hyperbolic tangent",
)


def _log_sigmoid_over(m):
    @scalar_function
    def log_sigmoid(x, attr0, attr1):
        # 0 - softplus(-x), not its negation: +0.0 where exp(-x) underflows, as PyTorch's.
        return as_type(0, x) - m.softplus(-x)

    return log_sigmoid


log_sigmoid, log_sigmoid_float32 = float_variants(_log_sigmoid_over)


@scalar_function
def log_sigmoid_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * sigmoid(-x, attr0, attr1)


LOG_SIGMOID = UnaryFunctor(
    UnaryOp.kLogSigmoid, log_sigmoid, FLOAT, float32_formula=log_sigmoid_float32,
    with_dy_x=log_sigmoid_backward_with_dy_x,
    doc="log(sigmoid(x)) = -softplus(-x)",
)


@scalar_function
def identity(x, attr0, attr1):
    return x


@scalar_function
def identity_backward_with_dy_x(dy, x, attr0, attr1):
    return dy


IDENTITY = UnaryFunctor(
    UnaryOp.kIdentity, identity, ALL_TYPES, with_dy_x=identity_backward_with_dy_x,
    doc="x unchanged, as a new array",
)


@scalar_function
def relu(x, attr0, attr1):
    # "not x < 0" rather than "x > 0" lets NaN and -0.0 through, as PyTorch's relu (and np.maximum).
    return x if not x < 0 else as_type(0, x)


@scalar_function
def threshold_backward(dy, v, threshold, attr1):
    """dy where v > threshold, else 0: threshold's slope, from x, and relu's (threshold 0) from x or y alike."""
    return as_type(0, dy) if v <= threshold else dy


@scalar_function
def relu_backward(dy, v, attr0, attr1):
    return threshold_backward(dy, v, as_type(0, v), attr1)


RELU = UnaryFunctor(
    UnaryOp.kRelu, relu, ALL_TYPES, with_dy_x=relu_backward, with_dy_y=relu_backward,
    doc="max(x, 0); NaN stays NaN",
)


@scalar_function
def square_relu(x, attr0, attr1):
    y = relu(x, attr0, attr1)
    return y * y


@scalar_function
def square_relu_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(2, x) * relu(x, attr0, attr1)


SQUARE_RELU = UnaryFunctor(
    UnaryOp.kSquareReLU, square_relu, FLOAT, with_dy_x=square_relu_backward_with_dy_x,
    doc="relu(x) ** 2",
)


@scalar_function
def leaky_relu(x, alpha, attr1):
    return x if x > 0 else x * alpha


@scalar_function
def leaky_relu_backward_with_dy_x(dy, x, alpha, attr1):
    return dy if x > 0 else dy * alpha


_LEAKY_RELU_ATTRS = (("negative_slope", 0.01),)
LEAKY_RELU = UnaryFunctor(
    UnaryOp.kLeakyRelu, leaky_relu, FLOAT, _LEAKY_RELU_ATTRS, with_dy_x=leaky_relu_backward_with_dy_x,
    doc="x for x > 0, else negative_slope * x",
)


def _elu_over(m):
    @scalar_function
    def elu(x, alpha, attr1):
        return x if x > 0 else alpha * m.expm1(x)

    return elu


elu, elu_float32 = float_variants(_elu_over)


@scalar_function
def elu_backward_with_dy_x(dy, x, alpha, attr1):
    return dy if x > 0 else dy * alpha * exp(x, alpha, attr1)


ELU = UnaryFunctor(
    UnaryOp.kElu, elu, FLOAT, (("alpha", 1.0),), float32_formula=elu_float32, with_dy_x=elu_backward_with_dy_x,
    doc="x for x > 0, else alpha * (exp(x) - 1)",
)


def _celu_over(m):
    @scalar_function
    def celu(x, alpha, attr1):
        return x if x > 0 else alpha * m.expm1(divide(x, alpha))

    return celu


celu, celu_float32 = float_variants(_celu_over)


@scalar_function
def celu_backward_with_dy_y(dy, y, alpha, attr1):
    # For x <= 0, y = alpha (exp(x / alpha) - 1), so exp(x / alpha) = (y + alpha) / alpha; y + alpha
    # is exact where it is small, unlike y / alpha + 1.
    return dy if y > 0 else dy * divide(y + alpha, alpha)


CELU = UnaryFunctor(
    UnaryOp.kCelu, celu, FLOAT, (("alpha", 1.0),), float32_formula=celu_float32, with_dy_y=celu_backward_with_dy_y,
    doc="x for x > 0, else alpha * (exp(x / alpha) - 1)",
    attrs_rule=lambda alpha, _: "alpha is 0; expected a nonzero alpha (it divides x)" if alpha == 0 else None,
)


def _selu_over(m):
    elu_ = _elu_over(m)

    @scalar_function
    def selu(x, attr0, attr1):
        return as_type(_SELU_SCALE, x) * elu_(x, as_type(_SELU_ALPHA, x), attr1)

    return selu


selu, selu_float32 = float_variants(_selu_over)


@scalar_function
def selu_backward_with_dy_x(dy, x, attr0, attr1):
    # selu = scale * elu(x, alpha): its slope is scale for x > 0, selu(x) + scale * alpha below,
    # written scale * alpha * exp(x) so that it keeps its relative accuracy far below 0. scale
    # and scale * alpha are read off the forward formula (selu(1) and -selu(-inf)), not repeated.
    one = as_type(1, x)
    scale = selu(one, attr0, attr1)
    if x > 0:
        return dy * scale
    scale_alpha = -selu(as_type(-math.inf, x), attr0, attr1)
    return dy * scale_alpha * exp(x, attr0, attr1)


SELU = UnaryFunctor(
    UnaryOp.kSelu, selu, FLOAT, float32_formula=selu_float32, with_dy_x=selu_backward_with_dy_x,
    doc="scale * elu(x, alpha) with PyTorch's fixed scale and alpha",
)


@scalar_function
def gelu(x, attr0, attr1):
    # 0.5 x (1 + erf(x / sqrt 2)), as erfc so the negative tail keeps its relative accuracy.
    return as_type(0.5, x) * x * math.erfc(-x * as_type(_SQRT1_2, x))


# The erf form, as PyTorch's: 1 + erf cancels for x < -1, where the error stays below 6e-7
# absolute (the bound is absolute there), at under half the cost of the erfc form.
gelu_float32 = of_x(fast_math.gelu)


@scalar_function
def gelu_backward_with_dy_x(dy, x, attr0, attr1):
    # Phi(x) + x phi(x); Phi as erfc so that the negative tail keeps its relative accuracy.
    cdf = as_type(0.5, x) * erfc(-x * as_type(_SQRT1_2, x), attr0, attr1)
    pdf = as_type(_INV_SQRT_2PI, x) * exp(as_type(-0.5, x) * x * x, attr0, attr1)
    return dy * (cdf + x * pdf)


GELU = UnaryFunctor(
    UnaryOp.kGelu, gelu, FLOAT, float32_formula=gelu_float32, with_dy_x=gelu_backward_with_dy_x,
    doc="x * Phi(x), Phi the standard normal CDF (torch's gelu)",
)


def _fast_gelu_over(m):
    @scalar_function
    def fast_gelu(x, attr0, attr1):
        # 0.5 x (1 + tanh(u)) == x sigmoid(2u): the same value without 1 + tanh's cancellation for x < 0.
        u = as_type(_SQRT_2_OVER_PI, x) * (x + as_type(_FAST_GELU_BETA, x) * x * x * x)
        return x * m.sigmoid(as_type(2, x) * u)

    return fast_gelu


fast_gelu, fast_gelu_float32 = float_variants(_fast_gelu_over)


@scalar_function
def fast_gelu_backward_with_dy_x(dy, x, attr0, attr1):
    # fast_gelu = 0.5 x (1 + tanh(u)) = x s(2u) with s the sigmoid, so its slope is
    # s(2u) + 2 x u' s(2u) s(-2u): s(-2u) is 1 - s(2u) without the cancellation.
    x2 = x * x
    two_u = as_type(2 * _SQRT_2_OVER_PI, x) * (x + as_type(_FAST_GELU_BETA, x) * x2 * x)
    two_du = as_type(2 * _SQRT_2_OVER_PI, x) * (as_type(1, x) + as_type(3 * _FAST_GELU_BETA, x) * x2)
    s = sigmoid(two_u, attr0, attr1)
    return dy * (s + x * two_du * s * sigmoid(-two_u, attr0, attr1))


FAST_GELU = UnaryFunctor(
    UnaryOp.kFastGelu, fast_gelu, FLOAT, float32_formula=fast_gelu_float32, with_dy_x=fast_gelu_backward_with_dy_x,
    doc="0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (torch's gelu with approximate='tanh')",
)


def _x_sigmoid(op: UnaryOp, k: float, doc: str) -> UnaryFunctor:
    """x * sigmoid(k x), its float32 variant and its slope: silu at k = 1, quick_gelu at _QUICK_GELU_ALPHA."""

    def over(m):
        @scalar_function
        def x_sigmoid(x, attr0, attr1):
            return x * m.sigmoid(as_type(k, x) * x)

        return x_sigmoid

    @scalar_function
    def backward_with_dy_x(dy, x, attr0, attr1):
        # s(z) (1 + z (1 - s(z))) with z = k x, and s(-z) for 1 - s(z), which would cancel for large z.
        z = as_type(k, x) * x
        return dy * sigmoid(z, attr0, attr1) * (as_type(1, x) + z * sigmoid(-z, attr0, attr1))

    forward, forward_float32 = float_variants(over)
    return UnaryFunctor(op, forward, FLOAT, float32_formula=forward_float32, with_dy_x=backward_with_dy_x, doc=doc)


QUICK_GELU = _x_sigmoid(UnaryOp.kQuickGelu, _QUICK_GELU_ALPHA, f"x * sigmoid({_QUICK_GELU_ALPHA} x)")
SILU = _x_sigmoid(UnaryOp.kSilu, 1.0, "x * sigmoid(x)")


def _soft_plus_over(m):
    @scalar_function
    def soft_plus(x, beta, threshold):
        # PyTorch's linear region above threshold, which also keeps exp from overflowing.
        z = x * as_type(beta, x)
        # 1 / beta is loop-invariant: LLVM hoists it, where a division per element would stay.
        inverse_beta = divide(as_type(1, x), as_type(beta, x))
        return x if z > as_type(threshold, x) else m.softplus(z) * inverse_beta

    return soft_plus


soft_plus, soft_plus_float32 = float_variants(_soft_plus_over)


@scalar_function
def softplus_backward_with_dy_x(dy, x, beta, threshold):
    z = x * beta
    return dy if z > threshold else dy * sigmoid(z, beta, threshold)


_SOFT_PLUS_ATTRS = (("beta", 1.0), ("threshold", 20.0))
SOFT_PLUS = UnaryFunctor(
    UnaryOp.kSoftPlus, soft_plus, FLOAT, _SOFT_PLUS_ATTRS, float32_formula=soft_plus_float32,
    with_dy_x=softplus_backward_with_dy_x,
    doc="log(1 + exp(beta x)) / beta; x where beta x > threshold",
)


# tanh(softplus(x)) is 1 to float64 precision from here on; clamping keeps e^2x finite.
_MISH_MAX = 20.0


def _mish_over(m):
    @scalar_function
    def mish(x, attr0, attr1):
        # PyTorch's x tanh(log1p(exp(x))), with tanh(log(1 + t)) = n / (n + 2), n = t (t + 2):
        # one exp and one division, and no cancellation on either tail.
        t = m.exp(min(x, as_type(_MISH_MAX, x)))
        n = t * (t + as_type(2, x))
        return x * divide(n, n + as_type(2, x))

    return mish


mish, mish_float32 = float_variants(_mish_over)


@scalar_function
def mish_backward_with_dy_x(dy, x, attr0, attr1):
    # mish = x tanh(sp), sp = softplus(x), sp' = sigmoid(x); tanh' = 1 / cosh^2, which keeps its
    # relative accuracy where 1 - tanh^2 would cancel.
    sp = soft_plus(x, as_type(1, x), as_type(20, x))
    c = cosh(sp, attr0, attr1)
    return dy * (tanh(sp, attr0, attr1) + divide(x * sigmoid(x, attr0, attr1), c * c))


MISH = UnaryFunctor(
    UnaryOp.kMish, mish, FLOAT, float32_formula=mish_float32, with_dy_x=mish_backward_with_dy_x,
    doc="x * tanh(softplus(x))",
)


@scalar_function
def soft_sign(x, attr0, attr1):
    return divide(x, as_type(1, x) + abs(x))


@scalar_function
def softsign_backward_with_dy_x(dy, x, attr0, attr1):
    v = as_type(1, x) + abs(x)
    return divide(dy, v * v)


SOFT_SIGN = UnaryFunctor(
    UnaryOp.kSoftSign, soft_sign, FLOAT, ints_to_float=True, with_dy_x=softsign_backward_with_dy_x,
    # torch adds 1 + |x| in the integer dtype before dividing, wrapping at its extremes.
    doc="x / (1 + |x|); integers in float32 (torch's softsign of int8 -128 wraps to 1.008; ep's is -0.992)",
)


@scalar_function
def soft_shrink(x, alpha, attr1):
    if x > alpha:
        return x - alpha
    # x - x: 0 inside [-alpha, alpha], and NaN for NaN.
    return x + alpha if x < -alpha else as_type(x - x, x)


@scalar_function
def zero_where_y_is_zero(dy, y, attr0, attr1):
    """dy where y != 0, else 0: the slope of soft_shrink and hard_shrink from y (0 exactly where they clamp)."""
    return as_type(0, dy) if y == 0 else dy


SOFT_SHRINK = UnaryFunctor(
    UnaryOp.kSoftShrink, soft_shrink, FLOAT, (("lambd", 0.5),), with_dy_y=zero_where_y_is_zero, backward_attrs=0,
    doc="x - lambd above lambd, x + lambd below -lambd, else 0",
)


@scalar_function
def hard_tanh(x, min_val, max_val):
    # clamp's, min(max(x, min_val), max_val): NaN, in x or a bound, gives NaN.
    if x != x:
        return x
    y = x if x >= min_val else min_val
    return y if y <= max_val or y != y else max_val


@scalar_function
def hardtanh_backward_with_dy_y(dy, y, min_val, max_val):
    return as_type(0, dy) if y == min_val or y == max_val else dy


_HARD_TANH_ATTRS = (("min_val", -1.0), ("max_val", 1.0))
HARD_TANH = UnaryFunctor(
    UnaryOp.kHardTanh, hard_tanh, NUMBERS, _HARD_TANH_ATTRS, with_dy_y=hardtanh_backward_with_dy_y,
    doc="x clamped to [min_val, max_val]; for integers the bounds truncate toward zero, as torch's",
    attrs_rule=lambda low, high: f"min_val {low} is greater than max_val {high}; expected min_val <= max_val" if low > high else None,
)


@scalar_function
def hard_sigmoid(x, attr0, attr1):
    six = as_type(6, x)
    return divide(hard_tanh(x + as_type(3, x), as_type(0, x), six), six)


@scalar_function
def hardsigmoid_backward_with_dy_x(dy, x, attr0, attr1):
    if x <= as_type(-3, x) or x >= as_type(3, x):
        return as_type(0, dy)
    return divide(dy, as_type(6, x))


HARD_SIGMOID = UnaryFunctor(
    UnaryOp.kHardSigmoid, hard_sigmoid, FLOAT, with_dy_x=hardsigmoid_backward_with_dy_x,
    doc="clamp(x / 6 + 1/2, 0, 1)",
)


@scalar_function
def hard_swish(x, attr0, attr1):
    return x * hard_sigmoid(x, attr0, attr1)


@scalar_function
def hardswish_backward_with_dy_x(dy, x, attr0, attr1):
    if x <= as_type(-3, x):
        return as_type(0, dy)
    if x >= as_type(3, x):
        return dy
    return dy * (divide(x, as_type(3, x)) + as_type(0.5, x))


HARD_SWISH = UnaryFunctor(
    UnaryOp.kHardSwish, hard_swish, FLOAT, with_dy_x=hardswish_backward_with_dy_x,
    doc="x * hardsigmoid(x)",
)


@scalar_function
def hard_shrink(x, lambd, attr1):
    return as_type(0, x) if -lambd <= x <= lambd else x


HARD_SHRINK = UnaryFunctor(
    UnaryOp.kHardShrink, hard_shrink, FLOAT, (("lambd", 0.5),), with_dy_y=zero_where_y_is_zero, backward_attrs=0,
    doc="0 for -lambd <= x <= lambd, else x",
)


@scalar_function
def threshold(x, threshold_, value):
    return value if x <= threshold_ else x


THRESHOLD = UnaryFunctor(
    UnaryOp.kThreshold, threshold, NUMBERS, (("threshold", None), ("value", None)), with_dy_x=threshold_backward,
    backward_attrs=1,
    doc="value for x <= threshold, else x; for integers both truncate toward zero, as torch's",
)
