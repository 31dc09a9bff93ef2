"""ep.ops.permute: torch.permute's rules, then the Permute primitive."""
from __future__ import annotations

from typing import Sequence

from ep.common.primitive.broadcast_dims import MAX_CALLER_DIMS
from ep.common.primitive.operands import contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.validate import check_sequence, integer
from ep.include.primitive.permute import PermuteFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind


def permute_dims(ndim: int, dims: object, name: str = "dims") -> tuple[int, ...]:
    """dims (torch.permute's: one entry per dim of an ndim-d array, negative ones counted from the
    end) as non-negative dims; TypeError or ValueError naming name otherwise."""
    check_sequence(dims, name, "dims")
    values = tuple(integer(d, f"{name}[{i}]") for i, d in enumerate(dims))
    if len(values) != ndim:
        raise ValueError(f"{name}: has {len(values)} entries for an array of {ndim} dims; expected {ndim}")
    for i, d in enumerate(values):
        if not -ndim <= d < ndim:
            raise IndexError(f"{name}[{i}]: {d} is out of range for {ndim} dims; expected {-ndim} <= dim < {ndim}")
    normalized = tuple(d % ndim for d in values) if ndim else ()
    if len(set(normalized)) != ndim:
        raise ValueError(f"{name}: {values} names a dim twice; expected a permutation of range({ndim})")
    return normalized


def permute_shape(shape: Sequence[int], dims: object) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the normalized dims, the result's shape) of permuting an array of shape by dims."""
    dims = permute_dims(len(shape), dims)
    return dims, tuple(shape[d] for d in dims)


# Keyed by the call's shape and dims: a repeated permute skips their checks (a third of a small one).
_SHAPES = PlanCache(permute_shape)


@same_kind("x")
def permute(x, dims: Sequence[int], *, out=None, stream=None):
    """x with its dims reordered (torch.permute, numpy.transpose with every axis given): the
    result's dim i is x's dim dims[i]; negative dims count from the end. The result is a new
    C-contiguous array (or out), not a view. A global x (ep.to_global) gives a global tensor, laid
    out by sbp when given.
    """
    device = device_of(x, "x")
    dtype = as_data_type(x.dtype, "x")
    x_shape = tuple(x.shape)
    dims, shape = _SHAPES.get(x_shape, dims)
    stream = stream_for(device, stream)
    x = contiguous(x, device, stream)
    out = output(out, shape, dtype, device, stream)
    x = unaliased(x, out, device, stream)
    if x_shape:
        NewPrimitive(PermuteFactory, device, MAX_CALLER_DIMS).launch_trusted(stream, dtype, len(x_shape), x_shape, x, dims, out)
    else:
        # A 0-d array: one element, which Permute (of at least one dim) moves as shape (1,).
        NewPrimitive(PermuteFactory, device, MAX_CALLER_DIMS).launch_trusted(stream, dtype, 1, (1,), x, (0,), out)
    return out
