"""Cast on the CPU: ElementwiseUnary's kCast kernels (ep/common/primitive/cast.py)."""
from ep.common.primitive.cast import CastFactoryImpl, CastKernels
from ep.common.runtime.device import DeviceType
from ep.cpu.primitive.elementwise_unary import UNARY_KERNELS
from ep.include.primitive.cast import CastFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, CastFactory, CastFactoryImpl(DeviceType.kCPU, CastKernels(UNARY_KERNELS)))
