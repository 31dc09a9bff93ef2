"""SBP rules of unary and binary (NumPy broadcasting).

Every dim splits an elementwise op: a binary operand of size 1 (or without the dim) is broadcast
there. A partial sum passes only where the op is exact on sums: through the linear unary ops
(identity, negative); P+P and P-P for add and sub; P*B and B*P for mul; P/B for a floating div;
P(dy), B(x) for every backward op (dx = dy * f'(x) is linear in dy). Never for comparisons,
logical, bitwise or other nonlinear ops, nor for bool (its sum is no count).
"""
from __future__ import annotations

import numpy as np

from ep.common.primitive.broadcast import broadcast_shape
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.unary_op import UnaryOp, as_unary_op
from ep.ops.binary import binary
from ep.ops.unary import unary
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Signature, register_rules, shape, signature

LINEAR_UNARY_OPS = frozenset({UnaryOp.kIdentity, UnaryOp.kNegative})


def _numeric(dtype: object) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"dtype: {dtype} is not a dtype ep's elementwise ops take")
    return dtype


def unary_signatures(op, x, attr0=None, attr1=None, dtype="float32") -> list[Signature]:
    """dtype: x's dtype (a partial sum of bool is no sum)."""
    op, x, dtype = as_unary_op(op), shape(x, "x"), _numeric(dtype)
    sigs = [signature(S(d), x=S(d)) for d in range(len(x))]
    if op in LINEAR_UNARY_OPS and dtype.kind != "b":
        sigs.append(signature(P, x=P))
    return sigs + [signature(B, x=B)]


def unary_shapes(op, x, attr0=None, attr1=None, dtype="float32") -> dict:
    return {"x": shape(x, "x"), "out": shape(x, "x")}


def unary_attributes(slices, op, x, attr0=None, attr1=None, dtype="float32") -> dict:
    """op, attr0 and attr1: the same on every piece."""
    return {"op": as_unary_op(op), "attr0": attr0, "attr1": attr1}


def _partial_sums(op: BinaryOp, dtype: np.dtype) -> list[dict]:
    """The (a, b) SBPs with a partial sum that give a partial sum out."""
    if dtype.kind == "b":
        return []
    if op in (BinaryOp.kAdd, BinaryOp.kSub):
        return [{"a": P, "b": P}]
    if op is BinaryOp.kMul:
        return [{"a": P, "b": B}, {"a": B, "b": P}]
    if (op is BinaryOp.kDiv and dtype.kind == "f") or op.name.endswith(("BackwardWithDyX", "BackwardWithDyY")):
        return [{"a": P, "b": B}]
    return []


def _broadcast(a, b) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    a, b = shape(a, "a"), shape(b, "b")
    return a, b, broadcast_shape(a, b)


def _operand(shape_: tuple[int, ...], out: tuple[int, ...], d: int):
    """The operand's SBP when out splits at d: its own dim if it has out's size there, else B."""
    dim = d - (len(out) - len(shape_))
    return S(dim) if dim >= 0 and shape_[dim] == out[d] else B


def binary_signatures(op, a, b, attr0=None, attr1=None, dtype="float32") -> list[Signature]:
    """dtype: the operands' compute dtype (partial sums divide exactly only in floats)."""
    op, dtype = as_binary_op(op), _numeric(dtype)
    a, b, out = _broadcast(a, b)
    sigs = [signature(S(d), a=_operand(a, out, d), b=_operand(b, out, d)) for d in range(len(out))]
    sigs += [signature(P, **inputs) for inputs in _partial_sums(op, dtype)]
    return sigs + [signature(B, a=B, b=B)]


def binary_shapes(op, a, b, attr0=None, attr1=None, dtype="float32") -> dict:
    a, b, out = _broadcast(a, b)
    return {"a": a, "b": b, "out": out}


def binary_attributes(slices, op, a, b, attr0=None, attr1=None, dtype="float32") -> dict:
    """op, attr0 and attr1: the same on every piece."""
    return {"op": as_binary_op(op), "attr0": attr0, "attr1": attr1}


RULES = {
    "unary": OpRule(unary_signatures, unary_shapes, unary_attributes, lambda args, attrs, **options: unary(attrs["op"], args["x"], attrs.get("attr0"), attrs.get("attr1"), **options)),
    "binary": OpRule(binary_signatures, binary_shapes, binary_attributes, lambda args, attrs, **options: binary(attrs["op"], args["a"], args["b"], attrs.get("attr0"), attrs.get("attr1"), **options)),
}
register_rules(RULES)
