"""Array plumbing for the ops layer: other libraries' arrays in and out, which device an array is
on, new arrays, contiguous copies."""
from __future__ import annotations

import functools
import inspect
import sys
import types

import numpy as np

from ep.common.primitive.copies import copy_to_host
from ep.common.runtime.allocator import empty
from ep.common.runtime.buffer import check_device_address, cuda_view, device_type_of, plain, span
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.device import Device, DeviceType, GetDevice, Stream, check_stream
from ep.common.runtime.dlpack import as_cuda_array, from_dlpack, is_foreign, own, plain_ndarray, to_namespace
from ep.common.runtime.overlap import overlaps
from ep.common.runtime.scalar import is_scalar
from ep.common.runtime.validate import integer
from ep.include.primitive.copy_nd import CopyNdFactory
from ep.include.primitive.gather import GatherFactory
from ep.include.primitive.primitive import NewPrimitive
from ep.sbp import global_ops
from ep.sbp.global_tensor import GlobalTensor


_CPU_TYPE = DeviceType.kCPU
# The CPU Device, which every NumPy array is on.
CPU = GetDevice(_CPU_TYPE)

# Types an ops function takes as they are, by class: NumPy arrays, numba device arrays, scalars,
# names, shapes. A type seen later joins once found to be neither another library's array nor a
# global tensor, while the set holds fewer than _NATIVE_LIMIT types (a caller passing ever new
# classes would otherwise grow it without end; past the limit they take the slow path).
_NATIVE = {np.ndarray, int, float, bool, str, tuple, list, type(None)}
_NATIVE_LIMIT = 256
# Native types that are not arrays: refused where an array is expected (as torch refuses a list).
_NOT_ARRAYS = {str, tuple, list}


def same_kind(*names: str):
    """Decorator: the one place that decides how an ops function's arguments are taken. Its array
    parameters names (and out=) also take other libraries' arrays and global tensors, and it adds
    the keyword sbp= (the result's SBP, for global tensors).

    An array that is not ep's own (is_foreign: a NumPy subclass, an array with __dlpack__ of
    PyTorch, JAX, CuPy, ..., CUDA memory with only __cuda_array_interface__) is viewed without a
    copy (ep.from_dlpack) before anything of it is read, and its class never taken as it is: a
    subclass as a base-class NumPy array, another CPU array as a NumPy array, a CUDA one through
    __cuda_array_interface__. The result has the
    kind of the first of names that is an array (binary's a, or b when a is a scalar): made by
    that library's from_dlpack (its asarray for CUDA memory), again without a copy; a NumPy or
    numba array there gives the result as before. The other arrays may be of any kind on the same
    device. An out= of any kind receives the result and is returned as it was given. A global
    tensor among names, or sbp=, hands the call to call_global (ep.sbp.global_ops).
    """

    def decorate(function):
        signature = inspect.signature(function)
        parameters = list(signature.parameters)
        positions = tuple((name, parameters.index(name)) for name in names)
        with_sbp = _with_sbp(signature)

        @functools.wraps(function)
        def call(*args, **kwargs):
            # NumPy's common case costs one set lookup per argument; all else takes _call_slow.
            for arg in args:
                if type(arg) not in _NATIVE:
                    break
            else:
                try:
                    if not kwargs:
                        return function(*args)  # without **{}: a third of this wrapper's cost
                    for arg in kwargs.values():
                        if type(arg) not in _NATIVE:
                            break
                    else:
                        if "sbp" not in kwargs:
                            return function(*args, **kwargs)
                except AttributeError:
                    # A list where an array goes (its .dtype read): said here, at no cost to a good call.
                    _refuse_non_arrays(_arrays_given(positions, args, kwargs))
                    raise
            return _call_slow(function, with_sbp, positions, args, kwargs)

        call.__signature__ = with_sbp
        return call

    return decorate


def same_kind_sequence(function):
    """Decorator: same_kind for an ops function whose first parameter is a sequence of arrays
    (add_n, cat, stack; its signature has sbp=): each item taken as same_kind takes an array, the
    result of the first item's kind, an out= of any kind returned as given, and a global tensor
    among the items (or sbp=) handed to call_global. The function gets a non-empty list of NumPy or
    numba arrays and its other arguments as given."""
    signature = inspect.signature(function)
    name = next(iter(signature.parameters))

    @functools.wraps(function)
    def call(arrays, *args, **kwargs):
        if isinstance(arrays, (str, bytes)) or not hasattr(arrays, "__len__") or hasattr(arrays, "dtype"):
            raise TypeError(f"{name}: {type(arrays).__name__} is not a sequence of arrays (a list or tuple of them)")
        if kwargs.get("sbp") is not None or any(type(a) is GlobalTensor for a in arrays):
            return call_global(call, signature, (arrays, *args), kwargs)
        kwargs.pop("sbp", None)
        if not arrays:
            raise ValueError(f"{name}: is empty; expected at least one array")
        namespace = namespace_of(arrays[0]) if is_foreign(arrays[0]) else None
        _refuse_non_arrays({f"{name}[{i}]": a for i, a in enumerate(arrays)})
        arrays = [own(a, f"{name}[{i}]") for i, a in enumerate(arrays)]
        out = kwargs.get("out")
        if out is not None and is_foreign(out):
            function(arrays, *args, **{**kwargs, "out": own(out, "out", writable=True)})  # written in place
            return out
        return in_namespace(function(arrays, *args, **kwargs), namespace)

    return call


def one_device(arrays: list, name: str) -> Device:
    """The device of arrays (name[0]'s); TypeError naming the first array on another."""
    device = device_of(arrays[0], f"{name}[0]")
    for i, a in enumerate(arrays[1:], 1):
        other = device_of(a, f"{name}[{i}]")
        if other.device_type is not device.device_type:
            raise TypeError(f"{name}[{i}]: is on {other.device_type.value}; expected {device.device_type.value}, as {name}[0]")
    return device


def _with_sbp(signature: inspect.Signature) -> inspect.Signature:
    """signature with a keyword-only sbp=None before any **kwargs (same_kind takes sbp=)."""
    parameters = list(signature.parameters.values())
    at = len(parameters) - (parameters and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD)
    parameters.insert(at, inspect.Parameter("sbp", inspect.Parameter.KEYWORD_ONLY, default=None))
    return signature.replace(parameters=parameters)


def _call_slow(function, signature: inspect.Signature, positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict):
    """same_kind's path for anything but NumPy's common case: global tensors and sbp=, then other
    libraries' arrays. signature: the call's (with sbp=)."""
    for value in (*args, *kwargs.values()):
        record = getattr(type(value), "__ep_trace__", None)
        if record is not None:
            # A traced value (ep.fuse): the call becomes a node of the fused expression, or is refused.
            return record(value, function.__name__, signature, args, kwargs)
    tensors = _arrays_given(positions, args, kwargs)
    _refuse_non_arrays(tensors)
    if any(type(t) is GlobalTensor for t in tensors.values()) or kwargs.get("sbp") is not None:
        return call_global(function, signature, args, kwargs)
    kwargs.pop("sbp", None)
    for value in (*args, *kwargs.values()):
        cls = type(value)
        if len(_NATIVE) < _NATIVE_LIMIT and cls is not GlobalTensor and not is_foreign(value):
            _NATIVE.add(cls)
    args = list(args)
    namespace = None
    seen_array = False
    for name, position in positions:
        if name not in tensors:
            continue
        value = tensors[name]
        if is_foreign(value):
            if not seen_array:
                namespace = namespace_of(value)
            if position < len(args):
                args[position] = from_dlpack(value, name)
            else:
                kwargs[name] = from_dlpack(value, name)
        seen_array = seen_array or not (value is None or is_scalar(value))
    out = kwargs.get("out")
    if out is not None:
        if not is_foreign(out):
            return function(*args, **kwargs)  # out itself, or a tuple of the given outs (cummax's)
        kwargs["out"] = from_dlpack(out, "out", writable=True)
        function(*args, **kwargs)
        return out
    return in_namespace(function(*args, **kwargs), namespace)


def _arrays_given(positions: tuple[tuple[str, int], ...], args: tuple, kwargs: dict) -> dict:
    """The arguments given for the array parameters (name, position), by name."""
    return {
        name: args[position] if position < len(args) else kwargs[name]
        for name, position in positions if position < len(args) or name in kwargs
    }


def _refuse_non_arrays(arrays: dict) -> None:
    """TypeError naming the first list, tuple or str given where an array goes (as torch refuses one)."""
    for name, value in arrays.items():
        if type(value) in _NOT_ARRAYS:
            raise TypeError(f"{name}: {type(value).__name__} is not an array; expected an array (np.asarray({name}) makes one)") from None


def in_namespace(result, namespace: types.ModuleType | None):
    """result (a NumPy or numba array ep made) as an array of namespace's library, without a copy;
    as it is where namespace is None; a named tuple of them (cummax's) item by item."""
    if namespace is None:
        return result
    if isinstance(result, tuple):
        return result._make(to_namespace(r, namespace) for r in result)
    return to_namespace(result, namespace)


def call_global(function, signature: inspect.Signature, args: tuple, kwargs: dict):
    """The ops function's call on global tensors or with sbp=: ep.sbp.global_ops.call, the one
    global path (its op declared beside it, in ep/ops/<family>_rules.py)."""
    return global_ops.call(function, signature, args, kwargs)


def namespace_of(array) -> types.ModuleType | None:
    """The array-API namespace of array's library: its __array_namespace__, else the top-level
    module with a from_dlpack of its class or a base class (torch for a torch.Tensor subclass), or
    None for an object of no such library and for a NumPy subclass (its result stays a NumPy or
    numba array)."""
    if isinstance(array, np.ndarray):
        return None
    get = getattr(array, "__array_namespace__", None)
    if get is not None:
        return get()
    for cls in type(array).__mro__:
        module = sys.modules.get(cls.__module__.partition(".")[0])
        if module is not None and hasattr(module, "from_dlpack"):
            return module
    return None


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


def one_dim(dim: object, ndim: int, name: str = "dim") -> int:
    """dim (negative ones counted from the end) as 0 <= dim < ndim; IndexError naming name otherwise."""
    value = integer(dim, name)
    if not -ndim <= value < ndim:
        raise IndexError(f"{name}: {value} is out of range for {ndim} dims; expected {-ndim} <= {name} < {ndim}")
    return value % ndim


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
    shape, strides, itemsize = tuple(array.shape), tuple(array.strides), dtype.itemsize
    if all(s % itemsize == 0 for s in strides):
        dst, element_strides = copy, tuple(s // itemsize for s in strides)
    else:
        # Strides that are not whole elements: copy bytes, the element's bytes an innermost dim.
        dtype, dst = DataType.kUInt8, copy.reshape(copy.size).view(np.uint8)
        shape, element_strides = shape + (itemsize,), strides + (1,)
    src = span(array, dtype, 1 + sum((n - 1) * s for n, s in zip(shape, element_strides)), device.device_type)
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
    from numba import config

    if config.ENABLE_CUDASIM:  # the simulator's arrays are NumPy's, sliced as NumPy slices
        turned = array[tuple(slice(None, None, -1) if s < 0 else slice(None) for s in array.strides)]
    else:
        # The same memory from its lowest address (the interface's pointer is element [0, ..., 0]'s).
        interface = dict(array.__cuda_array_interface__, strides=tuple(abs(s) for s in array.strides))
        low = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s < 0)
        interface["data"] = (interface["data"][0] + low, interface["data"][1])
        turned = cuda_view(interface, array, array.dtype)
    result = contiguous(turned, device, stream, copy=True, name=name)
    return reversed_along(result, [d for d, s in enumerate(array.strides) if s < 0], device, stream)


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


def check_out(out, name: str, shape: tuple[int, ...], dtype: DataType, device: Device):
    """out, if it is a writable C-contiguous array of shape and dtype on device; otherwise a clear error."""
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
    if not contiguous:
        raise ValueError(f"{name}: must be C-contiguous; got strides {tuple(view.strides)} for shape {tuple(view.shape)}")
    return out


def unaliased(x, out, device: Device, stream: Stream | None = None, elementwise: bool = False):
    """x, or a C-contiguous copy of it (on stream) when it shares memory with out.

    NumPy's rule for out=: the result is as if every input were read before out is written. A
    kernel reads and writes as it goes, so an input overlapping out is copied first, except where
    an elementwise op reads each element exactly where it writes it: the in-place case, which
    stays copy-free.
    """
    return contiguous(x, device, stream, copy=True) if overlaps(x, out, elementwise) else x
