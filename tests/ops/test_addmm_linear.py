"""ep.ops.addmm and linear against torch.addmm and torch.nn.functional.linear computed here, on each
device (float matrices need cuBLAS: on the simulator only the integer ones run): alpha and beta,
a broadcast input and bias, beta 0 ignoring NaN, integer matrices, out= being the input, and errors."""
import numpy as np
import pytest
from cublas import skip_without_cublas

import ep
import ep.ops
from ep.testing import to_device, to_numpy

torch = pytest.importorskip("torch")


def _floats_run_here(device):
    skip_without_cublas(device)


def _t(x):
    return torch.from_numpy(x)


@pytest.mark.parametrize("input_shape", [(3, 5), (5,), (1, 5), (3, 1)])
@pytest.mark.parametrize("alpha, beta", [(1, 1), (2.0, 0.5), (-1.5, 0)])
def test_addmm_is_torchs(device, input_shape, alpha, beta):
    _floats_run_here(device)
    rng = np.random.default_rng(0)
    m1, m2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    inp = rng.standard_normal(input_shape)
    got = to_numpy(ep.ops.addmm(*(to_device(x, device) for x in (inp, m1, m2)), beta=beta, alpha=alpha))
    np.testing.assert_allclose(got, torch.addmm(_t(inp), _t(m1), _t(m2), beta=beta, alpha=alpha).numpy(), rtol=1e-12, atol=1e-12)


def test_addmm_with_beta_zero_reads_no_input(device):
    _floats_run_here(device)
    m1, m2 = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    nan = np.full((2, 2), np.nan, np.float32)
    got = to_numpy(ep.ops.addmm(*(to_device(x, device) for x in (nan, m1, m2)), beta=0))
    np.testing.assert_array_equal(got, np.full((2, 2), 3, np.float32))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_addmm_of_integers_wraps_as_torch(device, dtype):
    rng = np.random.default_rng(1)
    m1, m2, inp = (rng.integers(-100, 100, shape).astype(dtype) for shape in ((3, 4), (4, 2), (3, 2)))
    got = to_numpy(ep.ops.addmm(*(to_device(x, device) for x in (inp, m1, m2)), beta=3, alpha=-2))
    want = torch.addmm(_t(inp), _t(m1), _t(m2), beta=3, alpha=-2).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="alpha: 0.5 is a float; integer matrices take an integer alpha"):
        ep.ops.addmm(*(to_device(x, device) for x in (inp, m1, m2)), alpha=0.5)


def test_addmm_into_its_own_input(device):
    _floats_run_here(device)
    rng = np.random.default_rng(2)
    m1, m2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    inp = rng.standard_normal((3, 5))
    out = to_device(inp, device)
    assert ep.ops.addmm(out, to_device(m1, device), to_device(m2, device), beta=2, out=out) is out
    np.testing.assert_allclose(to_numpy(out), 2 * inp + m1 @ m2, rtol=1e-12)


@pytest.mark.parametrize("x_shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_is_torchs(device, x_shape, with_bias):
    _floats_run_here(device)
    rng = np.random.default_rng(3)
    x, weight, bias = rng.standard_normal(x_shape), rng.standard_normal((6, 4)), rng.standard_normal(6)
    args = (x, weight, bias) if with_bias else (x, weight)
    got = to_numpy(ep.ops.linear(*(to_device(a, device) for a in args)))
    want = torch.nn.functional.linear(*(_t(a) for a in args)).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_bad_shapes_are_named(device):
    m = to_device(np.ones((2, 3)), device)
    with pytest.raises(ValueError, match=r"mat1: has shape \(3,\); expected a matrix"):
        ep.ops.addmm(m, to_device(np.ones(3), device), m)
    with pytest.raises(ValueError, match="mat1, mat2: shapes"):
        ep.ops.addmm(m, m, m)
    with pytest.raises(ValueError, match=r"weight: has shape \(1, 2, 3\)"):
        ep.ops.linear(m, to_device(np.ones((1, 2, 3)), device))
