"""ep.ops.binary: a BroadcastElementwiseBinary over two arrays (or an array and a scalar), NumPy-style."""
from __future__ import annotations

import math

import numpy as np

from ep.common.math.aliases import alias_dtype, checks_negative_powers, refuse_alias
from ep.common.math.binary_functor import BINARY_FUNCTORS, binary_dst_dtype, binary_keyword_attrs
from ep.common.math.ops.record import document_ops
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import DeviceType, GetDevice
from ep.common.runtime.allocator import host_empty
from ep.common.runtime.buffer import plain
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.validate import INT64_MAX, INT64_MIN
from ep.common.runtime.scalar import integer_out_of_range, is_scalar, result_dtype, scalar_value
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.broadcast_elementwise_binary import MAX_NUM_DIMS, BroadcastElementwiseBinaryFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import check_out, contiguous, device_of, output, same_kind, stream_for, unaliased
from ep.ops.unary import unary

_CPU = GetDevice(DeviceType.kCPU)
_COMPARISONS = frozenset(
    (BinaryOp.kEqual, BinaryOp.kNotEqual, BinaryOp.kLessThan, BinaryOp.kLessEqual, BinaryOp.kGreaterThan, BinaryOp.kGreaterEqual)
)
_LOGICAL = frozenset((BinaryOp.kLogicalAnd, BinaryOp.kLogicalOr, BinaryOp.kLogicalXor))


def binary_src_dtype(a: object, b: object) -> DataType:
    """The dtype both operands are computed in: NumPy 2's promotion of a and b (scalar.result_dtype)."""
    return as_data_type(result_dtype(a, b), "a, b")


def _exact_scalar(op: BinaryOp, value: object, name: str, src_dtype: DataType, array: object) -> tuple[object, DataType]:
    """(value, src_dtype) for the scalar operand name beside array, as NumPy 2 evaluates it.

    An integer outside an integer src_dtype's range has no value in it. NumPy compares an integer
    array with any such int (as with +-inf: every element is below or above it); a logical op
    takes any int within int64 (it sees only that it is nonzero) and none beyond. Other ops keep
    it, and scalar_value refuses it (OverflowError, as NumPy).
    """
    if not isinstance(value, (int, np.integer)):
        return value, src_dtype
    if op in _LOGICAL and not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError(f"{name}: {value!r} does not fit in int64")
    side = integer_out_of_range(value, src_dtype)
    if side and op in _COMPARISONS and np.dtype(array.dtype).kind in "iu":
        return side * math.inf, DataType.kDouble
    if side and op in _LOGICAL:
        return 1, src_dtype
    return value, src_dtype


@same_kind("a", "b")
def binary(op, a, b, attr0=None, attr1=None, *, out=None, stream=None, **attrs):
    """op(a, b) with NumPy broadcasting; a new C-contiguous array of the broadcast shape, or out.

    Either operand may be a Python or NumPy scalar (not both). Arrays of different dtypes are cast
    on the device to np.result_type first; comparison and logical ops give bool.

    op is a BinaryOp or a name: its own ("less_than"), OneFlow's ("kLessThan") or NumPy's and
    PyTorch's ("less", "lt", "remainder"), which compute what that library computes (NumPy's true_divide
    of ints gives float64, OneFlow's div ints). attr0 and attr1 are the op's attributes in order; each may
    instead be given by its keyword (rtol=1e-3), not both; one left out takes its default. Integer
    dtypes wrap on overflow, as NumPy's, and no integer op traps: the lines below say what a zero
    divisor or a negative exponent gives.

    The ops, as calls with their attributes' defaults [OneFlow name; aliases; source dtypes]:
    """
    if attrs:
        attr0, attr1 = binary_keyword_attrs(op, attrs, attr0, attr1)
    if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is b.dtype:
        # Two CPU arrays of one dtype: everything but the buffers comes from the cache.
        primitive, dst_dtype, shape, dims0, dims1 = _ARRAY_PLANS.get(op, a.dtype, a.shape, b.shape, attr0, attr1)
        # None: a NumPy alias that computes in another dtype, which the general path below casts to.
        if primitive is not None:
            stream = stream_for(_CPU, stream)
            a = contiguous(a, _CPU)
            b = contiguous(b, _CPU)
            if out is None:
                out = host_empty(shape, dst_dtype.dtype)
            else:
                if not (plain(out) and out.dtype is dst_dtype.dtype and out.shape == shape and out.flags.writeable):
                    check_out(out, "out", shape, dst_dtype, _CPU)
                # Arrays that own their memory cannot overlap out: only views need the overlap test.
                if a is not out and (a.base is not None or out.base is not None):
                    a = unaliased(a, out, _CPU, stream, elementwise=True)
                if b is not out and (b.base is not None or out.base is not None):
                    b = unaliased(b, out, _CPU, stream, elementwise=True)
            primitive.Launch(stream, dims0, a, dims1, b, out)
            return out
    name, op = op, as_binary_op(op)
    if is_scalar(a) and is_scalar(b):
        raise TypeError("a, b: both are scalars; at least one must be an array")
    arrays = [(operand, x) for operand, x in (("a", a), ("b", b)) if not is_scalar(x)]
    devices = {operand: device_of(x, operand) for operand, x in arrays}
    device = next(iter(devices.values()))
    if len({d.device_type for d in devices.values()}) > 1:
        raise TypeError(f"a, b: a is on {devices['a'].device_type.value} and b on {devices['b'].device_type.value}")
    src_dtype = binary_src_dtype(a, b)
    if is_scalar(a):
        a, src_dtype = _exact_scalar(op, a, "a", src_dtype, b)
    elif is_scalar(b):
        b, src_dtype = _exact_scalar(op, b, "b", src_dtype, a)
    computed = alias_dtype(name, src_dtype)
    if computed is None:
        raise refuse_alias(name, src_dtype, "a, b")
    if checks_negative_powers(name, computed):
        _refuse_negative_powers(b)
    src_dtype = computed
    dst_dtype = binary_dst_dtype(op, src_dtype)
    if dst_dtype is None:
        raise TypeError(f"op: {op.name} does not support dtype {src_dtype.value}")
    shape = broadcast_shape(np.shape(a), np.shape(b), names=("a", "b"))
    stream = stream_for(device, stream)
    if out is not None:
        check_out(out, "out", shape, dst_dtype, device)
    operands = []
    for operand, x in (("a", a), ("b", b)):
        if is_scalar(x):
            operands.append(scalar_value(x, operand, src_dtype))
            continue
        if as_data_type(x.dtype, operand) is not src_dtype:
            x = unary("cast", x, dtype=src_dtype, stream=stream)
        else:
            x = contiguous(x, device, stream)
        operands.append(x if out is None else unaliased(x, out, device, stream, elementwise=True))
    a, b = operands
    primitive = NewPrimitive(BroadcastElementwiseBinaryFactory, device, op, src_dtype, dst_dtype, MAX_NUM_DIMS, attr0, attr1)
    out = output(out, shape, dst_dtype, device, stream)
    primitive.Launch(stream, *_launch_dims(a, b, shape), out)
    return out


def _array_plan(op, dtype, a_shape, b_shape, attr0, attr1):
    """(primitive, dst dtype, shape, dims0, dims1) of two CPU arrays of one dtype."""
    name, op = op, as_binary_op(op)
    src_dtype = as_data_type(dtype, "a, b")
    if alias_dtype(name, src_dtype) is not src_dtype or checks_negative_powers(name, src_dtype):
        return None, None, None, None, None
    dst_dtype = binary_dst_dtype(op, src_dtype)
    if dst_dtype is None:
        raise TypeError(f"op: {op.name} does not support dtype {src_dtype.value}")
    shape = broadcast_shape(a_shape, b_shape, names=("a", "b"))
    dims0, dims1 = _array_dims(a_shape, b_shape, shape)
    primitive = NewPrimitive(
        BroadcastElementwiseBinaryFactory, _CPU, op, src_dtype, dst_dtype, MAX_NUM_DIMS, attr0, attr1
    )
    return primitive, dst_dtype, shape, dims0, dims1


# Keyed by the caller's own arguments, so a repeated call skips every normalization.
_ARRAY_PLANS = PlanCache(_array_plan)


def _refuse_negative_powers(b) -> None:
    """NumPy's power of integers: ValueError for a negative exponent (b's values are read on the host)."""
    if is_scalar(b):
        negative = b < 0
    else:
        host = b.copy_to_host() if hasattr(b, "copy_to_host") else np.asarray(b)
        negative = bool((host < 0).any())
    if negative:
        raise ValueError("b: integers to negative integer powers are not allowed (NumPy's power); use pow for OneFlow's rule or a float dtype")


def _array_dims(a_shape: tuple[int, ...], b_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple:
    """(dims0, dims1): the simplified broadcast dims of two arrays, which index the same elements."""
    dims0, dims1 = simplify_broadcast_dims(a_shape, b_shape)
    if len(dims0) > MAX_NUM_DIMS:
        raise ValueError(
            f"a, b: shapes {tuple(a_shape)} and {tuple(b_shape)} broadcast to {shape} in {len(dims0)} "
            f"alternating dims after merging; at most {MAX_NUM_DIMS} are supported"
        )
    return dims0, dims1


def _launch_dims(a, b, shape: tuple[int, ...]) -> tuple:
    """(dims0, a, dims1, b) for Launch, folded so that operands of any rank fit MAX_NUM_DIMS.

    A scalar's dims are (); an array beside a scalar is one flat dim. Two arrays get their
    simplified broadcast dims, which index the same elements.
    """
    if is_scalar(a):
        return (), a, (b.size,), b
    if is_scalar(b):
        return (a.size,), a, (), b
    dims0, dims1 = _array_dims(a.shape, b.shape, shape)
    return dims0, a, dims1, b


document_ops(binary, BINARY_FUNCTORS.values(), "a, b")
