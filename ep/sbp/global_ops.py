"""The ep.ops functions on global tensors (ep.sbp.global_tensor): each picks the op's nd-signature
that matches its inputs' SBPs, or else the one whose boxing moves the fewest bytes (boxing.cost),
boxes the inputs to it, runs its local primitive on this rank's pieces with the physical attributes
(ep.sbp.physical, ep.sbp.local.run_piece) and returns a global tensor. sbp= asks for the result's
nd-SBP (counted in the choice). Every rank calls each op alike (SPMD): each function first checks
that the ranks agree on its arguments (global_tensor.collective), so argument errors, raised from
the same metadata, are the same on every rank; an error in a rank's local launch (an index out of
bounds in its piece) is shared, so every rank raises it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ep.common.math.binary_functor import binary_dst_dtype, binary_keyword_attrs
from ep.common.math.unary_functor import unary_keyword_attrs, unary_result_dtype
from ep.common.runtime.caches import function_cache
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.device import GetDevice
from ep.common.runtime.scalar import is_scalar, result_dtype
from ep.include.primitive.binary_op import as_binary_op
from ep.include.primitive.unary_op import as_unary_op
from ep.common.primitive.copies import copy_to_device
from ep.sbp.boxing import cost, to_host
from ep.sbp.global_tensor import GlobalTensor, agree, collective, device_name
from ep.sbp.local import run_piece
from ep.sbp.sbp import NdSbp, nd_sbp
from ep.sbp.signature import nd_signatures, physical, rule, sbp_of


def _frozen(value: object) -> object:
    """value with lists as tuples and arrays (a NumPy or torch dims=, dim=) as their values: the
    choice cache's key, and what the rules read."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if hasattr(value, "tolist") and hasattr(value, "shape") and not isinstance(value, np.generic):
        return _frozen(value.tolist())
    return value


def _check(tensors: dict[str, object]) -> GlobalTensor:
    """The first tensor, after checking every one is a GlobalTensor on its placement."""
    first = None
    for name, t in tensors.items():
        if type(t) is not GlobalTensor:
            raise TypeError(f"{name}: {type(t).__name__} is not a GlobalTensor; global ops take global tensors only (make one with ep.to_global)")
        if first is None:
            first = t
        elif t.placement != first.placement:
            raise ValueError(f"{name}: placed on {t.placement!r}, unlike {next(iter(tensors))} on {first.placement!r}; expected one placement")
    return first


@function_cache("plans")
def _choose(name: str, hierarchy: tuple[int, ...], kw: tuple, sbps: tuple, itemsizes: tuple, out_itemsize: int, requested):
    """The nd-signature for inputs laid out by sbps (in kw's input order) and the result's requested
    nd-SBP (or None): one they match as they are, else the one of least boxing cost."""
    kw = dict(kw)
    candidates = nd_signatures(name, hierarchy, **kw)
    names = [n for n, _ in sbps]
    for sig in candidates:
        if all(sbp_of(sig, n) == s for n, s in sbps) and (requested is None or requested == sbp_of(sig, "out")):
            return sig
    return min(candidates, key=lambda sig: signature_cost(name, hierarchy, kw, dict(sbps), dict(zip(names, itemsizes)), out_itemsize, requested, sig))


def signature_cost(name: str, hierarchy, kw: dict, sbps: dict, itemsizes: dict, out_itemsize: int, requested, sig) -> float:
    """The bytes boxing moves to run op name under the nd-signature sig: each input from sbps[n] to
    sig's, and the result from sig's to requested (when not None)."""
    shapes = rule(name).shapes(**kw)
    total = sum(cost(shapes[n], itemsizes[n], s, sbp_of(sig, n), hierarchy) for n, s in sbps.items())
    if requested is not None:
        total += cost(shapes["out"], out_itemsize, sbp_of(sig, "out"), requested, hierarchy)
    return total


def choose(name: str, tensors: dict[str, GlobalTensor], attrs: dict, out_dtype: np.dtype, requested: NdSbp | None = None):
    """The nd-signature op name runs under for these global inputs (see _choose)."""
    first = next(iter(tensors.values()))
    kw = tuple((n, t.shape) for n, t in tensors.items()) + tuple((k, _frozen(v)) for k, v in attrs.items())
    sbps = tuple((n, t.sbp) for n, t in tensors.items())
    itemsizes = tuple(t.dtype.itemsize for t in tensors.values())
    return _choose(name, first.placement.hierarchy, kw, sbps, itemsizes, np.dtype(out_dtype).itemsize, requested)


def _indices_in_bounds(indices, n: int):
    """The indices with negatives wrapped, for an offset launch (which checks and wraps nothing);
    IndexError for one outside [-n, n)."""
    host = to_host(indices)
    if host.size and (host.min() < -n or host.max() >= n):
        bad = host[(host < -n) | (host >= n)].flat[0]
        raise IndexError(f"indices: {bad} is out of range for an axis of size {n}; expected -{n} <= index < {n}")
    if not host.size or host.min() >= 0:
        return indices
    wrapped = np.where(host < 0, host + n, host).astype(host.dtype)
    return wrapped if isinstance(indices, np.ndarray) else _on_device(wrapped)


def _on_device(x: np.ndarray):
    return copy_to_device(np.asarray(x, order="C"), "cuda")


def apply(name: str, tensors: dict[str, object], attrs: dict, out_dtype, sbp=None, **options) -> GlobalTensor:
    """op name on global tensors (keyed by the op's parameter names) with attrs as ep.sbp.signatures
    takes them; options: the local call's other keywords."""
    first = _check(tensors)
    attrs = {k: _frozen(v) for k, v in attrs.items()}
    placement, group = first.placement, first._group
    hierarchy = placement.hierarchy
    requested = None if sbp is None else nd_sbp(sbp, len(hierarchy))
    sig = choose(name, tensors, attrs, out_dtype, requested)
    kw = {**{n: t.shape for n, t in tensors.items()}, **attrs}
    piece = physical(name, sig, hierarchy, group.index, **kw)
    local = {n: t.to_global(sbp=sbp_of(sig, n)).to_local() for n, t in tensors.items()}

    def run():
        rows = _offset_rows(name, piece, kw)
        if rows is not None:
            local["indices"] = _indices_in_bounds(local["indices"], rows)
        return run_piece(name, local, piece, np.dtype(out_dtype), device_name(placement), **options)

    out = _shared(name, first, run)
    result = GlobalTensor(out, group, sbp_of(sig, "out"), rule(name).shapes(**kw)["out"])
    return result.to_global(sbp=requested)


def _shared(name: str, first: GlobalTensor, run: Callable[[], object]):
    """run() on this rank's pieces, with its error (an index out of bounds in its piece, a value its
    dtype cannot hold where other ranks' pieces are empty) raised on every rank of first's
    placement, so that no rank waits on another."""
    error, out = None, None
    try:
        out = run()
        # A CUDA launch reports a bad index at its stream's Sync: here, so that every rank agrees on it.
        GetDevice(device_name(first.placement)).default_stream.Sync()
    except Exception as e:  # any error (an OverflowError too): shared, so that no rank waits in agree
        error = e
    agree(first._group.comm, name, {}, error)
    return out


def _offset_rows(name: str, piece, kw: dict) -> int | None:
    """The logical gather axis's size when this rank's piece launches with an offset, else None."""
    attrs = piece.attributes
    if attrs.get("offset") is None:
        return None
    if name == "gather":
        return kw["params"][attrs["axis"]]
    if name == "batch_gather":
        return kw["params"][len(kw["indices"]) - 1]
    return kw["params_shape"][attrs["axis"]]


@collective("ep.sbp.global_ops.gather")
def gather(params, indices, axis=0, batch_dims=0, *, sbp=None) -> GlobalTensor:
    """ep.ops.gather on global tensors (see the module docstring)."""
    tensors = {"params": params, "indices": indices}
    dtype = _check(tensors).dtype
    return apply("gather", tensors, {"axis": axis, "batch_dims": batch_dims, "dtype": dtype.name}, dtype, sbp)


@collective("ep.sbp.global_ops.batch_gather")
def batch_gather(params, indices, *, sbp=None) -> GlobalTensor:
    """ep.ops.batch_gather on global tensors."""
    tensors = {"params": params, "indices": indices}
    dtype = _check(tensors).dtype
    return apply("batch_gather", tensors, {"dtype": dtype.name}, dtype, sbp)


@collective("ep.sbp.global_ops.gather_grad")
def gather_grad(dy, indices, params_shape, axis=0, batch_dims=0, *, sbp=None) -> GlobalTensor:
    """ep.ops.gather_grad on global tensors."""
    tensors = {"dy": dy, "indices": indices}
    attrs = {"params_shape": _frozen(params_shape), "axis": axis, "batch_dims": batch_dims}
    return apply("gather_grad", tensors, attrs, _check(tensors).dtype, sbp)


@collective("ep.sbp.global_ops.expand")
def expand(x, sizes, *, sbp=None) -> GlobalTensor:
    """ep.ops.expand on a global tensor."""
    return apply("expand", {"x": x}, {"sizes": _frozen(sizes)}, _check({"x": x}).dtype, sbp)


@collective("ep.sbp.global_ops.expand_grad")
def expand_grad(dy, input_shape, *, sbp=None) -> GlobalTensor:
    """ep.ops.expand_grad on a global tensor."""
    return apply("expand_grad", {"dy": dy}, {"input_shape": _frozen(input_shape)}, _check({"dy": dy}).dtype, sbp)


@collective("ep.sbp.global_ops.repeat")
def repeat(x, sizes, *, sbp=None) -> GlobalTensor:
    """ep.ops.repeat on a global tensor."""
    return apply("repeat", {"x": x}, {"sizes": _frozen(sizes)}, _check({"x": x}).dtype, sbp)


@collective("ep.sbp.global_ops.permute")
def permute(x, dims, *, sbp=None) -> GlobalTensor:
    """ep.ops.permute on a global tensor."""
    return apply("permute", {"x": x}, {"dims": _frozen(dims)}, _check({"x": x}).dtype, sbp)


@collective("ep.sbp.global_ops.pad")
def pad(x, pad, value=None, *, sbp=None) -> GlobalTensor:
    """ep.ops.pad on a global tensor."""
    return apply("pad", {"x": x}, {"pad": _frozen(pad), "value": value}, _check({"x": x}).dtype, sbp)


@collective("ep.sbp.global_ops.unary")
def unary(op, x, attr0=None, attr1=None, *, dtype=None, sbp=None, **attrs) -> GlobalTensor:
    """ep.ops.unary on a global tensor (dtype: kCast's destination; attributes also by keyword)."""
    _check({"x": x})
    if attrs:
        attr0, attr1 = unary_keyword_attrs(op, attrs, attr0, attr1)
    out_dtype = unary_result_dtype(as_unary_op(op), as_data_type(x.dtype, "x"), dtype).dtype
    attrs = {"op": op, "attr0": attr0, "attr1": attr1, "dtype": x.dtype.name}
    options = {} if dtype is None else {"dtype": dtype}
    return apply("unary", {"x": x}, attrs, out_dtype, sbp, **options)


@collective("ep.sbp.global_ops.binary")
def binary(op, a, b, attr0=None, attr1=None, *, sbp=None, **attrs) -> GlobalTensor:
    """ep.ops.binary on global tensors (both operands global; make a scalar one with ep.to_global
    of a 0-d array under broadcast; attributes also by keyword)."""
    _check({"a": a, "b": b})
    if attrs:
        attr0, attr1 = binary_keyword_attrs(op, attrs, attr0, attr1)
    src = as_data_type(np.result_type(a.dtype, b.dtype), "a, b")
    dst = binary_dst_dtype(as_binary_op(op), src)
    if dst is None:
        raise TypeError(f"op: {as_binary_op(op).name} does not support dtype {src.value}")
    attrs = {"op": op, "attr0": attr0, "attr1": attr1, "dtype": src.dtype.name}
    return apply("binary", {"a": _as_dtype(a, src.dtype), "b": _as_dtype(b, src.dtype)}, attrs, dst.dtype, sbp)


def _as_dtype(tensor: GlobalTensor, dtype: np.dtype) -> GlobalTensor:
    """tensor in dtype, cast before the op that promotes it: no partial sum passes a cast, so a
    partial sum is summed in its own dtype first, as NumPy sums the logical array (int8 pieces 100
    and 100 are -56, which int32 pieces would make 200)."""
    return tensor if tensor.dtype == dtype else unary("cast", tensor, dtype=dtype)


@collective("ep.sbp.global_ops.add_n")
def add_n(arrays, *, sbp=None) -> GlobalTensor:
    """ep.ops.add_n on global tensors (one shape and dtype: each rank's local add_n refuses others)."""
    tensors = {f"arrays[{i}]": a for i, a in enumerate(arrays)}
    dtype = _check(tensors).dtype
    return apply("add_n", tensors, {"dtype": dtype.name}, dtype, sbp)


@collective("ep.sbp.global_ops.where")
def where(condition, x, y, *, sbp=None) -> GlobalTensor:
    """ep.ops.where on global tensors (all three global; a bool condition)."""
    tensors = {"condition": condition, "x": x, "y": y}
    _check(tensors)
    if condition.dtype != np.bool_:
        raise TypeError(f"condition: has dtype {condition.dtype}; expected bool (compare it first, e.g. condition != 0)")
    dtype = result_dtype(x, y)
    tensors = {"condition": condition, "x": _as_dtype(x, dtype), "y": _as_dtype(y, dtype)}
    return apply("where", tensors, {"dtype": dtype.name}, dtype, sbp)


@collective("ep.sbp.global_ops.matmul")
def matmul(a, b, *, sbp=None) -> GlobalTensor:
    """ep.ops.matmul on global tensors (S(0) x B -> S(0), B x S(1) -> S(1), S(1) x S(0) -> P, P x B
    and B x P -> P, batch dims split on both: ep.ops.matmul_sbp); the dtype is a's and b's
    promotion, float16, float32 or float64 (refused before anything is boxed)."""
    tensors = {"a": a, "b": b}
    _check(tensors)
    dtype = result_dtype(a, b)
    if dtype not in (np.float16, np.float32, np.float64):
        raise TypeError(f"a, b: dtypes {a.dtype} and {b.dtype} multiply in {dtype}; expected float16, float32 or float64 (cast them first)")
    return apply("matmul", {"a": _as_dtype(a, dtype), "b": _as_dtype(b, dtype)}, {"dtype": dtype.name}, dtype, sbp)


@collective("ep.sbp.global_ops.one_hot")
def one_hot(indices, num_classes=-1, *, dtype=np.int64, on_value=1, off_value=0, sbp=None) -> GlobalTensor:
    """ep.ops.one_hot on global indices (num_classes given: -1 would differ between pieces)."""
    _check({"indices": indices})
    dtype = as_data_type(dtype, "dtype")
    attrs = {"num_classes": num_classes, "dtype": dtype.value, "on_value": on_value, "off_value": off_value}
    return apply("one_hot", {"indices": indices}, attrs, dtype.dtype, sbp)


def _softmax(name: str, tensors: dict, dim, sbp) -> GlobalTensor:
    """Softmax-family op name over dim of global tensors (the result has their dtype)."""
    return apply(name, tensors, {"dim": dim}, _check(tensors).dtype, sbp)


@collective("ep.sbp.global_ops.softmax")
def softmax(x, dim=-1, *, sbp=None) -> GlobalTensor:
    """ep.ops.softmax on a global tensor (x never splits along dim)."""
    return _softmax("softmax", {"x": x}, dim, sbp)


@collective("ep.sbp.global_ops.log_softmax")
def log_softmax(x, dim=-1, *, sbp=None) -> GlobalTensor:
    """ep.ops.log_softmax on a global tensor."""
    return _softmax("log_softmax", {"x": x}, dim, sbp)


@collective("ep.sbp.global_ops.softmax_grad")
def softmax_grad(y, dy, dim=-1, *, sbp=None) -> GlobalTensor:
    """ep.ops.softmax_grad on global tensors."""
    return _softmax("softmax_grad", {"y": y, "dy": dy}, dim, sbp)


@collective("ep.sbp.global_ops.log_softmax_grad")
def log_softmax_grad(y, dy, dim=-1, *, sbp=None) -> GlobalTensor:
    """ep.ops.log_softmax_grad on global tensors."""
    return _softmax("log_softmax_grad", {"y": y, "dy": dy}, dim, sbp)


@collective("ep.sbp.global_ops.fuse")
def fuse(fused, *args) -> GlobalTensor | tuple[GlobalTensor, ...]:
    """A call of an ep.fuse function on global tensors (every array argument; scalars as they are):
    run on each rank's pieces under the expression's signature their SBPs match (ep.ops.fuse_sbp),
    else after boxing them to the one of least boxing cost; a global tensor per output."""
    first = _check({fused._name(p): a for p, a in enumerate(args) if not is_scalar(a)})
    # The function is each rank's own: its expression and constants (a closure's scale) must agree,
    # or ranks would choose different signatures and wait on each other; a trace one rank refuses
    # is raised on every rank.
    try:
        trace = fused.trace(args, GetDevice(device_name(first.placement)))
        traced, error = {"expression": trace.nodes, "its constants": trace.sources}, None
    except Exception as e:
        traced, error = None, e
    agree(first._group.comm, "ep.fuse", traced, error)
    # The arrays the outputs read, keyed by call position (the rule's input names); others unused.
    read = {f"args[{p}]": p for p in sorted({p for reads in trace.reads for p in reads})}
    tensors = {name: args[p] for name, p in read.items()}
    dtypes = tuple(d.dtype.name for d in trace.primitive.dst_dtypes)
    attrs = {"expression": trace.nodes, "dtypes": dtypes}
    sig = choose("fuse", tensors, attrs, dtypes[0])
    local = [a if is_scalar(a) else a.to_local() for a in args]
    for name, p in read.items():
        local[p] = args[p].to_global(sbp=sbp_of(sig, name)).to_local()
    outs = _shared("fuse", first, lambda: fused(*local))
    shapes = rule("fuse").shapes(**{n: t.shape for n, t in tensors.items()}, **attrs)
    results = tuple(
        GlobalTensor(o, first._group, sbp_of(sig, f"out[{j}]"), shapes[f"out[{j}]"])
        for j, o in enumerate((outs,) if trace.single else outs)
    )
    return results[0] if trace.single else results
