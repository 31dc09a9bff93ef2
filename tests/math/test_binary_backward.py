"""The ...BackwardWithDyX/DyY ops: dy * f'(x) against NumPy derivatives written here in float64.

Each case has the forward function and its derivative in NumPy; the derivative is itself checked
against central differences of the forward, so a wrong reference cannot hide a wrong kernel.
...WithDyY ops get y = f(x) rounded to the dtype, and their reference is a function of that y.
"""
import math
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import ep
from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.testing import to_device, to_numpy

FLOATS = [np.float16, np.float32, np.float64]
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)

erf = np.vectorize(math.erf, otypes=[float])
lgamma = np.vectorize(math.lgamma, otypes=[float])


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(np.minimum(x * beta, threshold))) / beta)


def fast_gelu_parts(x):
    t = np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3))
    return t, SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x**2)


@dataclass
class Case:
    """forward(x, *attrs) and derivative(v, *attrs) = f' as a function of v (x, or y for DyY ops)."""

    forward: Callable
    derivative: Callable
    domain: tuple[float, float] = (-6.0, 6.0)
    attrs: tuple = ()
    forward_attrs: tuple | None = None  # when the forward takes other attributes than the backward
    cancels: bool = False  # f' crosses 0 as a difference of terms: compare with an absolute floor too


CASES = {
    "identity_backward_with_dy_x": Case(lambda x: x, lambda x: np.ones_like(x)),
    "elu_backward_with_dy_x": Case(
        lambda x, a: np.where(x > 0, x, a * np.expm1(x)), lambda x, a: np.where(x > 0, 1, a * np.exp(x)), attrs=(0.7,)
    ),
    "celu_backward_with_dy_y": Case(
        lambda x, a: np.where(x > 0, x, a * np.expm1(x / a)), lambda y, a: np.where(y > 0, 1, y / a + 1), attrs=(1.3,)
    ),
    "gelu_backward_with_dy_x": Case(
        lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2))),
        lambda x: 0.5 * (1 + erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi),
        cancels=True,
    ),
    "hardswish_backward_with_dy_x": Case(
        lambda x: x * np.clip(x + 3, 0, 6) / 6, lambda x: np.where(x <= -3, 0, np.where(x >= 3, 1, x / 3 + 0.5))
    ),
    "hardsigmoid_backward_with_dy_x": Case(
        lambda x: np.clip(x + 3, 0, 6) / 6, lambda x: np.where((x <= -3) | (x >= 3), 0, 1 / 6)
    ),
    "hardshrink_backward_with_dy_y": Case(
        lambda x, lambd: np.where(np.abs(x) <= lambd, 0, x), lambda y: np.where(y == 0, 0, 1), forward_attrs=(0.5,)
    ),
    "hardtanh_backward_with_dy_y": Case(
        lambda x, lo, hi: np.clip(x, lo, hi), lambda y, lo, hi: np.where((y == lo) | (y == hi), 0, 1), attrs=(-0.5, 2.0)
    ),
    "leaky_relu_backward_with_dy_x": Case(
        lambda x, a: np.where(x > 0, x, a * x), lambda x, a: np.where(x > 0, 1, a), attrs=(0.2,)
    ),
    "mish_backward_with_dy_x": Case(
        lambda x: x * np.tanh(softplus(x)),
        lambda x: np.tanh(softplus(x)) + x * (1 - np.tanh(softplus(x)) ** 2) * sigmoid(x),
        cancels=True,
    ),
    "relu_backward_with_dy_y": Case(lambda x: np.maximum(x, 0), lambda y: np.where(y <= 0, 0, 1)),
    "relu_backward_with_dy_x": Case(lambda x: np.maximum(x, 0), lambda x: np.where(x <= 0, 0, 1)),
    "selu_backward_with_dy_x": Case(
        lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
        lambda x: SELU_SCALE * np.where(x > 0, 1, SELU_ALPHA * np.exp(x)),
    ),
    "silu_backward_with_dy_x": Case(
        lambda x: x * sigmoid(x), lambda x: sigmoid(x) * (1 + x * (1 - sigmoid(x))), cancels=True
    ),
    "softsign_backward_with_dy_x": Case(lambda x: x / (1 + np.abs(x)), lambda x: 1 / (1 + np.abs(x)) ** 2),
    "softplus_backward_with_dy_x": Case(
        softplus, lambda x, beta, th: np.where(x * beta > th, 1, sigmoid(beta * x)), attrs=(2.0, 3.0)
    ),
    "softshrink_backward_with_dy_y": Case(
        lambda x, a: np.where(x > a, x - a, np.where(x < -a, x + a, 0)),
        lambda y: np.where(y == 0, 0, 1),
        forward_attrs=(0.5,),
    ),
    "tanh_backward_with_dy_y": Case(np.tanh, lambda y: (1 - y) * (1 + y)),
    "tanh_backward_with_dy_x": Case(np.tanh, lambda x: 1 / np.cosh(x) ** 2),
    "threshold_backward_with_dy_x": Case(
        lambda x, th, value: np.where(x <= th, value, x),
        lambda x, th: np.where(x <= th, 0, 1),
        attrs=(0.25,),
        forward_attrs=(0.25, -1.0),
    ),
    "sigmoid_backward_with_dy_y": Case(sigmoid, lambda y: y * (1 - y)),
    "sigmoid_backward_with_dy_x": Case(sigmoid, lambda x: sigmoid(x) * (1 - sigmoid(x))),
    "square_relu_backward_with_dy_x": Case(lambda x: np.maximum(x, 0) ** 2, lambda x: 2 * np.maximum(x, 0)),
    "fast_gelu_backward_with_dy_x": Case(
        lambda x: 0.5 * x * (1 + fast_gelu_parts(x)[0]),
        lambda x: 0.5 * (1 + fast_gelu_parts(x)[0]) + 0.5 * x * (1 - fast_gelu_parts(x)[0] ** 2) * fast_gelu_parts(x)[1],
        cancels=True,
    ),
    "quick_gelu_backward_with_dy_x": Case(
        lambda x: x * sigmoid(1.702 * x),
        lambda x: sigmoid(1.702 * x) + 1.702 * x * sigmoid(1.702 * x) * (1 - sigmoid(1.702 * x)),
        cancels=True,
    ),
    "abs_backward_with_dy_x": Case(np.abs, np.sign),
    "acos_backward_with_dy_x": Case(np.arccos, lambda x: -1 / np.sqrt(1 - x * x), (-0.95, 0.95)),
    "acosh_backward_with_dy_x": Case(np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), (1.05, 6.0)),
    "asin_backward_with_dy_x": Case(np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.95, 0.95)),
    "asinh_backward_with_dy_x": Case(np.arcsinh, lambda x: 1 / np.sqrt(1 + x * x)),
    "atan_backward_with_dy_x": Case(np.arctan, lambda x: 1 / (1 + x * x)),
    "atanh_backward_with_dy_x": Case(np.arctanh, lambda x: 1 / (1 - x * x), (-0.95, 0.95)),
    "cos_backward_with_dy_x": Case(np.cos, lambda x: -np.sin(x)),
    "cosh_backward_with_dy_x": Case(np.cosh, np.sinh),
    "erf_backward_with_dy_x": Case(erf, lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), (-3.0, 3.0)),
    "erfc_backward_with_dy_x": Case(lambda x: 1 - erf(x), lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x), (-3.0, 3.0)),
    "exp_backward_with_dy_x": Case(np.exp, np.exp),
    "exp2_backward_with_dy_x": Case(np.exp2, lambda x: np.exp2(x) * math.log(2)),
    "expm1_backward_with_dy_x": Case(np.expm1, np.exp),
    "log_backward_with_dy_x": Case(np.log, lambda x: 1 / x, (0.1, 10.0)),
    "log2_backward_with_dy_x": Case(np.log2, lambda x: 1 / (x * math.log(2)), (0.1, 10.0)),
    "log10_backward_with_dy_x": Case(np.log10, lambda x: 1 / (x * math.log(10)), (0.1, 10.0)),
    "log1p_backward_with_dy_x": Case(np.log1p, lambda x: 1 / (1 + x), (-0.9, 10.0)),
    "log_sigmoid_backward_with_dy_x": Case(lambda x: -softplus(-x), lambda x: 1 / (1 + np.exp(x))),
    "reciprocal_backward_with_dy_x": Case(lambda x: 1 / x, lambda x: -1 / (x * x), (0.2, 5.0)),
    "reciprocal_no_nan_backward_with_dy_x": Case(lambda x: 1 / x, lambda x: -1 / (x * x), (0.2, 5.0)),
    "rsqrt_backward_with_dy_x": Case(lambda x: x**-0.5, lambda x: -0.5 * x**-1.5, (0.1, 10.0)),
    "sin_backward_with_dy_x": Case(np.sin, np.cos),
    "sinh_backward_with_dy_x": Case(np.sinh, np.cosh),
    "sqrt_backward_with_dy_x": Case(np.sqrt, lambda x: 0.5 / np.sqrt(x), (0.1, 10.0)),
    "square_backward_with_dy_x": Case(np.square, lambda x: 2 * x),
    "tan_backward_with_dy_x": Case(np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.4, 1.4)),
}


def digamma_at(points):
    """psi at integers and half-integers (any sign), from the series that define it there exactly."""
    out = []
    for p in points:
        if p == round(p):
            out.append(-np.euler_gamma + sum(1 / k for k in range(1, int(p))))
        else:
            # psi(n + 1/2) = -gamma - 2 ln 2 + sum 2 / (2k - 1); psi(1/2 - n) = psi(1/2 + n).
            n = int(abs(p - 0.5)) if p > 0 else int(0.5 - p)
            out.append(-np.euler_gamma - 2 * math.log(2) + sum(2 / (2 * k - 1) for k in range(1, n + 1)))
    return np.array(out)


def trigamma_at(points):
    """psi' at positive integers and at half-integers of any sign, exactly as above."""
    out = []
    for p in points:
        if p == round(p):
            out.append(math.pi**2 / 6 - sum(1 / k**2 for k in range(1, int(p))))
        else:
            n = int(abs(p - 0.5)) if p > 0 else int(0.5 - p)
            value = math.pi**2 / 2 - 4 * sum(1 / (2 * k - 1) ** 2 for k in range(1, n + 1))
            # psi'(1/2 - n) = pi^2 / sin^2(pi (n + 1/2)) - psi'(n + 1/2) = pi^2 - psi'(n + 1/2).
            out.append(value if p > 0 else math.pi**2 - value)
    return np.array(out)


def lgamma_slope(x, h=1e-5):
    """digamma as the central difference of lgamma (good to about 1e-9 here)."""
    return (lgamma(x + h) - lgamma(x - h)) / (2 * h)


def lgamma_curvature(x, h=2e-3):
    """trigamma as lgamma's second difference, Richardson-extrapolated (good to about 1e-8 here)."""

    def second(step):
        return (lgamma(x + step) - 2 * lgamma(x) + lgamma(x - step)) / step**2

    return (4 * second(h / 2) - second(h)) / 3


SPECIAL_POINTS = np.array([1.0, 2.0, 3.0, 5.0, 9.0, 0.5, 1.5, 2.5, 7.5, -0.5, -1.5, -3.5])
CASES["lgamma_backward_with_dy_x"] = Case(None, digamma_at)
CASES["digamma_backward_with_dy_x"] = Case(None, trigamma_at)


def tolerances(dtype):
    """(rtol, atol): ElementwiseUnary's accuracy, float16 as one rounding of the float32 result."""
    return {2: (2.0**-10, 2.0**-24), 4: (2e-6, 1e-30), 8: (1e-12, 1e-300)}[np.dtype(dtype).itemsize]


def inputs(name, dtype, n=32):
    """(dy, v, v as float64) for an op: v is x in the case's domain, or y = f(x) for ...WithDyY."""
    case = CASES[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dy = rng.uniform(-2, 2, n).astype(dtype)
    if case.forward is None:
        x = SPECIAL_POINTS.astype(dtype)
        dy = dy[: x.size]
    else:
        x = rng.uniform(*case.domain, n).astype(dtype)
    v = x
    if name.endswith("_dy_y"):
        attrs = case.forward_attrs if case.forward_attrs is not None else case.attrs
        v = case.forward(x.astype(np.float64), *attrs).astype(dtype)
    return dy, v, v.astype(np.float64)


def launch(device, name, dy, v, attrs):
    primitive = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, name, dy.dtype, dy.dtype, 8, *attrs)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    src0, src1 = to_device(dy, device), to_device(v, device)
    dst = to_device(np.zeros_like(dy), device)
    primitive.Launch(stream, dy.shape, src0, v.shape, src1, dst)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(src1), v)
    return to_numpy(dst)


def assert_derivative(got, dy, v64, name, dtype):
    case = CASES[name]
    # The attributes as the kernel gets them: in the float compute dtype.
    attrs = [np.float64(np.float32(a)) if dtype != np.float64 else a for a in case.attrs]
    expected = dy.astype(np.float64) * case.derivative(v64, *attrs)
    rtol, atol = tolerances(dtype)
    if case.cancels:
        # Near a zero of f' its terms cancel: the error is relative to their size, not to f'.
        atol = np.maximum(atol, 4 * rtol * np.abs(dy.astype(np.float64)) * (1 + np.abs(v64)))
    error = np.abs(got.astype(np.float64) - expected)
    bad = ~(error <= atol + rtol * np.abs(expected))
    assert not bad.any(), f"{name} {np.dtype(dtype)}: at v={v64[bad]} got {got[bad]}, expected {expected[bad]}"



def test_every_backward_op_has_a_case():
    backward = {op.value for op in BINARY_FUNCTORS if "backward" in op.value}
    assert backward == set(CASES)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.forward is not None])
def test_reference_derivative_matches_central_differences(name):
    case = CASES[name]
    x = np.random.default_rng(0).uniform(*case.domain, 64)
    forward_attrs = case.forward_attrs if case.forward_attrs is not None else case.attrs
    h = 1e-6 * np.maximum(1, np.abs(x))
    numeric = (case.forward(x + h, *forward_attrs) - case.forward(x - h, *forward_attrs)) / (2 * h)
    v = case.forward(x, *forward_attrs) if name.endswith("_dy_y") else x
    np.testing.assert_allclose(case.derivative(v, *case.attrs), numeric, rtol=1e-6, atol=1e-8)


def test_special_function_references_match_central_differences():
    x = np.array([1.0, 2.5, 7.5, -0.5, -2.5])
    np.testing.assert_allclose(digamma_at(x), lgamma_slope(x), rtol=1e-7)
    np.testing.assert_allclose(trigamma_at(x), lgamma_curvature(x), rtol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(CASES))
def test_backward_matches_numpy_derivative(device, name, dtype):
    dy, v, v64 = inputs(name, dtype)
    got = launch(device, name, dy, v, CASES[name].attrs)
    assert got.dtype == dtype
    assert_derivative(got, dy, v64, name, dtype)


@pytest.mark.parametrize("name", ["lgamma_backward_with_dy_x", "digamma_backward_with_dy_x"])
def test_special_function_backward_at_random_points(device, name):
    x = np.random.default_rng(3).uniform(0.3, 8.0, 24).astype(np.float32)
    x64 = x.astype(np.float64)
    expected = lgamma_slope(x64) if name.startswith("lgamma") else lgamma_curvature(x64)
    got = launch(device, name, np.ones_like(x), x, ())
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-8)


@pytest.mark.parametrize(
    "name, defaults",
    [
        ("elu_backward_with_dy_x", (1.0,)),
        ("celu_backward_with_dy_y", (1.0,)),
        ("hardtanh_backward_with_dy_y", (-1.0, 1.0)),
        ("leaky_relu_backward_with_dy_x", (0.01,)),
        ("softplus_backward_with_dy_x", (1.0, 20.0)),
    ],
)
def test_attribute_defaults_are_pytorchs(device, name, defaults):
    case = CASES[name]
    x = np.linspace(-25, 25, 41)
    v = case.forward(x, *defaults) if name.endswith("_dy_y") else x
    dy = np.linspace(0.5, 1.5, 41)
    expected = dy * case.derivative(v, *defaults)
    np.testing.assert_allclose(launch(device, name, dy, v, ()), expected, rtol=1e-12)


def test_threshold_backward_needs_its_threshold():
    with pytest.raises(ValueError, match="needs threshold"):
        ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, "cpu", "threshold_backward_with_dy_x", np.float32, np.float32)


def test_backward_with_broadcast_dy(device):
    # A derivative on the general path: dy of shape (3, 1, 4) against x of shape (2, 4).
    x = np.random.default_rng(5).uniform(-3, 3, (2, 4)).astype(np.float32)
    dy = np.random.default_rng(6).uniform(-1, 1, (3, 1, 4)).astype(np.float32)
    got = to_numpy(ep.ops.binary("sigmoid_backward_with_dy_x", to_device(dy, device), to_device(x, device)))
    expected = dy.astype(np.float64) * CASES["sigmoid_backward_with_dy_x"].derivative(x.astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=2e-6)
