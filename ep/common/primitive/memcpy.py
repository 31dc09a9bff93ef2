"""Memcpy on every device: which memory each buffer must be in for the kind, Launch's checks, and
the copy a device supplies.

On the CPU host and device memory are one, so every kind copies CPU arrays (as OneFlow's CPU
Memcpy ignores its kind). On CUDA, kHtoD reads a host array into a CUDA buffer, kDtoH the
reverse, kDtoD copies between CUDA buffers and kAuto takes each buffer where it is (a host to host
copy is the CPU Memcpy's). A buffer elsewhere than its kind says is a ValueError naming kind.
"""
from __future__ import annotations

import abc
from typing import Iterator

import numpy as np

from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime.buffer import address, is_cuda_buffer
from ep.common.runtime.byte_storage import byte_storage
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
from ep.common.runtime.dlpack import is_dlpack
from ep.common.runtime.validate import INT64_MAX, count as check_count
from ep.include.primitive.memcpy import Memcpy, MemcpyFactory, MemcpyKind, as_memcpy_kind

_CPU, _CUDA = DeviceType.kCPU, DeviceType.kCUDA
# (dst's memory, src's memory) of each explicit kind on a CUDA device.
_CUDA_SIDES = {MemcpyKind.kHtoD: (_CUDA, _CPU), MemcpyKind.kDtoH: (_CPU, _CUDA), MemcpyKind.kDtoD: (_CUDA, _CUDA)}
_MEMORY = {_CPU: "host", _CUDA: "device"}


def _memory_of(obj: object) -> DeviceType | None:
    """Where a buffer's memory is, as far as kinds go: CUDA buffers are device memory, NumPy and
    other DLPack arrays host memory; None for what is no array (byte_storage refuses it, naming it)."""
    if is_cuda_buffer(obj):
        return _CUDA
    return _CPU if isinstance(obj, np.ndarray) or is_dlpack(obj) else None


def sides(device_type: DeviceType, kind: MemcpyKind, dst: object, src: object) -> tuple[DeviceType, DeviceType]:
    """(dst's memory, src's memory) for a copy of kind on device_type; ValueError naming kind when
    the buffers are not where it says."""
    if device_type is _CPU:
        return _CPU, _CPU
    found = _memory_of(dst), _memory_of(src)
    if kind is MemcpyKind.kAuto:
        if found == (_CPU, _CPU):
            raise ValueError("kind: kAuto was given two host arrays on a cuda Memcpy; expected a CUDA buffer on either side (host to host is the cpu Memcpy's)")
        return tuple(_CUDA if side is None else side for side in found)
    expected = _CUDA_SIDES[kind]
    for name, want, got, obj in zip(("dst", "src"), expected, found, (dst, src)):
        if got is not None and want is not got:
            raise ValueError(
                f"kind: {kind.name} copies into {_MEMORY[expected[0]]} memory from {_MEMORY[expected[1]]} memory, but {name}"
                f" is {_MEMORY[got]} memory ({type(obj).__name__}); expected a {_MEMORY[want]} array or kind=kAuto"
            )
    return expected


class MemcpyKernels(abc.ABC):
    """What a device supplies: the copy of count bytes between flat uint8 storage (each side a
    NumPy array or a device array, where sides() put it), on stream."""

    @abc.abstractmethod
    def copy(self, stream, dst, src, count: int) -> None:
        """Copy src[:count] into dst[:count] in stream order (non-overlapping, count > 0)."""

    def all_kernels(self) -> Iterator[object]:
        """The device kernels a copy can run (for the PTX check): none where the driver copies."""
        return iter(())


class MemcpyImpl(Memcpy):
    def __init__(self, device_type: DeviceType, kernels: MemcpyKernels, kind: MemcpyKind) -> None:
        self.device_type, self.kind = device_type, kind
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]

    def Launch(self, stream, dst, src, count: int) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        if type(count) is not int or not 0 <= count <= INT64_MAX:
            count = check_count(count)
        dst_memory, src_memory = sides(self.device_type, self.kind, dst, src)
        dst = byte_storage(dst, "dst", dst_memory, count, writable=True, stream=stream)
        src = byte_storage(src, "src", src_memory, count, stream=stream)
        if not count:
            return
        if dst_memory is src_memory:
            start, source = address(dst), address(src)
            if start == source:
                return  # one range: nothing to move (OneFlow's Memcpy returns too)
            if start < source + count and source < start + count:
                raise ValueError(
                    f"dst, src: bytes [{start:#x}, {start + count:#x}) and [{source:#x}, {source + count:#x}) overlap;"
                    " expected separate memory (copy through a temporary)"
                )
        self._kernels.copy(stream, dst, src, count)


class MemcpyFactoryImpl(GenericFactory, MemcpyFactory):
    primitive_type = MemcpyImpl

    def New(self, kind) -> Memcpy | None:
        return self._new((as_memcpy_kind(kind),))

    def Combinations(self) -> Iterator[tuple[object, tuple]]:
        # Bytes of any array: listed as uint8, the unit it moves.
        for kind in MemcpyKind:
            yield kind, (DataType.kUInt8,)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        # On a cuda Memcpy the kind says which side stays on the host (kAuto: both on the device).
        host = {MemcpyKind.kHtoD: ("src",), MemcpyKind.kDtoH: ("dst",)}.get(op, ())
        src = values(16, DataType.kUInt8)
        yield Sample((op,), {"dst": zeros(16, DataType.kUInt8), "src": src, "count": 16}, {"dst": src}, host=host)
