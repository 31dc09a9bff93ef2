"""ep.ops' scans (cumsum, cumprod, cummax, cummin, logcumsumexp) against PyTorch: dims, dtypes and
dtype=, strided and 0-d inputs, out= (in place too), other libraries' arrays and bad arguments."""
import numpy as np
import pytest
import torch

import ep
import ep.ops
from ep.testing import to_device, to_numpy

X = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)


def compare(got, expected):
    got = to_numpy(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, expected.shape, got.dtype, expected.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
def test_matches_pytorch(device, name, dim):
    compare(getattr(ep.ops, name)(to_device(X, device), dim), getattr(torch, name)(torch.from_numpy(X), dim).numpy())


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_values_and_indices_match_pytorch(device, name, dim):
    x = np.round(X * 2)  # ties: the last index wins, as in torch
    x[1, 2, 3] = np.nan
    got = getattr(ep.ops, name)(to_device(x, device), dim)
    expected = getattr(torch, name)(torch.from_numpy(x), dim)
    compare(got.values, expected.values.numpy())
    compare(got.indices, expected.indices.numpy())
    values, indices = got  # a pair, as torch's named tuple
    assert values is got.values and indices is got.indices


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_each_value_is_its_indexs_element_zeros_of_both_signs_included(device, name, dtype):
    # Of equal values the later wins, in values as in indices: -0.0 after 0.0 is -0.0, as torch's.
    x = np.array([[-1.0, 0.0, -0.0, 0.0, -0.0, 2.0], [1.0, -0.0, 0.0, -0.0, np.nan, 0.0]], dtype)
    values, indices = (to_numpy(a) for a in getattr(ep.ops, name)(to_device(x, device), 1))
    expected = getattr(torch, name)(torch.from_numpy(x), 1)
    np.testing.assert_array_equal(indices, expected.indices.numpy())
    taken = np.take_along_axis(x, indices, 1)
    np.testing.assert_array_equal(values, taken)
    np.testing.assert_array_equal(np.signbit(values), np.signbit(taken))
    np.testing.assert_array_equal(np.signbit(values), np.signbit(expected.values.numpy()))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16])
def test_dtypes_follow_pytorch(device, dtype):
    x = (X * 3).astype(dtype)
    t = torch.from_numpy(x)
    for name in ("cumsum", "cumprod"):
        compare(getattr(ep.ops, name)(to_device(x, device), 1), getattr(torch, name)(t, 1).numpy())
    got = ep.ops.cummax(to_device(x, device), 2)
    compare(got.values, torch.cummax(t, 2).values.numpy())
    compare(got.indices, torch.cummax(t, 2).indices.numpy())
    compare(ep.ops.cumsum(to_device(x, device), 0, dtype=np.float32), torch.cumsum(t, 0, dtype=torch.float32).numpy())
    if dtype != np.float16:
        with pytest.raises(TypeError, match="logcumsumexp of"):
            ep.ops.logcumsumexp(to_device(x, device), 0)


def test_strided_and_0d_inputs(device):
    if device == "cpu":
        view = X[:, ::-2, 1:]
        compare(ep.ops.cumsum(view, 1), torch.cumsum(torch.from_numpy(np.ascontiguousarray(view)), 1).numpy())
    scalar = np.array(2.5, np.float32)
    if device == "cuda":
        from numba import cuda

        scalar = cuda.to_device(scalar)  # 0-d (ep.testing's to_device gives one element)
    for dim in (0, -1):
        compare(ep.ops.cumsum(scalar, dim), torch.cumsum(torch.tensor(2.5), dim).numpy())
    with pytest.raises(IndexError, match="dim: 1 is out of range"):
        ep.ops.cumsum(scalar, 1)


def test_out_in_place_and_overlapping(device):
    x = to_device(X.copy(), device)
    assert ep.ops.cumsum(x, 2, out=x) is x
    compare(x, np.cumsum(X, 2))
    values, indices = to_device(np.zeros(X.shape, np.float32), device), to_device(np.zeros(X.shape, np.int64), device)
    result = ep.ops.cummin(to_device(X, device), 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    compare(values, torch.cummin(torch.from_numpy(X), 1).values.numpy())
    # The values written over x: the indices still come from x as it was.
    y = to_device(X.copy(), device)
    got = ep.ops.cummax(y, 0, out=(y, indices))
    compare(got.indices, torch.cummax(torch.from_numpy(X), 0).indices.numpy())
    compare(y, torch.cummax(torch.from_numpy(X), 0).values.numpy())
    with pytest.raises(ValueError, match="share memory"):
        both = to_device(np.zeros(2 * X.size, np.int64), device)
        ep.ops.cummax(to_device(X.astype(np.int64), device), 0, out=(both[: X.size].reshape(X.shape), both[X.size // 2 : X.size // 2 + X.size].reshape(X.shape)))
    with pytest.raises(TypeError, match="out: .* pair"):
        ep.ops.cummax(to_device(X, device), 0, out=values)
    with pytest.raises(TypeError, match="out: has dtype"):
        ep.ops.cumsum(to_device(X, device), 0, out=indices)


def test_torch_tensors_in_and_out():
    t = torch.from_numpy(X)
    got = ep.ops.cumsum(t, 1)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, torch.cumsum(t, 1))
    pair = ep.ops.cummax(t, 1)
    assert isinstance(pair.values, torch.Tensor) and isinstance(pair.indices, torch.Tensor)
    values, indices = torch.empty_like(t), torch.empty(X.shape, dtype=torch.int64)
    assert ep.ops.cummin(t, 2, out=(values, indices)).values is values
    torch.testing.assert_close(indices, torch.cummin(t, 2).indices)


def test_listed_by_the_cli(capsys):
    from ep.cli import main

    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(f"\n{name} " in listed for name in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"))
