"""ep.ops.expand, expand_grad and repeat: PyTorch's expand rule (OneFlow's, but a size may be 0), then the Expand and ExpandGrad primitives."""
from __future__ import annotations

import math
import sys
from typing import Sequence

from ep.common.primitive.operands import check_out, contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.allocator import empty
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.validate import INT64_MAX, INT64_MIN, check_sequence, dims, int64
from ep.include.primitive.expand import ExpandFactory
from ep.include.primitive.expand_grad import ExpandGradFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind


# expand_shape's results by (input_shape, sizes); a program cycling through more shapes recomputes them.
MAX_REMEMBERED_SHAPES = 1024
_EXPAND_SHAPES: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def _int_sizes(sizes: object, name: str) -> tuple[int, ...]:
    """sizes as a tuple of ints in int64's range (any sign: the rules that read them check it)."""
    if type(sizes) is tuple or type(sizes) is list:
        # The common case without a call per size.
        for size in sizes:
            if type(size) is not int or not INT64_MIN <= size <= INT64_MAX:
                break
        else:
            return tuple(sizes)
    check_sequence(sizes, name, "ints")
    return tuple(int64(size, f"{name}[{i}]") for i, size in enumerate(sizes))


def expand_shape(input_shape: Sequence[int], sizes: Sequence[int], name: str = "sizes") -> tuple[int, ...]:
    """The shape torch.Tensor.expand gives input_shape for sizes; ValueError naming the dim otherwise.

    len(sizes) >= len(input_shape); the extra dims are new leading dims, each >= 0 (never -1);
    -1 keeps the input's size; an input dim of 1 may become any size >= 0 (0: an empty result, as
    torch's expand gives); any other input dim must be kept (its own size or -1).
    """
    input_shape = dims(input_shape, "input_shape", sys.maxsize)
    sizes = _int_sizes(sizes, name)
    # Both are tuples of ints now, so a remembered result is this rule's result.
    shape = _EXPAND_SHAPES.get((input_shape, sizes))
    if shape is None:
        shape = _expand_shape(input_shape, sizes, name)
        if len(_EXPAND_SHAPES) >= MAX_REMEMBERED_SHAPES:
            _EXPAND_SHAPES.clear()
        _EXPAND_SHAPES[input_shape, sizes] = shape
    return shape


def _expand_shape(input_shape: tuple[int, ...], sizes: tuple[int, ...], name: str) -> tuple[int, ...]:
    lead = len(sizes) - len(input_shape)
    if lead < 0:
        raise ValueError(f"{name}: has {len(sizes)} dims, fewer than the input's {len(input_shape)} ({input_shape})")
    shape = []
    for dim, size in enumerate(sizes):
        if dim < lead:
            if size < 0:
                raise ValueError(
                    f"{name}[{dim}]: dim {dim} is a new leading dim (no input size); expected a size >= 0, got {size}"
                )
            shape.append(size)
            continue
        input_size = input_shape[dim - lead]
        if size == -1 or size == input_size:
            shape.append(input_size)
        elif input_size == 1 and size >= 0:
            shape.append(size)
        else:
            allowed = f"{input_size} or -1" + (" or a size >= 0" if input_size == 1 else "")
            raise ValueError(
                f"{name}[{dim}]: dim {dim} has input size {input_size}; cannot expand it to {size} (expected {allowed})"
            )
    return tuple(shape)


def repeat_shape(input_shape: Sequence[int], sizes: object) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """torch.Tensor.repeat's shape rule: (input_shape padded with leading 1s to len(sizes), the
    checked sizes, the result shape, each dim its repeat count times the padded size)."""
    input_shape = tuple(input_shape)
    sizes = _int_sizes(sizes, "sizes")
    if len(sizes) < len(input_shape):
        raise ValueError(f"sizes: has {len(sizes)} dims, fewer than x's {len(input_shape)}")
    for dim, size in enumerate(sizes):
        if size < 0:
            raise ValueError(f"sizes[{dim}]: repeat count {size} is negative; expected >= 0")
    padded = (1,) * (len(sizes) - len(input_shape)) + input_shape
    return padded, sizes, tuple(r * n for r, n in zip(sizes, padded))


def _allocatable(shape: tuple[int, ...], dtype, name: str) -> tuple[int, ...]:
    """shape, if an array of it can exist (NumPy's rule: its nonzero dims' product, in bytes, within
    int64); else ValueError naming the caller's argument name, whose value gives shape."""
    nbytes = math.prod(size for size in shape if size) * dtype.itemsize
    if nbytes > INT64_MAX:
        raise ValueError(
            f"{name}: gives shape {shape} of {dtype.value}, {nbytes} bytes; expected an array of at most 2**63 - 1 bytes"
        )
    return shape


def _expand_op(device, x_dtype, x_shape: tuple[int, ...], sizes) -> tuple:
    """(DataType, the Expand, result shape, x_shape) of an expand: x_shape the object this call
    got, which every later call of the rule then launches with (the launch's plan is found by
    identity: PlanCache.last)."""
    dtype = as_data_type(x_dtype, "x")
    return dtype, NewPrimitive(ExpandFactory, device, dtype), _allocatable(expand_shape(x_shape, sizes), dtype, "sizes"), x_shape


# Keyed by the caller's own arguments: a repeated call skips every check and derivation.
_EXPAND_OPS = PlanCache(_expand_op)
# expand's rule on metadata, (DataType, primitive, result shape, x's shape), also a global call's.
expand_rule = _EXPAND_OPS.get


def _launch(primitive, device, stream, src, name: str, src_shape: tuple[int, ...], dst_shape: tuple[int, ...], dtype, out):
    """Launch primitive (an Expand or ExpandGrad) from src, the caller's argument name, into out
    (checked against dst_shape and dtype) or a new array; returns that array."""
    stream = stream_for(device, stream)
    src = contiguous(src, device, stream, name=name)
    if out is None:
        out = empty(dst_shape, dtype, device, stream)
    else:
        # Only the caller's out can share src's memory.
        src = unaliased(src, check_out(out, "out", dst_shape, dtype, device), device, stream)
    primitive.launch_trusted(stream, src_shape, src, dst_shape, out)
    return out


@same_kind("x")
def expand(x, sizes: Sequence[int], *, out=None, stream=None):
    """x broadcast to expand_shape(x.shape, sizes), as a new C-contiguous array (or out); a global
    x (ep.to_global) gives a global tensor, laid out by sbp when given."""
    device = device_of(x, "x")
    # The shape before the copy: a contiguous copy of a 0-d array may be 1-d.
    x_shape = tuple(x.shape)
    dtype, primitive, shape, x_shape = _EXPAND_OPS.get(device, x.dtype, x_shape, sizes)
    return _launch(primitive, device, stream, x, "x", x_shape, shape, dtype, out)


def expand_grad_op(device, dy_dtype) -> tuple:
    """(DataType, the ExpandGrad) of an expand_grad of dy_dtype."""
    dtype = as_data_type(dy_dtype, "dy")
    primitive = NewPrimitive(ExpandGradFactory, device, dtype)
    if primitive is None:
        raise TypeError(f"dy: expand_grad does not support dtype {dtype.value}")
    return dtype, primitive


@same_kind("dy")
def expand_grad(dy, input_shape: Sequence[int], *, out=None, stream=None):
    """The gradient of expand for an input of input_shape: dy summed over every dim expand broadcast
    (a global dy: a global tensor, laid out by sbp when given)."""
    device = device_of(dy, "dy")
    dtype, primitive = expand_grad_op(device, dy.dtype)
    input_shape = dims(input_shape, "input_shape", sys.maxsize)
    dy_shape = tuple(dy.shape)
    # dy must be a shape expand can produce from input_shape.
    expand_shape(input_shape, dy_shape, "dy.shape")
    return _launch(primitive, device, stream, dy, "dy", dy_shape, input_shape, dtype, out)


@same_kind("x")
def repeat(x, sizes: Sequence[int], *, out=None, stream=None):
    """x tiled sizes times along each dim (torch.Tensor.repeat; np.tile when len(sizes) >= x.ndim),
    as a new C-contiguous array (or out).

    A repeat r of a dim of size n becomes a new dim r in front of it, expanded: x's storage read
    as (1, n0, 1, n1, ...) is expanded to (r0, n0, r1, n1, ...), which is the result's storage.
    Past REPEATS_PER_EXPAND repeated dims (r > 1) the Expand would exceed its dims: the dims are
    repeated in stages of that many, each into a new array but the last.
    A global x (ep.to_global) gives a global tensor, laid out by sbp when given.
    """
    device = device_of(x, "x")
    dtype, padded, sizes, shape = repeat_rule(x.dtype, x.shape, sizes)
    primitive = NewPrimitive(ExpandFactory, device, dtype)
    stream = stream_for(device, stream)
    out = output(out, shape, dtype, device, stream)
    if math.prod(shape) == 0:
        # Expand only grows dims, it never empties one.
        return out
    repeated = [d for d, r in enumerate(sizes) if r > 1]
    stages = [repeated[i : i + REPEATS_PER_EXPAND] for i in range(0, len(repeated), REPEATS_PER_EXPAND)] or [[]]
    src = unaliased(contiguous(x, device, stream), out, device, stream)
    for i, stage in enumerate(stages):
        step = tuple(r if d in stage else 1 for d, r in enumerate(sizes))
        grown = tuple(r * n for r, n in zip(step, padded))
        dst = out if i == len(stages) - 1 else empty(grown, dtype, device, stream)
        interleaved = tuple(d for n in padded for d in (1, n))
        expanded = tuple(d for r, n in zip(step, padded) for d in (r, n))
        primitive.launch_trusted(stream, interleaved, src, expanded, dst)
        src, padded = dst, grown
    return out


def repeat_rule(x_dtype, x_shape: tuple[int, ...], sizes) -> tuple:
    """(DataType, x's shape padded to len(sizes), sizes, the result shape) of a repeat."""
    dtype = as_data_type(x_dtype, "x")
    padded, sizes, shape = repeat_shape(x_shape, sizes)
    return dtype, padded, sizes, _allocatable(shape, dtype, "sizes")


# Repeated dims one Expand takes: its dims after merging alternate runs of x's dims and repeats,
# at most 2 * 4 + 1 = 9, the strided copy's limit.
REPEATS_PER_EXPAND = 4
