"""The BroadcastElementwiseBinary table: each op's formula, its dtypes, its attributes, its result dtype.

The forward formulas live in binary_math and the derivatives in binary_backward; this module says
which (op, dtype) combinations exist and turns attr0/attr1 into kernel arguments. Both devices and
`python -m ep list` read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from ep.common.math import binary_backward as d
from ep.common.math import binary_math as m
from ep.common.runtime.data_type import ALL_TYPES, FLOATING_TYPES, INTEGER_TYPES, DataType, as_data_type
from ep.common.math.unary_functor import fill_attrs
from ep.include.primitive.binary_op import BinaryOp, as_binary_op


@dataclass(frozen=True)
class BinaryFunctor:
    """One op: its formula, the source dtypes it has, its attributes, whether it gives bool.

    int_formula, when given, replaces formula for the integer dtypes and bool. attrs names attr0
    and attr1 in order, each with PyTorch's default (None: the caller must give it).
    """

    formula: Callable
    dtypes: tuple[DataType, ...]
    attrs: tuple[tuple[str, float | None], ...] = ()
    to_bool: bool = False
    int_formula: Callable | None = None


_BITS = INTEGER_TYPES + (DataType.kBool,)


def _math(formula: Callable, int_formula: Callable | None = None) -> BinaryFunctor:
    return BinaryFunctor(formula, ALL_TYPES, int_formula=int_formula)


def _predicate(formula: Callable, *attrs: tuple[str, float | None]) -> BinaryFunctor:
    return BinaryFunctor(formula, ALL_TYPES, attrs, to_bool=True)


def _backward(formula: Callable, *attrs: tuple[str, float | None]) -> BinaryFunctor:
    return BinaryFunctor(formula, FLOATING_TYPES, attrs)


_IS_CLOSE_ATTRS = (("atol", 1e-8), ("rtol", 1e-5))

BINARY_FUNCTORS: dict[BinaryOp, BinaryFunctor] = {
    # math
    BinaryOp.kAdd: _math(m.add),
    BinaryOp.kSub: _math(m.sub),
    BinaryOp.kMul: _math(m.mul),
    BinaryOp.kDiv: _math(m.div, m.int_div),
    BinaryOp.kMax: _math(m.maximum),
    BinaryOp.kMin: _math(m.minimum),
    BinaryOp.kPow: _math(m.power, m.int_power),
    BinaryOp.kFmod: _math(m.float_fmod, m.int_fmod),
    BinaryOp.kFloorDiv: _math(m.floor_div, m.int_floor_div),
    BinaryOp.kTruncDiv: _math(m.trunc_div, m.int_div),
    BinaryOp.kFloorMod: _math(m.floor_mod, m.int_floor_mod),
    # comparison
    BinaryOp.kEqual: _predicate(m.equal),
    BinaryOp.kNotEqual: _predicate(m.not_equal),
    BinaryOp.kLessThan: _predicate(m.less_than),
    BinaryOp.kLessEqual: _predicate(m.less_equal),
    BinaryOp.kGreaterThan: _predicate(m.greater_than),
    BinaryOp.kGreaterEqual: _predicate(m.greater_equal),
    BinaryOp.kIsClose: _predicate(m.is_close, *_IS_CLOSE_ATTRS),
    BinaryOp.kIsCloseEqualNan: _predicate(m.is_close_equal_nan, *_IS_CLOSE_ATTRS),
    # logical and bitwise
    BinaryOp.kLogicalAnd: _predicate(m.logical_and),
    BinaryOp.kLogicalOr: _predicate(m.logical_or),
    BinaryOp.kLogicalXor: _predicate(m.logical_xor),
    BinaryOp.kBitwiseAnd: BinaryFunctor(m.bitwise_and, _BITS),
    BinaryOp.kBitwiseOr: BinaryFunctor(m.bitwise_or, _BITS),
    BinaryOp.kBitwiseXor: BinaryFunctor(m.bitwise_xor, _BITS),
    # backward of the activations
    BinaryOp.kIdentityBackwardWithDyX: _backward(d.identity_backward_with_dy_x),
    BinaryOp.kEluBackwardWithDyX: _backward(d.elu_backward_with_dy_x, ("alpha", 1.0)),
    BinaryOp.kCeluBackwardWithDyY: _backward(d.celu_backward_with_dy_y, ("alpha", 1.0)),
    BinaryOp.kGeluBackwardWithDyX: _backward(d.gelu_backward_with_dy_x),
    BinaryOp.kHardswishBackwardWithDyX: _backward(d.hardswish_backward_with_dy_x),
    BinaryOp.kHardsigmoidBackwardWithDyX: _backward(d.hardsigmoid_backward_with_dy_x),
    BinaryOp.kHardshrinkBackwardWithDyY: _backward(d.hardshrink_backward_with_dy_y),
    BinaryOp.kHardtanhBackwardWithDyY: _backward(d.hardtanh_backward_with_dy_y, ("min_val", -1.0), ("max_val", 1.0)),
    BinaryOp.kLeakyReluBackwardWithDyX: _backward(d.leaky_relu_backward_with_dy_x, ("alpha", 0.01)),
    BinaryOp.kMishBackwardWithDyX: _backward(d.mish_backward_with_dy_x),
    BinaryOp.kReluBackwardWithDyY: _backward(d.relu_backward_with_dy_y),
    BinaryOp.kReluBackwardWithDyX: _backward(d.relu_backward_with_dy_x),
    BinaryOp.kSeluBackwardWithDyX: _backward(d.selu_backward_with_dy_x),
    BinaryOp.kSiluBackwardWithDyX: _backward(d.silu_backward_with_dy_x),
    BinaryOp.kSoftsignBackwardWithDyX: _backward(d.softsign_backward_with_dy_x),
    BinaryOp.kSoftplusBackwardWithDyX: _backward(d.softplus_backward_with_dy_x, ("beta", 1.0), ("threshold", 20.0)),
    BinaryOp.kSoftshrinkBackwardWithDyY: _backward(d.softshrink_backward_with_dy_y),
    BinaryOp.kTanhBackwardWithDyY: _backward(d.tanh_backward_with_dy_y),
    BinaryOp.kTanhBackwardWithDyX: _backward(d.tanh_backward_with_dy_x),
    BinaryOp.kThresholdBackwardWithDyX: _backward(d.threshold_backward_with_dy_x, ("threshold", None)),
    BinaryOp.kSigmoidBackwardWithDyY: _backward(d.sigmoid_backward_with_dy_y),
    BinaryOp.kSigmoidBackwardWithDyX: _backward(d.sigmoid_backward_with_dy_x),
    BinaryOp.kSquareReLUBackwardWithDyX: _backward(d.square_relu_backward_with_dy_x),
    BinaryOp.kFastGeluBackwardWithDyX: _backward(d.fast_gelu_backward_with_dy_x),
    BinaryOp.kQuickGeluBackwardWithDyX: _backward(d.quick_gelu_backward_with_dy_x),
    # backward of the float math ops
    BinaryOp.kAbsBackwardWithDyX: _backward(d.abs_backward_with_dy_x),
    BinaryOp.kAcosBackwardWithDyX: _backward(d.acos_backward_with_dy_x),
    BinaryOp.kAcoshBackwardWithDyX: _backward(d.acosh_backward_with_dy_x),
    BinaryOp.kAsinBackwardWithDyX: _backward(d.asin_backward_with_dy_x),
    BinaryOp.kAsinhBackwardWithDyX: _backward(d.asinh_backward_with_dy_x),
    BinaryOp.kAtanBackwardWithDyX: _backward(d.atan_backward_with_dy_x),
    BinaryOp.kAtanhBackwardWithDyX: _backward(d.atanh_backward_with_dy_x),
    BinaryOp.kCosBackwardWithDyX: _backward(d.cos_backward_with_dy_x),
    BinaryOp.kCoshBackwardWithDyX: _backward(d.cosh_backward_with_dy_x),
    BinaryOp.kDigammaBackwardWithDyX: _backward(d.digamma_backward_with_dy_x),
    BinaryOp.kErfBackwardWithDyX: _backward(d.erf_backward_with_dy_x),
    BinaryOp.kErfcBackwardWithDyX: _backward(d.erfc_backward_with_dy_x),
    BinaryOp.kExpBackwardWithDyX: _backward(d.exp_backward_with_dy_x),
    BinaryOp.kExp2BackwardWithDyX: _backward(d.exp2_backward_with_dy_x),
    BinaryOp.kExpm1BackwardWithDyX: _backward(d.expm1_backward_with_dy_x),
    BinaryOp.kLgammaBackwardWithDyX: _backward(d.lgamma_backward_with_dy_x),
    BinaryOp.kLogBackwardWithDyX: _backward(d.log_backward_with_dy_x),
    BinaryOp.kLog2BackwardWithDyX: _backward(d.log2_backward_with_dy_x),
    BinaryOp.kLog10BackwardWithDyX: _backward(d.log10_backward_with_dy_x),
    BinaryOp.kLog1pBackwardWithDyX: _backward(d.log1p_backward_with_dy_x),
    BinaryOp.kLogSigmoidBackwardWithDyX: _backward(d.log_sigmoid_backward_with_dy_x),
    BinaryOp.kReciprocalBackwardWithDyX: _backward(d.reciprocal_backward_with_dy_x),
    BinaryOp.kReciprocalNoNanBackwardWithDyX: _backward(d.reciprocal_no_nan_backward_with_dy_x),
    BinaryOp.kRsqrtBackwardWithDyX: _backward(d.rsqrt_backward_with_dy_x),
    BinaryOp.kSinBackwardWithDyX: _backward(d.sin_backward_with_dy_x),
    BinaryOp.kSinhBackwardWithDyX: _backward(d.sinh_backward_with_dy_x),
    BinaryOp.kSqrtBackwardWithDyX: _backward(d.sqrt_backward_with_dy_x),
    BinaryOp.kSquareBackwardWithDyX: _backward(d.square_backward_with_dy_x),
    BinaryOp.kTanBackwardWithDyX: _backward(d.tan_backward_with_dy_x),
}


def binary_formula(op: BinaryOp, src_dtype: DataType) -> Callable:
    """The scalar formula the kernels compile for op on src_dtype."""
    functor = BINARY_FUNCTORS[op]
    if functor.int_formula is not None and not src_dtype.is_floating:
        return functor.int_formula
    return functor.formula


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


def resolve_binary(op: object, src_dtype: object, dst_dtype: object, attr0: object, attr1: object):
    """(op, src, dst, attrs) normalized for a factory's New, or None for an unsupported combination."""
    op = as_binary_op(op)
    src_dtype = as_data_type(src_dtype, "src_dtype")
    dst_dtype = as_data_type(dst_dtype, "dst_dtype")
    if binary_dst_dtype(op, src_dtype) is not dst_dtype:
        return None
    return op, src_dtype, dst_dtype, binary_attrs(op, src_dtype, attr0, attr1)
