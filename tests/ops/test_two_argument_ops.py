"""The two-argument functions of PyTorch (atan2, hypot, copysign, nextafter, ldexp, fmax, fmin,
heaviside, xlogy, logaddexp, logaddexp2) and the integer ones (gcd, lcm, bitwise shifts) through
ep.ops.binary on every dtype they take, against torch, and NumPy where torch lacks the dtype or
where ep follows NumPy (gcd at the most negative value). Operands hold signed zeros, infinities
and NaN, or each integer dtype's extremes; float16 and bfloat16 are torch's float32 result rounded
once, as ep computes them."""
import math

import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import BFLOAT16, BOOL, FLOATS, INTS, assert_same, comparable, sampled

torch = pytest.importorskip("torch")

FLOAT_OPS = ("atan2", "hypot", "copysign", "nextafter", "ldexp", "fmax", "fmin", "heaviside", "xlogy", "logaddexp", "logaddexp2")
INTEGER_OPS = ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "fmax", "fmin", "heaviside")
# torch's integer dtypes (uint16, uint32 and uint64 have few ops there: NumPy's stand in).
TORCH_INTS = tuple(np.dtype(t) for t in ("int8", "uint8", "int16", "int32", "int64"))
NUMPY_NAMES = {"bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}
_SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, 3.0, -2.5]


def float_operands(seed=0):
    """Every pair of the special values, and random values over a wide range, as float64."""
    rng = np.random.default_rng(seed)
    a, b = np.meshgrid(_SPECIALS, _SPECIALS)
    rand = rng.standard_normal((2, 64)) * np.exp2(rng.integers(-8, 8, (2, 64)))
    return np.concatenate([a.ravel(), rand[0]]), np.concatenate([b.ravel(), rand[1]])


def integer_operands(dtype, seed=0):
    info = np.iinfo(dtype)
    edges = [info.min, info.min + 1, -1, 0, 1, 2, 3, 6, 7, 8, 63, 64, 100, info.max - 1, info.max]
    edges = np.array([v for v in edges if info.min <= v <= info.max], dtype)
    a, b = np.meshgrid(edges, edges)
    rng = np.random.default_rng(seed)
    rand = rng.integers(info.min, info.max, (2, 64), dtype=dtype, endpoint=True)
    return np.concatenate([a.ravel(), rand[0]]), np.concatenate([b.ravel(), rand[1]])


def ep_binary(device, op, a, b):
    return to_numpy(ep.ops.binary(op, to_device(a, device), to_device(b, device)))


def torch_binary(op, a, b):
    return getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(b)).numpy()


def assert_float_close(got, want, dtype, scale=0.0):
    """Equal NaN positions and infinities; finite values within 2 ulp of dtype of max(|want|, scale),
    scale being the operands' size where the result cancels (logaddexp2(-1, -1) is 0 or -5e-17);
    zeros' signs equal where nothing cancels (scale 0)."""
    got, want = comparable(got).astype(np.float64), comparable(want).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got) * np.sign(got), np.isinf(want) * np.sign(want))
    eps = {2: 2.0**-8 if dtype == BFLOAT16 else 2.0**-11, 4: 2.0**-23, 8: 2.0**-52}[np.dtype(dtype).itemsize]
    finite = np.isfinite(want)
    with np.errstate(invalid="ignore"):
        bound = 2 * eps * np.maximum(np.abs(want), np.where(np.isfinite(scale), scale, 0))
        bad = finite & ~(np.abs(got - want) <= bound)
    assert not bad.any(), f"at {np.flatnonzero(bad)[:8]}: got {got[bad][:8]}, want {want[bad][:8]}"
    zero = (want == 0) & (got == 0) & (np.abs(scale) == 0)  # where nothing cancels
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


FLOAT_CASES = sampled((op, dtype) for op in FLOAT_OPS for dtype in FLOATS)


@pytest.mark.parametrize("op, dtype", FLOAT_CASES, ids=[f"{op}-{d.name}" for op, d in FLOAT_CASES])
def test_float_function_is_torchs(device, op, dtype):
    a64, b64 = float_operands()
    with np.errstate(all="ignore"):
        a, b = a64.astype(dtype), b64.astype(dtype)
    if op == "nextafter" and dtype.itemsize == 2:
        with pytest.raises(TypeError, match=f"kNextAfter does not support dtype {dtype.name}"):
            ep_binary(device, op, a, b)
        return
    got = ep_binary(device, op, a, b)
    assert got.dtype == dtype
    # float16 and bfloat16 compute in float32 and round once.
    wide = np.float32 if dtype.itemsize == 2 else dtype
    with np.errstate(all="ignore"):
        want = torch_binary(op, a.astype(wide), b.astype(wide)).astype(dtype)
    if op == "nextafter":
        assert_same(got, want)  # exact: one step of the dtype's spacing
    else:
        scale = np.maximum(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        assert_float_close(got, want, dtype, scale if op.startswith("logaddexp") else 0.0)


INTEGER_CASES = sampled((op, dtype) for op in INTEGER_OPS for dtype in INTS)


@pytest.mark.parametrize("op, dtype", INTEGER_CASES, ids=[f"{op}-{d.name}" for op, d in INTEGER_CASES])
def test_integer_function_is_numpys_and_torchs(device, op, dtype):
    a, b = integer_operands(dtype)
    got = ep_binary(device, op, a, b)
    if op == "heaviside":
        want = np.where(a == 0, b, (a > 0).astype(dtype))  # torch's definition; np.heaviside has no integer loop
    else:
        want = getattr(np, NUMPY_NAMES.get(op, op))(a, b)
    assert_same(got, want)
    # Not torch's gcd and lcm: they differ at the most negative value (below), and torch's lcm of
    # int32's minimum and -1 traps (SIGFPE) in its own division.
    if dtype in TORCH_INTS and op not in ("gcd", "lcm"):
        assert_same(got, torch_binary(op, a, b))


INTS_TO_FLOAT = ("atan2", "copysign", "ldexp", "xlogy")
SCALAR_DTYPES = [np.int8, np.uint8, np.bool_, np.float16, np.float32]
SCALARS = [True, 0, 3, -1, 300, 1.5, -0.0, math.nan, math.inf]


def _result_or_error(call):
    try:
        return to_numpy(call()), None
    except (OverflowError, TypeError) as error:
        return None, type(error)


@pytest.mark.parametrize("op", sorted(set(FLOAT_OPS) | set(INTEGER_OPS)))
def test_python_scalars_act_as_arrays_of_their_nep50_dtype(device, op):
    # The array path is checked above; a scalar on either side gives what an array of the dtype
    # NumPy 2 (NEP 50) promotes the pair to gives, or NumPy's OverflowError where it does not fit.
    for dtype in SCALAR_DTYPES:
        array = np.array([0, 1, 2, 5], dtype) if dtype is not np.bool_ else np.array([True, False, True, False])
        for scalar in SCALARS:
            src = np.result_type(array, scalar)
            try:
                full = np.full(array.shape, np.asarray(scalar, src))
            except OverflowError:
                if op not in INTS_TO_FLOAT:  # NumPy's OverflowError, or the TypeError of a refused dtype
                    with pytest.raises((OverflowError, TypeError)):
                        ep.ops.binary(op, to_device(array, device), scalar)
                    continue
                # Integers compute in float32, where the scalar fits (as torch.atan2(int8, 300)).
                src = np.dtype(np.float32)
                full = np.full(array.shape, np.float32(scalar))
            pairs = (((array, scalar), (array.astype(src), full)), ((scalar, array), (full, array.astype(src))))
            for (a, b), (wide_a, wide_b) in pairs:
                want, error = _result_or_error(lambda: ep.ops.binary(op, to_device(wide_a, device), to_device(wide_b, device)))
                args = [to_device(v, device) if isinstance(v, np.ndarray) else v for v in (a, b)]
                if error is not None:
                    with pytest.raises(error):
                        ep.ops.binary(op, *args)
                else:
                    assert_same(to_numpy(ep.ops.binary(op, *args)), want, err_msg=f"{op}({a!r}, {b!r})")


def test_gcd_of_the_most_negative_value_is_numpys(device):
    a = np.array([-128, -128, 6, -128], np.int8)
    b = np.array([6, 0, -128, -128], np.int8)
    # |-128| is 128: gcd(128, 6) = 2, and gcd(128, 0) = 128 wraps to -128 (torch gives -2 for the first).
    assert_same(ep_binary(device, "gcd", a, b), np.gcd(a, b))
    assert_same(ep_binary(device, "gcd", a, b), np.array([2, -128, 2, -128], np.int8))


@pytest.mark.parametrize("op", ["fmax", "fmin", "heaviside"])
def test_bool_operands_are_torchs(device, op):
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    got = ep_binary(device, op, a, b)
    assert got.dtype == BOOL
    assert_same(got, torch_binary(op, a, b))


@pytest.mark.parametrize("op", ["atan2", "copysign", "ldexp", "xlogy"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "int64"])
def test_integer_operands_of_float_functions_compute_in_float32_as_torch(device, op, dtype):
    a = np.array([0, 1, 2, 3, -4, 5], dtype) if dtype != "bool" else np.array([0, 1, 1, 0, 1, 0], bool)
    b = np.array([1, -2, 0, 3, 2, -1], dtype) if dtype != "bool" else np.array([1, 0, 1, 0, 0, 1], bool)
    got = ep_binary(device, op, a, b)
    want = torch_binary(op, a, b)
    assert got.dtype == want.dtype == np.float32
    assert_float_close(got, want, np.float32)


@pytest.mark.parametrize("op", ["hypot", "logaddexp", "logaddexp2", "nextafter"])
def test_integer_operands_torch_refuses_are_refused(device, op):
    a = to_device(np.arange(4, dtype=np.int32), device)
    with pytest.raises(TypeError, match="does not support dtype int32"):
        ep.ops.binary(op, a, a)


@pytest.mark.parametrize("op", ["gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"])
def test_integer_functions_refuse_floats_and_bools(device, op):
    for dtype in (np.float32, np.bool_):
        x = to_device(np.ones(3, dtype), device)
        with pytest.raises(TypeError, match=f"does not support dtype {np.dtype(dtype).name}"):
            ep.ops.binary(op, x, x)


def test_numpys_names_follow_numpy(device):
    a, b = np.array([1.0, -1.0, 0.0, -0.0]), np.array([-0.0, 0.5, -1.0, -1.0])
    assert_same(ep_binary(device, "arctan2", a, b), np.arctan2(a, b))
    # NumPy's arctan2 of int32 computes in float64, torch's atan2 in float32.
    i, j = np.array([1, -2, 3], np.int32), np.array([2, 2, -1], np.int32)
    got = ep_binary(device, "arctan2", i, j)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.arctan2(i, j), rtol=1e-15)
    # NumPy shifts bools as int8.
    t, f = np.array([True, False, True]), np.array([True, True, False])
    assert_same(ep_binary(device, "left_shift", t, f), np.left_shift(t, f))
    assert_same(ep_binary(device, "right_shift", t, f), np.right_shift(t, f))


def test_fused_functions_equal_the_unfused_ops(device):
    rng = np.random.default_rng(3)
    a, b = (to_device(rng.standard_normal(50).astype(np.float32), device) for _ in range(2))
    fused = ep.fuse(lambda x, y: np.logaddexp(np.arctan2(x, y), np.hypot(x, y)) - np.fmax(x, y) * np.copysign(x, y))
    unfused = ep.ops.binary("sub", ep.ops.binary("logaddexp", ep.ops.binary("arctan2", a, b), ep.ops.binary("hypot", a, b)),
                            ep.ops.binary("mul", ep.ops.binary("fmax", a, b), ep.ops.binary("copysign", a, b)))
    assert_same(to_numpy(fused(a, b)), to_numpy(unfused))
    i, j = (to_device(rng.integers(-50, 50, 40).astype(np.int32), device) for _ in range(2))
    fused = ep.fuse(lambda x, y: np.gcd(x, y) + np.lcm(x, 3) + np.left_shift(x, 2) + np.right_shift(y, 1))
    want = np.gcd(to_numpy(i), to_numpy(j)) + np.lcm(to_numpy(i), 3) + np.left_shift(to_numpy(i), 2) + np.right_shift(to_numpy(j), 1)
    assert_same(to_numpy(fused(i, j)), want)
