"""launch_trusted, the run ep.ops calls after its own checks, still checks what it cannot know to be
right: a buffer that is not a plain NumPy array is viewed as storage() views it, its size against
the count included (ep.ops read the caller's shape attribute, not the memory a kernel reads)."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy


class _Sub(np.ndarray):
    """A NumPy subclass: launch_trusted's own fast path takes base-class arrays only."""


def test_launch_trusted_refuses_a_buffer_smaller_than_its_count(device):
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    stream = ep.GetDevice(device).default_stream
    host = np.arange(4, dtype=np.float32) - 2
    src = host.view(_Sub) if device == "cpu" else to_device(host, device)
    dst = to_device(np.full(8, 7, np.float32), device)
    with pytest.raises(ValueError, match=r"^src: holds 4 elements, fewer than the 8 the launch needs"):
        relu.launch_trusted(stream, src, dst, 8)
    small = to_device(np.full(4, 7, np.float32), device)
    small = small.view(_Sub) if device == "cpu" else small
    with pytest.raises(ValueError, match=r"^dst: holds 4 elements, fewer than the 8"):
        relu.launch_trusted(stream, to_device(np.ones(8, np.float32), device), small, 8)
    np.testing.assert_array_equal(to_numpy(dst), np.full(8, 7, np.float32))
    relu.launch_trusted(stream, src, dst, 4)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst)[:4], np.maximum(host, 0))


class _OtherView(np.ndarray):
    """A NumPy subclass whose view method hands out other memory."""

    def view(self, *args, **kwargs):
        return np.full(8, 7, np.float32)


def test_launch_reads_a_subclass_memory_not_what_its_view_method_returns(device):
    if device != "cpu":
        pytest.skip("a NumPy subclass is host memory")
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, "relu", np.float32, np.float32)
    stream = ep.GetDevice(device).default_stream
    host = np.arange(8, dtype=np.float32) - 4
    for launch in (relu.Launch, relu.launch_trusted):
        dst = np.zeros(8, np.float32).view(_OtherView)
        launch(stream, host.view(_OtherView), dst, 8)
        stream.Sync()
        np.testing.assert_array_equal(np.ndarray.view(dst, np.ndarray), np.maximum(host, 0))
