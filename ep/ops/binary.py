"""ep.ops.binary: a BroadcastElementwiseBinary over two arrays (or an array and a scalar), NumPy-style."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ep.common.math.aliases import checks_negative_powers, refuse_alias
from ep.common.math.binary_functor import BINARY_FUNCTORS, binary_dst_dtype, binary_keyword_attrs, binary_source
from ep.common.math.ops.record import document_ops
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.operands import CPU, check_out, contiguous, device_of, stream_for, unaliased
from ep.common.runtime.allocator import empty
from ep.common.runtime.buffer import plain
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.scalar import integer_out_of_range, is_scalar, promote, result_dtype, scalar_promotion_key, scalar_value
from ep.common.runtime.validate import INT64_MAX, INT64_MIN
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.broadcast_elementwise_binary import MAX_NUM_DIMS, BroadcastElementwiseBinaryFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.ops.arrays import same_kind
from ep.ops.unary import unary

_COMPARISONS = frozenset(
    (BinaryOp.kEqual, BinaryOp.kNotEqual, BinaryOp.kLessThan, BinaryOp.kLessEqual, BinaryOp.kGreaterThan, BinaryOp.kGreaterEqual)
)
_LOGICAL = frozenset((BinaryOp.kLogicalAnd, BinaryOp.kLogicalOr, BinaryOp.kLogicalXor))


def binary_src_dtype(a: object, b: object) -> DataType:
    """The dtype both operands are computed in: NumPy 2's promotion of a and b (scalar.result_dtype)."""
    return as_data_type(result_dtype(a, b), "a, b")


def _exact_scalar(op: BinaryOp, value: object, name: str, src_dtype: DataType, array_dtype: DataType) -> tuple[object, DataType]:
    """(value, src_dtype) for the scalar operand name beside an array of array_dtype, as NumPy 2
    evaluates it.

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
    if side and op in _COMPARISONS and array_dtype.is_integer:
        return side * math.inf, DataType.kDouble
    if side and op in _LOGICAL:
        return 1, src_dtype
    return value, src_dtype


class _Rule(NamedTuple):
    """What binary makes of (op, attributes, the operands' devices and dtypes) once: all but the
    shapes (_Layout), the buffers and a scalar's value."""

    op: BinaryOp
    primitive: object
    device: object
    src_dtype: DataType
    dst_dtype: DataType
    scalar: int  # the operand that is a scalar: 0 (a), 1 (b), or -1 (neither)
    array_dtype: DataType  # the other operand's own dtype, beside a scalar
    negative_powers: bool  # NumPy's power of integers: b's values are checked on every call


class _Layout(NamedTuple):
    """What binary makes of the operands' shapes (None for a scalar) once."""

    shape: tuple[int, ...]  # the result's
    dims0: tuple[int, ...]  # a's simplified dims, () for a scalar
    dims1: tuple[int, ...]


def _kind(x: object, name: str) -> tuple:
    """What binary's rule and layout depend on in an operand: an array's device, dtype and shape; a
    scalar's type alone (its value is converted on every call)."""
    if is_scalar(x):
        return type(x), None, None
    return device_of(x, name), np.dtype(x.dtype), tuple(x.shape)


def _rule(op, attr0, attr1, device_a, dtype_a, device_b, dtype_b, src_dtype=None) -> _Rule:
    """The rule of op on operands of these devices and dtypes (_kind's: a scalar's device is its
    type, its dtype None); src_dtype overrides NumPy's promotion (a comparison with an int beyond an
    integer array's range)."""
    name, op = op, as_binary_op(op)
    if dtype_a is None and dtype_b is None:
        raise TypeError("a, b: both are scalars; at least one must be an array")
    scalar = 0 if dtype_a is None else 1 if dtype_b is None else -1
    if scalar < 0 and device_a is not device_b:
        raise TypeError(f"a, b: a is on {device_a.device_type.value} and b on {device_b.device_type.value}")
    device, array_dtype = (device_b, dtype_b) if scalar == 0 else (device_a, dtype_a)
    array_dtype = as_data_type(array_dtype, "b" if scalar == 0 else "a")
    if src_dtype is None:
        key_a = scalar_promotion_key(device_a) if scalar == 0 else dtype_a
        key_b = scalar_promotion_key(device_b) if scalar == 1 else dtype_b
        src_dtype = as_data_type(promote(key_a, key_b), "a, b")
    computed = binary_source(name, op, src_dtype)
    if computed is None:
        raise refuse_alias(name, src_dtype, "a, b")
    dst_dtype = binary_dst_dtype(op, computed)
    if dst_dtype is None:
        raise TypeError(f"op: {op.name} does not support dtype {computed.value}")
    primitive = NewPrimitive(BroadcastElementwiseBinaryFactory, device, op, computed, dst_dtype, MAX_NUM_DIMS, attr0, attr1)
    return _Rule(op, primitive, device, computed, dst_dtype, scalar, array_dtype, checks_negative_powers(name, computed))


def _layout(shape_a: tuple[int, ...] | None, shape_b: tuple[int, ...] | None) -> _Layout:
    """The layout of operands of these shapes (None: a scalar, beside an array)."""
    if shape_a is None or shape_b is None:
        shape = shape_b if shape_a is None else shape_a
        flat = (math.prod(shape),)
        return _Layout(shape, (), flat) if shape_a is None else _Layout(shape, flat, ())
    shape = broadcast_shape(shape_a, shape_b, names=("a", "b"))
    return _Layout(shape, *_array_dims(shape_a, shape_b, shape))


# Keyed by the caller's own arguments and the operands' devices and dtypes (names, found as given
# in the common case), so a repeated call skips every normalization, whatever its scalar's value;
# the layout by the shapes alone, which arrays give (tuples of ints: found as given).
_RULES = PlanCache(_rule, by_name=True)
_LAYOUTS = PlanCache(_layout, as_given=True)


def binary_rule(op, attr0, attr1, device_a, dtype_a, shape_a, device_b, dtype_b, shape_b) -> tuple[_Rule, _Layout]:
    """binary's rule and layout on metadata, also a global call's (elementwise_rules)."""
    return _RULES.get(op, attr0, attr1, device_a, dtype_a, device_b, dtype_b), _LAYOUTS.get(shape_a, shape_b)


@same_kind("a", "b")
def binary(op, a, b, attr0=None, attr1=None, *, out=None, stream=None, **attrs):
    """op(a, b) with NumPy broadcasting; a new C-contiguous array of the broadcast shape, or out.

    Either operand may be a Python or NumPy scalar (not both). Arrays of different dtypes are cast
    on the device to np.result_type first; comparison and logical ops give bool. An integer array
    compares with an int outside its dtype's range by value, as NumPy 2 does (torch wraps the int
    into the dtype first: int8 < 1000 is True here, False there); other ops refuse such an int
    (OverflowError, as NumPy).

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
    # NumPy arrays' kinds inline: a tiny call's cost is these lines.
    device_a, dtype_a, shape_a = (CPU, a.dtype, a.shape) if type(a) is np.ndarray else _kind(a, "a")
    device_b, dtype_b, shape_b = (CPU, b.dtype, b.shape) if type(b) is np.ndarray else _kind(b, "b")
    rule = _RULES.get(op, attr0, attr1, device_a, dtype_a, device_b, dtype_b)
    scalar = rule.scalar
    if scalar >= 0:
        name = "ab"[scalar]
        value, src_dtype = _exact_scalar(rule.op, b if scalar else a, name, rule.src_dtype, rule.array_dtype)
        if src_dtype is not rule.src_dtype:
            rule = _RULES.get(op, attr0, attr1, device_a, dtype_a, device_b, dtype_b, src_dtype)
        value = scalar_value(value, name, rule.src_dtype)
        a, b = (value, b) if scalar == 0 else (a, value)
    _, primitive, device, src_dtype, dst_dtype, _, _, negative_powers = rule
    shape, dims0, dims1 = _LAYOUTS.get(shape_a, shape_b)
    if negative_powers:
        _refuse_negative_powers(b)
    stream = stream_for(device, stream)
    given = out
    if out is None:
        out = empty(shape, dst_dtype, device, stream)
    elif not (device is CPU and plain(out) and out.dtype is dst_dtype.dtype and out.shape == shape and out.flags.writeable):
        check_out(out, "out", shape, dst_dtype, device)
    if scalar != 0:
        a = _operand(a, "a", src_dtype, given, device, stream)
    if scalar != 1:
        b = _operand(b, "b", src_dtype, given, device, stream)
    primitive.launch_trusted(stream, dims0, a, dims1, b, out)
    return out


def _operand(x, name: str, src_dtype: DataType, out, device, stream):
    """An array operand as the primitive takes it: C-contiguous, in src_dtype, and not overlapping
    out (the caller's out=, or None: a result binary made overlaps nothing)."""
    # The common case, plain storage of src_dtype. Two NumPy arrays that own their memory cannot
    # overlap: only views need the overlap test.
    if plain(x) and x.dtype is src_dtype.dtype:
        if out is None or (type(out) is np.ndarray and x.base is None and out.base is None):
            return x
        return unaliased(x, out, device, stream, elementwise=True)
    if x.dtype is not src_dtype.dtype and x.dtype != src_dtype.dtype:
        return unary("cast", x, dtype=src_dtype, stream=stream)
    x = contiguous(x, device, stream, name=name)
    return x if out is None else unaliased(x, out, device, stream, elementwise=True)


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


document_ops(binary, BINARY_FUNCTORS.values(), "a, b")
