"""ep.fuse ending with a reduction (one ReduceFused launch): against the unfused ep.ops chain (bit for
bit: the same formulas, then the same reduction kernel; float sums within an ulp or two, as the CPU
adds their blocks in vector registers in an order each kernel's vectorization picks) and NumPy, on cpu and the simulator: every
reduction, dims in one run and apart, keepdim, dtype=, broadcast and scalar arguments, out=,
other libraries' arrays, and the refusals."""
import numpy as np
import pytest

import ep
import ep.ops
from ep.testing import to_device, to_numpy

ops = ep.ops
RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 5, 40)).astype(np.float32)
Y = RNG.standard_normal((6, 5, 40)).astype(np.float32)


def _both(device, *arrays):
    return [to_device(a, device) for a in arrays]


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("sum", {"dim": -1}), ("sum", {}), ("sum", {"dim": 0, "keepdim": True}), ("sum", {"dim": (0, 2)}),
        ("prod", {"dim": 1}), ("mean", {"dim": (1, 2)}), ("amax", {"dim": 2}), ("amin", {"dim": None}),
        ("argmax", {"dim": 1}), ("argmin", {}), ("logsumexp", {"dim": -1}), ("var", {"dim": 2}),
        ("std", {"dim": (0, 1), "correction": 0}), ("sum", {"axis": 2, "keepdims": True}),
        # Dims apart: a fused launch, then Reduce over the other run; var permutes instead.
        ("amax", {"dim": (0, 2)}), ("mean", {"dim": (0, 2), "keepdim": True}), ("var", {"dim": (0, 2)}),
    ],
)
def test_a_reduction_of_an_expression_equals_the_unfused_chain(device, name, kwargs):
    x, y = _both(device, X, Y)
    reduction = getattr(ops, name)
    fused = ep.fuse(lambda a, b: reduction(ops.unary("tanh", a * b + 1), **kwargs))
    got = to_numpy(fused(x, y))
    unfused = to_numpy(reduction(ops.unary("tanh", ops.binary("add", ops.binary("mul", x, y), 1)), **kwargs))
    assert got.dtype == unfused.dtype and got.shape == unfused.shape
    if name in ("sum", "mean"):
        np.testing.assert_allclose(got, unfused, rtol=5e-7)
    else:
        np.testing.assert_array_equal(got, unfused)
    numpy_name = {"amax": "max", "amin": "min"}.get(name, name)
    value = np.tanh(X.astype(np.float64) * Y + 1)
    axis = kwargs.get("dim", kwargs.get("axis"))
    if name == "logsumexp":
        want = np.log(np.exp(value).sum(axis=axis))
    elif name in ("var", "std"):
        want = getattr(np, numpy_name)(value, axis=axis, ddof=kwargs.get("correction", 1))
    elif name in ("argmax", "argmin"):
        want = getattr(np, numpy_name)(value, axis=axis)
    else:
        want = getattr(np, numpy_name)(value, axis=axis, keepdims=kwargs.get("keepdim", kwargs.get("keepdims", False)))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.uint8, np.bool_], ids=str)
def test_dtypes_follow_the_ops_rules(device, dtype):
    a = (RNG.integers(0, 4, (7, 33)) if dtype is not np.bool_ else RNG.integers(0, 2, (7, 33))).astype(dtype)
    (x,) = _both(device, a)
    fused = ep.fuse(lambda x: ops.sum(x * x, dim=1))
    got = to_numpy(fused(x))
    unfused = to_numpy(ops.sum(ops.binary("mul", x, x), dim=1))
    assert got.dtype == unfused.dtype  # integers and bool sum into int64, as torch.sum
    np.testing.assert_array_equal(got, unfused)


def test_dtype_casts_first_and_mean_refuses_integers(device):
    a = RNG.integers(-100, 100, (5, 9)).astype(np.int8)
    (x,) = _both(device, a)
    got = to_numpy(ep.fuse(lambda x: ops.mean(x * 3, dim=1, dtype=np.float32))(x))
    np.testing.assert_allclose(got, (a * np.int8(3)).astype(np.float32).mean(1), rtol=1e-6)
    with pytest.raises(TypeError, match="mean of int8"):
        ep.fuse(lambda x: ops.mean(x * 3))(x)


def test_broadcast_and_scalar_arguments(device):
    b = RNG.standard_normal(40).astype(np.float32)
    x, bias = _both(device, X, b)
    fused = ep.fuse(lambda x, b, s: ops.amax(ops.unary("relu", x - b) * s, dim=(0, 1)))
    got = to_numpy(fused(x, bias, 0.5))
    np.testing.assert_array_equal(got, (np.maximum(X - b, 0) * np.float32(0.5)).max(axis=(0, 1)))


def test_out_receives_the_result(device):
    x, y = _both(device, X, Y)
    out = to_device(np.zeros((6, 5), np.float32), device)
    result = ep.fuse(lambda a, b: ops.sum(a * b, dim=-1))(x, y, out=out)
    assert result is out
    np.testing.assert_allclose(to_numpy(out), (X * Y).sum(-1), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="out"):
        ep.fuse(lambda a, b: ops.sum(a * b, dim=-1))(x, y, out=to_device(np.zeros((6,), np.float32), device))


def test_empty_reductions(device):
    (x,) = _both(device, np.zeros((3, 0), np.float32))
    np.testing.assert_array_equal(to_numpy(ep.fuse(lambda x: ops.sum(x + 1, dim=1))(x)), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="dim 1 of size 0"):
        ep.fuse(lambda x: ops.amax(x + 1, dim=1))(x)


def test_torch_arrays_give_torch_arrays():
    torch = pytest.importorskip("torch")
    x, y = torch.from_numpy(X), torch.from_numpy(Y)
    got = ep.fuse(lambda a, b: ops.sum((a - b) ** 2, dim=-1))(x, y)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, ((x - y) ** 2).sum(-1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda x: ops.sum(x) + 1, "last step"),
        (lambda x: ops.unary("exp", ops.sum(x)), "last step"),
        (lambda x: (ops.sum(x), x + 1), "returns them alone"),
        (lambda x: ops.sum(ops.amax(x, dim=0)), "last step"),
    ],
)
def test_a_reduction_must_be_the_last_step(fn, message):
    with pytest.raises(TypeError, match=message):
        ep.fuse(fn)(X)


def test_a_new_shape_reuses_the_trace():
    fused = ep.fuse(lambda a, b: ops.sum(a * b, dim=-1))
    fused(X, Y)
    small = X[:2, :3, :7].copy()
    np.testing.assert_allclose(fused(small, small), (small * small).sum(-1), rtol=1e-5)
    assert len(fused._traces) == 1



def test_each_shape_gets_its_own_layout_in_one_trace(device):
    # One trace, shapes whose reduced dims are apart (two launches), merge into one run (a size-1
    # dim between them), or are empty (refused on every call, not remembered).
    fused = ep.fuse(lambda a: ops.amax(a * 2, dim=(0, 2)))
    for shape in ((4, 5, 6), (4, 1, 6), (4, 5, 6), (3, 2, 1)):
        x = RNG.standard_normal(shape).astype(np.float32)
        (xd,) = _both(device, x)
        np.testing.assert_array_equal(to_numpy(fused(xd)), (x * 2).max(axis=(0, 2)))
    (empty,) = _both(device, np.zeros((0, 5, 6), np.float32))
    for _ in range(2):
        with pytest.raises(ValueError, match="dim 0 of size 0"):
            fused(empty)
    assert len(fused._traces) == 1

@pytest.mark.parametrize("sbp", ["broadcast", "split0", "split1"])
def test_global_tensors_fuse_the_expression_then_reduce(sbp):
    layout = {"broadcast": ep.sbp.broadcast, "split0": ep.sbp.split(0), "split1": ep.sbp.split(1)}[sbp]
    x = X[0]
    g = ep.to_global(x, ep.placement("cpu", [0]), layout)
    total = ep.fuse(lambda a, b: ops.sum(a * b + 1, dim=-1))(g, g)
    assert type(total).__name__ == "GlobalTensor"
    np.testing.assert_allclose(total.numpy(), (x * x + 1).sum(-1), rtol=1e-6)
    spread = ep.fuse(lambda a: ops.std(a * 2, dim=0, correction=0, keepdim=True))(g)
    np.testing.assert_allclose(spread.numpy(), (x * 2).std(0, keepdims=True), rtol=1e-5)


def test_several_reductions_of_one_shape(device):
    x, y = _both(device, X, Y)
    fused = ep.fuse(lambda a, b: (ops.sum(a * b, dim=-1), ops.amax(a - b, dim=-1), ops.var(a, dim=-1, correction=0)))
    total, peak, spread = (to_numpy(r) for r in fused(x, y))
    np.testing.assert_allclose(total, (X * Y).sum(-1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(peak, (X - Y).max(-1))
    np.testing.assert_allclose(spread, X.var(-1), rtol=1e-5)
    outs = tuple(to_device(np.zeros((6, 5), np.float32), device) for _ in range(3))
    assert fused(x, y, out=outs) is outs
    np.testing.assert_array_equal(to_numpy(outs[1]), peak)
    with pytest.raises(TypeError, match="a tuple of 3 arrays"):
        fused(x, y, out=outs[0])
    with pytest.raises(ValueError, match="outputs of one shape"):
        ep.fuse(lambda a, b: (ops.sum(a, dim=-1), ops.sum(b, dim=-1)))(x, to_device(Y[:, :, :1].copy(), device))


def test_several_reductions_of_global_tensors():
    x = X[0]
    g = ep.to_global(x, ep.placement("cpu", [0]), ep.sbp.split(0))
    total, peak = ep.fuse(lambda a: (ops.sum(a * a, dim=-1), ops.argmax(a, dim=0)))(g)
    np.testing.assert_allclose(total.numpy(), (x * x).sum(-1), rtol=1e-6)
    np.testing.assert_array_equal(peak.numpy(), x.argmax(0))


def test_the_reduction_methods_numpy_and_torch_agree_on(device):
    (x,) = _both(device, X)
    for method, expected in [
        (lambda a: (a * 2).sum(axis=2), (X * 2).sum(2)),
        (lambda a: (a > 0).any(1, keepdims=True), (X > 0).any(1, keepdims=True)),
        (lambda a: (a - 1).argmax(), np.argmax(X - 1)),
        (lambda a: a.mean(dim=(0, 1)), X.mean((0, 1))),
    ]:
        got = to_numpy(ep.fuse(method)(x))
        assert got.shape == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(AttributeError, match="has no 'max'"):  # NumPy's max is amax, torch's gives indices too
        ep.fuse(lambda a: a.max())(x)
