"""The derivative formulas of the ElementwiseUnary ops: OneFlow's ...BackwardWithDyX/DyY binary ops.

Each is f(dy, v, attr0, attr1) -> dy * f'(x), where v is the forward input x (...WithDyX) or its
output y (...WithDyY), in the float compute dtype. A derivative that is a function of the forward
ops calls their formulas from UNARY_FUNCTORS (sigmoid' = s (1 - s) with s from kSigmoid's formula),
so no forward formula is written twice. Divisions are IEEE (special.divide) on both devices.
"""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math.special import as_type, divide
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.include.primitive.unary_op import UnaryOp

_sigmoid = UNARY_FUNCTORS[UnaryOp.kSigmoid].formula
_tanh = UNARY_FUNCTORS[UnaryOp.kTanh].formula
_exp = UNARY_FUNCTORS[UnaryOp.kExp].formula
_exp2 = UNARY_FUNCTORS[UnaryOp.kExp2].formula
_erfc = UNARY_FUNCTORS[UnaryOp.kErfc].formula
_soft_plus = UNARY_FUNCTORS[UnaryOp.kSoftPlus].formula
_relu = UNARY_FUNCTORS[UnaryOp.kRelu].formula
_sign = UNARY_FUNCTORS[UnaryOp.kSign].formula
_sqrt = UNARY_FUNCTORS[UnaryOp.kSqrt].formula
_sin = UNARY_FUNCTORS[UnaryOp.kSin].formula
_cos = UNARY_FUNCTORS[UnaryOp.kCos].formula
_sinh = UNARY_FUNCTORS[UnaryOp.kSinh].formula
_cosh = UNARY_FUNCTORS[UnaryOp.kCosh].formula
_digamma = UNARY_FUNCTORS[UnaryOp.kDigamma].formula
_trigamma = UNARY_FUNCTORS[UnaryOp.kTrigamma].formula
_selu = UNARY_FUNCTORS[UnaryOp.kSelu].formula

_SQRT1_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
# fast_gelu's tanh argument is sqrt(2/pi) (x + 0.044715 x^3), as kFastGelu's formula.
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_FAST_GELU_BETA = 0.044715
_QUICK_GELU_ALPHA = 1.702


# activations


@scalar_function
def identity_backward_with_dy_x(dy, x, attr0, attr1):
    return dy


@scalar_function
def elu_backward_with_dy_x(dy, x, alpha, attr1):
    return dy if x > 0 else dy * alpha * _exp(x, alpha, attr1)


@scalar_function
def celu_backward_with_dy_y(dy, y, alpha, attr1):
    # For x <= 0, y = alpha (exp(x / alpha) - 1), so exp(x / alpha) = (y + alpha) / alpha; y + alpha
    # is exact where it is small, unlike y / alpha + 1.
    return dy if y > 0 else dy * divide(y + alpha, alpha)


@scalar_function
def gelu_backward_with_dy_x(dy, x, attr0, attr1):
    # Phi(x) + x phi(x); Phi as erfc so that the negative tail keeps its relative accuracy.
    cdf = as_type(0.5, x) * _erfc(-x * as_type(_SQRT1_2, x), attr0, attr1)
    pdf = as_type(_INV_SQRT_2PI, x) * _exp(as_type(-0.5, x) * x * x, attr0, attr1)
    return dy * (cdf + x * pdf)


@scalar_function
def fast_gelu_backward_with_dy_x(dy, x, attr0, attr1):
    # fast_gelu = 0.5 x (1 + tanh(u)) = x s(2u) with s the sigmoid, so its slope is
    # s(2u) + 2 x u' s(2u) s(-2u): s(-2u) is 1 - s(2u) without the cancellation.
    x2 = x * x
    two_u = as_type(2 * _SQRT_2_OVER_PI, x) * (x + as_type(_FAST_GELU_BETA, x) * x2 * x)
    two_du = as_type(2 * _SQRT_2_OVER_PI, x) * (as_type(1, x) + as_type(3 * _FAST_GELU_BETA, x) * x2)
    s = _sigmoid(two_u, attr0, attr1)
    return dy * (s + x * two_du * s * _sigmoid(-two_u, attr0, attr1))


@scalar_function
def quick_gelu_backward_with_dy_x(dy, x, attr0, attr1):
    z = as_type(_QUICK_GELU_ALPHA, x) * x
    return dy * _sigmoid(z, attr0, attr1) * (as_type(1, x) + z * _sigmoid(-z, attr0, attr1))


@scalar_function
def hardswish_backward_with_dy_x(dy, x, attr0, attr1):
    if x <= as_type(-3, x):
        return as_type(0, dy)
    if x >= as_type(3, x):
        return dy
    return dy * (divide(x, as_type(3, x)) + as_type(0.5, x))


@scalar_function
def hardsigmoid_backward_with_dy_x(dy, x, attr0, attr1):
    if x <= as_type(-3, x) or x >= as_type(3, x):
        return as_type(0, dy)
    return divide(dy, as_type(6, x))


@scalar_function
def hardshrink_backward_with_dy_y(dy, y, attr0, attr1):
    return as_type(0, dy) if y == 0 else dy


@scalar_function
def hardtanh_backward_with_dy_y(dy, y, min_val, max_val):
    return as_type(0, dy) if y == min_val or y == max_val else dy


@scalar_function
def leaky_relu_backward_with_dy_x(dy, x, alpha, attr1):
    return dy if x > 0 else dy * alpha


@scalar_function
def mish_backward_with_dy_x(dy, x, attr0, attr1):
    # mish = x tanh(sp), sp = softplus(x), sp' = sigmoid(x); tanh' = 1 / cosh^2, which keeps its
    # relative accuracy where 1 - tanh^2 would cancel.
    sp = _soft_plus(x, as_type(1, x), as_type(20, x))
    c = _cosh(sp, attr0, attr1)
    return dy * (_tanh(sp, attr0, attr1) + divide(x * _sigmoid(x, attr0, attr1), c * c))


@scalar_function
def relu_backward_with_dy_y(dy, y, attr0, attr1):
    return as_type(0, dy) if y <= 0 else dy


@scalar_function
def relu_backward_with_dy_x(dy, x, attr0, attr1):
    return as_type(0, dy) if x <= 0 else dy


@scalar_function
def selu_backward_with_dy_x(dy, x, attr0, attr1):
    # selu = scale * elu(x, alpha): its slope is scale for x > 0, selu(x) + scale * alpha below,
    # written scale * alpha * exp(x) so that it keeps its relative accuracy far below 0. scale
    # and scale * alpha are read off the forward formula (selu(1) and -selu(-inf)), not repeated.
    one = as_type(1, x)
    scale = _selu(one, attr0, attr1)
    if x > 0:
        return dy * scale
    scale_alpha = -_selu(as_type(-math.inf, x), attr0, attr1)
    return dy * scale_alpha * _exp(x, attr0, attr1)


@scalar_function
def silu_backward_with_dy_x(dy, x, attr0, attr1):
    # s(x) (1 + x (1 - s(x))), with s(-x) for 1 - s(x), which would cancel for large x.
    return dy * _sigmoid(x, attr0, attr1) * (as_type(1, x) + x * _sigmoid(-x, attr0, attr1))


@scalar_function
def softsign_backward_with_dy_x(dy, x, attr0, attr1):
    v = as_type(1, x) + abs(x)
    return divide(dy, v * v)


@scalar_function
def softplus_backward_with_dy_x(dy, x, beta, threshold):
    z = x * beta
    return dy if z > threshold else dy * _sigmoid(z, beta, threshold)


@scalar_function
def softshrink_backward_with_dy_y(dy, y, attr0, attr1):
    return as_type(0, dy) if y == 0 else dy


@scalar_function
def tanh_backward_with_dy_y(dy, y, attr0, attr1):
    # (1 - y)(1 + y): 1 - y*y would cancel for |y| near 1.
    return dy * ((as_type(1, y) - y) * (as_type(1, y) + y))


@scalar_function
def tanh_backward_with_dy_x(dy, x, attr0, attr1):
    # 1 - tanh^2 = 1 / cosh^2, without the cancellation for large |x|.
    c = _cosh(x, attr0, attr1)
    return divide(dy, c * c)


@scalar_function
def threshold_backward_with_dy_x(dy, x, threshold, attr1):
    return as_type(0, dy) if x <= threshold else dy


@scalar_function
def sigmoid_backward_with_dy_y(dy, y, attr0, attr1):
    return dy * y * (as_type(1, y) - y)


@scalar_function
def sigmoid_backward_with_dy_x(dy, x, attr0, attr1):
    # s(x) (1 - s(x)) = s(x) s(-x): both factors keep their relative accuracy.
    return dy * _sigmoid(x, attr0, attr1) * _sigmoid(-x, attr0, attr1)


@scalar_function
def square_relu_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(2, x) * _relu(x, attr0, attr1)


# math


@scalar_function
def abs_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _sign(x, attr0, attr1)


@scalar_function
def acos_backward_with_dy_x(dy, x, attr0, attr1):
    return -asin_backward_with_dy_x(dy, x, attr0, attr1)


@scalar_function
def acosh_backward_with_dy_x(dy, x, attr0, attr1):
    one = as_type(1, x)
    return divide(dy, _sqrt((x - one) * (x + one), attr0, attr1))


@scalar_function
def asin_backward_with_dy_x(dy, x, attr0, attr1):
    # (1 - x)(1 + x) keeps its relative accuracy for |x| near 1, where 1 - x*x cancels.
    one = as_type(1, x)
    return divide(dy, _sqrt((one - x) * (one + x), attr0, attr1))


@scalar_function
def asinh_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, _sqrt(as_type(1, x) + x * x, attr0, attr1))


@scalar_function
def atan_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, as_type(1, x) + x * x)


@scalar_function
def atanh_backward_with_dy_x(dy, x, attr0, attr1):
    one = as_type(1, x)
    return divide(dy, (one - x) * (one + x))


@scalar_function
def cos_backward_with_dy_x(dy, x, attr0, attr1):
    return -dy * _sin(x, attr0, attr1)


@scalar_function
def cosh_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _sinh(x, attr0, attr1)


@scalar_function
def digamma_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _trigamma(x, attr0, attr1)


@scalar_function
def erf_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(_TWO_OVER_SQRT_PI, x) * _exp(-x * x, attr0, attr1)


@scalar_function
def erfc_backward_with_dy_x(dy, x, attr0, attr1):
    return -erf_backward_with_dy_x(dy, x, attr0, attr1)


@scalar_function
def exp_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _exp(x, attr0, attr1)


@scalar_function
def exp2_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _exp2(x, attr0, attr1) * as_type(math.log(2), x)


@scalar_function
def expm1_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _exp(x, attr0, attr1)


@scalar_function
def lgamma_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _digamma(x, attr0, attr1)


@scalar_function
def log_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x)


@scalar_function
def log2_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x * as_type(math.log(2), x))


@scalar_function
def log10_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x * as_type(math.log(10), x))


@scalar_function
def log1p_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x + as_type(1, x))


@scalar_function
def log_sigmoid_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _sigmoid(-x, attr0, attr1)


@scalar_function
def reciprocal_backward_with_dy_x(dy, x, attr0, attr1):
    return -divide(dy, x * x)


@scalar_function
def reciprocal_no_nan_backward_with_dy_x(dy, x, attr0, attr1):
    return as_type(0, dy) if x == 0 else reciprocal_backward_with_dy_x(dy, x, attr0, attr1)


@scalar_function
def rsqrt_backward_with_dy_x(dy, x, attr0, attr1):
    return -divide(dy, as_type(2, x) * x * _sqrt(x, attr0, attr1))


@scalar_function
def sin_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _cos(x, attr0, attr1)


@scalar_function
def sinh_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * _cosh(x, attr0, attr1)


@scalar_function
def sqrt_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, as_type(2, x) * _sqrt(x, attr0, attr1))


@scalar_function
def square_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(2, x) * x


@scalar_function
def tan_backward_with_dy_x(dy, x, attr0, attr1):
    c = _cos(x, attr0, attr1)
    return divide(dy, c * c)
