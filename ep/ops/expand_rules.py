"""The declarations of expand, expand_grad and repeat for global tensors: the local ops' rules on
the metadata, and SBP rules.

An output dim that expand keeps from the input splits with it; one it broadcasts (a new leading
dim, or an input dim of 1) splits the output with the input broadcast, each rank expanding to its
own size. expand_grad is the transpose: splitting dy on a broadcast dim gives a partial sum. repeat
tiles: a dim repeated once splits with the input, and a dim of size 1 repeated r times is a
broadcast one (each rank repeats its share of r).
"""
from __future__ import annotations

from ep.ops.expand import expand, expand_grad, expand_grad_op, expand_rule, expand_shape, repeat, repeat_rule, repeat_shape
from ep.sbp.global_ops import device_of, global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, box_shape, register_rules, shape, signature


def expand_plan(x, sizes) -> Plan:
    x = global_tensors(x=x)["x"]
    expand_rule(device_of(x), x.dtype, x.shape, sizes)
    return Plan({"x": x}, {"sizes": sizes}, x.dtype)


def expand_grad_plan(dy, input_shape) -> Plan:
    dy = global_tensors(dy=dy)["dy"]
    expand_grad_op(device_of(dy), dy.dtype)
    return Plan({"dy": dy}, {"input_shape": input_shape}, dy.dtype)


def repeat_plan(x, sizes) -> Plan:
    x = global_tensors(x=x)["x"]
    repeat_rule(x.dtype, x.shape, sizes)
    return Plan({"x": x}, {"sizes": sizes}, x.dtype)


def _expand_shape(x, sizes, name="sizes"):
    return expand_shape(x, sizes, name)


def _kept(input_shape: tuple[int, ...], out: tuple[int, ...]) -> list[bool]:
    """Per output dim: whether it is an input dim of the same size (else expand broadcasts it)."""
    lead = len(out) - len(input_shape)
    return [d >= lead and input_shape[d - lead] == n for d, n in enumerate(out)]


def expand_signatures(x, sizes) -> list[Signature]:
    x = shape(x, "x")
    out = _expand_shape(x, sizes)
    lead = len(out) - len(x)
    sigs = [signature(S(d), x=S(d - lead) if kept else B) for d, kept in enumerate(_kept(x, out))]
    return sigs + [signature(P, x=P), signature(B, x=B)]


def expand_shapes(x, sizes) -> dict:
    return {"x": shape(x, "x"), "out": _expand_shape(shape(x, "x"), sizes)}


def expand_attributes(slices, x, sizes) -> dict:
    """sizes: the piece's own output shape (each split dim its share)."""
    return {"sizes": box_shape(slices["out"])}


def _input_shape(dy, input_shape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    dy, input_shape = shape(dy, "dy"), shape(input_shape, "input_shape")
    # dy must be a shape expand can produce from input_shape.
    _expand_shape(input_shape, dy, "dy.shape")
    return dy, input_shape


def expand_grad_signatures(dy, input_shape) -> list[Signature]:
    dy, input_shape = _input_shape(dy, input_shape)
    lead = len(dy) - len(input_shape)
    sigs = [signature(S(d - lead) if kept else P, dy=S(d)) for d, kept in enumerate(_kept(input_shape, dy))]
    return sigs + [signature(P, dy=P), signature(B, dy=B)]


def expand_grad_shapes(dy, input_shape) -> dict:
    dy, input_shape = _input_shape(dy, input_shape)
    return {"dy": dy, "out": input_shape}


def expand_grad_attributes(slices, dy, input_shape) -> dict:
    """input_shape: the piece's own output shape."""
    return {"input_shape": box_shape(slices["out"])}


def _repeat(x, sizes) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(x padded with leading 1s to len(sizes), the checked sizes, the result shape)."""
    return repeat_shape(shape(x, "x"), sizes)


def repeat_signatures(x, sizes) -> list[Signature]:
    padded, sizes, _ = _repeat(x, sizes)
    lead = len(sizes) - len(shape(x, "x"))
    sigs = []
    for d, (r, n) in enumerate(zip(sizes, padded)):
        if d >= lead and r == 1:
            sigs.append(signature(S(d), x=S(d - lead)))
        elif n == 1:
            sigs.append(signature(S(d), x=B))
    return sigs + [signature(P, x=P), signature(B, x=B)]


def repeat_shapes(x, sizes) -> dict:
    return {"x": shape(x, "x"), "out": _repeat(x, sizes)[2]}


def repeat_attributes(slices, x, sizes) -> dict:
    """sizes: each dim's repeat count on the piece (its share of the output over its share of x)."""
    _, sizes, _ = _repeat(x, sizes)
    piece = box_shape(slices["x"])
    piece = (1,) * (len(sizes) - len(piece)) + piece
    out = box_shape(slices["out"])
    return {"sizes": tuple(o // n if n else r for o, n, r in zip(out, piece, sizes))}


RULES = {
    "expand": OpRule(expand_plan, expand_signatures, expand_shapes, expand_attributes, lambda args, attrs, **options: expand(args["x"], attrs["sizes"], **options)),
    "expand_grad": OpRule(expand_grad_plan, expand_grad_signatures, expand_grad_shapes, expand_grad_attributes, lambda args, attrs, **options: expand_grad(args["dy"], attrs["input_shape"], **options)),
    "repeat": OpRule(repeat_plan, repeat_signatures, repeat_shapes, repeat_attributes, lambda args, attrs, **options: repeat(args["x"], attrs["sizes"], **options)),
}
register_rules(RULES)
