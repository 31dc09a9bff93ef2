"""Launch arguments taken as bytes: the memory of a C-contiguous array of any dtype, for the
primitives that see bytes rather than elements (Memset's ptr, Memcpy's dst and src; OneFlow's
void*). storage() is the element-typed counterpart."""
from __future__ import annotations

import numpy as np

from ep.common.runtime.buffer import check_device_address, host_ndarray, is_cuda_buffer, kept
from ep.common.runtime.device import DeviceType
from ep.common.runtime.dlpack import as_cuda_array

_BYTE = np.dtype(np.uint8)


def byte_storage(obj: object, name: str, device_type: DeviceType, nbytes: int, writable: bool = False, stream=None):
    """obj's memory as flat uint8 storage of at least nbytes bytes; on CUDA, stream (the launch's)
    is ordered after the stream obj was produced on.

    TypeError naming name for something that is not an array on device_type or holds Python
    objects; ValueError for a read-only (when writable), non-contiguous or short one.
    """
    if device_type is DeviceType.kCPU:
        array = host_ndarray(obj, name, "as cpu memory", writable)
        if array.dtype.hasobject:
            raise TypeError(f"{name}: dtype {array.dtype} holds Python objects, whose bytes are references; expected plain data")
        contiguous = array.flags.c_contiguous
    else:
        if not is_cuda_buffer(obj):
            where = "a numpy.ndarray" if isinstance(obj, np.ndarray) else type(obj).__name__
            raise TypeError(f"{name}: {where} was given as cuda memory; expected an object with __cuda_array_interface__")
        array = as_cuda_array(obj, name, stream, writable)
        contiguous = array.is_c_contiguous()
    if not contiguous:
        raise ValueError(f"{name}: memory must be C-contiguous; got strides {tuple(array.strides)} for shape {tuple(array.shape)}")
    size = array.size * array.dtype.itemsize
    if size < nbytes:
        raise ValueError(f"{name}: holds {size} bytes, fewer than the {nbytes} the launch needs")
    flat = kept(_bytes, array)
    if device_type is not DeviceType.kCPU:
        # Its bytes' address: memory is copied and set byte by byte, at any alignment of its elements.
        check_device_address(flat, name)
    return flat


def _bytes(array):
    flat = array.reshape(array.size)
    return flat if flat.dtype == _BYTE else flat.view(_BYTE)
