"""Tests of a value's content, giving bool for every dtype: is_inf, is_nan, is_finite."""
from __future__ import annotations

import math

from ep.common.jit import scalar_function
from ep.common.math.ops.record import UnaryFunctor
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def is_inf(x, attr0, attr1):
    return math.isinf(x)


IS_INF = UnaryFunctor(UnaryOp.kIsInf, is_inf, ALL_TYPES, to_bool=True)


@scalar_function
def is_nan(x, attr0, attr1):
    return x != x


IS_NAN = UnaryFunctor(UnaryOp.kIsNan, is_nan, ALL_TYPES, to_bool=True)


@scalar_function
def is_finite(x, attr0, attr1):
    return math.isfinite(x)


IS_FINITE = UnaryFunctor(UnaryOp.kIsFinite, is_finite, ALL_TYPES, to_bool=True)
