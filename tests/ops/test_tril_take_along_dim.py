"""ep.ops.tril, triu and take_along_dim against PyTorch: diagonals, batches, dtypes, broadcast
indices, dim=None, negative indices, out= and bad arguments, on each device."""
import ml_dtypes
import numpy as np
import pytest
import torch

import ep
import ep.ops
from ep.testing import to_device, to_numpy

X = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("diagonal", [-5, -1, 0, 2, 9])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles_match_pytorch(device, name, diagonal):
    got = getattr(ep.ops, name)(to_device(X, device), diagonal)
    np.testing.assert_array_equal(to_numpy(got), getattr(torch, name)(torch.from_numpy(X), diagonal).numpy())


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint64, np.float16, ml_dtypes.bfloat16])
def test_triangles_keep_the_dtype(device, dtype):
    x = (X * 3).astype(dtype)
    got = to_numpy(ep.ops.triu(to_device(x, device), 1))
    assert got.dtype == np.dtype(dtype)
    expected = np.where(np.arange(5) - np.arange(4)[:, None] >= 1, x, np.zeros((), dtype))
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def test_triangles_refuse_bad_arguments_and_take_out(device):
    with pytest.raises(ValueError, match="x: has 1 dims; tril expects at least 2"):
        ep.ops.tril(to_device(np.ones(3, np.float32), device))
    with pytest.raises(TypeError, match="diagonal"):
        ep.ops.triu(to_device(X, device), 1.5)
    out = to_device(np.zeros(X.shape, np.float32), device)
    assert ep.ops.tril(to_device(X, device), out=out) is out
    np.testing.assert_array_equal(to_numpy(out), np.tril(X))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_take_along_dim_matches_pytorch(device, dim):
    rng = np.random.default_rng(1)
    shape = list(X.shape)
    shape[dim] = 7
    indices = rng.integers(0, X.shape[dim], shape)
    got = ep.ops.take_along_dim(to_device(X, device), to_device(indices, device), dim)
    np.testing.assert_array_equal(to_numpy(got), torch.take_along_dim(torch.from_numpy(X), torch.from_numpy(indices), dim).numpy())


def test_take_along_dim_broadcasts_and_flattens(device):
    indices = np.array([[[3], [0], [1]]])  # (1, 3, 1): broadcast against X's (2, _, 5)
    got = ep.ops.take_along_dim(to_device(X, device), to_device(indices, device), 1)
    np.testing.assert_array_equal(to_numpy(got), torch.take_along_dim(torch.from_numpy(X), torch.from_numpy(indices), 1).numpy())
    flat = np.array([39, 0, 7, 7])
    got = ep.ops.take_along_dim(to_device(X, device), to_device(flat, device))
    np.testing.assert_array_equal(to_numpy(got), X.ravel()[flat])
    # Negative indices count from the end, as np.take_along_axis's.
    negative = np.array([[[-1, 0, -4, 1, 2]]])
    got = ep.ops.take_along_dim(to_device(X, device), to_device(negative, device), 1)
    np.testing.assert_array_equal(to_numpy(got), np.take_along_axis(X, np.broadcast_to(negative, (2, 1, 5)), 1))


def test_take_along_dim_refuses_bad_indices(device):
    x = to_device(X, device)
    with pytest.raises(ValueError, match="indices: has 2 dims; expected input's 3"):
        ep.ops.take_along_dim(x, to_device(np.zeros((2, 4), np.int64), device), 1)
    with pytest.raises(ValueError, match="broadcasts with input"):
        ep.ops.take_along_dim(x, to_device(np.zeros((3, 2, 5), np.int64), device), 1)
    with pytest.raises(IndexError):
        ep.ops.take_along_dim(x, to_device(np.full((2, 1, 5), 4), device), 1)
        ep.GetDevice(device).default_stream.Sync()
