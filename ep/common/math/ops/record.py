"""What one op's record holds, and how the op tables are collected from the family modules."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable, Iterable, Iterator

import numpy as np

from ep.common.jit import scalar_function
from ep.common.math import fast_math, libm
from ep.common.math.special import as_type
from ep.common.runtime.data_type import ALL_TYPES, FLOATING_TYPES, INTEGER_TYPES, DataType
from ep.include.primitive.binary_op import BinaryOp

FLOAT = FLOATING_TYPES
NUMBERS = FLOATING_TYPES + INTEGER_TYPES
BITS = INTEGER_TYPES + (DataType.kBool,)

Attrs = tuple[tuple[str, float | None], ...]


@dataclass(frozen=True)
class _Record:
    """What every op's record says: the op, its formula, its source dtypes, its attributes, whether it gives bool.

    attrs names attr0 and attr1 in order with PyTorch's parameter names, which ep.ops also takes as
    keywords, each with PyTorch's default (None: the caller must give it); attrs_rule, where given,
    refuses values the op has no result for: attrs_rule(attr0, attr1) is the ValueError's message
    or None (PyTorch's: celu's alpha 0, hardtanh's min_val above max_val). doc says in one line what
    the op computes; aliases (NumPy's and PyTorch's names for the same function, which the enum's
    name lookup accepts) are the enum's. ints_to_float: PyTorch's function of the op's name takes
    integer and bool inputs, computing them in float32 (torch.exp of int32), and so does ep.ops by
    that name (aliases.alias_dtype; OneFlow's name, kExp, refuses them). float32_formula, where
    given, replaces formula when the compute dtype is float32 (float16 too): the same formula over
    ep.common.math.fast_math's vectorizable functions instead of libm's; int_formula, where given,
    replaces formula for the integer dtypes and bool.
    """

    op: enum.Enum
    formula: Callable
    dtypes: tuple[DataType, ...]
    attrs: Attrs = ()
    to_bool: bool = False
    doc: str = ""
    attrs_rule: Callable | None = None
    ints_to_float: bool = False
    float32_formula: Callable | None = None
    int_formula: Callable | None = None

    @property
    def aliases(self) -> tuple[str, ...]:
        """The op's aliases, from its enum's table."""
        return tuple(alias for alias, op in type(self.op).aliases() if op is self.op)

    def formula_for(self, src_dtype: DataType) -> Callable:
        """The formula a kernel for src_dtype compiles."""
        if self.int_formula is not None and not src_dtype.is_floating:
            return self.int_formula
        if self.float32_formula is not None and src_dtype.compute_dtype == np.float32:
            return self.float32_formula
        return self.formula


@dataclass(frozen=True)
class BinaryFunctor(_Record):
    """One BroadcastElementwiseBinary op.

    commutative: formula(a, b) == formula(b, a) for every a and b (a NaN's payload aside), so that a
    broadcast operand on the left runs the kernels built for it on the right. divides_integers: the
    integer formula divides in 64 bits (a division routine per lane on CUDA, which the PTX check
    allows such kernels and which narrows their packs).
    """

    commutative: bool = False
    divides_integers: bool = False

    def records(self) -> Iterator[BinaryFunctor]:
        """The records this one defines: itself."""
        yield self


@dataclass(frozen=True)
class UnaryFunctor(_Record):
    """One ElementwiseUnary op, with its derivatives.

    The result has the source dtype, bool when to_bool, any dtype when converts (the store converts).
    with_dy_x and with_dy_y, where given, are the formulas of the op's derivatives given x or y
    (see derivative()); they take the first backward_attrs of the op's attributes (all by default).
    backward holds their records, the BinaryOp ops backward_op() names.
    """

    converts: bool = False
    with_dy_x: Callable | None = None
    with_dy_y: Callable | None = None
    backward_attrs: int | None = None
    backward: tuple[BinaryFunctor, ...] = field(init=False)

    def __post_init__(self) -> None:
        attrs = self.attrs[: self.backward_attrs]
        given = (("y", self.with_dy_y), ("x", self.with_dy_x))
        backward = tuple(derivative(backward_op(self.op, v), f, *attrs) for v, f in given if f is not None)
        object.__setattr__(self, "backward", backward)

    def records(self) -> Iterator[UnaryFunctor | BinaryFunctor]:
        """The records this one defines: itself and its derivatives."""
        yield self
        yield from self.backward


# OneFlow spells a derivative op after its unary op, but for the case of some letters.
_BINARY_OPS_BY_LOWER_NAME = {op.name.lower(): op for op in BinaryOp}


def backward_op(op: enum.Enum, given: str) -> BinaryOp:
    """The derivative op of unary op given "x" or "y": OneFlow's k<Op>BackwardWithDy<X|Y>.

    Letter case aside, as OneFlow writes kHardswishBackwardWithDyX for kHardSwish. Raises
    ValueError when BinaryOp has no such op.
    """
    name = f"{op.name}BackwardWithDy{given.upper()}"
    found = _BINARY_OPS_BY_LOWER_NAME.get(name.lower())
    if found is None:
        raise ValueError(f"{op!r} has no derivative op given {given}: BinaryOp has no {name}")
    return found


def derivative(op: BinaryOp, formula: Callable, *attrs: tuple[str, float | None]) -> BinaryFunctor:
    """The record of a unary op's derivative, OneFlow's ...BackwardWithDyX/DyY binary op.

    formula is f(dy, v, attr0, attr1) -> dy * f'(x), where v is the forward input x (...WithDyX)
    or its output y (...WithDyY), in the float compute dtype.
    """
    forward, _, given = op.value.partition("_backward_with_dy_")
    input_ = f"y = {forward}(x)" if given == "y" else "x"
    return BinaryFunctor(op, formula, FLOAT, attrs, doc=f"dx = dy * {forward}'(x), from dy and {input_}")


def of_x(fn: Callable) -> Callable:
    """The formula fn(x) of an op without attributes, from a one-argument math function."""

    @scalar_function
    def formula(x, attr0, attr1):
        return fn(x)

    return formula


def of_x_in_type(fn: Callable) -> Callable:
    """The formula fn(x) cast back to x's type (integers wrap, as NumPy's) of an op without attributes."""

    @scalar_function
    def formula(x, attr0, attr1):
        return as_type(fn(x), x)

    return formula


def of_a_b(fn: Callable) -> Callable:
    """The formula fn(a, b) of a binary op without attributes (a comparison's operator.lt)."""

    @scalar_function
    def formula(a, b, attr0, attr1):
        return fn(a, b)

    return formula


def of_a_b_in_type(fn: Callable) -> Callable:
    """The formula fn(a, b) cast back to a's type (integers wrap, as NumPy's) of a binary op without attributes."""

    @scalar_function
    def formula(a, b, attr0, attr1):
        return as_type(fn(a, b), a)

    return formula


def float_variants(formula_over: Callable[[ModuleType], Callable]) -> tuple[Callable, Callable]:
    """An op's formula and its float32 variant: formula_over(m) over libm and over fast_math.

    formula_over builds the formula over a math module m (m.exp, m.sigmoid): libm's functions
    (ep.common.math.libm) for float64, fast_math's vectorizable ones for float32.
    """
    return formula_over(libm), formula_over(fast_math)


def of_x_variants(name: str) -> tuple[Callable, Callable]:
    """of_x of the math function name (exp, tanh, ...): the formula over libm's and its float32 variant."""
    return float_variants(lambda m: of_x(getattr(m, name)))


def dy_times(slope: Callable) -> Callable:
    """The derivative dy * slope(x) of an op whose slope is another op's formula (sin' = cos)."""

    @scalar_function
    def backward(dy, x, attr0, attr1):
        return dy * slope(x, attr0, attr1)

    return backward


def collect(kind: type, ops: type[enum.Enum], families: tuple[ModuleType, ...]) -> dict:
    """The records of type kind that the families' module-level records define, in ops' order.

    Raises ValueError when two records define the same op.
    """
    found = {}
    for module in families:
        for value in vars(module).values():
            if not isinstance(value, (UnaryFunctor, BinaryFunctor)):
                continue
            for record in value.records():
                if isinstance(record, kind) and found.setdefault(record.op, record) is not record:
                    raise ValueError(f"{record.op!r} has two records; the second is in {module.__name__}")
    return {op: found[op] for op in ops if op in found}


_DTYPE_GROUPS = ((ALL_TYPES, "all dtypes"), (NUMBERS, "numbers"), (FLOAT, "float"), (BITS, "integer, bool"))


def signature(record: _Record, operands: str) -> str:
    """The op as a call: its name, operands and attributes with their defaults ("elu(x, alpha=1.0)").

    A derivative's operands are dy and x or y, whatever operands says.
    """
    _, backward, given = record.op.value.partition("_backward_with_dy_")
    if backward:
        operands = f"dy, {given}"
    attrs = [name if default is None else f"{name}={default!r}" for name, default in record.attrs]
    return f"{record.op.value}({', '.join([operands, *attrs])})"


def describe(record: _Record, operands: str) -> str:
    """What the op is, in two lines: its signature, OneFlow name, aliases, dtypes, then its doc."""
    dtypes = next((text for group, text in _DTYPE_GROUPS if set(record.dtypes) == set(group)), None)
    if dtypes is None:
        dtypes = ", ".join(dtype.value for dtype in record.dtypes)
    if record.to_bool:
        dtypes += " -> bool"
    elif isinstance(record, UnaryFunctor) and record.converts:
        dtypes += " -> any dtype"
    also = f"; also {', '.join(record.aliases)}" if record.aliases else ""
    return f"{signature(record, operands)}  [{record.op.name}{also}; {dtypes}]\n    {record.doc}"


def ops_help(records: Iterable[_Record], operands: str) -> str:
    """The op list of a help text: describe() of each record, indented."""
    return "\n".join("    " + line for record in records for line in describe(record, operands).splitlines())


def document_ops(function: Callable, records: Iterable[_Record], operands: str) -> None:
    """Ends function's docstring with the op list of records, so that help() follows the records.

    Nothing under python -OO, which drops docstrings.
    """
    if function.__doc__:
        function.__doc__ += "\n" + ops_help(records, operands) + "\n"
