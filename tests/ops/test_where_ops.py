"""ep.ops.where against np.where: broadcasting, NEP 50 scalars, a bool condition, out=, other libraries' arrays."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy, transposed


def test_broadcasts_like_numpy(device):
    rng = np.random.default_rng(0)
    c = rng.random((3, 1, 5)) < 0.5
    x = rng.standard_normal((4, 5)).astype(np.float32)
    y = rng.standard_normal((3, 4, 1)).astype(np.float64)
    got = ep.ops.where(to_device(c, device), to_device(x, device), to_device(y, device))
    expected = np.where(c, x, y)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(to_numpy(got), expected)


@pytest.mark.parametrize(
    "x, y",
    [(np.arange(4, dtype=np.int8), 3), (np.arange(4, dtype=np.int8), 2.5), (1.5, np.arange(4, dtype=np.float16)),
     (True, np.arange(4, dtype=np.uint8)), (np.arange(4, dtype=np.int32), np.int64(7))],
    ids=str,
)
def test_python_scalars_promote_as_nep_50(device, x, y):
    c = np.array([True, False, False, True])
    on = [a if np.isscalar(a) else to_device(a, device) for a in (x, y)]
    got = ep.ops.where(to_device(c, device), *on)
    expected = np.where(c, x, y)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(to_numpy(got), expected)


def test_scalar_condition_and_operands():
    np.testing.assert_array_equal(ep.ops.where(False, 1, 2.0), np.where(False, 1, 2.0))
    assert ep.ops.where(False, 1, 2.0).dtype == np.float64


def test_strided_inputs_and_out(device):
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    c = (x % 3 == 0)
    out = to_device(np.zeros((6, 4), np.float32), device)
    result = ep.ops.where(transposed(to_device(c, device)), transposed(to_device(x, device)), -1.0, out=out)
    assert result is out
    np.testing.assert_array_equal(to_numpy(out), np.where(c.T, x.T, np.float32(-1)))


def test_out_that_is_an_input_reads_it_first():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    row = x[0]
    expected = np.where(np.array([[True], [False]]), row, x)
    ep.ops.where(np.array([[True], [False]]), row, x, out=x)
    np.testing.assert_array_equal(x, expected)


def test_a_non_bool_condition_is_refused_by_name(device):
    with pytest.raises(TypeError, match="condition: has dtype int32; expected bool"):
        ep.ops.where(to_device(np.ones(3, np.int32), device), 1.0, 2.0)
    with pytest.raises(TypeError, match="condition: has int"):
        ep.ops.where(1, 1.0, 2.0)


def test_bad_shapes_and_values_are_named():
    with pytest.raises(ValueError, match="y"):
        ep.ops.where(np.ones(3, bool), np.ones(3), np.ones(4))
    with pytest.raises(OverflowError, match="y: 1000"):
        ep.ops.where(np.ones(3, bool), np.ones(3, np.int8), 1000)
    with pytest.raises(ValueError, match="out: has shape"):
        ep.ops.where(np.ones(3, bool), np.ones(3), 0.0, out=np.empty(4))


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    c, x = torch.tensor([True, False, True]), torch.arange(3, dtype=torch.float32)
    got = ep.ops.where(c, x, torch.zeros(3))
    assert isinstance(got, torch.Tensor)
    assert torch.equal(got, torch.where(c, x, torch.zeros(3)))
    assert "NEP 50" in ep.ops.where.__doc__
