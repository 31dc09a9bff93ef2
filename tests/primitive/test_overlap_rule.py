"""The overlap rule holds for every registered primitive: an output that shares memory with an
input without being exactly its elements is refused. Every factory in the registry either
declares its launch (ep/common/primitive/launch.py, where the rule is generated) or is one of the
few with a rule of their own, named here with where it lives; a factory in neither fails."""
import numpy as np
import pytest
from cublas import skip_without_cublas

import ep
from ep.common.primitive.launch import Declaration, Out
from ep.include.primitive.primitive import RegisteredFactories
from ep.testing import to_device, to_numpy

# Primitives whose overlap rule is written by hand, and why.
OWN_RULE = {
    "MemcpyFactory": "bytes: refuses any overlap of dst and src (memcpy.py)",
    "MemsetFactory": "one buffer: nothing to overlap",
    "CopyNdFactory": "boxes of strided buffers: refuses boxes whose bytes intersect (copy_nd.py)",
    "ElementwiseFusedFactory": "arguments that are buffers or scalars by position (elementwise_fused.py)",
    "ReduceFusedFactory": "arguments by position, as ElementwiseFused's; dst shares memory with none (reduce_fused.py)",
}


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_registered_primitive_has_the_overlap_rule(device):
    missing = []
    for factory_type, factory in RegisteredFactories(device).items():
        name = factory_type.__name__
        declaration = getattr(getattr(factory, "primitive_type", None), "launch", None)
        if isinstance(declaration, Declaration):
            assert any(isinstance(b, Out) for b in declaration.buffers), f"{name}: declares no output"
        elif name not in OWN_RULE:
            missing.append(name)
    assert not missing, f"primitives without the overlap rule (declare their launch): {missing}"


def _shifted(device, n, dtype=np.float32):
    """A buffer of n + 1 elements on device, and its host copy."""
    host = (np.arange(n + 1) % 7 - 3).astype(dtype)
    return to_device(host, device), host


def test_elementwise_fused_refuses_a_shifted_output(device):
    from ep.include.primitive.elementwise_fused import Binary, Input

    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, (Binary(ep.BinaryOp.kMul, Input(0), Input(1)),), np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 8)
    other = to_device(np.ones(8, np.float32), device)
    with pytest.raises(ValueError, match=r"args\[0\], dsts\[0\]: share memory without being the same elements"):
        fused.Launch(stream, (buffer[:8], other), ((8,), (8,)), (buffer[1:],))
    np.testing.assert_array_equal(to_numpy(buffer), host)
    with pytest.raises(ValueError, match=r"dsts\[1\], dsts\[0\]: share memory"):
        two = ep.NewPrimitive(
            ep.ElementwiseFusedFactory, device, (Input(0), Binary(ep.BinaryOp.kAdd, Input(0), Input(1))), np.float32, np.float32
        )
        two.Launch(stream, (other, other), ((8,), (8,)), (buffer[:8], buffer[1:]))
    # In place: dst exactly an argument's elements, each read before it is written.
    x = to_device(host[:8].copy(), device)
    fused.Launch(stream, (x, other), ((8,), (8,)), (x,))
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(x), host[:8])


def test_matmul_refuses_c_sharing_a(device):
    matmul = ep.NewPrimitive(ep.MatmulFactory, device, np.float32, "N", "N")
    if matmul is None:
        skip_without_cublas(device)
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 4)
    b = to_device(np.eye(2, dtype=np.float32).ravel(), device)
    # c = a @ I with c one element after a: a BLAS would read a while writing it.
    with pytest.raises(ValueError, match="a, c: share memory; expected separate memory"):
        matmul.Launch(stream, 2, 2, 2, 1.0, buffer[:4], b, 0.0, buffer[1:])
    with pytest.raises(ValueError, match="a, c: share memory"):
        matmul.Launch(stream, 2, 2, 2, 1.0, buffer[:4], b, 0.0, buffer[:4])  # exact aliasing too
    np.testing.assert_array_equal(to_numpy(buffer), host)


def _softmax_reference(x):
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("factory", ["SoftmaxFactory", "LogSoftmaxFactory"])
def test_softmax_refuses_y_one_row_after_x_and_runs_in_place(device, factory):
    softmax = ep.NewPrimitive(getattr(ep, factory), device, np.float64)
    stream = ep.GetDevice(device).CreateStream()
    host = np.linspace(-3, 3, 4 * 8).reshape(4, 8)
    buffer = to_device(np.concatenate([host.ravel(), np.zeros(8)]), device)
    # y one row after x: the rows were read after an earlier row's results overwrote them (off by 0.42, or NaN).
    with pytest.raises(ValueError, match="x, y: share memory without being the same elements"):
        softmax.Launch(stream, 4, 8, buffer[:32], buffer[8:40])
    np.testing.assert_array_equal(to_numpy(buffer)[:32], host.ravel())
    softmax.Launch(stream, 4, 8, buffer[:32], buffer[:32])
    stream.Sync()
    expected = _softmax_reference(host)
    np.testing.assert_allclose(to_numpy(buffer)[:32].reshape(4, 8), expected if factory == "SoftmaxFactory" else np.log(expected), rtol=1e-12)


def test_softmax_backward_refuses_a_shifted_dx_and_runs_in_place(device):
    backward = ep.NewPrimitive(ep.SoftmaxBackwardFactory, device, np.float64)
    stream = ep.GetDevice(device).CreateStream()
    y = _softmax_reference(np.linspace(-3, 3, 16).reshape(2, 8))
    dy = np.cos(np.arange(16.0)).reshape(2, 8)
    expected = y * (dy - (y * dy).sum(1, keepdims=True))
    buffer = to_device(np.concatenate([dy.ravel(), np.zeros(1)]), device)
    with pytest.raises(ValueError, match="dy, dx: share memory without being the same elements"):
        backward.Launch(stream, 2, 8, to_device(y.ravel(), device), buffer[:16], buffer[1:])
    backward.Launch(stream, 2, 8, to_device(y.ravel(), device), buffer[:16], buffer[:16])
    stream.Sync()
    np.testing.assert_allclose(to_numpy(buffer)[:16].reshape(2, 8), expected, rtol=1e-12, atol=1e-15)


def test_constant_pad_refuses_dst_over_src(device):
    pad = ep.NewPrimitive(ep.ConstantPadFactory, device, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(1, 13, dtype=np.int64)
    buffer = to_device(np.concatenate([host, np.zeros(9, np.int64)]), device)
    # dst (4, 5) starting one element after src (3, 4): the pad wrote all pad values, silently.
    with pytest.raises(ValueError, match="src, dst: share memory; expected separate memory"):
        pad.Launch(stream, 2, (3, 4), buffer[:12], (0, 0), (1, 1), -1, buffer[1:])
    with pytest.raises(ValueError, match="src, dst: share memory"):
        pad.Launch(stream, 2, (3, 4), buffer[:12], (0, 0), (0, 0), -1, buffer[:12])  # a copy onto itself too
    np.testing.assert_array_equal(to_numpy(buffer)[:12], host)


def test_where_refuses_z_over_part_of_x_and_runs_in_place(device):
    where = ep.NewPrimitive(ep.WhereFactory, device, np.bool_, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    cond = to_device(np.array([True, False] * 4), device)
    buffer, host = _shifted(device, 8)
    y = to_device(np.full(8, 9, np.float32), device)
    with pytest.raises(ValueError, match="x, z: share memory without being the same elements"):
        where.Launch(stream, 1, (8,), cond, 1, (8,), buffer[:8], 1, (8,), y, buffer[1:])
    np.testing.assert_array_equal(to_numpy(buffer), host)
    where.Launch(stream, 1, (8,), cond, 1, (8,), buffer[:8], 1, (8,), y, buffer[:8])
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer)[:8], np.where([True, False] * 4, host[:8], 9))


def test_one_hot_refuses_out_over_its_indices(device):
    one_hot = ep.NewPrimitive(ep.OneHotFactory, device, np.int64, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    host = np.array([2, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0], np.int64)
    buffer = to_device(host, device)
    # out overlapping the indices: every row came out at class 0, silently.
    with pytest.raises(ValueError, match="indices, out: share memory; expected separate memory"):
        one_hot.Launch(stream, buffer[:4], buffer[1:], 1, 0, 4, 0, 2)
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_add_refuses_dst_over_part_of_a_source_and_sums_in_place(device):
    add = ep.NewPrimitive(ep.AddFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 8)
    other = to_device(np.ones(8, np.float32), device)
    with pytest.raises(ValueError, match=r"srcs\[0\], dst: share memory without being the same elements"):
        add.Launch(stream, [buffer[:8], other], 2, buffer[1:], 8)
    np.testing.assert_array_equal(to_numpy(buffer), host)
    add.Launch(stream, [buffer[:8], other], 2, buffer[:8], 8)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer)[:8], host[:8] + 1)


def test_tensor_fill_takes_src_inside_dst_and_fill_has_one_buffer(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 8)
    ep.NewPrimitive(ep.TensorFillFactory, device, np.float32).Launch(stream, buffer[3:4], buffer, 9)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer), np.full(9, host[3]))
    assert [type(b).__name__ for b in type(ep.NewPrimitive(ep.FillFactory, device, np.float32)).launch.buffers] == ["Out"]


def test_tensor_fill_refuses_src_across_two_of_dsts_elements(device):
    stream = ep.GetDevice(device).CreateStream()
    host = np.zeros(40, np.uint8)
    host[2:6] = np.frombuffer(np.float32(1).tobytes(), np.uint8)
    raw = to_device(host, device)
    dst, src = raw[:32].view(np.float32), raw[2:6].view(np.float32)  # src: half of dst[0], half of dst[1]
    fill = ep.NewPrimitive(ep.TensorFillFactory, device, np.float32)
    # On CUDA, src is refused first as misaligned (any such straddle is).
    message = "src, dst: share memory across dst's elements" if device == "cpu" else "src: starts at address .*, not a multiple"
    with pytest.raises(ValueError, match=message):
        fill.Launch(stream, src, dst, 8)
    np.testing.assert_array_equal(to_numpy(raw), host)


def test_binary_refuses_dst_over_part_of_an_operand_and_runs_in_place(device):
    mul = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, ep.BinaryOp.kMul, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _shifted(device, 8)
    other = to_device(np.full(8, 2, np.float32), device)
    with pytest.raises(ValueError, match="src1, dst: share memory without being the same elements"):
        mul.Launch(stream, (8,), other, (8,), buffer[:8], buffer[1:])
    np.testing.assert_array_equal(to_numpy(buffer), host)
    mul.Launch(stream, (8,), buffer[:8], (), 3.0, buffer[:8])  # in place, with a scalar operand
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer)[:8], host[:8] * 3)


@pytest.mark.parametrize("factory", ["GatherFactory", "UnsortedSegmentSumFactory"])
def test_indexed_primitives_refuse_out_over_an_input(device, factory):
    stream = ep.GetDevice(device).CreateStream()
    primitive = ep.NewPrimitive(getattr(ep, factory), device, np.int64, np.int64)
    host = np.array([1, 0, 1, 0, 5, 6, 7, 8, 9], np.int64)
    buffer = to_device(host, device)
    # Two rows of 2 from a (2, 2) table at [0, 4), into out at [1, 5): over the table.
    with pytest.raises(ValueError, match="share memory; expected separate memory"):
        if factory == "GatherFactory":
            primitive.Launch(stream, buffer[:2], 2, buffer[:4], 1, 2, 2, buffer[1:5])
        else:
            primitive.Launch(stream, buffer[:2], 2, buffer[:4], 1, 1, 2, 2, buffer[1:5])
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_layout_primitives_refuse_dst_over_src(device):
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(16, dtype=np.float32)
    buffer = to_device(host, device)
    message = "src, dst: share memory; expected separate memory"
    # An in-place transpose through BroadcastElementwiseUnary read elements already written.
    unary = ep.NewPrimitive(ep.BroadcastElementwiseUnaryFactory, device, ep.UnaryOp.kIdentity, np.float32, np.float32)
    with pytest.raises(ValueError, match=message):
        unary.Launch(stream, 2, (4, 4), (1, 4), buffer, 2, (4, 4), (4, 1), buffer)
    with pytest.raises(ValueError, match=message):
        ep.NewPrimitive(ep.PermuteFactory, device, 2).Launch(stream, np.float32, 2, (2, 4), buffer[:8], (1, 0), buffer[4:12])
    with pytest.raises(ValueError, match=message):
        ep.NewPrimitive(ep.ExpandFactory, device, np.float32).Launch(stream, (1, 4), buffer[:4], (3, 4), buffer[2:14])
    with pytest.raises(ValueError, match=message):
        ep.NewPrimitive(ep.ExpandGradFactory, device, np.float32).Launch(stream, (3, 4), buffer[:12], (1, 4), buffer[10:14])
    np.testing.assert_array_equal(to_numpy(buffer), host)
