"""ep.ops.cat, stack, roll and flip against NumPy and torch computed here, on each device: every
dim (negative too), strided, reversed and empty inputs, mixed dtypes, out= (overlapping an input
too), torch tensors in and out, global tensors, and the errors of bad arguments."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
import ep.ops
from ep.testing import to_device, to_numpy
from dtype_lists import BFLOAT16, assert_same

torch = pytest.importorskip("torch")

FAST = settings(max_examples=20, deadline=None, derandomize=True, database=None)


def _arrays(shape, count, dtype=np.int32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-50, 50, shape).astype(dtype) for _ in range(count)]


@FAST
@given(ndim=st.integers(1, 4), data=st.data())
def test_cat_and_stack_along_every_dim_are_numpys(device, ndim, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    dim = data.draw(st.integers(-ndim, ndim - 1))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    rng = np.random.default_rng(len(sizes))
    parts = []
    for size in sizes:
        part_shape = list(shape)
        part_shape[dim] = size
        parts.append(rng.integers(-9, 9, part_shape).astype(np.int16))
    got = to_numpy(ep.ops.cat([to_device(p, device) for p in parts], dim))
    assert_same(got, np.concatenate(parts, dim))
    same = [rng.integers(-9, 9, shape).astype(np.float32) for _ in sizes]
    stack_dim = data.draw(st.integers(-ndim - 1, ndim))
    assert_same(to_numpy(ep.ops.stack([to_device(p, device) for p in same], stack_dim)), np.stack(same, stack_dim))


def test_cat_promotes_as_numpy_and_reads_any_strides(device):
    a = np.arange(24, dtype=np.int8).reshape(4, 6)[:, ::2]  # strided
    b = np.linspace(-1, 1, 8).astype(np.float32).reshape(4, 2)
    c = np.arange(4, dtype=np.int64).reshape(4, 1)
    got = to_numpy(ep.ops.cat([to_device(a, device), to_device(b, device), to_device(c, device)], 1))
    want = np.concatenate([a, b, c], 1)
    assert got.dtype == want.dtype == np.float64
    assert_same(got, want)
    h = np.ones((2, 2), BFLOAT16)
    assert to_numpy(ep.ops.cat([to_device(h, device), to_device(np.zeros((1, 2), np.int32), device)])).dtype == BFLOAT16
    if device == "cpu":  # NumPy's reversed views
        r = np.arange(12, dtype=np.int32).reshape(3, 4)[::-1, ::-1]
        assert_same(ep.ops.cat([r, r], 0), np.concatenate([r, r], 0))


@FAST
@given(ndim=st.integers(1, 4), data=st.data())
def test_roll_is_numpys(device, ndim, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    count = data.draw(st.integers(1, ndim))
    dims = tuple(data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=count, max_size=count)))
    shifts = tuple(data.draw(st.lists(st.integers(-9, 9), min_size=count, max_size=count)))
    assert_same(to_numpy(ep.ops.roll(to_device(x, device), shifts, dims)), np.roll(x, shifts, dims))
    shift = data.draw(st.integers(-30, 30))
    assert_same(to_numpy(ep.ops.roll(to_device(x, device), shift)), np.roll(x, shift))


@FAST
@given(ndim=st.integers(1, 4), data=st.data())
def test_flip_is_numpys(device, ndim, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    x = np.arange(int(np.prod(shape)), dtype=np.uint16).reshape(shape)
    dims = tuple(data.draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)))
    got = ep.ops.flip(to_device(x, device), dims)
    assert_same(to_numpy(got), np.flip(x, dims))


def test_results_are_new_arrays_and_out_may_be_the_input(device):
    x = to_device(np.arange(10, dtype=np.int64), device)
    assert ep.ops.flip(x, ()) is not x
    assert_same(to_numpy(ep.ops.flip(x, ())), np.arange(10))
    # out= overlapping the input gives the result of reading the input first.
    assert ep.ops.roll(x, 3, 0, out=x) is x
    assert_same(to_numpy(x), np.roll(np.arange(10), 3))
    assert ep.ops.flip(x, 0, out=x) is x
    assert_same(to_numpy(x), np.roll(np.arange(10), 3)[::-1])
    square = to_device(np.arange(6, dtype=np.int64).reshape(2, 3), device)
    assert ep.ops.flip(square, (0, 1), out=square) is square  # was a copy of the result
    assert_same(to_numpy(square), np.arange(6)[::-1].reshape(2, 3))
    y = to_device(np.arange(6, dtype=np.int64), device)
    out = to_device(np.zeros(12, np.int64), device)
    assert ep.ops.cat([y, y], out=out) is out
    assert_same(to_numpy(out), np.tile(np.arange(6), 2))
    # Inputs that are views of out, each read before any is overwritten.
    z = to_device(np.arange(12, dtype=np.int64), device)
    assert ep.ops.cat([z[6:], z[:6]], out=z) is z
    assert_same(to_numpy(z), np.concatenate([np.arange(6, 12), np.arange(6)]))
    w = to_device(np.arange(8, dtype=np.int64), device)
    ep.ops.stack([w[4:], w[:4]], 0, out=w.reshape(2, 4))
    assert_same(to_numpy(w), np.concatenate([np.arange(4, 8), np.arange(4)]))


def test_torch_tensors_in_give_torch_tensors_out():
    t = torch.arange(12).reshape(3, 4)
    for got, want in (
        (ep.ops.cat([t, t], 1), torch.cat([t, t], 1)), (ep.ops.stack([t, t], 0), torch.stack([t, t], 0)),
        (ep.ops.roll(t, (1, 2), (0, 1)), torch.roll(t, (1, 2), (0, 1))), (ep.ops.flip(t, (0,)), torch.flip(t, (0,))),
        (ep.ops.roll(t, 5), torch.roll(t, 5)),
    ):
        assert isinstance(got, torch.Tensor)
        assert torch.equal(got, want)


def test_global_tensors_give_global_tensors():
    x = np.arange(8, dtype=np.float32)
    g = ep.to_global(x, ep.placement("cpu", [0]), ep.sbp.split(0))
    assert_same(ep.ops.cat([g, g]).to_local(), np.concatenate([x, x]))
    assert_same(ep.ops.stack([g, g], 1).to_local(), np.stack([x, x], 1))
    assert_same(ep.ops.roll(g, 3).to_local(), np.roll(x, 3))
    assert_same(ep.ops.flip(g, 0).to_local(), x[::-1])


def test_bad_arguments_are_named(device):
    x = to_device(np.zeros((2, 3), np.float32), device)
    with pytest.raises(ValueError, match="tensors: is empty"):
        ep.ops.cat([])
    with pytest.raises(TypeError, match="tensors: ndarray is not a sequence"):
        ep.ops.cat(np.zeros(3))
    with pytest.raises(ValueError, match=r"tensors\[1\]: has shape \(2, 2\); expected 2 dims of tensors\[0\]'s sizes"):
        ep.ops.cat([x, to_device(np.zeros((2, 2), np.float32), device)], 0)
    with pytest.raises(ValueError, match=r"tensors\[0\]: is 0-d"):
        ep.ops.cat([np.zeros((), np.float32)] * 2)
    with pytest.raises(IndexError, match="dim: 2 is out of range for 2 dims"):
        ep.ops.cat([x, x], 2)
    with pytest.raises(ValueError, match=r"tensors\[1\]: has shape \(3, 2\); expected \(2, 3\)"):
        ep.ops.stack([x, to_device(np.zeros((3, 2), np.float32), device)])
    with pytest.raises(ValueError, match="shifts: has 1 entries for 2 dims"):
        ep.ops.roll(x, (1,), (0, 1))
    with pytest.raises(IndexError, match=r"dims\[1\]: 5 is out of range"):
        ep.ops.flip(x, (0, 5))
    with pytest.raises(ValueError, match="dims: .* names a dim twice"):
        ep.ops.flip(x, (1, -1))
    with pytest.raises(TypeError, match="dims"):
        ep.ops.roll(x, 1, 0.5)
    other = "cuda" if device == "cpu" else "cpu"
    with pytest.raises(TypeError, match=r"tensors\[1\]: is on"):
        ep.ops.cat([x, to_device(np.zeros((2, 3), np.float32), other)])
