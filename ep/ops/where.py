"""ep.ops.where: np.where / torch.where with three operands, on the Where primitive."""
from __future__ import annotations

import numpy as np

from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.operands import CPU, check_out, contiguous, device_of, output, stream_for, unaliased
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.scalar import is_scalar, result_dtype, scalar_value
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.where import WhereFactory
from ep.ops.arrays import same_kind
from ep.ops.full import full
from ep.ops.unary import unary


def where_dtype(condition, x, y) -> DataType:
    """The result's DataType, x's and y's promotion (arrays, or anything with a shape and dtype,
    and scalars), after checking condition is bool."""
    if (np.dtype(type(condition)) if is_scalar(condition) else np.dtype(condition.dtype)) != np.bool_:
        got = type(condition).__name__ if is_scalar(condition) else f"dtype {np.dtype(condition.dtype).name}"
        raise TypeError(f"condition: has {got}; expected bool (compare it first, e.g. condition != 0)")
    return as_data_type(result_dtype(x, y), "x, y")


@same_kind("condition", "x", "y")
def where(condition, x, y, *, out=None, stream=None):
    """x where condition is True, else y: np.where(condition, x, y) and torch.where's semantics.

    condition must be bool (an array or a Python bool; another dtype is a TypeError naming it).
    The three broadcast together (NumPy's rules); the result dtype is x's and y's promotion as in
    NumPy 2 (NEP 50: a Python scalar x or y is weak, so where(c, int8_array, 3) is int8, and a
    value out of that dtype's range is an OverflowError). Arrays may be of any shape and strides
    on one device; out receives the result (the broadcast shape, the result dtype, that device),
    stream defaults to the device's default stream. Global tensors give a global tensor.
    """
    operands = (("condition", condition), ("x", x), ("y", y))
    arrays = {name: value for name, value in operands if not is_scalar(value)}
    devices = {name: device_of(value, name) for name, value in arrays.items()}
    device = next(iter(devices.values()), CPU)
    for name, other in devices.items():
        if other.device_type is not device.device_type:
            first = next(iter(devices))
            raise TypeError(f"{name}: is on {other.device_type.value}, {first} on {device.device_type.value}; expected one device")
    dtype = where_dtype(condition, x, y)
    shape = broadcast_shape(
        broadcast_shape(np.shape(condition), np.shape(x), ("condition", "x")), np.shape(y), ("the broadcast of condition and x", "y")
    )
    stream = stream_for(device, stream)
    if out is not None:
        check_out(out, "out", shape, dtype, device)
    buffers = []
    for name, value in operands:
        wanted = DataType.kBool if name == "condition" else dtype
        if is_scalar(value):
            # A one-element array of the scalar, made on the device by Fill (no host copy).
            value = full((), scalar_value(value, name, wanted), dtype=wanted, device=device, stream=stream)
        elif as_data_type(value.dtype, name) is not wanted:
            value = unary("cast", value, dtype=wanted, stream=stream)
        else:
            value = contiguous(value, device, stream, name=name)
        if out is not None:
            # An input read where out is written (same shape) may be out itself; any other overlap is copied.
            value = unaliased(value, out, device, stream, elementwise=tuple(value.shape) == shape)
        buffers.append(value)
    dims = simplify_broadcast_dims(*(tuple(b.shape) for b in buffers))
    if len(dims[0]) > MAX_NUM_DIMS:
        raise ValueError(
            f"condition, x, y: shapes {tuple(np.shape(condition))}, {tuple(np.shape(x))} and {tuple(np.shape(y))} broadcast "
            f"to {shape} in {len(dims[0])} alternating dims after merging; at most {MAX_NUM_DIMS} are supported"
        )
    primitive = NewPrimitive(WhereFactory, device, DataType.kBool, dtype, MAX_NUM_DIMS)
    out = output(out, shape, dtype, device, stream)
    c, a, b = buffers
    primitive.launch_trusted(stream, len(dims[0]), dims[0], c, len(dims[1]), dims[1], a, len(dims[2]), dims[2], b, out)
    return out
