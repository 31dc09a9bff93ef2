"""Fill on the CPU: the per-element kernels (ep/cpu/element.py) of fill_value."""
from ep.common.primitive.fill import FillFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.element import KERNELS
from ep.include.primitive.fill import FillFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, FillFactory, FillFactoryImpl(DeviceType.kCPU, KERNELS))
