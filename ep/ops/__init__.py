"""The Operator layer: shapes, validation and dims folding, then NewPrimitive + Launch."""
from ep.ops.binary import binary
from ep.ops.expand import expand, expand_grad, repeat
from ep.ops.gather import batch_gather, gather, gather_grad
from ep.ops.unary import unary

__all__ = ["binary", "batch_gather", "gather", "gather_grad", "expand", "expand_grad", "repeat", "unary"]
