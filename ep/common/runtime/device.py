"""Devices and their streams: DeviceType, Device and GetDevice; a CPU stream runs launches at once,
a CUDA stream queues them on a CUstream.

A CUDA stream is one ep creates (Device.CreateStream), the device's default stream, or a caller's
own stream wrapped by Device.WrapStream or accepted wherever a stream is: a PyTorch or CuPy stream
object, anything with __cuda_stream__, or a raw CUstream handle (an int). Devices and streams refer
to each other (a Device makes its streams, a Stream knows its Device), so they live in one module.
"""
from __future__ import annotations

import functools
import importlib.util
import threading
import weakref
from contextvars import ContextVar

import numpy as np

from ep.common.runtime.caches import table
from ep.common.runtime.names import NamedEnum, lookup
from ep.common.runtime.once import cached_property


class DeviceType(NamedEnum):
    """Where a primitive runs; the tags "cpu" and "cuda" are accepted wherever a device is."""

    kCPU = "cpu"
    kCUDA = "cuda"


def as_device_type(device: object, name: str = "device") -> DeviceType:
    """A DeviceType from a DeviceType, a Device or a tag ("cpu", "cuda", "cuda:0")."""
    if isinstance(device, Device):
        return device.device_type
    if isinstance(device, str):
        device = device.split(":", 1)[0].lower()
    return lookup(DeviceType, device, name, "a device", "cpu")


@functools.cache
def cuda_installed() -> bool:
    """True when the numba-cuda package (the `ep[cuda]` extra) is installed.

    Numba's own deprecated CUDA target is not used: without numba-cuda, "cuda" has no factories.
    """
    return importlib.util.find_spec("numba_cuda") is not None


@functools.cache
def cuda_available() -> bool:
    """True when numba.cuda can run kernels here (a GPU, or the simulator when NUMBA_ENABLE_CUDASIM=1)."""
    if not cuda_installed():
        return False
    try:
        from numba import cuda
    except ImportError:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install says so by raising; either way there is no device
        return False


def available_device_types() -> tuple[DeviceType, ...]:
    """The device types launches can run on in this process."""
    return (DeviceType.kCPU, DeviceType.kCUDA) if cuda_available() else (DeviceType.kCPU,)


class Device:
    """One device; CreateStream() gives a Stream that launches run on."""

    def __init__(self, device_type: DeviceType, index: int) -> None:
        self.device_type = device_type
        self.index = index

    def CreateStream(self):
        """A new stream on this device."""
        return new_stream(self)

    def WrapStream(self, stream: object):
        """An ep Stream launching on the caller's CUDA stream of this device: a PyTorch or CuPy
        stream object, anything with __cuda_stream__, or a raw CUstream handle (an int; 0 is the
        default stream). The caller keeps it alive: ep holds the object, never destroys the stream."""
        if self.device_type is not DeviceType.kCUDA:
            raise TypeError(f"stream: {self!r} runs launches at once; only a cuda device wraps a stream")
        return wrap_stream(self, stream)

    @cached_property
    def default_stream(self):
        """The stream ep.ops launches on when none is given."""
        return default_stream(self)

    def __repr__(self) -> str:
        return f"Device({self.device_type.value}:{self.index})"


@functools.cache
def _device(device_type: DeviceType, index: int) -> Device:
    return Device(device_type, index)


def cuda_device_count() -> int:
    """How many CUDA devices launches can use here (the simulator has one)."""
    if not cuda_available():
        return 0
    from numba import cuda

    return len(cuda.gpus)


def GetDevice(device: object, index: int | None = None) -> Device:
    """The Device for a device type, a Device or a tag ("cpu", "cuda", "cuda:1") and an index
    (default 0; a Device or a tag with an index names it, and an index given besides must agree).

    ValueError names the device when this machine has no such device.
    """
    device_type = as_device_type(device)
    if index is not None and (type(index) is not int or index < 0):
        raise ValueError(f"index: {index!r} is not a device index; expected an int >= 0")
    named = None
    if isinstance(device, Device):
        named = device.index
    elif isinstance(device, str) and ":" in device:
        tag = device.split(":", 1)[1]
        if not tag.isdecimal():
            raise ValueError(f"device: {device!r} has no valid index; expected e.g. '{device_type.value}:0'")
        named = int(tag)
    if named is not None:
        if index is not None and index != named:
            raise ValueError(f"device, index: device {device!r} names index {named} but index is {index}; expected one index")
        index = named
    elif index is None:
        index = 0
    if device_type is DeviceType.kCPU and index != 0:
        raise ValueError(f"device: cpu:{index} does not exist; expected index 0")
    if device_type is DeviceType.kCUDA:
        if not cuda_available():
            raise ValueError("device: 'cuda' is not available here (no GPU; set NUMBA_ENABLE_CUDASIM=1 for the simulator)")
        count = cuda_device_count()
        if index >= count:
            raise ValueError(f"device: cuda:{index} does not exist; this machine has {count} CUDA device(s), indices 0 to {count - 1}")
    return _device(device_type, index)


# CUDA's legacy default stream as a CAI v3 "stream" value: v3 forbids 0, which is ambiguous.
LEGACY_DEFAULT_STREAM = 1


class Stream:
    """Where launches run; Sync() waits for all of them."""

    def __init__(self, device: Device) -> None:
        self.device = device

    @property
    def device_type(self) -> DeviceType:
        return self.device.device_type

    def Sync(self) -> None:
        """Wait until every launch on this stream has finished."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.device!r})"


class CpuStream(Stream):
    """Launches run synchronously in the calling thread, so Sync has nothing to wait for."""

    def temporary(self, count: int, dtype: np.dtype) -> np.ndarray:
        """A host buffer of count elements of dtype for one launch's scratch."""
        return np.empty(count, dtype)


class CudaStream(Stream):
    """A CUDA stream: native is the numba stream launches go on, handle the CUstream as an int
    (LEGACY_DEFAULT_STREAM for the default stream, never 0), owner the caller's stream object it
    wraps (kept alive so that its handle stays valid).

    Launches are asynchronous. Errors a launch can only find on the device (an out-of-range index
    with check_bounds) are raised by the next Sync(), through the checks in `deferred`.
    """

    def __init__(self, device: Device, native, handle: int, owner: object = None) -> None:
        super().__init__(device)
        self.native = native
        self.handle = handle
        self.owner = owner
        #: Objects with check(): each reads, after the synchronization, what its launches recorded
        #: on the device and raises the first error (see ep/cuda/primitive/gather_common.py).
        self.deferred: list = []
        self._events: dict[int, object] = {}
        self._temporaries: dict[np.dtype, object] = {}
        #: Configured kernel launches on this stream by (kernel, blocks), kept by ep.cuda.kernel so
        #: that a repeated launch skips numba's configuration; they go with the stream.
        self.launches: dict[tuple, object] = table("launch state")
        _handles[native] = handle

    def Sync(self) -> None:
        self.native.synchronize()
        for check in self.deferred:
            check.check()

    def wait_for(self, handle: int) -> None:
        """Make later launches on this stream wait for the work queued on stream `handle` so far:
        an event recorded there and waited for here, so the host never blocks."""
        if handle is None or handle == self.handle:
            return
        event = self._events.get(handle)
        if event is None:
            from numba import cuda

            # Without timing an event is cheaper to record (the simulator's takes no arguments).
            native_event = cuda.event() if _simulated() else cuda.event(timing=False)
            event = self._events[handle] = (native_event, _native_stream(self.device, handle))
        event[0].record(event[1])
        event[0].wait(self.native)

    def temporary(self, count: int, dtype: np.dtype):
        """A device buffer of count elements of dtype for one launch's scratch.

        Stream-ordered reuse: launches on one stream run one after another, so every launch may
        take the same buffer; it is allocated only when a launch needs more than any before.
        """
        dtype = np.dtype(dtype)
        buffer = self._temporaries.get(dtype)
        if buffer is None or buffer.size < count:
            from numba import cuda

            with _current(self.device):
                buffer = self._temporaries[dtype] = cuda.device_array(max(count, 1), dtype, stream=self.native)
        return buffer[:count]


# The handle of each numba stream an ep stream wraps: arrays bound to it (cuda.device_array's
# stream=) are ordered by it, also on the simulator, whose streams have no handles.
_handles: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def bound_handle(native: object) -> int | None:
    """The CUstream handle of the numba stream an array is bound to (None for 0, no stream)."""
    if native is None or isinstance(native, int):
        return None
    handle = _handles.get(native)
    if handle is None and not _simulated():
        handle = int(native) or LEGACY_DEFAULT_STREAM
    return handle


#: (name, shape) of the indices of the launch being made, as the caller of ep.ops names them: an
#: error that the device finds and the stream's Sync raises names the caller's own position.
caller_indices: ContextVar[tuple[str, tuple[int, ...]] | None] = ContextVar("caller_indices", default=None)


# The stream class of each device type: a launch whose stream is exactly of it skips check_stream.
STREAM_TYPES = {DeviceType.kCPU: CpuStream, DeviceType.kCUDA: CudaStream}


def _current(device: Device):
    """A context making device current (numba's), for the CUDA calls that act on the current one."""
    from numba import cuda

    return cuda.gpus[device.index]


def _simulated() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def _native_stream(device: Device, handle: int):
    """numba's stream for a CUstream handle (the simulator, which has no handles, stands a stream in)."""
    from numba import cuda

    with _current(device):
        if _simulated():
            return cuda.stream()
        if handle == LEGACY_DEFAULT_STREAM:
            return cuda.legacy_default_stream()
        return cuda.external_stream(handle)


# Handles ep made for the simulator's streams, which have none: distinct, and never 0, 1 or 2.
_simulated_handles = iter(range(0x1000, 1 << 62, 0x100))


def new_stream(device: Device) -> Stream:
    if device.device_type is DeviceType.kCPU:
        return CpuStream(device)
    from numba import cuda

    with _current(device):
        native = cuda.stream()
    handle = next(_simulated_handles) if _simulated() else int(native.handle)
    return CudaStream(device, native, handle)


def default_stream(device: Device) -> Stream:
    """The device's default stream: CUDA's legacy default stream, whose handle (1) is what arrays
    allocated on it export as their CAI v3 "stream"."""
    if device.device_type is DeviceType.kCPU:
        return CpuStream(device)
    return CudaStream(device, _native_stream(device, LEGACY_DEFAULT_STREAM), LEGACY_DEFAULT_STREAM)


def foreign_handle(obj: object) -> int | None:
    """The CUstream handle of a caller's stream object, or None when obj is none.

    Accepts objects with __cuda_stream__ (a method or attribute giving (version, handle): CuPy,
    numba, cuda.core), PyTorch's streams (cuda_stream), CuPy's older ones (ptr), and ints.
    OverflowError for a handle outside [0, 2**64): a CUstream is a 64-bit pointer.
    """
    protocol = getattr(obj, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        handle = value[1] if isinstance(value, tuple) and len(value) == 2 else None
    elif hasattr(obj, "cuda_stream"):
        handle = obj.cuda_stream
    elif hasattr(obj, "ptr") and not hasattr(obj, "__array_interface__"):
        handle = obj.ptr
    else:
        handle = obj
    if type(handle) is not int:
        return None
    if not 0 <= handle < 2**64:
        raise OverflowError(f"stream: {handle} (from {obj!r}) is no CUstream handle; expected a 64-bit pointer, 0 <= handle < 2**64")
    # Handle 0 names the (legacy) default stream, as numba's and CUDA's APIs read it.
    return handle or LEGACY_DEFAULT_STREAM


def _device_index_of(obj: object) -> int | None:
    """The device a caller's stream object says it is on (PyTorch: .device.index, CuPy: .device_id)."""
    index = getattr(getattr(obj, "device", None), "index", None)
    if index is None:
        index = getattr(obj, "device_id", None)
    return index if type(index) is int else None


_wrapped: dict[tuple[int, int], CudaStream] = {}
_wrapped_lock = threading.Lock()
# Wrappers kept per (device, handle), so the caller's stream object maps to one ep stream (and its
# deferred checks); the oldest are dropped beyond this many.
_WRAPPED_LIMIT = 256


def wrap_stream(device: Device, obj: object) -> CudaStream:
    """An ep stream launching on the caller's stream obj of device (see foreign_handle).

    TypeError naming obj when it is no stream; ValueError when it says it is on another device.
    """
    if isinstance(obj, CudaStream):
        if obj.device is not device:
            raise ValueError(f"stream: {obj!r} is on {obj.device!r}; expected a stream of {device!r}")
        return obj
    handle = foreign_handle(obj)
    if handle is None:
        raise TypeError(
            f"stream: {obj!r} is not a stream; expected an ep Stream, an object with __cuda_stream__, "
            "a PyTorch or CuPy stream, or a CUstream handle (an int >= 0)"
        )
    index = _device_index_of(obj)
    if index is not None and index != device.index:
        raise ValueError(f"stream: {obj!r} is on cuda:{index}; expected a stream of {device!r}")
    if handle == LEGACY_DEFAULT_STREAM:
        return device.default_stream
    key = (device.index, handle)
    with _wrapped_lock:
        stream = _wrapped.get(key)
        if stream is None:
            if len(_wrapped) >= _WRAPPED_LIMIT:
                del _wrapped[next(iter(_wrapped))]
            owner = None if type(obj) is int else obj
            stream = _wrapped[key] = CudaStream(device, _native_stream(device, handle), handle, owner)
        return stream


def check_stream(stream: object, device_type: DeviceType) -> Stream:
    """The stream, if it is a Stream of device_type or, for CUDA, a caller's stream object (wrapped
    for the current device); TypeError otherwise."""
    if isinstance(stream, Stream) and stream.device.device_type is device_type:
        return stream
    if not isinstance(stream, Stream):
        if device_type is DeviceType.kCUDA and foreign_handle(stream) is not None:
            index = _device_index_of(stream)
            return wrap_stream(GetDevice(DeviceType.kCUDA, current_device_index() if index is None else index), stream)
        raise TypeError(f"stream: {stream!r} is not an ep Stream; expected one from Device.CreateStream() or a CUDA stream object")
    raise TypeError(f"stream: {stream!r} is a {stream.device_type.value} stream; expected a {device_type.value} stream")


def current_device_index() -> int:
    """The index of the CUDA device current in this thread (0 with one device)."""
    if cuda_device_count() <= 1:
        return 0
    from numba import cuda

    return cuda.get_current_device().id
