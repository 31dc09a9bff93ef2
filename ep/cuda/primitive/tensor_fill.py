"""TensorFill on CUDA: the per-element kernels (ep/cuda/element.py) of tensor_fill_value."""
from ep.common.primitive.tensor_fill import TensorFillFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cuda.element import KERNELS
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.tensor_fill import TensorFillFactory

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, TensorFillFactory, TensorFillFactoryImpl(DeviceType.kCUDA, KERNELS))
