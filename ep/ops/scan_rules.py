"""The declarations of cumsum, cumprod and logcumsumexp for global tensors: the local ops' dtype
rules and dim check, and SBP rules.

A scan runs along dim on its own for each position of the other dims: x split on any other axis
gives the result split there. cumsum, cumprod and logcumsumexp also take x split on dim: each
rank scans its part, then continues it from the parts before it (their totals, combined by MPI's
Exscan over the ranks that split dim: a message of the other dims' size, not the tensor; MPI has
no log-add-exp, so logcumsumexp's totals are all-gathered and combined here). cumsum is linear, so a partial sum of a float x passes through (P -> P);
not for integers, whose result is int64 (the ranks' parts would add in another dtype than x's).
cummax and cummin (values and indices) split alike, and along a split dim continue each part from
the running extreme of the parts before it (their last values and indices, all-gathered: MPI has
no reduction that keeps torch's rule, the later of equal values and the latest NaN winning).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ep.common.runtime.data_type import FLOATING_TYPES, as_data_type
from ep.ops.arrays import one_dim
from ep.ops.binary import binary
from ep.ops.fuse import fuse
from ep.ops.scan import accumulating_dtypes, cummax, cummin, cumprod, cumsum, floating_dtype, logcumsumexp
from ep.ops.where import where
from ep.sbp.boxing import all_gather_parts, to_device, to_host
from ep.sbp.global_ops import global_tensors
from ep.sbp.global_tensor import device_name
from ep.sbp.local import run_piece, splitting
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature

# The scans that continue across ranks: the binary op that combines a total with what follows it,
# its identity, and MPI's reduction of the totals (None: all-gathered, combined by the op here).
CONTINUED = {"cumsum": ("add", 0, "SUM"), "cumprod": ("mul", 1, "PROD"), "logcumsumexp": ("logaddexp", -np.inf, None)}


def _dim(x: tuple[int, ...], dim) -> int:
    return one_dim(dim, max(len(x), 1))


def scan_shapes(x, dim, dtype=None, x_dtype=None) -> dict:
    x = shape(x, "x")
    _dim(x, dim)
    return {"x": x, "out": x}


def _splits(x, dim) -> list[Signature]:
    return [signature(S(d), x=S(d)) for d in range(len(x)) if d != _dim(x, dim)]


def _continued(x, dim) -> list[Signature]:
    return [signature(S(_dim(x, dim)), x=S(_dim(x, dim)))] if x else []


def cumsum_signatures(x, dim, dtype=None, x_dtype=None) -> list[Signature]:
    x = scan_shapes(x, dim)["x"]
    linear = x_dtype is not None and as_data_type(x_dtype, "x") in FLOATING_TYPES and dtype is None
    return _splits(x, dim) + _continued(x, dim) + ([signature(P, x=P)] if linear else []) + [signature(B, x=B)]


def continued_signatures(x, dim, dtype=None, x_dtype=None) -> list[Signature]:
    x = scan_shapes(x, dim)["x"]
    return _splits(x, dim) + _continued(x, dim) + [signature(B, x=B)]


def attributes(slices, x, dim, **others) -> dict:
    """dim, dtype and x's dtype: the same on every rank (a part of a split dim is scanned as a whole
    one, then continued)."""
    return {"dim": dim, **others}


def _exclusive(total: np.ndarray, name: str, comm) -> np.ndarray:
    """The totals of the ranks before this one in comm's order, combined by the scan's op: MPI's
    Exscan, or an all-gather where MPI has no such reduction (collective on comm); the identity on
    the first rank."""
    from mpi4py import MPI

    op, identity, reduction = CONTINUED[name]
    before = np.full(total.shape, identity, total.dtype)
    if reduction is None:
        for (given,) in all_gather_parts([total], total.shape, [total.dtype], comm)[: comm.Get_rank()]:
            before = getattr(np, op)(before, given)
        return before
    comm.Exscan(total, before, op=getattr(MPI, reduction))
    if comm.Get_rank() == 0:  # Exscan leaves the first rank's result undefined
        before.fill(identity)
    return before


def _continued_run(name: str, x, dim: int, out_dtype: np.dtype):
    """A rank's run of cumsum or cumprod: its part scanned, and where x is split on dim, continued
    from the parts before it (the last element of each scanned part is its total)."""
    op, identity, _ = CONTINUED[name]
    group, device = x._group, device_name(x.placement)
    # Totals travel as uint64 for integers and bool (C's unsigned arithmetic wraps as NumPy's does;
    # its signed overflow is undefined), as float64 for floats (combined with one rounding, and MPI
    # has no float16 or bfloat16).
    wire = np.dtype(np.uint64 if out_dtype.kind in "biu" else np.float64)

    def run(local, piece):
        axes = splitting(piece, "x", (dim,))
        if not axes:
            return run_piece(name, local, piece, out_dtype, device)
        shape = piece.shapes["out"]
        error, out, total = None, None, np.full(shape[:dim] + (1,) + shape[dim + 1:], identity, wire)
        try:
            out = run_piece(name, local, piece, out_dtype, device)
            if shape[dim]:
                total = np.ascontiguousarray(to_host(out[(slice(None),) * dim + (slice(shape[dim] - 1, None),)]), wire)
        except Exception as e:  # still in the Exscan below, so that no rank waits for this one
            error = e
        before = _exclusive(total, name, group.over(axes))
        if error is not None:
            raise error
        if out.size:
            binary(op, out, to_device(before.astype(out_dtype), x.placement.device_type), out=out)
        return out

    return run


def _plan(name: str, dtypes):
    def plan(x, dim, dtype=None) -> Plan:
        x = global_tensors(x=x)["x"]
        d = _dim(tuple(x.shape), dim)
        attrs = {"dim": dim, "dtype": dtype, "x_dtype": as_data_type(x.dtype, "x").value}
        out_dtype = dtypes(x.dtype, dtype).dtype
        run = _continued_run(name, x, d, np.dtype(out_dtype)) if name in CONTINUED else None
        return Plan({"x": x}, attrs, out_dtype, run=run)

    return plan


# cummax's and cummin's rule for a later value against an earlier one: the later wins where it is
# NaN, or where the earlier is not and it is at least (most) as large (small).
BETTER = {"cummax": operator.ge, "cummin": operator.le}


def _continues(better):
    def step(later, later_index, earlier, earlier_index):
        take = (later != later) | ((earlier == earlier) & better(later, earlier))
        return where(take, later, earlier), where(take, later_index, earlier_index)

    return fuse(step)


CONTINUE = {name: _continues(better) for name, better in BETTER.items()}


def extremes_shapes(x, dim) -> dict:
    x = scan_shapes(x, dim)["x"]
    return {"x": x, "out[0]": x, "out[1]": x}


def extremes_signatures(x, dim) -> list[Signature]:
    x = scan_shapes(x, dim)["x"]
    both = [Signature(s.inputs, {"out[0]": s["out"], "out[1]": s["out"]}) for s in _splits(x, dim) + _continued(x, dim)]
    return both + [Signature({"x": B}, {"out[0]": B, "out[1]": B})]


def _extremes_plan(name: str):
    function = {"cummax": cummax, "cummin": cummin}[name]

    def plan(x, dim) -> Plan:
        x = global_tensors(x=x)["x"]
        d = _dim(tuple(x.shape), dim)
        dtypes = (x.dtype, np.dtype(np.int64))
        group = x._group

        def run(local, piece):
            axes = splitting(piece, "x", (d,))
            if not axes:
                return function(local["x"], d)
            error, result, parts = None, None, None
            try:
                result = function(local["x"], d)
                start, n = piece.slices["x"][d].start, piece.shapes["x"][d]
                if n:
                    binary("add", result.indices, start, out=result.indices)
                    last = (slice(None),) * d + (slice(n - 1, None),)
                    parts = [to_host(result.values[last]), to_host(result.indices[last])]
            except Exception as e:  # still in the all-gather below, so that no rank waits for this one
                error = e
            edge = piece.shapes["x"][:d] + (1,) + piece.shapes["x"][d + 1:]
            before = _before(name, parts, edge, dtypes, group.over(axes))
            if error is not None:
                raise error
            if before is not None and math.prod(piece.shapes["x"]):
                device_type = x.placement.device_type
                CONTINUE[name](result.values, result.indices, to_device(before[0], device_type), to_device(before[1], device_type),
                               out=(result.values, result.indices))
            return result

        return Plan({"x": x}, {"dim": dim}, dtypes, run=run)

    return plan


def _before(name: str, parts, edge: tuple[int, ...], dtypes, comm):
    """The running extreme (values, indices) of the parts before this rank's in comm's order, from
    each rank's last values and indices (parts; None for a rank without any), or None where no
    part comes before (collective on comm)."""
    better, found = BETTER[name], None
    for given in all_gather_parts(parts, edge, dtypes, comm)[: comm.Get_rank()]:
        if given is None:
            continue
        value, index = given
        if found is None:
            found = [value.copy(), index.copy()]
            continue
        take = (value != value) | ((found[0] == found[0]) & better(value, found[0]))
        found = [np.where(take, value, found[0]), np.where(take, index, found[1])]
    return found


def _run(op):
    def run(args, attrs, **options):
        extra = {"dtype": attrs["dtype"]} if attrs.get("dtype") is not None else {}
        return op(args["x"], attrs["dim"], **extra, **options)

    return run


RULES = {
    "cumsum": OpRule(_plan("cumsum", lambda t, d: accumulating_dtypes(t, d)[1]), cumsum_signatures, scan_shapes, attributes, _run(cumsum)),
    "cumprod": OpRule(_plan("cumprod", lambda t, d: accumulating_dtypes(t, d)[1]), continued_signatures, scan_shapes, attributes, _run(cumprod)),
    "logcumsumexp": OpRule(_plan("logcumsumexp", lambda t, d: floating_dtype(t)), continued_signatures, scan_shapes, attributes, _run(logcumsumexp)),
    **{
        name: OpRule(_extremes_plan(name), extremes_signatures, extremes_shapes, attributes, lambda args, attrs, f=f, **options: f(args["x"], attrs["dim"], **options))
        for name, f in (("cummax", cummax), ("cummin", cummin))
    },
}
register_rules(RULES)
