"""The declarations of gather, batch_gather and gather_grad for global tensors: the local ops'
rules on the metadata, SBP rules derived from tf.gather's shape rule, and the run of a piece that
holds part of the gather axis (an offset).

With batch_dims b, axis a and indices of rank r: batch dims split params, indices and out alike;
an indices dim i >= b splits out at a + i - b (params broadcast); any other params dim splits out
at its place in the result (indices broadcast); params split on the gather axis gives a partial
sum, each rank gathering the rows it holds (BatchGather's offset) and zeros for the others (not
for bool params, whose sum is no count: dtype, params', says which).
gather_grad is the transpose: what splits out of gather splits dy, and what gave a partial sum
splits dx; indices split beyond the batch dims make dx a partial sum.
"""
from __future__ import annotations

import sys

import numpy as np

from ep.common.primitive.copies import copy_to_device
from ep.common.runtime.validate import dims
from ep.ops.elementwise_rules import summable
from ep.ops.gather import batch_gather, gather, gather_grad, gather_grad_dtypes, gather_rule, gather_shape
from ep.sbp.boxing import to_host
from ep.sbp.global_ops import device_of, global_tensors
from ep.sbp.global_tensor import device_name
from ep.sbp.local import run_piece
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, box_shape, register_rules, shape, signature


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
    return wrapped if isinstance(indices, np.ndarray) else copy_to_device(np.asarray(wrapped, order="C"), "cuda")


def _run(name: str, first, rows: int, dtype: np.dtype):
    """This rank's run of op name: where its piece holds part of the gather axis (of rows rows),
    the indices wrapped and checked first (the offset launch does neither)."""
    device = device_name(first.placement)

    def run(local, piece):
        if piece.attributes["offset"] is not None:
            local = {**local, "indices": _indices_in_bounds(local["indices"], rows)}
        return run_piece(name, local, piece, dtype, device)

    return run


def gather_plan(params, indices, axis=0, batch_dims=0) -> Plan:
    tensors = global_tensors(params=params, indices=indices)
    _, g, _, _ = gather_rule(device_of(params), params.dtype, indices.dtype, params.shape, indices.shape, axis, batch_dims, None, None)
    attrs = {"axis": axis, "batch_dims": batch_dims, "dtype": params.dtype.name}
    return Plan(tensors, attrs, params.dtype, run=_run("gather", params, params.shape[g.axis], params.dtype))


def batch_gather_plan(params, indices) -> Plan:
    tensors = global_tensors(params=params, indices=indices)
    axis = _batch_axis(indices.shape)
    gather_rule(device_of(params), params.dtype, indices.dtype, params.shape, indices.shape, axis, axis, None, None)
    return Plan(tensors, {"dtype": params.dtype.name}, params.dtype, run=_run("batch_gather", params, params.shape[axis], params.dtype))


def gather_grad_plan(dy, indices, params_shape, axis=0, batch_dims=0) -> Plan:
    tensors = global_tensors(dy=dy, indices=indices)
    gather_grad_dtypes(dy.dtype, indices.dtype)
    params_shape = dims(params_shape, "params_shape", sys.maxsize)
    g = _grad_shape(dy.shape, indices.shape, params_shape, axis, batch_dims)
    attrs = {"params_shape": params_shape, "axis": axis, "batch_dims": batch_dims}
    return Plan(tensors, attrs, dy.dtype, run=_run("gather_grad", dy, params_shape[g.axis], dy.dtype))


def _shape(params, indices, axis, batch_dims, name="params"):
    return gather_shape(shape(params, name), shape(indices, "indices"), axis, batch_dims)


def _out_dim(dim: int, g, indices_rank: int) -> int:
    """Where params' dim (not the gather axis) lands in the gather's result."""
    return dim if dim < g.axis else dim + indices_rank - g.batch_dims - 1


def gather_signatures(params, indices, axis=0, batch_dims=0, dtype="float32") -> list[Signature]:
    g = _shape(params, indices, axis, batch_dims)
    summed = summable(dtype)
    rank = len(tuple(indices))
    sigs = [signature(S(i), params=S(i), indices=S(i)) for i in range(g.batch_dims)]
    sigs += [signature(S(g.axis + i - g.batch_dims), params=B, indices=S(i)) for i in range(g.batch_dims, rank)]
    for dim in range(g.batch_dims, len(tuple(params))):
        if dim != g.axis:
            sigs.append(signature(S(_out_dim(dim, g, rank)), params=S(dim), indices=B))
        elif summed:
            sigs.append(signature(P, params=S(dim), indices=B))
    return sigs + [signature(P, params=P, indices=B)] * summed + [signature(B, params=B, indices=B)]


def gather_shapes(params, indices, axis=0, batch_dims=0, dtype="float32") -> dict:
    return {"params": tuple(params), "indices": tuple(indices), "out": _shape(params, indices, axis, batch_dims).shape}


def _offset(box: tuple[slice, ...], full: tuple[int, ...], axis: int) -> int | None:
    """The first gather-axis row a piece holds, or None when it holds them all."""
    start, stop = box[axis].start, box[axis].stop
    return None if (start, stop) == (0, full[axis]) else start


def gather_attributes(slices, params, indices, axis=0, batch_dims=0, dtype="float32") -> dict:
    """axis and batch_dims (normalized), and offset: None when the piece holds the whole gather axis
    (ep.ops.gather applies), else the first row it holds: launch BatchGather with that offset,
    wrap_negative and check_bounds off (indices must be non-negative; others' rows give zeros)."""
    g = _shape(params, indices, axis, batch_dims)
    return {"axis": g.axis, "batch_dims": g.batch_dims, "offset": _offset(slices["params"], tuple(params), g.axis)}


def _batch_axis(indices) -> int:
    rank = len(tuple(indices))
    if rank == 0:
        raise ValueError("indices: batch_gather needs indices of rank >= 1; got a 0-d shape")
    return rank - 1


def batch_gather_signatures(params, indices, dtype="float32") -> list[Signature]:
    axis = _batch_axis(indices)
    return gather_signatures(params, indices, axis, axis, dtype)


def batch_gather_shapes(params, indices, dtype="float32") -> dict:
    axis = _batch_axis(indices)
    return gather_shapes(params, indices, axis, axis)


def batch_gather_attributes(slices, params, indices, dtype="float32") -> dict:
    """offset as gather_attributes'."""
    return {"offset": _offset(slices["params"], tuple(params), _batch_axis(indices))}


def _grad_shape(dy, indices, params_shape, axis, batch_dims):
    g = _shape(params_shape, indices, axis, batch_dims, "params_shape")
    if shape(dy, "dy") != g.shape:
        raise ValueError(f"dy: has shape {tuple(dy)}; expected {g.shape}, the gather's result shape")
    return g


def gather_grad_signatures(dy, indices, params_shape, axis=0, batch_dims=0) -> list[Signature]:
    g = _grad_shape(dy, indices, params_shape, axis, batch_dims)
    rank = len(tuple(indices))
    sigs = [signature(S(i), dy=S(i), indices=S(i)) for i in range(g.batch_dims)]
    sigs += [signature(P, dy=S(g.axis + i - g.batch_dims), indices=S(i)) for i in range(g.batch_dims, rank)]
    for dim in range(g.batch_dims, len(tuple(params_shape))):
        dy_sbp = B if dim == g.axis else S(_out_dim(dim, g, rank))
        sigs.append(signature(S(dim), dy=dy_sbp, indices=B))
    return sigs + [signature(P, dy=P, indices=B), signature(B, dy=B, indices=B)]


def gather_grad_shapes(dy, indices, params_shape, axis=0, batch_dims=0) -> dict:
    _grad_shape(dy, indices, params_shape, axis, batch_dims)
    return {"dy": tuple(dy), "indices": tuple(indices), "out": tuple(params_shape)}


def gather_grad_attributes(slices, dy, indices, params_shape, axis=0, batch_dims=0) -> dict:
    """params_shape (the piece of dx), axis and batch_dims (normalized), and offset: None when the
    piece holds dx's whole gather axis (ep.ops.gather_grad applies), else its first row: launch
    UnsortedSegmentSum with that offset, wrap_negative and check_bounds off."""
    g = _grad_shape(dy, indices, params_shape, axis, batch_dims)
    return {
        "params_shape": box_shape(slices["out"]),
        "axis": g.axis,
        "batch_dims": g.batch_dims,
        "offset": _offset(slices["out"], tuple(params_shape), g.axis),
    }


RULES = {
    "gather": OpRule(gather_plan, gather_signatures, gather_shapes, gather_attributes, lambda args, attrs, **options: gather(args["params"], args["indices"], axis=attrs["axis"], batch_dims=attrs["batch_dims"], **options)),
    "batch_gather": OpRule(batch_gather_plan, batch_gather_signatures, batch_gather_shapes, batch_gather_attributes, lambda args, attrs, **options: batch_gather(args["params"], args["indices"], **options)),
    "gather_grad": OpRule(gather_grad_plan, gather_grad_signatures, gather_grad_shapes, gather_grad_attributes, lambda args, attrs, **options: gather_grad(args["dy"], args["indices"], attrs["params_shape"], axis=attrs["axis"], batch_dims=attrs["batch_dims"], **options)),
}
register_rules(RULES)
