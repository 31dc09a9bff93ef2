"""TensorFill on the CPU: Fill's spans (ep.cpu.primitive.fill) reading the value from src."""
from __future__ import annotations

from ep.common.primitive.fill import from_buffer
from ep.common.primitive.tensor_fill import TensorFillFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.primitive.fill import CpuFillKernels
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.tensor_fill import TensorFillFactory

REGISTER_PRIMITIVE_FACTORY(
    DeviceType.kCPU, TensorFillFactory, TensorFillFactoryImpl(DeviceType.kCPU, CpuFillKernels(from_buffer))
)
