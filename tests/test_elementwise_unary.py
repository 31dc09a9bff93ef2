"""ElementwiseUnary through NewPrimitive + Launch and through ep.ops.unary, against NumPy."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy


def launch(device, op, x, dst_dtype=None, attr0=None, attr1=None):
    dst_dtype = np.dtype(dst_dtype or x.dtype)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, op, x.dtype, dst_dtype, attr0, attr1)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.zeros(x.shape, dst_dtype), device)
    primitive.Launch(stream, src, dst, x.size)
    stream.Sync()
    return to_numpy(dst)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relu_matches_numpy(device, dtype):
    x = np.linspace(-3, 3, 101).astype(dtype)
    np.testing.assert_array_equal(launch(device, ep.UnaryOp.kRelu, x), np.maximum(x, 0))


def test_launch_leaves_src_unchanged_and_count_bounds_the_write(device):
    x = np.linspace(-3, 3, 50).astype(np.float32)
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kNegative, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(x, device), to_device(np.full(50, 7, np.float32), device)
    primitive.Launch(stream, src, dst, 20)
    stream.Sync()
    out = to_numpy(dst)
    np.testing.assert_array_equal(out[:20], -x[:20])
    np.testing.assert_array_equal(out[20:], 7)
    np.testing.assert_array_equal(to_numpy(src), x)


def test_count_larger_than_a_buffer_is_refused(device):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(np.ones(8, np.float32), device), to_device(np.zeros(4, np.float32), device)
    with pytest.raises(ValueError, match="dst: holds 4 elements"):
        primitive.Launch(stream, src, dst, 8)
    np.testing.assert_array_equal(to_numpy(dst), 0)


def test_wrong_dtype_for_the_primitive(device):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    src, dst = to_device(np.ones(4, np.float64), device), to_device(np.zeros(4, np.float32), device)
    with pytest.raises(TypeError, match="src: dtype float64 does not match the primitive's float32"):
        primitive.Launch(stream, src, dst, 4)


def test_non_array_argument(device):
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    with pytest.raises(TypeError, match="src: list"):
        primitive.Launch(stream, [1.0, 2.0], to_device(np.zeros(2, np.float32), device), 2)


def test_buffer_of_the_other_device_is_refused(device):
    other = "cpu" if device == "cuda" else "cuda"
    if other not in [d.value for d in ep.common.device.available_device_types()]:
        pytest.skip("needs both devices")
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    foreign = to_device(np.ones(4, np.float32), other)
    with pytest.raises(TypeError, match=f"src: .* was given to a {device} primitive"):
        primitive.Launch(stream, foreign, to_device(np.zeros(4, np.float32), device), 4)


def test_attribute_on_an_op_that_takes_none(device):
    with pytest.raises(ValueError, match="attr0: kRelu takes no attributes"):
        ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kRelu, np.float32, np.float32, 0.5)


def test_ops_unary_unknown_op_name(device):
    with pytest.raises(ValueError, match="op: 'frobnicate' is not a unary op"):
        ep.ops.unary("frobnicate", to_device(np.ones(3, np.float32), device))


def test_ops_unary_unsupported_dtype_names_op_and_dtype(device):
    with pytest.raises(TypeError, match="kExp does not support dtype int32"):
        ep.ops.unary("exp", to_device(np.ones(3, np.int32), device))


def test_ops_unary_strided_input_on_cpu():
    x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6)[:, ::2]
    np.testing.assert_array_equal(ep.ops.unary("relu", x), np.maximum(x, 0))
