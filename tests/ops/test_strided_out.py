"""out= of any strides, as NumPy and PyTorch take it: the op writes a C-contiguous stand-in that one
more launch copies through out's strides (operands.write_out). Every op with out= is run into a
strided out by tests/ops/test_layout_fuzz.py; here the layouts and kinds of out that take their own
path: a tuple of outs, strides that are not whole elements (and an input of such strides, which the
copy before a launch reads by the same rule), in place, and ep.fuse."""
from __future__ import annotations

import numpy as np
import pytest

import ep
import ep.ops
from ep.common.runtime.buffer import cuda_view
from ep.testing import to_device, to_numpy
from ep.testing.arrays import transposed


def _byte_strided(base, device: str, offset: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype):
    """A view of dtype over base (a 1-d uint8 cpu or cuda buffer) from byte offset with byte
    strides, which need not be whole elements (a field of packed records)."""
    if device == "cpu":
        return np.ndarray(shape, dtype, buffer=base, offset=offset, strides=strides)
    from numba import config

    if config.ENABLE_CUDASIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(np.ndarray(shape, dtype, buffer=base._ary, offset=offset, strides=strides))
    interface = dict(base.__cuda_array_interface__, shape=shape, strides=strides, typestr=np.dtype(dtype).str, stream=None)
    interface["data"] = (interface["data"][0] + offset, False)
    return cuda_view(interface, base, np.dtype(dtype))


def test_cummax_writes_a_tuple_of_strided_outs(device):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    values = transposed(to_device(np.zeros((4, 3), np.float32), device))
    indices = to_device(np.zeros((3, 8), np.int64), device)[:, ::2]
    result = ep.ops.cummax(to_device(x, device), 1, out=(values, indices))
    assert type(result) is ep.ops.scan.ValuesIndices and result.values is values and result.indices is indices
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    want = torch.cummax(torch.from_numpy(x), 1)
    np.testing.assert_array_equal(to_numpy(values), want.values.numpy())
    np.testing.assert_array_equal(to_numpy(indices), want.indices.numpy())


def test_an_out_of_strides_not_whole_elements_is_written_bytewise(device):
    # The float32 field of 5-byte records: every element's bytes, and no byte between them.
    host = np.arange(3 * 5 * 4, dtype=np.uint8)
    base = to_device(host, device)
    offset = 1 if device == "cpu" else 0  # a cuda array must start at a multiple of its element size
    out = _byte_strided(base, device, offset, (3, 4), (20, 5), np.float32)
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    assert ep.ops.unary("neg", to_device(x, device), out=out) is out
    want = host.copy()
    np.ndarray((3, 4), np.float32, buffer=want, offset=offset, strides=(20, 5))[...] = -x
    np.testing.assert_array_equal(to_numpy(base), want)


def test_an_input_of_strides_not_whole_elements_is_read_bytewise(device):
    host = np.arange(3 * 5 * 4, dtype=np.uint8)
    offset = 1 if device == "cpu" else 0  # a cuda array must start at a multiple of its element size
    x = _byte_strided(to_device(host, device), device, offset, (3, 4), (20, 5), np.float32)
    want = np.ndarray((3, 4), np.float32, buffer=host, offset=offset, strides=(20, 5))
    np.testing.assert_array_equal(to_numpy(ep.ops.unary("neg", x)), -want)


def test_an_elementwise_op_in_place_on_a_strided_array_reads_before_it_writes(device):
    host = np.arange(24, dtype=np.int64).reshape(4, 6)
    base = to_device(host, device)
    x = transposed(base)  # (6, 4), strides (1, 6)
    assert ep.ops.binary("add", x, transposed(base), out=x) is x
    np.testing.assert_array_equal(to_numpy(base), 2 * host)


def test_a_fused_call_writes_strided_outs(device):
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    two = ep.fuse(lambda a: (a * 2, a + 1))
    first = transposed(to_device(np.zeros((3, 4), np.float32), device))
    second = to_device(np.zeros((4, 6), np.float32), device)[:, ::2]
    assert two(to_device(x, device), out=(first, second)) == (first, second)
    np.testing.assert_array_equal(to_numpy(first), x * 2)
    np.testing.assert_array_equal(to_numpy(second), x + 1)
    total = ep.fuse(lambda a: ep.ops.sum(a * a, dim=1))
    out = to_device(np.zeros(8, np.float32), device)[::2]
    assert total(to_device(x, device), out=out) is out
    np.testing.assert_allclose(to_numpy(out), (x * x).sum(1), rtol=1e-6)


def test_an_out_whose_elements_overlap_is_refused_naming_it(device):
    x = to_device(np.ones(4, np.float32), device)
    base = to_device(np.zeros(16, np.uint8), device)
    out = _byte_strided(base, device, 0, (4,), (2,), np.float32)  # each element's bytes over the next's
    with pytest.raises(ValueError, match=r"out: byte strides: \(2, 1\) for dims \(4, 4\) may put two elements at one offset"):
        ep.ops.unary("neg", x, out=out)
    assert not to_numpy(base).any()


def test_a_tuple_of_outs_sharing_memory_is_refused_naming_them(device):
    x = to_device(np.ones((2, 3), np.float32), device)
    memory = to_device(np.zeros((2, 6), np.float32), device)
    two = ep.fuse(lambda a: (a * 2, a + 1))
    with pytest.raises(ValueError, match=r"out\[0\], out\[1\]: share memory; expected separate arrays"):
        two(x, out=(memory[:, ::2], memory[:, 1:4]))
    values = to_device(np.zeros((2, 6), np.float32), device)
    with pytest.raises(ValueError, match=r"out\[0\], out\[1\]: share memory"):
        ep.ops.cummax(x, 1, out=(values[:, ::2], values[:, :3].view(np.int32)))
    assert not to_numpy(memory).any() and not to_numpy(values).any()
