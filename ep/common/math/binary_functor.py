"""The BroadcastElementwiseBinary table, collected from the op records, and what New and the kernels need from it.

Each op's record (formula, integer formula, dtypes, attributes) lives in its family module under
ep.common.math.ops, a derivative in its unary op's record; this module says which (op, dtype)
combinations exist and turns attr0/attr1 into kernel arguments. Both devices and `python -m ep list` read it.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ep.common.math.aliases import alias_dtype, checks_negative_powers
from ep.common.math.ops import FAMILIES
from ep.common.math.ops.record import BinaryFunctor, collect
from ep.common.math.unary_functor import fill_attrs, keyword_attrs
from ep.common.runtime.data_type import DataType, as_data_type
from ep.include.primitive.binary_op import BinaryOp, as_binary_op

# The forward binary ops' records and the derivatives the unary ops' records define.
BINARY_FUNCTORS: dict[BinaryOp, BinaryFunctor] = collect(BinaryFunctor, BinaryOp, FAMILIES)


def binary_formula(op: BinaryOp, src_dtype: DataType) -> Callable:
    """The scalar formula the kernels compile for op on src_dtype."""
    return BINARY_FUNCTORS[op].formula_for(src_dtype)


def binary_attr_dtype(src_dtype: DataType) -> np.dtype:
    """The dtype attr0/attr1 reach the kernel in: the float compute dtype, float64 for integer operands."""
    return src_dtype.compute_dtype if src_dtype.is_floating else np.dtype(np.float64)


def binary_dst_dtype(op: BinaryOp, src_dtype: DataType) -> DataType | None:
    """The destination dtype op gives for src_dtype, or None when op does not support src_dtype."""
    functor = BINARY_FUNCTORS.get(op)
    if functor is None or src_dtype not in functor.dtypes:
        return None
    return DataType.kBool if functor.to_bool else src_dtype


def binary_combinations() -> Iterator[tuple[BinaryOp, DataType, DataType]]:
    """Every implemented (op, src_dtype, dst_dtype)."""
    for op, functor in BINARY_FUNCTORS.items():
        for src_dtype in functor.dtypes:
            yield op, src_dtype, binary_dst_dtype(op, src_dtype)


def binary_attrs(op: BinaryOp, src_dtype: DataType, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 with their defaults filled in, as scalars of binary_attr_dtype(src_dtype)."""
    return fill_attrs(op, BINARY_FUNCTORS[op].attrs, attr0, attr1, binary_attr_dtype(src_dtype).type)


def binary_keyword_attrs(op: object, keywords: dict, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 of op with its attributes given by name (ep.ops.binary's keywords) put in place."""
    op = as_binary_op(op)
    return keyword_attrs(op, BINARY_FUNCTORS[op].attrs, keywords, attr0, attr1)


def binary_source(name: object, op: BinaryOp, dtype: DataType) -> DataType | None:
    """The dtype that name, op's name as given, computes dtype operands in (None where its
    library refuses them): aliases.alias_dtype over op's record."""
    return alias_dtype(name, dtype, BINARY_FUNCTORS[op].ints_to_float)


def resolve_binary(op: object, src_dtype: object, dst_dtype: object, attr0: object, attr1: object):
    """(op, src, dst, attrs) normalized for a factory's New, or None for an unsupported combination
    (a NumPy or PyTorch alias on a dtype its library computes otherwise included)."""
    name, op = op, as_binary_op(op)
    src_dtype = as_data_type(src_dtype, "src_dtype")
    dst_dtype = as_data_type(dst_dtype, "dst_dtype")
    if binary_dst_dtype(op, src_dtype) is not dst_dtype or binary_source(name, op, src_dtype) is not src_dtype:
        return None
    if checks_negative_powers(name, src_dtype):
        return None  # a Launch cannot raise NumPy's error for a negative exponent
    return op, src_dtype, dst_dtype, binary_attrs(op, src_dtype, attr0, attr1)
