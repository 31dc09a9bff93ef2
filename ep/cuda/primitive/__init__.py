"""CUDA primitives; importing this package registers their factories."""
from ep.cuda.primitive.batch_gather import BatchGatherFactoryImpl
from ep.cuda.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinaryFactoryImpl
from ep.cuda.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl
from ep.cuda.primitive.expand import ExpandFactoryImpl
from ep.cuda.primitive.expand_grad import ExpandGradFactoryImpl
from ep.cuda.primitive.gather import GatherFactoryImpl

__all__ = ["BatchGatherFactoryImpl", "GatherFactoryImpl", "BroadcastElementwiseBinaryFactoryImpl", "ElementwiseUnaryFactoryImpl", "ExpandFactoryImpl", "ExpandGradFactoryImpl"]
