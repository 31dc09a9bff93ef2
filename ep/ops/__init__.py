"""The Operator layer: shapes, validation and dims folding, then NewPrimitive + Launch.

Conventions every op follows: attributes (attr0, attr1) are real numbers, Python or NumPy ints
and floats (a bool, a container or a string is a TypeError naming the attribute); scalar operands
promote as in NumPy 2 (NEP 50); an out= that overlaps an input gives NumPy's result, as if every
input were read first (the input is copied, except for an elementwise op run exactly in place).
Each op also takes global tensors (ep.to_global) and returns one (ep/ops/dispatch.py).
"""
from ep.ops import binary as _binary, expand as _expand, gather as _gather, unary as _unary
from ep.ops.dispatch import accepts_global

binary = accepts_global(_binary.binary)
batch_gather = accepts_global(_gather.batch_gather)
gather = accepts_global(_gather.gather)
gather_grad = accepts_global(_gather.gather_grad)
expand = accepts_global(_expand.expand)
expand_grad = accepts_global(_expand.expand_grad)
repeat = accepts_global(_expand.repeat)
unary = accepts_global(_unary.unary)

__all__ = ["binary", "batch_gather", "gather", "gather_grad", "expand", "expand_grad", "repeat", "unary"]
