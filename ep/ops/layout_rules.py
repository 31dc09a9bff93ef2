"""The declarations of the layout ops, permute and pad, for global tensors: the local ops' rules
on the metadata, and SBP rules.

permute moves dims: x split on dim i is the result split on the dim x's dim i becomes
(dims.index(i)); broadcast and partial sums pass through, as a permute is linear. pad writes
pad_value around x: a dim it neither pads nor crops splits with x; partial sums do not pass (each
rank would add its pad value), so pad has no P signature.
"""
from __future__ import annotations

from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.scalar import scalar_value
from ep.ops.pad import pad, pad_widths
from ep.ops.permute import permute, permute_shape
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


def permute_plan(x, dims) -> Plan:
    x = global_tensors(x=x)["x"]
    permute_shape(x.shape, dims)
    return Plan({"x": x}, {"dims": dims}, x.dtype)


def pad_plan(x, pad, value=None) -> Plan:
    """pad's rule: the widths, and value as x's dtype holds it (pad converts it on each piece)."""
    x = global_tensors(x=x)["x"]
    pad_widths(x.shape, pad)
    scalar_value(0 if value is None else value, "value", as_data_type(x.dtype, "x"))
    return Plan({"x": x}, {"pad": pad, "value": value}, x.dtype)


def _permute_shape(x, dims):
    return permute_shape(shape(x, "x"), dims)


def permute_signatures(x, dims) -> list[Signature]:
    dims, _ = _permute_shape(x, dims)
    return [signature(S(dims.index(i)), x=S(i)) for i in range(len(dims))] + [signature(P, x=P), signature(B, x=B)]


def permute_shapes(x, dims) -> dict:
    return {"x": shape(x, "x"), "out": _permute_shape(x, dims)[1]}


def permute_attributes(slices, x, dims) -> dict:
    """dims: the same on every rank."""
    return {"dims": dims}


def _pad_widths(x, pad):
    return pad_widths(shape(x, "x"), pad)


def pad_signatures(x, pad, value=0) -> list[Signature]:
    before, after, _ = _pad_widths(x, pad)
    kept = [signature(S(d), x=S(d)) for d, (b, a) in enumerate(zip(before, after)) if b == 0 and a == 0]
    return kept + [signature(B, x=B)]


def pad_shapes(x, pad, value=0) -> dict:
    return {"x": shape(x, "x"), "out": _pad_widths(x, pad)[2]}


def pad_attributes(slices, x, pad, value=0) -> dict:
    """pad and value: the same on every rank (a split dim is never padded)."""
    return {"pad": pad, "value": value}


RULES = {
    "permute": OpRule(permute_plan, permute_signatures, permute_shapes, permute_attributes, lambda args, attrs, **options: permute(args["x"], attrs["dims"], **options)),
    "pad": OpRule(pad_plan, pad_signatures, pad_shapes, pad_attributes, lambda args, attrs, **options: pad(args["x"], attrs["pad"], attrs.get("value", 0), **options)),
}
register_rules(RULES)
