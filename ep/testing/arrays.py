"""Copies of arrays between NumPy and an ep device, for tests and self-checks (the Memcpy
primitive's, through ep.common.primitive.copies)."""
from __future__ import annotations

import numpy as np

from ep.common.primitive.copies import copy_to_device, copy_to_host
from ep.common.runtime.buffer import cuda_view
from ep.common.runtime.device import DeviceType, GetDevice
from ep.common.runtime.dlpack import from_dlpack
from ep.common.runtime.overlap import array_interface, byte_range


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
        return _strided_to_host(array)
    return copy_to_host(array)


def transposed(array):
    """The transpose of a cpu or cuda array as a view of its memory (numba's .T of a 2-d device
    array is a copy, made by a kernel)."""
    from numba import config

    if isinstance(array, np.ndarray) or config.ENABLE_CUDASIM:
        return array.T
    interface = dict(array.__cuda_array_interface__, shape=array.shape[::-1], strides=array.strides[::-1], stream=None)
    return cuda_view(interface, array, array.dtype)


def _strided_to_host(array) -> np.ndarray:
    """A NumPy copy of a strided numba device array (strides of any sign): the bytes it spans,
    copied, and read with its strides (numba copies no view with a negative stride)."""
    if array.size == 0:
        return np.empty(array.shape, array.dtype)
    from numba import config

    if config.ENABLE_CUDASIM:
        return array.copy_to_host()
    from numba import cuda

    interface = array_interface(array)
    first = interface["data"][0]
    low, high = byte_range(interface)
    interface = {"shape": (high - low,), "strides": None, "typestr": "|u1", "data": (low, False), "version": 3}
    # On the stream the array is bound to, which may still be writing it.
    data = cuda.from_cuda_array_interface(interface, owner=array, sync=False).copy_to_host(stream=array.stream)
    if array.stream:
        array.stream.synchronize()
    return np.ndarray(array.shape, array.dtype, buffer=data, offset=first - low, strides=array.strides).copy()
