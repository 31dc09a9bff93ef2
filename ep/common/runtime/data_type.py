"""DataType: the element types a primitive can be created for."""
from __future__ import annotations

import ml_dtypes  # noqa: F401 - registers NumPy's bfloat16 dtype (np.dtype("bfloat16"))
import numpy as np

from ep.common.runtime.names import NamedEnum, did_you_mean


class DataType(NamedEnum):
    """Element types, named as OneFlow's DataType; each converts to its NumPy dtype."""

    kBool = "bool"
    kInt8 = "int8"
    kUInt8 = "uint8"
    kInt16 = "int16"
    kUInt16 = "uint16"
    kInt32 = "int32"
    kUInt32 = "uint32"
    kInt64 = "int64"
    kUInt64 = "uint64"
    kFloat16 = "float16"
    kBFloat16 = "bfloat16"
    kFloat = "float32"
    kDouble = "float64"
    # NumPy's names, the same members: DataType.float32 is DataType.kFloat.
    bool = "bool"
    int8 = "int8"
    uint8 = "uint8"
    int16 = "int16"
    uint16 = "uint16"
    int32 = "int32"
    uint32 = "uint32"
    int64 = "int64"
    uint64 = "uint64"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"

    def __init__(self, value: str) -> None:
        # Plain attributes, not cached properties: every launch's checks read them (a third the cost).
        self.dtype = np.dtype(value)  # the NumPy dtype; np.dtype(DataType.kFloat) works through it
        # The dtype scalar math runs in, and the one kernels see: float16 and bfloat16 compute in
        # float32 and move as their 16-bit patterns (Numba has neither type).
        half = value in ("float16", "bfloat16")
        self.compute_dtype = np.dtype(np.float32) if half else self.dtype
        self.storage_dtype = np.dtype(np.uint16) if half else self.dtype

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def is_floating(self) -> bool:
        return self in FLOATING_TYPES

    @property
    def is_integer(self) -> bool:
        return self in INTEGER_TYPES

    @classmethod
    def _missing_(cls, value: object) -> DataType | None:
        # DataType(np.float32), DataType(np.dtype("float32")) and DataType("kFloat") work like DataType("float32").
        if isinstance(value, str) and value in cls.__members__:
            return cls.__members__[value]
        if value is None:
            return None
        try:
            dtype = np.dtype(value)
        except (TypeError, ValueError):
            return None
        return next((member for member in cls if member.value == dtype.name), None)


FLOATING_TYPES = (DataType.kFloat16, DataType.kBFloat16, DataType.kFloat, DataType.kDouble)
#: The floating dtypes computed in float32 and stored as 16-bit patterns.
HALF_TYPES = (DataType.kFloat16, DataType.kBFloat16)
INTEGER_TYPES = (DataType.kInt8, DataType.kUInt8, DataType.kInt16, DataType.kUInt16, DataType.kInt32,
                 DataType.kUInt32, DataType.kInt64, DataType.kUInt64)
ALL_TYPES = tuple(DataType)
INDEX_TYPES = (DataType.kInt32, DataType.kInt64)

_BY_DTYPE = {dt.dtype: dt for dt in DataType}


def as_data_type(value: object, name: str = "dtype") -> DataType:
    """A DataType from a DataType, a NumPy dtype, anything np.dtype accepts but None, or a PyTorch
    dtype (torch.float16); TypeError naming name otherwise (np.dtype(None) is float64, which no
    caller means)."""
    if isinstance(value, DataType):
        return value
    if isinstance(value, np.dtype) and (found := _BY_DTYPE.get(value)) is not None:
        return found  # the common case, in one lookup
    try:
        # A torch.dtype prints as torch.<NumPy's name>; read so, torch is never imported here.
        key = str(value).removeprefix("torch.") if type(value).__module__ == "torch" else value
        dtype = None if value is None else np.dtype(key)
        found = None if dtype is None else _BY_DTYPE.get(dtype)
    except (TypeError, ValueError):
        dtype = found = None
    if found is None and dtype is not None and not dtype.isnative and dtype.newbyteorder("=") in _BY_DTYPE:
        # As torch.from_numpy: a kernel reads native words, and a swapped copy would be a hidden one.
        raise TypeError(
            f"{name}: {value!r} is {_BY_DTYPE[dtype.newbyteorder('=')].value} in the other byte order; ep takes native"
            " byte order, as PyTorch does (array.astype(array.dtype.newbyteorder('=')) converts an array)"
        )
    if found is None:
        names = ", ".join(dt.value for dt in DataType)
        hint = did_you_mean(value, [dt.value for dt in DataType])
        raise TypeError(f"{name}: {value!r} is not a supported data type; {hint + ' ' if hint else ''}expected one of {names}")
    return found
