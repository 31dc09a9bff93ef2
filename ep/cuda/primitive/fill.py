"""Fill on CUDA: the per-element kernels (ep/cuda/element.py) of fill_value."""
from ep.common.primitive.fill import FillFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cuda.element import KERNELS
from ep.include.primitive.fill import FillFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, FillFactory, FillFactoryImpl(DeviceType.kCUDA, KERNELS))
