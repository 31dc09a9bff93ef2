"""Copies of arrays between NumPy and an ep device, for tests and self-checks."""
from __future__ import annotations

import numpy as np

from ep.common.runtime.device import DeviceType, as_device_type


def to_device(array, device):
    """A copy of the NumPy array on device ("cpu" or "cuda")."""
    array = np.ascontiguousarray(array)
    if as_device_type(device) is DeviceType.kCPU:
        return array.copy()
    from numba import cuda

    return cuda.to_device(array)


def to_numpy(array) -> np.ndarray:
    """A NumPy copy of a cpu or cuda array: NumPy's, numba's, or another library's (PyTorch, JAX, CuPy)."""
    from ep.common.runtime.dlpack import from_dlpack

    array = from_dlpack(array, "array")
    if isinstance(array, np.ndarray):
        return array.copy()
    return array.copy_to_host()
