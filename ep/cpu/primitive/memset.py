"""Memset on the CPU: Fill's one-byte kernel (ep.cpu.primitive.fill)."""
from __future__ import annotations

from ep.common.primitive.memset import MemsetFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.primitive.fill import KERNELS
from ep.include.primitive.memset import MemsetFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, MemsetFactory, MemsetFactoryImpl(DeviceType.kCPU, KERNELS))
