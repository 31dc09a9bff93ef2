"""The ElementwiseUnary table: each op's formula, the dtypes it has and its attributes.

The formulas live in unary_math (one scalar_function per op, compiled by both devices); this
module says which (op, dtype) combinations exist and turns attr0/attr1 into kernel arguments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ep.common.math import unary_math as m
from ep.common.runtime.data_type import ALL_TYPES, FLOATING_TYPES, INTEGER_TYPES, DataType, as_data_type
from ep.include.primitive.unary_op import UnaryOp, as_unary_op


@dataclass(frozen=True)
class UnaryFunctor:
    """One op: its formula, the source dtypes it has, its attributes, whether it gives bool.

    attrs names attr0 and attr1 in order, each with PyTorch's default (None: the caller must give it).
    float32_formula, where given, replaces formula when the compute dtype is float32 (float16 too):
    the same formula over ep.common.math.fast_math's vectorizable functions instead of libm's.
    """

    formula: Callable
    dtypes: tuple[DataType, ...]
    attrs: tuple[tuple[str, float | None], ...] = ()
    to_bool: bool = False
    float32_formula: Callable | None = None

    def formula_for(self, src_dtype: DataType) -> Callable:
        """The formula a kernel for src_dtype compiles."""
        if self.float32_formula is not None and src_dtype.compute_dtype == np.float32:
            return self.float32_formula
        return self.formula


_FLOAT = FLOATING_TYPES
_NUMBERS = FLOATING_TYPES + INTEGER_TYPES
_BITS = INTEGER_TYPES + (DataType.kBool,)


def _float(formula: Callable, *attrs: tuple[str, float | None], float32: Callable | None = None) -> UnaryFunctor:
    return UnaryFunctor(formula, _FLOAT, attrs, float32_formula=float32)


UNARY_FUNCTORS: dict[UnaryOp, UnaryFunctor] = {
    # activations
    UnaryOp.kIdentity: UnaryFunctor(m.identity, ALL_TYPES),
    UnaryOp.kRelu: UnaryFunctor(m.relu, ALL_TYPES),
    UnaryOp.kElu: _float(m.elu, ("alpha", 1.0), float32=m.elu_float32),
    UnaryOp.kCelu: _float(m.celu, ("alpha", 1.0), float32=m.celu_float32),
    UnaryOp.kGelu: _float(m.gelu, float32=m.gelu_float32),
    UnaryOp.kFastGelu: _float(m.fast_gelu, float32=m.fast_gelu_float32),
    UnaryOp.kQuickGelu: _float(m.quick_gelu, float32=m.quick_gelu_float32),
    UnaryOp.kHardSwish: _float(m.hard_swish),
    UnaryOp.kHardSigmoid: _float(m.hard_sigmoid),
    UnaryOp.kHardShrink: _float(m.hard_shrink, ("lambd", 0.5)),
    UnaryOp.kHardTanh: _float(m.hard_tanh, ("min_val", -1.0), ("max_val", 1.0)),
    UnaryOp.kLeakyRelu: _float(m.leaky_relu, ("alpha", 0.01)),
    UnaryOp.kMish: _float(m.mish, float32=m.mish_float32),
    UnaryOp.kSelu: _float(m.selu, float32=m.selu_float32),
    UnaryOp.kSilu: _float(m.silu, float32=m.silu_float32),
    UnaryOp.kSoftShrink: _float(m.soft_shrink, ("alpha", 0.5)),
    UnaryOp.kSoftSign: _float(m.soft_sign),
    UnaryOp.kSoftPlus: _float(m.soft_plus, ("beta", 1.0), ("threshold", 20.0)),
    UnaryOp.kTanh: _float(m.tanh, float32=m.tanh_float32),
    UnaryOp.kThreshold: _float(m.threshold, ("threshold", None), ("value", None)),
    UnaryOp.kSquareReLU: _float(m.square_relu),
    # math
    UnaryOp.kAbs: UnaryFunctor(m.abs_, _NUMBERS),
    UnaryOp.kAcos: _float(m.acos),
    UnaryOp.kAcosh: _float(m.acosh),
    UnaryOp.kAsin: _float(m.asin),
    UnaryOp.kAsinh: _float(m.asinh),
    UnaryOp.kAtan: _float(m.atan),
    UnaryOp.kAtanh: _float(m.atanh),
    UnaryOp.kCeil: _float(m.ceil),
    UnaryOp.kCos: _float(m.cos),
    UnaryOp.kCosh: _float(m.cosh),
    UnaryOp.kDigamma: _float(m.digamma),
    UnaryOp.kTrigamma: _float(m.trigamma),
    UnaryOp.kErf: _float(m.erf, float32=m.erf_float32),
    UnaryOp.kErfc: _float(m.erfc, float32=m.erfc_float32),
    UnaryOp.kExp: _float(m.exp, float32=m.exp_float32),
    UnaryOp.kExp2: _float(m.exp2),
    UnaryOp.kExpm1: _float(m.expm1, float32=m.expm1_float32),
    UnaryOp.kFloor: _float(m.floor),
    UnaryOp.kLgamma: _float(m.lgamma),
    UnaryOp.kLog: _float(m.log, float32=m.log_float32),
    UnaryOp.kLog2: _float(m.log2),
    UnaryOp.kLog10: _float(m.log10),
    UnaryOp.kLog1p: _float(m.log1p),
    UnaryOp.kLogSigmoid: _float(m.log_sigmoid),
    UnaryOp.kNegative: UnaryFunctor(m.negative, _NUMBERS),
    UnaryOp.kReciprocal: _float(m.reciprocal),
    UnaryOp.kReciprocalNoNan: _float(m.reciprocal_no_nan),
    UnaryOp.kRint: _float(m.rint),
    UnaryOp.kRound: _float(m.round_),
    UnaryOp.kRsqrt: _float(m.rsqrt),
    UnaryOp.kSigmoid: _float(m.sigmoid, float32=m.sigmoid_float32),
    UnaryOp.kSign: UnaryFunctor(m.sign, _NUMBERS),
    UnaryOp.kSin: _float(m.sin),
    UnaryOp.kSinh: _float(m.sinh),
    UnaryOp.kSqrt: _float(m.sqrt),
    UnaryOp.kSquare: UnaryFunctor(m.square, _NUMBERS),
    UnaryOp.kTan: _float(m.tan),
    UnaryOp.kTrunc: _float(m.trunc),
    # predicates and logic
    UnaryOp.kNotEqualZero: UnaryFunctor(m.not_equal_zero, ALL_TYPES),
    UnaryOp.kLogicalNot: UnaryFunctor(m.logical_not, ALL_TYPES, to_bool=True),
    UnaryOp.kIsInf: UnaryFunctor(m.is_inf, ALL_TYPES, to_bool=True),
    UnaryOp.kIsNan: UnaryFunctor(m.is_nan, ALL_TYPES, to_bool=True),
    UnaryOp.kIsFinite: UnaryFunctor(m.is_finite, ALL_TYPES, to_bool=True),
    UnaryOp.kBitwiseNot: UnaryFunctor(m.bitwise_not, _BITS),
    # conversion: the store converts; kernels pick the destination dtype
    UnaryOp.kCast: UnaryFunctor(m.identity, ALL_TYPES),
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
        values.append(value)
    values += [0] * (2 - len(values))
    return scalar(values[0]), scalar(values[1])


def unary_attrs(op: UnaryOp, src_dtype: DataType, attr0: object, attr1: object) -> tuple[object, object]:
    """attr0 and attr1 with PyTorch's defaults filled in, as scalars of the compute dtype."""
    return fill_attrs(op, UNARY_FUNCTORS[op].attrs, attr0, attr1, src_dtype.compute_dtype.type)


def resolve_unary(op: object, src_dtype: object, dst_dtype: object, attr0: object, attr1: object):
    """(op, src, dst, attrs) normalized for a factory's New, or None for an unsupported combination."""
    op = as_unary_op(op)
    src_dtype = as_data_type(src_dtype, "src_dtype")
    dst_dtype = as_data_type(dst_dtype, "dst_dtype")
    if dst_dtype not in unary_dst_dtypes(op, src_dtype):
        return None
    return op, src_dtype, dst_dtype, unary_attrs(op, src_dtype, attr0, attr1)
