"""Copies of arrays between NumPy and an ep device, for tests and self-checks (the Memcpy
primitive's, through ep.common.primitive.copies)."""
from __future__ import annotations

import numpy as np

from ep.common.primitive.copies import copy_to_device, copy_to_host
from ep.common.runtime.device import DeviceType, GetDevice
from ep.common.runtime.dlpack import from_dlpack


def to_device(array, device):
    """A copy of the NumPy array on device ("cpu" or "cuda"), at least 1-d and C-contiguous."""
    array = np.ascontiguousarray(array)
    if array.dtype.hasobject and GetDevice(device).device_type is DeviceType.kCPU:
        return array.copy()  # references are no bytes to copy: NumPy copies and counts them
    return copy_to_device(array, device)


def to_numpy(array) -> np.ndarray:
    """A NumPy copy of a cpu or cuda array: NumPy's, numba's, or another library's (PyTorch, JAX, CuPy)."""
    array = from_dlpack(array, "array")
    if isinstance(array, np.ndarray):
        return array.copy()
    if not array.is_c_contiguous():
        return array.copy_to_host()  # a strided view: numba gathers it, no simple copy
    return copy_to_host(array)
