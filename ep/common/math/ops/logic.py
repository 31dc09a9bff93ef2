"""Logical ops on truth values (nonzero is true), giving bool for every dtype: and, or, xor, not."""
from __future__ import annotations

from ep.common.jit import scalar_function
from ep.common.math.ops.record import BinaryFunctor, UnaryFunctor
from ep.common.runtime.data_type import ALL_TYPES
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def logical_and(a, b, attr0, attr1):
    return a != 0 and b != 0


LOGICAL_AND = BinaryFunctor(BinaryOp.kLogicalAnd, logical_and, ALL_TYPES, to_bool=True)


@scalar_function
def logical_or(a, b, attr0, attr1):
    return a != 0 or b != 0


LOGICAL_OR = BinaryFunctor(BinaryOp.kLogicalOr, logical_or, ALL_TYPES, to_bool=True)


@scalar_function
def logical_xor(a, b, attr0, attr1):
    return (a != 0) != (b != 0)


LOGICAL_XOR = BinaryFunctor(BinaryOp.kLogicalXor, logical_xor, ALL_TYPES, to_bool=True)


@scalar_function
def logical_not(x, attr0, attr1):
    return x == 0


LOGICAL_NOT = UnaryFunctor(UnaryOp.kLogicalNot, logical_not, ALL_TYPES, to_bool=True)
