"""ep.ops.index_add, scatter_add and scatter, PyTorch's: slices or elements of a source added into
(or, scatter, written into) a copy of input at the positions an index names, by one DimScatter.

Repeats combine in index order along dim, a line of positions per thread and no atomics, on every
device: the same result on every run, and PyTorch's CPU's (integers wrap in their dtype; bool adds
as or). float16 and bfloat16 round at each addition, as torch's index_add of a 1-d input does (its
scatter_add and its index_add of more dims add in float32 and round once).
"""
from __future__ import annotations

import math

import numpy as np

from ep.common.primitive.operands import check_out, contiguous, device_of, on_host, stream_for, unaliased
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.scalar import is_scalar, scalar_value
from ep.common.runtime.validate import integer
from ep.include.primitive.dim_scatter import DimScatterFactory, ScatterOp
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind
from ep.ops.binary import binary
from ep.ops.full import full
from ep.ops.reduce import amax, amin
from ep.ops.unary import unary


def _dim(dim: object, ndim: int) -> int:
    """dim as a non-negative dim of an array of ndim dims (a 0-d array takes 0 and -1, as torch)."""
    dim = integer(dim, "dim")
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"dim: {dim} is out of range for an array of {ndim} dims; expected [{-bound}, {bound})")
    return dim % bound


def index_dtype(index) -> None:
    """TypeError naming index where its dtype is not int32 or int64, torch's index dtypes (a check
    on metadata)."""
    dtype = np.dtype(index.dtype)
    if dtype not in (np.int32, np.int64):
        raise TypeError(f"index: dtype {dtype}; expected int32 or int64 (torch's index dtypes)")


def _check_index(index, size: int, dim: int, stream) -> None:
    """IndexError naming index (non-empty, of an index dtype) where a value is outside [0, size)
    (torch takes no negative one)."""
    # A NumPy index is checked by NumPy, at once; a device's by a reduction read back.
    if type(index) is np.ndarray:
        extremes = (index.min(), index.max())
    else:
        extremes = (on_host(amin(index, stream=stream))[()], on_host(amax(index, stream=stream))[()])
    for value in extremes:
        value = int(value)
        if not 0 <= value < size:
            raise IndexError(f"index: holds {value}; expected indices in [0, {size}) (input's dim {dim} has size {size})")


def _scatter(op: ScatterOp, input, dims: tuple, dim: int, index, index_dims: tuple, src, out, device, stream):  # noqa: A002
    """A copy of input (into out, or a new array) with src (of shape dims) combined into it by op
    along dim at index (of index_dims: dims' or 1, broadcast), by one DimScatter."""
    shape = tuple(input.shape) or (1,)
    dtype = as_data_type(input.dtype, "input")
    index = contiguous(index, device, stream, name="index")
    if np.dtype(index.dtype) not in (np.int32, np.int64):
        # An empty index, whose dtype scatter and scatter_add take as torch does, unchecked.
        index = unary("cast", index, dtype=np.int64, stream=stream)
    src = contiguous(src, device, stream, name="src")
    if out is not None:
        # The input is copied into out before the scatter reads index and src.
        out = check_out(out, "out", tuple(input.shape), dtype, device)
        index, src = unaliased(index, out, device, stream), unaliased(src, out, device, stream)
    result = unary("identity", input, out=out, stream=stream)
    primitive = NewPrimitive(DimScatterFactory, device, op, dtype, as_data_type(index.dtype))
    primitive.launch_trusted(stream, len(dims), dims, dim, index, index_dims, src, tuple(src.shape) or (1,), result, shape)
    return result


def index_add_rule(input, dim, index, source) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:  # noqa: A002
    """index_add's checks on metadata (.shape and .dtype; not index's values): (dim, len(index),
    input's and source's shapes, (1,) for a 0-d input)."""
    shape, source_shape = tuple(input.shape), tuple(source.shape)
    dim = _dim(dim, len(shape))
    if len(tuple(index.shape)) > 1:
        raise ValueError(f"index: has shape {tuple(index.shape)}; expected a 1-d or 0-d array of indices")
    count = math.prod(tuple(index.shape))
    if not shape:  # torch's 0-d case: one element along dim 0, added from a 0-d source
        if source_shape or count != 1:
            raise ValueError(f"source, index: have shapes {source_shape} and {tuple(index.shape)}; a 0-d input takes a 0-d source and one index")
        shape, source_shape = (1,), (1,)
    expected = shape[:dim] + (count,) + shape[dim + 1 :]
    if source_shape != expected:
        raise ValueError(f"source: has shape {tuple(source.shape)}; expected {expected} (input's shape with len(index) = {count} along dim {dim})")
    dtype = as_data_type(input.dtype, "input")
    if as_data_type(source.dtype, "source") is not dtype:
        raise TypeError(f"source: dtype {np.dtype(source.dtype)}; expected input's {dtype.value}")
    return dim, count, shape, source_shape


def index_add_alpha(alpha, dtype: DataType) -> np.generic:
    """alpha as an element of input's dtype, as torch.index_add converts it: a float truncates toward
    zero for integers; a value the dtype cannot hold is an OverflowError, but a negative integer
    down to -max given to an unsigned dtype wraps (-1 is uint8's 255), as in torch."""
    if dtype.is_integer and dtype.dtype.kind == "u" and isinstance(alpha, (int, np.integer)) and not isinstance(alpha, (bool, np.bool_)):
        high = int(np.iinfo(dtype.dtype).max)
        if -high <= int(alpha) < 0:
            return dtype.dtype.type(int(alpha) + high + 1)
    with np.errstate(over="ignore"):  # a float dtype's overflow is refused below
        element = np.asarray(scalar_value(alpha, "alpha", dtype)).astype(dtype.dtype)[()]
    if dtype.is_floating and not np.isfinite(element) and math.isfinite(alpha):
        raise OverflowError(f"alpha: {alpha!r} is out of the range of {dtype.value}")
    return element


@same_kind("input", "index", "source")
def index_add(input, dim, index, source, *, alpha=1, out=None, stream=None):  # noqa: A002 - torch's name
    """input with source's slices along dim added at index, as torch.index_add: index is a 1-d (or
    0-d) integer array of indices in [0, n), one per slice of source (source has input's shape,
    but len(index) along dim); alpha, converted to input's dtype, scales source."""
    device = device_of(input, "input")
    stream = stream_for(device, stream)
    dim, count, shape, source_shape = index_add_rule(input, dim, index, source)
    dtype = as_data_type(input.dtype, "input")
    if not (type(alpha) is int and alpha == 1):
        alpha = index_add_alpha(alpha, dtype)
    index_dtype(index)  # torch checks an empty index's too
    if not count:
        return unary("identity", input, out=out, stream=stream)
    _check_index(index, shape[dim], dim, stream)
    if alpha != 1:
        source = binary("mul", source, alpha, stream=stream)
    index_dims = (1,) * dim + (count,) + (1,) * (len(shape) - dim - 1)
    return _scatter(ScatterOp.kAdd, input, source_shape, dim, index, index_dims, source, out, device, stream)


def _along_dim(input, dim, index, src, stream) -> tuple[int, tuple[int, ...]]:  # noqa: A002
    """scatter's and scatter_add's checks: (dim, index's shape, (1,) for a 0-d one)."""
    dim, index_shape = scatter_rule(input, dim, index, src)
    if math.prod(index_shape):  # torch leaves an empty index's dtype unchecked here
        index_dtype(index)
        _check_index(index, (tuple(input.shape) or (1,))[dim], dim, stream)
    return dim, index_shape or (1,)


def scatter_rule(input, dim, index, src) -> tuple[int, tuple[int, ...]]:  # noqa: A002
    """scatter's and scatter_add's checks on metadata (.shape and .dtype; not index's values):
    (dim, index's shape)."""
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
    return dim, index_shape


@same_kind("input", "index", "src")
def scatter_add(input, dim, index, src, *, out=None, stream=None):  # noqa: A002 - torch's name
    """input with src's elements added where index names, as torch.scatter_add: for every position
    p of index (an integer array of input's rank), src[p] is added at input's position p with dim
    replaced by index[p], in [0, input.shape[dim]); index is no larger than src in any dim, nor than
    input outside dim."""
    device = device_of(input, "input")
    stream = stream_for(device, stream)
    dim, index_shape = _along_dim(input, dim, index, src, stream)
    return _scatter(ScatterOp.kAdd, input, index_shape, dim, index, index_shape, src, out, device, stream)


def scatter_source(src, value):
    """scatter's source: src (an array or a scalar) or torch's value= (a scalar), exactly one given."""
    if (src is None) == (value is None):
        raise TypeError(f"src, value: {'neither is' if src is None else 'both are'} given; expected one (torch.scatter's src or value=)")
    if value is not None and not is_scalar(value):
        raise TypeError(f"value: {type(value).__name__} is not a scalar; an array goes in src")
    return src if value is None else value


@same_kind("input", "index", "src")
def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None, stream=None):  # noqa: A002 - torch's names
    """input with src's elements written where index names, as torch.scatter: for every position p
    of index, input's position p with dim replaced by index[p] takes src[p] (or value, a scalar
    written in input's dtype, given as value= or as src, as torch takes either). Where index names
    a position more than once, the last write along dim lands, as on torch's CPU (its CUDA leaves
    it undefined), on every device and every run: a line of positions is written by one thread
    in index order. Every dtype; the values are written bit for bit (-0.0 and NaN payloads kept).
    torch's reduce="add" adds them instead (repeats accumulate, as scatter_add), reduce="multiply"
    multiplies them in (repeats in index order, as torch's CPU)."""
    if reduce not in (None, "add", "multiply"):
        raise ValueError(f"reduce: {reduce!r}; expected None, 'add' or 'multiply' (torch's)")
    src = scatter_source(src, value)
    device = device_of(input, "input")
    stream = stream_for(device, stream)
    if is_scalar(src):
        src = full(tuple(index.shape), src, dtype=np.dtype(input.dtype), device=device, stream=stream)
    if reduce == "add":
        return scatter_add(input, dim, index, src, out=out, stream=stream)
    dim, index_shape = _along_dim(input, dim, index, src, stream)
    op = ScatterOp.kUpdate if reduce is None else ScatterOp.kMul
    return _scatter(op, input, index_shape, dim, index, index_shape, src, out, device, stream)
