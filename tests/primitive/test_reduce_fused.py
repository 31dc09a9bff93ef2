"""ReduceFused's Launch: a reduction of an expression against NumPy, its arguments' checks by
position, the overlap rule (dst shares memory with no argument), and New's refusals."""
import numpy as np
import pytest

import ep
from ep.include.primitive.elementwise_fused import Binary, Input, Scalar, Unary
from ep.testing import to_device, to_numpy

MUL = Binary(ep.BinaryOp.kMul, Input(0), Input(1))


def _new(device, op="sum", expression=MUL, dst=np.float32, *dtypes):
    return ep.NewPrimitive(ep.ReduceFusedFactory, device, op, expression, dst, *(dtypes or (np.float32, np.float32)))


@pytest.mark.parametrize("dst_dims", [(5, 1), (1, 37), (1, 1)], ids=str)
@pytest.mark.parametrize("op, reference", [("sum", np.sum), ("amax", np.max), ("mean", np.mean)])
def test_a_reduction_of_a_product_matches_numpy(device, dst_dims, op, reference):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((5, 37)).astype(np.float32), rng.standard_normal((5, 37)).astype(np.float32)
    dst = to_device(np.zeros(int(np.prod(dst_dims)), np.float32), device)
    stream = ep.GetDevice(device).CreateStream()
    _new(device, op).Launch(stream, [to_device(x, device), to_device(y, device)], (5, 37), dst_dims, dst)
    stream.Sync()
    axis = tuple(d for d, n in enumerate(dst_dims) if n == 1)
    np.testing.assert_allclose(to_numpy(dst), reference(x.astype(np.float64) * y, axis=axis).ravel(), rtol=1e-5, atol=1e-5)


def test_scalar_arguments_and_integer_sums(device):
    expression = Binary(ep.BinaryOp.kAdd, Unary(ep.UnaryOp.kAbs, Input(0)), Scalar(1))
    primitive = _new(device, "sum", expression, np.int64, np.int32, np.int32)
    x = np.arange(-12, 12, dtype=np.int32)
    dst = to_device(np.zeros(4, np.int64), device)
    stream = ep.GetDevice(device).CreateStream()
    primitive.Launch(stream, [to_device(x, device), 3], (4, 6), (4, 1), dst)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), (np.abs(x) + 3).reshape(4, 6).sum(1))


def test_arguments_are_checked_by_position(device):
    primitive, stream = _new(device), ep.GetDevice(device).CreateStream()
    x, dst = to_device(np.ones(6, np.float32), device), to_device(np.zeros(2, np.float32), device)
    with pytest.raises(TypeError, match=r"args: expected a tuple or list of 2 entries; got 1 entries"):
        primitive.Launch(stream, [x], (2, 3), (2, 1), dst)
    with pytest.raises(ValueError, match=r"args\[1\]"):
        primitive.Launch(stream, [x, x[:5]], (2, 3), (2, 1), dst)
    with pytest.raises(TypeError, match=r"args\[0\]"):
        primitive.Launch(stream, [to_device(np.ones(6, np.float64), device), x], (2, 3), (2, 1), dst)
    with pytest.raises(ValueError, match="dst_dims"):
        primitive.Launch(stream, [x, x], (2, 3), (2, 2), dst)


def test_dst_shares_memory_with_no_argument(device):
    primitive, stream = _new(device), ep.GetDevice(device).CreateStream()
    buffer = to_device(np.arange(8, dtype=np.float32), device)
    other = to_device(np.ones(6, np.float32), device)
    with pytest.raises(ValueError, match=r"args\[0\], dst: share memory"):
        primitive.Launch(stream, [buffer[:6], other], (2, 3), (2, 1), buffer[5:7])
    np.testing.assert_array_equal(to_numpy(buffer), np.arange(8, dtype=np.float32))


def test_new_refuses_what_reduce_refuses(device):
    assert _new(device, "sum", MUL, np.float16) is None  # Reduce sums float32 into float32 only
    assert _new(device, "argmax", MUL, np.int64) is not None
    with pytest.raises(TypeError, match="one expression"):
        _new(device, "sum", (MUL, MUL))
    many = Input(0)
    for i in range(1, 17):
        many = Binary(ep.BinaryOp.kAdd, many, Input(i))
    with pytest.raises(ValueError, match="at most 16"):
        _new(device, "sum", many, np.float32, *([np.float32] * 17))
