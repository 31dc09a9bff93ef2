"""Loading an element from storage into its compute type, and storing a computed value back."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math.bfloat16 import bfloat16_to_float, float_to_bfloat16
from ep.common.math.half import half_routines
from ep.common.math.special import as_type
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType


@scalar_function
def _same(x):
    return x


@scalar_function
def _nonzero(x):
    return x != 0


def _integer_store(np_type: type) -> Callable:
    @scalar_function
    def store(value):
        return as_type(value, np_type(0))

    return store


# Explicit on every path: compiled kernels would convert in the array store anyway, but the CUDA
# simulator runs a kernel's body as Python, where a wide int64 result overflows NumPy's store.
_INTEGER_STORES = {dtype: _integer_store(dtype.dtype.type) for dtype in DataType if dtype.is_integer}


def load_fn(dtype: DataType, device: DeviceType, nan_payload: bool = True) -> Callable:
    """Storage element -> compute value (float16 or bfloat16 bits -> float32) in device's kernels;
    nan_payload False: a float16 NaN may become any NaN (HalfRoutines.half_to_float_any_nan)."""
    if dtype is DataType.kBFloat16:
        return bfloat16_to_float
    if dtype is DataType.kFloat16:
        routines = half_routines(device)
        return routines.half_to_float if nan_payload else routines.half_to_float_any_nan
    return _same


def store_fn(dtype: DataType, device: DeviceType, compute_dtype: np.dtype | None = None) -> Callable:
    """Compute value -> storage element in device's kernels (the same values on every device, the
    CUDA simulator included).

    float32 -> float16 or bfloat16 bits; anything -> bool as != 0; integers wrap to an integer
    dtype; floats go to an integer dtype truncated toward zero, saturated to its range, NaN to 0
    (as_type). compute_dtype is the type of the stored value where the kernel knows it: a float64
    value goes to float16 rounded once, as NumPy rounds it (through float32 it would be rounded
    twice), and to bfloat16 through float32, as ml_dtypes and PyTorch round it.
    """
    if dtype is DataType.kBFloat16:
        return float_to_bfloat16
    if dtype is DataType.kFloat16:
        routines = half_routines(device)
        return routines.double_to_half if compute_dtype == np.float64 else routines.float_to_half
    if dtype is DataType.kBool:
        return _nonzero
    return _INTEGER_STORES.get(dtype, _same)
