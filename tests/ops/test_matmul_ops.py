"""ep.ops.matmul against np.matmul and torch.matmul computed here: 1-d operands, broadcast batch
dims, transposed and broadcast views taken without copies, dtype promotion, out=, errors."""
import importlib

import numpy as np
import pytest
import torch
from cublas import skip_without_cublas

import ep
from ep.testing import to_device, to_numpy

TOLERANCE = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}

# (a's shape, b's shape) as np.matmul takes them.
SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((0, 3, 4), (4, 2)),
    ((3, 0), (0, 2)),
    # More than 8 dims that merge to fewer, as NumPy multiplies them.
    ((1,) * 7 + (2, 3, 4), (4, 5)),
    ((2, 1, 3, 1, 2, 2, 3, 4), (1, 5, 3, 2, 1, 2, 4, 5)),
    ((2,) * 9, (2,) * 9),
]


@pytest.fixture(autouse=True)
def cuda_needs_a_gpu(device):
    skip_without_cublas(device)


def close(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    tol = TOLERANCE[expected.dtype.type]
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda t: np.dtype(t).name)
def test_matches_np_matmul(device, shapes, dtype):
    rng = np.random.default_rng(len(shapes[0]))
    a, b = rng.standard_normal(shapes[0]).astype(dtype), rng.standard_normal(shapes[1]).astype(dtype)
    got = to_numpy(ep.ops.matmul(to_device(a, device), to_device(b, device)))
    expected = np.matmul(a, b)
    close(got.reshape(expected.shape), expected)


def test_matches_torch_matmul_on_tensors(device):
    if device != "cpu":
        pytest.skip("PyTorch here is a CPU build")
    a, b = torch.randn(2, 3, 4, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)
    got = ep.ops.matmul(a, b)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, torch.matmul(a, b))
    torch.testing.assert_close(ep.ops.matmul(a.mT, a), torch.matmul(a.mT, a))


def test_transposed_and_broadcast_views_are_not_copied(device, monkeypatch):
    if device != "cpu":
        pytest.skip("views of NumPy arrays")
    rng = np.random.default_rng(0)
    x, y, z = rng.standard_normal((6, 4)), rng.standard_normal((5, 6)), rng.standard_normal((3, 6, 5))

    def refuse(*args, **kwargs):
        raise AssertionError("an operand was copied")

    monkeypatch.setattr(importlib.import_module("ep.ops.matmul"), "contiguous", refuse)
    for a, b in [(x.T, y.T), (x.T, y[1:4].T), (np.broadcast_to(x.T, (3, 4, 6)), z), (x.T[None], y[:, None, :, None])]:
        close(ep.ops.matmul(a, b), np.matmul(a, b))


def test_other_layouts_are_copied_first(device):
    if device != "cpu":
        pytest.skip("views of NumPy arrays")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    for a, b in [(x[:, ::2], x[:4, ::3]), (x[::-1, :], x.T), (np.broadcast_to(x, (2, 6, 8)), np.broadcast_to(x.T, (2, 8, 6)))]:
        close(ep.ops.matmul(a, b), np.matmul(a, b))


def test_dtypes_promote_as_numpy(device):
    a, b = np.ones((2, 3), np.float16), np.ones((3, 2), np.float32)
    got = ep.ops.matmul(to_device(a, device), to_device(b, device))
    assert np.dtype(got.dtype) == np.float32
    # Integers multiply as NumPy's (issue "The ops a PyTorch user reaches for"); bools do not.
    ints = (np.arange(4, dtype=np.int8).reshape(2, 2), np.arange(4, dtype=np.int32).reshape(2, 2))
    got = to_numpy(ep.ops.matmul(*(to_device(x, device) for x in ints)))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.matmul(*ints))
    with pytest.raises(TypeError, match="a, b: dtypes bool and bool multiply in bool; expected float16, float32, float64 or an integer dtype"):
        ep.ops.matmul(to_device(np.ones((2, 2), bool), device), to_device(np.ones((2, 2), bool), device))


def test_out_receives_the_result_even_overlapping_an_input(device):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 4))
    expected = a @ a
    out = to_device(a.copy(), device)
    assert ep.ops.matmul(out, out, out=out) is out
    close(to_numpy(out), expected)
    with pytest.raises(ValueError, match=r"out: has shape \(4, 3\); expected \(4, 4\)"):
        ep.ops.matmul(to_device(a, device), to_device(a, device), out=to_device(np.zeros((4, 3)), device))


@pytest.mark.parametrize(
    "a_shape, b_shape, message",
    [
        ((3, 4), (3, 4), r"a, b: shapes \(3, 4\) and \(3, 4\) do not multiply: a has 4 columns, b has 3 rows"),
        ((4,), (5,), r"a, b: shapes \(4,\) and \(5,\) do not multiply"),
        ((2, 3, 4), (3, 4, 5), r"a, b: shapes \(2, 3, 4\) and \(3, 4, 5\) do not broadcast"),
    ],
)
def test_shape_mismatch_names_a_and_b(device, a_shape, b_shape, message):
    with pytest.raises(ValueError, match=message):
        ep.ops.matmul(to_device(np.ones(a_shape), device), to_device(np.ones(b_shape), device))


def test_scalars_and_0d_arrays_are_refused(device):
    with pytest.raises(ValueError, match="a: 2.0 is a scalar"):
        ep.ops.matmul(2.0, to_device(np.ones(3), device))
    if device == "cpu":
        with pytest.raises(ValueError, match=r"b: is 0-d \(shape \(\)\)"):
            ep.ops.matmul(np.ones(3), np.ones(()))
