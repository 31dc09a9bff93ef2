"""Exponents and logarithms: exp, exp2, expm1, log, log2, log10, log1p, with their derivatives."""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.ops.record import FLOAT, UnaryFunctor, derivative, of_x
from ep.common.math.special import as_type, divide
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp

exp = of_x(math.exp)
exp_float32 = of_x(fast_math.exp)


@scalar_function
def exp_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * exp(x, attr0, attr1)


EXP = UnaryFunctor(
    UnaryOp.kExp, exp, FLOAT, float32_formula=exp_float32,
    backward=(derivative(BinaryOp.kExpBackwardWithDyX, exp_backward_with_dy_x),),
)


@scalar_function
def exp2(x, attr0, attr1):
    return as_type(2, x) ** x


@scalar_function
def exp2_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * exp2(x, attr0, attr1) * as_type(math.log(2), x)


EXP2 = UnaryFunctor(
    UnaryOp.kExp2, exp2, FLOAT, backward=(derivative(BinaryOp.kExp2BackwardWithDyX, exp2_backward_with_dy_x),)
)

expm1 = of_x(math.expm1)
expm1_float32 = of_x(fast_math.expm1)


@scalar_function
def expm1_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * exp(x, attr0, attr1)


EXPM1 = UnaryFunctor(
    UnaryOp.kExpm1, expm1, FLOAT, float32_formula=expm1_float32,
    backward=(derivative(BinaryOp.kExpm1BackwardWithDyX, expm1_backward_with_dy_x),),
)

log = of_x(math.log)
log_float32 = of_x(fast_math.log)


@scalar_function
def log_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x)


LOG = UnaryFunctor(
    UnaryOp.kLog, log, FLOAT, float32_formula=log_float32,
    backward=(derivative(BinaryOp.kLogBackwardWithDyX, log_backward_with_dy_x),),
)


@scalar_function
def log2(x, attr0, attr1):
    return math.log2(x)


@scalar_function
def log2_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x * as_type(math.log(2), x))


LOG2 = UnaryFunctor(
    UnaryOp.kLog2, log2, FLOAT, backward=(derivative(BinaryOp.kLog2BackwardWithDyX, log2_backward_with_dy_x),)
)


@scalar_function
def log10(x, attr0, attr1):
    return math.log10(x)


@scalar_function
def log10_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x * as_type(math.log(10), x))


LOG10 = UnaryFunctor(
    UnaryOp.kLog10, log10, FLOAT, backward=(derivative(BinaryOp.kLog10BackwardWithDyX, log10_backward_with_dy_x),)
)


@scalar_function
def log1p(x, attr0, attr1):
    return math.log1p(x)


@scalar_function
def log1p_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x + as_type(1, x))


LOG1P = UnaryFunctor(
    UnaryOp.kLog1p, log1p, FLOAT, backward=(derivative(BinaryOp.kLog1pBackwardWithDyX, log1p_backward_with_dy_x),)
)
