"""CPU primitives; importing this package registers their factories."""
from ep.cpu.primitive.batch_gather import BatchGatherFactoryImpl
from ep.cpu.primitive.broadcast_elementwise_binary import BroadcastElementwiseBinaryFactoryImpl
from ep.cpu.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl
from ep.cpu.primitive.expand import ExpandFactoryImpl
from ep.cpu.primitive.expand_grad import ExpandGradFactoryImpl
from ep.cpu.primitive.gather import GatherFactoryImpl

__all__ = ["BatchGatherFactoryImpl", "GatherFactoryImpl", "BroadcastElementwiseBinaryFactoryImpl", "ElementwiseUnaryFactoryImpl", "ExpandFactoryImpl", "ExpandGradFactoryImpl"]
