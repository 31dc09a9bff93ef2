"""Array plumbing for the ops layer: which device an array is on, new arrays, contiguous copies."""
from __future__ import annotations

import functools

import numpy as np

from ep.common.runtime.buffer import as_cuda_array, check_device_address, device_type_of, plain_ndarray, span
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import Device, DeviceType, GetDevice
from ep.common.runtime.stream import Stream, check_stream
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.primitive import NewPrimitive


_CPU_TYPE = DeviceType.kCPU
_CPU = GetDevice(_CPU_TYPE)
_ndarray = np.ndarray


def device_of(x: object, name: str) -> Device:
    """The Device an array lives on (NumPy -> cpu, __cuda_array_interface__ -> cuda)."""
    if type(x) is np.ndarray:  # the common case, without GetDevice's argument checks
        return _CPU
    if isinstance(x, np.ndarray):
        plain_ndarray(x, name)  # refuses a masked array, whose mask would be lost
    device_type = device_type_of(x, name)
    if device_type is DeviceType.kCUDA:
        # Here, where the caller's name is known: the primitive would name its own parameter.
        check_device_address(as_cuda_array(x, name), name)
    return GetDevice(device_type)


def stream_for(device: Device, stream: Stream | None) -> Stream:
    """The given stream (checked against device), or the device's default stream."""
    return device.default_stream if stream is None else check_stream(stream, device.device_type)


def empty(shape: tuple[int, ...], dtype: DataType, device: Device, stream: Stream):
    """A new C-contiguous array on device."""
    try:
        if device.device_type is DeviceType.kCPU:
            return np.empty(shape, dtype.dtype)
        from numba import cuda

        return cuda.device_array(shape, dtype.dtype, stream=stream.native)
    except (ValueError, MemoryError) as error:
        raise type(error)(f"out: no array of shape {tuple(shape)} and dtype {dtype.value} can be allocated ({error})") from None


def contiguous(x, device: Device, stream: Stream | None = None, copy: bool = False):
    """x itself if C-contiguous (and not copy), else a C-contiguous copy on x's device (on stream,
    or the default one).

    The copy is a CopyNd launch that reads x as a strided view of the memory it spans. CopyNd takes
    non-negative strides: a cpu array with negative ones is copied by NumPy, a cuda one refused.
    """
    if device.device_type is DeviceType.kCPU:
        if copy:
            return np.array(x, order="C")
        if x.flags.c_contiguous or any(s < 0 for s in x.strides):
            return np.ascontiguousarray(x)
        array = x if type(x) is np.ndarray else x.view(np.ndarray)
    else:
        array = as_cuda_array(x)
        if array.is_c_contiguous() and not copy:
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
    """out, if it is a writable C-contiguous array of shape and dtype on device; otherwise a clear error."""
    if device_type_of(out, name) is not device.device_type:
        raise TypeError(f"{name}: is on {device_type_of(out, name).value}; expected an array on {device.device_type.value}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name}: has shape {tuple(out.shape)}; expected {tuple(shape)}")
    if np.dtype(out.dtype) != dtype.dtype:
        raise TypeError(f"{name}: has dtype {out.dtype}; expected {dtype.value}")
    if device.device_type is _CPU_TYPE:
        flags = out.flags
        if not flags.writeable:
            raise ValueError(f"{name}: the array is read-only")
        contiguous = flags.c_contiguous
    else:
        contiguous = as_cuda_array(out).is_c_contiguous()
    if not contiguous:
        raise ValueError(f"{name}: must be C-contiguous; got strides {tuple(out.strides)} for shape {tuple(out.shape)}")
    return out


# np.shares_memory's work bound: past it the answer is "maybe", and the input is copied.
_MAX_OVERLAP_WORK = 1 << 12


def unaliased(x, out, device: Device, stream: Stream | None = None, elementwise: bool = False):
    """x, or a C-contiguous copy of it (on stream) when it shares memory with out.

    NumPy's rule for out=: the result is as if every input were read before out is written. A
    kernel reads and writes as it goes, so an input overlapping out is copied first, except where
    an elementwise op reads each element exactly where it writes it (the same first byte, shape,
    strides and itemsize): the in-place case, which stays copy-free.
    """
    if x is out:
        if elementwise:
            return x
    elif type(out) is _ndarray:
        owner = x if x.base is None else _owner(x)
        if (owner is not None and owner is not (out if out.base is None else _owner(out))) or not _host_overlap(x, out, elementwise):
            # Views of two arrays that own their memory lie in two allocations: the common case, first.
            return x
    elif not _device_overlap(x, out, elementwise):
        # Pointer ranges serve every other array (a CPU subclass too, by its __array_interface__).
        return x
    return contiguous(x, device, stream, copy=True)


def _owner(x: np.ndarray) -> np.ndarray | None:
    """The ndarray that owns x's memory (x, or the root of its views); None for other memory."""
    while True:
        base = x.base
        if base is None:
            return x
        if not isinstance(base, _ndarray):
            return None
        x = base


def _host_overlap(x: np.ndarray, out: np.ndarray, elementwise: bool) -> bool:
    # may_share_memory compares bounds only; the exact test runs only when they intersect.
    if not np.may_share_memory(x, out):
        return False
    if elementwise and _same_elements(x.__array_interface__, out.__array_interface__):
        return False
    try:
        return np.shares_memory(x, out, max_work=_MAX_OVERLAP_WORK)
    except np.exceptions.TooHardError:
        return True


def _device_overlap(x, out, elementwise: bool) -> bool:
    # From pointer ranges: whether two strided views of one allocation interleave without touching
    # is not worked out, they are copied.
    a, b = _interface(x), _interface(out)
    if elementwise and _same_elements(a, b):
        return False
    (lo0, hi0), (lo1, hi1) = _byte_range(a), _byte_range(b)
    return lo0 < hi1 and lo1 < hi0


def _interface(x) -> dict:
    """x's __cuda_array_interface__ (on the CUDA simulator, its host array's __array_interface__)."""
    interface = getattr(x, "__cuda_array_interface__", None)
    return np.asarray(x).__array_interface__ if interface is None else interface


def _strides(interface: dict) -> tuple[int, ...]:
    strides = interface.get("strides")
    if strides is None:
        # None means C-contiguous.
        step, strides = np.dtype(interface["typestr"]).itemsize, []
        for n in reversed(interface["shape"]):
            strides.append(step)
            step *= n
        strides.reverse()
    return tuple(strides)


def _same_elements(a: dict, b: dict) -> bool:
    """Whether two array interfaces address the same elements in the same order."""
    return (
        a["data"][0] == b["data"][0]
        and tuple(a["shape"]) == tuple(b["shape"])
        and np.dtype(a["typestr"]).itemsize == np.dtype(b["typestr"]).itemsize
        and _strides(a) == _strides(b)
    )


def _byte_range(interface: dict) -> tuple[int, int]:
    """[first, last + 1) of the bytes an array interface addresses (empty for an empty array)."""
    start, shape = interface["data"][0], interface["shape"]
    if 0 in shape:
        return start, start
    low = high = start
    for n, s in zip(shape, _strides(interface)):
        if s < 0:
            low += (n - 1) * s
        else:
            high += (n - 1) * s
    return low, high + np.dtype(interface["typestr"]).itemsize
