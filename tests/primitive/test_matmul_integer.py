"""Integer Matmul, BatchMatmul and BroadcastMatmul (ep's kernels on both devices) against np.matmul
in int64, wrapped to the dtype as NumPy and PyTorch wrap: transposes, broadcast batch dims, alpha
and beta, extremes, k = 0; and ep.ops.matmul of integers against torch.matmul."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy

INTEGERS = [np.dtype(t) for t in (np.int8, np.uint8, np.int32, np.int64)]
TRANS = [(False, False), (False, True), (True, False), (True, True)]


def values(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def stored(x, transposed):
    return np.ascontiguousarray(np.swapaxes(x, -1, -2) if transposed else x)


def reference(a, b, alpha, beta, c, dtype):
    """alpha * a @ b + beta * c summed in int64 (wrapping: its low bits are the exact sum's), in dtype."""
    with np.errstate(over="ignore"):
        product = np.matmul(a.astype(np.int64), b.astype(np.int64))
        return (np.int64(alpha) * product + np.int64(beta) * c.astype(np.int64)).astype(dtype)


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
@pytest.mark.parametrize("trans", TRANS, ids=str)
@pytest.mark.parametrize("alpha, beta", [(1, 0), (3, 0), (1, 1), (-2, 5)])
def test_matmul_of_integers_wraps_as_numpy(device, dtype, trans, alpha, beta):
    rng = np.random.default_rng(7)
    m, n, k = 5, 3, 4
    a, b, c = values(rng, (m, k), dtype), values(rng, (k, n), dtype), values(rng, (m, n), dtype)
    primitive = ep.NewPrimitive(ep.MatmulFactory, device, dtype, *trans)
    out = to_device(c, device)
    stream = ep.GetDevice(device).CreateStream()
    primitive.Launch(stream, m, n, k, alpha, to_device(stored(a, trans[0]), device), to_device(stored(b, trans[1]), device), beta, out)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), reference(a, b, alpha, beta, c, dtype))


@pytest.mark.parametrize("dtype", INTEGERS, ids=str)
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (1, 3, 4, 2)), ((3, 4), (2, 4, 5)), ((4, 1, 2, 3), (3, 1))], ids=str)
def test_broadcast_and_batch_matmul_of_integers(device, dtype, shapes):
    rng = np.random.default_rng(3)
    a, b = values(rng, shapes[0], dtype), values(rng, shapes[1], dtype)
    want = reference(a, b, 1, 0, np.zeros(1, dtype), dtype)
    primitive = ep.NewPrimitive(ep.BroadcastMatmulFactory, device, dtype, False, True, 8)
    bt = stored(b, True)
    out = to_device(np.zeros(want.shape, dtype), device)
    stream = ep.GetDevice(device).CreateStream()
    primitive.Launch(stream, 1, a.ndim, a.shape, to_device(a, device), bt.ndim, bt.shape, to_device(bt, device), 0, want.ndim, want.shape, out)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), want)
    if len(shapes[0]) == 3 and shapes[0][0] == shapes[1][0]:
        batch = ep.NewPrimitive(ep.BatchMatmulFactory, device, dtype, False, False)
        out = to_device(np.zeros(want.shape, dtype), device)
        batch.Launch(stream, a.shape[0], a.shape[1], b.shape[2], a.shape[2], 1, to_device(a, device), to_device(b, device), 0, out)
        stream.Sync()
        np.testing.assert_array_equal(to_numpy(out), want)


def test_k_zero_gives_beta_times_c(device):
    c = np.arange(6, dtype=np.int32).reshape(2, 3)
    primitive = ep.NewPrimitive(ep.MatmulFactory, device, np.int32, False, False)
    out = to_device(c, device)
    stream = ep.GetDevice(device).CreateStream()
    empty = to_device(np.zeros(0, np.int32), device)
    primitive.Launch(stream, 2, 3, 0, 5, empty, empty, -2, out)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), -2 * c)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_ops_matmul_of_integers_is_torchs(device, dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = values(rng, (2, 3, 4), np.dtype(dtype)), values(rng, (4, 5), np.dtype(dtype))
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    got = to_numpy(ep.ops.matmul(to_device(a, device), to_device(b, device)))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="multiply in bool"):
        ep.ops.matmul(to_device(a > 0, device), to_device(b > 0, device))
