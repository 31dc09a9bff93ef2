"""The overlap rule of Softmax, LogSoftmax, their backward, Where, OneHot and ConstantPad (declared
launches): an output partly over an input is refused, naming both, with nothing written; an output
exactly an input runs in place where the kernels read each element before writing it (the softmax
family on every CUDA path, Where's z), and is refused where they do not (OneHot, ConstantPad);
outputs beside an input in one allocation are no overlap."""
import numpy as np
import pytest

import ep
from ep.include.primitive.gather import IndexOutOfRange
from ep.testing import to_device, to_numpy

ROWS, COLS = 3, 9
N = ROWS * COLS
# (warp_max_cols, smem_max_bytes) choosing each CUDA path for rows of 9 elements (test_softmax.py's).
CUDA_PATHS = [(1024, 48 * 1024), (4, 48 * 1024), (4, 8)]


def _cuda_paths(device, monkeypatch):
    """Each CUDA path's thresholds set in turn (the CPU has one path)."""
    if device != "cuda":
        yield
        return
    from ep.cuda.primitive.softmax import KERNELS

    for warp_max_cols, smem_max_bytes in CUDA_PATHS:
        for kernels in KERNELS.values():
            monkeypatch.setattr(kernels, "warp_max_cols", warp_max_cols)
            monkeypatch.setattr(kernels, "smem_max_bytes", smem_max_bytes)
        yield


def _forward(x, log):
    shifted = x - x.max(1, keepdims=True)
    s = np.exp(shifted).sum(1, keepdims=True)
    return shifted - np.log(s) if log else np.exp(shifted) / s


def _backward(y, dy, log):
    if log:
        return dy - np.exp(y) * dy.sum(1, keepdims=True)
    return y * (dy - (y * dy).sum(1, keepdims=True))


X = np.linspace(-3, 3, N).reshape(ROWS, COLS)
DY = np.cos(np.arange(N, dtype=np.float64)).reshape(ROWS, COLS)


@pytest.mark.parametrize("factory", ["SoftmaxFactory", "LogSoftmaxFactory"])
def test_softmax_refuses_y_one_row_after_x_and_runs_in_place(device, factory, monkeypatch):
    softmax = ep.NewPrimitive(getattr(ep, factory), device, np.float64)
    stream = ep.GetDevice(device).CreateStream()
    expected = _forward(X, factory == "LogSoftmaxFactory")
    whole = np.concatenate([X.ravel(), np.zeros(N)])
    buffer = to_device(whole, device)
    # y one row after x: rows were read after an earlier row's results overwrote them (off by 0.42, or NaN).
    with pytest.raises(ValueError, match="x, y: share memory without being the same elements; expected y to be x or separate memory"):
        softmax.Launch(stream, ROWS, COLS, buffer[:N], buffer[COLS : COLS + N])
    np.testing.assert_array_equal(to_numpy(buffer), whole)
    # y right after x in the same allocation: no overlap.
    softmax.Launch(stream, ROWS, COLS, buffer[:N], buffer[N:])
    stream.Sync()
    np.testing.assert_allclose(to_numpy(buffer)[N:].reshape(ROWS, COLS), expected, rtol=1e-12, atol=1e-14)
    for _ in _cuda_paths(device, monkeypatch):
        x = to_device(X.ravel(), device)
        softmax.Launch(stream, ROWS, COLS, x, x)
        stream.Sync()
        np.testing.assert_allclose(to_numpy(x).reshape(ROWS, COLS), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("factory", ["SoftmaxBackwardFactory", "LogSoftmaxBackwardFactory"])
def test_softmax_backward_refuses_a_shifted_dx_and_runs_in_place_of_y_or_dy(device, factory, monkeypatch):
    backward = ep.NewPrimitive(getattr(ep, factory), device, np.float64)
    stream = ep.GetDevice(device).CreateStream()
    log = factory == "LogSoftmaxBackwardFactory"
    y = _forward(X, log)
    expected = _backward(y, DY, log)
    for shifted, message in (("y", "y, dx"), ("dy", "dy, dx")):
        whole = np.concatenate([(y if shifted == "y" else DY).ravel(), np.zeros(COLS)])
        buffer = to_device(whole, device)
        other = to_device((DY if shifted == "y" else y).ravel(), device)
        args = (buffer[:N], other) if shifted == "y" else (other, buffer[:N])
        with pytest.raises(ValueError, match=f"{message}: share memory without being the same elements"):
            backward.Launch(stream, ROWS, COLS, *args, buffer[COLS:])
        np.testing.assert_array_equal(to_numpy(buffer), whole)
    for _ in _cuda_paths(device, monkeypatch):
        for in_place in ("y", "dy"):
            y_d, dy_d = to_device(y.ravel(), device), to_device(DY.ravel(), device)
            dx = y_d if in_place == "y" else dy_d
            backward.Launch(stream, ROWS, COLS, y_d, dy_d, dx)
            stream.Sync()
            np.testing.assert_allclose(to_numpy(dx).reshape(ROWS, COLS), expected, rtol=1e-12, atol=1e-14)


def test_where_refuses_z_over_part_of_cond_or_a_broadcast_x_and_runs_in_place(device):
    where = ep.NewPrimitive(ep.WhereFactory, device, np.int32, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    c = np.array([1, 0, 0, 2, 0, 3, 0, 0], np.int32)
    x = np.arange(10, 18, dtype=np.int32)
    y = np.arange(-8, 0, dtype=np.int32)
    whole = np.concatenate([c, np.zeros(24, np.int32)])
    buffer = to_device(whole, device)
    x_d, y_d = to_device(x, device), to_device(y, device)
    with pytest.raises(ValueError, match="cond, z: share memory without being the same elements; expected z to be cond or separate memory"):
        where.Launch(stream, 1, (8,), buffer[:8], 1, (8,), x_d, 1, (8,), y_d, buffer[1:9])
    # x broadcast over z's 4 rows, z starting at x: z's first row is x, the next rows read it after.
    with pytest.raises(ValueError, match="x, z: share memory without being the same elements"):
        where.Launch(stream, 2, (4, 1), to_device(np.ones(4, np.int32), device), 2, (1, 8), buffer[:8], 1, (8,), y_d, buffer[:32])
    np.testing.assert_array_equal(to_numpy(buffer), whole)
    # z exactly cond, then exactly y: each read where z is written.
    where.Launch(stream, 1, (8,), buffer[:8], 1, (8,), x_d, 1, (8,), y_d, buffer[:8])
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer)[:8], np.where(c != 0, x, y))
    c_d = to_device(c, device)
    where.Launch(stream, 1, (8,), c_d, 1, (8,), x_d, 1, (8,), y_d, y_d)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(y_d), np.where(c != 0, x, y))


def test_one_hot_refuses_out_over_or_exactly_its_indices(device):
    # check_bounds: a refused launch leaves no deferred check behind (CUDA's runs at Sync).
    one_hot = ep.NewPrimitive(ep.OneHotFactory, device, np.int64, np.int64, check_bounds=True)
    stream = ep.GetDevice(device).CreateStream()
    host = np.array([0, 0, 0, 0, 9, 9, 9, 9], np.int64)
    buffer = to_device(host, device)
    message = "indices, out: share memory; expected separate memory"
    # One class: out has the indices' size; each row's write is its own index's element.
    with pytest.raises(ValueError, match=message):
        one_hot.Launch(stream, buffer[:4], buffer[:4], 1, 0, 4, 0, 1)
    with pytest.raises(ValueError, match=message):
        one_hot.Launch(stream, buffer[:4], buffer[2:6], 1, 0, 4, 0, 1)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer), host)
    # out beside the indices: written; then a bad index is still reported.
    one_hot.Launch(stream, buffer[:2], buffer[2:8], 5, -5, 2, 0, 3)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer)[2:], [5, -5, -5, 5, -5, -5])
    with pytest.raises(IndexOutOfRange, match=r"indices\[0\] = 5 is out of range"):
        one_hot.Launch(stream, buffer[2:4], to_device(np.zeros(6, np.int64), device), 1, 0, 2, 0, 3)
        stream.Sync()


def test_constant_pad_refuses_a_crop_over_src_and_pads_beside_it(device):
    pad = ep.NewPrimitive(ep.ConstantPadFactory, device, np.int8)
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(1, 13, dtype=np.int8)
    whole = np.concatenate([host, np.zeros(20, np.int8)])
    buffer = to_device(whole, device)
    # A crop of 2 into the start of src: a forward copy, yet dst is refused as any dst over src.
    with pytest.raises(ValueError, match="src, dst: share memory; expected separate memory"):
        pad.Launch(stream, 1, (12,), buffer[:12], (-2,), (0,), 0, buffer[:10])
    np.testing.assert_array_equal(to_numpy(buffer), whole)
    pad.Launch(stream, 2, (3, 4), buffer[:12], (1, 0), (0, 1), -1, buffer[12:32])
    stream.Sync()
    expected = np.pad(host.reshape(3, 4), ((1, 0), (0, 1)), constant_values=-1)
    np.testing.assert_array_equal(to_numpy(buffer)[12:].reshape(4, 5), expected)
    np.testing.assert_array_equal(to_numpy(buffer)[:12], host)
