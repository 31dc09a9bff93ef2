"""The declarations of unary and binary for global tensors: their plans (the local ops' own rules,
aliases and dtype rules included, on the tensors' metadata) and SBP rules (NumPy broadcasting).

Every dim splits an elementwise op: a binary operand of size 1 (or without the dim) is broadcast
there. A partial sum passes only where the op is exact on sums: through the linear unary ops
(identity, negative); P+P and P-P for add and sub; P*B and B*P for mul; P/B for a floating div;
P(dy), B(x) for every backward op (dx = dy * f'(x) is linear in dy). Never for comparisons,
logical, bitwise or other nonlinear ops, nor for bool (its sum is no count).
"""
from __future__ import annotations

from ep.common.primitive.broadcast import broadcast_shape
from ep.common.runtime.data_type import DataType, as_data_type
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.unary_op import UnaryOp, as_unary_op
from ep.common.math.binary_functor import binary_keyword_attrs
from ep.common.math.unary_functor import unary_keyword_attrs
from ep.ops.binary import binary, binary_rule
from ep.ops.unary import unary, unary_rule
from ep.sbp.global_ops import device_of, global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature

LINEAR_UNARY_OPS = frozenset({UnaryOp.kIdentity, UnaryOp.kNegative})


def _numeric(dtype: object) -> DataType:
    return as_data_type(dtype, "dtype")


def summable(dtype: object) -> bool:
    """Whether pieces of dtype may be a partial sum: any dtype ep takes but bool (its sum is no count)."""
    return _numeric(dtype) is not DataType.kBool


def unary_signatures(op, x, attr0=None, attr1=None, dtype="float32") -> list[Signature]:
    """dtype: x's dtype (a partial sum of bool is no sum)."""
    op, x, dtype = as_unary_op(op), shape(x, "x"), _numeric(dtype)
    sigs = [signature(S(d), x=S(d)) for d in range(len(x))]
    if op in LINEAR_UNARY_OPS and dtype is not DataType.kBool:
        sigs.append(signature(P, x=P))
    return sigs + [signature(B, x=B)]


def unary_shapes(op, x, attr0=None, attr1=None, dtype="float32") -> dict:
    return {"x": shape(x, "x"), "out": shape(x, "x")}


def unary_attributes(slices, op, x, attr0=None, attr1=None, dtype="float32") -> dict:
    """op (as given: an alias keeps its library's rule), attr0 and attr1: the same on every piece."""
    return {"op": op, "attr0": attr0, "attr1": attr1}


def _partial_sums(op: BinaryOp, dtype: DataType) -> list[dict]:
    """The (a, b) SBPs with a partial sum that give a partial sum out."""
    if dtype is DataType.kBool:
        return []
    if op in (BinaryOp.kAdd, BinaryOp.kSub):
        return [{"a": P, "b": P}]
    if op is BinaryOp.kMul:
        return [{"a": P, "b": B}, {"a": B, "b": P}]
    if (op is BinaryOp.kDiv and dtype.is_floating) or op.name.endswith(("BackwardWithDyX", "BackwardWithDyY")):
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
    """op (as given: an alias keeps its library's rule), attr0 and attr1: the same on every piece."""
    return {"op": op, "attr0": attr0, "attr1": attr1}


def unary_plan(op, x, attr0=None, attr1=None, dtype=None, attrs=None) -> Plan:
    """unary's own rule on x's metadata: an alias computes in its library's dtype (x is cast on
    each piece), dtype is kCast's destination."""
    x = global_tensors(x=x)["x"]
    if attrs:
        attr0, attr1 = unary_keyword_attrs(op, attrs, attr0, attr1)
    _, dst, cast = unary_rule(op, device_of(x), x.dtype, attr0, attr1, dtype)
    attributes = {"op": op, "attr0": attr0, "attr1": attr1, "dtype": x.dtype.name if cast is None else cast.dtype.name}
    return Plan({"x": x}, attributes, dst.dtype, {} if dtype is None else {"dtype": dtype}, frozenset() if cast is None else {"x"})


def binary_plan(op, a, b, attr0=None, attr1=None, attrs=None) -> Plan:
    """binary's own rule on a's and b's metadata (both global: a scalar operand is a 0-d global
    tensor under broadcast): NumPy's and PyTorch's names compute in their library's dtype."""
    tensors = global_tensors(a=a, b=b)
    if attrs:
        attr0, attr1 = binary_keyword_attrs(op, attrs, attr0, attr1)
    device = device_of(a)
    rule, _ = binary_rule(op, attr0, attr1, device, a.dtype, a.shape, device, b.dtype, b.shape)
    src = rule.src_dtype.dtype
    casts = frozenset(n for n, t in tensors.items() if t.dtype != src)
    return Plan(tensors, {"op": op, "attr0": attr0, "attr1": attr1, "dtype": src.name}, rule.dst_dtype.dtype, casts=casts)


RULES = {
    "unary": OpRule(unary_plan, unary_signatures, unary_shapes, unary_attributes, lambda args, attrs, **options: unary(attrs["op"], args["x"], attrs.get("attr0"), attrs.get("attr1"), **options)),
    "binary": OpRule(binary_plan, binary_signatures, binary_shapes, binary_attributes, lambda args, attrs, **options: binary(attrs["op"], args["a"], args["b"], attrs.get("attr0"), attrs.get("attr1"), **options)),
}
register_rules(RULES)
