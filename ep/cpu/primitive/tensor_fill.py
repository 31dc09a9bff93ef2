"""TensorFill on the CPU: the per-element kernels (ep/cpu/element.py) of tensor_fill_value."""
from ep.common.primitive.tensor_fill import TensorFillFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.element import KERNELS
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.tensor_fill import TensorFillFactory

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, TensorFillFactory, TensorFillFactoryImpl(DeviceType.kCPU, KERNELS))
