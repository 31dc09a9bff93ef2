"""Hyperbolic functions: sinh, cosh, tanh, asinh, acosh, atanh, with their derivatives."""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.ops.arithmetic import sqrt
from ep.common.math.ops.record import FLOAT, UnaryFunctor, derivative, of_x
from ep.common.math.special import as_type, divide
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def sinh(x, attr0, attr1):
    return math.sinh(x)


@scalar_function
def sinh_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * cosh(x, attr0, attr1)


SINH = UnaryFunctor(
    UnaryOp.kSinh, sinh, FLOAT, backward=(derivative(BinaryOp.kSinhBackwardWithDyX, sinh_backward_with_dy_x),)
)


@scalar_function
def cosh(x, attr0, attr1):
    return math.cosh(x)


@scalar_function
def cosh_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * sinh(x, attr0, attr1)


COSH = UnaryFunctor(
    UnaryOp.kCosh, cosh, FLOAT, backward=(derivative(BinaryOp.kCoshBackwardWithDyX, cosh_backward_with_dy_x),)
)

tanh = of_x(math.tanh)
tanh_float32 = of_x(fast_math.tanh)


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
    UnaryOp.kTanh, tanh, FLOAT, float32_formula=tanh_float32,
    backward=(
        derivative(BinaryOp.kTanhBackwardWithDyY, tanh_backward_with_dy_y),
        derivative(BinaryOp.kTanhBackwardWithDyX, tanh_backward_with_dy_x),
    ),
)


@scalar_function
def asinh(x, attr0, attr1):
    return math.asinh(x)


@scalar_function
def asinh_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, sqrt(as_type(1, x) + x * x, attr0, attr1))


ASINH = UnaryFunctor(
    UnaryOp.kAsinh, asinh, FLOAT, backward=(derivative(BinaryOp.kAsinhBackwardWithDyX, asinh_backward_with_dy_x),)
)


@scalar_function
def acosh(x, attr0, attr1):
    return math.acosh(x)


@scalar_function
def acosh_backward_with_dy_x(dy, x, attr0, attr1):
    one = as_type(1, x)
    return divide(dy, sqrt((x - one) * (x + one), attr0, attr1))


ACOSH = UnaryFunctor(
    UnaryOp.kAcosh, acosh, FLOAT, backward=(derivative(BinaryOp.kAcoshBackwardWithDyX, acosh_backward_with_dy_x),)
)


@scalar_function
def atanh(x, attr0, attr1):
    return math.atanh(x)


@scalar_function
def atanh_backward_with_dy_x(dy, x, attr0, attr1):
    one = as_type(1, x)
    return divide(dy, (one - x) * (one + x))


ATANH = UnaryFunctor(
    UnaryOp.kAtanh, atanh, FLOAT, backward=(derivative(BinaryOp.kAtanhBackwardWithDyX, atanh_backward_with_dy_x),)
)
