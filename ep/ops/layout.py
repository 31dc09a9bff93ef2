"""ep.ops.cat (concatenate), stack, roll and flip: torch's layout ops as copies of boxes into the
result (CopyNd), and for flip a Gather of reversed indices along each flipped dim."""
from __future__ import annotations

import itertools
import math
from typing import Sequence

import numpy as np

from ep.common.primitive.broadcast_dims import MAX_CALLER_DIMS
from ep.common.primitive.operands import contiguous, device_of, one_device, output, reversed_along, stream_for, unaliased
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.scalar import promote, promotion_key
from ep.common.runtime.validate import check_sequence, integer
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import one_dim, same_kind, same_kind_sequence
from ep.ops.unary import unary


def _copy_box(stream, device, dtype: DataType, out, out_shape, out_pos, x, x_shape, x_pos, extent) -> None:
    """x's box at x_pos of extent into out's at out_pos (both C-contiguous, of out_shape and x_shape)."""
    if all(extent):
        copy = NewPrimitive(CopyNdFactory, device, MAX_CALLER_DIMS)
        copy.Launch(stream, dtype, len(out_shape), out, out_shape, out_pos, x, x_shape, x_pos, extent)


def _common(arrays: list, name: str = "tensors"):
    """(device, the promoted DataType) of arrays on one device; TypeError naming the first that differs."""
    device = one_device(arrays, name)
    key = promotion_key(arrays[0])
    for a in arrays[1:]:
        key = promote(key, promotion_key(a))
    return device, as_data_type(key, name)


def _join(arrays: list, dim: int, shape: tuple[int, ...], inners: list[int], out, stream):
    """The arrays laid side by side along dim of the result (shape): array i as an (outer, inners[i])
    box at column sum(inners[:i]) of the result viewed as (outer, sum(inners))."""
    device, dtype = _common(arrays)
    stream = stream_for(device, stream)
    out = output(out, shape, dtype, device, stream)
    outer = math.prod(shape[:dim])
    total = sum(inners)
    sources = []
    for i, a in enumerate(arrays):
        if as_data_type(a.dtype, f"tensors[{i}]") is not dtype:
            a = unary("cast", a, dtype=dtype, stream=stream)
        # Every input read (copied where it overlaps out) before any box is written.
        sources.append(unaliased(contiguous(a, device, stream, name=f"tensors[{i}]"), out, device, stream))
    column = 0
    for a, inner in zip(sources, inners):
        _copy_box(stream, device, dtype, out.reshape(out.size), (outer, total), (0, column), a.reshape(a.size), (outer, inner), (0, 0), (outer, inner))
        column += inner
    return out


def cat_shape(shapes: list[tuple[int, ...]], dim: object) -> tuple[int, tuple[int, ...]]:
    """(dim, the result's shape) of cat of arrays of shapes: the same number of dims (at least one),
    the same sizes but along dim; ValueError naming the first that differs."""
    ndim = len(shapes[0])
    if ndim == 0:
        raise ValueError("tensors[0]: is 0-d; expected arrays of at least one dim (torch.cat's rule)")
    dim = one_dim(dim, ndim)
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != ndim or s[:dim] + s[dim + 1 :] != shapes[0][:dim] + shapes[0][dim + 1 :]:
            raise ValueError(f"tensors[{i}]: has shape {s}; expected {ndim} dims of tensors[0]'s sizes {shapes[0]} but along dim {dim}")
    return dim, shapes[0][:dim] + (sum(s[dim] for s in shapes),) + shapes[0][dim + 1 :]


def stack_shape(shapes: list[tuple[int, ...]], dim: object) -> tuple[int, tuple[int, ...]]:
    """(dim, the result's shape) of stack of arrays of shapes: one shape; ValueError naming the first that differs."""
    for i, s in enumerate(shapes[1:], 1):
        if s != shapes[0]:
            raise ValueError(f"tensors[{i}]: has shape {s}; expected {shapes[0]}, as tensors[0]")
    dim = one_dim(dim, len(shapes[0]) + 1)
    return dim, shapes[0][:dim] + (len(shapes),) + shapes[0][dim:]


@same_kind_sequence
def cat(tensors: Sequence[object], dim: int = 0, *, out=None, stream=None, sbp=None):
    """The arrays joined along dim, as torch.cat and np.concatenate: one device, the same number of
    dims (at least one) and the same sizes but along dim; dtypes promote as NumPy's do. out
    receives the result; a global tensor among them gives a global tensor (boxed to broadcast)."""
    shapes = [tuple(t.shape) for t in tensors]
    dim, shape = cat_shape(shapes, dim)
    return _join(tensors, dim, shape, [math.prod(s[dim:]) for s in shapes], out, stream)


@same_kind_sequence
def stack(tensors: Sequence[object], dim: int = 0, *, out=None, stream=None, sbp=None):
    """The arrays stacked along a new dim, as torch.stack and np.stack: one device and one shape;
    dtypes promote as NumPy's do. out receives the result; a global tensor gives a global tensor."""
    shape0 = tuple(tensors[0].shape)
    dim, shape = stack_shape([tuple(t.shape) for t in tensors], dim)
    return _join(tensors, dim, shape, [math.prod(shape0[dim:])] * len(tensors), out, stream)


def dims_of(value: object, ndim: int, name: str) -> tuple[int, ...]:
    """An int or a sequence of ints, each a dim of ndim (negative from the end)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (one_dim(value, ndim, name),)
    check_sequence(value, name, "dims")
    return tuple(one_dim(d, ndim, f"{name}[{i}]") for i, d in enumerate(value))


@same_kind("x")
def roll(x, shifts, dims=None, *, out=None, stream=None):
    """x with its elements shifted by shifts along dims, those leaving one end entering at the
    other, as torch.roll (np.roll with axis=): shifts and dims are ints or sequences of one length;
    dims=None rolls the flattened x by one shift."""
    device = device_of(x, "x")
    dtype = as_data_type(x.dtype, "x")
    shape = tuple(x.shape)
    stream = stream_for(device, stream)
    if dims is None:
        if not isinstance(shifts, (int, np.integer)):
            check_sequence(shifts, "shifts", "shifts")
            if len(shifts) != 1:
                raise ValueError(f"shifts: has {len(shifts)} entries with dims=None; expected one shift of the flattened x")
            (shifts,) = shifts
        by_dim = (integer(shifts, "shifts"),)
        rolled_shape = (math.prod(shape),)
    else:
        dims = dims_of(dims, len(shape), "dims")
        shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
        if len(shifts) != len(dims):
            raise ValueError(f"shifts: has {len(shifts)} entries for {len(dims)} dims; expected one per dim")
        by_dim = [0] * len(shape)
        for i, (d, s) in enumerate(zip(dims, shifts)):
            by_dim[d] += integer(s, f"shifts[{i}]")
        rolled_shape = shape
    out = output(out, shape, dtype, device, stream)
    x = unaliased(contiguous(x, device, stream), out, device, stream)
    # Per dim of size n rolled by s: x's [0, n - s) goes to [s, n), its [n - s, n) to [0, s); every
    # combination of those pieces over the dims is one box.
    pieces = []
    for n, s in zip(rolled_shape, by_dim):
        s = s % n if n else 0
        pieces.append([(0, s, n - s), (n - s, 0, s)] if s else [(0, 0, n)])
    flat_x, flat_out = x.reshape(rolled_shape), out.reshape(rolled_shape)
    for combination in itertools.product(*pieces):
        src_pos, dst_pos, extent = (tuple(p[k] for p in combination) for k in range(3))
        _copy_box(stream, device, dtype, flat_out, rolled_shape, dst_pos, flat_x, rolled_shape, src_pos, extent)
    return out


@same_kind("x")
def flip(x, dims, *, out=None, stream=None):
    """x with the order of its elements reversed along dims, as torch.flip and np.flip (axis=):
    dims an int or a sequence of distinct ints."""
    device = device_of(x, "x")
    shape = tuple(x.shape)
    dims = dims_of(dims, len(shape), "dims")
    if len(set(dims)) != len(dims):
        raise ValueError(f"dims: {dims} names a dim twice; expected distinct dims")
    stream = stream_for(device, stream)
    result = reversed_along(contiguous(x, device, stream), list(dims), device, stream, out)
    # A new array, never x itself (flip of nothing to reverse is a copy, as torch's); out= is returned.
    return contiguous(result, device, stream, copy=True) if result is x and out is None else result
