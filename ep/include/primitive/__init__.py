"""The primitive interfaces, their op enums, and NewPrimitive."""
from ep.include.primitive.add import Add, AddFactory
from ep.include.primitive.batch_gather import BatchGather, BatchGatherFactory
from ep.include.primitive.batch_matmul import BatchMatmul, BatchMatmulFactory
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.blas import BlasTransposeType
from ep.include.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinary, BroadcastElementwiseBinaryFactory
from ep.include.primitive.broadcast_elementwise_unary import BroadcastElementwiseUnary, BroadcastElementwiseUnaryFactory
from ep.include.primitive.broadcast_matmul import BroadcastMatmul, BroadcastMatmulFactory
from ep.include.primitive.cast import Cast, CastFactory
from ep.include.primitive.constant_pad import ConstantPad, ConstantPadFactory
from ep.include.primitive.copy_nd import CopyNd, CopyNdFactory
from ep.include.primitive.elementwise_fused import ElementwiseFused, ElementwiseFusedFactory
from ep.include.primitive.elementwise_unary import ElementwiseUnary, ElementwiseUnaryFactory
from ep.include.primitive.expand import Expand, ExpandFactory
from ep.include.primitive.expand_grad import ExpandGrad, ExpandGradFactory
from ep.include.primitive.fill import Fill, FillFactory
from ep.include.primitive.gather import Gather, GatherFactory, IndexOutOfRange
from ep.include.primitive.matmul import Matmul, MatmulFactory
from ep.include.primitive.memcpy import Memcpy, MemcpyFactory, MemcpyKind
from ep.include.primitive.memset import Memset, MemsetFactory
from ep.include.primitive.one_hot import OneHot, OneHotFactory
from ep.include.primitive.permute import Permute, PermuteFactory
from ep.include.primitive.primitive import (
    REGISTER_PRIMITIVE_FACTORY,
    Factory,
    GetFactory,
    NewPrimitive,
    Primitive,
    RegisteredFactories,
)
from ep.include.primitive.softmax import LogSoftmax, LogSoftmaxFactory, Softmax, SoftmaxFactory
from ep.include.primitive.softmax_backward import (
    LogSoftmaxBackward,
    LogSoftmaxBackwardFactory,
    SoftmaxBackward,
    SoftmaxBackwardFactory,
)
from ep.include.primitive.tensor_fill import TensorFill, TensorFillFactory
from ep.include.primitive.unary_op import UnaryOp
from ep.include.primitive.unsorted_segment_sum import UnsortedSegmentSum, UnsortedSegmentSumFactory
from ep.include.primitive.where import Where, WhereFactory

__all__ = [
    "REGISTER_PRIMITIVE_FACTORY",
    "Add",
    "AddFactory",
    "BatchGather",
    "BatchGatherFactory",
    "BatchMatmul",
    "BatchMatmulFactory",
    "BinaryOp",
    "BlasTransposeType",
    "BroadcastElementwiseBinary",
    "BroadcastElementwiseBinaryFactory",
    "BroadcastElementwiseUnary",
    "BroadcastElementwiseUnaryFactory",
    "BroadcastMatmul",
    "BroadcastMatmulFactory",
    "Cast",
    "CastFactory",
    "ConstantPad",
    "ConstantPadFactory",
    "CopyNd",
    "CopyNdFactory",
    "ElementwiseFused",
    "ElementwiseFusedFactory",
    "ElementwiseUnary",
    "ElementwiseUnaryFactory",
    "Expand",
    "ExpandFactory",
    "ExpandGrad",
    "ExpandGradFactory",
    "Factory",
    "Fill",
    "FillFactory",
    "Gather",
    "GatherFactory",
    "GetFactory",
    "IndexOutOfRange",
    "Matmul",
    "MatmulFactory",
    "Memcpy",
    "MemcpyFactory",
    "MemcpyKind",
    "LogSoftmax",
    "LogSoftmaxBackward",
    "LogSoftmaxBackwardFactory",
    "LogSoftmaxFactory",
    "Memset",
    "MemsetFactory",
    "NewPrimitive",
    "OneHot",
    "OneHotFactory",
    "Permute",
    "PermuteFactory",
    "Primitive",
    "RegisteredFactories",
    "Softmax",
    "SoftmaxBackward",
    "SoftmaxBackwardFactory",
    "SoftmaxFactory",
    "TensorFill",
    "TensorFillFactory",
    "UnaryOp",
    "UnsortedSegmentSum",
    "UnsortedSegmentSumFactory",
    "Where",
    "WhereFactory",
]
