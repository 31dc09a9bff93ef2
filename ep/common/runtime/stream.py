"""Streams: a CPU stream runs launches at once, a CUDA stream queues them on a numba stream."""
from __future__ import annotations

from ep.common.runtime.device import Device, DeviceType


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


class CudaStream(Stream):
    """Wraps a numba CUDA stream; launches are asynchronous."""

    def __init__(self, device: Device, native) -> None:
        super().__init__(device)
        self.native = native

    def Sync(self) -> None:
        self.native.synchronize()


# The stream class of each device type: a launch whose stream is exactly of it skips check_stream.
STREAM_TYPES = {DeviceType.kCPU: CpuStream, DeviceType.kCUDA: CudaStream}


def new_stream(device: Device) -> Stream:
    if device.device_type is DeviceType.kCPU:
        return CpuStream(device)
    from numba import cuda

    with cuda.gpus[device.index]:
        return CudaStream(device, cuda.stream())


def default_stream(device: Device) -> Stream:
    if device.device_type is DeviceType.kCPU:
        return CpuStream(device)
    from numba import cuda

    return CudaStream(device, cuda.default_stream())


def check_stream(stream: object, device_type: DeviceType) -> Stream:
    """The stream, if it is a Stream of device_type; TypeError otherwise."""
    if isinstance(stream, Stream) and stream.device.device_type is device_type:
        return stream
    if not isinstance(stream, Stream):
        raise TypeError(f"stream: {stream!r} is not an ep Stream; expected one from Device.CreateStream()")
    if stream.device_type is not device_type:
        raise TypeError(f"stream: {stream!r} is a {stream.device_type.value} stream; expected a {device_type.value} stream")
    return stream
