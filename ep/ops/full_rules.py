"""The declaration of full (no plan: no global call takes it) and its SBP rule: the result is
broadcast (B), every rank filling the whole logical shape.

full has no inputs, so nothing constrains it; B is the layout the issue asks for (a split would
fill each rank's share, a partial sum the value on one rank and zeros elsewhere).
"""
from __future__ import annotations

from ep.ops.full import full
from ep.sbp.sbp import broadcast as B
from ep.sbp.signature import OpRule, Signature, box_shape, register_rules, shape, signature


def full_signatures(shape, fill_value, dtype=None, device="cpu") -> list[Signature]:
    return [signature(B)]


def full_shapes(shape, fill_value, dtype=None, device="cpu") -> dict:
    # The parameter is the op's own name; the module's shape() checks it.
    return {"out": _shape(shape)}


def full_attributes(slices, shape, fill_value, dtype=None, device="cpu") -> dict:
    """shape: the piece's own (the whole, under B); the value, dtype and device as given."""
    return {"shape": box_shape(slices["out"]), "fill_value": fill_value, "dtype": dtype, "device": device}


def _shape(value) -> tuple[int, ...]:
    return shape((value,) if isinstance(value, int) else value, "shape")


# No global call takes full (it has no tensors): its rules make a rank's zeros (ep.sbp.local.zeros).
RULES = {"full": OpRule(None, full_signatures, full_shapes, full_attributes, lambda args, attrs, **options: full(attrs["shape"], attrs["fill_value"], dtype=attrs.get("dtype"), device=attrs.get("device", "cpu"), **options))}
register_rules(RULES)
