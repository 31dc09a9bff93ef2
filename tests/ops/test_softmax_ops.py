"""ep.ops.softmax, log_softmax, softmax_grad and log_softmax_grad against torch (and autograd's
gradients) computed here: every dim of a 3-d array, non-contiguous inputs, 0-d, out=, torch in and
out, float16; bad arguments named."""
import numpy as np
import pytest
import torch

import ep
from ep.testing import to_device, to_numpy

OPS = {"softmax": torch.softmax, "log_softmax": torch.log_softmax}


def grads(name: str, x: np.ndarray, dy: np.ndarray, dim: int):
    """(y, autograd's dx) of torch's op over dim, in float64."""
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    y = OPS[name](tx, dim)
    y.backward(torch.from_numpy(dy.astype(np.float64)))
    return y.detach().numpy(), tx.grad.numpy()


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("name", list(OPS))
def test_every_dim_matches_torch(device, name, dim):
    rng = np.random.default_rng(dim + 5)
    x = (rng.standard_normal((3, 4, 5)) * 1e3).astype(np.float32)
    dy = rng.standard_normal((3, 4, 5)).astype(np.float32)
    y, dx = grads(name, x, dy, dim)
    got = to_numpy(getattr(ep.ops, name)(to_device(x, device), dim=dim))
    np.testing.assert_allclose(got, y, rtol=2e-5, atol=2e-5 * np.abs(y).max())
    y32 = y.astype(np.float32)
    got_dx = to_numpy(getattr(ep.ops, name + "_grad")(to_device(y32, device), to_device(dy, device), dim))
    np.testing.assert_allclose(got_dx, grads(name, x, dy, dim)[1], rtol=1e-4, atol=1e-5)


def test_strided_input_float16_and_out(device):
    x = np.random.default_rng(0).standard_normal((6, 8)).astype(np.float16)
    view = to_device(x, device)[::2, 1::2]
    out = to_device(np.zeros((3, 4), np.float16), device)
    result = ep.ops.softmax(view, 0, out=out)
    assert result is out
    expected = torch.softmax(torch.from_numpy(x[::2, 1::2].astype(np.float64)), 0).numpy()
    np.testing.assert_allclose(to_numpy(out).astype(np.float64), expected, rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("name", list(OPS))
def test_dtype_casts_x_first_as_torch(device, name):
    x = (np.arange(12).reshape(3, 4) / 7).astype(np.float16)
    for source, dtype, torch_dtype in ((x, np.float32, torch.float32), (x, np.float64, torch.float64), (np.arange(4), np.float32, torch.float32)):
        got = to_numpy(getattr(ep.ops, name)(to_device(source, device), 0, dtype=dtype))
        want = OPS[name](torch.from_numpy(source), 0, dtype=torch_dtype).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match="dtype: int32; expected a float dtype"):
        getattr(ep.ops, name)(to_device(x, device), 0, dtype=np.int32)


def test_in_place_out():
    x = np.random.default_rng(1).standard_normal((2, 7)).astype(np.float64)
    expected = torch.log_softmax(torch.from_numpy(x), 1).numpy()
    assert ep.ops.log_softmax(x, out=x) is x
    np.testing.assert_allclose(x, expected, rtol=1e-12)


def test_zero_d_and_empty():
    assert ep.ops.softmax(np.array(3.0, np.float32)) == 1.0
    assert ep.ops.log_softmax(np.zeros((0, 3), np.float32), 0).shape == (0, 3)


def test_torch_in_torch_out():
    t = torch.randn(3, 5, dtype=torch.float64)
    result = ep.ops.softmax(t.t(), dim=0)
    assert isinstance(result, torch.Tensor)
    torch.testing.assert_close(result, torch.softmax(t.t(), 0))


def test_bad_arguments_are_named():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(IndexError, match=r"dim: 2 is out of range for an array of 2 dims; expected -2 <= dim < 2"):
        ep.ops.softmax(x, 2)
    with pytest.raises(TypeError, match=r"dim: 1.0 is not an integer"):
        ep.ops.softmax(x, 1.0)
    with pytest.raises(TypeError, match=r"x: softmax takes float16, float32 or float64; got int32"):
        ep.ops.softmax(np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"dy: has shape \(3, 2\) and dtype float32; expected y's, \(2, 3\) and float32"):
        ep.ops.softmax_grad(x, np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"out: has shape \(3,\); expected \(2, 3\)"):
        ep.ops.log_softmax(x, out=np.empty(3, np.float32))
