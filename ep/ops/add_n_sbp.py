"""SBP rules of add_n, whose inputs are named arrays[0], arrays[1], ... (one shape).

A sum of arrays is linear in each: all split alike on any axis gives that split, all partial sums a
partial sum (not for bool, whose sum is no count), all broadcast a broadcast.
"""
from __future__ import annotations

from ep.ops.add_n import add_n
from ep.ops.elementwise_sbp import _numeric
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Signature, register_rules, shape, signature


def add_n_shapes(dtype="float32", **arrays) -> dict:
    shapes = {name: shape(value, name) for name, value in arrays.items()}
    if not shapes:
        raise ValueError("arrays: is empty; expected at least one array")
    first = next(iter(shapes.values()))
    for name, s in shapes.items():
        if s != first:
            raise ValueError(f"{name}: has shape {s}; expected {first}, as the first (add_n does not broadcast)")
    return {**shapes, "out": first}


def add_n_signatures(dtype="float32", **arrays) -> list[Signature]:
    """dtype: the arrays' dtype; arrays: their shapes, keyed arrays[0], arrays[1], ..."""
    shapes = add_n_shapes(**arrays)
    names = [n for n in shapes if n != "out"]
    sigs = [signature(S(d), **{n: S(d) for n in names}) for d in range(len(shapes["out"]))]
    if _numeric(dtype).kind != "b":
        sigs.append(signature(P, **{n: P for n in names}))
    return sigs + [signature(B, **{n: B for n in names})]


def add_n_attributes(slices, dtype="float32", **arrays) -> dict:
    """None: add_n has no attributes."""
    return {}


RULES = {"add_n": OpRule(add_n_signatures, add_n_shapes, add_n_attributes, lambda args, attrs, **options: add_n([args[f"arrays[{i}]"] for i in range(len(args))], **options))}
register_rules(RULES)
