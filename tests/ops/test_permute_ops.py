"""ep.ops.permute against torch.permute: negative dims, strided inputs, out=, other libraries' arrays, bad dims."""
import numpy as np
import pytest
import torch

import ep
from ep.testing import to_device, to_numpy


def reference(x: np.ndarray, dims) -> np.ndarray:
    return torch.from_numpy(np.array(x)).permute(tuple(dims)).contiguous().numpy()


@pytest.mark.parametrize(
    "shape, dims",
    [((3, 4), (1, 0)), ((2, 3, 4), (-1, 0, -2)), ((2, 33, 40), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((5,), (-1,)), ((), ())],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16])
def test_permute_matches_torch(device, shape, dims, dtype):
    x = np.asarray(np.random.default_rng(0).random(shape) * 10).astype(dtype)
    got = to_numpy(ep.ops.permute(to_device(x, device).reshape(shape), dims))
    assert got.shape == reference(x, dims).shape
    np.testing.assert_array_equal(got.reshape(reference(x, dims).shape), reference(x, dims))


def test_a_strided_input_is_permuted():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)[:, ::2, 1:]
    np.testing.assert_array_equal(ep.ops.permute(x, (2, 0, 1)), reference(x, (2, 0, 1)))


def test_result_is_contiguous_and_of_the_callers_kind():
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    got = ep.ops.permute(t, (2, 0, 1))
    assert isinstance(got, torch.Tensor) and got.is_contiguous()
    assert torch.equal(got, t.permute(2, 0, 1))


def test_out_is_written_and_returned(device):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = to_device(np.zeros((3, 2), np.int32), device)
    assert ep.ops.permute(to_device(x, device), (1, 0), out=out) is out
    np.testing.assert_array_equal(to_numpy(out), x.T)


def test_out_that_is_the_input_reads_the_input_first():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    expected = x.T.copy()
    ep.ops.permute(x, (1, 0), out=x)
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize(
    "dims, error, message",
    [
        ((0, 0, 1), ValueError, r"dims: \(0, 0, 1\) names a dim twice; expected a permutation of range\(3\)"),
        ((0, 1), ValueError, r"dims: has 2 entries for an array of 3 dims; expected 3"),
        ((0, 1, 3), IndexError, r"dims\[2\]: 3 is out of range for 3 dims; expected -3 <= dim < 3"),
        ((0, 1, -4), IndexError, r"dims\[2\]: -4 is out of range"),
        ((0, 1, 2.0), TypeError, r"dims\[2\]: 2.0 is not an integer"),
        ("012", TypeError, r"dims: '012' is not a sequence of dims"),
        ((2, -1, 0), ValueError, r"dims: \(2, -1, 0\) names a dim twice"),
    ],
)
def test_bad_dims_are_refused(dims, error, message):
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(error, match=message):
        ep.ops.permute(x, dims)


def test_bad_out_is_refused():
    with pytest.raises(ValueError, match=r"out: has shape \(2, 3\); expected \(3, 2\)"):
        ep.ops.permute(np.zeros((2, 3), np.float32), (1, 0), out=np.zeros((2, 3), np.float32))


def test_help_says_the_semantics():
    assert "torch.permute" in ep.ops.permute.__doc__ and "contiguous" in ep.ops.permute.__doc__
