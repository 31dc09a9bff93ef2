"""Transcendental functions, with their derivatives: exponents and logarithms, the error and gamma
functions, the hyperbolic (but tanh: an activation, as UnaryOp lists it) and the trigonometric functions.

Ops built on exp, expm1, erf, erfc or log have a float32 variant over fast_math's functions.
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math import fast_math
from ep.common.math.ops.arithmetic import sqrt
from ep.common.math.ops.record import FLOAT, UnaryFunctor, dy_times, float_variants, of_x, of_x_in_type
from ep.common.math.special import as_type, divide
from ep.common.math.special import digamma as _digamma
from ep.common.math.special import erfinv as _erfinv
from ep.common.math.special import trigamma as _trigamma
from ep.include.primitive.unary_op import UnaryOp

# ln 2 and ln 10 as constants: as_type folds them to x's precision when compiled, where math.log(2)
# in a formula is a float64 logarithm at run time (NVVM does not fold libdevice calls).
LN2 = math.log(2)
LN10 = math.log(10)

# exponents and logarithms

exp = of_x(math.exp)
exp_float32 = of_x(fast_math.exp)

EXP = UnaryFunctor(UnaryOp.kExp, exp, FLOAT, ints_to_float=True, float32_formula=exp_float32, with_dy_x=dy_times(exp), doc="e ** x")


@scalar_function
def exp2(x, attr0, attr1):
    return as_type(2, x) ** x


@scalar_function
def exp2_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * exp2(x, attr0, attr1) * as_type(LN2, x)


EXP2 = UnaryFunctor(UnaryOp.kExp2, exp2, FLOAT, ints_to_float=True, with_dy_x=exp2_backward_with_dy_x, doc="2 ** x")

expm1 = of_x(math.expm1)
expm1_float32 = of_x(fast_math.expm1)

EXPM1 = UnaryFunctor(
    UnaryOp.kExpm1, expm1, FLOAT, ints_to_float=True, float32_formula=expm1_float32, with_dy_x=dy_times(exp),
    doc="exp(x) - 1, accurate near 0",
)

log = of_x(math.log)
log_float32 = of_x(fast_math.log)


@scalar_function
def log_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x)


LOG = UnaryFunctor(
    UnaryOp.kLog, log, FLOAT, ints_to_float=True, float32_formula=log_float32, with_dy_x=log_backward_with_dy_x,
    doc="natural logarithm",
)


log2 = of_x(math.log2)


@scalar_function
def log2_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x * as_type(LN2, x))


LOG2 = UnaryFunctor(UnaryOp.kLog2, log2, FLOAT, ints_to_float=True, with_dy_x=log2_backward_with_dy_x, doc="base-2 logarithm")


log10 = of_x(math.log10)


@scalar_function
def log10_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x * as_type(LN10, x))


LOG10 = UnaryFunctor(UnaryOp.kLog10, log10, FLOAT, ints_to_float=True, with_dy_x=log10_backward_with_dy_x, doc="base-10 logarithm")


log1p = of_x(math.log1p)


@scalar_function
def log1p_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, x + as_type(1, x))


LOG1P = UnaryFunctor(
    UnaryOp.kLog1p, log1p, FLOAT, ints_to_float=True, with_dy_x=log1p_backward_with_dy_x,
    doc="log(1 + x), accurate near 0",
)


def _logit_over(m):
    @scalar_function
    def logit(x, eps, attr1):
        # torch.logit's eps clamps x to [eps, 1 - eps]; eps < 0 (its None) does not.
        if eps >= 0:
            low, high = as_type(eps, x), as_type(1, x) - as_type(eps, x)
            x = low if x < low else high if x > high else x
        return m.log(divide(x, as_type(1, x) - x))

    return logit


logit, logit_float32 = float_variants(_logit_over)
LOGIT = UnaryFunctor(
    UnaryOp.kLogit, logit, FLOAT, (("eps", -1.0),), ints_to_float=True, float32_formula=logit_float32,
    doc="log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps >= 0 (eps=-1.0 is torch.logit's eps=None)",
)


# the error and gamma functions

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)

erf = of_x(math.erf)
erf_float32 = of_x(fast_math.erf)


@scalar_function
def erf_backward_with_dy_x(dy, x, attr0, attr1):
    return dy * as_type(_TWO_OVER_SQRT_PI, x) * exp(-x * x, attr0, attr1)


ERF = UnaryFunctor(
    UnaryOp.kErf, erf, FLOAT, ints_to_float=True, float32_formula=erf_float32, with_dy_x=erf_backward_with_dy_x,
    doc="error function",
)

erfc = of_x(math.erfc)
erfc_float32 = of_x(fast_math.erfc)


@scalar_function
def erfc_backward_with_dy_x(dy, x, attr0, attr1):
    return -erf_backward_with_dy_x(dy, x, attr0, attr1)


ERFC = UnaryFunctor(
    UnaryOp.kErfc, erfc, FLOAT, ints_to_float=True, float32_formula=erfc_float32, with_dy_x=erfc_backward_with_dy_x,
    doc="1 - erf(x), accurate for large x",
)


ERFINV = UnaryFunctor(
    UnaryOp.kErfInv, of_x_in_type(_erfinv), FLOAT, ints_to_float=True, float32_formula=of_x(fast_math.erfinv),
    doc="the inverse of erf on (-1, 1): +-inf at +-1, NaN beyond (float64: refined by Newton steps)",
)


trigamma = of_x_in_type(_trigamma)


TRIGAMMA = UnaryFunctor(UnaryOp.kTrigamma, trigamma, FLOAT, doc="the derivative of digamma")


digamma = of_x_in_type(_digamma)


DIGAMMA = UnaryFunctor(
    UnaryOp.kDigamma, digamma, FLOAT, ints_to_float=True, with_dy_x=dy_times(trigamma),
    doc="the derivative of lgamma",
)


@scalar_function
def lgamma(x, attr0, attr1):
    # In float64: float32 lgamma (CUDA's lgammaf above all) loses accuracy for negative x.
    return as_type(math.lgamma(np.float64(x)), x)


LGAMMA = UnaryFunctor(
    UnaryOp.kLgamma, lgamma, FLOAT, ints_to_float=True, with_dy_x=dy_times(digamma),
    doc="log |Gamma(x)|",
)


# hyperbolic functions


sinh = of_x(math.sinh)


cosh = of_x(math.cosh)


SINH = UnaryFunctor(UnaryOp.kSinh, sinh, FLOAT, ints_to_float=True, with_dy_x=dy_times(cosh), doc="hyperbolic sine")
COSH = UnaryFunctor(UnaryOp.kCosh, cosh, FLOAT, ints_to_float=True, with_dy_x=dy_times(sinh), doc="hyperbolic cosine")

asinh = of_x(math.asinh)


@scalar_function
def asinh_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, sqrt(as_type(1, x) + x * x, attr0, attr1))


ASINH = UnaryFunctor(
    UnaryOp.kAsinh, asinh, FLOAT, ints_to_float=True, with_dy_x=asinh_backward_with_dy_x,
    doc="inverse hyperbolic sine",
)


acosh = of_x(math.acosh)


@scalar_function
def acosh_backward_with_dy_x(dy, x, attr0, attr1):
    one = as_type(1, x)
    return divide(dy, sqrt((x - one) * (x + one), attr0, attr1))


ACOSH = UnaryFunctor(
    UnaryOp.kAcosh, acosh, FLOAT, ints_to_float=True, with_dy_x=acosh_backward_with_dy_x,
    doc="inverse hyperbolic cosine",
)


atanh = of_x(math.atanh)


@scalar_function
def atanh_backward_with_dy_x(dy, x, attr0, attr1):
    one = as_type(1, x)
    return divide(dy, (one - x) * (one + x))


ATANH = UnaryFunctor(
    UnaryOp.kAtanh, atanh, FLOAT, ints_to_float=True, with_dy_x=atanh_backward_with_dy_x,
    doc="inverse hyperbolic tangent",
)


# trigonometric functions


cos = of_x(math.cos)


@scalar_function
def cos_backward_with_dy_x(dy, x, attr0, attr1):
    return -dy * sin(x, attr0, attr1)


COS = UnaryFunctor(UnaryOp.kCos, cos, FLOAT, ints_to_float=True, with_dy_x=cos_backward_with_dy_x, doc="cosine")


sin = of_x(math.sin)


SIN = UnaryFunctor(UnaryOp.kSin, sin, FLOAT, ints_to_float=True, with_dy_x=dy_times(cos), doc="sine")


tan = of_x(math.tan)


@scalar_function
def tan_backward_with_dy_x(dy, x, attr0, attr1):
    c = cos(x, attr0, attr1)
    return divide(dy, c * c)


TAN = UnaryFunctor(UnaryOp.kTan, tan, FLOAT, ints_to_float=True, with_dy_x=tan_backward_with_dy_x, doc="tangent")


@scalar_function
def sinc(x, attr0, attr1):
    if x == 0:
        return as_type(1, x)
    product = as_type(math.pi, x) * x
    return divide(math.sin(product), product)


SINC = UnaryFunctor(UnaryOp.kSinc, sinc, FLOAT, ints_to_float=True, doc="sin(pi x) / (pi x), 1 at 0 (torch.sinc, np.sinc)")


asin = of_x(math.asin)


@scalar_function
def asin_backward_with_dy_x(dy, x, attr0, attr1):
    # (1 - x)(1 + x) keeps its relative accuracy for |x| near 1, where 1 - x*x cancels.
    one = as_type(1, x)
    return divide(dy, sqrt((one - x) * (one + x), attr0, attr1))


ASIN = UnaryFunctor(
    UnaryOp.kAsin, asin, FLOAT, ints_to_float=True, with_dy_x=asin_backward_with_dy_x,
    doc="inverse sine",
)


acos = of_x(math.acos)


@scalar_function
def acos_backward_with_dy_x(dy, x, attr0, attr1):
    return -asin_backward_with_dy_x(dy, x, attr0, attr1)


ACOS = UnaryFunctor(
    UnaryOp.kAcos, acos, FLOAT, ints_to_float=True, with_dy_x=acos_backward_with_dy_x,
    doc="inverse cosine",
)


atan = of_x(math.atan)


@scalar_function
def atan_backward_with_dy_x(dy, x, attr0, attr1):
    return divide(dy, as_type(1, x) + x * x)


ATAN = UnaryFunctor(
    UnaryOp.kAtan, atan, FLOAT, ints_to_float=True, with_dy_x=atan_backward_with_dy_x,
    doc="inverse tangent",
)
