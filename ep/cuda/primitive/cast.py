"""Cast on the GPU: ElementwiseUnary's kCast kernels (ep/common/primitive/cast.py)."""
from ep.common.primitive.cast import CastFactoryImpl, CastKernels
from ep.common.runtime.device import DeviceType
from ep.cuda.primitive.elementwise_unary import UNARY_KERNELS
from ep.include.primitive.cast import CastFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, CastFactory, CastFactoryImpl(DeviceType.kCUDA, CastKernels(UNARY_KERNELS)))
