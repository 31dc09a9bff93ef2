"""The declarations of cumsum, cumprod and logcumsumexp for global tensors: the local ops' dtype
rules and dim check, and SBP rules.

A scan runs along dim on its own for each position of the other dims: x split on any other axis
gives the result split there, and dim never splits (each rank would scan its part of a run without
the totals before it). cumsum is linear, so a partial sum of a float x passes through (P -> P);
not for integers, whose result is int64 (the ranks' parts would add in another dtype than x's).
cummax and cummin (two outputs) take the undeclared path: boxed to broadcast, run, kept broadcast.
"""
from __future__ import annotations

from ep.common.runtime.data_type import FLOATING_TYPES, as_data_type
from ep.ops.arrays import one_dim
from ep.ops.scan import accumulating_dtypes, cumprod, cumsum, floating_dtype, logcumsumexp
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


def _dim(x: tuple[int, ...], dim) -> int:
    return one_dim(dim, max(len(x), 1))


def scan_shapes(x, dim, dtype=None, x_dtype=None) -> dict:
    x = shape(x, "x")
    _dim(x, dim)
    return {"x": x, "out": x}


def _splits(x, dim) -> list[Signature]:
    return [signature(S(d), x=S(d)) for d in range(len(x)) if d != _dim(x, dim)]


def cumsum_signatures(x, dim, dtype=None, x_dtype=None) -> list[Signature]:
    x = scan_shapes(x, dim)["x"]
    linear = x_dtype is not None and as_data_type(x_dtype, "x") in FLOATING_TYPES and dtype is None
    return _splits(x, dim) + ([signature(P, x=P)] if linear else []) + [signature(B, x=B)]


def other_signatures(x, dim, dtype=None, x_dtype=None) -> list[Signature]:
    return _splits(scan_shapes(x, dim)["x"], dim) + [signature(B, x=B)]


def attributes(slices, x, dim, **others) -> dict:
    """dim, dtype and x's dtype: the same on every rank (dim never splits)."""
    return {"dim": dim, **others}


def _plan(dtypes):
    def plan(x, dim, dtype=None) -> Plan:
        x = global_tensors(x=x)["x"]
        _dim(tuple(x.shape), dim)
        attrs = {"dim": dim, "dtype": dtype, "x_dtype": as_data_type(x.dtype, "x").value}
        return Plan({"x": x}, attrs, dtypes(x.dtype, dtype).dtype)

    return plan


def _run(op):
    def run(args, attrs, **options):
        extra = {"dtype": attrs["dtype"]} if attrs.get("dtype") is not None else {}
        return op(args["x"], attrs["dim"], **extra, **options)

    return run


RULES = {
    "cumsum": OpRule(_plan(lambda t, d: accumulating_dtypes(t, d)[1]), cumsum_signatures, scan_shapes, attributes, _run(cumsum)),
    "cumprod": OpRule(_plan(lambda t, d: accumulating_dtypes(t, d)[1]), other_signatures, scan_shapes, attributes, _run(cumprod)),
    "logcumsumexp": OpRule(_plan(lambda t, d: floating_dtype(t)), other_signatures, scan_shapes, attributes, _run(logcumsumexp)),
}
register_rules(RULES)
