"""The Operator layer: shapes, validation and dims folding, then NewPrimitive + Launch."""
from ep.ops.gather import batch_gather, gather, gather_grad
from ep.ops.unary import unary

__all__ = ["batch_gather", "gather", "gather_grad", "unary"]
