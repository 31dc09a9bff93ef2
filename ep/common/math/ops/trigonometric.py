"""Trigonometric functions: sin, cos, tan, asin, acos, atan, with their derivatives."""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math.ops.arithmetic import sqrt
from ep.common.math.ops.record import FLOAT, UnaryFunctor, derivative
from ep.common.math.special import as_type, divide
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def sin(x, attr0, attr1):
    return math.sin(x)


@scalar_function
def sin_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * cos(x, attr0, attr1)


SIN = UnaryFunctor(
    UnaryOp.kSin, sin, FLOAT, backward=(derivative(BinaryOp.kSinBackwardWithDyX, sin_backward_with_dy_x),)
)


@scalar_function
def cos(x, attr0, attr1):
    return math.cos(x)


@scalar_function
def cos_backward_with_dy_x(dy, x, attr0, attr1):
    return -dy * sin(x, attr0, attr1)


COS = UnaryFunctor(
    UnaryOp.kCos, cos, FLOAT, backward=(derivative(BinaryOp.kCosBackwardWithDyX, cos_backward_with_dy_x),)
)


@scalar_function
def tan(x, attr0, attr1):
    return math.tan(x)


@scalar_function
def tan_backward_with_dy_x(dy, x, attr0, attr1):
    c = cos(x, attr0, attr1)
    return divide(dy, c * c)


TAN = UnaryFunctor(
    UnaryOp.kTan, tan, FLOAT, backward=(derivative(BinaryOp.kTanBackwardWithDyX, tan_backward_with_dy_x),)
)


@scalar_function
def asin(x, attr0, attr1):
    return math.asin(x)


@scalar_function
def asin_backward_with_dy_x(dy, x, attr0, attr1):
    # (1 - x)(1 + x) keeps its relative accuracy for |x| near 1, where 1 - x*x cancels.
    one = as_type(1, x)
    return divide(dy, sqrt((one - x) * (one + x), attr0, attr1))


ASIN = UnaryFunctor(
    UnaryOp.kAsin, asin, FLOAT, backward=(derivative(BinaryOp.kAsinBackwardWithDyX, asin_backward_with_dy_x),)
)


@scalar_function
def acos(x, attr0, attr1):
    return math.acos(x)


@scalar_function
def acos_backward_with_dy_x(dy, x, attr0, attr1):
    return -asin_backward_with_dy_x(dy, x, attr0, attr1)


ACOS = UnaryFunctor(
    UnaryOp.kAcos, acos, FLOAT, backward=(derivative(BinaryOp.kAcosBackwardWithDyX, acos_backward_with_dy_x),)
)


@scalar_function
def atan(x, attr0, attr1):
    return math.atan(x)


@scalar_function
def atan_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, as_type(1, x) + x * x)


ATAN = UnaryFunctor(
    UnaryOp.kAtan, atan, FLOAT, backward=(derivative(BinaryOp.kAtanBackwardWithDyX, atan_backward_with_dy_x),)
)
