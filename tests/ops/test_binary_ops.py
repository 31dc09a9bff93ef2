"""Semantics of every forward BroadcastElementwiseBinary op on every dtype, against NumPy.

Operands include zeros, -1 and each integer dtype's extremes, and for floats signed zeros,
infinities and NaN, so that division and modulo by zero, MIN / -1 and NaN propagation are
checked on every op. Integers are computed in int64 and wrapped to the dtype, bool as int64
then != 0, float16 in float32 then rounded once.
"""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, assert_same, kind, sampled

BITS = [np.bool_, np.int8, np.uint8, np.int32, np.int64]


def _safe(b):
    return np.where((b == 0) | (b == -1), 1, b)


def _int_floor_div(a, b):
    return np.where(b == 0, 0, np.where(b == -1, -a, np.floor_divide(a, _safe(b))))


def _int_floor_mod(a, b):
    return np.where((b == 0) | (b == -1), 0, np.remainder(a, _safe(b)))


def _int_trunc_div(a, b):
    q = _int_floor_div(a, b)
    inexact = (b != 0) & (b != -1) & (_int_floor_mod(a, b) != 0) & ((a < 0) != (b < 0))
    return np.where(inexact, q + 1, q)


def _int_fmod(a, b):
    return np.where((b == 0) | (b == -1), 0, np.fmod(a, _safe(b)))


def _int_pow(a, b):
    if a.dtype.kind == "u":
        return np.power(a, b)  # uint64 beside -1 would promote to float64
    negative = b < 0
    power = np.power(a, np.where(negative, 0, b))
    base_one = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(negative, base_one, power)


MATH = {
    "add": (np.add, np.add),
    "kSub": (np.subtract, np.subtract),
    "mul": (np.multiply, np.multiply),
    "kDiv": (np.true_divide, _int_trunc_div),
    "max": (np.maximum, np.maximum),
    "min": (np.minimum, np.minimum),
    "kPow": (np.power, _int_pow),
    "kFmod": (np.fmod, _int_fmod),
    "floor_div": (np.floor_divide, _int_floor_div),
    "trunc_div": (lambda a, b: np.trunc(a / b), _int_trunc_div),
    "floor_mod": (np.remainder, _int_floor_mod),
}
COMPARISON = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less_than": np.less,
    "less_equal": np.less_equal,
    "greater_than": np.greater,
    "greater_equal": np.greater_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}


def operands(dtype, n=40, seed=0):
    """a and b of n elements each: random values plus the edge cases of dtype."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool), rng.integers(0, 2, n).astype(bool)
    if kind(dtype) in "iu":
        info = np.iinfo(dtype)
        edges = np.array([0, 1, info.max, info.min, 7, 3] + ([-1, -7, -3] if kind(dtype) == "i" else [255, 2, 9]), dtype)
        a = np.concatenate([rng.integers(info.min, info.max, n - len(edges), endpoint=True, dtype=dtype), edges])
        b = np.concatenate([rng.integers(-9 if kind(dtype) == "i" else 0, 10, n - len(edges)), [0, 0, -1 if kind(dtype) == "i" else 1, -1 if kind(dtype) == "i" else 0, 2, -2 if kind(dtype) == "i" else 5, 0, 3, 2]])
        return a.astype(dtype), b.astype(dtype)
    edges_a = [0.0, -0.0, np.inf, -np.inf, np.nan, 7.5, -7.5, 7.5, 1.0, -1.0]
    edges_b = [0.0, 0.0, 2.0, 2.0, 1.0, 0.0, 2.0, -2.0, np.nan, np.inf]
    a = np.concatenate([rng.normal(0, 4, n - len(edges_a)), edges_a])
    b = np.concatenate([rng.normal(0, 2, n - len(edges_b)), edges_b])
    # Some exact integers so that floor and trunc division see exact quotients.
    b[:4] = np.round(b[:4]) + 1
    a[:4] = b[:4] * 3
    return a.astype(dtype), b.astype(dtype)


def launch(device, op, a, b, dst_dtype, attr0=None, attr1=None):
    """op(a, b) through NewPrimitive + Launch on equal shapes (the elementwise path)."""
    primitive = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, op, a.dtype, dst_dtype, 8, attr0, attr1)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    src0, src1 = to_device(a, device), to_device(b, device)
    dst = to_device(np.zeros(a.shape, dst_dtype), device)
    primitive.Launch(stream, a.shape, src0, b.shape, src1, dst)
    stream.Sync()
    assert_same(to_numpy(src0), a)
    assert_same(to_numpy(src1), b)
    return to_numpy(dst)


def assert_matches(got, expected, dtype):
    """Exact for integers and bool; float64 to 1e-12, float32 to 2e-6, float16 to one rounding of
    the float32 result (one float16 ulp), NaN where NumPy has NaN."""
    dtype = np.dtype(dtype)
    assert got.dtype == dtype
    if kind(dtype) not in "f":
        assert_same(got, expected.astype(dtype))
        return
    rtol, atol = {2: (2.0**-10, 2.0**-24), 4: (2e-6, 1e-37), 8: (1e-12, 1e-300)}[dtype.itemsize]
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(dtype).astype(np.float64), rtol=rtol, atol=atol)


def compute_type(dtype):
    """The type NumPy references compute in: float16 and bfloat16 in float32, integers and bool in int64 (uint64 in uint64)."""
    dtype = np.dtype(dtype)
    if kind(dtype) == "f":
        return np.float32 if dtype.itemsize == 2 else dtype.type
    return np.uint64 if dtype == np.uint64 else np.int64


@pytest.mark.parametrize("dtype", sampled(ALL))
@pytest.mark.parametrize("op", MATH)
def test_math_op_matches_numpy(device, op, dtype):
    a, b = operands(dtype)
    float_ref, int_ref = MATH[op]
    ref = float_ref if kind(dtype) == "f" else int_ref
    with np.errstate(all="ignore"):
        expected = ref(a.astype(compute_type(dtype)), b.astype(compute_type(dtype)))
    if dtype is np.bool_:
        expected = expected != 0
    assert_matches(launch(device, op, a, b, dtype), expected, dtype)


@pytest.mark.parametrize("dtype", sampled(ALL))
@pytest.mark.parametrize("op", COMPARISON)
def test_comparison_op_gives_bool(device, op, dtype):
    a, b = operands(dtype)
    b[::3] = a[::3]
    assert_matches(launch(device, op, a, b, np.bool_), COMPARISON[op](a, b), np.bool_)


def is_close_reference(a, b, atol, rtol, equal_nan):
    """|a - b| <= atol + rtol * |b| in the attributes' type: float32 for float16/32, else float64."""
    ftype = np.float32 if a.dtype in (np.float16, np.float32) else np.float64
    x, y = a.astype(ftype), b.astype(ftype)
    with np.errstate(all="ignore"):
        error = np.abs(x - y)
        close = (x == y) | (np.isfinite(error) & (error <= ftype(atol) + ftype(rtol) * np.abs(y)))
    return close | (np.isnan(x) & np.isnan(y)) if equal_nan else close


@pytest.mark.parametrize("dtype", sampled(ALL))
@pytest.mark.parametrize("op", ["is_close", "is_close_equal_nan"])
def test_is_close(device, op, dtype):
    a, b = operands(dtype)
    rng = np.random.default_rng(1)
    if kind(dtype) == "f":
        # Perturbations around the tolerance, so both outcomes occur.
        b[10:30] = (a[10:30] * (1 + rng.uniform(-0.02, 0.02, 20)) + rng.uniform(-0.02, 0.02, 20)).astype(dtype)
        b[-6:] = a[-6:]
        attrs = (0.01, 0.005)
    else:
        b[10:30] = a[10:30]
        attrs = (1.0, 0.0)
    got = launch(device, op, a, b, np.bool_, *attrs)
    assert_matches(got, is_close_reference(a, b, *attrs, equal_nan=op == "is_close_equal_nan"), np.bool_)


@pytest.mark.parametrize("op", ["is_close", "is_close_equal_nan"])
def test_is_close_defaults_are_pytorchs(device, op):
    a = np.array([1.0, 1.0, 1.0, np.nan, np.inf, np.inf], np.float64)
    b = np.array([1.0 + 9e-6, 1.0 + 2e-5, 1.0 - 1e-8, np.nan, np.inf, -np.inf], np.float64)
    got = launch(device, op, a, b, np.bool_)
    assert_matches(got, is_close_reference(a, b, 1e-8, 1e-5, equal_nan=op == "is_close_equal_nan"), np.bool_)


@pytest.mark.parametrize("dtype", sampled(ALL))
@pytest.mark.parametrize("op", LOGICAL)
def test_logical_op_gives_bool(device, op, dtype):
    a, b = operands(dtype)
    assert_matches(launch(device, op, a, b, np.bool_), LOGICAL[op](a, b), np.bool_)


@pytest.mark.parametrize("dtype", BITS)
@pytest.mark.parametrize("op", BITWISE)
def test_bitwise_op(device, op, dtype):
    a, b = operands(dtype)
    assert_matches(launch(device, op, a, b, dtype), BITWISE[op](a, b), dtype)


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_bitwise_ops_have_no_float_version(op, dtype):
    assert ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, "cpu", op, dtype, dtype) is None


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("op", ["kDiv", "trunc_div", "floor_div", "fmod", "floor_mod"])
def test_integer_division_by_zero_gives_zero(device, op, dtype):
    info = np.iinfo(dtype)
    a = np.array([0, 1, 7, info.max, info.min], dtype)
    assert not launch(device, op, a, np.zeros_like(a), dtype).any()


@pytest.mark.parametrize("op", ["kDiv", "trunc_div", "floor_div", "fmod", "floor_mod"])
def test_int64_min_by_minus_one_wraps_without_trapping(device, op):
    a = np.array([np.iinfo(np.int64).min, -7, 7], np.int64)
    b = np.full(3, -1, np.int64)
    got = launch(device, op, a, b, np.int64)
    quotient = op in ("kDiv", "trunc_div", "floor_div")
    assert_same(got, -a if quotient else np.zeros_like(a))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_division_rounding_against_python(device, dtype):
    pairs = [(a, b) for a in (-7, -6, 0, 6, 7) for b in (-3, -2, 2, 3)]
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    trunc = [int(x / y) for x, y in pairs]
    assert_same(launch(device, "kDiv", a, b, dtype), trunc)
    assert_same(launch(device, "trunc_div", a, b, dtype), trunc)
    assert_same(launch(device, "floor_div", a, b, dtype), [x // y for x, y in pairs])
    assert_same(launch(device, "floor_mod", a, b, dtype), [x % y for x, y in pairs])
    assert_same(launch(device, "fmod", a, b, dtype), [x - y * int(x / y) for x, y in pairs])


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_pow_with_negative_exponent(device, dtype):
    base = np.array([1, -1, -1, 2, -2, 0, 5, 1], dtype)
    exponent = np.array([-3, -3, -4, -1, -2, -1, -7, -100], dtype)
    got = launch(device, "pow", base, exponent, dtype)
    expected = [1 if x == 1 else (-1) ** (-e % 2) if x == -1 else 0 for x, e in zip(base.tolist(), exponent.tolist())]
    assert_same(got, expected)


def test_float_floor_div_and_mod_follow_python(device):
    pairs = [(a, b) for a in (-7.5, -6.0, -0.5, 0.5, 6.0, 7.5) for b in (-2.0, -0.75, 0.75, 2.0)]
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    assert_same(launch(device, "floor_div", a, b, np.float64), [x // y for x, y in pairs])
    assert_same(launch(device, "floor_mod", a, b, np.float64), [x % y for x, y in pairs])


def test_fmod_is_exact_for_large_quotients(device):
    # fmod is exact in IEEE arithmetic; a - b * trunc(a / b) would lose it.
    a = np.array([1e300, 3e38, 1e20, -1e20])
    b = np.array([3.0, 7.0, 0.1, 0.3])
    assert_same(launch(device, "fmod", a, b, np.float64), np.fmod(a, b))
