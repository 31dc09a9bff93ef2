"""Memset on the CPU: Fill's one-byte per-element kernel (ep/cpu/element.py)."""
from ep.common.primitive.memset import MemsetFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.element import KERNELS
from ep.include.primitive.memset import MemsetFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, MemsetFactory, MemsetFactoryImpl(DeviceType.kCPU, KERNELS))
