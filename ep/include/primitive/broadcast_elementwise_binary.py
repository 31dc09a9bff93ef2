"""BroadcastElementwiseBinary: dst = op(src0, src1) with NumPy broadcasting of the two operands.

Besides the interface, the public rules of its scalar operands, which ops follow too: what counts
as a scalar, and how its value is converted to the primitive's src dtype.
"""
from __future__ import annotations

import abc
import math
from typing import Sequence

import numpy as np

from ep.common.runtime.data_type import DataType
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.include.primitive.primitive import Factory, Primitive

__all__ = [
    "MAX_NUM_DIMS",
    "BroadcastElementwiseBinary",
    "BroadcastElementwiseBinaryFactory",
    "is_scalar",
    "scalar_value",
]

_SCALAR_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def is_scalar(obj: object) -> bool:
    """True for a Python or NumPy real scalar (a scalar operand), False for anything else."""
    return isinstance(obj, _SCALAR_TYPES)


def scalar_value(value: object, name: str, dtype: DataType):
    """A scalar operand converted to dtype (as OneFlow's Scalar overloads do), in its compute dtype.

    Raises TypeError for a non-scalar, ValueError when the value has no such conversion: NaN or inf
    to an integer dtype, or an integer outside the dtype's range.
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


class BroadcastElementwiseBinary(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, src0_dims: Sequence[int], src0, src1_dims: Sequence[int], src1, dst) -> None:
        """Write op(src0, src1), broadcast to the shape of both dims, to the C-contiguous dst.

        src0 and src1 are flat C-contiguous storage of their dims, or a Python or NumPy scalar with
        dims () (the scalar path: the value is converted to the primitive's src dtype).
        """


class BroadcastElementwiseBinaryFactory(Factory):
    @abc.abstractmethod
    def New(
        self, op, src_dtype, dst_dtype, max_num_dims: int = MAX_NUM_DIMS, attr0=None, attr1=None
    ) -> BroadcastElementwiseBinary | None:
        """A BroadcastElementwiseBinary for op from src_dtype to dst_dtype for operands of at most
        max_num_dims dims, or None if unsupported (including max_num_dims above MAX_NUM_DIMS)."""
