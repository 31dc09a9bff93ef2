"""Rounding to an integer value, in the float dtypes: ceil, floor, rint, round, trunc."""
from __future__ import annotations

from ep.common.jit import scalar_function
from ep.common.math.ops.record import FLOAT, UnaryFunctor
from ep.common.math.special import round_down, round_half_even, round_toward_zero, round_up
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def ceil(x, attr0, attr1):
    return round_up(x)


CEIL = UnaryFunctor(UnaryOp.kCeil, ceil, FLOAT)


@scalar_function
def floor(x, attr0, attr1):
    return round_down(x)


FLOOR = UnaryFunctor(UnaryOp.kFloor, floor, FLOAT)


@scalar_function
def rint(x, attr0, attr1):
    return round_half_even(x)


RINT = UnaryFunctor(UnaryOp.kRint, rint, FLOAT)


@scalar_function
def round_(x, attr0, attr1):
    # torch.round with decimals=0 is rint: half to even.
    return round_half_even(x)


ROUND = UnaryFunctor(UnaryOp.kRound, round_, FLOAT)


@scalar_function
def trunc(x, attr0, attr1):
    return round_toward_zero(x)


TRUNC = UnaryFunctor(UnaryOp.kTrunc, trunc, FLOAT)
