"""ep.ops.gather, batch_gather and gather_grad: tf.gather's shapes folded onto BatchGather and
UnsortedSegmentSum.

Negative indices count from the end, and out-of-range ones raise (when checked) or give zeros:
the primitives' wrap_negative and check_bounds options. On CUDA a checked launch does not wait:
the stream's next Sync() raises the IndexError, and the rows a bad index selects hold zeros. The caller's indices are never written.
"""
from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np

from ep.common.primitive.operands import CPU, check_out, contiguous, device_of, on_host, stream_for, unaliased
from ep.common.primitive.unsorted_segment_sum import SUM_TYPES
from ep.common.runtime.allocator import empty
from ep.common.runtime.buffer import plain
from ep.common.runtime.data_type import INDEX_TYPES, DataType, as_data_type
from ep.common.runtime.device import Device, caller_indices
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.validate import dims, integer
from ep.include.primitive.batch_gather import BatchGatherFactory
from ep.include.primitive.gather import IndexOutOfRange
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.unsorted_segment_sum import UnsortedSegmentSumFactory
from ep.ops.arrays import one_dim, same_kind
from ep.ops.reduce import amin

_INDEX_DTYPES = {dtype.dtype: dtype for dtype in INDEX_TYPES}


class GatherShape(NamedTuple):
    """A gather's normalized axis and batch_dims, its result shape, and its dims folded for the primitives."""

    axis: int
    batch_dims: int
    shape: tuple[int, ...]
    batch: int
    outer: int
    gather: int
    inner: int
    num_indices: int


def gather_shape(params_shape, indices_shape, axis: object = 0, batch_dims: object = 0) -> GatherShape:
    """tf.gather's shape rule: params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:].

    A negative axis counts from params' rank, a negative batch_dims from indices' rank;
    batch_dims <= axis and params.shape[:batch_dims] == indices.shape[:batch_dims] are required.
    """
    params_shape, indices_shape = tuple(params_shape), tuple(indices_shape)
    rank = len(params_shape)
    axis = integer(axis, "axis")
    batch_dims = integer(batch_dims, "batch_dims")
    if rank == 0:
        raise ValueError("params: a 0-d array has no axis to gather along; expected rank >= 1")
    if not -rank <= axis < rank:
        raise ValueError(f"axis: {axis} is out of range for params of rank {rank}; expected {-rank} <= axis < {rank}")
    axis %= rank
    indices_rank = len(indices_shape)
    if not -indices_rank <= batch_dims <= indices_rank:
        raise ValueError(
            f"batch_dims: {batch_dims} is out of range for indices of rank {indices_rank}; "
            f"expected {-indices_rank} <= batch_dims <= {indices_rank}"
        )
    if batch_dims < 0:
        batch_dims += indices_rank
    if batch_dims > axis:
        raise ValueError(f"batch_dims: {batch_dims} is greater than axis {axis}; expected batch_dims <= axis")
    if params_shape[:batch_dims] != indices_shape[:batch_dims]:
        raise ValueError(
            f"indices: batch shape {indices_shape[:batch_dims]} differs from params' {params_shape[:batch_dims]} "
            f"(the first batch_dims={batch_dims} dims must match)"
        )
    return GatherShape(
        axis,
        batch_dims,
        params_shape[:axis] + indices_shape[batch_dims:] + params_shape[axis + 1 :],
        math.prod(params_shape[:batch_dims]),
        math.prod(params_shape[batch_dims:axis]),
        params_shape[axis],
        math.prod(params_shape[axis + 1 :]),
        math.prod(indices_shape[batch_dims:]),
    )


def _indices_dtype(dtype) -> DataType:
    dtype = np.dtype(dtype)
    found = _INDEX_DTYPES.get(dtype)
    if found is None:
        raise TypeError(f"indices: dtype {dtype} is not an index type; expected int32 or int64")
    return found


def gather_grad_dtypes(dy_dtype, indices_dtype) -> tuple[DataType, DataType]:
    """(dy's DataType, the indices') of a gather_grad, each checked."""
    dtype = as_data_type(dy_dtype, "dy")
    if dtype not in SUM_TYPES:
        names = ", ".join(d.value for d in SUM_TYPES)
        raise TypeError(f"dy: dtype {dtype.value} is not supported by gather_grad; expected one of {names}")
    return dtype, _indices_dtype(indices_dtype)


def _same_device(params, indices, params_name: str) -> Device:
    device = device_of(params, params_name)
    other = device_of(indices, "indices")
    if other is not device:
        raise TypeError(
            f"indices: is on {other.device_type.value} but {params_name} is on {device.device_type.value}; "
            "expected both on one device"
        )
    return device


def _gather_op(device: Device, params_dtype, indices_dtype, params_shape, indices_shape, axis, batch_dims, check_bounds, offset):
    """(params DataType, GatherShape, the BatchGather, its offset) of a gather."""
    params = as_data_type(params_dtype, "params")
    indices = _indices_dtype(indices_dtype)
    shape = gather_shape(params_shape, indices_shape, axis, batch_dims)
    wrap, check, offset = _index_options(check_bounds, offset)
    primitive = NewPrimitive(BatchGatherFactory, device, params, indices, wrap_negative=wrap, check_bounds=check)
    return params, shape, primitive, offset


def _index_options(check_bounds: object, offset: object) -> tuple[bool, bool, int]:
    """(wrap_negative, check_bounds, offset) of an ops call: without offset negatives wrap and indices
    are checked by default; with one (params or the gradient hold rows [offset, offset + n) of the
    axis, as an SBP split does) indices name rows of the whole axis, those outside are zeros."""
    if offset is None:
        return True, check_bounds is None or bool(check_bounds), 0
    offset = integer(offset, "offset")
    if check_bounds:
        raise ValueError(f"check_bounds: {check_bounds!r} with offset={offset}; a shard's gather gives zeros for rows it does not hold, so expected check_bounds=None or False")
    return False, False, offset


# Keyed by the caller's own arguments: a repeated call skips every lookup, check and derivation.
_GATHER_OPS = PlanCache(_gather_op)
# gather's rule on metadata, (params DataType, GatherShape, primitive, offset), also a global call's.
gather_rule = _GATHER_OPS.get


def _bad_index(error: IndexOutOfRange, shape: tuple[int, ...]) -> IndexError:
    """The primitive's error, with the index's position in the caller's indices shape."""
    return IndexOutOfRange("indices", error.position, error.value, error.size, error.expected, shape)


def _launch(primitive, indices_shape: tuple[int, ...], *args) -> None:
    """primitive's launch of args, which the caller checked (launch_trusted), its bad index named
    in the caller's indices shape, also when a CUDA stream's Sync raises it later (caller_indices)."""
    token = caller_indices.set(("indices", indices_shape))
    try:
        primitive.launch_trusted(*args)
    except IndexOutOfRange as error:
        raise _bad_index(error, indices_shape) from None
    finally:
        caller_indices.reset(token)


@same_kind("params", "indices")
def gather(params, indices, axis=0, batch_dims=0, *, check_bounds: bool | None = None, offset: int | None = None, out=None, stream=None):
    """tf.gather: slices of params along axis at indices, per batch for the first batch_dims dims.

    Indices in [-n, n) are valid (negatives count from the end); with check_bounds (the default) any
    other index raises IndexError (and nothing is written; on CUDA at the stream's next Sync(), with
    zeros in the rows bad indices select), with check_bounds=False it gives zeros. With offset,
    params holds rows [offset, offset + n) of a longer axis (a shard, as OneFlow's split gather
    holds it): indices name rows of the whole axis, not wrapped nor checked, and those params does
    not hold give zeros, so the shards' results sum to the whole gather. Returns a new array, or
    out. Global params and indices (ep.to_global) give a global tensor, laid out by sbp when given.
    """
    device = _same_device(params, indices, "params")
    # Shapes first: a contiguous NumPy copy of a 0-d array is 1-d.
    params_shape, indices_shape = tuple(params.shape), tuple(indices.shape)
    stream = stream_for(device, stream)  # copies go on the caller's stream too
    params = contiguous(params, device, stream, name="params")
    indices = contiguous(indices, device, stream, name="indices")
    params_dtype, shape, primitive, offset = _GATHER_OPS.get(
        device, params.dtype, indices.dtype, params_shape, indices_shape, axis, batch_dims, check_bounds, offset
    )
    if out is None:
        out = empty(shape.shape, params_dtype, device, stream)
    else:
        if not (device is CPU and plain(out) and out.shape == shape.shape and out.dtype is params.dtype and out.flags.writeable):
            check_out(out, "out", shape.shape, params_dtype, device)
        params = unaliased(params, out, device, stream)
        indices = unaliased(indices, out, device, stream)
    if shape.batch * shape.num_indices == 0 or (not primitive.check and math.prod(shape.shape) == 0):
        return out
    _launch(primitive, indices_shape, stream, indices, shape.num_indices, params, shape.batch, shape.outer, shape.gather, shape.inner, out, offset)
    return out


@same_kind("x", "index")
def index_select(x, dim, index, *, out=None, stream=None):
    """x's slices along dim at index, as torch.index_select: index is a 1-d (or 0-d) integer array
    of indices in [0, n); a negative or larger one is an IndexError (torch's rule; gather wraps
    negative ones). The result has x's shape with dim's size len(index)."""
    device = _same_device(x, index, "x")
    if len(tuple(x.shape)) == 0:
        # torch's rule: a 0-d x is one element along dim 0 (or -1), and so is the result.
        if integer(dim, "dim") not in (0, -1):
            raise IndexError(f"dim: {dim} is out of range for a 0-d x; expected 0 or -1")
        if int(np.prod(tuple(index.shape))) != 1:
            raise ValueError(f"index: has {int(np.prod(tuple(index.shape)))} elements; a 0-d x takes exactly one")
        x = contiguous(x, device, stream_for(device, stream), name="x").reshape(1)
        one = index_select(x, 0, index.reshape(1), out=None if out is None else out.reshape(1), stream=stream)
        return one.reshape(()) if out is None else out
    if len(tuple(index.shape)) > 1:
        raise ValueError(f"index: has shape {tuple(index.shape)}; expected a 1-d or 0-d array of indices")
    if len(tuple(index.shape)) == 0:
        index = contiguous(index, device, stream_for(device, stream), name="index").reshape(1)
    if index.size and np.dtype(index.dtype).kind == "i":
        least = amin(index, stream=stream)
        least = int(on_host(least)[()])
        if least < 0:
            raise IndexError(f"index: holds {least}; expected indices in [0, n) (torch.index_select takes no negative index)")
    return gather(x, index, dim, check_bounds=True, out=out, stream=stream)


@same_kind("params", "indices")
def batch_gather(params, indices, *, check_bounds: bool | None = None, offset: int | None = None, out=None, stream=None):
    """OneFlow's batch_gather: every dim of indices but the last is a batch dim, and the gather
    runs along params' axis indices.ndim - 1."""
    device_of(indices, "indices")
    rank = len(tuple(indices.shape))
    if rank == 0:
        raise ValueError("indices: batch_gather needs indices of rank >= 1; got a 0-d array")
    return gather(params, indices, rank - 1, rank - 1, check_bounds=check_bounds, offset=offset, out=out, stream=stream)


@same_kind("dy", "indices")
def gather_grad(dy, indices, params_shape, axis=0, batch_dims=0, *, check_bounds: bool | None = None, offset: int | None = None, stream=None):
    """The gradient of gather with respect to params: dy's slices added into zeros of params_shape
    at indices; repeated indices accumulate. Out-of-range indices raise IndexError with check_bounds
    (the default) and are dropped with check_bounds=False. With offset, params_shape is a shard
    holding rows [offset, offset + n) of the axis, and the rows it does not hold are dropped (gather's
    offset)."""
    device = _same_device(dy, indices, "dy")
    dy_shape, indices_shape = tuple(dy.shape), tuple(indices.shape)
    stream = stream_for(device, stream)
    dy = contiguous(dy, device, stream, name="dy")
    indices = contiguous(indices, device, stream, name="indices")
    dtype, indices_dtype = gather_grad_dtypes(dy.dtype, indices.dtype)
    params_shape = dims(params_shape, "params_shape", sys.maxsize)
    shape = gather_shape(params_shape, indices_shape, axis, batch_dims)
    if dy_shape != shape.shape:
        raise ValueError(f"dy: has shape {dy_shape}; expected {shape.shape}, the gather's result shape")
    dx = empty(params_shape, dtype, device, stream, "params_shape")
    wrap, check, offset = _index_options(check_bounds, offset)
    primitive = NewPrimitive(UnsortedSegmentSumFactory, device, dtype, indices_dtype, wrap_negative=wrap, check_bounds=check)
    _launch(primitive, indices_shape, stream, indices, shape.num_indices, dy, shape.batch, shape.outer, shape.gather, shape.inner, dx, offset)
    return dx


@same_kind("input", "indices")
def take_along_dim(input, indices, dim=None, *, out=None, stream=None):  # noqa: A002 - torch's name
    """input's elements at indices along dim, as torch.take_along_dim and np.take_along_axis:
    indices (integers, as many dims as input) broadcast with input but along dim, and the result
    has their broadcast shape with indices' size along dim; dim=None takes from input flattened at
    indices flattened. A negative index counts from the end (NumPy's rule; torch refuses it); one
    out of range is an IndexError."""
    from ep.ops.expand import expand
    from ep.ops.permute import permute

    device = _same_device(input, indices, "input")
    stream = stream_for(device, stream)
    shape, index_shape = tuple(input.shape), tuple(indices.shape)
    if dim is None:
        flat = contiguous(input, device, stream, name="input").reshape(math.prod(shape))
        flat_indices = contiguous(indices, device, stream, name="indices").reshape(math.prod(index_shape))
        return gather(flat, flat_indices, 0, check_bounds=True, out=out, stream=stream)
    if len(index_shape) != len(shape):
        raise ValueError(f"indices: has {len(index_shape)} dims; expected input's {len(shape)}")
    dim = one_dim(dim, max(len(shape), 1))
    if not shape:
        return gather(contiguous(input, device, stream).reshape(1), contiguous(indices, device, stream).reshape(1), 0, check_bounds=True, out=out, stream=stream).reshape(())
    others = lambda s: s[:dim] + s[dim + 1 :]  # noqa: E731
    try:
        batch = tuple(np.broadcast_shapes(others(shape), others(index_shape)))
    except ValueError:
        raise ValueError(f"indices: has shape {index_shape}; expected one that broadcasts with input's {shape} but along dim {dim}") from None
    with_dim = lambda n: batch[:dim] + (n,) + batch[dim:]  # noqa: E731
    if with_dim(shape[dim]) != shape:
        input = expand(input, with_dim(shape[dim]), stream=stream)
    if with_dim(index_shape[dim]) != index_shape:
        indices = expand(indices, with_dim(index_shape[dim]), stream=stream)
    last = len(shape) - 1
    if dim == last:
        return batch_gather(input, indices, check_bounds=True, out=out, stream=stream)
    # dim moved last, where every other dim is a batch dim of batch_gather, and back.
    order = [d for d in range(len(shape)) if d != dim] + [dim]
    taken = batch_gather(permute(input, order, stream=stream), permute(indices, order, stream=stream), check_bounds=True, stream=stream)
    back = [order.index(d) for d in range(len(shape))]
    return permute(taken, back, out=out, stream=stream)
