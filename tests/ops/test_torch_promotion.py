"""PyTorch's names of its math functions on integer and bool inputs compute what torch computes (in
float32, its default dtype), OneFlow's names of the same ops refuse them, and PyTorch's rounding
returns integers as they are (bools refused, as torch refuses them): against torch computed here,
on each device, through ep.ops and ep.fuse."""
import numpy as np
import pytest

import ep
import ep.ops
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.testing import to_device, to_numpy

torch = pytest.importorskip("torch")

FLOAT_FUNCTIONS = sorted(op.value for op, record in UNARY_FUNCTORS.items() if record.ints_to_float)
INTEGERS = ("bool", "int8", "uint8", "int32", "int64")


def _values(dtype: str, extremes: bool = True) -> np.ndarray:
    if dtype == "bool":
        return np.array([True, False, True])
    info = np.iinfo(dtype)
    values = (0, 1, 2, 3, -1, -7, 100) + ((info.min, info.max) if extremes else ())
    return np.array([v for v in values if info.min <= v <= info.max], dtype)


def _torch(name: str, x: np.ndarray):
    """torch's function of name (torch's, or torch.nn.functional's: softsign for soft_sign) on x, or
    the exception it raises."""
    function = getattr(torch, name, None) or getattr(torch.nn.functional, name.replace("_", ""))
    try:
        return function(torch.from_numpy(x)).numpy()
    except Exception as error:  # noqa: BLE001 - torch's refusal is the expected result
        return error


def _same(got: np.ndarray, want: np.ndarray, atol: float = 0) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=atol, equal_nan=True)


def test_the_float_functions_are_torchs():
    assert len(FLOAT_FUNCTIONS) >= 25 and {"exp", "sqrt", "acos", "sigmoid", "tanh", "reciprocal"} <= set(FLOAT_FUNCTIONS)


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
def test_math_function_of_integers_computes_as_torch(device, name, dtype):
    # torch's softsign adds 1 + |x| in the integer dtype, wrapping at its extremes (documented).
    x = _values(dtype, extremes=name != "soft_sign")
    want = _torch(name, x)
    if isinstance(want, Exception):  # torch's softsign of bool: torch.abs has no bool kernel
        with pytest.raises(TypeError, match=f"does not support dtype {dtype}"):
            ep.ops.unary(name, to_device(x, device))
        return
    # sinc at the integers is a cancellation (sin(pi * n) of the rounded product), where the
    # simulator, which computes float32 in float64, gives 4e-17 for torch's -3e-8.
    _same(to_numpy(ep.ops.unary(name, to_device(x, device))), want, atol=1e-7 if name == "sinc" else 0)
    kname = "k" + ep.UnaryOp(name).name[1:]
    with pytest.raises(TypeError, match=f"does not support dtype {dtype}"):
        ep.ops.unary(kname, to_device(x, device))


@pytest.mark.parametrize("name", ["exp", "sqrt", "acos", "sigmoid"])
def test_fused_math_of_integers_computes_as_torch(device, name):
    x = _values("int32")
    fused = ep.fuse(lambda a: ep.ops.unary(name, a))
    _same(to_numpy(fused(to_device(x, device))), _torch(name, x))


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("name", ["ceil", "floor", "round", "trunc"])
def test_rounding_of_integers_returns_them_as_torch(device, name, dtype):
    x = _values(dtype)
    want = _torch(name, x)
    if isinstance(want, Exception):
        with pytest.raises(TypeError, match=f"does not support dtype {dtype}"):
            ep.ops.unary(name, to_device(x, device))
        return
    got = to_numpy(ep.ops.unary(name, to_device(x, device)))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    fused = to_numpy(ep.fuse(lambda a: ep.ops.unary(name, a) + 1)(to_device(x, device)))
    np.testing.assert_array_equal(fused, want + np.ones((), want.dtype))


@pytest.mark.parametrize("dtype", INTEGERS + ("float16", "float32"))
def test_div_is_torch_div(device, dtype):
    # torch.div divides integers and bools in float32; OneFlow's kDiv truncates them.
    signed = np.dtype(dtype).kind != "u"
    a = np.array([7, -7 if signed else 9, 5, 0, 1, 3]).astype(dtype)
    b = np.array([2, 2, -2 if signed else 4, 3, 1, 1]).astype(dtype)
    want = torch.div(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    got = to_numpy(ep.ops.binary("div", to_device(a, device), to_device(b, device)))
    _same(got, want)
    _same(to_numpy(ep.fuse(lambda x, y: ep.ops.binary("div", x, y))(to_device(a, device), to_device(b, device))), want)
    if dtype in ("int8", "int32"):
        np.testing.assert_array_equal(to_numpy(ep.ops.binary("kDiv", to_device(a, device), to_device(b, device))), np.trunc(a / b).astype(dtype))


@pytest.mark.parametrize("dtype", ("int8", "int32", "int64"))
@pytest.mark.parametrize("name, attrs", [("hardtanh", (-1.5, 2.5)), ("hardtanh", (-2.7, -0.5)), ("threshold", (-1.5, -100.9)), ("threshold", (2.5, 7.9))])
def test_integer_clamps_truncate_their_bounds_as_torch(device, dtype, name, attrs):
    # Negative fractional bounds tell truncation toward zero (-1.5 -> -1) from flooring (-2).
    x = np.arange(-5, 6).astype(dtype)
    want = getattr(torch.nn.functional, name)(torch.from_numpy(x), *attrs).numpy()
    got = to_numpy(ep.ops.unary(name, to_device(x, device), *attrs))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
