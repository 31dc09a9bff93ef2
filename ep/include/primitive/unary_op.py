"""UnaryOp: the ElementwiseUnary ops, with OneFlow's names; the value is the op's snake_case name."""
from __future__ import annotations

from enum import nonmember

from ep.common.runtime.names import lookup
from ep.include.primitive.elementwise_op import ElementwiseOp


class UnaryOp(ElementwiseOp):
    """The ops of ElementwiseUnary, named as OneFlow names them (kRelu); each value is the
    snake_case name ep.ops.unary takes ("relu"). An op's formula, dtypes and attributes
    (attr0, attr1 with PyTorch's defaults) are its record in ep/common/math/ops."""

    # activations
    kIdentity = "identity"
    kRelu = "relu"
    kElu = "elu"
    kCelu = "celu"
    kGelu = "gelu"
    kFastGelu = "fast_gelu"
    kQuickGelu = "quick_gelu"
    kHardSwish = "hard_swish"
    kHardSigmoid = "hard_sigmoid"
    kHardShrink = "hard_shrink"
    kHardTanh = "hard_tanh"
    kLeakyRelu = "leaky_relu"
    kMish = "mish"
    kSelu = "selu"
    kSilu = "silu"
    kSoftShrink = "soft_shrink"
    kSoftSign = "soft_sign"
    kSoftPlus = "soft_plus"
    kTanh = "tanh"
    kThreshold = "threshold"
    kSquareReLU = "square_relu"
    # math
    kAbs = "abs"
    kAcos = "acos"
    kAcosh = "acosh"
    kAsin = "asin"
    kAsinh = "asinh"
    kAtan = "atan"
    kAtanh = "atanh"
    kCeil = "ceil"
    kCos = "cos"
    kCosh = "cosh"
    kDeg2Rad = "deg2rad"
    kDigamma = "digamma"
    kTrigamma = "trigamma"
    kErf = "erf"
    kErfc = "erfc"
    kErfInv = "erfinv"
    kExp = "exp"
    kExp2 = "exp2"
    kExpm1 = "expm1"
    kFloor = "floor"
    kFrac = "frac"
    kLgamma = "lgamma"
    kLog = "log"
    kLog2 = "log2"
    kLog10 = "log10"
    kLog1p = "log1p"
    kLogit = "logit"
    kLogSigmoid = "log_sigmoid"
    kNegative = "negative"
    kRad2Deg = "rad2deg"
    kReciprocal = "reciprocal"
    kReciprocalNoNan = "reciprocal_no_nan"
    kRint = "rint"
    kRound = "round"
    kRsqrt = "rsqrt"
    kSigmoid = "sigmoid"
    kSign = "sign"
    kSin = "sin"
    kSinc = "sinc"
    kSinh = "sinh"
    kSqrt = "sqrt"
    kSquare = "square"
    kTan = "tan"
    kTrunc = "trunc"
    # predicates and logic
    kNotEqualZero = "not_equal_zero"
    kLogicalNot = "logical_not"
    kIsInf = "is_inf"
    kIsNan = "is_nan"
    kIsFinite = "is_finite"
    kSignbit = "signbit"
    kBitwiseNot = "bitwise_not"
    # conversion
    kCast = "cast"

    # NumPy's and PyTorch's names of the ops, each meaning its library's function
    # (ep/common/math/aliases.py says where that library's dtype rule differs from OneFlow's).
    _alias_names = nonmember((
        ("positive", "kIdentity"),
        ("hardswish", "kHardSwish"),
        ("hardsigmoid", "kHardSigmoid"),
        ("hardshrink", "kHardShrink"),
        ("hardtanh", "kHardTanh"),
        ("softshrink", "kSoftShrink"),
        ("softsign", "kSoftSign"),
        ("softplus", "kSoftPlus"),
        ("absolute", "kAbs"),
        ("arccos", "kAcos"),
        ("arccosh", "kAcosh"),
        ("arcsin", "kAsin"),
        ("arcsinh", "kAsinh"),
        ("arctan", "kAtan"),
        ("arctanh", "kAtanh"),
        ("psi", "kDigamma"),
        ("gammaln", "kLgamma"),
        ("logsigmoid", "kLogSigmoid"),
        ("neg", "kNegative"),
        ("expit", "kSigmoid"),
        ("fix", "kTrunc"),
        ("isinf", "kIsInf"),
        ("isnan", "kIsNan"),
        ("isfinite", "kIsFinite"),
        ("invert", "kBitwiseNot"),
        ("radians", "kDeg2Rad"),
        ("degrees", "kRad2Deg"),
    ))


def as_unary_op(op: object, name: str = "op") -> UnaryOp:
    """A UnaryOp from a UnaryOp or its name ("relu", "leaky_relu", "kLeakyRelu")."""
    return lookup(UnaryOp, op, name, "a unary op", "relu")
