"""The overlap rule on the elementwise primitives (BroadcastElementwiseBinary, BroadcastElementwiseUnary,
Fill, TensorFill, Add): an output one element after an input is refused, naming both, with nothing
written; an output exactly an input runs in place where the kernel reads each element before
writing it, and is refused where it does not."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy


def _buffer(device, n, dtype=np.float32):
    """A buffer of n + 1 elements on device, and its host copy."""
    host = (np.arange(n + 1) % 7 - 3).astype(dtype)
    return to_device(host, device), host


def _binary(device, op=ep.BinaryOp.kAdd):
    return ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, op, np.float32, np.float32)


def test_binary_refuses_dst_one_element_after_src0(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 8)
    other = to_device(np.ones(8, np.float32), device)
    with pytest.raises(ValueError, match="src0, dst: share memory without being the same elements; expected dst to be src0 or separate memory"):
        _binary(device).Launch(stream, (8,), buffer[:8], (8,), other, buffer[1:])
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_binary_refuses_dst_over_a_broadcast_row(device):
    # dst (4, 4) starting at src1's row: row 0's results overwrote the row rows 1-3 then read.
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 16)
    src0 = to_device(np.ones(16, np.float32), device)
    with pytest.raises(ValueError, match="src1, dst: share memory without being the same elements"):
        _binary(device).Launch(stream, (4, 4), src0, (1, 4), buffer[:4], buffer[:16])
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_binary_runs_in_place_on_both_operands(device):
    stream = ep.GetDevice(device).CreateStream()
    host = np.linspace(-2, 2, 12, dtype=np.float32)
    x = to_device(host.copy(), device)
    _binary(device, ep.BinaryOp.kMul).Launch(stream, (3, 4), x, (3, 4), x, x)  # x *= x
    row = to_device(np.arange(4, dtype=np.float32), device)
    _binary(device).Launch(stream, (1, 4), row, (3, 4), x, x)  # x = row + x: dst exactly src1
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(x), (host * host).ravel() + np.tile(np.arange(4, dtype=np.float32), 3))


def _identity(device):
    return ep.NewPrimitive(ep.BroadcastElementwiseUnaryFactory, device, ep.UnaryOp.kIdentity, np.float32, np.float32)


def test_broadcast_unary_refuses_dst_one_element_after_src(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 8)
    with pytest.raises(ValueError, match="src, dst: share memory; expected separate memory"):
        _identity(device).Launch(stream, 1, (8,), (1,), buffer[:8], 1, (8,), (1,), buffer[1:])
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_broadcast_unary_refuses_dst_exactly_src(device):
    # Strided buffers are checked by the memory their layouts span: even the same layout is refused
    # (an in-place transpose of that span read elements already written).
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 16)
    with pytest.raises(ValueError, match="src, dst: share memory; expected separate memory"):
        _identity(device).Launch(stream, 2, (4, 4), (4, 1), buffer[:16], 2, (4, 4), (4, 1), buffer[:16])
    with pytest.raises(ValueError, match="src, dst: share memory; expected separate memory"):
        _identity(device).Launch(stream, 2, (4, 4), (1, 4), buffer[:16], 2, (4, 4), (4, 1), buffer[:16])
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_broadcast_unary_transposes_into_separate_memory(device):
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(16, dtype=np.float32)
    dst = to_device(np.zeros(16, np.float32), device)
    _identity(device).Launch(stream, 2, (4, 4), (1, 4), to_device(host, device), 2, (4, 4), (4, 1), dst)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), host.reshape(4, 4).T.ravel())


def test_fill_has_one_buffer_and_writes_only_its_elements(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 8)
    fill = ep.NewPrimitive(ep.FillFactory, device, np.float32)
    assert [b.name for b in type(fill).launch.buffers] == ["dst"]
    fill.Launch(stream, buffer[2:6], -0.0, 4)
    stream.Sync()
    result = to_numpy(buffer)
    np.testing.assert_array_equal(np.signbit(result[2:6]), [True] * 4)
    np.testing.assert_array_equal(np.delete(result, range(2, 6)), np.delete(host, range(2, 6)))


def test_tensor_fill_takes_src_exactly_dst_or_next_to_it(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 8)
    tensor_fill = ep.NewPrimitive(ep.TensorFillFactory, device, np.float32)
    tensor_fill.Launch(stream, buffer[0:1], buffer[0:1], 1)  # dst exactly src: its own value
    tensor_fill.Launch(stream, buffer[8:9], buffer[:8], 8)  # src just after dst
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(buffer), np.full(9, host[8]))


def _add(device):
    return ep.NewPrimitive(ep.AddFactory, device, np.float32)


def test_add_refuses_dst_one_element_after_a_later_source(device):
    stream = ep.GetDevice(device).CreateStream()
    buffer, host = _buffer(device, 8)
    other = to_device(np.ones(8, np.float32), device)
    with pytest.raises(ValueError, match=r"srcs\[1\], dst: share memory without being the same elements; expected dst to be srcs\[1\] or separate memory"):
        _add(device).Launch(stream, [other, buffer[1:], other], 3, buffer[:8], 8)
    np.testing.assert_array_equal(to_numpy(buffer), host)


def test_add_runs_in_place_on_any_source_and_past_one_pass(device):
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(8, dtype=np.float32)
    x = to_device(host.copy(), device)
    one = to_device(np.ones(8, np.float32), device)
    _add(device).Launch(stream, [one, x, x], 3, x, 8)  # x = 1 + 2x
    # Twelve sources, x the tenth: read in the second pass, after the first pass's sum.
    sources = [one] * 9 + [x] + [one] * 2
    _add(device).Launch(stream, sources, 12, x, 8)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(x), 1 + 2 * host + 11)


def test_add_keeps_its_arity_message(device):
    with pytest.raises(ValueError, match="arity: 0; expected at least one source"):
        _add(device).Launch(ep.GetDevice(device).CreateStream(), [], 0, to_device(np.zeros(1, np.float32), device), 1)
