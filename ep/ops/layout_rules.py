"""The declarations of the layout ops (permute, pad, cat, stack, roll, flip) for global tensors:
the local ops' rules on the metadata, and SBP rules.

permute moves dims: x split on dim i is the result split on the dim x's dim i becomes
(dims.index(i)); broadcast and partial sums pass through, as a permute is linear. pad writes
pad_value around x: a dim it neither pads nor crops splits with x; partial sums do not pass (each
rank would add its pad value), so pad has no P signature. cat and stack join whole arrays: all
split alike on a dim other than cat's gives that split (stack's dims from dim on move up one), all
partial sums a partial sum (a copy is linear). roll and flip move elements only along their dims:
a split on any other dim stays, and partial sums pass; roll of the flattened x (dims=None) only
broadcast.
"""
from __future__ import annotations

from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.scalar import promote, promotion_key, scalar_value
from ep.ops.arrays import one_dim
from ep.ops.layout import cat, cat_shape, dims_of, flip, roll, stack, stack_shape
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


def _joined(arrays, name: str = "tensors") -> tuple[dict, object]:
    """(the global tensors named tensors[i], their promoted dtype) of cat's and stack's sequence."""
    if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__len__") or not len(arrays):
        raise TypeError(f"{name}: expected a non-empty sequence of arrays")
    tensors = global_tensors(**{f"{name}[{i}]": a for i, a in enumerate(arrays)})
    key = promotion_key(arrays[0])
    for a in arrays[1:]:
        key = promote(key, promotion_key(a))
    return tensors, as_data_type(key, name).dtype


def cat_plan(tensors, dim=0) -> Plan:
    found, dtype = _joined(tensors)
    cat_shapes(dim, **{n: t.shape for n, t in found.items()})
    return Plan(found, {"dim": dim}, dtype)


def stack_plan(tensors, dim=0) -> Plan:
    found, dtype = _joined(tensors)
    stack_shapes(dim, **{n: t.shape for n, t in found.items()})
    return Plan(found, {"dim": dim}, dtype)


def _inputs(arrays: dict) -> dict:
    return {name: shape(value, name) for name, value in arrays.items()}


def cat_shapes(dim=0, **tensors) -> dict:
    shapes = _inputs(tensors)
    return {**shapes, "out": cat_shape(list(shapes.values()), dim)[1]}


def stack_shapes(dim=0, **tensors) -> dict:
    shapes = _inputs(tensors)
    return {**shapes, "out": stack_shape(list(shapes.values()), dim)[1]}


def cat_signatures(dim=0, **tensors) -> list[Signature]:
    out = cat_shapes(dim, **tensors)["out"]
    d = one_dim(dim, len(out))
    each = lambda sbp: {n: sbp for n in tensors}  # noqa: E731
    return [signature(S(k), **each(S(k))) for k in range(len(out)) if k != d] + [signature(P, **each(P)), signature(B, **each(B))]


def stack_signatures(dim=0, **tensors) -> list[Signature]:
    out = stack_shapes(dim, **tensors)["out"]
    d = one_dim(dim, len(out))
    each = lambda sbp: {n: sbp for n in tensors}  # noqa: E731
    splits = [signature(S(k if k < d else k + 1), **each(S(k))) for k in range(len(out) - 1)]
    return splits + [signature(P, **each(P)), signature(B, **each(B))]


def join_attributes(slices, dim=0, **tensors) -> dict:
    """dim: the same on every rank (never split)."""
    return {"dim": dim}


def roll_plan(x, shifts, dims=None) -> Plan:
    x = global_tensors(x=x)["x"]
    roll_shapes(x.shape, shifts, dims)
    return Plan({"x": x}, {"shifts": shifts, "dims": dims}, x.dtype)


def roll_shapes(x, shifts, dims=None) -> dict:
    x = shape(x, "x")
    if dims is not None:
        dims_of(dims, len(x), "dims")
    return {"x": x, "out": x}


def roll_signatures(x, shifts, dims=None) -> list[Signature]:
    x = roll_shapes(x, shifts, dims)["x"]
    if dims is None:
        return [signature(B, x=B)]
    moved = set(dims_of(dims, len(x), "dims"))
    return [signature(S(d), x=S(d)) for d in range(len(x)) if d not in moved] + [signature(P, x=P), signature(B, x=B)]


def flip_plan(x, dims) -> Plan:
    x = global_tensors(x=x)["x"]
    flip_shapes(x.shape, dims)
    return Plan({"x": x}, {"dims": dims}, x.dtype)


def flip_shapes(x, dims) -> dict:
    x = shape(x, "x")
    dims_of(dims, len(x), "dims")
    return {"x": x, "out": x}


def flip_signatures(x, dims) -> list[Signature]:
    x = flip_shapes(x, dims)["x"]
    moved = set(dims_of(dims, len(x), "dims"))
    return [signature(S(d), x=S(d)) for d in range(len(x)) if d not in moved] + [signature(P, x=P), signature(B, x=B)]


def same_attributes(slices, x, **attrs) -> dict:
    """shifts and dims: the same on every rank (a moved dim is never split)."""
    return attrs


def _tensors(args: dict) -> list:
    return [args[f"tensors[{i}]"] for i in range(len(args))]


RULES = {
    "cat": OpRule(cat_plan, cat_signatures, cat_shapes, join_attributes, lambda args, attrs, **options: cat(_tensors(args), attrs["dim"], **options)),
    "stack": OpRule(stack_plan, stack_signatures, stack_shapes, join_attributes, lambda args, attrs, **options: stack(_tensors(args), attrs["dim"], **options)),
    "roll": OpRule(roll_plan, roll_signatures, roll_shapes, same_attributes, lambda args, attrs, **options: roll(args["x"], attrs["shifts"], attrs["dims"], **options)),
    "flip": OpRule(flip_plan, flip_signatures, flip_shapes, same_attributes, lambda args, attrs, **options: flip(args["x"], attrs["dims"], **options)),
    "permute": OpRule(permute_plan, permute_signatures, permute_shapes, permute_attributes, lambda args, attrs, **options: permute(args["x"], attrs["dims"], **options)),
    "pad": OpRule(pad_plan, pad_signatures, pad_shapes, pad_attributes, lambda args, attrs, **options: pad(args["x"], attrs["pad"], attrs.get("value", 0), **options)),
}
register_rules(RULES)
