"""BinaryOp: the BroadcastElementwiseBinary ops, with OneFlow's names."""
from __future__ import annotations

from enum import nonmember

from ep.common.runtime.names import lookup
from ep.include.primitive.elementwise_op import ElementwiseOp


class BinaryOp(ElementwiseOp):
    """The ops of BroadcastElementwiseBinary, named as OneFlow names them (kAdd, kLessThan,
    kReluBackwardWithDyX); each value is the snake_case name ep.ops.binary takes ("less_than").
    Math, comparison, logical and bitwise ops, and the backward of unary ops (dy, x) -> dx."""

    # math
    kAdd = "add"
    kSub = "sub"
    kMul = "mul"
    kDiv = "div"
    kMax = "max"
    kMin = "min"
    kPow = "pow"
    kFmod = "fmod"
    kFloorDiv = "floor_div"
    kTruncDiv = "trunc_div"
    kFloorMod = "floor_mod"
    kFmax = "fmax"
    kFmin = "fmin"
    kCopysign = "copysign"
    kHeaviside = "heaviside"
    kLdexp = "ldexp"
    kNextAfter = "nextafter"
    kAtan2 = "atan2"
    kHypot = "hypot"
    kLogAddExp = "logaddexp"
    kLogAddExp2 = "logaddexp2"
    kXlogy = "xlogy"
    # integer
    kGcd = "gcd"
    kLcm = "lcm"
    kBitwiseLeftShift = "bitwise_left_shift"
    kBitwiseRightShift = "bitwise_right_shift"
    # comparison
    kEqual = "equal"
    kNotEqual = "not_equal"
    kLessThan = "less_than"
    kLessEqual = "less_equal"
    kGreaterThan = "greater_than"
    kGreaterEqual = "greater_equal"
    kIsClose = "is_close"
    kIsCloseEqualNan = "is_close_equal_nan"
    # logical and bitwise
    kLogicalAnd = "logical_and"
    kLogicalOr = "logical_or"
    kLogicalXor = "logical_xor"
    kBitwiseAnd = "bitwise_and"
    kBitwiseOr = "bitwise_or"
    kBitwiseXor = "bitwise_xor"
    # backward of the activations (src0 = dy, src1 = x for ...WithDyX, y for ...WithDyY)
    kIdentityBackwardWithDyX = "identity_backward_with_dy_x"
    kEluBackwardWithDyX = "elu_backward_with_dy_x"
    kCeluBackwardWithDyY = "celu_backward_with_dy_y"
    kGeluBackwardWithDyX = "gelu_backward_with_dy_x"
    kHardswishBackwardWithDyX = "hardswish_backward_with_dy_x"
    kHardsigmoidBackwardWithDyX = "hardsigmoid_backward_with_dy_x"
    kHardshrinkBackwardWithDyY = "hardshrink_backward_with_dy_y"
    kHardtanhBackwardWithDyY = "hardtanh_backward_with_dy_y"
    kLeakyReluBackwardWithDyX = "leaky_relu_backward_with_dy_x"
    kMishBackwardWithDyX = "mish_backward_with_dy_x"
    kReluBackwardWithDyY = "relu_backward_with_dy_y"
    kReluBackwardWithDyX = "relu_backward_with_dy_x"
    kSeluBackwardWithDyX = "selu_backward_with_dy_x"
    kSiluBackwardWithDyX = "silu_backward_with_dy_x"
    kSoftsignBackwardWithDyX = "softsign_backward_with_dy_x"
    kSoftplusBackwardWithDyX = "softplus_backward_with_dy_x"
    kSoftshrinkBackwardWithDyY = "softshrink_backward_with_dy_y"
    kTanhBackwardWithDyY = "tanh_backward_with_dy_y"
    kTanhBackwardWithDyX = "tanh_backward_with_dy_x"
    kThresholdBackwardWithDyX = "threshold_backward_with_dy_x"
    kSigmoidBackwardWithDyY = "sigmoid_backward_with_dy_y"
    kSigmoidBackwardWithDyX = "sigmoid_backward_with_dy_x"
    kSquareReLUBackwardWithDyX = "square_relu_backward_with_dy_x"
    kFastGeluBackwardWithDyX = "fast_gelu_backward_with_dy_x"
    kQuickGeluBackwardWithDyX = "quick_gelu_backward_with_dy_x"
    # backward of the float math ops (src0 = dy, src1 = x)
    kAbsBackwardWithDyX = "abs_backward_with_dy_x"
    kAcosBackwardWithDyX = "acos_backward_with_dy_x"
    kAcoshBackwardWithDyX = "acosh_backward_with_dy_x"
    kAsinBackwardWithDyX = "asin_backward_with_dy_x"
    kAsinhBackwardWithDyX = "asinh_backward_with_dy_x"
    kAtanBackwardWithDyX = "atan_backward_with_dy_x"
    kAtanhBackwardWithDyX = "atanh_backward_with_dy_x"
    kCosBackwardWithDyX = "cos_backward_with_dy_x"
    kCoshBackwardWithDyX = "cosh_backward_with_dy_x"
    kDigammaBackwardWithDyX = "digamma_backward_with_dy_x"
    kErfBackwardWithDyX = "erf_backward_with_dy_x"
    kErfcBackwardWithDyX = "erfc_backward_with_dy_x"
    kExpBackwardWithDyX = "exp_backward_with_dy_x"
    kExp2BackwardWithDyX = "exp2_backward_with_dy_x"
    kExpm1BackwardWithDyX = "expm1_backward_with_dy_x"
    kLgammaBackwardWithDyX = "lgamma_backward_with_dy_x"
    kLogBackwardWithDyX = "log_backward_with_dy_x"
    kLog2BackwardWithDyX = "log2_backward_with_dy_x"
    kLog10BackwardWithDyX = "log10_backward_with_dy_x"
    kLog1pBackwardWithDyX = "log1p_backward_with_dy_x"
    kLogSigmoidBackwardWithDyX = "log_sigmoid_backward_with_dy_x"
    kReciprocalBackwardWithDyX = "reciprocal_backward_with_dy_x"
    kReciprocalNoNanBackwardWithDyX = "reciprocal_no_nan_backward_with_dy_x"
    kRsqrtBackwardWithDyX = "rsqrt_backward_with_dy_x"
    kSinBackwardWithDyX = "sin_backward_with_dy_x"
    kSinhBackwardWithDyX = "sinh_backward_with_dy_x"
    kSqrtBackwardWithDyX = "sqrt_backward_with_dy_x"
    kSquareBackwardWithDyX = "square_backward_with_dy_x"
    kTanBackwardWithDyX = "tan_backward_with_dy_x"

    # NumPy's and PyTorch's names of the ops, each meaning its library's function
    # (ep/common/math/aliases.py says where that library's dtype rule differs from OneFlow's).
    _alias_names = nonmember((
        ("subtract", "kSub"),
        ("multiply", "kMul"),
        ("divide", "kDiv"),
        ("true_divide", "kDiv"),
        ("maximum", "kMax"),
        ("minimum", "kMin"),
        ("power", "kPow"),
        ("floor_divide", "kFloorDiv"),
        ("remainder", "kFloorMod"),
        ("mod", "kFloorMod"),
        ("eq", "kEqual"),
        ("ne", "kNotEqual"),
        ("less", "kLessThan"),
        ("lt", "kLessThan"),
        ("le", "kLessEqual"),
        ("greater", "kGreaterThan"),
        ("gt", "kGreaterThan"),
        ("ge", "kGreaterEqual"),
        ("isclose", "kIsClose"),
        ("arctan2", "kAtan2"),
        ("left_shift", "kBitwiseLeftShift"),
        ("right_shift", "kBitwiseRightShift"),
    ))


def as_binary_op(op: object, name: str = "op") -> BinaryOp:
    """A BinaryOp from a BinaryOp or its name ("add", "less_than", "kLessThan")."""
    return lookup(BinaryOp, op, name, "a binary op", "add")
