"""Bitwise ops on the integer dtypes and bool: and, or, xor, not."""
from __future__ import annotations

from ep.common.jit import scalar_function
from ep.common.math.ops.record import BITS, BinaryFunctor, UnaryFunctor
from ep.common.math.special import as_type
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.unary_op import UnaryOp


@scalar_function
def bitwise_and(a, b, attr0, attr1):
    return as_type(a & b, a)


BITWISE_AND = BinaryFunctor(BinaryOp.kBitwiseAnd, bitwise_and, BITS)


@scalar_function
def bitwise_or(a, b, attr0, attr1):
    return as_type(a | b, a)


BITWISE_OR = BinaryFunctor(BinaryOp.kBitwiseOr, bitwise_or, BITS)


@scalar_function
def bitwise_xor(a, b, attr0, attr1):
    return as_type(a ^ b, a)


BITWISE_XOR = BinaryFunctor(BinaryOp.kBitwiseXor, bitwise_xor, BITS)


@scalar_function
def bitwise_not(x, attr0, attr1):
    # x ^ all-ones of x's type: ~x for integers, not x for bool (where ~True is -2).
    return as_type(x ^ as_type(-1, x), x)


BITWISE_NOT = UnaryFunctor(UnaryOp.kBitwiseNot, bitwise_not, BITS)
