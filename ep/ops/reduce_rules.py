"""The declarations of the reductions (sum, prod, mean, amax, amin, argmax, argmin, any, all,
logsumexp, var, std, norm) for global tensors: the local ops' dtype rules and dim checks, and SBP
rules.

A dim the reduction keeps may be split: x split there gives the result split on that dim's place
in the result. sum is linear: x split on a reduced dim gives each rank the sum of its part, a
partial sum of the result (S -> P; integers too, whose int64 sums add exactly, wrapping), and a
partial sum of a float x passes through (P -> P); mean is linear too (over a split dim each part's
sum divided by the whole count). prod, amax, amin, any, all, logsumexp, argmax and argmin over a
split dim (S -> B) finish on every rank from the results of the ranks that split it: gathered (a
message of the result's size; argmax's with each part's maximum) and combined as the local
reduction combines them, a NaN winning a max and +0.0 above -0.0 (MPI's MAX would drop the NaN,
and MPI has no float16); var and std from each part's count, mean and sum of squared deviations
(Chan's formula, in float64), norm from each part's norm. Every reduction but sum and mean of a
partial sum takes x boxed first.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ep.common.runtime.data_type import FLOATING_TYPES, as_data_type
from ep.include.primitive.reduce import ReduceOp
from ep.ops import reduce as reductions
from ep.ops.binary import binary
from ep.ops.reduce import (
    MISSING, check_reduction, dim_keepdim, norm_dtype, norm_order, reduce_dtypes, reduced_dims, reduced_shape, torch_dim, var_correction,
)
from ep.ops.unary import unary
from ep.sbp.boxing import all_gather_parts, to_device, to_host
from ep.sbp.global_ops import global_tensors
from ep.sbp.global_tensor import device_name
from ep.sbp.local import run_piece, splitting
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature

# The reductions by ep.ops name, and whether dim is one int (or None: of x flattened).
OPS = {op.value: op for op in ReduceOp}
SINGLE = ("argmax", "argmin")


def _maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754's maximum, as the local amax: a NaN wins, +0.0 is above -0.0 (np.maximum takes the
    second of two zeros; the sum of two zeros is +0.0 unless both are -0.0)."""
    if a.dtype.kind != "f":
        return np.maximum(a, b)
    return np.where((a == 0) & (b == 0), a + b, np.maximum(a, b))


def _minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE 754's minimum, as the local amin: a NaN wins, -0.0 is below +0.0."""
    if a.dtype.kind != "f":
        return np.minimum(a, b)
    return np.where((a == 0) & (b == 0), -(-a - b), np.minimum(a, b))


# The reductions that finish over a split dim from the ranks' results: how two combine (as the local
# reduction would), and argmax's and argmin's comparison of their parts' maxima and minima.
COMBINED = {"prod": np.multiply, "amax": _maximum, "amin": _minimum, "any": np.logical_or, "all": np.logical_and, "logsumexp": np.logaddexp}
INDEXED = {"argmax": ("amax", np.greater), "argmin": ("amin", np.less)}
# The reductions that finish from statistics of the parts: var's and std's (count, mean, sum of
# squared deviations), norm's part norms.
MOMENTS = ("var", "std")
FINISHED = (*COMBINED, *INDEXED, *MOMENTS, "norm")


def _result_dtype(name: str, x_dtype, dtype):
    if name == "norm":
        return norm_dtype(x_dtype, dtype)
    return reduce_dtypes(OPS[name], as_data_type(x_dtype, "x"), dtype)[1]


def _dims(name: str, ndim: int, dim) -> tuple[int, ...]:
    """The dims name reduces of an x of ndim dims, read as the op reads dim (dim=() included)."""
    return reduced_dims(ndim, torch_dim(dim, name), name in SINGLE)


def _plan(name: str):
    def plan(x, dim=None, keepdim=False, dtype=None, axis=MISSING, keepdims=MISSING, **extra) -> Plan:
        x = global_tensors(x=x)["x"]
        dim, keepdim = dim_keepdim(dim, keepdim, axis, keepdims, name)
        if name in MOMENTS:
            correction = var_correction(extra.pop("correction", None), extra.pop("unbiased", None))
            extra = {**extra, "correction": correction}
        dims = reduced_dims(len(x.shape), dim, name in SINGLE)
        if name in OPS:
            check_reduction(OPS[name], tuple(x.shape), dims, dim)
        elif name == "norm":
            norm_order(extra.get("p", 2), tuple(x.shape), dim)
        if name in SINGLE and dim is not None:
            dim = dims[0] if dims else dim
        elif dim is not None:
            dim = dims
        attrs = {"dim": dim, "keepdim": keepdim, "dtype": dtype, "x_dtype": as_data_type(x.dtype, "x").value, **extra}
        out_dtype = np.dtype(_result_dtype(name, x.dtype, dtype).dtype)
        run = _finished_run(name, x, dims, out_dtype, attrs) if name in FINISHED else None
        return Plan({"x": x}, attrs, out_dtype, run=run)

    return plan


def _shapes(name: str):
    def shapes(x, dim=None, keepdim=False, dtype=None, x_dtype=None, **extra) -> dict:
        x = shape(x, "x")
        return {"x": x, "out": reduced_shape(x, _dims(name, len(x), dim), keepdim)}

    return shapes


def _signatures(name: str):
    def signatures(x, dim=None, keepdim=False, dtype=None, x_dtype=None, **extra) -> list[Signature]:
        x = shape(x, "x")
        dims = _dims(name, len(x), dim)
        kept = [d for d in range(len(x)) if d not in dims]
        sigs = [signature(S(d if keepdim else kept.index(d)), x=S(d)) for d in kept]
        # (An empty reduction has no parts to combine: its x goes whole.)
        nonempty = all(x[d] for d in dims)
        # (A mean over no elements is NaN: a partial sum of pieces from none would give 0.)
        linear = name == "sum" or name == "mean" and nonempty
        if linear:
            sigs += [signature(P, x=S(d)) for d in dims]
        elif name in FINISHED and nonempty:
            sigs += [signature(B, x=S(d)) for d in dims]
        if linear and x_dtype is not None and as_data_type(x_dtype, "x") in FLOATING_TYPES and dtype is None:
            sigs.append(signature(P, x=P))
        return sigs + [signature(B, x=B)]

    return signatures


def attributes(slices, x, **attrs) -> dict:
    """The attributes, the same on every rank (a split dim keeps its place)."""
    return attrs


def mean_attributes(slices, x, **attrs) -> dict:
    """mean's attributes, and over a split dim its divisor: the whole count, not the part's."""
    dims = reduced_dims(len(x), attrs["dim"])
    count = math.prod(x[d] for d in dims)
    if count != math.prod(slices["x"][d].stop - slices["x"][d].start for d in dims):
        return {**attrs, "divisor": count}
    return attrs


def _run(name: str):
    function = getattr(reductions, name)

    def run(args, attrs, **options):
        extra = {k: v for k, v in attrs.items() if k not in ("x_dtype", "divisor")}
        if name == "mean" and "divisor" in attrs:
            # A part of a mean over a split dim: its sum over the whole count.
            total = reductions.sum(args["x"], **extra, **options)
            return binary("div", total, attrs["divisor"], out=total)
        return function(args["x"], **extra, **options)

    return run


def _finished_run(name: str, x, dims: tuple[int, ...], out_dtype: np.dtype, attrs: dict):
    """A rank's run of a reduction in FINISHED: its part reduced and, where x is split on a reduced
    dim, combined with the results of the ranks that split it (one all-gather)."""
    group, device = x._group, device_name(x.placement)
    # What each rank gives: its result, argmax's maxima (in x's dtype, or dtype=) and indices, var's
    # count, mean and sum of squared deviations, norm's norm (in float64).
    values = x.dtype if attrs["dtype"] is None else as_data_type(attrs["dtype"], "dtype").dtype
    dtypes = {"argmax": [np.dtype(values), np.dtype(np.int64)], "argmin": [np.dtype(values), np.dtype(np.int64)],
              "var": [np.dtype(np.float64)] * 3, "std": [np.dtype(np.float64)] * 3, "norm": [np.dtype(np.float64)]}.get(name, [out_dtype])

    def run(local, piece):
        axes = splitting(piece, "x", dims)
        if not axes or not math.prod(piece.shapes["out"]):
            return run_piece(name, local, piece, out_dtype, device)
        error, parts = None, None
        try:
            # A rank holding none of the reduced dims has no part to give (its max has no value).
            if math.prod(piece.shapes["x"]):
                parts = _parts(name, local, piece, out_dtype, dims, tuple(x.shape), device)
        except Exception as e:  # still in the all-gather below, so that no rank waits for this one
            error = e
        result = np.asarray(_combined(name, parts, piece.shapes["out"], dtypes, group.over(axes), attrs), out_dtype)
        if error is not None:
            raise error
        return to_device(result, x.placement.device_type)

    return run


def _parts(name: str, local: dict, piece, out_dtype: np.dtype, dims, logical: tuple[int, ...], device: str) -> list[np.ndarray]:
    """What a rank gives to the combination: its result on the host; argmax's and argmin's as the
    indices into the whole x, after the maxima (minima) they index; var's and std's count, mean and
    sum of squared deviations."""
    if name in MOMENTS:
        return _moments(local["x"], piece, dims)
    result = to_host(run_piece(name, local, piece, out_dtype, device))
    if name not in INDEXED:
        return [result]
    attrs = piece.attributes
    values = to_host(getattr(reductions, INDEXED[name][0])(local["x"], attrs["dim"], attrs["keepdim"], dtype=attrs["dtype"]))
    box = piece.slices["x"]
    if attrs["dim"] is None:  # a flat index into the piece, as one into x
        at = np.unravel_index(result, piece.shapes["x"])
        result = np.ravel_multi_index(tuple(i + b.start for i, b in zip(at, box)), logical).astype(np.int64)
    else:
        result = result + box[dims[0]].start
    return [values.reshape(result.shape), result]


def _moments(x, piece, dims) -> list[np.ndarray]:
    """A part's count, mean and sum of squared deviations over dims, on the host in float64 (float16
    and bfloat16 parts computed in float32)."""
    attrs = piece.attributes
    if np.dtype(x.dtype).itemsize < 4:
        x = unary("cast", x, dtype=np.float32)
    mean = _wire(to_host(reductions.mean(x, attrs["dim"], attrs["keepdim"])))
    count = math.prod(piece.shapes["x"][d] for d in dims)
    squares = _wire(to_host(reductions.var(x, attrs["dim"], correction=0, keepdim=attrs["keepdim"]))) * count
    return [np.full(mean.shape, count, np.float64), mean, squares]


def _wire(values: np.ndarray) -> np.ndarray:
    """values in a dtype NumPy combines them in exactly or with one rounding (float16's and
    bfloat16's in float64)."""
    return values.astype(np.float64) if values.dtype.kind not in "biu" else values


def _combined(name: str, parts: list[np.ndarray] | None, shape: tuple[int, ...], dtypes: list[np.dtype], comm, attrs: dict) -> np.ndarray:
    """The result of the ranks of comm (collective on it) from each one's parts, of dtypes (None
    for a rank without any), combined in comm's order."""
    decoded = [p for p in all_gather_parts(parts, shape, dtypes, comm) if p is not None]
    if name in MOMENTS:
        return _variance(decoded, attrs.get("correction", 1), name == "std")
    if name == "norm":
        return _norm(np.stack([_wire(v[0]) for v in decoded]), attrs.get("p", 2))
    if name not in INDEXED:
        return functools.reduce(COMBINED[name], [_wire(v[0]) for v in decoded])
    better = INDEXED[name][1]
    best_value, best_index = _wire(decoded[0][0]), decoded[0][1].copy()
    for value, index in decoded[1:]:
        value = _wire(value)
        nan, best_nan = value != value, best_value != best_value
        # A NaN wins (the first one's index), then the greater (less) value, then the first index.
        tie = ((value == best_value) | (nan & best_nan)) & (index < best_index)
        take = (nan & ~best_nan) | (~nan & ~best_nan & better(value, best_value)) | tie
        best_value, best_index = np.where(take, value, best_value), np.where(take, index, best_index)
    return best_index


def _variance(parts: list, correction: float, root: bool) -> np.ndarray:
    """var (or std, root) from the parts' (count, mean, sum of squared deviations), merged in order
    by Chan's formula."""
    count, mean, squares = (np.array(v, np.float64) for v in parts[0])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for n, m, q in parts[1:]:
            total = count + n
            delta = m - mean
            mean = mean + delta * (n / total)
            squares = squares + q + delta * delta * (count * n / total)
            count = total
        result = squares / np.maximum(count - correction, 0)
    return np.sqrt(result) if root else result


def _norm(norms: np.ndarray, p: float) -> np.ndarray:
    """The p-norm of the parts' p-norms (stacked along axis 0): their max, min or sum for p = inf,
    -inf or 0; else scaled by the largest, so that no power overflows."""
    p = 2.0 if p == "fro" else float(p)
    if p == math.inf:
        return norms.max(0)
    if p == -math.inf:
        return norms.min(0)
    if p == 0:
        return norms.sum(0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if p < 0:
            return (norms ** p).sum(0) ** (1 / p)
        largest = norms.max(0)
        scale = np.where((largest > 0) & np.isfinite(largest), largest, 1.0)
        result = scale * ((norms / scale) ** p).sum(0) ** (1 / p)
        return np.where(np.isinf(largest) | (largest != largest), largest, result)


RULES = {
    name: OpRule(_plan(name), _signatures(name), _shapes(name), mean_attributes if name == "mean" else attributes, _run(name))
    for name in ("sum", "prod", "mean", "amax", "amin", "argmax", "argmin", "any", "all", "logsumexp", "var", "std", "norm")
}
register_rules(RULES)
