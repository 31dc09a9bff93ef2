"""What one op's record holds, and how the op tables are collected from the family modules."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Iterator

import numpy as np

from ep.common.jit import scalar_function
from ep.common.runtime.data_type import FLOATING_TYPES, INTEGER_TYPES, DataType
from ep.include.primitive.binary_op import BinaryOp

FLOAT = FLOATING_TYPES
NUMBERS = FLOATING_TYPES + INTEGER_TYPES
BITS = INTEGER_TYPES + (DataType.kBool,)

Attrs = tuple[tuple[str, float | None], ...]


@dataclass(frozen=True)
class _Record:
    """What every op's record says: the op, its formula, its source dtypes, its attributes, whether it gives bool.

    attrs names attr0 and attr1 in order, each with PyTorch's default (None: the caller must give it).
    """

    op: enum.Enum
    formula: Callable
    dtypes: tuple[DataType, ...]
    attrs: Attrs = ()
    to_bool: bool = False


@dataclass(frozen=True)
class BinaryFunctor(_Record):
    """One BroadcastElementwiseBinary op; int_formula, when given, replaces formula for the integer dtypes and bool."""

    int_formula: Callable | None = None

    def records(self) -> Iterator[BinaryFunctor]:
        """The records this one defines: itself."""
        yield self


@dataclass(frozen=True)
class UnaryFunctor(_Record):
    """One ElementwiseUnary op, with its float32 variant and its derivatives.

    float32_formula, where given, replaces formula when the compute dtype is float32 (float16 too):
    the same formula over ep.common.math.fast_math's vectorizable functions instead of libm's.
    The result has the source dtype, bool when to_bool, any dtype when converts (the store converts).
    backward holds the op's derivatives, the BinaryOp records made by derivative().
    """

    float32_formula: Callable | None = None
    converts: bool = False
    backward: tuple[BinaryFunctor, ...] = ()

    def formula_for(self, src_dtype: DataType) -> Callable:
        """The formula a kernel for src_dtype compiles."""
        if self.float32_formula is not None and src_dtype.compute_dtype == np.float32:
            return self.float32_formula
        return self.formula

    def records(self) -> Iterator[UnaryFunctor | BinaryFunctor]:
        """The records this one defines: itself and its derivatives."""
        yield self
        yield from self.backward


def derivative(op: BinaryOp, formula: Callable, *attrs: tuple[str, float | None]) -> BinaryFunctor:
    """The record of a unary op's derivative, OneFlow's ...BackwardWithDyX/DyY binary op.

    formula is f(dy, v, attr0, attr1) -> dy * f'(x), where v is the forward input x (...WithDyX)
    or its output y (...WithDyY), in the float compute dtype.
    """
    return BinaryFunctor(op, formula, FLOAT, attrs)


def of_x(fn: Callable) -> Callable:
    """The formula fn(x) of an op without attributes, from a one-argument math function."""

    @scalar_function
    def formula(x, attr0, attr1):
        return fn(x)

    return formula


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
