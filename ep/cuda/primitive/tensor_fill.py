"""TensorFill on CUDA: Fill's kernels (ep.cuda.primitive.fill) reading the value from src on the device."""
from __future__ import annotations

from ep.common.primitive.fill import from_buffer
from ep.common.primitive.tensor_fill import TensorFillFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cuda.primitive.fill import CudaFillKernels
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.tensor_fill import TensorFillFactory

REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCUDA, TensorFillFactory, TensorFillFactoryImpl(DeviceType.kCUDA, CudaFillKernels(from_buffer))
)
