"""Loading an element from storage into its compute type, and storing a computed value back."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ep.common.runtime.data_type import DataType
from ep.common.math.half import double_to_half, float_to_half, half_to_float
from ep.common.jit import scalar_function


@scalar_function
def _same(x):
    return x


@scalar_function
def _nonzero(x):
    return x != 0


def load_fn(dtype: DataType) -> Callable:
    """Storage element -> compute value (float16 bits -> float32)."""
    return half_to_float if dtype is DataType.kFloat16 else _same


def store_fn(dtype: DataType, compute_dtype: np.dtype | None = None) -> Callable:
    """Compute value -> storage element (float32 -> float16 bits, anything -> bool as != 0).

    compute_dtype is the type of the stored value where the kernel knows it: a float64 value goes
    to float16 rounded once (through float32 it would be rounded twice). Other dtypes rely on the
    array store's own C-style conversion.
    """
    if dtype is DataType.kFloat16:
        return double_to_half if compute_dtype == np.float64 else float_to_half
    if dtype is DataType.kBool:
        return _nonzero
    return _same
