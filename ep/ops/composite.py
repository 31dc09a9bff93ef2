"""PyTorch's ops made of elementwise ones, each run as one fused kernel (ep.fuse): clamp with array or
scalar bounds, lerp, addcmul, addcdiv, nan_to_num, masked_fill, tril and triu.

They take what ep.fuse takes (NumPy, PyTorch, CuPy and numba arrays of any strides, Python and NumPy
scalars, global tensors, which take ep.fuse's SBP signatures) and its out= and stream=. Their dtypes are those of the unfused chain of
ep.ops: NumPy 2's promotion (NEP 50), where torch promotes an integer tensor with a float scalar to
float32 and NumPy to float64; float16 and bfloat16 round after each step, as ep.fuse's do.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ep.common.primitive.operands import device_of, on_device, stream_for
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.scalar import is_scalar, scalar_value
from ep.common.runtime.validate import integer
from ep.ops.arrays import same_kind
from ep.ops.binary import binary
from ep.ops.fuse import fuse
from ep.ops.unary import unary
from ep.ops.where import where

__all__ = ["addcdiv", "addcmul", "clamp", "lerp", "masked_fill", "nan_to_num", "tril", "triu"]

_AT_LEAST = fuse(lambda x, low: binary("max", x, low))
_AT_MOST = fuse(lambda x, high: binary("min", x, high))
_BETWEEN = fuse(lambda x, low, high: binary("min", binary("max", x, low), high))


def clamp(x, min=None, max=None, *, out=None, stream=None):  # noqa: A002 - torch.clamp's names
    """x limited to [min, max], as torch.clamp: max(x, min), then min(that, max), so that max wins
    where min > max; min and max are arrays (broadcast with x) or scalars, either may be None (not
    both). A NaN in x or in a bound gives NaN."""
    if min is None and max is None:
        raise ValueError("min, max: both are None; expected at least one bound (torch.clamp's rule)")
    if max is None:
        return _AT_LEAST(x, min, out=out, stream=stream)
    if min is None:
        return _AT_MOST(x, max, out=out, stream=stream)
    return _BETWEEN(x, min, max, out=out, stream=stream)


# torch.lerp's two formulas: from start for |weight| < 1/2, from end beyond, so that weight 1 gives end exactly.
_LERP_FROM_START = fuse(lambda start, end, weight: start + weight * (end - start))
_LERP_FROM_END = fuse(lambda start, end, rest: end - (end - start) * rest)
_LERP = fuse(
    lambda start, end, weight: where(
        unary("abs", weight) < 0.5, start + weight * (end - start), end - (end - start) * (1 - weight)
    )
)


def _floating(name: str, value) -> None:
    """Refuses an integer or bool array or scalar, naming it, as torch refuses them."""
    dtype = as_data_type(type(value) if is_scalar(value) else value.dtype, name)
    if not dtype.is_floating:
        raise TypeError(f"{name}: has dtype {dtype.value}; expected a float dtype (torch refuses integers here)")


def lerp(start, end, weight, *, out=None, stream=None):
    """start + weight * (end - start), as torch.lerp computes it (from end when |weight| >= 1/2);
    start, end and weight are float arrays (broadcast together) or, weight, a float scalar.
    Integer and bool inputs are a TypeError, as in torch."""
    for name, value in (("start", start), ("end", end), ("weight", weight)):
        if not (name == "weight" and is_scalar(weight) and not isinstance(weight, (bool, int))):
            _floating(name, value)
    if is_scalar(weight):
        if abs(weight) < 0.5:
            return _LERP_FROM_START(start, end, weight, out=out, stream=stream)
        return _LERP_FROM_END(start, end, 1 - weight, out=out, stream=stream)
    return _LERP(start, end, weight, out=out, stream=stream)


_ADDCMUL = fuse(lambda input, tensor1, tensor2, value: input + value * tensor1 * tensor2)
_ADDCDIV = fuse(lambda input, tensor1, tensor2, value: input + value * tensor1 / tensor2)


def addcmul(input, tensor1, tensor2, *, value=1, out=None, stream=None):  # noqa: A002 - torch's name
    """input + value * tensor1 * tensor2, as torch.addcmul (arrays broadcast together)."""
    return _ADDCMUL(input, tensor1, tensor2, value, out=out, stream=stream)


def addcdiv(input, tensor1, tensor2, *, value=1, out=None, stream=None):  # noqa: A002 - torch's name
    """input + value * tensor1 / tensor2, as torch.addcdiv (arrays broadcast together); integer and
    bool tensor1 and tensor2 are a TypeError, as torch refuses integer division there."""
    _floating("tensor1", tensor1)
    _floating("tensor2", tensor2)
    return _ADDCDIV(input, tensor1, tensor2, value, out=out, stream=stream)


_NAN_TO_NUM = fuse(
    lambda x, nan, posinf, neginf: where(x != x, nan, where(x == math.inf, posinf, where(x == -math.inf, neginf, x)))
)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None, *, out=None, stream=None):
    """x with NaN replaced by nan, +inf by posinf and -inf by neginf, as torch.nan_to_num and
    np.nan_to_num: posinf and neginf default to the largest and lowest finite values of x's dtype.
    Integer and bool inputs come back as a copy."""
    dtype = as_data_type(x.dtype, "x")
    if not dtype.is_floating:
        return unary("identity", x, out=out, stream=stream)
    largest = float(ml_dtypes.finfo(dtype.dtype).max)  # NumPy's finfo, and bfloat16's
    posinf = largest if posinf is None else posinf
    neginf = -largest if neginf is None else neginf
    return _NAN_TO_NUM(x, nan, posinf, neginf, out=out, stream=stream)


_MASKED_FILL = fuse(lambda x, mask, value: where(mask, value, x))


def masked_fill(x, mask, value, *, out=None, stream=None):
    """x with value where mask (bool, broadcast to x's shape) is True, as torch.masked_fill: value
    is a scalar or a 0-d array, converted to x's dtype (a float into an integer dtype truncates, as
    torch does; a value out of its range is an OverflowError naming value)."""
    if not is_scalar(value):
        if tuple(value.shape) != ():
            raise ValueError(f"value: has shape {tuple(value.shape)}; expected a scalar or a 0-d array")
        value = value.item() if hasattr(value, "item") else value.copy_to_host()[()]
    dtype = as_data_type(x.dtype, "x")
    # A NumPy scalar of x's own dtype (scalar_value's is its compute dtype: float32 for float16).
    value = dtype.dtype.type(scalar_value(value, "value", dtype))
    return _MASKED_FILL(x, mask, value, out=out, stream=stream)


# Element (i, j) of each matrix kept where j - i <= k (tril) or >= k (triu), else zero: one kernel
# reading x and two index vectors (rows as a column, cols as a row) that broadcast to it.
_TRIL = fuse(lambda x, rows, cols, k, zero: where(cols - rows <= k, x, zero))
_TRIU = fuse(lambda x, rows, cols, k, zero: where(cols - rows >= k, x, zero))


def _triangle(fused, name: str, x, diagonal, out, stream):
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"x: has {len(shape)} dims; {name} expects at least 2 (a matrix or a batch of them)")
    diagonal = integer(diagonal, "diagonal")
    device = device_of(x, "x")
    stream = stream_for(device, stream)
    rows = on_device(np.arange(shape[-2], dtype=np.int64).reshape(-1, 1), device, stream)
    cols = on_device(np.arange(shape[-1], dtype=np.int64), device, stream)
    zero = as_data_type(x.dtype, "x").dtype.type(0)  # x's own dtype: a Python 0 would promote bool
    return fused(x, rows, cols, diagonal, zero, out=out, stream=stream)


@same_kind("x")
def tril(x, diagonal=0, *, out=None, stream=None):
    """The lower triangle of each matrix of x (its last two dims), as torch.tril: elements (i, j)
    with j - i <= diagonal kept, the others zero."""
    return _triangle(_TRIL, "tril", x, diagonal, out, stream)


@same_kind("x")
def triu(x, diagonal=0, *, out=None, stream=None):
    """The upper triangle of each matrix of x (its last two dims), as torch.triu: elements (i, j)
    with j - i >= diagonal kept, the others zero."""
    return _triangle(_TRIU, "triu", x, diagonal, out, stream)
