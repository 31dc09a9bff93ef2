"""The Operator layer: shapes, validation and dims folding, then NewPrimitive + Launch."""
from ep.ops.unary import unary

__all__ = ["unary"]
