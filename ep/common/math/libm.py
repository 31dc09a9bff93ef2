"""libm's scalar functions under ep.common.math.fast_math's names (and sigmoid and softplus over libm's).

A formula written once over a math module `m` (m.exp, m.sigmoid) compiles over this one for
float64 and over fast_math for float32: see ops.record.float_variants.
"""
import math

from ep.common.jit import scalar_function
from ep.common.math.special import as_type, divide

exp = math.exp
expm1 = math.expm1
log = math.log
log1p = math.log1p
tanh = math.tanh
erf = math.erf
erfc = math.erfc


@scalar_function
def sigmoid(x):
    """1 / (1 + e^-x) in x's float type."""
    one = as_type(1, x)
    return divide(one, one + math.exp(-x))


@scalar_function
def softplus(x):
    """log(1 + e^x) in x's float type, as max(x, 0) + log1p(e^-|x|) (no overflow, no cancellation)."""
    zero = as_type(0, x)
    return (x if x > zero else zero) + math.log1p(math.exp(-abs(x)))
