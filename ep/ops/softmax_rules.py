"""The declarations of softmax, log_softmax and their gradients for global tensors: the local ops'
dtype rule (rows_dtype) and dim check, and SBP rules (a reduction along dim, elementwise elsewhere).

Each row along dim is normalized on its own, so x split on any other axis gives the result split
there (each rank holds whole rows); a split along dim would leave each rank part of a row's sum, so
dim never splits. Partial sums do not pass through the forward ops (exp is not linear). The
gradients take y and dy of one shape, split alike: dx = y * (dy - sum(y * dy)) and
dx = dy - exp(y) * sum(dy) are linear in dy for a fixed y, so P(dy) with B(y) gives P, as for the
elementwise backward ops (not for bool: no softmax takes it).
"""
from __future__ import annotations

from ep.ops.softmax import log_softmax, log_softmax_grad, result_dtype, rows_dtype, softmax, softmax_dim, softmax_grad
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


def _dim(x: tuple[int, ...], dim) -> int:
    return softmax_dim(len(x), dim)


def forward_shapes(x, dim=-1, dtype=None) -> dict:
    x = shape(x, "x")
    _dim(x, dim)
    return {"x": x, "out": x}


def forward_signatures(x, dim=-1, dtype=None) -> list[Signature]:
    x = forward_shapes(x, dim)["x"]
    return [signature(S(d), x=S(d)) for d in range(len(x)) if d != _dim(x, dim)] + [signature(B, x=B)]


def grad_shapes(y, dy, dim=-1) -> dict:
    y, dy = shape(y, "y"), shape(dy, "dy")
    if dy != y:
        raise ValueError(f"dy: has shape {dy}; expected y's, {y}")
    _dim(y, dim)
    return {"y": y, "dy": dy, "out": y}


def grad_signatures(y, dy, dim=-1) -> list[Signature]:
    y = grad_shapes(y, dy, dim)["y"]
    sigs = [signature(S(d), y=S(d), dy=S(d)) for d in range(len(y)) if d != _dim(y, dim)]
    return sigs + [signature(P, y=B, dy=P), signature(B, y=B, dy=B)]


def attributes(slices, dim=-1, dtype=None, **shapes) -> dict:
    """dim and the forward ops' dtype= where given: the same on every rank (dim never splits)."""
    return {"dim": dim} if dtype is None else {"dim": dim, "dtype": dtype}


def _plan(op):
    """The plan of softmax-family op: its arrays of one shape and float dtype, dim in range."""

    def plan(dim=-1, dtype=None, **arrays) -> Plan:
        tensors = global_tensors(**arrays)
        softmax_dim(len(next(iter(tensors.values())).shape), dim)
        if dtype is not None:  # the forward ops' dtype=: x cast to it first
            dtype = result_dtype(dtype).dtype
            return Plan(tensors, {"dim": dim, "dtype": dtype.name}, dtype)
        return Plan(tensors, {"dim": dim}, rows_dtype(op.__name__, tuple((t, n) for n, t in tensors.items())).dtype)

    return plan


def _forward(op):
    return OpRule(_plan(op), forward_signatures, forward_shapes, attributes, lambda args, attrs, **options: op(args["x"], attrs["dim"], dtype=attrs.get("dtype"), **options))


def _grad(op):
    return OpRule(_plan(op), grad_signatures, grad_shapes, attributes, lambda args, attrs, **options: op(args["y"], args["dy"], attrs["dim"], **options))


RULES = {
    "softmax": _forward(softmax),
    "log_softmax": _forward(log_softmax),
    "softmax_grad": _grad(softmax_grad),
    "log_softmax_grad": _grad(log_softmax_grad),
}
register_rules(RULES)
