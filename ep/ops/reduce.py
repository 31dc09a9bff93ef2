"""ep.ops.sum, prod, mean, amax, amin, argmax, argmin, any, all, logsumexp, var, std and norm:
PyTorch's reductions (NumPy's axis= and keepdims= also taken), then the Reduce primitive.

Dtypes are PyTorch's: sum and prod of integers and bool give int64; mean, var and std refuse them
(as torch does: pass dtype= a float dtype); logsumexp computes them in float32; argmax and argmin
give int64, any and all bool (uint8 of uint8). dtype= casts x to it first (PyTorch's rule), for
every function. An out= of another dtype is refused, except a floating out of mean, var and std
(torch's rule: mean as if dtype= were out's; var and std cast their result). dim=() is torch's
too: every dim for sum, mean, amax, amin, var, std, logsumexp and norm, none for prod, any and
all; NumPy's axis=() reduces none.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from ep.common.primitive.operands import CPU, check_out, contiguous, device_of, stream_for, unaliased
from ep.common.primitive.reduce import INDEX_OPS, NO_IDENTITY, reduction_stages, staged
from ep.common.runtime.allocator import empty
from ep.common.runtime.data_type import FLOATING_TYPES, HALF_TYPES, DataType, as_data_type
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.validate import integer
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.reduce import ReduceFactory, ReduceOp
from ep.ops.arrays import same_kind


class _Missing:
    """The default of NumPy's axis= and keepdims=, which help() shows as not given."""

    def __repr__(self) -> str:
        return "<not given>"


MISSING = _Missing()


# The reductions whose torch form reads dim=() (no dim named) as every dim, an early rule of its
# reductions; the others (any, all, and prod, whose torch form takes one int) and NumPy's axis=()
# reduce none.
_EMPTY_DIM_IS_EVERY = frozenset({"sum", "mean", "amax", "amin", "var", "std", "logsumexp", "norm"})


def torch_dim(dim, name: str):
    """dim, or None (every dim) where it names none and torch.name reads that as every dim."""
    return None if type(dim) in (tuple, list) and not dim and name in _EMPTY_DIM_IS_EVERY else dim


def dim_keepdim(dim, keepdim, axis, keepdims, name: str) -> tuple[object, object]:
    """(dim, keepdim) of the reduction name from PyTorch's names or NumPy's aliases, not both; dim
    None for every dim."""
    if axis is MISSING and keepdims is MISSING and type(keepdim) is bool:
        return torch_dim(dim, name), keepdim  # the common call, at once
    if axis is not MISSING:
        if dim is not None:
            raise TypeError("dim, axis: both given; axis is NumPy's name for dim, pass one")
        dim = axis
    else:
        dim = torch_dim(dim, name)
    if keepdims is not MISSING:
        if keepdim is not False:
            raise TypeError("keepdim, keepdims: both given; keepdims is NumPy's name for keepdim, pass one")
        keepdim = keepdims
    if not isinstance(keepdim, (bool, np.bool_)):
        raise TypeError(f"keepdim: {type(keepdim).__name__} {keepdim!r} is not a bool")
    return dim, bool(keepdim)


def reduced_dims(ndim: int, dim: object, single: bool = False) -> tuple[int, ...]:
    """dim (None: every dim; an int; or, unless single, a sequence of ints, negative ones counted
    from the end) as sorted non-negative dims; a 0-d array takes 0 and -1, as PyTorch's do."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if single:
            raise TypeError(f"dim: {type(dim).__name__} {dim!r}; expected one int or None")
        dims = [integer(d, f"dim[{i}]") for i, d in enumerate(dim)]
    else:
        dims = [integer(dim, "dim")]
    bound = max(ndim, 1)
    normalized = []
    for d in dims:
        if not -bound <= d < bound:
            raise np.exceptions.AxisError(d, ndim, "dim")
        normalized.append(d % bound)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"dim: {dim!r} names a dim twice")
    return tuple(sorted(normalized)) if ndim else ()


def reduced_shape(shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    """The shape of reducing shape over dims: 1 there (keepdim) or those dims left out."""
    if keepdim:
        return tuple(1 if d in dims else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in dims)


def refuse_empty_dims(what: str, shape: tuple[int, ...], dims: tuple[int, ...]) -> None:
    """ValueError naming the first of dims of size 0: what (a reduction without an identity) has no value there."""
    for d in dims:
        if shape[d] == 0:
            raise ValueError(f"dim: {what} over dim {d} of size 0 (x.shape {shape}); an empty reduction has no identity")


def check_reduction(op: ReduceOp, shape: tuple[int, ...], dims: tuple[int, ...], dim: object) -> None:
    """ValueError naming the dim where op has no value: over an empty dim without an identity, or
    an index of an empty array."""
    if op in NO_IDENTITY:
        refuse_empty_dims(op.value, shape, dims)
        if op in (ReduceOp.kArgMax, ReduceOp.kArgMin) and dim is None and not math.prod(shape):
            raise ValueError(f"x: {op.value} of an empty array (x.shape {shape}) has no index")


def _permuted_layout(shape: tuple[int, ...], dims: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    """(src_dims, dst_dims, order) of reducing shape over dims apart in one Reduce, which takes one
    run of reduced dims: order puts the kept dims first and the reduced ones after (the input
    permuted by it has src_dims)."""
    order = [d for d in range(len(shape)) if d not in dims] + list(dims)
    return tuple(shape[d] for d in order), tuple(1 if d in dims else shape[d] for d in order), order


def run_stages(stream, stages, x, out, dst: DataType, device, correction) -> None:
    """Each launch (primitive, src_dims, dst_dims) of stages on the last one's result (dst
    elements), the first on x, the last into out."""
    for primitive, src_dims, dst_dims in stages[:-1]:
        partial = empty(dst_dims, dst, device, stream)
        primitive.launch_trusted(stream, src_dims, x, dst_dims, partial, correction)
        x = partial
    primitive, src_dims, dst_dims = stages[-1]
    primitive.launch_trusted(stream, src_dims, x, dst_dims, out, correction)


def reduce_dtypes(op: ReduceOp, x_dtype: DataType, dtype: object) -> tuple[DataType, DataType]:
    """(the dtype x is reduced in, the result's dtype) of op, PyTorch's rules."""
    src = x_dtype if dtype is None else as_data_type(dtype, "dtype")
    if op in (ReduceOp.kSum, ReduceOp.kProd):
        return src, (DataType.kInt64 if src not in FLOATING_TYPES and dtype is None else src)
    if op in (ReduceOp.kArgMax, ReduceOp.kArgMin):
        return src, DataType.kInt64
    if op in (ReduceOp.kAny, ReduceOp.kAll):
        return src, (DataType.kUInt8 if src is DataType.kUInt8 else DataType.kBool)
    if op is ReduceOp.kLogSumExp and src not in FLOATING_TYPES:
        return DataType.kFloat, DataType.kFloat
    if op in (ReduceOp.kMean, ReduceOp.kVar, ReduceOp.kStd) and src not in FLOATING_TYPES:
        name = "dtype" if dtype is not None else "x"
        raise TypeError(
            f"{name}: {op.value} of {src.value} is not computed (as torch.{op.value} refuses it); expected a floating"
            " dtype: pass dtype=np.float32 or np.float64"
        )
    return src, src


class _Rule(NamedTuple):
    """What a reduction's arguments other than the arrays make: the dtype x is reduced in (None:
    x's own), the permutation x takes first (None: none), its launches (primitive, src_dims,
    dst_dims) in order, each reducing the last one's result, the result's shapes (shapes[keepdim]:
    the reduced dims left out, or kept as 1) and its dtype. keepdim is no part of the rule's key:
    a key with a bool costs exact_key a tuple built anew, a third of a tiny sum's time."""

    src: DataType | None
    order: list[int] | None
    stages: tuple[tuple[object, tuple[int, ...], tuple[int, ...]], ...]
    shapes: tuple[tuple[int, ...], tuple[int, ...]]
    dst: DataType


def reduction_rule(first, op: ReduceOp, device, dst: DataType, dim, shape: tuple[int, ...]) -> tuple:
    """(the permutation x takes first or None, the launches (primitive, src_dims, dst_dims) in
    order, each reducing the last one's result, the result's shapes (shapes[keepdim])) of op over
    dim of an array of shape into dst: first (a Reduce, or ep.fuse's ReduceFused) reads x, a Reduce
    of dst each further run of dims apart."""
    dims = reduced_dims(len(shape), dim, single=op in INDEX_OPS)  # argmax's dim is one int
    check_reduction(op, shape, dims, dim)
    order, layouts = None, reduction_stages(shape, dims)
    if len(layouts) <= 1:  # one run of reduced dims (or none: the launch copies x)
        layouts = ((shape, reduced_shape(shape, dims, True)),)
    elif not staged(op, dst):
        src_dims, dst_dims, order = _permuted_layout(shape, dims)
        layouts = ((src_dims, dst_dims),)
    again = NewPrimitive(ReduceFactory, device, op, dst, dst) if len(layouts) > 1 else None
    stages = tuple((first if k == 0 else again, *layout) for k, layout in enumerate(layouts))
    return order, stages, (reduced_shape(shape, dims, False), reduced_shape(shape, dims, True))


def _rule(op: ReduceOp, device, x_dtype, dtype, shape: tuple[int, ...], dim) -> _Rule:
    x_dtype = as_data_type(x_dtype, "x")
    src, dst = reduce_dtypes(op, x_dtype, dtype)
    primitive = NewPrimitive(ReduceFactory, device, op, src, dst)
    if primitive is None:
        if src is not x_dtype:  # dtype= casts x first
            raise TypeError(f"dtype: {op.value} into {dst.value} is not supported (x, {x_dtype.value}, would be cast to {src.value} first)")
        raise TypeError(f"x: {op.value} of {src.value} into {dst.value} is not supported")
    return _Rule(None if src is x_dtype else src, *reduction_rule(primitive, op, device, dst, dim, shape), dst)


# Keyed by the call's own arguments, so a repeated call skips every derivation. The last lookup's
# arguments are remembered: a call repeating them (the same objects, an equal shape) skips the
# exact key, most of a tiny sum's lookup.
_RULES = PlanCache(_rule, remember=6)


def _reduce(op: ReduceOp, x, dim, keepdim, dtype, out, stream, correction=1):
    """op over x's dims dim into a new array (or out); the work of every function here."""
    device = CPU if type(x) is np.ndarray else device_of(x, "x")
    shape = x.shape
    last = _RULES.last
    if last[4] == shape and last[0] is op and last[1] is device and last[2] is x.dtype and last[3] is dtype and last[5] is dim:
        rule = last[6]
    else:
        try:
            rule = _RULES.get(op, device, x.dtype, dtype, shape, dim)
        except TypeError:  # dims no cache keys (a list, an array), or the rule's own refusal: made anew
            rule = _rule(op, device, x.dtype, dtype, shape, dim)
    if out is not None and op in _INTO_OTHER_FLOAT and dtype is None and _other_float(out, rule.dst):
        return _into_other_float(op, x, dim, keepdim, out, stream, correction)
    stream = device.default_stream if stream is None else stream_for(device, stream)
    if rule.src is not None:
        from ep.ops.unary import unary

        x = unary("cast", x, dtype=rule.src.dtype, stream=stream)
    elif not (type(x) is np.ndarray and (flags := x.flags).c_contiguous and flags.aligned):
        # plain(x) inline, less its byte order, which _rule refused unless native.
        x = contiguous(x, device, stream)
    if rule.order is not None:
        from ep.ops.permute import permute

        x = permute(x.reshape(shape), rule.order, stream=stream)
    if out is None:
        out = empty(rule.shapes[keepdim], rule.dst, device, stream)
    else:
        out = check_out(out, "out", rule.shapes[keepdim], rule.dst, device)
        x = unaliased(x, out, device, stream)
    run_stages(stream, rule.stages, x, out, rule.dst, device, correction)
    return out


# torch's mean, var and std write a floating x's result into an out= of another floating dtype;
# its other reductions refuse that out (as ep's do, by check_out).
_INTO_OTHER_FLOAT = frozenset({ReduceOp.kMean, ReduceOp.kVar, ReduceOp.kStd})
_FLOATS = frozenset(t.dtype for t in FLOATING_TYPES)


def _other_float(out, dst: DataType) -> bool:
    """Whether out is an array of a floating dtype other than dst (anything else: check_out's to refuse)."""
    given = getattr(out, "dtype", None)
    return isinstance(given, np.dtype) and given != dst.dtype and given in _FLOATS


def _into_other_float(op: ReduceOp, x, dim, keepdim, out, stream, correction):
    """op of x into out of another floating dtype, as torch 2.13 does it: mean as if dtype= were
    out's, var and std in their own dtype and then cast."""
    if op is ReduceOp.kMean:
        return _reduce(op, x, dim, keepdim, out.dtype, out, stream, correction)
    from ep.ops.unary import unary

    return unary("cast", _reduce(op, x, dim, keepdim, None, None, stream, correction), dtype=out.dtype, out=out, stream=stream)


def _reduction(op: ReduceOp, name: str, doc: str):
    """The ep.ops function name: op over x's dim (one int for argmax and argmin), PyTorch's signature."""

    def reduction(x, dim=None, keepdim=False, *, dtype=None, out=None, axis=MISSING, keepdims=MISSING, stream=None):
        dim, keepdim = dim_keepdim(dim, keepdim, axis, keepdims, name)
        return _reduce(op, x, dim, keepdim, dtype, out, stream)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = doc
    return same_kind("x")(reduction)


sum = _reduction(
    ReduceOp.kSum, "sum",
    """The sum of x over dim (None: every dim), as torch.sum: integers and bool give int64; float
    sums are compensated (at least as accurate as NumPy's pairwise ones), float16 adds in float32;
    an empty sum is 0.""",
)
prod = _reduction(
    ReduceOp.kProd, "prod",
    """The product of x over dim, as torch.prod: integers and bool give int64 (wrapping); an empty product is 1.""",
)
mean = _reduction(
    ReduceOp.kMean, "mean",
    """The mean of x over dim, as torch.mean: floating dtypes only (integers and bool are refused
    with TypeError, as torch refuses them, where NumPy would give float64: pass dtype=); an empty
    mean is NaN.""",
)
amax = _reduction(
    ReduceOp.kMax, "amax",
    """The maximum of x over dim, as torch.amax: NaN if any is NaN, +0.0 of zeros of both signs
    (IEEE 754's maximum, in any order); ValueError naming the dim for an empty one.""",
)
amin = _reduction(
    ReduceOp.kMin, "amin",
    """The minimum of x over dim, as torch.amin: NaN if any is NaN, -0.0 of zeros of both signs
    (IEEE 754's minimum, in any order); ValueError naming the dim for an empty one.""",
)
argmax = _reduction(
    ReduceOp.kArgMax, "argmax",
    """The int64 index of the first maximum of x along dim (one int; None: of x flattened), as
    torch.argmax and np.argmax: the first NaN's where there is one.""",
)
argmin = _reduction(
    ReduceOp.kArgMin, "argmin",
    """The int64 index of the first minimum of x along dim (one int; None: of x flattened), the first NaN's where there is one.""",
)
any = _reduction(
    ReduceOp.kAny, "any",
    """Whether any element of x over dim is nonzero (NaN counts), as torch.any: bool, or 0 and 1 in uint8 for uint8.""",
)
all = _reduction(
    ReduceOp.kAll, "all",
    """Whether every element of x over dim is nonzero, as torch.all (bool; uint8 for uint8); true for an empty reduction.""",
)
logsumexp = _reduction(
    ReduceOp.kLogSumExp, "logsumexp",
    """log(sum(exp(x))) over dim without overflow, as torch.logsumexp (integers and bool in
    float32); -inf for an empty reduction.""",
)


def var_correction(correction, unbiased):
    """var's and std's correction: torch's correction= (None: 1) or its older unbiased= (True: 1,
    False: 0), not both."""
    if unbiased is None:
        return 1 if correction is None else correction
    if correction is not None:
        raise TypeError("correction, unbiased: both are given; expected one (torch's rule)")
    if not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"unbiased: {unbiased!r} is not a bool")
    return int(unbiased)


@same_kind("x")
def var(x, dim=None, *, correction=None, unbiased=None, keepdim=False, dtype=None, out=None, axis=MISSING, keepdims=MISSING, stream=None):
    """The variance of x over dim, as torch.var: the squared deviations' sum over max(0, n -
    correction) (correction=None: 1; or torch's unbiased=: 1 or 0) (Welford's, merged by Chan's
    formula); floating dtypes only (TypeError for integers, as torch)."""
    dim, keepdim = dim_keepdim(dim, keepdim, axis, keepdims, "var")
    return _reduce(ReduceOp.kVar, x, dim, keepdim, dtype, out, stream, var_correction(correction, unbiased))


@same_kind("x")
def std(x, dim=None, *, correction=None, unbiased=None, keepdim=False, dtype=None, out=None, axis=MISSING, keepdims=MISSING, stream=None):
    """The standard deviation of x over dim, as torch.std: the square root of var's (the same
    correction= or unbiased=)."""
    dim, keepdim = dim_keepdim(dim, keepdim, axis, keepdims, "std")
    return _reduce(ReduceOp.kStd, x, dim, keepdim, dtype, out, stream, var_correction(correction, unbiased))


def norm_dtype(x_dtype: object, dtype: object) -> DataType:
    """norm's result dtype: dtype, else x's; floating only (TypeError naming which, as torch refuses integers)."""
    result = as_data_type(x_dtype, "x") if dtype is None else as_data_type(dtype, "dtype")
    if result not in FLOATING_TYPES:
        raise TypeError(f"{'dtype' if dtype is not None else 'x'}: norm of {result.value} is not computed (as torch refuses it); expected a floating dtype")
    return result


def norm_order(p: object, shape: tuple[int, ...], dim: object) -> float:
    """norm's p as a float ("fro" is 2); ValueError for NaN, and naming the dim where p < 0 and a
    reduced dim is empty (torch's rule: sum(|x|**p)**(1/p) of no element has no identity)."""
    if p == "fro":
        p = 2
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real):
        raise TypeError(f"p: {type(p).__name__} {p!r} is not a real number (or 'fro')")
    p = float(p)
    if p != p:
        raise ValueError("p: is NaN; expected a real number")
    if p < 0 and not math.prod(shape):
        refuse_empty_dims(f"norm of order {p}", shape, reduced_dims(len(shape), dim))
    return p


@same_kind("x")
def norm(x, p=2, dim=None, keepdim=False, *, dtype=None, out=None, axis=MISSING, keepdims=MISSING, stream=None):
    """The vector p-norm of x over dim, as torch.linalg.vector_norm (and torch.norm, "fro" being
    p=2): sum(|x|**p)**(1/p); inf and -inf the largest and smallest |x|, 0 the count of nonzeros.
    Floating dtypes only (TypeError for integers, as torch); float16 is computed in float32."""
    from ep.ops.binary import binary
    from ep.ops.unary import unary

    dim, keepdim = dim_keepdim(dim, keepdim, axis, keepdims, "norm")
    p = norm_order(p, tuple(x.shape), dim)
    device = device_of(x, "x")
    result = norm_dtype(x.dtype, dtype)
    stream = stream_for(device, stream)
    compute = DataType.kFloat if result in HALF_TYPES else result
    if as_data_type(x.dtype, "x") is not compute:
        x = unary("cast", x, dtype=compute.dtype, stream=stream)
    magnitude = unary("abs", x, stream=stream)
    if p == math.inf or p == -math.inf:
        op = ReduceOp.kMax if p > 0 else ReduceOp.kMin
        reduced = _reduce(op, magnitude, dim, keepdim, None, None, stream)
    elif p == 0:
        nonzero = unary("cast", binary("ne", magnitude, 0, stream=stream), dtype=compute.dtype, stream=stream)
        reduced = _reduce(ReduceOp.kSum, nonzero, dim, keepdim, None, None, stream)
    elif p == 1:
        reduced = _reduce(ReduceOp.kSum, magnitude, dim, keepdim, None, None, stream)
    elif p == 2:
        reduced = unary("sqrt", _reduce(ReduceOp.kSum, binary("mul", magnitude, magnitude, stream=stream), dim, keepdim, None, None, stream), stream=stream)
    else:
        powered = binary("pow", magnitude, p, stream=stream)
        reduced = binary("pow", _reduce(ReduceOp.kSum, powered, dim, keepdim, None, None, stream), 1 / p, stream=stream)
    if out is None and reduced.dtype == result.dtype:
        return reduced
    return unary("cast", reduced, dtype=result.dtype, out=out, stream=stream)
