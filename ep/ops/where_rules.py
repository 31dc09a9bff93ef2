"""The declaration of where for global tensors: the local op's dtype rule (where_dtype) and SBP
rules of a ternary broadcast op (NumPy broadcasting of condition, x and y).

Every dim of the result splits it: an operand of size 1 there (or without the dim) is broadcast.
where(c, x1 + x2, y1 + y2) = where(c, x1, y1) + where(c, x2, y2), so x and y partial sums with a
broadcast condition give a partial sum (not for bool data, whose sum is no count).
"""
from __future__ import annotations

from ep.common.primitive.broadcast import broadcast_shape
from ep.ops.elementwise_rules import _operand, summable
from ep.ops.where import where, where_dtype
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature

_NAMES = ("condition", "x", "y")


def where_shapes(condition, x, y, dtype="float32") -> dict:
    shapes = {name: shape(value, name) for name, value in zip(_NAMES, (condition, x, y))}
    out = broadcast_shape(broadcast_shape(shapes["condition"], shapes["x"], ("condition", "x")), shapes["y"], ("condition, x", "y"))
    return {**shapes, "out": out}


def where_signatures(condition, x, y, dtype="float32") -> list[Signature]:
    """dtype: x's and y's (the result's) dtype."""
    shapes = where_shapes(condition, x, y)
    out = shapes["out"]
    sigs = [signature(S(d), **{n: _operand(shapes[n], out, d) for n in _NAMES}) for d in range(len(out))]
    if summable(dtype):
        sigs.append(signature(P, condition=B, x=P, y=P))
    return sigs + [signature(B, condition=B, x=B, y=B)]


def where_attributes(slices, condition, x, y, dtype="float32") -> dict:
    """None: where has no attributes."""
    return {}


def where_plan(condition, x, y) -> Plan:
    """where's rule on the metadata of three global tensors (a bool condition): x and y are
    computed in their promotion (cast on each piece)."""
    tensors = global_tensors(condition=condition, x=x, y=y)
    dtype = where_dtype(condition, x, y).dtype
    casts = frozenset(n for n in ("x", "y") if tensors[n].dtype != dtype)
    return Plan(tensors, {"dtype": dtype.name}, dtype, casts=casts)


RULES = {"where": OpRule(where_plan, where_signatures, where_shapes, where_attributes, lambda args, attrs, **options: where(args["condition"], args["x"], args["y"], **options))}
register_rules(RULES)
