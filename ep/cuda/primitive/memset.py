"""Memset on CUDA: Fill's one-byte per-element kernel (ep/cuda/element.py)."""
from ep.common.primitive.memset import MemsetFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cuda.element import KERNELS
from ep.include.primitive.memset import MemsetFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, MemsetFactory, MemsetFactoryImpl(DeviceType.kCUDA, KERNELS))
