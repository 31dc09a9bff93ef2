"""Devices: DeviceType, Device and GetDevice."""
from __future__ import annotations

import functools
import importlib.util

from ep.common.runtime.names import NamedEnum, lookup


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
        from ep.common.runtime.stream import new_stream

        return new_stream(self)

    def WrapStream(self, stream: object):
        """An ep Stream launching on the caller's CUDA stream of this device: a PyTorch or CuPy
        stream object, anything with __cuda_stream__, or a raw CUstream handle (an int; 0 is the
        default stream). The caller keeps it alive: ep holds the object, never destroys the stream."""
        from ep.common.runtime.stream import wrap_stream

        if self.device_type is not DeviceType.kCUDA:
            raise TypeError(f"stream: {self!r} runs launches at once; only a cuda device wraps a stream")
        return wrap_stream(self, stream)

    @functools.cached_property
    def default_stream(self):
        """The stream ep.ops launches on when none is given."""
        from ep.common.runtime.stream import default_stream

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
