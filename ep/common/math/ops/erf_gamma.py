"""The error and gamma functions: erf, erfc, lgamma, digamma, trigamma, with their derivatives."""
from __future__ import annotations

import math

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.ops.explog import exp
from ep.common.math.ops.record import FLOAT, UnaryFunctor, derivative, of_x
from ep.common.math.special import as_type
from ep.common.math.special import digamma as _digamma
from ep.common.math.special import trigamma as _trigamma
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

erf = of_x(math.erf)
erf_float32 = of_x(fast_math.erf)


@scalar_function
def erf_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(_TWO_OVER_SQRT_PI, x) * exp(-x * x, attr0, attr1)


ERF = UnaryFunctor(
    UnaryOp.kErf, erf, FLOAT, float32_formula=erf_float32,
    backward=(derivative(BinaryOp.kErfBackwardWithDyX, erf_backward_with_dy_x),),
)

erfc = of_x(math.erfc)
erfc_float32 = of_x(fast_math.erfc)


@scalar_function
def erfc_backward_with_dy_x(dy, x, attr0, attr1):
    return -erf_backward_with_dy_x(dy, x, attr0, attr1)


ERFC = UnaryFunctor(
    UnaryOp.kErfc, erfc, FLOAT, float32_formula=erfc_float32,
    backward=(derivative(BinaryOp.kErfcBackwardWithDyX, erfc_backward_with_dy_x),),
)


@scalar_function
def lgamma(x, attr0, attr1):
    # In float64: float32 lgamma (CUDA's lgammaf above all) loses accuracy for negative x.
    return as_type(math.lgamma(np.float64(x)), x)


@scalar_function
def lgamma_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * digamma(x, attr0, attr1)


LGAMMA = UnaryFunctor(
    UnaryOp.kLgamma, lgamma, FLOAT, backward=(derivative(BinaryOp.kLgammaBackwardWithDyX, lgamma_backward_with_dy_x),)
)


@scalar_function
def digamma(x, attr0, attr1):
    return as_type(_digamma(x), x)


@scalar_function
def digamma_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * trigamma(x, attr0, attr1)


DIGAMMA = UnaryFunctor(
    UnaryOp.kDigamma, digamma, FLOAT,
    backward=(derivative(BinaryOp.kDigammaBackwardWithDyX, digamma_backward_with_dy_x),),
)


@scalar_function
def trigamma(x, attr0, attr1):
    return as_type(_trigamma(x), x)


TRIGAMMA = UnaryFunctor(UnaryOp.kTrigamma, trigamma, FLOAT)
