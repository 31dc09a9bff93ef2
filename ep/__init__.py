"""ep: OneFlow-style execution-provider primitives, on the CPU and NVIDIA GPUs, with Numba."""
from ep.common.runtime.data_type import DataType
from ep.common.runtime.device import Device, DeviceType, GetDevice, Stream
from ep.common.runtime.dlpack import from_dlpack
from ep.include.primitive import (
    AddFactory,
    BatchGatherFactory,
    BatchMatmulFactory,
    BinaryOp,
    BlasTransposeType,
    BroadcastElementwiseBinaryFactory,
    BroadcastElementwiseUnaryFactory,
    BroadcastMatmulFactory,
    CastFactory,
    ConstantPadFactory,
    CopyNdFactory,
    ElementwiseFusedFactory,
    ElementwiseUnaryFactory,
    ExpandFactory,
    ExpandGradFactory,
    Factory,
    FillFactory,
    GatherFactory,
    LogSoftmaxBackwardFactory,
    LogSoftmaxFactory,
    MatmulFactory,
    MemcpyFactory,
    MemcpyKind,
    MemsetFactory,
    NewPrimitive,
    OneHotFactory,
    PermuteFactory,
    Primitive,
    SoftmaxBackwardFactory,
    SoftmaxFactory,
    TensorFillFactory,
    UnaryOp,
    UnsortedSegmentSumFactory,
    WhereFactory,
)

__version__ = "0.1.0"


def __getattr__(name: str):
    # ep.ops imports Numba; loading it on first use keeps `import ep` light.
    if name == "ops":
        import importlib

        return importlib.import_module("ep.ops")
    if name == "fuse":
        from ep.ops.fuse import fuse

        return fuse
    raise AttributeError(f"module 'ep' has no attribute {name!r}")

__all__ = [
    "AddFactory",
    "BatchGatherFactory",
    "BatchMatmulFactory",
    "BinaryOp",
    "BlasTransposeType",
    "BroadcastElementwiseBinaryFactory",
    "BroadcastElementwiseUnaryFactory",
    "BroadcastMatmulFactory",
    "CastFactory",
    "ConstantPadFactory",
    "CopyNdFactory",
    "DataType",
    "Device",
    "DeviceType",
    "ElementwiseFusedFactory",
    "ElementwiseUnaryFactory",
    "ExpandFactory",
    "ExpandGradFactory",
    "Factory",
    "FillFactory",
    "GatherFactory",
    "GetDevice",
    "LogSoftmaxBackwardFactory",
    "LogSoftmaxFactory",
    "MatmulFactory",
    "MemcpyFactory",
    "MemcpyKind",
    "MemsetFactory",
    "NewPrimitive",
    "OneHotFactory",
    "PermuteFactory",
    "Primitive",
    "SoftmaxBackwardFactory",
    "SoftmaxFactory",
    "Stream",
    "TensorFillFactory",
    "UnaryOp",
    "UnsortedSegmentSumFactory",
    "WhereFactory",
    "from_dlpack",
    "fuse",
    "ops",
]

# SBP signatures and placements (light: the op rules load on first use).
from ep import sbp  # noqa: E402
from ep.sbp.placement import placement  # noqa: E402

__all__ += ["placement", "sbp"]

# Global tensors over MPI (mpi4py loads on the first one).
from ep.sbp.global_tensor import GlobalTensor, to_global  # noqa: E402

__all__ += ["GlobalTensor", "to_global"]
