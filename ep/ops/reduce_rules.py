"""The declarations of the reductions (sum, prod, mean, amax, amin, argmax, argmin, any, all,
logsumexp, var, std, norm) for global tensors: the local ops' dtype rules and dim checks, and SBP
rules.

A dim the reduction keeps may be split: x split there gives the result split on that dim's place
in the result. sum is linear: x split on a reduced dim gives each rank the sum of its part, a
partial sum of the result (S -> P; integers too, whose int64 sums add exactly, wrapping), and a
partial sum of a float x passes through (P -> P). The other reductions are not sums of their
parts (a mean's divisor, a maximum, a variance): over a split dim they take x boxed first.
"""
from __future__ import annotations

from ep.common.runtime.data_type import FLOATING_TYPES, as_data_type
from ep.include.primitive.reduce import ReduceOp
from ep.ops import reduce as reductions
from ep.ops.reduce import MISSING, dim_keepdim, norm_dtype, reduce_dtypes, reduced_dims, reduced_shape
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature

# The reductions by ep.ops name, and whether dim is one int (or None: of x flattened).
OPS = {op.value: op for op in ReduceOp}
SINGLE = ("argmax", "argmin")


def _result_dtype(name: str, x_dtype, dtype):
    if name == "norm":
        return norm_dtype(x_dtype, dtype)
    return reduce_dtypes(OPS[name], as_data_type(x_dtype, "x"), dtype)[1]


def _plan(name: str):
    def plan(x, dim=None, keepdim=False, dtype=None, axis=MISSING, keepdims=MISSING, **extra) -> Plan:
        x = global_tensors(x=x)["x"]
        dim, keepdim = dim_keepdim(dim, keepdim, axis, keepdims)
        dims = reduced_dims(len(x.shape), dim, name in SINGLE)
        if name in SINGLE and dim is not None:
            dim = dims[0] if dims else dim
        elif dim is not None:
            dim = dims
        attrs = {"dim": dim, "keepdim": keepdim, "dtype": dtype, "x_dtype": as_data_type(x.dtype, "x").value, **extra}
        return Plan({"x": x}, attrs, _result_dtype(name, x.dtype, dtype).dtype)

    return plan


def _shapes(name: str):
    def shapes(x, dim=None, keepdim=False, dtype=None, x_dtype=None, **extra) -> dict:
        x = shape(x, "x")
        return {"x": x, "out": reduced_shape(x, reduced_dims(len(x), dim, name in SINGLE), keepdim)}

    return shapes


def _signatures(name: str):
    def signatures(x, dim=None, keepdim=False, dtype=None, x_dtype=None, **extra) -> list[Signature]:
        x = shape(x, "x")
        dims = reduced_dims(len(x), dim, name in SINGLE)
        kept = [d for d in range(len(x)) if d not in dims]
        sigs = [signature(S(d if keepdim else kept.index(d)), x=S(d)) for d in kept]
        if name == "sum":
            sigs += [signature(P, x=S(d)) for d in dims]
            if x_dtype is not None and as_data_type(x_dtype, "x") in FLOATING_TYPES and dtype is None:
                sigs.append(signature(P, x=P))
        return sigs + [signature(B, x=B)]

    return signatures


def attributes(slices, x, **attrs) -> dict:
    """Every attribute the same on every rank (a split dim keeps its place)."""
    return attrs


def _run(name: str):
    function = getattr(reductions, name)

    def run(args, attrs, **options):
        extra = {k: v for k, v in attrs.items() if k not in ("x_dtype",)}
        return function(args["x"], **extra, **options)

    return run


RULES = {
    name: OpRule(_plan(name), _signatures(name), _shapes(name), attributes, _run(name))
    for name in ("sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "any", "all", "logsumexp", "var", "std", "norm")
}
register_rules(RULES)
