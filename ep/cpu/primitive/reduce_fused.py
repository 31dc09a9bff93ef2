"""ReduceFused on the CPU: Reduce's kernels (reduce.py) reading a fused expression's arguments."""
from ep.common.primitive.reduce_fused import ReduceFusedFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.primitive.reduce import KERNELS
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY
from ep.include.primitive.reduce_fused import ReduceFusedFactory

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, ReduceFusedFactory, ReduceFusedFactoryImpl(DeviceType.kCPU, KERNELS))
