"""ep.ops.softmax, log_softmax and their gradients: PyTorch's semantics over any dim, then the
Softmax family's primitives over rows.

The primitives take rows of consecutive elements. When dim is the last of the dims larger than one,
x (made C-contiguous) already is such rows; otherwise dim is moved last by one Permute launch, the
rows computed there, and the result permuted back: no loop over rows in Python.
"""
from __future__ import annotations

import math

from ep.common.primitive.operands import check_out, contiguous, device_of, stream_for, unaliased
from ep.common.runtime.allocator import empty
from ep.common.runtime.data_type import FLOATING_TYPES, DataType, as_data_type
from ep.common.runtime.validate import integer
from ep.include.primitive.permute import PermuteFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.softmax import LogSoftmaxFactory, SoftmaxFactory
from ep.include.primitive.softmax_backward import LogSoftmaxBackwardFactory, SoftmaxBackwardFactory
from ep.ops.arrays import same_kind


def softmax_dim(ndim: int, dim: object, name: str = "dim") -> int:
    """dim (PyTorch's: negative counts from the end; a 0-d array takes -1 or 0) as a dim in range."""
    dim = integer(dim, name)
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(f"{name}: {dim} is out of range for an array of {ndim} dims; expected {-size} <= dim < {size}")
    return dim % size


def rows_dtype(name: str, arrays: tuple[tuple[object, str], ...]) -> DataType:
    """The DataType of op name over arrays (anything with a shape and dtype, by name): one shape
    and one float dtype."""
    first, first_name = arrays[0]
    dtype = as_data_type(first.dtype, first_name)
    shape = tuple(first.shape)
    for array, array_name in arrays[1:]:
        if tuple(array.shape) != shape or as_data_type(array.dtype, array_name) is not dtype:
            raise ValueError(
                f"{array_name}: has shape {tuple(array.shape)} and dtype {array.dtype}; expected {first_name}'s,"
                f" {shape} and {dtype.value}"
            )
    if dtype not in FLOATING_TYPES:
        raise TypeError(f"{first_name}: {name} takes float16, float32 or float64; got {dtype.value}")
    return dtype


def _rows(factory, name: str, arrays: tuple[tuple[object, str], ...], dim, out, stream):
    """The factory's op over dim of arrays (the same shape and dtype), as a new array or out."""
    first, first_name = arrays[0]
    device = device_of(first, first_name)
    for array, array_name in arrays[1:]:
        if device_of(array, array_name) != device:
            raise TypeError(f"{array_name}: is on another device than {first_name}; expected both on {device}")
    dtype = rows_dtype(name, arrays)
    shape = tuple(first.shape)
    dim = softmax_dim(len(shape), dim)
    stream = stream_for(device, stream)
    out = empty(shape, dtype, device, stream) if out is None else check_out(out, "out", shape, dtype, device)
    count = math.prod(shape)
    if count == 0:
        return out
    cols = shape[dim] if shape else 1
    rows = count // cols
    # An input sharing memory with out but not element for element is copied first (NumPy's out= rule).
    inputs = [unaliased(contiguous(array, device, stream, name=array_name), out, device, stream, elementwise=True) for array, array_name in arrays]
    primitive = NewPrimitive(factory, device, dtype)
    if all(size == 1 for size in shape[dim + 1 :]):
        # The rows are consecutive already (out may be an input: each element is read before its write).
        primitive.launch_trusted(stream, rows, cols, *(x.reshape(count) for x in inputs), out.reshape(count))
        return out
    # dim moved last, and back.
    order = (*range(dim), *range(dim + 1, len(shape)), dim)
    back = tuple(order.index(d) for d in range(len(shape)))
    moved_shape = tuple(shape[d] for d in order)
    permute = NewPrimitive(PermuteFactory, device, len(shape))
    moved = []
    for x in inputs:
        m = empty(moved_shape, dtype, device, stream)
        permute.Launch(stream, dtype, len(shape), shape, x, order, m)
        moved.append(m)
    result = empty(moved_shape, dtype, device, stream)
    primitive.Launch(stream, rows, cols, *(m.reshape(count) for m in moved), result.reshape(count))
    permute.Launch(stream, dtype, len(shape), moved_shape, result, back, out)
    return out


def result_dtype(dtype) -> DataType:
    """torch's dtype= of softmax and log_softmax: a float dtype, which x is cast to before the op."""
    target = as_data_type(dtype, "dtype")
    if target not in FLOATING_TYPES:
        raise TypeError(f"dtype: {target.value}; expected a float dtype (the result's)")
    return target


def cast_first(x, dtype, stream):
    """x cast to dtype= (x itself where dtype is None or x's)."""
    if dtype is None:
        return x
    target = result_dtype(dtype)
    if as_data_type(x.dtype, "x") is target:
        return x
    from ep.ops.unary import unary

    return unary("cast", x, dtype=target.dtype, stream=stream)


@same_kind("x")
def softmax(x, dim: int = -1, *, dtype=None, out=None, stream=None):
    """torch.softmax(x, dim): exp(x) / exp(x).sum(dim), the max along dim subtracted first (no
    overflow); float16 computed in float32; dtype= casts x to that float dtype first. A new
    C-contiguous array (or out); a global x (ep.to_global) gives a global tensor, laid out by sbp
    when given."""
    return _rows(SoftmaxFactory, "softmax", ((cast_first(x, dtype, stream), "x"),), dim, out, stream)


@same_kind("x")
def log_softmax(x, dim: int = -1, *, dtype=None, out=None, stream=None):
    """torch.log_softmax(x, dim): x - log(exp(x).sum(dim)), computed as x - max - log(sum(exp(x - max)));
    dtype= casts x to that float dtype first."""
    return _rows(LogSoftmaxFactory, "log_softmax", ((cast_first(x, dtype, stream), "x"),), dim, out, stream)


@same_kind("y", "dy")
def softmax_grad(y, dy, dim: int = -1, *, out=None, stream=None):
    """The gradient of softmax's input from its output y and y's gradient dy, as autograd computes
    it: y * (dy - (y * dy).sum(dim))."""
    return _rows(SoftmaxBackwardFactory, "softmax_grad", ((y, "y"), (dy, "dy")), dim, out, stream)


@same_kind("y", "dy")
def log_softmax_grad(y, dy, dim: int = -1, *, out=None, stream=None):
    """The gradient of log_softmax's input from its output y and y's gradient dy, as autograd
    computes it: dy - exp(y) * dy.sum(dim)."""
    return _rows(LogSoftmaxBackwardFactory, "log_softmax_grad", ((y, "y"), (dy, "dy")), dim, out, stream)
