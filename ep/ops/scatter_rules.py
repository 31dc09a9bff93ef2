"""The declarations of index_add, scatter_add and scatter for global tensors: the local ops' checks
on metadata (index_add_rule, scatter_rule; index's values are checked by each rank's run on its
piece, the error shared), their dtype rule (the result has input's dtype) and SBP rules.

Every position of index writes along dim only: any other dim d splits the op where every tensor
that has input's size there splits with it. index_add: input and source split on d (source has
input's shape but along dim) with index broadcast; scatter_add and scatter: input, index and src
split on d where all three have input's size there (index and src may be smaller elsewhere: then
no split on d). A split on dim itself is not declared: such inputs are boxed to the cheapest
declared signature (ep.sbp.global_ops.choose). index_add and scatter_add (and scatter's
reduce="add" of a src array) are linear in input and source (src) together, so partial sums of
both with index broadcast give a partial sum: integers too (their sums wrap, which keeps them
linear modulo 2**bits), not bool (its sum is or, no count); scatter's reduce="multiply" is linear
in input alone (P input, B index and src); scatter's plain writes of a src array pick each
element from input or src, so partial input and src give a partial result.
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.scalar import is_scalar
from ep.ops.scatter import index_add, index_add_alpha, index_add_rule, index_dtype, scatter, scatter_add, scatter_rule, scatter_source
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


class _Meta:
    """A logical shape and dtype as the local ops' metadata checks read them."""

    def __init__(self, shape_: tuple[int, ...], dtype) -> None:
        self.shape, self.dtype = shape_, np.dtype(dtype)


def _summed(dtype) -> bool:
    """Whether a partial sum of dtype is a sum (not bool's or)."""
    return np.dtype(dtype).kind != "b"


def _sbp(tensor: tuple[int, ...], input_: tuple[int, ...], d: int):
    """A tensor's SBP when input splits at d: S(d) where it has input's size there (the ranks'
    pieces then match), else B."""
    return S(d) if len(tensor) == len(input_) and tensor[d] == input_[d] else B


# index_add(input, dim, index, source, alpha=1): source's slices added into input at index.


def _index_add_layout(input, index, source, dim, dtype) -> tuple[dict, int]:  # noqa: A002
    """The tensors' and the result's shapes, checked by index_add's rule, and dim as an axis."""
    shapes = {"input": shape(input, "input"), "index": shape(index, "index"), "source": shape(source, "source")}
    axis = index_add_rule(_Meta(shapes["input"], dtype), dim, _Meta(shapes["index"], np.int64), _Meta(shapes["source"], dtype))[0]
    return {**shapes, "out": shapes["input"]}, axis


def index_add_shapes(input, index, source, dim, alpha=1, dtype="float32") -> dict:  # noqa: A002
    return _index_add_layout(input, index, source, dim, dtype)[0]


def index_add_signatures(input, index, source, dim, alpha=1, dtype="float32") -> list[Signature]:  # noqa: A002
    """dtype: input's and source's (the result's)."""
    shapes, axis = _index_add_layout(input, index, source, dim, dtype)
    x = shapes["input"]
    sigs = [signature(S(d), input=S(d), index=B, source=_sbp(shapes["source"], x, d)) for d in range(len(x)) if d != axis]
    if _summed(dtype):
        sigs.append(signature(P, input=P, index=B, source=P))
    return sigs + [signature(B, input=B, index=B, source=B)]


def index_add_attributes(slices, input, index, source, dim, alpha=1, dtype="float32") -> dict:  # noqa: A002
    """dim and alpha: the same on every rank (each piece holds the whole of dim)."""
    return {"dim": dim, "alpha": alpha}


def index_add_plan(input, dim, index, source, alpha=1) -> Plan:  # noqa: A002
    """index_add's checks on the metadata (index's values are checked on each rank's piece)."""
    tensors = global_tensors(input=input, index=index, source=source)
    index_add_rule(input, dim, index, source)
    index_add_alpha(alpha, as_data_type(input.dtype, "input"))
    index_dtype(index)
    return Plan(tensors, {"dim": dim, "alpha": alpha, "dtype": input.dtype.name}, input.dtype)


# scatter_add(input, dim, index, src) and scatter(input, dim, index, src, reduce=None): src's
# elements combined into (written into) input where index names. scatter's src may be a scalar
# (torch's value=): then it is an attribute, value, and the op has no src tensor.


def _scatter_layout(input, index, src, dim, dtype) -> tuple[dict, int]:  # noqa: A002
    """The tensors' and the result's shapes, checked by scatter's rule, and dim as an axis."""
    shapes = {"input": shape(input, "input"), "index": shape(index, "index")}
    if src is not None:
        shapes["src"] = shape(src, "src")
    axis = scatter_rule(_Meta(shapes["input"], dtype), dim, _Meta(shapes["index"], np.int64), _Meta(shapes.get("src", shapes["index"]), dtype))[0]
    return {**shapes, "out": shapes["input"]}, axis


def _splits(shapes: dict, axis: int) -> list[Signature]:
    """S(d) for input, index and src (where given) and the result, for every d but axis where all
    have input's size."""
    x = shapes["input"]
    inputs = [n for n in ("input", "index", "src") if n in shapes]
    return [signature(S(d), **{n: S(d) for n in inputs}) for d in range(len(x)) if d != axis and all(_sbp(shapes[n], x, d) == S(d) for n in inputs)]


def _broadcast(shapes: dict) -> Signature:
    return signature(B, **{n: B for n in ("input", "index", "src") if n in shapes})


def scatter_add_shapes(input, index, src, dim, dtype="float32") -> dict:  # noqa: A002
    return _scatter_layout(input, index, src, dim, dtype)[0]


def scatter_add_signatures(input, index, src, dim, dtype="float32") -> list[Signature]:  # noqa: A002
    """dtype: input's and src's (the result's)."""
    shapes, axis = _scatter_layout(input, index, src, dim, dtype)
    partial = [signature(P, input=P, index=B, src=P)] if _summed(dtype) else []
    return _splits(shapes, axis) + partial + [_broadcast(shapes)]


def scatter_add_attributes(slices, input, index, src, dim, dtype="float32") -> dict:  # noqa: A002
    """dim: the same on every rank (each piece holds the whole of dim)."""
    return {"dim": dim}


def scatter_add_plan(input, dim, index, src) -> Plan:  # noqa: A002
    """scatter_add's checks on the metadata (index's values are checked on each rank's piece)."""
    tensors = global_tensors(input=input, index=index, src=src)
    _, index_shape = scatter_rule(input, dim, index, src)
    if math.prod(index_shape):
        index_dtype(index)
    return Plan(tensors, {"dim": dim, "dtype": input.dtype.name}, input.dtype)


def scatter_shapes(input, index, dim, src=None, value=None, reduce=None, dtype="float32") -> dict:  # noqa: A002
    """src: its shape, or None where the scatter writes value (a scalar)."""
    return _scatter_layout(input, index, src, dim, dtype)[0]


def scatter_signatures(input, index, dim, src=None, value=None, reduce=None, dtype="float32") -> list[Signature]:  # noqa: A002
    """dtype: input's (the result's). reduce=None of a src array picks each element from input or
    src, whatever their values: partial input and src give a partial result (not bool's); of a
    scalar value, none (each rank would write it). reduce="add" of a src array as scatter_add;
    reduce="multiply" scales input: P input, B others."""
    shapes, axis = _scatter_layout(input, index, src, dim, dtype)
    partial = []
    if "src" in shapes and _summed(dtype) and reduce in (None, "add"):
        partial = [signature(P, input=P, index=B, src=P)]
    elif _summed(dtype) and reduce == "multiply":
        partial = [signature(P, input=P, **{n: B for n in ("index", "src") if n in shapes})]
    return _splits(shapes, axis) + partial + [_broadcast(shapes)]


def scatter_attributes(slices, input, index, dim, src=None, value=None, reduce=None, dtype="float32") -> dict:  # noqa: A002
    """dim, value and reduce: the same on every rank (each piece holds the whole of dim)."""
    return {"dim": dim, "value": value, "reduce": reduce}


def scatter_plan(input, dim, index, src=None, value=None, reduce=None) -> Plan:  # noqa: A002
    """scatter's checks on the metadata (index's values are checked on each rank's piece; a split
    never puts one position's writes, repeats included, on two ranks); a scalar src is written as
    value, in input's dtype."""
    src = scatter_source(src, value)
    if reduce not in (None, "add", "multiply"):
        raise ValueError(f"reduce: {reduce!r}; expected None, 'add' or 'multiply' (torch's)")
    if is_scalar(src):
        tensors = global_tensors(input=input, index=index)
        meta = _Meta(tuple(index.shape), input.dtype)
        attrs = {"dim": dim, "value": src, "reduce": reduce, "dtype": input.dtype.name}
    else:
        tensors = global_tensors(input=input, index=index, src=src)
        meta = src
        attrs = {"dim": dim, "reduce": reduce, "dtype": input.dtype.name}
    _, index_shape = scatter_rule(input, dim, index, meta)
    if math.prod(index_shape):
        index_dtype(index)
    return Plan(tensors, attrs, input.dtype)


def _run_scatter(args, attrs, **options):
    src = args["src"] if "src" in args else attrs["value"]
    return scatter(args["input"], attrs["dim"], args["index"], src, reduce=attrs.get("reduce"), **options)


RULES = {
    "index_add": OpRule(index_add_plan, index_add_signatures, index_add_shapes, index_add_attributes,
                        lambda args, attrs, **options: index_add(args["input"], attrs["dim"], args["index"], args["source"], alpha=attrs.get("alpha", 1), **options)),
    "scatter_add": OpRule(scatter_add_plan, scatter_add_signatures, scatter_add_shapes, scatter_add_attributes,
                          lambda args, attrs, **options: scatter_add(args["input"], attrs["dim"], args["index"], args["src"], **options)),
    "scatter": OpRule(scatter_plan, scatter_signatures, scatter_shapes, scatter_attributes, _run_scatter),
}
register_rules(RULES)
