"""CPU primitives; importing this package registers their factories."""
from ep.cpu.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl

__all__ = ["ElementwiseUnaryFactoryImpl"]
