"""BatchGather on the CPU: Gather's kernels (ep.cpu.primitive.gather), which take a batch dimension."""
from ep.common.primitive.gather import BatchGatherFactoryImpl
from ep.common.runtime.device import DeviceType
from ep.cpu.primitive.gather import CPU_GATHER_KERNELS
from ep.include.primitive.batch_gather import BatchGatherFactory
from ep.include.primitive.primitive import REGISTER_PRIMITIVE_FACTORY

REGISTER_PRIMITIVE_FACTORY(DeviceType.kCPU, BatchGatherFactory, BatchGatherFactoryImpl(DeviceType.kCPU, CPU_GATHER_KERNELS))
