"""Copies between host memory and a device, on the Memcpy primitive: ep's one way of moving arrays
across (ep.testing's to_device and to_numpy, the global tensors' staging through the host)."""
from __future__ import annotations


import numpy as np

from ep.common.runtime.device import Device, DeviceType, GetDevice
from ep.common.runtime.dlpack import as_cuda_array
from ep.include.primitive.memcpy import MemcpyFactory
from ep.include.primitive.primitive import NewPrimitive


def _copy(device: Device, kind: str, dst, src, nbytes: int) -> None:
    # On the default stream, synchronized: the caller may use or change either array at once. Its
    # native stream only: Sync() would raise (and use up) a bounds error another launch left there
    # for the caller's own Sync().
    stream = device.default_stream
    NewPrimitive(MemcpyFactory, device, kind).Launch(stream, dst, src, nbytes)
    if device.device_type is DeviceType.kCUDA:
        stream.native.synchronize()


def copy_to_device(host: np.ndarray, device: object = "cuda"):
    """A copy of the C-contiguous NumPy array host on device (a new NumPy array on the cpu)."""
    device = GetDevice(device)
    if device.device_type is DeviceType.kCPU:
        copy, kind = np.empty_like(host), "kAuto"
    else:
        from numba import cuda

        # Any dtype (complex, structured): ep.common.runtime.allocator.empty makes only ep's eight.
        copy, kind = cuda.device_array(host.shape, host.dtype), "kHtoD"
    _copy(device, kind, copy, host, host.nbytes)
    return copy


def copy_to_host(array) -> np.ndarray:
    """A NumPy copy of a C-contiguous CUDA array."""
    array = as_cuda_array(array, "array")
    if not isinstance(array.stream, int):
        # Bound to a stream: wait for it on the host, as numba's copy_to_host (which copies on that
        # stream) does, so the copy on the default stream needs no event of its own.
        array.stream.synchronize()
        array = array.bind(0)
    host = np.empty(array.shape, array.dtype)
    _copy(GetDevice("cuda"), "kDtoH", host, array, host.nbytes)
    return host
