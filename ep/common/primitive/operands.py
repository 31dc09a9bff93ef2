"""Operands at the storage level, for the ops layer's launches: the device an array is on, the
stream, C-contiguous copies, out= checked or written into any strides, and NumPy's out= rule (an
input overlapping out is read from a copy)."""
from __future__ import annotations

import numpy as np

from ep.common.math.nd_index_offset_helper import contiguous_strides
from ep.common.primitive.broadcast_elementwise_unary import check_distinct, extent
from ep.common.primitive.copies import copy_to_host
from ep.common.runtime.allocator import empty
from ep.common.runtime.buffer import check_device_address, cuda_view, device_type_of, is_cuda_buffer, plain, span
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import Device, DeviceType, GetDevice, Stream, check_stream
from ep.common.runtime.dlpack import as_cuda_array, own, plain_ndarray
from ep.common.runtime.overlap import overlaps
from ep.include.primitive.broadcast_elementwise_unary import BroadcastElementwiseUnaryFactory
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.gather import GatherFactory
from ep.include.primitive.permute import PermuteFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.unary_op import UnaryOp

_CPU_TYPE = DeviceType.kCPU
# The CPU Device, which every NumPy array is on.
CPU = GetDevice(_CPU_TYPE)


def one_device(arrays: list, name: str) -> Device:
    """The device of arrays (name[0]'s); TypeError naming the first array on another."""
    device = device_of(arrays[0], f"{name}[0]")
    for i, a in enumerate(arrays[1:], 1):
        other = device_of(a, f"{name}[{i}]")
        if other.device_type is not device.device_type:
            raise TypeError(f"{name}[{i}]: is on {other.device_type.value}; expected {device.device_type.value}, as {name}[0]")
    return device


def on_host(x) -> np.ndarray:
    """A result of ep's (a NumPy or a C-contiguous CUDA array) as a NumPy array: a CUDA one copied
    once its stream's work is done (a check's minimum, a count to test)."""
    return x if type(x) is np.ndarray else copy_to_host(x)


def device_of(x: object, name: str) -> Device:
    """The Device an array lives on (NumPy -> cpu, __cuda_array_interface__ -> cuda)."""
    if type(x) is np.ndarray:  # the common case, without GetDevice's argument checks
        return CPU
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


def contiguous(x, device: Device, stream: Stream | None = None, copy: bool = False, name: str = "x"):
    """x itself if C-contiguous (and not copy), else a C-contiguous copy on x's device (on stream,
    or the default one, which waits for the stream that produced x). name: x's, in errors.

    The copy is a CopyNd launch that reads x as a strided view of the memory it spans. CopyNd takes
    non-negative strides: a cpu array with negative ones is copied by NumPy, a cuda one read with
    its reversed dims turned around and turned back by Gathers (_unreversed).
    """
    if plain(x) and not copy:
        return x
    stream = stream_for(device, stream)
    if device.device_type is DeviceType.kCPU:
        if copy:
            return np.array(x, order="C")
        if x.flags.c_contiguous or any(s < 0 for s in x.strides):
            return np.ascontiguousarray(x)
        array = x if type(x) is np.ndarray else np.ndarray.view(x, np.ndarray)
    else:
        array = as_cuda_array(x, name)
        if array.is_c_contiguous() and not copy:
            return array  # its launch waits for its producer
        # The copy reads x through a view of its memory, which names no producer: it waits here.
        as_cuda_array(array, name, stream)
        if any(s < 0 for s in array.strides):
            return _unreversed(array, device, stream, name)
    dtype = as_data_type(array.dtype, name)
    copy = empty(tuple(array.shape), dtype, device, stream)
    if array.size == 0:
        return copy
    shape, element_strides, bytewise = in_units(tuple(array.shape), tuple(array.strides), dtype.itemsize)
    dst = copy
    if bytewise:
        dtype, dst = DataType.kUInt8, copy.reshape(copy.size).view(np.uint8)
    src = span(array, dtype, extent(shape, element_strides), device.device_type)
    zeros = (0,) * len(shape)
    NewPrimitive(CopyNdFactory, device, len(shape)).Launch(stream, dtype, len(shape), dst, shape, zeros, src, shape, zeros, shape, element_strides)
    return copy


def output(out, shape: tuple[int, ...], dtype: DataType, device: Device, stream: Stream, given_by: str = "result"):
    """The caller's out, checked against shape, dtype and device, or a new array when out is None
    (given_by: as empty's)."""
    if out is None:
        return empty(shape, dtype, device, stream, given_by)
    return check_out(out, "out", shape, dtype, device)


def _unreversed(array, device: Device, stream: Stream, name: str):
    """A C-contiguous copy of a cuda array with negative strides: read with each reversed dim turned
    around (strides >= 0: one CopyNd), then each such dim of more than one element turned back by a
    Gather of reversed indices (a pass each; reversed device arrays are rare)."""
    result = contiguous(_turned(array), device, stream, copy=True, name=name)
    return reversed_along(result, [d for d, s in enumerate(array.strides) if s < 0], device, stream)


def _turned(array):
    """array (a NumPy or numba array) with each dim of negative stride turned around: a view of the
    same memory from its lowest address, every stride >= 0."""
    from numba import config

    if type(array) is np.ndarray or config.ENABLE_CUDASIM:  # NumPy's arrays (the simulator's too): sliced
        return array[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in array.strides)]
    # The interface's pointer is element [0, ..., 0]'s; the lowest address is below it by the reversed dims' reach.
    interface = dict(array.__cuda_array_interface__, strides=tuple(abs(s) for s in array.strides))
    low = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s < 0)
    interface["data"] = (interface["data"][0] + low, interface["data"][1])
    return cuda_view(interface, array, array.dtype)


def on_device(host: np.ndarray, device: Device, stream: Stream):
    """A small host array (indices an op makes) on device, copied on stream."""
    if device.device_type is DeviceType.kCPU:
        return host
    from numba import cuda

    return cuda.to_device(host, stream=stream.native)


def reversed_along(x, dims: list[int], device: Device, stream: Stream, out=None):
    """A C-contiguous x with the order of its elements reversed along dims (distinct), into out
    (checked) or a new array: a Gather of reversed indices per dim of more than one element; x
    itself when there is none and no out."""
    shape, dtype = tuple(x.shape), as_data_type(x.dtype, "x")
    dims = [d for d in dims if shape[d] > 1]
    if not dims or not x.size:
        return x if out is None else contiguous_into(x, check_out(out, "out", shape, dtype, device), device, stream)
    gather = NewPrimitive(GatherFactory, device, dtype, DataType.kInt64)
    result = x
    for k, d in enumerate(dims):
        n = shape[d]
        indices = on_device(np.arange(n - 1, -1, -1, dtype=np.int64), device, stream)
        target = empty(shape, dtype, device, stream) if k < len(dims) - 1 or out is None else check_out(out, "out", shape, dtype, device)
        source = unaliased(result, target, device, stream)
        outer, inner = int(np.prod(shape[:d])), int(np.prod(shape[d + 1 :]))
        gather.Launch(stream, indices, n, source.reshape(source.size), outer, n, inner, target.reshape(target.size), 0)
        result = target
    return result


def contiguous_into(x, out, device: Device, stream: Stream):
    """x's elements (C-contiguous) into out (C-contiguous, x's size and dtype): one CopyNd; out."""
    n = int(x.size)
    if n:
        dtype = as_data_type(x.dtype, "x")
        NewPrimitive(CopyNdFactory, device, 1).Launch(stream, dtype, 1, out.reshape(n), (n,), (0,), unaliased(x.reshape(n), out, device, stream), (n,), (0,), (n,))
    return out


def check_out(out, name: str, shape: tuple[int, ...], dtype: DataType, device: Device, layout: bool = True):
    """out, if it is a writable C-contiguous array of shape and dtype on device; otherwise a clear
    error. layout=False: of any strides (stand_in's)."""
    # A NumPy array of ep's own dtype object (so native), shape and flags: the common case, in one test.
    if type(out) is np.ndarray and device.device_type is _CPU_TYPE and out.dtype is dtype.dtype and out.shape == shape:
        flags = out.flags
        if flags.writeable and flags.c_contiguous:
            return out
    if device_type_of(out, name) is not device.device_type:
        raise TypeError(f"{name}: is on {device_type_of(out, name).value}; expected an array on {device.device_type.value}")
    # On CUDA, checked through numba's view: an object may offer only __cuda_array_interface__
    # (refused there when it marks its memory read-only).
    view = out if device.device_type is _CPU_TYPE else as_cuda_array(out, name, writable=True)
    if tuple(view.shape) != tuple(shape):
        raise ValueError(f"{name}: has shape {tuple(view.shape)}; expected {tuple(shape)}")
    if np.dtype(view.dtype) != dtype.dtype:
        raise TypeError(f"{name}: has dtype {view.dtype}; expected {dtype.value}")
    if device.device_type is _CPU_TYPE:
        plain_ndarray(out, name)  # refuses a masked array, whose mask would be lost
        flags = out.flags
        if not flags.writeable:
            raise ValueError(f"{name}: the array is read-only")
        contiguous = flags.c_contiguous
    else:
        contiguous = view.is_c_contiguous()
    if layout and not contiguous:
        raise ValueError(f"{name}: must be C-contiguous; got strides {tuple(view.strides)} for shape {tuple(view.shape)}")
    return out


def in_units(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(dims, strides, bytewise) of a layout of byte strides (their sizes taken) in elements; where
    a stride is not whole elements, bytewise: in bytes, the element's bytes an innermost dim."""
    strides = tuple(abs(s) for s in strides)
    if any(s % itemsize for s in strides):
        return shape + (itemsize,), strides + (1,), True
    return shape, tuple(s // itemsize for s in strides), False


def given_out(out):
    """out= as ep's own arrays: another library's viewed without a copy (own), a tuple's item by item."""
    if type(out) is tuple:
        return tuple(own(o, f"out[{i}]", writable=True) for i, o in enumerate(out))
    return own(out, "out", writable=True)


def strided_out(out) -> bool:
    """Whether out= (ep's own arrays: given_out's) holds an array that is not C-contiguous: the op
    then writes a stand_in, which through_stand_ins copies into out."""
    if type(out) is tuple:
        return any(map(strided_out, out))
    if type(out) is np.ndarray:
        return not out.flags.c_contiguous
    return is_cuda_buffer(out) and not as_cuda_array(out, "out").is_c_contiguous()


def stand_in(out, stream: Stream | None = None, name: str = "out"):
    """For each array of out (given_out's) that is not C-contiguous, a new C-contiguous one of its
    shape, dtype and device for the op to write (its C-contiguous ones as they are); out checked
    first: on a device, writable, its elements apart, a tuple's arrays apart (ValueError naming name)."""
    if type(out) is tuple:
        # The op's own check of its outputs against each other sees only the stand-ins.
        for i, a in enumerate(out):
            for j in range(i + 1, len(out)):
                if overlaps(a, out[j]):
                    raise ValueError(f"{name}[{i}], {name}[{j}]: share memory; expected separate arrays")
        return tuple(stand_in(o, stream, f"{name}[{i}]") for i, o in enumerate(out))
    if not strided_out(out):
        return out
    device = device_of(out, name)
    view = out if device.device_type is _CPU_TYPE else as_cuda_array(out, name)
    shape, dtype = tuple(view.shape), as_data_type(view.dtype, name)
    check_out(out, name, shape, dtype, device, layout=False)
    dims, strides, bytewise = in_units(shape, tuple(view.strides), dtype.itemsize)
    check_distinct(dims, strides, f"{name}: {'byte' if bytewise else 'element'} strides")
    return empty(shape, dtype, device, stream_for(device, stream))


def through_stand_ins(call, out, stream: Stream | None = None):
    """call(stand_in(out)), its result, once the stand-ins' elements are written into out's arrays
    (each of any strides) on stream: NumPy's and PyTorch's out= of any layout, as if every input
    were read before out is written."""
    written = stand_in(out, stream)
    result = call(written)
    for w, o in zip(written, out) if type(out) is tuple else ((written, out),):
        if w is not o:
            _write(w, o, stream)
    return result


def _write(result, out, stream: Stream | None) -> None:
    """result (C-contiguous, new, at least 1-d: a 0-d out is C-contiguous) into out, of its shape
    and dtype and any strides that keep its elements apart: one Permute where out's memory is dense,
    else one BroadcastElementwiseUnary (kIdentity), into out's memory with strides >= 0 (a reversed
    dim of out turned around, result reversed along it first)."""
    device = device_of(result, "result")
    shape, dtype = tuple(result.shape), as_data_type(result.dtype, "result")
    stream = stream_for(device, stream)
    view = out if device.device_type is _CPU_TYPE else as_cuda_array(out, "out", stream)
    reversed_dims = [d for d, s in enumerate(view.strides) if s < 0 and shape[d] > 1]
    if reversed_dims:
        result, view = reversed_along(result, reversed_dims, device, stream), _turned(view)
    shape, strides, bytewise = in_units(shape, tuple(view.strides), dtype.itemsize)
    if bytewise:
        result, dtype = result.reshape(result.size).view(np.uint8), DataType.kUInt8
    if not result.size:
        return
    dst = span(view, dtype, extent(shape, strides), device.device_type, writable=True)
    order = tuple(sorted(range(len(shape)), key=lambda d: -strides[d]))
    if all(shape[d] == 1 or strides[d] == s for d, s in zip(order, contiguous_strides([shape[d] for d in order]))):
        # out's memory is C-contiguous in another order of its dims (a transposed out): a Permute,
        # which moves tiles (a 1 MiB transposed float32 out: 1.4x faster than element by element).
        permute = NewPrimitive(PermuteFactory, device, len(shape))
        permute.launch_trusted(stream, dtype, len(shape), shape, result.reshape(result.size), order, dst)
    else:
        copy = NewPrimitive(BroadcastElementwiseUnaryFactory, device, UnaryOp.kIdentity, dtype, dtype)
        src_strides = contiguous_strides(shape)
        copy.launch_trusted(stream, len(shape), shape, src_strides, result.reshape(result.size), len(shape), shape, strides, dst)


def unaliased(x, out, device: Device, stream: Stream | None = None, elementwise: bool = False):
    """x, or a C-contiguous copy of it (on stream) when it shares memory with out.

    NumPy's rule for out=: the result is as if every input were read before out is written. A
    kernel reads and writes as it goes, so an input overlapping out is copied first, except where
    an elementwise op reads each element exactly where it writes it: the in-place case, which
    stays copy-free.
    """
    return contiguous(x, device, stream, copy=True) if overlaps(x, out, elementwise) else x
