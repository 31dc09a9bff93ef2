"""ep.ops.add_n against tf.math.add_n's semantics, computed here with NumPy."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy


def test_sums_arrays_of_any_strides(device):
    xs = [np.arange(12, dtype=np.float32).reshape(3, 4) * k for k in range(1, 11)]
    on = [to_device(x, device) for x in xs]
    on[3] = to_device(xs[3].T.copy(), device).T
    np.testing.assert_array_equal(to_numpy(ep.ops.add_n(on)), sum(xs))


def test_out_may_be_an_input():
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    y = x.copy()
    assert ep.ops.add_n([x, y, x], out=x) is x
    np.testing.assert_array_equal(x, 3 * y)


def test_one_array_is_a_copy():
    x = np.arange(4, dtype=np.int8)
    got = ep.ops.add_n([x])
    assert got is not x
    np.testing.assert_array_equal(got, x)


def test_refuses_what_tf_refuses():
    with pytest.raises(ValueError, match="arrays: is empty"):
        ep.ops.add_n([])
    with pytest.raises(ValueError, match=r"arrays\[1\]: has shape \(3,\)"):
        ep.ops.add_n([np.ones((2, 3)), np.ones(3)])
    with pytest.raises(TypeError, match=r"arrays\[2\]: has dtype float32"):
        ep.ops.add_n([np.ones(3), np.ones(3), np.ones(3, np.float32)])
    with pytest.raises(TypeError, match="arrays"):
        ep.ops.add_n(3)
    assert "tf.math.add_n" in ep.ops.add_n.__doc__


def test_takes_torch_tensors():
    torch = pytest.importorskip("torch")
    got = ep.ops.add_n([torch.ones(3), torch.full((3,), 2.0)])
    np.testing.assert_array_equal(np.asarray(got), [3, 3, 3])


def test_a_torch_out_is_written_and_returned_even_among_the_arrays():
    torch = pytest.importorskip("torch")
    out = torch.empty(3)
    assert ep.ops.add_n([torch.ones(3), torch.full((3,), 2.0)], out=out) is out
    assert torch.equal(out, torch.full((3,), 3.0))
    x = torch.arange(3.0)
    assert ep.ops.add_n([x, x.flip(0)], out=x) is x
    assert torch.equal(x, torch.full((3,), 2.0))


def test_a_masked_out_is_refused_naming_out():
    out = np.ma.masked_array(np.zeros(3, np.float32), mask=[0, 1, 0])
    with pytest.raises(TypeError, match="out: a numpy.ma.MaskedArray"):
        ep.ops.add_n([np.ones(3, np.float32)], out=out)
    np.testing.assert_array_equal(out.data, 0)


def test_torch_in_torch_out_as_binary():
    # add_n returned a NumPy array for torch tensors, where binary("add", t, t) returns a tensor.
    torch = pytest.importorskip("torch")
    t = torch.arange(3.0)
    got = ep.ops.add_n([t, t])
    assert type(got) is type(ep.ops.binary("add", t, t)) is torch.Tensor
    assert torch.equal(got, t + t)
    assert isinstance(ep.ops.add_n([np.ones(2), torch.ones(2, dtype=torch.float64)]), np.ndarray)  # arrays[0]'s kind
