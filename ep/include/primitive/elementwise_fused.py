"""ElementwiseFused: several elementwise expressions over broadcast arguments in one kernel.

An expression is a small, hashable tree of the nodes below: its leaves are the launch's arguments
(Input: an array, Scalar: a value), its inner nodes the ElementwiseUnary and BroadcastElementwiseBinary
ops (with their attributes), casts and selects. The kernel reads each input element once and writes
each output once; every node computes exactly what the unfused primitive of its op computes
(its formula, its dtype rules, float16 rounded after each op).
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Sequence, Union

from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.primitive import Factory, Primitive
from ep.include.primitive.unary_op import UnaryOp


@dataclass(frozen=True)
class Input:
    """Argument `index` of a launch, an array (broadcast to the output's dims)."""

    index: int


@dataclass(frozen=True)
class Scalar:
    """Argument `index` of a launch, a scalar value (one for every element)."""

    index: int


@dataclass(frozen=True)
class Unary:
    """ElementwiseUnary's op on x, computed in x's dtype (kCast: see Cast)."""

    op: UnaryOp
    x: Node
    attr0: float | None = None
    attr1: float | None = None


@dataclass(frozen=True)
class Binary:
    """BroadcastElementwiseBinary's op on a and b, which must have one dtype (cast one first)."""

    op: BinaryOp
    a: Node
    b: Node
    attr0: float | None = None
    attr1: float | None = None


@dataclass(frozen=True)
class Cast:
    """x converted to dtype (a DataType or anything as_data_type takes), as the Cast primitive converts."""

    x: Node
    dtype: object


@dataclass(frozen=True)
class Where:
    """x where condition (bool) is true, else y; x and y of one dtype."""

    condition: Node
    x: Node
    y: Node


Node = Union[Input, Scalar, Unary, Binary, Cast, Where]
NODE_TYPES = (Input, Scalar, Unary, Binary, Cast, Where)


class ElementwiseFused(Primitive):
    @abc.abstractmethod
    def Launch(self, stream, args: Sequence[object], arg_dims: Sequence[Sequence[int]], dsts: Sequence[object]) -> None:
        """Write each output of the expression to dsts (in order) over the NumPy broadcast of the
        array arguments' dims: args[i] is argument i (flat C-contiguous storage of arg_dims[i] for
        an Input, a real number for a Scalar, whose arg_dims[i] is ()); every dst is flat
        C-contiguous storage of the broadcast dims."""


class ElementwiseFusedFactory(Factory):
    @abc.abstractmethod
    def New(self, expression, *dtypes) -> ElementwiseFused | None:
        """An ElementwiseFused computing expression (a node, or a tuple of nodes: its outputs) over
        arguments of dtypes (one per argument index the leaves name), or None where an op does not
        support its operands' dtype; TypeError for a malformed expression."""
