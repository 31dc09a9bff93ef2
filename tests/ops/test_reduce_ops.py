"""ep.ops' reductions against PyTorch and NumPy: dims, keepdim, NumPy's aliases, dtypes, strides,
empty and 0-d arrays, out=, other libraries' arrays and bad arguments."""
import numpy as np
import pytest
import torch

import ep
import ep.ops
from ep.common.primitive.reduce import reduction_stages
from ep.testing import to_device, to_numpy

X = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
# None, one dim, a negative one, two adjacent, two apart (Reduce gets them permuted together).
DIMS = [None, 1, -1, (0, 1), (0, 2)]
TORCH = {"amax": torch.amax, "amin": torch.amin, "any": torch.any, "all": torch.all}


def torch_reference(name, x, dim, keepdim=False, **kwargs):
    t = torch.from_numpy(np.ascontiguousarray(x))
    if name in ("argmax", "argmin") and dim is None:
        return getattr(torch, name)(t).numpy()
    if name == "norm":
        return torch.linalg.vector_norm(t, dim=dim, keepdim=keepdim, **kwargs).numpy()
    if dim is None:
        dim = tuple(range(t.ndim))
    if name in ("any", "all", "prod") and not isinstance(dim, int):
        # PyTorch takes one dim for these; NumPy's result, in x's dtype (PyTorch's rule for floats).
        return np.asarray(getattr(np, name)(x, axis=dim, keepdims=keepdim)).astype(x.dtype if name == "prod" else bool)
    return getattr(torch, name)(t, dim, keepdim=keepdim, **kwargs).numpy()


def compare(got, expected):
    got = to_numpy(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, expected.shape, got.dtype, expected.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "amax", "amin", "logsumexp", "var", "std", "norm", "any", "all"])
def test_matches_pytorch(device, name, dim, keepdim):
    x = X > 0.5 if name in ("any", "all") else X
    got = getattr(ep.ops, name)(to_device(x, device), dim=dim, keepdim=keepdim)
    compare(got, torch_reference(name, x, dim, keepdim))


# Reduced dims in runs apart, which ep reduces one run per launch (the run of most elements
# first), with dims of size 1 between them and an empty one.
@pytest.mark.parametrize(
    "shape, dims",
    [((4, 3, 5, 2, 6), (0, 2, 4)), ((6, 3, 2), (0, 2)), ((2, 1, 3, 1, 4), (0, 3, 4)), ((3, 0, 4, 5), (1, 3))],
)
@pytest.mark.parametrize(
    "name, dtype",
    [("sum", np.int32), ("sum", np.float32), ("sum", np.float16), ("prod", np.float64), ("mean", np.float32),
     ("amax", np.int16), ("amin", np.float32), ("logsumexp", np.float64), ("any", np.bool_), ("all", np.bool_)],
)
def test_dims_in_runs_apart(device, name, dtype, shape, dims):
    x = np.random.default_rng(1).standard_normal(shape)
    x = (x > 0) if dtype is np.bool_ else (x * 4).astype(dtype)
    xd = to_device(x, device)
    if name in ("amax", "amin") and 0 in shape:
        with pytest.raises(ValueError, match="dim 1 of size 0"):
            getattr(ep.ops, name)(xd, dims)
        return
    for keepdim in (False, True):
        got = to_numpy(getattr(ep.ops, name)(xd, dims, keepdim=keepdim))
        t = torch.from_numpy(x)
        if name in ("any", "all", "prod"):
            expected = np.asarray(getattr(np, name)(x, axis=dims, keepdims=keepdim))
        else:
            expected = TORCH.get(name, getattr(torch, name))(t, dims, keepdim=keepdim).numpy()
        assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, expected.shape, got.dtype, expected.dtype)
        tolerance = 2e-3 if dtype is np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tolerance, atol=tolerance)
    assert np.array_equal(to_numpy(xd), x)


@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
@pytest.mark.parametrize("name", ["any", "all"])
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int64, np.float16, np.float32])
def test_any_and_all_have_torchs_dtypes(device, name, dtype, dim):
    # torch.any and torch.all of uint8 give uint8 (0 or 1), of the other dtypes bool; NaN and -0.0 as torch reads them.
    x = np.random.default_rng(2).integers(0, 3, (3, 4, 5)).astype(dtype)
    if dtype in (np.float16, np.float32):
        x[0, 0], x[1, 1] = np.nan, -0.0
    t = torch.from_numpy(x)
    for keepdim in (False, True):
        expected = getattr(torch, name)(t, **({} if dim is None else {"dim": dim, "keepdim": keepdim})).numpy()
        compare(getattr(ep.ops, name)(to_device(x, device), dim, keepdim=dim is not None and keepdim), expected)
    # An empty reduction: any's is 0, all's 1, in the same dtype.
    empty = np.zeros((0, 3), dtype)
    compare(getattr(ep.ops, name)(to_device(empty, device), 0), getattr(torch, name)(torch.from_numpy(empty), 0).numpy())


def test_runs_apart_are_reduced_largest_first():
    stages = reduction_stages((4, 3, 5, 2, 6), (0, 2, 4))
    assert stages == (
        ((4, 3, 5, 2, 6), (4, 3, 5, 2, 1)),
        ((4, 3, 5, 2, 1), (4, 3, 1, 2, 1)),
        ((4, 3, 1, 2, 1), (1, 3, 1, 2, 1)),
    )
    # Equal runs: the outer first; dims of size 1 join the runs around them.
    assert reduction_stages((8, 3, 8), (0, 2)) == (((8, 3, 8), (1, 3, 8)), ((1, 3, 8), (1, 3, 1)))
    assert reduction_stages((2, 1, 3, 1, 4), (0, 1, 3, 4)) == (((2, 1, 3, 1, 4), (2, 1, 3, 1, 1)), ((2, 1, 3, 1, 1), (1, 1, 3, 1, 1)))


@pytest.mark.parametrize("dim", [None, 0, 2, -2])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_and_argmin_match_pytorch(device, name, dim):
    compare(getattr(ep.ops, name)(to_device(X, device), dim), torch_reference(name, X, dim))


def test_numpys_aliases_and_strided_inputs(device):
    x = np.asarray(X[:, ::2, 1:])
    got = ep.ops.sum(to_device(np.ascontiguousarray(x), device), axis=(0, 2), keepdims=True)
    compare(got, x.sum(axis=(0, 2), keepdims=True))
    if device == "cpu":
        compare(ep.ops.mean(x, axis=-1), x.mean(-1))
        compare(ep.ops.amax(X.transpose(2, 0, 1), 0), X.max(2))
    with pytest.raises(TypeError, match="dim, axis"):
        ep.ops.sum(to_device(X, device), 0, axis=1)
    with pytest.raises(TypeError, match="keepdim, keepdims"):
        ep.ops.sum(to_device(X, device), 0, True, keepdims=True)


@pytest.mark.parametrize("empty", [(), []])
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "var", "std", "norm", "any", "all"])
def test_no_dims_named_means_what_it_means_in_pytorch(device, name, empty):
    # torch reads dim=() as every dim in its older reductions, as none in any and all; NumPy's
    # axis=() is none in every one.
    x = X > 0.5 if name in ("any", "all") else X
    t = torch.from_numpy(x)
    for keepdim in (False, True):
        reference = torch.linalg.vector_norm if name == "norm" else getattr(torch, name)
        expected = reference(t, dim=empty, keepdim=keepdim).numpy()
        compare(getattr(ep.ops, name)(to_device(x, device), dim=empty, keepdim=keepdim), expected)
    if name in ("sum", "amax", "any"):
        compare(getattr(ep.ops, name)(to_device(x, device), axis=empty), getattr(np, name)(x, axis=()))


def test_dtypes_follow_pytorch(device):
    ints = np.arange(12, dtype=np.int32).reshape(3, 4)
    for name in ("sum", "prod"):
        compare(getattr(ep.ops, name)(to_device(ints, device), 1), getattr(torch, name)(torch.from_numpy(ints), 1).numpy())
        compare(getattr(ep.ops, name)(to_device(ints > 4, device)), getattr(torch, name)(torch.from_numpy(ints > 4)).numpy())
    compare(ep.ops.logsumexp(to_device(ints, device), 1), torch.logsumexp(torch.from_numpy(ints), 1).numpy())
    compare(ep.ops.sum(to_device(ints, device), 0, dtype=np.float64), ints.sum(0, dtype=np.float64))
    compare(ep.ops.mean(to_device(ints, device), dtype=np.float32), np.float32(ints.mean()).reshape(()))
    half = np.full(3000, 1, np.float16)
    compare(ep.ops.sum(to_device(half, device)), np.array(3000, np.float16))
    for name in ("mean", "var", "std", "norm"):
        with pytest.raises(TypeError, match="x: .*int32"):
            getattr(ep.ops, name)(to_device(ints, device))
    # A sum into bool is refused (torch's is an any); the error names dtype= and x's own dtype.
    with pytest.raises(TypeError, match=r"dtype: sum into bool is not supported \(x, int32, would be cast to bool first\)"):
        ep.ops.sum(to_device(ints, device), dtype=np.bool_)


def test_empty_and_zero_d_arrays(device):
    empty = to_device(np.zeros((2, 0, 3), np.float32), device)
    compare(ep.ops.sum(empty, 1), np.zeros((2, 3), np.float32))
    compare(ep.ops.prod(empty), np.array(1, np.float32))
    compare(ep.ops.all(empty, 1), np.ones((2, 3), bool))
    compare(ep.ops.amax(empty, 2), np.zeros((2, 0), np.float32))
    for name in ("amax", "amin", "argmax", "argmin"):
        with pytest.raises(ValueError, match="dim 1 of size 0"):
            getattr(ep.ops, name)(empty, 1)
    with pytest.raises(ValueError, match="empty"):
        ep.ops.argmax(empty)
    scalar = to_device(np.array(2.5, np.float32), device)
    compare(ep.ops.sum(scalar), np.array(2.5, np.float32))
    compare(ep.ops.amax(scalar, 0), np.array(2.5, np.float32))
    compare(ep.ops.argmax(scalar), np.array(0))
    compare(ep.ops.var(scalar), np.array(np.nan, np.float32))


def test_nan_propagates(device):
    x = np.array([[1, np.nan, 3], [4, 5, 6]], np.float32)
    compare(ep.ops.amax(to_device(x, device), 1), np.array([np.nan, 6], np.float32))
    compare(ep.ops.argmin(to_device(x, device), 1), np.array([1, 0]))
    compare(ep.ops.sum(to_device(x, device)), np.array(np.nan, np.float32))


def test_norm_orders_match_pytorch(device):
    for p in (1, 2, 3, 0.5, 0, np.inf, -np.inf, "fro"):
        got = ep.ops.norm(to_device(X, device), p, dim=(0, 2))
        compare(got, torch_reference("norm", X, (0, 2), ord=2 if p == "fro" else p))
    compare(ep.ops.norm(to_device(X.astype(np.float16) * 300, device)), np.array(np.linalg.norm(X.astype(np.float16).astype(np.float64) * 300), np.float16))
    with pytest.raises(TypeError, match="p: "):
        ep.ops.norm(to_device(X, device), "nuc")


@pytest.mark.parametrize("p", [-1, -2, -0.5, -np.inf, 0.5, 0, 2, np.inf])
@pytest.mark.parametrize("dim", [None, 0, 1, ()])
def test_norm_over_an_empty_dim_is_refused_where_torch_refuses_it(device, p, dim):
    x = np.zeros((0, 3), np.float32)
    try:
        expected = torch.linalg.vector_norm(torch.from_numpy(x), ord=p, dim=dim).numpy()
    except RuntimeError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError, match="dim: .* over dim 0 of size 0"):
            ep.ops.norm(to_device(x, device), p, dim=dim)
    else:
        compare(ep.ops.norm(to_device(x, device), p, dim=dim), expected)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")  # PyTorch's, for correction=5 of 4 elements
def test_var_and_std_take_a_correction(device):
    for correction in (0, 1, 2.5, 5):
        compare(ep.ops.var(to_device(X, device), 1, correction=correction), torch.var(torch.from_numpy(X), 1, correction=correction).numpy())
    compare(ep.ops.std(to_device(X, device), correction=0), np.array(X.astype(np.float64).std(), np.float32))
    # None is torch's default, 1 (it was refused).
    compare(ep.ops.var(to_device(X, device), correction=None), torch.var(torch.from_numpy(X), correction=None).numpy())
    with pytest.raises(TypeError, match="correction"):
        ep.ops.var(to_device(X, device), correction="1")


def test_var_and_std_take_torchs_unbiased(device):
    for unbiased in (True, False):
        compare(ep.ops.var(to_device(X, device), 0, unbiased=unbiased), torch.var(torch.from_numpy(X), 0, unbiased=unbiased).numpy())
        compare(ep.ops.std(to_device(X, device), unbiased=unbiased), torch.std(torch.from_numpy(X), unbiased=unbiased).numpy())
        fused = ep.fuse(lambda a: ep.ops.var(a * 2, 1, unbiased=unbiased))(to_device(X, device))
        compare(fused, torch.var(torch.from_numpy(X) * 2, 1, unbiased=unbiased).numpy())
    with pytest.raises(TypeError, match="correction, unbiased: both are given"):
        ep.ops.var(to_device(X, device), correction=0, unbiased=True)
    with pytest.raises(TypeError, match="unbiased: 1 is not a bool"):
        ep.ops.std(to_device(X, device), unbiased=1)


def test_out_is_written_and_checked(device):
    out = to_device(np.zeros(4, np.float32), device)
    assert ep.ops.sum(to_device(X, device), (0, 2), out=out) is out
    compare(out, X.sum((0, 2)))
    with pytest.raises(ValueError, match="out: has shape"):
        ep.ops.sum(to_device(X, device), 0, out=to_device(np.zeros(4, np.float32), device))
    with pytest.raises(TypeError, match="out: has dtype"):
        ep.ops.argmax(to_device(X, device), 0, out=to_device(np.zeros((4, 5), np.float32), device))
    if device == "cpu":
        # out over x: the result of reading x first.
        x = X.copy()
        expected = x.sum((0, 1))
        ep.ops.sum(x, (0, 1), out=x.reshape(-1)[:5])
        np.testing.assert_allclose(x.reshape(-1)[:5], expected, rtol=1e-5)


@pytest.mark.parametrize("out_dtype", [np.float64, np.float16])
@pytest.mark.parametrize("name", ["mean", "var", "std"])
def test_mean_var_and_std_write_into_another_floating_out_as_pytorch(device, name, out_dtype):
    # torch: mean computes in out's dtype (as dtype=), var and std in x's, then cast.
    x = np.array([[0.1, 0.2, 0.3, 1e4], [1.5, -2.5, 3.25, 7.0]], np.float32)
    expected = torch.empty(2, dtype=getattr(torch, np.dtype(out_dtype).name))
    getattr(torch, name)(torch.from_numpy(x), 1, out=expected)
    out = to_device(np.zeros(2, out_dtype), device)
    assert getattr(ep.ops, name)(to_device(x, device), 1, out=out) is out
    # A float64 mean is float64's to the last bits, not float32's cast (rtol 1e-12 tells them apart).
    rtol = 1e-3 if out_dtype == np.float16 else 1e-12 if name == "mean" else 1e-6
    np.testing.assert_allclose(to_numpy(out), expected.numpy(), rtol=rtol)
    # Another floating out: refused by sum, as torch refuses it; an integer out by mean too.
    with pytest.raises(TypeError, match="out: has dtype float64; expected float32"):
        ep.ops.sum(to_device(x, device), 1, out=to_device(np.zeros(2, np.float64), device))
    with pytest.raises(TypeError, match="out: has dtype int32; expected float32"):
        getattr(ep.ops, name)(to_device(x, device), 1, out=to_device(np.zeros(2, np.int32), device))
    with pytest.raises(TypeError, match="out: list is not an array"):
        getattr(ep.ops, name)(to_device(x, device), 1, out=[0.0, 0.0])


@pytest.mark.parametrize("name", ["sum", "amax", "mean", "logsumexp"])
def test_out_may_be_x_itself_over_dims_of_one(device, name):
    # out may be x itself when every reduced dim has size 1: the result as if x were read first.
    x = np.random.default_rng(3).standard_normal((3, 1, 4)).astype(np.float32)
    expected = getattr(torch, name)(torch.from_numpy(x), 1, keepdim=True).numpy()
    given = to_device(x, device)
    assert getattr(ep.ops, name)(given, 1, keepdim=True, out=given) is given
    compare(given, expected)


def test_pytorch_tensors_in_give_pytorch_tensors_out():
    got = ep.ops.mean(torch.from_numpy(X), 1)
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.numpy(), torch.from_numpy(X).mean(1).numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda x: ep.ops.sum(x, 3), np.exceptions.AxisError, "dim: axis 3"),
        (lambda x: ep.ops.sum(x, (0, -3)), ValueError, "twice"),
        (lambda x: ep.ops.sum(x, 1.0), TypeError, "dim"),
        (lambda x: ep.ops.sum(x, (0, "1")), TypeError, r"dim\[1\]"),
        (lambda x: ep.ops.argmax(x, (0, 1)), TypeError, "dim"),
        (lambda x: ep.ops.sum(x, 0, keepdim="yes"), TypeError, "keepdim"),
        (lambda x: ep.ops.sum(x, dtype=np.complex64), TypeError, "dtype"),
        (lambda x: ep.ops.sum([1.0, 2.0]), TypeError, "x"),
        (lambda x: ep.ops.mean(x, dtype=np.int32), TypeError, "dtype"),
    ],
)
def test_bad_arguments_are_named(device, call, error, match):
    with pytest.raises(error, match=match):
        call(to_device(X, device))
