"""describe: what an elementwise op computes, read from its record."""
from __future__ import annotations

from ep.common.math.aliases import alias_note
from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.ops.record import describe as describe_record
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.common.runtime.names import did_you_mean
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.unary_op import UnaryOp, as_unary_op


def describe(op: UnaryOp | BinaryOp | str) -> str:
    """What a unary or binary op computes, in two lines: its call with attributes and defaults,
    OneFlow name, aliases and dtypes, then its doc; for a name whose library computes otherwise
    than OneFlow's op, a third line says how. op: a UnaryOp, a BinaryOp, or a name ep.ops.unary or
    ep.ops.binary takes ("leaky_relu", "arccos", "less")."""
    name = op
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
    record = UNARY_FUNCTORS[op] if isinstance(op, UnaryOp) else BINARY_FUNCTORS[op]
    text = describe_record(record, "x" if isinstance(op, UnaryOp) else "a, b")
    note = alias_note(name, record.ints_to_float) if isinstance(name, str) and name not in type(op).__members__ else None
    return text if note is None else f"{text}\n    {note}"
