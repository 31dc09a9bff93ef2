"""The declaration of add_n for global tensors, whose inputs are named arrays[0], arrays[1], ...:
the local op's dtype rule (add_n_dtype) and SBP rules.

A sum of arrays is linear in each: all split alike on any axis gives that split, all partial sums a
partial sum (not for bool, whose sum is no count), all broadcast a broadcast.
"""
from __future__ import annotations

from ep.ops.add_n import add_n, add_n_dtype
from ep.ops.elementwise_rules import summable
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


def add_n_plan(arrays) -> Plan:
    """add_n's rule on the arrays' metadata: a non-empty sequence of one shape and dtype."""
    if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__len__"):
        raise TypeError(f"arrays: {type(arrays).__name__} is not a sequence of arrays")
    tensors = global_tensors(**{f"arrays[{i}]": a for i, a in enumerate(arrays)})
    dtype = add_n_dtype(arrays)
    return Plan(tensors, {"dtype": dtype.dtype.name}, dtype.dtype)


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
    if summable(dtype):
        sigs.append(signature(P, **{n: P for n in names}))
    return sigs + [signature(B, **{n: B for n in names})]


def add_n_attributes(slices, dtype="float32", **arrays) -> dict:
    """None: add_n has no attributes."""
    return {}


RULES = {"add_n": OpRule(add_n_plan, add_n_signatures, add_n_shapes, add_n_attributes, lambda args, attrs, **options: add_n([args[f"arrays[{i}]"] for i in range(len(args))], **options))}
register_rules(RULES)
