"""A strided array checked for a launch, and the raw units its elements span."""
from __future__ import annotations

import numpy as np

from ep.common.runtime.buffer import as_cuda_array, is_cuda_buffer
from ep.common.primitive.byte_units import address, unit_dtype
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType


def strided_source(obj: object, name: str, device_type: DeviceType, dtype: DataType):
    """obj as an array of dtype on device_type with non-negative strides; TypeError or ValueError otherwise."""
    if device_type is DeviceType.kCPU:
        if not isinstance(obj, np.ndarray):
            where = "a CUDA buffer" if is_cuda_buffer(obj) else type(obj).__name__
            raise TypeError(f"{name}: {where} was given to a cpu primitive; expected a numpy.ndarray")
        array = obj
    else:
        if not is_cuda_buffer(obj):
            where = "a numpy.ndarray" if isinstance(obj, np.ndarray) else type(obj).__name__
            raise TypeError(f"{name}: {where} was given to a cuda primitive; expected an object with __cuda_array_interface__")
        array = as_cuda_array(obj)
    if array.dtype != dtype.dtype:
        raise TypeError(f"{name}: dtype {array.dtype} does not match the primitive's {dtype.value}")
    if any(s < 0 for s in array.strides):
        raise ValueError(f"{name}: negative strides {tuple(array.strides)} are not supported; expected strides >= 0")
    return array


def raw_units(array, unit: int, count: int, device_type: DeviceType):
    """count unit-byte units of memory from array's first element, as a flat C-contiguous array.

    The caller computes count from array's own shape and strides (non-negative), so the view never
    reaches past the memory array spans.
    """
    dtype = unit_dtype(unit)
    words = count * unit // dtype.itemsize  # 16-byte units are pairs of uint64 words
    if device_type is DeviceType.kCPU or _simulated():
        # A one-element view of the first element, then widened over the span.
        host = np.asarray(array)
        first = host[(slice(0, 1),) * host.ndim].reshape(1).view(np.uint8)
        raw = np.lib.stride_tricks.as_strided(first, shape=(words * dtype.itemsize,), strides=(1,), writeable=False).view(dtype)
        return raw if device_type is DeviceType.kCPU else _fake_cuda_array(raw)
    from numba import cuda

    interface = {"shape": (words,), "strides": None, "typestr": dtype.str, "data": (address(array), True), "version": 3}
    return cuda.from_cuda_array_interface(interface, owner=array, sync=False)


def _simulated() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def _fake_cuda_array(host: np.ndarray):
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    return FakeCUDAArray(host)
