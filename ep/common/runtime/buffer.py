"""Launch arguments checked and turned into the flat storage kernels index."""
from __future__ import annotations

import weakref

import numpy as np

from ep.common.runtime.caches import BOUNDS, table
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, bound_handle
from ep.common.runtime.dlpack import as_cuda_array, host_array, is_dlpack, plain_ndarray


_ndarray = np.ndarray
_CPU = DeviceType.kCPU

# What storage() found of each numba device array it was given, by id(array): (a weak reference
# to the array, the DataType it passed as, its size, its flat storage or None when the array is
# its own, its address), so a later launch with the same array checks only count and stream.
# numba's device arrays never change shape, strides, dtype or memory once made (bind() and every
# view make new arrays), and reusing the flat view also lets numba's dispatcher reuse what it
# caches on it. Views and addresses derived from them (kept()) are kept here too, by (function,
# id, arguments). An entry goes with its array (its weak reference's callback); past _MAX_KEPT
# all go. keep_for keeps other tables' entries by two arrays the same way.
_kept: dict[object, tuple] = table("launch state")
_MAX_KEPT = BOUNDS["launch state"]


class _Ref(weakref.ref):
    """A weak reference to an array that knows the entry (table[key]) to drop when it dies."""

    __slots__ = ("table", "key")


def _forget(ref: _Ref) -> None:
    # Only if the entry is still the one ref was made for: a dead array's id may name a new one.
    entry = ref.table.get(ref.key)
    if entry is not None and (entry[0] is ref or entry[1] is ref):
        ref.table.pop(ref.key, None)  # another thread may have cleared it meanwhile


def _ref(array, table: dict, key: object) -> _Ref:
    ref = _Ref(array, _forget)
    ref.table, ref.key = table, key
    return ref


def _keep(key: object, array, values: tuple) -> None:
    try:
        ref = _ref(array, _kept, key)
    except TypeError:  # an array type without weak references: nothing kept
        return
    if len(_kept) >= _MAX_KEPT:
        _kept.clear()
    _kept[key] = (ref, *values)


def kept_for(table: dict, key: object, first, second):
    """What keep_for kept in table under key, if first and second are the arrays it was kept for
    (both still alive: an id alone may be a new array's); None otherwise."""
    entry = table.get(key)
    if entry is not None and entry[0]() is first and entry[1]() is second:
        return entry[2]
    return None


def keep_for(table: dict, key: object, value, first, second):
    """Keep value in table under key while the arrays first and second live, and return it.

    Weak references: when either array dies the entry goes, and with it what value holds (views
    of the arrays, which hold their memory). Arrays without weak references keep nothing."""
    try:
        table[key] = (_ref(first, table, key), _ref(second, table, key), value)
    except TypeError:
        pass
    return value


def kept(make, array, *args):
    """make(array, *args) for a numba device array (a view of it, its address), made once and kept
    while the array lives; made on every call for anything else (NumPy arrays can be resized)."""
    if type(array) is _ndarray or not getattr(array, "__cuda_ndarray__", False):
        return make(array, *args)
    key = (make, id(array), args)
    entry = _kept.get(key)
    if entry is not None and entry[0]() is array:
        return entry[1]
    value = make(array, *args)
    _keep(key, array, (value,))
    return value


def plain(x: object) -> bool:
    """The one fast-path test of ep: x is plain storage, a NumPy ndarray (the base class), C-contiguous,
    aligned and of a native byte order, which a CPU kernel reads as it is. Everything else (views,
    subclasses, other libraries' arrays, device arrays) takes the general path that checks it.
    storage() makes the same test inline, in the hottest line of a launch."""
    return type(x) is _ndarray and (flags := x.flags).c_contiguous and flags.aligned and x.dtype.isnative


def is_cuda_buffer(obj: object) -> bool:
    """True for objects with __cuda_array_interface__ (and the CUDA simulator's arrays)."""
    # numba's and the simulator's arrays first: the simulator's answer a missing attribute slowly.
    return getattr(obj, "__cuda_ndarray__", False) or hasattr(obj, "__cuda_array_interface__")


def device_type_of(obj: object, name: str) -> DeviceType:
    """Which device an array lives on: NumPy -> cpu, __cuda_array_interface__ -> cuda."""
    if isinstance(obj, np.ndarray):
        return DeviceType.kCPU
    if is_cuda_buffer(obj):
        return DeviceType.kCUDA
    raise TypeError(f"{name}: {type(obj).__name__} is not an array; expected a numpy.ndarray or an object with __cuda_array_interface__")


def host_ndarray(obj: object, name: str, given: str, writable: bool) -> np.ndarray:
    """obj as a base-class ndarray of CPU memory: a NumPy array, or another library's CPU array
    (a PyTorch tensor) viewed through DLPack without a copy.

    TypeError naming name for anything else, saying obj was given (given: "to a cpu primitive",
    "as cpu memory"); ValueError for a read-only array when writable.
    """
    if is_dlpack(obj):
        obj = host_array(obj, name)  # a TypeError naming name where its memory is not the CPU's
    if not isinstance(obj, np.ndarray):
        where = "a CUDA buffer" if is_cuda_buffer(obj) else type(obj).__name__
        raise TypeError(f"{name}: {where} was given {given}; expected a numpy.ndarray or a CPU array with __dlpack__")
    array = plain_ndarray(obj, name)
    if writable and not array.flags.writeable:
        raise ValueError(f"{name}: the array is read-only")
    return array


def address(array) -> int:
    """The address of an array's first element (NumPy, __cuda_array_interface__, or the simulator's arrays)."""
    if getattr(array, "__cuda_ndarray__", False):
        entry = _kept.get(id(array))
        if entry is not None and entry[0]() is array:  # storage() kept it
            return entry[4]
        return kept(_device_address, array)
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is None:
        interface = array.__array_interface__
    return interface["data"][0]


def _device_address(array) -> int:
    # numba's arrays build their __cuda_array_interface__ on every read: ask for the pointer.
    simulated = getattr(array, "_ary", None)  # the simulator's arrays wrap a NumPy array
    if simulated is not None:
        return simulated.__array_interface__["data"][0]
    return array.device_ctypes_pointer.value or 0


def check_device_address(array, name: str) -> int:
    """The address of a numba device array's first element; ValueError naming name for one whose
    elements a GPU cannot read: a null data pointer, or a first element at an address that is not
    a multiple of its size (a view of a byte buffer at an odd offset), where the GPU faults and the
    fault breaks the whole context."""
    start = _device_address(array)
    if array.size:
        if start == 0:
            raise ValueError(f"{name}: its data pointer is null")
        if start % array.dtype.itemsize:
            raise ValueError(f"{name}: starts at address {start:#x}, not a multiple of its {array.dtype.itemsize}-byte elements")
    return start


def storage(obj: object, name: str, device_type: DeviceType, dtype: DataType, count: int, writable: bool = False, stream=None):
    """obj as flat C-contiguous storage of at least count elements, in dtype's storage dtype; on
    CUDA, stream (the launch's) is ordered after the stream obj was produced on (as_cuda_array).

    Raises TypeError for an array of the wrong device or dtype, ValueError for a non-contiguous or
    short buffer, so that no kernel ever indexes outside what it was given.
    """
    # The common case first, with as few lookups as possible (module globals, not enum attributes):
    # launches of tiny arrays are dominated by these checks.
    # dtype.dtype is dtype.storage_dtype but for float16, whose arrays take the general path (a
    # view as uint16); a uint16 array is not float16 storage.
    # plain()'s test, inline (a call is a tenth of a tiny launch): the dtype's identity with ep's
    # own implies native byte order, and CPU kernels take storage of any alignment.
    if type(obj) is _ndarray and device_type is _CPU and obj.dtype is dtype.dtype is dtype.storage_dtype and obj.size >= count:
        flags = obj.flags
        if flags.c_contiguous and (not writable or flags.writeable):
            return obj if obj.ndim == 1 else obj.ravel()  # a view: obj is C-contiguous
    if device_type is _CPU:
        array = host_ndarray(obj, name, "to a cpu primitive", writable)
        contiguous = array.flags.c_contiguous
    else:
        entry = _kept.get(id(obj))
        if entry is not None and entry[0]() is obj and entry[1] is dtype and entry[2] >= count:
            # A numba array checked before: only its producer's stream is read again.
            if stream is not None:
                bound = obj.stream
                if bound is not stream.native and type(bound) is not int:  # 0: bound to no stream
                    stream.wait_for(bound_handle(bound))
            flat = entry[3]
            return obj if flat is None else flat
        if not is_cuda_buffer(obj):
            where = "a numpy.ndarray" if isinstance(obj, np.ndarray) else type(obj).__name__
            raise TypeError(f"{name}: {where} was given to a cuda primitive; expected an object with __cuda_array_interface__")
        array = as_cuda_array(obj, name, stream, writable)
        contiguous = array.is_c_contiguous()
        start = check_device_address(array, name)
    if array.dtype != dtype.dtype:
        raise TypeError(f"{name}: dtype {array.dtype} does not match the primitive's {dtype.value}")
    if not contiguous:
        raise ValueError(f"{name}: storage must be C-contiguous; got strides {array.strides} for shape {array.shape}")
    if array.size < count:
        raise ValueError(f"{name}: holds {array.size} elements, fewer than the {count} the launch needs")
    flat = array if array.ndim == 1 else array.reshape(array.size)
    if dtype.storage_dtype != dtype.dtype:
        flat = flat.view(dtype.storage_dtype)
    if device_type is not _CPU and array is obj:
        _keep(id(obj), obj, (dtype, array.size, None if flat is obj else flat, start))
    return flat


def trusted_storage(obj: object, name: str, dtype: DataType, device_type: DeviceType, count: int, stream=None):
    """obj as flat storage, for a caller that checked it as storage() would (ep.ops, through a
    declared primitive's launch_trusted): a NumPy array of dtype is only flattened and viewed.
    Anything else is checked as storage() checks it, its size against count included: what the
    caller read of it (an object's own shape attribute) need not be the memory a kernel reads."""
    if type(obj) is _ndarray and obj.dtype is dtype.dtype:
        flat = obj if obj.ndim == 1 else obj.reshape(-1)
        return flat if dtype.storage_dtype is dtype.dtype else flat.view(dtype.storage_dtype)
    return storage(obj, name, device_type, dtype, count, False, stream)


def span(array, dtype: DataType, count: int, device_type: DeviceType, writable: bool = False):
    """count elements of dtype from array's first element on, as flat storage: the memory a strided
    view of array reads (or, writable, writes), for a primitive that takes strides (CopyNd)."""
    if device_type is _CPU:
        return _host_span(array, dtype, count, writable)
    from numba import config

    if config.ENABLE_CUDASIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(_host_span(np.asarray(array), dtype, count, writable))
    data = array.__cuda_array_interface__["data"][0]
    interface = {"shape": (count,), "strides": None, "typestr": dtype.dtype.str, "data": (data, not writable), "version": 3}
    return cuda_view(interface, array, dtype.dtype)


def cuda_view(interface: dict, owner: object, dtype: np.dtype):
    """A numba device array of dtype over the memory a CUDA array interface describes: numba takes
    the dtype from its typestr, and bfloat16's ('<V2') names a void."""
    from numba import cuda

    array = cuda.from_cuda_array_interface(interface, owner=owner, sync=False)
    return array if array.dtype == dtype else array.view(dtype)


def _host_span(array: np.ndarray, dtype: DataType, count: int, writable: bool) -> np.ndarray:
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.flags.c_contiguous:
        # A view of the allocation the array views: cheaper than as_strided, and as writable as it.
        offset = array.ctypes.data - root.ctypes.data
        return np.ndarray((count,), dtype.dtype, buffer=root, offset=offset)
    first = array[(slice(0, 1),) * array.ndim].reshape(1).view(dtype.dtype)
    return np.lib.stride_tricks.as_strided(first, shape=(count,), strides=(dtype.itemsize,), writeable=writable)
