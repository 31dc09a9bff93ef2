"""CUDA primitives; importing this package registers their factories."""
from ep.cuda.primitive.elementwise_unary import ElementwiseUnaryFactoryImpl

__all__ = ["ElementwiseUnaryFactoryImpl"]
