"""describe: what an elementwise op computes, read from its record."""
from __future__ import annotations

from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.ops.record import describe as describe_record
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.common.runtime.names import did_you_mean
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.unary_op import UnaryOp, as_unary_op


def describe(op: UnaryOp | BinaryOp | str) -> str:
    """What a unary or binary op computes, in two lines: its call with attributes and defaults,
    OneFlow name, aliases and dtypes, then its doc. op: a UnaryOp, a BinaryOp, or a name ep.ops.unary
    or ep.ops.binary takes ("leaky_relu", "arccos", "less")."""
    if not isinstance(op, (UnaryOp, BinaryOp)):
        try:
            op = as_unary_op(op)
        except ValueError:
            try:
                op = as_binary_op(op)
            except ValueError:
                names = [name for enum in (UnaryOp, BinaryOp) for name in [m.value for m in enum] + [a for a, _ in enum.aliases()]]
                hint = did_you_mean(op, names) or "expected a name such as 'relu' or 'add'"
                raise ValueError(f"op: {op!r} is neither a unary nor a binary op; {hint}") from None
    if isinstance(op, UnaryOp):
        return describe_record(UNARY_FUNCTORS[op], "x")
    return describe_record(BINARY_FUNCTORS[op], "a, b")
