"""ElementwiseUnary through NewPrimitive + Launch and through ep.ops.unary, against references computed here.

The dtype table and every reference are written out from the issue and PyTorch's definitions,
not read from ep, so a wrong table row or formula shows up as a failure.
"""
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import config

import ep
from ep.common.math.unary_functor import unary_combinations
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, BOOL, FLOATS, INTS, assert_same, sampled, kind

U = ep.UnaryOp
SIMULATOR = bool(config.ENABLE_CUDASIM)


def launch(device, op, x, dst_dtype=None, attr0=None, attr1=None):
    dst_dtype = np.dtype(dst_dtype or x.dtype)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, op, x.dtype, dst_dtype, attr0, attr1)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.zeros(x.shape, dst_dtype), device)
    primitive.Launch(stream, src, dst, x.size)
    stream.Sync()
    assert_same(to_numpy(src), x)
    return to_numpy(dst)


# The issue's dtype table.

_EXACT_ON_INTEGERS = (U.kIdentity, U.kRelu, U.kNegative, U.kAbs, U.kSign, U.kSquare)
_PREDICATES = (U.kLogicalNot, U.kIsInf, U.kIsNan, U.kIsFinite, U.kSignbit)
FLOAT_OPS = [op for op in U if op not in _EXACT_ON_INTEGERS + _PREDICATES + (U.kNotEqualZero, U.kBitwiseNot, U.kCast)]


def expected_combinations():
    """(op, src, dst) for every combination the issue asks for."""
    table = {(op, s, s) for op in FLOAT_OPS for s in FLOATS}
    table |= {(op, s, s) for op in _EXACT_ON_INTEGERS for s in FLOATS + INTS}
    # PyTorch's clamps of integers, and torch.sign of bool
    table |= {(op, s, s) for op in (U.kHardTanh, U.kThreshold) for s in INTS}
    table |= {(op, BOOL, BOOL) for op in (U.kIdentity, U.kRelu, U.kSign)}
    table |= {(op, s, BOOL) for op in _PREDICATES for s in ALL}
    table |= {(U.kNotEqualZero, s, s) for s in ALL}
    table |= {(U.kBitwiseNot, s, s) for s in INTS + (BOOL,)}
    table |= {(U.kCast, s, d) for s in ALL for d in ALL}
    return sorted(table, key=lambda c: (list(U).index(c[0]), ALL.index(c[1]), ALL.index(c[2])))


COMBINATIONS = expected_combinations()


def test_the_table_is_the_issues():
    got = {(op, s.dtype, d.dtype) for op, s, d in unary_combinations()}
    assert got == set(COMBINATIONS)


@pytest.mark.parametrize("op", list(U), ids=lambda op: op.name)
def test_every_other_combination_is_none_and_ops_unary_names_op_and_dtype(device, op):
    supported = set(COMBINATIONS)
    for src in ALL:
        for dst in ALL:
            if (op, src, dst) not in supported:
                assert ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, op, src, dst) is None, (src, dst)
        if not any((op, src, dst) in supported for dst in ALL):
            with pytest.raises(TypeError, match=f"{op.name} does not support dtype {src.name}"):
                ep.ops.unary(op, to_device(np.zeros(2, src), device))


# Accuracy: the issue's bounds, against an exact (float64 or better) reference.

BOUND = {np.dtype(np.float32): 2e-6, np.dtype(np.float64): 1e-12}


def assert_close(got, exact, dtype):
    """got (dtype) within the issue's bound of exact: 2e-6 (float32) or 1e-12 (float64) relative,
    absolute below 1; float16 within one float16 rounding of the float32 result."""
    exact = np.asarray(exact, np.float64)
    got = np.asarray(got).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = exact.astype(dtype).astype(np.float64)
        bound = BOUND.get(dtype, BOUND[np.dtype(np.float32)]) * np.maximum(1, np.abs(exact))
        if dtype.itemsize == 2:  # float16, bfloat16
            bound += np.spacing(np.abs(rounded).astype(dtype)).astype(np.float64)
        error = np.abs(got - exact)
    nan = np.isnan(exact)
    overflow = np.isinf(rounded) & ~nan
    ok = np.where(nan, np.isnan(got), np.where(overflow, got == rounded, error <= bound))
    if not ok.all():
        bad = np.flatnonzero(~ok)[:8]
        raise AssertionError(f"{dtype} off the bound at {bad}: got {got[bad]}, exact {exact[bad]}")


# References, from PyTorch's definitions.

def _elementwise(fn):
    def apply(x):
        return np.array([fn(float(v)) for v in np.ravel(x)], np.float64).reshape(np.shape(x))

    return apply


def _lgamma(v):
    if math.isfinite(v) and v <= 0 and v == math.floor(v):
        return math.inf  # a pole; math.lgamma raises there
    return math.lgamma(v)


_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510)]


def _polygamma(order, v):
    """digamma (order 0) or trigamma (order 1) to ~30 digits, by a method ep does not use:
    the recurrence up from any non-pole x to 40 in 40-digit decimals, then the asymptotic series."""
    if math.isnan(v) or v == -math.inf:
        return math.nan
    if v == math.inf:
        return math.inf if order == 0 else 0.0
    if v <= 0 and v == math.floor(v):
        if order == 1:
            return math.inf
        return math.copysign(math.inf, -v) if v == 0 else math.nan
    with localcontext() as context:
        context.prec = 40
        x, shift = Decimal(v), Decimal(0)
        while x < 40:
            shift += 1 / x if order == 0 else 1 / (x * x)
            x += 1
        if order == 0:
            series = x.ln() - 1 / (2 * x) - sum(Decimal(b.numerator) / b.denominator / (2 * k) / x ** (2 * k)
                                                 for k, b in enumerate(_BERNOULLI, 1))
            return float(series - shift)
        series = 1 / x + 1 / (2 * x * x) + sum(Decimal(b.numerator) / b.denominator / x ** (2 * k + 1)
                                                for k, b in enumerate(_BERNOULLI, 1))
        return float(series + shift)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x, beta, threshold):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _erfinv(v):
    """erfinv by bisection on math.erf (on math.erfc beyond 1/2, where erf's 1 - tiny rounds)."""
    if not abs(v) < 1:
        return math.copysign(math.inf, v) if abs(v) == 1 else math.nan
    low, high = 0.0, 7.0
    for _ in range(200):
        middle = (low + high) / 2
        below = math.erfc(middle) > 1 - abs(v) if abs(v) > 0.5 else math.erf(middle) < abs(v)
        low, high = (middle, high) if below else (low, middle)
    return math.copysign((low + high) / 2, v)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

REFERENCES = {
    U.kIdentity: lambda x, a, b: x,
    U.kRelu: lambda x, a, b: x if x.dtype == BOOL else np.maximum(x, 0).astype(x.dtype),
    U.kElu: lambda x, a, b: np.where(x > 0, x, a * np.expm1(x)),
    U.kCelu: lambda x, a, b: np.where(x > 0, x, a * np.expm1(x / a)),
    U.kGelu: lambda x, a, b: 0.5 * x * (1 + _elementwise(math.erf)(x / math.sqrt(2))),
    U.kFastGelu: lambda x, a, b: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    U.kQuickGelu: lambda x, a, b: x * _sigmoid(1.702 * x),
    U.kHardSwish: lambda x, a, b: x * np.clip(x + 3, 0, 6) / 6,
    U.kHardSigmoid: lambda x, a, b: np.clip(x + 3, 0, 6) / 6,
    U.kHardShrink: lambda x, a, b: np.where((x >= -a) & (x <= a), 0, x),
    U.kHardTanh: lambda x, a, b: np.clip(x, a, b),
    U.kLeakyRelu: lambda x, a, b: np.where(x > 0, x, a * x),
    U.kMish: lambda x, a, b: x * np.tanh(np.log1p(np.exp(x))),
    U.kSelu: lambda x, a, b: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(x)),
    U.kSilu: lambda x, a, b: x * _sigmoid(x),
    U.kSoftShrink: lambda x, a, b: np.where(x > a, x - a, np.where(x < -a, x + a, 0 * x)),
    U.kSoftSign: lambda x, a, b: x / (1 + np.abs(x)),
    U.kSoftPlus: _softplus,
    U.kTanh: lambda x, a, b: np.tanh(x),
    U.kThreshold: lambda x, a, b: np.where(x <= a, b, x),
    U.kSquareReLU: lambda x, a, b: np.maximum(x, 0) ** 2,
    U.kAbs: lambda x, a, b: np.abs(x),
    U.kAcos: lambda x, a, b: np.arccos(x),
    U.kAcosh: lambda x, a, b: np.arccosh(x),
    U.kAsin: lambda x, a, b: np.arcsin(x),
    U.kAsinh: lambda x, a, b: np.arcsinh(x),
    U.kAtan: lambda x, a, b: np.arctan(x),
    U.kAtanh: lambda x, a, b: np.arctanh(x),
    U.kCeil: lambda x, a, b: np.ceil(x),
    U.kCos: lambda x, a, b: np.cos(x),
    U.kCosh: lambda x, a, b: np.cosh(x),
    U.kDigamma: lambda x, a, b: _elementwise(lambda v: _polygamma(0, v))(x),
    U.kTrigamma: lambda x, a, b: _elementwise(lambda v: _polygamma(1, v))(x),
    U.kErf: lambda x, a, b: _elementwise(math.erf)(x),
    U.kErfc: lambda x, a, b: _elementwise(math.erfc)(x),
    U.kExp: lambda x, a, b: np.exp(x),
    U.kExp2: lambda x, a, b: np.exp2(x),
    U.kExpm1: lambda x, a, b: np.expm1(x),
    U.kFloor: lambda x, a, b: np.floor(x),
    U.kLgamma: lambda x, a, b: _elementwise(_lgamma)(x),
    U.kLog: lambda x, a, b: np.log(x),
    U.kLog2: lambda x, a, b: np.log2(x),
    U.kLog10: lambda x, a, b: np.log10(x),
    U.kLog1p: lambda x, a, b: np.log1p(x),
    U.kLogSigmoid: lambda x, a, b: -np.logaddexp(0, -x),
    U.kNegative: lambda x, a, b: np.negative(x),
    U.kReciprocal: lambda x, a, b: 1 / x,
    U.kReciprocalNoNan: lambda x, a, b: np.where(x == 0, 0, 1 / x),
    U.kRint: lambda x, a, b: np.rint(x),
    U.kRound: lambda x, a, b: np.round(x),
    U.kRsqrt: lambda x, a, b: 1 / np.sqrt(x),
    U.kSigmoid: lambda x, a, b: _sigmoid(x),
    # PyTorch's sign is (0 < x) - (x < 0): 0 for NaN, where NumPy's gives NaN.
    U.kSign: lambda x, a, b: np.where(np.isnan(x), 0, np.sign(x)) if x.dtype.kind == "f" else x if x.dtype == BOOL else np.sign(x),
    U.kSin: lambda x, a, b: np.sin(x),
    U.kSinh: lambda x, a, b: np.sinh(x),
    U.kSqrt: lambda x, a, b: np.sqrt(x),
    U.kSquare: lambda x, a, b: np.square(x),
    U.kTan: lambda x, a, b: np.tan(x),
    U.kTrunc: lambda x, a, b: np.trunc(x),
    U.kNotEqualZero: lambda x, a, b: (x != 0).astype(x.dtype),
    U.kLogicalNot: lambda x, a, b: np.logical_not(x),
    U.kIsInf: lambda x, a, b: np.isinf(x),
    U.kIsNan: lambda x, a, b: np.isnan(x),
    U.kIsFinite: lambda x, a, b: np.isfinite(x),
    U.kBitwiseNot: lambda x, a, b: np.invert(x),
    U.kSignbit: lambda x, a, b: np.signbit(x.astype(np.float64)),
    U.kFrac: lambda x, a, b: x - np.trunc(x),
    U.kDeg2Rad: lambda x, a, b: x * (math.pi / 180),
    U.kRad2Deg: lambda x, a, b: x * (180 / math.pi),
    U.kSinc: lambda x, a, b: np.where(x == 0, 1.0, np.sin(math.pi * x) / (math.pi * x)),
    U.kLogit: lambda x, a, b: np.log((y := np.clip(x, a, 1 - a) if a >= 0 else x) / (1 - y)),
    U.kErfInv: lambda x, a, b: _elementwise(_erfinv)(x),
}

# Attributes: PyTorch's defaults (kThreshold has none), and one other setting per op.
DEFAULT_ATTRS = {
    U.kElu: (1.0, None), U.kCelu: (1.0, None), U.kHardShrink: (0.5, None), U.kHardTanh: (-1.0, 1.0),
    U.kLeakyRelu: (0.01, None), U.kSoftShrink: (0.5, None), U.kSoftPlus: (1.0, 20.0), U.kLogit: (-1.0, None),
}
OTHER_ATTRS = {
    U.kElu: (0.5, None), U.kCelu: (2.0, None), U.kHardShrink: (1.25, None), U.kHardTanh: (-2.0, 3.0),
    U.kLeakyRelu: (0.25, None), U.kSoftShrink: (1.25, None), U.kSoftPlus: (2.0, 10.0), U.kThreshold: (0.5, -7.0),
    U.kLogit: (0.125, None),
}
# For integer inputs, bounds every integer dtype holds once truncated toward zero, as torch truncates them.
INTEGER_ATTRS = {U.kHardTanh: (1.5, 90.7), U.kThreshold: (2.5, 7.9)}

# Inputs: a sweep of each op's domain, a few edge values, and the IEEE specials.
_SPECIALS = [0.0, -0.0, math.nan, math.inf, -math.inf]
_DOMAINS = {
    U.kAcos: (-1, 1, [-1.5, 1.5, 1e-6]), U.kAsin: (-1, 1, [-1.5, 1.5, 1e-6]), U.kAtanh: (-1, 1, [-1.5, 1.5, 1e-6]),
    U.kAcosh: (1, 30, [0.5, 1e5]),
    U.kLog: (1e-3, 50, [-1, 1e-30, 1e5]), U.kLog2: (1e-3, 50, [-1, 1e-30, 1e5]), U.kLog10: (1e-3, 50, [-1, 1e-30, 1e5]),
    U.kLog1p: (-0.999, 20, [-1, -2, 1e-8]),
    U.kSqrt: (0, 50, [-1, 1e-8, 1e10]), U.kRsqrt: (0, 50, [-1, 1e-8, 1e10]),
    U.kExp: (-20, 20, [1e-8, -100, 100, 800]), U.kExp2: (-20, 20, [1e-8, -200, 200, 2000]),
    U.kExpm1: (-20, 20, [1e-8, -1e-8, 100]), U.kCosh: (-20, 20, [1e-8, 100]), U.kSinh: (-20, 20, [1e-8, -100]),
    U.kLgamma: (-9.9, 10, [-3, -2, -1, 1, 2, 1e-3, 0.5, 1e3, 1e6]),
    U.kDigamma: (-9.9, 10, [-3, -2, -1, 1e-3, 0.5, 1.4616321449683622, 1e3, 1e6]),
    U.kTrigamma: (-9.9, 10, [-3, -2, -1, 1e-3, 0.5, 1e3, 1e6]),
    U.kTan: (-1.5, 1.5, [10, 100, 1e4]), U.kSin: (-10, 10, [1e4, 1e6]), U.kCos: (-10, 10, [1e4, 1e6]),
    U.kErf: (-6, 6, [1e-8, 10, -10]), U.kErfc: (-6, 6, [1e-8, 10, 27]),
    U.kErfInv: (-0.999, 0.999, [1 - 1e-7, -(1 - 1e-12), 1 - 2**-53, 1e-300, 0.5, 1, -1, 1.5]),
    U.kLogit: (1e-3, 0.999, [0.5, 1e-8, 1 - 1e-7, 1, 2, -1]),
    U.kDeg2Rad: (-720, 720, [1e-30, 1e30]), U.kRad2Deg: (-10, 10, [1e-30, 1e30]),
}
_ROUNDING = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.3, 2.0**22 + 0.5, 2.0**23 - 0.5, 1e20, -1e20]
_DOMAINS |= {op: (-6, 6, _ROUNDING) for op in (U.kRint, U.kRound, U.kFloor, U.kCeil, U.kTrunc, U.kFrac)}
_WIDE = [-100, -30, 30, 100, 1e-6, -1e-6, 19.5, 20.5, 25]


def float_inputs(op, dtype):
    low, high, extra = _DOMAINS.get(op, (-6, 6, _WIDE))
    values = np.concatenate([np.linspace(low, high, 47), extra, _SPECIALS])
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def integer_inputs(dtype):
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 100, info.max // 2 + 7]
    rng = np.random.default_rng(len(values))
    values += list(rng.integers(info.min, info.max, 20, endpoint=True, dtype=dtype))
    return np.array(values, dtype)


def inputs(op, dtype):
    if dtype == BOOL:
        return np.array([True, False, False, True, True])
    return integer_inputs(dtype) if kind(dtype) in "iu" else float_inputs(op, dtype)


def check(got, op, x, dst, attrs):
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64) if kind(x.dtype) == "f" else x
        exact = REFERENCES[op](wide, *attrs)
    if kind(dst) == "f":
        assert_close(got, exact, dst)
    else:
        assert_same(got, np.asarray(exact).astype(dst))


OP_CASES = sampled(c for c in COMBINATIONS if c[0] is not U.kCast)


# The simulator stores float32 results computed in float64; NumPy warns where they overflow.
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("op, src, dst", OP_CASES, ids=[f"{op.name}-{s.name}" for op, s, _ in OP_CASES])
def test_every_op_and_dtype_against_the_reference(device, op, src, dst):
    x = inputs(op, src)
    if op in INTEGER_ATTRS and kind(src) in "iu":
        attrs = INTEGER_ATTRS[op]
        check(launch(device, op, x, dst, *attrs), op, x, dst, tuple(math.trunc(a) for a in attrs))
    elif op in OTHER_ATTRS:
        attrs = DEFAULT_ATTRS.get(op)
        if attrs:  # PyTorch's defaults when attr0/attr1 are None
            check(launch(device, op, x, dst), op, x, dst, attrs)
        attrs = OTHER_ATTRS[op]
        check(launch(device, op, x, dst, *attrs), op, x, dst, tuple(a if a is not None else 0 for a in attrs))
    else:
        check(launch(device, op, x, dst), op, x, dst, (None, None))


# float32 and float16 compute these with vectorized approximations rather than libm: a dense sweep.
_TRANSCENDENTAL = (U.kExp, U.kExpm1, U.kLog, U.kTanh, U.kSigmoid, U.kErf, U.kErfc, U.kGelu, U.kFastGelu,
                   U.kQuickGelu, U.kSilu, U.kElu, U.kCelu, U.kSelu, U.kMish, U.kSoftPlus)
DENSE_CASES = [(op, np.dtype(dtype)) for op in _TRANSCENDENTAL for dtype in (np.float16, np.float32)]


def dense_inputs(op, dtype, count):
    """count points over the op's whole interesting range, and a band past float32's exp overflow."""
    if op is U.kLog:
        values = np.concatenate([np.geomspace(1e-30, 1e30, count // 2), np.linspace(1e-3, 50, count // 2)])
    else:
        values = np.concatenate([np.linspace(-20, 20, count // 2), np.linspace(-110, 110, count // 2)])
    with np.errstate(over="ignore"):  # float16 has no 1e30
        return values.astype(dtype)


@pytest.mark.parametrize("op, dtype", DENSE_CASES, ids=[f"{op.name}-{d.name}" for op, d in DENSE_CASES])
def test_transcendental_ops_on_a_dense_sweep(device, op, dtype):
    x = dense_inputs(op, dtype, 200 if device == "cuda" and SIMULATOR else 200_000)
    x = np.unique(x)  # float16 repeats values
    attrs = [DEFAULT_ATTRS.get(op, (None, None))]
    if op in OTHER_ATTRS:
        attrs.append(OTHER_ATTRS[op])
    for attr0, attr1 in attrs:
        check(launch(device, op, x, dtype, attr0, attr1), op, x, dtype, (attr0, attr1))


def cast_inputs(src, dst):
    """Values whose conversion is defined: float -> integer stays in the destination's range."""
    if src == BOOL:
        return np.array([True, False, True])
    if src.kind in "iu":
        x = integer_inputs(src)
        if dst.kind in "iu":
            x = x[(x >= np.iinfo(dst).min) & (x <= np.iinfo(dst).max)]  # wrapping: see the test below
        return x
    values = [0.0, -0.0, 1.0, 2.5, -2.5, 0.75, -0.75, 65504.0, 1e5, 3.0e38, 1e-8, 1 + 2.0**-11 + 2.0**-40]
    values += list(np.linspace(-130, 300, 40))
    if dst.kind == "f" or dst == BOOL:
        values += _SPECIALS
    with np.errstate(over="ignore"):
        x = np.array(values, src)
    if dst.kind in "iu":
        wide = x.astype(np.float64)
        x = x[(wide > np.iinfo(dst).min - 1) & (wide < np.iinfo(dst).max + 1)]
    return x


CAST_CASES = sampled((s, d) for op, s, d in COMBINATIONS if op is U.kCast)


@pytest.mark.parametrize("src, dst", CAST_CASES, ids=[f"{s.name}-{d.name}" for s, d in CAST_CASES])
def test_cast_every_pair_matches_numpy_astype(device, src, dst):
    x = cast_inputs(src, dst)
    got = launch(device, U.kCast, x, dst)
    with np.errstate(all="ignore"):
        expected = x.astype(dst)
    assert_same(got, expected)


def saturated(x, dst):
    """x cast to the integer dtype dst as CUDA's cvt.rzi.sat: clip(trunc(x), min, max), NaN -> 0.

    Elementwise in Python integers: in float64, int64's maximum would round up out of range.
    """
    info = np.iinfo(dst)

    def one(v):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return info.max if v > 0 else info.min
        return min(max(math.trunc(v), info.min), info.max)

    return np.array([one(float(v)) for v in x], dst)


_OUT_OF_RANGE = [300.7, -300.7, 1e30, -1e30, math.nan, math.inf, -math.inf, 127.9, -128.9, 128.0, -129.0, 255.5,
                 256.0, -0.9, 0.9, 2.0**31, 2.0**31 - 1, -(2.0**31) - 1, 2.0**32, 2.0**63, -(2.0**63), 2.0**64, 65504.0]
SATURATING_CASES = sampled((s, d) for s in FLOATS for d in INTS)


@pytest.mark.parametrize("src, dst", SATURATING_CASES, ids=[f"{s.name}-{d.name}" for s, d in SATURATING_CASES])
def test_cast_float_to_integer_saturates_alike_in_every_lane(device, src, dst):
    # Every count from 1 to 70 puts each value in the CPU loop's vector body and in its scalar tail.
    with np.errstate(over="ignore"):
        values = np.array(_OUT_OF_RANGE, src)
    counts = range(1, 71) if device == "cpu" else (1, len(values), 70)
    for count in counts:
        x = np.resize(np.roll(values, count), count)
        assert_same(launch(device, U.kCast, x, dst), saturated(x, dst), err_msg=f"count {count}")


def test_ops_cast_of_an_out_of_range_float_is_one_value(device):
    x = to_device(np.full(11, 300.7, np.float32), device)
    assert_same(to_numpy(ep.ops.unary("cast", x, dtype=np.int8)), np.full(11, 127, np.int8))


@pytest.mark.parametrize("src", sampled(INTS))
def test_cast_wraps_integers_like_numpy(device, src):
    x = integer_inputs(src)
    for dst in INTS:
        assert_same(launch(device, U.kCast, x, dst), x.astype(dst))


def test_integer_ops_wrap_like_numpy(device):
    x = np.array([-128, -127, -1, 0, 1, 127], np.int8)
    for op, reference in ((U.kNegative, np.negative), (U.kAbs, np.abs), (U.kBitwiseNot, np.invert)):
        assert_same(launch(device, op, x), reference(x))
    u = np.array([0, 1, 16, 200, 255], np.uint8)
    references = ((U.kNegative, np.negative), (U.kAbs, np.abs), (U.kSign, np.sign), (U.kSquare, np.square),
                  (U.kBitwiseNot, np.invert))
    for op, reference in references:
        assert_same(launch(device, op, u), reference(u))


def test_round_half_to_even_and_reciprocal_no_nan_at_zero(device):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.0, -0.0], np.float32)
    for op in (U.kRint, U.kRound):
        got = launch(device, op, x)
        assert_same(got, [-2, -2, -0.0, 0, 2, 2, 0, -0.0])
        assert_same(np.signbit(got), np.signbit(x))
    assert_same(launch(device, U.kReciprocalNoNan, x)[-2:], 0)


# Kept from the skeleton.

@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relu_matches_numpy(device, dtype):
    x = np.linspace(-3, 3, 101).astype(dtype)
    assert_same(launch(device, ep.UnaryOp.kRelu, x), np.maximum(x, 0))


def _bits(a):
    return a.view(f"u{a.dtype.itemsize}").tolist()


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_zero_signs_and_nan_attributes_as_pytorch(device, dtype):
    # Bit for bit against torch: relu keeps -0.0, log_sigmoid gives +0.0 where exp(-x) underflows,
    # hardtanh is clamp (NaN in a bound gives NaN).
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = np.array([-0.0, 0.0, -1.0, 2.0, np.inf, -np.inf, np.nan, 1e4], dtype)
    t = torch.from_numpy(x.astype(np.float32)) if dtype == np.float16 else torch.from_numpy(x)
    ref = lambda y: (y.numpy().astype(dtype))  # noqa: E731  (float16: torch computed in float32, exact here)
    assert _bits(launch(device, U.kRelu, x)) == _bits(ref(torch.relu(t)))
    got, expected = launch(device, U.kLogSigmoid, x), ref(F.logsigmoid(t))
    assert _bits(got[[4, 7]]) == _bits(expected[[4, 7]]) == _bits(np.zeros(2, dtype))  # +0.0
    np.testing.assert_allclose(got, expected, rtol=1e-3 if dtype == np.float16 else 1e-6)
    for low, high in ((-1.0, 1.0), (np.nan, 1.0), (-1.0, np.nan), (0.5, 0.5)):
        assert_same(launch(device, U.kHardTanh, x, None, low, high), ref(torch.clamp(t, low, high)))


def test_expm1_of_tiny_float32_is_x(device):
    # Every subnormal and every |x| below 2**-24 is its own e^x - 1 (NumPy's, to the bit).
    x = np.concatenate([np.arange(1, 64, dtype=np.uint32).view(np.float32), np.float32([2.0**-25, -(2.0**-30), 5.9e-8, -0.0])])
    for op in (U.kExpm1,):
        assert _bits(launch(device, op, x)) == _bits(np.expm1(x))
    assert _bits(launch(device, U.kElu, -x[:-1])) == _bits(np.expm1(-x[:-1]))


@pytest.mark.parametrize("op, attr0, attr1, message", [
    (U.kCelu, 0.0, None, r"alpha is 0; expected a nonzero alpha"),
    (U.kHardTanh, 1.0, -1.0, r"min_val 1.0 is greater than max_val -1.0; expected min_val <= max_val"),
])
def test_attributes_the_op_has_no_result_for_are_refused(device, op, attr0, attr1, message):
    with pytest.raises(ValueError, match=message):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, op, np.float32, np.float32, attr0, attr1)
    with pytest.raises(ValueError, match=message):
        ep.ops.unary(op, to_device(np.zeros(3, np.float32), device), attr0, attr1)


def test_launch_leaves_src_unchanged_and_count_bounds_the_write(device):
    x = np.linspace(-3, 3, 50).astype(np.float32)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kNegative, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(x, device), to_device(np.full(50, 7, np.float32), device)
    primitive.Launch(stream, src, dst, 20)
    stream.Sync()
    out = to_numpy(dst)
    assert_same(out[:20], -x[:20])
    assert_same(out[20:], 7)
    assert_same(to_numpy(src), x)


# CUDA moves packs of up to 16 bytes per thread where both buffers are aligned to them, one element
# where not, and a pack cut short by the count element by element (ep/cuda/pack.py).
PACK_CASES = [
    (U.kLeakyRelu, np.float16, np.float16, (0.25, None)),
    (U.kLeakyRelu, np.float32, np.float32, (0.25, None)),
    (U.kLeakyRelu, np.float64, np.float64, (0.25, None)),
    (U.kNegative, np.int8, np.int8, (None, None)),
    (U.kLogicalNot, np.bool_, np.bool_, (None, None)),
    (U.kCast, np.int8, np.float64, (None, None)),
    (U.kCast, np.float32, np.uint8, (None, None)),
]


@pytest.mark.parametrize("op, src_dtype, dst_dtype, attrs", PACK_CASES, ids=lambda c: getattr(c, "name", None))
def test_packs_tails_and_offset_buffers(device, op, src_dtype, dst_dtype, attrs):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, op, src_dtype, dst_dtype, *attrs)
    stream = ep.GetDevice(device).CreateStream()
    # Values every dtype holds exactly (non-negative where a cast goes to uint8).
    values = np.arange(41) - (0 if dst_dtype is np.uint8 else 20)
    values = (values % 3 == 0) if src_dtype is np.bool_ else values.astype(src_dtype)
    if op is U.kCast:
        expected = values.astype(dst_dtype)
    else:
        expected = np.asarray(REFERENCES[op](values, 0.25, 0)).astype(dst_dtype)
    for count in (1, 7, 16, 17, 35, 40):
        for src_offset, dst_offset in ((0, 0), (1, 0), (0, 1), (1, 1)):
            src = to_device(values, device)[src_offset : src_offset + count]
            dst_buffer = to_device(np.zeros(41, dst_dtype), device)
            primitive.Launch(stream, src, dst_buffer[dst_offset : dst_offset + count], count)
            stream.Sync()
            got = to_numpy(dst_buffer)
            assert_same(got[dst_offset : dst_offset + count], expected[src_offset : src_offset + count])
            # Nothing written around the count's elements.
            assert not got[:dst_offset].any() and not got[dst_offset + count :].any(), (count, src_offset, dst_offset)


# Bad input.

def test_count_larger_than_a_buffer_is_refused(device):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(np.ones(8, np.float32), device), to_device(np.zeros(4, np.float32), device)
    with pytest.raises(ValueError, match="dst: holds 4 elements"):
        primitive.Launch(stream, src, dst, 8)
    assert_same(to_numpy(dst), 0)


def test_wrong_dtype_for_the_primitive(device):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(np.ones(4, np.float64), device), to_device(np.zeros(4, np.float32), device)
    with pytest.raises(TypeError, match="src: dtype float64 does not match the primitive's float32"):
        primitive.Launch(stream, src, dst, 4)


def test_non_array_argument(device):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    with pytest.raises(TypeError, match="src: list"):
        primitive.Launch(stream, [1.0, 2.0], to_device(np.zeros(2, np.float32), device), 2)


def test_buffer_of_the_other_device_is_refused(device):
    other = "cpu" if device == "cuda" else "cuda"
    if other not in [d.value for d in ep.common.runtime.device.available_device_types()]:
        pytest.skip("needs both devices")
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    foreign = to_device(np.ones(4, np.float32), other)
    with pytest.raises(TypeError, match=f"src: .* was given to a {device} primitive"):
        primitive.Launch(stream, foreign, to_device(np.zeros(4, np.float32), device), 4)


def test_attribute_on_an_op_that_takes_none(device):
    with pytest.raises(ValueError, match="attr0: kRelu takes no attributes"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32, 0.5)


def test_attr1_on_an_op_that_takes_one_attribute(device):
    with pytest.raises(ValueError, match=r"attr1: kLeakyRelu takes 1 attribute\(s\) \(negative_slope\); got 0.5"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, U.kLeakyRelu, np.float32, np.float32, None, 0.5)


def test_threshold_needs_both_attributes(device):
    with pytest.raises(ValueError, match="attr0: kThreshold needs threshold, which has no default"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, U.kThreshold, np.float32, np.float32)
    with pytest.raises(ValueError, match="attr1: kThreshold needs value"):
        ep.ops.unary("threshold", to_device(np.ones(3, np.float32), device), 0.5)


def test_attribute_that_is_not_a_number(device):
    with pytest.raises(TypeError, match="attr0: alpha of kElu must be a number; got '1'"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, U.kElu, np.float32, np.float32, "1")


def test_ops_unary_cast_needs_a_dtype(device):
    x = to_device(np.ones(3, np.float32), device)
    with pytest.raises(TypeError, match="dtype: kCast needs a destination dtype"):
        ep.ops.unary("cast", x)
    assert_same(to_numpy(x), 1)


def test_ops_unary_unknown_op_name(device):
    with pytest.raises(ValueError, match="op: 'frobnicate' is not a unary op"):
        ep.ops.unary("frobnicate", to_device(np.ones(3, np.float32), device))


def test_ops_unary_unsupported_dtype_names_op_and_dtype(device):
    # OneFlow's name keeps OneFlow's rule; PyTorch's computes an int32 input in float32, as torch.exp.
    with pytest.raises(TypeError, match="kExp does not support dtype int32"):
        ep.ops.unary("kExp", to_device(np.ones(3, np.int32), device))
    torch = pytest.importorskip("torch")
    got = to_numpy(ep.ops.unary("exp", to_device(np.arange(3, dtype=np.int32), device)))
    want = torch.exp(torch.arange(3, dtype=torch.int32)).numpy()
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_ops_unary_strided_input_on_cpu():
    x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6)[:, ::2]
    assert_same(ep.ops.unary("relu", x), np.maximum(x, 0))


# Properties of ops.unary over shapes and strides.

PROPERTY_CASES = [
    ("relu", np.float32, None, (), lambda x: np.maximum(x, 0)),
    ("negative", np.int8, None, (), np.negative),
    ("leaky_relu", np.float64, None, (0.5,), lambda x: np.where(x > 0, x, 0.5 * x)),
    ("is_nan", np.float16, None, (), np.isnan),
    ("cast", np.int8, np.float16, (), lambda x: x.astype(np.float16)),
]


@st.composite
def strided_views(draw, dtype):
    """A NumPy view of rank 0-4: each axis sliced with a step of +-1 or +-2, axes permuted."""
    rank = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    steps = draw(st.lists(st.sampled_from([1, 2, -1, -2]), min_size=rank, max_size=rank))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base = rng.uniform(-100, 100, [n * abs(s) for n, s in zip(shape, steps)])
    if np.dtype(dtype).kind == "f":
        base[rng.random(base.shape) < 0.05] = np.nan
    # The trailing Ellipsis keeps a rank-0 result an array rather than a scalar.
    view = base.astype(dtype)[tuple(slice(None, None, s) for s in steps) + (Ellipsis,)]
    return view.transpose(draw(st.permutations(range(rank))))


def _check_property(x, name, dtype, attrs, reference, device):
    before = x.copy()
    # reshape: to_device makes a rank-0 array rank 1.
    got = ep.ops.unary(name, to_device(x, device).reshape(x.shape) if device == "cuda" else x, *attrs, dtype=dtype)
    got = to_numpy(got)
    assert got.shape == x.shape
    assert_same(got, reference(x))
    assert_same(x, before)


@pytest.mark.parametrize("name, src, dtype, attrs, reference", PROPERTY_CASES, ids=[c[0] for c in PROPERTY_CASES])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_ops_unary_any_shape_and_strides_on_cpu(name, src, dtype, attrs, reference, data):
    x = data.draw(strided_views(src))
    _check_property(x, name, dtype, attrs, reference, "cpu")


@pytest.mark.parametrize("name, src, dtype, attrs, reference", PROPERTY_CASES, ids=[c[0] for c in PROPERTY_CASES])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_ops_unary_any_shape_on_cuda_contiguous(name, src, dtype, attrs, reference, data):
    if "cuda" not in [d.value for d in ep.common.runtime.device.available_device_types()]:
        pytest.skip("no cuda device")
    x = data.draw(strided_views(src)).copy()
    _check_property(x, name, dtype, attrs, reference, "cuda")


def test_ops_unary_writes_into_out(device):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    out = to_device(np.zeros((3, 4), np.float32), device)
    assert ep.ops.unary("hard_tanh", to_device(x, device), -0.5, 0.5, out=out) is out
    assert_same(to_numpy(out), np.clip(x, -0.5, 0.5))
