"""The ElementwiseUnary ops: one scalar formula each, and the table of what each op supports.

A formula is a scalar_function f(x, attr0, attr1) in the compute dtype (float16 is computed in
float32); ops without attributes ignore them. Both devices compile these same formulas.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ep.common.data_type import ALL_TYPES, FLOATING_TYPES, INTEGER_TYPES, DataType, as_data_type
from ep.common.jit import scalar_function
from ep.include.primitive.unary_op import UnaryOp, as_unary_op


@scalar_function
def identity(x, attr0, attr1):
    return x


@scalar_function
def relu(x, attr0, attr1):
    return x if x > 0 else x - x


@scalar_function
def leaky_relu(x, alpha, attr1):
    return x if x > 0 else x * alpha


@scalar_function
def exp(x, attr0, attr1):
    return math.exp(x)


@scalar_function
def tanh(x, attr0, attr1):
    return math.tanh(x)


@scalar_function
def sigmoid(x, attr0, attr1):
    return 1.0 / (1.0 + math.exp(-x))


@scalar_function
def negative(x, attr0, attr1):
    return -x


@scalar_function
def abs_(x, attr0, attr1):
    return abs(x)


@scalar_function
def logical_not(x, attr0, attr1):
    return x == 0


@scalar_function
def is_nan(x, attr0, attr1):
    return x != x


@dataclass(frozen=True)
class UnaryFunctor:
    """One op: its formula, the source dtypes it has, PyTorch's attribute defaults, its result dtype."""

    formula: Callable
    dtypes: tuple[DataType, ...]
    defaults: tuple[float, ...] = ()
    to_bool: bool = False


_FLOAT = FLOATING_TYPES
_SIGNED_MATH = FLOATING_TYPES + INTEGER_TYPES

UNARY_FUNCTORS: dict[UnaryOp, UnaryFunctor] = {
    UnaryOp.kIdentity: UnaryFunctor(identity, ALL_TYPES),
    UnaryOp.kRelu: UnaryFunctor(relu, ALL_TYPES),
    UnaryOp.kLeakyRelu: UnaryFunctor(leaky_relu, _FLOAT, defaults=(0.01,)),
    UnaryOp.kExp: UnaryFunctor(exp, _FLOAT),
    UnaryOp.kTanh: UnaryFunctor(tanh, _FLOAT),
    UnaryOp.kSigmoid: UnaryFunctor(sigmoid, _FLOAT),
    UnaryOp.kNegative: UnaryFunctor(negative, _SIGNED_MATH),
    UnaryOp.kAbs: UnaryFunctor(abs_, _SIGNED_MATH),
    UnaryOp.kLogicalNot: UnaryFunctor(logical_not, ALL_TYPES, to_bool=True),
    UnaryOp.kIsNan: UnaryFunctor(is_nan, ALL_TYPES, to_bool=True),
    UnaryOp.kCast: UnaryFunctor(identity, ALL_TYPES),
}


def unary_dst_dtypes(op: UnaryOp, src_dtype: DataType) -> tuple[DataType, ...]:
    """The destination dtypes op has for src_dtype (none when unsupported)."""
    functor = UNARY_FUNCTORS.get(op)
    if functor is None or src_dtype not in functor.dtypes:
        return ()
    if op is UnaryOp.kCast:
        return ALL_TYPES
    return (DataType.kBool,) if functor.to_bool else (src_dtype,)


def unary_combinations() -> Iterator[tuple[UnaryOp, DataType, DataType]]:
    """Every implemented (op, src_dtype, dst_dtype)."""
    for op, functor in UNARY_FUNCTORS.items():
        for src in functor.dtypes:
            for dst in unary_dst_dtypes(op, src):
                yield op, src, dst


def unary_attrs(op: UnaryOp, src_dtype: DataType, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 with PyTorch's defaults filled in, as scalars of the compute dtype.

    Raises ValueError for an attribute given to an op that does not take it.
    """
    defaults = UNARY_FUNCTORS[op].defaults
    given = (attr0, attr1)
    for position, value in enumerate(given):
        if value is not None and position >= len(defaults):
            takes = f"takes {len(defaults)} attribute(s)" if defaults else "takes no attributes"
            raise ValueError(f"attr{position}: {op.name} {takes}; got {value!r}")
    scalar = src_dtype.compute_dtype.type
    values = [defaults[i] if given[i] is None else given[i] for i in range(len(defaults))]
    for position, value in enumerate(values):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise TypeError(f"attr{position}: {value!r} is not a number")
    values += [0] * (2 - len(values))
    return scalar(values[0]), scalar(values[1])


def resolve_unary(op: object, src_dtype: object, dst_dtype: object, attr0: object, attr1: object):
    """(op, src, dst, attrs) normalized for a factory's New, or None for an unsupported combination."""
    op = as_unary_op(op)
    src_dtype = as_data_type(src_dtype, "src_dtype")
    dst_dtype = as_data_type(dst_dtype, "dst_dtype")
    if dst_dtype not in unary_dst_dtypes(op, src_dtype):
        return None
    return op, src_dtype, dst_dtype, unary_attrs(op, src_dtype, attr0, attr1)
