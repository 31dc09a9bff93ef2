"""The host side of a BroadcastElementwiseBinary Launch, shared by both devices.

It checks the launch arguments, simplifies the broadcast (OneFlow's SimplifyBroadcastDims) and
picks the path: elementwise (equal shapes), scalar (a value or a one-element operand), row or
column broadcast (two dims after simplification), or general (NdIndexOffsetHelper, 0 strides on
broadcast dims). Kernels get only sizes and strides from here, never shapes to interpret.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ep.common.math.binary_functor import resolve_binary
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.runtime.buffer import storage
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType
from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.include.primitive.broadcast_elementwise_binary import MAX_NUM_DIMS

# Kernels take strides as tuples of this length (padded with 0), so one compiled kernel serves
# every rank.
STRIDES_LEN = 8

_SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def is_scalar(obj: object) -> bool:
    """True for a Python or NumPy real scalar (the scalar path), False for anything else."""
    return isinstance(obj, _SCALAR_TYPES)


def check_dims(dims: object, name: str, max_num_dims: int) -> tuple[int, ...]:
    """dims as a tuple of non-negative ints, at most max_num_dims of them."""
    try:
        items = tuple(dims)
    except TypeError:
        raise TypeError(f"{name}: {dims!r} is not a sequence of sizes") from None
    out = []
    for size in items:
        if isinstance(size, (bool, np.bool_)):
            raise TypeError(f"{name}: {dims!r} holds {size!r}, which is not an integer size")
        try:
            size = operator.index(size)
        except TypeError:
            raise TypeError(f"{name}: {dims!r} holds {size!r}, which is not an integer size") from None
        if size < 0:
            raise ValueError(f"{name}: {dims!r} holds the negative size {size}")
        out.append(size)
    if len(out) > max_num_dims:
        raise ValueError(f"{name}: has {len(out)} dims, more than the primitive's max_num_dims {max_num_dims}")
    return tuple(out)


def scalar_value(value: object, name: str, dtype: DataType):
    """A scalar operand converted to dtype (as OneFlow's Scalar overloads do), in its compute dtype.

    Raises ValueError when the value has no such conversion: NaN or inf to an integer dtype, or an
    integer outside the dtype's range.
    """
    if not is_scalar(value):
        raise TypeError(f"{name}: {value!r} is not a real scalar")
    compute = dtype.compute_dtype.type
    if dtype is DataType.kBool:
        return np.bool_(value != 0)
    if dtype.is_floating:
        return compute(dtype.dtype.type(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"{name}: {value!r} has no {dtype.value} value")
        value = math.trunc(value)
    info = np.iinfo(dtype.dtype)
    if not info.min <= int(value) <= info.max:
        raise ValueError(f"{name}: {value!r} is out of the range of {dtype.value} [{info.min}, {info.max}]")
    return compute(int(value))


def host_element(flat, dtype: DataType):
    """The first element of NumPy flat storage as a compute-dtype scalar (float16 moves as uint16)."""
    return dtype.compute_dtype.type(flat[:1].view(dtype.dtype)[0])


def padded(values: Sequence[int]) -> tuple[int, ...]:
    """values padded with 0 to STRIDES_LEN entries."""
    return tuple(values) + (0,) * (STRIDES_LEN - len(values))


@dataclass(frozen=True)
class BinaryPlan:
    """How a launch runs.

    path: "empty" (nothing to write), "elementwise" (both operands have count elements in dst's
    order), "scalar" (operand `side` is one element), "row" / "column" (dst is rows x cols and
    operand `side` is one row, of cols elements, or one column, of rows elements), or "general".
    dims is the simplified dst shape and strides0/strides1/dst_strides its element strides, 0 on
    the broadcast dims; they describe every path but "empty".
    """

    path: str
    count: int
    side: int
    dims: tuple[int, ...]
    strides0: tuple[int, ...]
    strides1: tuple[int, ...]
    dst_strides: tuple[int, ...]

    @property
    def rows(self) -> int:
        return self.dims[0]

    @property
    def cols(self) -> int:
        return self.dims[1]


def plan_binary(dims0: tuple[int, ...], dims1: tuple[int, ...], value0: bool, value1: bool) -> BinaryPlan:
    """The path for operands of dims0 and dims1; value0/value1 say an operand is a scalar value."""
    a, b = simplify_broadcast_dims(dims0, dims1)
    dims = broadcast_shape(a, b)
    count = math.prod(dims)
    strides0, strides1 = broadcast_strides(a, dims), broadcast_strides(b, dims)
    dst_strides = contiguous_strides(dims)
    size0, size1 = math.prod(a), math.prod(b)
    side = 0
    if count == 0:
        path = "empty"
    elif a == b and not (value0 or value1):
        path = "elementwise"
    elif value0 or value1 or size0 == 1 or size1 == 1:
        path = "scalar"
        # A value is always the scalar side; else the one-element operand.
        side = 0 if value0 or (size0 == 1 and not value1) else 1
    elif len(dims) == 2 and (size0 == count or size1 == count):
        side = 1 if size0 == count else 0
        broadcast = b if side else a
        path = "row" if broadcast[0] == 1 else "column"
    else:
        path = "general"
    return BinaryPlan(path, count, side, dims, strides0, strides1, dst_strides)


def check_launch(src0_dims, src0, src1_dims, src1, max_num_dims: int):
    """(dims0, dims1, dst dims) checked: dims within max_num_dims, a scalar only with dims (), broadcastable.

    Raises TypeError when both operands are scalars, ValueError naming both dims when they do not
    broadcast.
    """
    dims0 = check_dims(src0_dims, "src0_dims", max_num_dims)
    dims1 = check_dims(src1_dims, "src1_dims", max_num_dims)
    for name, obj, dims in (("src0", src0, dims0), ("src1", src1, dims1)):
        if is_scalar(obj) and dims != ():
            raise ValueError(f"{name}: a scalar operand has dims (); got {name}_dims={dims}")
    if is_scalar(src0) and is_scalar(src1):
        raise TypeError("src0, src1: both are scalars; at least one must be a buffer")
    return dims0, dims1, broadcast_shape(dims0, dims1, names=("src0_dims", "src1_dims"))


def prepare_launch(device_type: DeviceType, src_dtype: DataType, dst_dtype: DataType, max_num_dims: int,
                   src0_dims, src0, src1_dims, src1, dst):
    """(operand0, operand1, dst, plan) for a Launch, everything checked before any kernel runs.

    Each operand comes back as flat storage of its dims' size or, for a scalar, as its value in the
    compute dtype; dst as flat storage of the broadcast size.
    """
    dims0, dims1, dims = check_launch(src0_dims, src0, src1_dims, src1, max_num_dims)
    operands = []
    for name, obj, obj_dims in (("src0", src0, dims0), ("src1", src1, dims1)):
        if is_scalar(obj):
            operands.append(scalar_value(obj, name, src_dtype))
        else:
            operands.append(storage(obj, name, device_type, src_dtype, math.prod(obj_dims)))
    out = storage(dst, "dst", device_type, dst_dtype, math.prod(dims), writable=True)
    plan = plan_binary(dims0, dims1, is_scalar(src0), is_scalar(src1))
    return operands[0], operands[1], out, plan


def resolve_new(op, src_dtype, dst_dtype, max_num_dims, attr0, attr1):
    """(op, src, dst, max_num_dims, attrs) normalized for a factory's New, or None when unsupported
    (an (op, dtype) combination that does not exist, or max_num_dims above MAX_NUM_DIMS)."""
    if isinstance(max_num_dims, (bool, np.bool_)):
        raise TypeError(f"max_num_dims: {max_num_dims!r} is not an integer")
    try:
        max_num_dims = operator.index(max_num_dims)
    except TypeError:
        raise TypeError(f"max_num_dims: {max_num_dims!r} is not an integer") from None
    if max_num_dims < 0:
        raise ValueError(f"max_num_dims: {max_num_dims} is negative")
    resolved = resolve_binary(op, src_dtype, dst_dtype, attr0, attr1)
    if resolved is None or max_num_dims > MAX_NUM_DIMS:
        return None
    op, src_dtype, dst_dtype, attrs = resolved
    return op, src_dtype, dst_dtype, max_num_dims, attrs
