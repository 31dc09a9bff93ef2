"""Array plumbing for the ops layer: which device an array is on, new arrays, contiguous copies."""
from __future__ import annotations

import functools

import numpy as np

from ep.common.runtime.buffer import as_cuda_array, device_type_of, span
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import Device, DeviceType, GetDevice
from ep.common.runtime.stream import Stream, check_stream
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import NewPrimitive


_CPU = GetDevice(DeviceType.kCPU)


def device_of(x: object, name: str) -> Device:
    """The Device an array lives on (NumPy -> cpu, __cuda_array_interface__ -> cuda)."""
    if type(x) is np.ndarray:  # the common case, without GetDevice's argument checks
        return _CPU
    return GetDevice(device_type_of(x, name))


def stream_for(device: Device, stream: Stream | None) -> Stream:
    """The given stream (checked against device), or the device's default stream."""
    return device.default_stream if stream is None else check_stream(stream, device.device_type)


def empty(shape: tuple[int, ...], dtype: DataType, device: Device, stream: Stream):
    """A new C-contiguous array on device."""
    if device.device_type is DeviceType.kCPU:
        return np.empty(shape, dtype.dtype)
    from numba import cuda

    return cuda.device_array(shape, dtype.dtype, stream=stream.native)


def contiguous(x, device: Device, stream: Stream | None = None):
    """x itself if C-contiguous, else a C-contiguous copy on x's device (on stream, or the default one).

    The copy is a CopyNd launch that reads x as a strided view of the memory it spans. CopyNd takes
    non-negative strides: a cpu array with negative ones is copied by NumPy, a cuda one refused.
    """
    if device.device_type is DeviceType.kCPU:
        if x.flags.c_contiguous or any(s < 0 for s in x.strides):
            return np.ascontiguousarray(x)
        array = x if type(x) is np.ndarray else x.view(np.ndarray)
    else:
        array = as_cuda_array(x)
        if array.is_c_contiguous():
            return array
        if any(s < 0 for s in array.strides):
            raise ValueError(f"x: negative strides {tuple(array.strides)} are not supported; expected strides >= 0")
    dtype = as_data_type(array.dtype, "x")
    stream = stream_for(device, stream)
    copy = empty(tuple(array.shape), dtype, device, stream)
    if array.size == 0:
        return copy
    shape, strides, itemsize = tuple(array.shape), tuple(array.strides), dtype.itemsize
    if all(s % itemsize == 0 for s in strides):
        dst, element_strides = copy, tuple(s // itemsize for s in strides)
    else:
        # Strides that are not whole elements: copy bytes, the element's bytes an innermost dim.
        dtype, dst = DataType.kUInt8, copy.reshape(copy.size).view(np.uint8)
        shape, element_strides = shape + (itemsize,), strides + (1,)
    src = span(array, dtype, 1 + sum((n - 1) * s for n, s in zip(shape, element_strides)), device.device_type)
    zeros = (0,) * len(shape)
    _copy_nd(device, len(shape)).Launch(stream, dtype, len(shape), dst, shape, zeros, src, shape, zeros, shape, element_strides)
    return copy


@functools.lru_cache(maxsize=64)
def _copy_nd(device: Device, num_dims: int):
    return NewPrimitive(CopyNdFactory, device, num_dims)


def output(out, shape: tuple[int, ...], dtype: DataType, device: Device, stream: Stream):
    """The caller's out, checked against shape, dtype and device, or a new array when out is None."""
    if out is None:
        return empty(shape, dtype, device, stream)
    return check_out(out, "out", shape, dtype, device)


def check_out(out, name: str, shape: tuple[int, ...], dtype: DataType, device: Device):
    """out, if it is a C-contiguous array of shape and dtype on device; otherwise a clear error."""
    if device_type_of(out, name) is not device.device_type:
        raise TypeError(f"{name}: is on {device_type_of(out, name).value}; expected an array on {device.device_type.value}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name}: has shape {tuple(out.shape)}; expected {tuple(shape)}")
    if np.dtype(out.dtype) != dtype.dtype:
        raise TypeError(f"{name}: has dtype {out.dtype}; expected {dtype.value}")
    return out
