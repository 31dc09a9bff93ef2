"""ep.ops.cumsum, cumprod, cummax, cummin and logcumsumexp: PyTorch's scans along one dim, then the
Scan primitive.

Dtypes are PyTorch's: cumsum and cumprod of integers and bool give int64 (dtype= casts x to it
first); cummax and cummin keep x's dtype and give int64 indices; logcumsumexp takes floating
dtypes only, as torch does. A 0-d x takes dim 0 or -1, as in torch.
"""
from __future__ import annotations

from typing import NamedTuple

from ep.common.primitive.operands import contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.data_type import FLOATING_TYPES, DataType, as_data_type
from ep.common.runtime.dlpack import own
from ep.common.runtime.overlap import overlaps
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.scan import ScanFactory
from ep.ops.arrays import one_dim, same_kind


class ValuesIndices(NamedTuple):
    """cummax's and cummin's result, as torch.return_types.cummax: the values and their int64 indices."""

    values: object
    indices: object


def _prepared(x, dim, dtype: DataType | None, stream):
    """(device, stream, x C-contiguous in dtype, its shape, dim as 0 <= dim < max(ndim, 1))."""
    device = device_of(x, "x")
    stream = stream_for(device, stream)
    shape = tuple(x.shape)
    dim = one_dim(dim, max(len(shape), 1))
    if dtype is not None and as_data_type(x.dtype, "x") is not dtype:
        from ep.ops.unary import unary

        x = unary("cast", x, dtype=dtype.dtype, stream=stream)
    return device, stream, contiguous(x, device, stream), shape, dim


def _launch(op: ReduceOp, device, stream, x, shape, dim, src: DataType, dst: DataType, out):
    primitive = NewPrimitive(ScanFactory, device, op, src, dst)
    if primitive is None:
        raise TypeError(f"x: a scan of {op.value} of {src.value} into {dst.value} is not supported")
    primitive.launch_trusted(stream, shape, x, dim, out)
    return out


def accumulating_dtypes(x_dtype, dtype) -> tuple[DataType, DataType]:
    """(the dtype x is scanned in, the result's) of cumsum and cumprod: torch's rules."""
    src = as_data_type(x_dtype, "x") if dtype is None else as_data_type(dtype, "dtype")
    return src, (DataType.kInt64 if dtype is None and src not in FLOATING_TYPES else src)


def floating_dtype(x_dtype) -> DataType:
    """x's dtype, which logcumsumexp takes floating only (TypeError otherwise, as torch)."""
    dtype = as_data_type(x_dtype, "x")
    if dtype not in FLOATING_TYPES:
        raise TypeError(f"x: logcumsumexp of {dtype.value} is not computed (as torch refuses it); expected a floating dtype")
    return dtype


def _accumulating(op: ReduceOp, x, dim, dtype, out, stream):
    """cumsum's and cumprod's work: torch's dtypes, in place when out is exactly x."""
    src, dst = accumulating_dtypes(x.dtype, dtype)
    device, stream, x, shape, dim = _prepared(x, dim, src, stream)
    out = output(out, shape, dst, device, stream)
    x = unaliased(x, out, device, stream, elementwise=True)
    return _launch(op, device, stream, x, shape, dim, src, dst, out)


@same_kind("x")
def cumsum(x, dim, *, dtype=None, out=None, stream=None):
    """The running sums of x along dim, as torch.cumsum: integers and bool give int64 (wrapping);
    floats accumulate in float64 (at least as accurate as NumPy's cumsum), float16 and bfloat16
    stored back in their dtype."""
    return _accumulating(ReduceOp.kSum, x, dim, dtype, out, stream)


@same_kind("x")
def cumprod(x, dim, *, dtype=None, out=None, stream=None):
    """The running products of x along dim, as torch.cumprod: integers and bool give int64 (wrapping)."""
    return _accumulating(ReduceOp.kProd, x, dim, dtype, out, stream)


@same_kind("x")
def logcumsumexp(x, dim, *, out=None, stream=None):
    """log(cumsum(exp(x))) along dim without overflow, as torch.logcumsumexp: floating dtypes only
    (TypeError for integers and bool, as torch refuses them)."""
    dtype = floating_dtype(x.dtype)
    device, stream, x, shape, dim = _prepared(x, dim, None, stream)
    out = output(out, shape, dtype, device, stream)
    x = unaliased(x, out, device, stream, elementwise=True)
    return _launch(ReduceOp.kLogSumExp, device, stream, x, shape, dim, dtype, dtype, out)


def _extremes(value_op: ReduceOp, index_op: ReduceOp, x, dim, out, stream) -> ValuesIndices:
    """cummax's and cummin's work: the running extreme and its index, out a pair (values, indices)."""
    dtype = as_data_type(x.dtype, "x")
    device, stream, x, shape, dim = _prepared(x, dim, None, stream)
    if out is None:
        values, indices = output(None, shape, dtype, device, stream), output(None, shape, DataType.kInt64, device, stream)
        given = None
    else:
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"out: {type(out).__name__} is not a pair (values, indices) of arrays")
        given = out
        values, indices = (own(o, f"out[{i}]", writable=True) for i, o in enumerate(out))
        values, indices = output(values, shape, dtype, device, stream), output(indices, shape, DataType.kInt64, device, stream)
        if overlaps(values, indices, False):
            raise ValueError("out: its values and indices share memory; expected two separate arrays")
        # Two launches read x: neither output may overwrite it before the other has read it.
        x = unaliased(unaliased(x, values, device, stream), indices, device, stream)
    _launch(index_op, device, stream, x, shape, dim, dtype, DataType.kInt64, indices)
    _launch(value_op, device, stream, x, shape, dim, dtype, dtype, values)
    return ValuesIndices(*given) if given is not None else ValuesIndices(values, indices)


@same_kind("x")
def cummax(x, dim, *, out=None, stream=None) -> ValuesIndices:
    """The running maximum of x along dim and its int64 index, as torch.cummax: (values, indices),
    the index the last of equal values' (torch's), NaN from the first NaN on (the latest NaN's index)."""
    return _extremes(ReduceOp.kMax, ReduceOp.kArgMax, x, dim, out, stream)


@same_kind("x")
def cummin(x, dim, *, out=None, stream=None) -> ValuesIndices:
    """The running minimum of x along dim and its int64 index, as torch.cummin (see cummax)."""
    return _extremes(ReduceOp.kMin, ReduceOp.kArgMin, x, dim, out, stream)
