"""BatchGather on CUDA: Gather's kernels (ep.cuda.primitive.gather), which take a batch dimension."""
from ep.common.primitive.gather import BatchGatherFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cuda.primitive.gather import CUDA_GATHER_KERNELS
from ep.include.primitive.batch_gather import BatchGatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCUDA, BatchGatherFactory, BatchGatherFactoryImpl(DeviceType.kCUDA, CUDA_GATHER_KERNELS))
