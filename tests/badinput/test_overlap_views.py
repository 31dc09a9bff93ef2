"""out= overlapping an input through a view another library made (NumPy slicing, as_strided,
np.from_dlpack, torch.from_numpy, ctypes, an __array_interface__ object) gives the result of
copying the inputs first: overlap is decided from memory ranges, whoever owns the memory. Every
ops function with out=, each argument a view of any kind of one int64 buffer, on both devices (on
the CUDA simulator, the simulator's arrays over such host views; on a GPU, numba slices and
__cuda_array_interface__ objects)."""
from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.testing import to_device, to_numpy

torch = pytest.importorskip("torch")

# A buffer of int64 values in [0, M): any view of it is valid indices for params of M rows.
M, N = 6, 160
HOST_KINDS = ("numpy", "as_strided", "dlpack", "torch", "ctypes", "interface")


class _Interface:
    """An object exposing memory by __array_interface__ (or __cuda_array_interface__) only."""

    def __init__(self, name: str, interface: dict, owner: object) -> None:
        setattr(self, name, interface)
        self.owner = owner


def host_view(buffer: np.ndarray, kind: str, start: int, shape: tuple[int, ...]):
    """shape elements of buffer from start (C order), as a view made by kind."""
    size = math.prod(shape)
    if kind == "numpy":
        return buffer[start : start + size].reshape(shape)
    if kind == "as_strided":
        strides = tuple(8 * math.prod(shape[d + 1 :]) for d in range(len(shape)))
        return np.lib.stride_tricks.as_strided(buffer[start:], shape, strides)
    if kind == "dlpack":
        return np.from_dlpack(buffer)[start : start + size].reshape(shape)
    if kind == "torch":
        return torch.from_numpy(buffer)[start : start + size].reshape(shape)
    address = buffer.ctypes.data + 8 * start
    if kind == "ctypes":
        return np.ctypeslib.as_array((ctypes.c_int64 * size).from_address(address)).reshape(shape)
    interface = {"shape": shape, "typestr": "<i8", "data": (address, False), "strides": None, "version": 3}
    return np.asarray(_Interface("__array_interface__", interface, buffer))


def view(base, device: str, kind: str, start: int, shape: tuple[int, ...]):
    """A view of base (a cpu or cuda buffer) of kind; on cuda, kinds become the device's own."""
    if device == "cpu":
        return host_view(base, kind, start, shape)
    from numba import config, cuda

    if config.ENABLE_CUDASIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(np.asarray(host_view(base._ary, kind, start, shape)))
    if kind == "numpy":
        return base[start : start + math.prod(shape)].reshape(shape)
    interface = dict(base.__cuda_array_interface__, shape=shape, strides=None, stream=None)
    interface["data"] = (interface["data"][0] + 8 * start, False)
    return cuda.as_cuda_array(_Interface("__cuda_array_interface__", interface, base))


# name: (arguments as (shape, role)...; the out's shape or None; NumPy's result; the ep call).
def _gather_grad(dy, indices):
    dx = np.zeros(M, np.int64)
    np.add.at(dx, indices, dy)
    return dx


CASES = {
    "unary": (lambda n: ((n,),), lambda n: (n,), lambda x: -x, lambda x, **o: ep.ops.unary("negative", x, **o)),
    "binary": (lambda n: ((1, n), (3, n)), lambda n: (3, n), lambda a, b: a - b, lambda a, b, **o: ep.ops.binary("sub", a, b, **o)),
    "binary_row_b": (lambda n: ((3, n), (1, n)), lambda n: (3, n), lambda a, b: a * b, lambda a, b, **o: ep.ops.binary("mul", a, b, **o)),
    "gather": (lambda n: ((M,), (n,)), lambda n: (n,), lambda p, i: p[i], lambda p, i, **o: ep.ops.gather(p, i, **o)),
    "batch_gather": (
        lambda n: ((2, M), (2, n)), lambda n: (2, n),
        lambda p, i: np.take_along_axis(p, i, 1), lambda p, i, **o: ep.ops.batch_gather(p, i, **o),
    ),
    "gather_grad": (lambda n: ((n,), (n,)), None, _gather_grad, lambda dy, i: ep.ops.gather_grad(dy, i, (M,))),
    "expand": (lambda n: ((1, n),), lambda n: (3, n), lambda x: np.broadcast_to(x, (3, x.shape[1])), lambda x, **o: ep.ops.expand(x, (3, x.shape[1]), **o)),
    "expand_grad": (
        lambda n: ((3, n),), lambda n: (1, n),
        lambda dy: dy.sum(0, keepdims=True), lambda dy, **o: ep.ops.expand_grad(dy, (1, dy.shape[1]), **o),
    ),
    "repeat": (lambda n: ((n,),), lambda n: (3 * n,), lambda x: np.tile(x, 3), lambda x, **o: ep.ops.repeat(x, (3,), **o)),
}

kinds = st.sampled_from(HOST_KINDS)
starts = st.integers(4, 12)
shifts = st.integers(-4, 4)  # out's start from the first input's: mostly overlapping


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(1, 40))
def test_out_overlapping_inputs_through_any_view(device, name, data, n):
    in_shapes, out_shape, reference, call = CASES[name]
    host = np.arange(N, dtype=np.int64) * 7 % M
    base = to_device(host, device)
    in_starts = [data.draw(starts) for _ in in_shapes(n)]
    inputs = [view(base, device, data.draw(kinds), start, shape) for start, shape in zip(in_starts, in_shapes(n))]
    # NumPy's answer on copies of the inputs, read before anything is written.
    expected = reference(*(to_numpy(x) for x in inputs))
    want = host.copy()
    if out_shape is None:
        result = call(*inputs)
    else:
        out_start = in_starts[0] + data.draw(shifts)
        out = view(base, device, data.draw(kinds), out_start, out_shape(n))
        assert call(*inputs, out=out) is out
        result = out
        want[out_start : out_start + expected.size] = expected.reshape(-1)
    np.testing.assert_array_equal(to_numpy(result), expected)
    # Nothing outside out was written, and out holds the result.
    np.testing.assert_array_equal(to_numpy(base), want)


@pytest.mark.parametrize("kind", HOST_KINDS)
def test_out_overlapping_a_parallel_size_input(kind):
    # A size the CPU kernels split over threads: every element is the negated input.
    a = np.arange(131072, dtype=np.int64)
    expected = -a[:-1]
    ep.ops.unary("negative", a[:-1], out=host_view(a, kind, 1, (131071,)))
    np.testing.assert_array_equal(a[1:], expected)
    a = np.arange(1000, dtype=np.int64)
    params = host_view(a, kind, 0, (1000,))
    expected = a[::-1].copy()
    ep.ops.gather(a, np.arange(999, -1, -1), out=params)
    np.testing.assert_array_equal(a, expected)


# numba's real device arrays, outside the simulator: an address stands in for memory (nothing is read
# or written), so no GPU is needed.
_NUMBA_BROADCAST = """
import ctypes
import numpy as np
from numba.cuda.cudadrv.devicearray import DeviceNDArray
from ep.common.runtime.overlap import array_interface, byte_range, overlaps

class Memory:
    device_ctypes_pointer = ctypes.c_void_p(1 << 20)

x = DeviceNDArray((3, 4), (0, 0), np.dtype(np.int64), gpu_data=Memory())
out = DeviceNDArray((3, 4), (32, 8), np.dtype(np.int64), gpu_data=Memory())
print(overlaps(x, out, elementwise=True), *byte_range(array_interface(x)))
"""


def test_a_numba_broadcast_array_over_out_is_an_overlap():
    # numba's __cuda_array_interface__ says "C-contiguous" (strides None) for a stride-0 array, which
    # made x look like out's own elements: an elementwise kernel then wrote out[0] while every
    # element of x still read it. x's strides are read from x.
    from nvvm import run_without_simulator

    # x reads the one int64 at its address.
    assert run_without_simulator(["-c", _NUMBA_BROADCAST], timeout=120).split() == ["True", str(1 << 20), str((1 << 20) + 8)]
