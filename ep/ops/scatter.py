"""ep.ops.index_add, scatter_add and scatter, PyTorch's: slices or elements of a source added into
(or, scatter, written into) a copy of input at the positions an index names, by UnsortedSegmentSum
(gather_grad) and one add (or where).

Repeated positions accumulate. Floats sum in their dtype's accumulator (float16 and bfloat16 in
float32, rounded once); other integers and bool sum in int64 and wrap into the input's dtype, as
the dtype's own additions would. On CUDA the float sums are atomic adds, whose order varies from
run to run (results may differ in the last bits between runs, as PyTorch's do there); the CPU's
and integers' results are the same on every run.
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.primitive.fill import UNIT_DTYPES, as_units
from ep.common.primitive.unsorted_segment_sum import SUM_TYPES
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.scalar import is_scalar
from ep.common.runtime.validate import integer
from ep.ops.arrays import contiguous, device_of, on_device, on_host, same_kind, stream_for
from ep.ops.binary import binary
from ep.ops.full import full
from ep.ops.gather import gather_grad
from ep.ops.reduce import amax, amin
from ep.ops.unary import unary
from ep.ops.where import where


def _dim(dim: object, ndim: int) -> int:
    """dim as a non-negative dim of an array of ndim dims (a 0-d array takes 0 and -1, as torch)."""
    dim = integer(dim, "dim")
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"dim: {dim} is out of range for an array of {ndim} dims; expected [{-bound}, {bound})")
    return dim % bound


def _accumulated(dtype: DataType) -> DataType:
    """The dtype the sums of dtype are made in: its own where UnsortedSegmentSum sums it, else int64."""
    return dtype if dtype in SUM_TYPES else DataType.kInt64


def _check_index(index, size: int, dim: int, stream) -> None:
    """IndexError naming index where a value is outside [0, size) (torch takes no negative one)."""
    if not math.prod(tuple(index.shape)):
        return
    if np.dtype(index.dtype).kind not in "iu":
        raise TypeError(f"index: dtype {np.dtype(index.dtype)} is not an integer dtype")
    for value in (amin(index, stream=stream), amax(index, stream=stream)):
        value = int(on_host(value)[()])
        if not 0 <= value < size:
            raise IndexError(f"index: holds {value}; expected indices in [0, {size}) (input's dim {dim} has size {size})")


def _add_into(input, sums, dtype: DataType, alpha, out, stream):
    """input + alpha * sums (sums in _accumulated(dtype)), in input's dtype, into out or a new array."""
    if (dtype.is_integer or dtype is DataType.kBool) and not isinstance(alpha, (int, np.integer)):
        raise TypeError(f"alpha: {type(alpha).__name__} {alpha!r}; integer and bool inputs take an integer alpha, as torch's")
    if alpha != 1:
        sums = binary("mul", sums, alpha, stream=stream)
    if sums.dtype != dtype.dtype:
        sums = unary("cast", sums, dtype=dtype.dtype, stream=stream)
    return binary("add", input, sums, out=out, stream=stream)


@same_kind("input", "index", "source")
def index_add(input, dim, index, source, *, alpha=1, out=None, stream=None):  # noqa: A002 - torch's name
    """input with source's slices along dim added at index, as torch.index_add: index is a 1-d (or
    0-d) integer array of indices in [0, n), one per slice of source (source has input's shape,
    but len(index) along dim); alpha scales source (an integer for integer inputs)."""
    device = device_of(input, "input")
    stream = stream_for(device, stream)
    shape, source_shape = tuple(input.shape), tuple(source.shape)
    dim = _dim(dim, len(shape))
    if len(tuple(index.shape)) > 1:
        raise ValueError(f"index: has shape {tuple(index.shape)}; expected a 1-d or 0-d array of indices")
    count = math.prod(tuple(index.shape))
    if not count:
        return unary("identity", input, out=out, stream=stream)
    if not shape:  # torch's 0-d case: one element along dim 0
        shape, source_shape = (1,), source_shape or (1,)
    expected = shape[:dim] + (count,) + shape[dim + 1 :]
    if source_shape != expected:
        raise ValueError(f"source: has shape {tuple(source.shape)}; expected {expected} (input's shape with len(index) = {count} along dim {dim})")
    dtype = as_data_type(input.dtype, "input")
    if as_data_type(source.dtype, "source") is not dtype:
        raise TypeError(f"source: dtype {np.dtype(source.dtype)}; expected input's {dtype.value}")
    _check_index(index, shape[dim], dim, stream)
    accumulated = _accumulated(dtype)
    source = contiguous(source, device, stream, name="source").reshape(source_shape)
    if accumulated is not dtype:
        source = unary("cast", source, dtype=accumulated.dtype, stream=stream)
    index = contiguous(index, device, stream, name="index").reshape(count)
    sums = gather_grad(source, index, shape, axis=dim, check_bounds=True, stream=stream)
    return _add_into(input, sums.reshape(tuple(input.shape)), dtype, alpha, out, stream)


def _along_dim(input, dim, index, src, device, stream) -> tuple:
    """scatter's and scatter_add's checks: (dim, input's shape (0-d as (1,)), index's element
    count, input's DataType, the flat position in input each index element goes to (None when
    there are none), src's elements at index's positions, flat and C-contiguous)."""
    shape, index_shape, src_shape = tuple(input.shape), tuple(index.shape), tuple(src.shape)
    dim = _dim(dim, len(shape))
    if not (len(index_shape) == len(src_shape) == len(shape)):
        raise ValueError(f"index, src: have {len(index_shape)} and {len(src_shape)} dims; expected input's {len(shape)}")
    for d, n in enumerate(index_shape):
        if n > src_shape[d] or (d != dim and n > shape[d]):
            raise ValueError(
                f"index: has shape {index_shape}; expected no larger than src's {src_shape} in every dim, nor than input's {shape} outside dim {dim}"
            )
    dtype = as_data_type(input.dtype, "input")
    if as_data_type(src.dtype, "src") is not dtype:
        raise TypeError(f"src: dtype {np.dtype(src.dtype)}; expected input's {dtype.value}")
    count = math.prod(index_shape)
    if not count:
        return dim, shape, count, dtype, None, None
    if not shape:  # torch's 0-d case: one element each
        shape = index_shape = src_shape = (1,)
    _check_index(index, shape[dim], dim, stream)
    # The flat position each element goes to: index[p] along dim, p's own coordinates elsewhere.
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    index = contiguous(index, device, stream, name="index").reshape(index_shape)
    targets = binary("mul", unary("cast", index, dtype=np.int64, stream=stream), strides[dim], stream=stream)
    for d, n in enumerate(index_shape):
        if d != dim and n > 1:
            coordinate = (np.arange(n, dtype=np.int64) * strides[d]).reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1))
            targets = binary("add", targets, on_device(coordinate, device, stream), stream=stream)
    part = src if index_shape == src_shape else src[tuple(slice(0, n) for n in index_shape)]
    part = contiguous(part, device, stream, name="src").reshape(count)
    return dim, shape, count, dtype, targets.reshape(count), part


@same_kind("input", "index", "src")
def scatter_add(input, dim, index, src, *, out=None, stream=None):  # noqa: A002 - torch's name
    """input with src's elements added where index names, as torch.scatter_add: for every position
    p of index (an integer array of input's rank), src[p] is added at input's position p with dim
    replaced by index[p], in [0, input.shape[dim]); index is no larger than src in any dim, nor than
    input outside dim."""
    device = device_of(input, "input")
    stream = stream_for(device, stream)
    dim, shape, count, dtype, targets, part = _along_dim(input, dim, index, src, device, stream)
    if not count:
        return unary("identity", input, out=out, stream=stream)
    accumulated = _accumulated(dtype)
    if accumulated is not dtype:
        part = unary("cast", part, dtype=accumulated.dtype, stream=stream)
    sums = gather_grad(part, targets, (math.prod(shape),), axis=0, check_bounds=True, stream=stream)
    return _add_into(input, sums.reshape(tuple(input.shape)), dtype, 1, out, stream)


@same_kind("input", "index", "src")
def scatter(input, dim, index, src, *, reduce=None, out=None, stream=None):  # noqa: A002 - torch's names
    """input with src's elements written where index names, as torch.scatter: for every position p
    of index, input's position p with dim replaced by index[p] takes src[p] (src may be a scalar,
    torch's value=, written in input's dtype). Each position may be named once: torch leaves which
    of several writes lands undefined (it varies on CUDA), so an index naming one twice is a
    ValueError here (scatter_add and index_add combine them). Every dtype; the values are written
    bit for bit (-0.0 and NaN payloads kept). torch's reduce="add" adds them instead (repeats
    accumulate, as scatter_add), reduce="multiply" multiplies the positions named by them (once each)."""
    if reduce not in (None, "add", "multiply"):
        raise ValueError(f"reduce: {reduce!r}; expected None, 'add' or 'multiply' (torch's)")
    device = device_of(input, "input")
    stream = stream_for(device, stream)
    if is_scalar(src):
        src = full(tuple(index.shape), src, dtype=np.dtype(input.dtype), device=device, stream=stream)
    if reduce == "add":
        return scatter_add(input, dim, index, src, out=out, stream=stream)
    dim, shape, count, dtype, targets, part = _along_dim(input, dim, index, src, device, stream)
    if not count:
        return unary("identity", input, out=out, stream=stream)
    size = math.prod(shape)
    # Each element's bits summed alone into its position (a sum of one value is that value, bit for
    # bit, in integers; UnsortedSegmentSum sums int32 and int64), after counting the writes there.
    writes = gather_grad(full((count,), 1, dtype=np.int32, device=device, stream=stream), targets, (size,), axis=0, check_bounds=True, stream=stream)
    if int(on_host(amax(writes, stream=stream))[()]) > 1:
        position = np.unravel_index(int(np.flatnonzero(on_host(writes) > 1)[0]), shape)
        raise ValueError(f"index: names input's position {tuple(int(i) for i in position)} more than once along dim {dim}; scatter writes each position once (torch leaves which write lands undefined): use scatter_add or index_add to combine them")
    wide = np.int64 if dtype.itemsize == 8 else np.int32
    bits = unary("cast", as_units(part, dtype.itemsize), dtype=wide, stream=stream)
    sums = gather_grad(bits, targets, (size,), axis=0, check_bounds=True, stream=stream)
    written = unary("cast", sums, dtype=UNIT_DTYPES[dtype.itemsize], stream=stream).view(dtype.dtype)
    written = written.reshape(tuple(input.shape))
    hit = binary("greater", writes, 0, stream=stream).reshape(tuple(input.shape))
    if reduce == "multiply":
        written = binary("mul", input, written, stream=stream)
    return where(hit, written, input, out=out, stream=stream)
