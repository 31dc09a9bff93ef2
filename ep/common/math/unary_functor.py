"""The ElementwiseUnary table, collected from the op records, and what New needs from it.

Each op's record (formula, dtypes, attributes, float32 variant, derivatives) lives in its family
module under ep.common.math.ops; this module says which (op, dtype) combinations exist and turns
attr0/attr1 into kernel arguments.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ep.common.math.aliases import alias_dtype, rounds_to_itself
from ep.common.math.ops import FAMILIES
from ep.common.math.ops.record import UnaryFunctor, collect
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.include.primitive.unary_op import UnaryOp, as_unary_op

UNARY_FUNCTORS: dict[UnaryOp, UnaryFunctor] = collect(UnaryFunctor, UnaryOp, FAMILIES)


def unary_dst_dtypes(op: UnaryOp, src_dtype: DataType) -> tuple[DataType, ...]:
    """The destination dtypes op has for src_dtype (none when unsupported)."""
    functor = UNARY_FUNCTORS.get(op)
    if functor is None or src_dtype not in functor.dtypes:
        return ()
    if functor.converts:
        return ALL_TYPES
    return (DataType.kBool,) if functor.to_bool else (src_dtype,)


def unary_result_dtype(op: UnaryOp, src_dtype: DataType, dtype: object = None) -> DataType:
    """The dtype op gives for src_dtype (dtype is kCast's destination); TypeError when unsupported."""
    choices = unary_dst_dtypes(op, src_dtype)
    if not choices:
        raise TypeError(f"op: {op.name} does not support dtype {src_dtype.value}")
    if op is UnaryOp.kCast:
        if dtype is None:
            raise TypeError("dtype: kCast needs a destination dtype")
        return as_data_type(dtype)
    if dtype is not None and as_data_type(dtype) is not choices[0]:
        raise TypeError(f"dtype: {op.name} of {src_dtype.value} gives {choices[0].value}; got dtype={dtype!r}")
    return choices[0]


def unary_combinations() -> Iterator[tuple[UnaryOp, DataType, DataType]]:
    """Every implemented (op, src_dtype, dst_dtype)."""
    for op, functor in UNARY_FUNCTORS.items():
        for src in functor.dtypes:
            for dst in unary_dst_dtypes(op, src):
                yield op, src, dst


def fill_attrs(op: object, attrs: tuple, attr0: object, attr1: object, scalar: type) -> tuple[object, object]:
    """attr0 and attr1 with the defaults of attrs ((name, default) pairs) filled in, as scalars.

    Raises ValueError for an attribute given to an op that does not take it, or one missing that
    has no default; TypeError for one that is not a number. Unary and binary ops share it.
    """
    given = (attr0, attr1)
    for position, value in enumerate(given):
        if value is not None and position >= len(attrs):
            names = ", ".join(name for name, _ in attrs)
            takes = f"takes {len(attrs)} attribute(s) ({names})" if attrs else "takes no attributes"
            raise ValueError(f"attr{position}: {op.name} {takes}; got {value!r}")
    values = []
    for position, (name, default) in enumerate(attrs):
        value = default if given[position] is None else given[position]
        if value is None:
            raise ValueError(f"attr{position}: {op.name} needs {name}, which has no default")
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, (bool, np.bool_)):
            raise TypeError(f"attr{position}: {name} of {op.name} must be a number; got {value!r}")
        try:
            values.append(scalar(value))
        except OverflowError:
            raise OverflowError(f"attr{position}: {name} of {op.name} is {value!r}, out of the range of {np.dtype(scalar).name}") from None
    values += [scalar(0)] * (2 - len(values))
    return values[0], values[1]


def keyword_attrs(op: object, attrs: tuple, keywords: dict, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 with the attributes given by keyword (the names in attrs, PyTorch's) put in place.

    Raises TypeError naming a keyword the op has no attribute of (listing those it has), or one
    given together with the positional attr0/attr1 it names. Unary and binary ops share it.
    """
    given = [attr0, attr1]
    names = [name for name, _ in attrs]
    for keyword, value in keywords.items():
        if keyword not in names:
            has = f"its attributes are {', '.join(names)}" if names else "it takes no attributes"
            raise TypeError(f"{keyword}: {op.name} has no attribute {keyword!r}; {has}")
        position = names.index(keyword)
        if given[position] is not None:
            raise TypeError(f"{keyword}: given twice, as attr{position}={given[position]!r} and {keyword}={value!r}")
        given[position] = value
    return given[0], given[1]


def unary_keyword_attrs(op: object, keywords: dict, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 of op with its attributes given by name (ep.ops.unary's keywords) put in place."""
    op = as_unary_op(op)
    return keyword_attrs(op, UNARY_FUNCTORS[op].attrs, keywords, attr0, attr1)


def unary_attrs(op: UnaryOp, src_dtype: DataType, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 with PyTorch's defaults filled in, as scalars of the compute dtype; ValueError
    for values the op has no result for (its record's attrs_rule)."""
    record = UNARY_FUNCTORS[op]
    attrs = fill_attrs(op, record.attrs, attr0, attr1, src_dtype.compute_dtype.type)
    message = None if record.attrs_rule is None else record.attrs_rule(*attrs)
    if message is not None:
        raise ValueError(f"attr0, attr1: {message} ({op.name})")
    return attrs


def unary_source(name: object, op: UnaryOp, dtype: DataType) -> tuple[UnaryOp, DataType | None]:
    """(the op that name, op's name as given, computes on dtype inputs; the dtype it computes them
    in, None where its library refuses them): aliases.alias_dtype over op's record; a rounding of
    what it leaves as it is (PyTorch's of integers, NumPy's fix) is the identity."""
    if rounds_to_itself(name, dtype):
        return UnaryOp.kIdentity, dtype
    record = UNARY_FUNCTORS.get(op)
    return op, alias_dtype(name, dtype, record is not None and record.ints_to_float)


def resolve_unary(op: object, src_dtype: object, dst_dtype: object, attr0: object, attr1: object):
    """(op, src, dst, attrs) normalized for a factory's New, or None for an unsupported combination
    (a NumPy or PyTorch alias on a dtype its library computes otherwise included)."""
    name, op = op, as_unary_op(op)
    src_dtype = as_data_type(src_dtype, "src_dtype")
    dst_dtype = as_data_type(dst_dtype, "dst_dtype")
    if dst_dtype not in unary_dst_dtypes(op, src_dtype) or unary_source(name, op, src_dtype) != (op, src_dtype):
        return None
    return op, src_dtype, dst_dtype, unary_attrs(op, src_dtype, attr0, attr1)
