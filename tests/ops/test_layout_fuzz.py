"""Every primitive that ep.ops reaches, fuzzed through its op: each argument a view of one buffer
with drawn strides (negative, zero, interleaved, transposed), drawn dtypes, and an out= of drawn
strides (negative, interleaved, transposed; none zero) placed over an input's elements at a drawn
shift, compared with NumPy on copies of the inputs; nothing outside out is written. Each case names
the factory its op launches, and every registered factory is covered here or by tests/badinput
(test_every_factory_is_fuzzed).

The suite runs FUZZ_EXAMPLES examples a case; EP_FUZZ_EXAMPLES=2000 runs it long on demand."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from cublas import missing

import ep
from ep.common.runtime.buffer import cuda_view
from ep.include.primitive.primitive import RegisteredFactories
from ep.testing import to_device, to_numpy

FUZZ_EXAMPLES = int(os.environ.get("EP_FUZZ_EXAMPLES", "12"))
BASE = 2048  # elements of each buffer the views are cut from
M = 5  # rows of gathered params and classes of one_hot: the index buffers hold values in [0, M)


def as_strided_view(base, device: str, start: int, shape: tuple[int, ...], strides: tuple[int, ...]):
    """The view of base (a cpu or cuda buffer) whose element [0, ..., 0] is base[start], strides in
    elements (any sign, zero included)."""
    itemsize = base.dtype.itemsize
    byte_strides = tuple(s * itemsize for s in strides)
    if device == "cpu":
        return np.lib.stride_tricks.as_strided(base[start:], shape, byte_strides)
    from numba import config

    if config.ENABLE_CUDASIM:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(np.lib.stride_tricks.as_strided(base._ary[start:], shape, byte_strides))
    interface = dict(base.__cuda_array_interface__, shape=shape, strides=byte_strides, stream=None)
    interface["data"] = (interface["data"][0] + itemsize * start, False)
    return cuda_view(interface, base, base.dtype)


@st.composite
def layouts(draw, shape: tuple[int, ...], broadcast: bool) -> tuple[int, ...]:
    """Strides (in elements) for shape: dims in a drawn memory order, each reversed or not, with
    gaps (interleaved with another view), and for an input some dims of stride 0."""
    order = draw(st.permutations(range(len(shape))))
    strides = [0] * len(shape)
    step = draw(st.sampled_from([1, 1, 2]))
    for dim in reversed(order):
        if broadcast and draw(st.integers(0, 4)) == 0:
            continue  # stride 0: every index reads one element
        strides[dim] = step * draw(st.sampled_from([1, 1, -1]))
        step *= shape[dim] * draw(st.sampled_from([1, 1, 2]))
    return tuple(strides)


def span(shape, strides) -> tuple[int, int]:
    """The lowest and highest element offset a view reaches from its element [0, ..., 0]."""
    low = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0 and n)
    high = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0 and n)
    return low, high


def place(shape, strides, wanted: int) -> int:
    """The start nearest wanted at which the view fits in a buffer of BASE elements."""
    low, high = span(shape, strides)
    assert high - low < BASE, (shape, strides)
    return min(max(wanted, -low), BASE - 1 - high)


@dataclass(frozen=True)
class Case:
    """One op: the factory it launches, its dtypes, its inputs' shapes for drawn sizes (a role per
    input: "data" views of the shared buffer, "index" of an index buffer, "mask" of a bool one),
    the out's shape (None: the op takes no out=), NumPy's answer and the ep call."""

    factory: type
    dtypes: tuple
    inputs: Callable[[int, int, int], list[tuple[tuple[int, ...], str]]]
    out: Callable[[int, int, int], tuple[int, ...]] | None
    reference: Callable
    call: Callable


def _gather_grad(dy, indices):
    dx = np.zeros((M,) + dy.shape[1:], dy.dtype)
    np.add.at(dx, indices, dy)
    return dx


def _scatter_add(x, index, src):
    out = x.copy()
    np.add.at(out, (index, np.arange(index.shape[1])), src)
    return out


def _one_hot(indices):
    return (indices[..., None] == np.arange(M)).astype(np.int64)


def _softmax(x):
    e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(x.dtype)


_FUSED = ep.fuse(lambda a, b: a * b + a)
_FUSED_SUM = ep.fuse(lambda a, b: ep.ops.sum(a * b + a, dim=1))
I64, F32, BF16 = np.dtype(np.int64), np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)

CASES = {
    "unary": Case(
        ep.ElementwiseUnaryFactory, (I64, F32), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (a, b),
        np.negative, lambda x, **o: ep.ops.unary("negative", x, **o),
    ),
    "cast": Case(
        # Its out a uint64 view of the int64 buffer: overlap across dtypes.
        ep.CastFactory, (I64,), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (a, b),
        lambda x: x.astype(np.uint64), lambda x, **o: ep.ops.unary("cast", x, dtype=np.uint64, **o),
    ),
    "binary": Case(
        ep.BroadcastElementwiseBinaryFactory, (I64, F32, BF16), lambda a, b, c: [((a, b), "data"), ((1, b), "data")],
        lambda a, b, c: (a, b), lambda x, y: (x - y).astype(x.dtype), lambda x, y, **o: ep.ops.binary("sub", x, y, **o),
    ),
    "where": Case(
        ep.WhereFactory, (I64, BF16), lambda a, b, c: [((a, b), "mask"), ((a, b), "data"), ((1, b), "data")],
        lambda a, b, c: (a, b), np.where, lambda m, x, y, **o: ep.ops.where(m, x, y, **o),
    ),
    "add_n": Case(
        ep.AddFactory, (I64, F32), lambda a, b, c: [((a, b), "data")] * 3, lambda a, b, c: (a, b),
        lambda x, y, z: x + y + z, lambda x, y, z, **o: ep.ops.add_n([x, y, z], **o),
    ),
    "fuse": Case(
        ep.ElementwiseFusedFactory, (I64, F32), lambda a, b, c: [((a, b), "data"), ((a, b), "data")],
        lambda a, b, c: (a, b), lambda x, y: x * y + x, lambda x, y, **o: _FUSED(x, y, **o),
    ),
    "expand": Case(
        ep.ExpandFactory, (I64, BF16), lambda a, b, c: [((1, b), "data")], lambda a, b, c: (3, b),
        lambda x: np.broadcast_to(x, (3, x.shape[1])), lambda x, **o: ep.ops.expand(x, (3, x.shape[1]), **o),
    ),
    "expand_grad": Case(
        ep.ExpandGradFactory, (I64,), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (1, b),
        lambda x: x.sum(0, keepdims=True), lambda x, **o: ep.ops.expand_grad(x, (1, x.shape[1]), **o),
    ),
    "repeat": Case(
        ep.CopyNdFactory, (I64,), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (2 * a, b),
        lambda x: np.tile(x, (2, 1)), lambda x, **o: ep.ops.repeat(x, (2, 1), **o),
    ),
    "permute": Case(
        ep.PermuteFactory, (I64, BF16), lambda a, b, c: [((a, b, c), "data")], lambda a, b, c: (c, a, b),
        lambda x: x.transpose(2, 0, 1), lambda x, **o: ep.ops.permute(x, (2, 0, 1), **o),
    ),
    "pad": Case(
        ep.ConstantPadFactory, (I64,), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (a + 2, b + 1),
        lambda x: np.pad(x, ((0, 2), (1, 0)), constant_values=3), lambda x, **o: ep.ops.pad(x, (1, 0, 0, 2), 3, **o),
    ),
    "gather": Case(
        ep.GatherFactory, (I64, F32), lambda a, b, c: [((M, b), "data"), ((a,), "index")], lambda a, b, c: (a, b),
        lambda p, i: p[i], lambda p, i, **o: ep.ops.gather(p, i, **o),
    ),
    "batch_gather": Case(
        ep.BatchGatherFactory, (I64,), lambda a, b, c: [((b, M), "data"), ((b, a), "index")], lambda a, b, c: (b, a),
        lambda p, i: np.take_along_axis(p, i, 1), lambda p, i, **o: ep.ops.batch_gather(p, i, **o),
    ),
    "gather_grad": Case(
        ep.UnsortedSegmentSumFactory, (I64, F32), lambda a, b, c: [((a, b), "data"), ((a,), "index")], None,
        _gather_grad, lambda dy, i: ep.ops.gather_grad(dy, i, (M, dy.shape[1])),
    ),
    "scatter_add": Case(
        ep.DimScatterFactory, (I64, F32), lambda a, b, c: [((M, b), "data"), ((a, b), "index"), ((a, b), "data")], lambda a, b, c: (M, b),
        _scatter_add, lambda x, i, s, **o: ep.ops.scatter_add(x, 0, i, s, **o),
    ),
    "one_hot": Case(
        ep.OneHotFactory, (I64,), lambda a, b, c: [((a, b), "index")], lambda a, b, c: (a, b, M),
        _one_hot, lambda i, **o: ep.ops.one_hot(i, M, **o),
    ),
    # full takes no input, only out's shape and a device: the tests call it by name.
    "full": Case(ep.FillFactory, (I64, BF16), lambda a, b, c: [], lambda a, b, c: (a, b), None, None),
    "sum": Case(
        ep.ReduceFactory, (I64, F32), lambda a, b, c: [((a, b, c), "data")], lambda a, b, c: (a, c),
        lambda x: x.sum(1, dtype=x.dtype), lambda x, **o: ep.ops.sum(x, 1, **o),
    ),
    "fused_sum": Case(
        ep.ReduceFusedFactory, (I64, F32), lambda a, b, c: [((a, b, c), "data"), ((a, b, c), "data")], lambda a, b, c: (a, c),
        lambda x, y: (x * y + x).sum(1, dtype=x.dtype), lambda x, y, **o: _FUSED_SUM(x, y, **o),
    ),
    "cumsum": Case(
        ep.ScanFactory, (I64, F32), lambda a, b, c: [((a, b, c), "data")], lambda a, b, c: (a, b, c),
        lambda x: np.cumsum(x, 1, dtype=x.dtype), lambda x, **o: ep.ops.cumsum(x, 1, **o),
    ),
    "softmax": Case(
        ep.SoftmaxFactory, (F32,), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (a, b),
        _softmax, lambda x, **o: ep.ops.softmax(x, -1, **o),
    ),
    "log_softmax": Case(
        ep.LogSoftmaxFactory, (F32,), lambda a, b, c: [((a, b), "data")], lambda a, b, c: (a, b),
        lambda x: np.log(_softmax(x.astype(np.float64))).astype(x.dtype), lambda x, **o: ep.ops.log_softmax(x, -1, **o),
    ),
    "softmax_grad": Case(
        ep.SoftmaxBackwardFactory, (F32,), lambda a, b, c: [((a, b), "data"), ((a, b), "data")], lambda a, b, c: (a, b),
        lambda y, dy: y * (dy - (y * dy).sum(-1, keepdims=True)), lambda y, dy, **o: ep.ops.softmax_grad(y, dy, -1, **o),
    ),
    "log_softmax_grad": Case(
        ep.LogSoftmaxBackwardFactory, (F32,), lambda a, b, c: [((a, b), "data"), ((a, b), "data")],
        lambda a, b, c: (a, b), lambda y, dy: dy - np.exp(y) * dy.sum(-1, keepdims=True),
        lambda y, dy, **o: ep.ops.log_softmax_grad(y, dy, -1, **o),
    ),
    "matmul": Case(
        ep.BroadcastMatmulFactory, (I64, F32), lambda a, b, c: [((a, b), "data"), ((b, c), "data")], lambda a, b, c: (a, c),
        np.matmul, lambda x, y, **o: ep.ops.matmul(x, y, **o),
    ),
}

# Registered factories no op launches: their Launch takes flat storage, and the overlap rule of every
# factory is tested by tests/primitive/test_overlap_rule.py and test_overlap_elementwise.py.
LAUNCH_ONLY = {
    ep.BroadcastElementwiseUnaryFactory, ep.MatmulFactory, ep.BatchMatmulFactory, ep.MemcpyFactory, ep.MemsetFactory,
    ep.TensorFillFactory,
}


def test_every_factory_is_fuzzed():
    fuzzed = {case.factory for case in CASES.values()}
    assert set(RegisteredFactories("cpu")) == fuzzed | LAUNCH_ONLY
    assert not fuzzed & LAUNCH_ONLY


def _values(dtype, size: int, role: str) -> np.ndarray:
    """A buffer's host values: small integers exact in every dtype (sums and products stay exact)."""
    values = np.arange(size) * 7 % (M if role == "index" else 9) - (0 if role == "index" else 4)
    return values.astype(np.bool_ if role == "mask" else np.int64 if role == "index" else dtype)


def _assert_close(got, want, dtype) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if dtype == F32 and not np.array_equal(got, want):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(data=st.data(), sizes=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3)))
def test_views_with_any_strides_and_out_over_an_input(device, name, data, sizes):
    case = CASES[name]
    # Float matmul on CUDA is cuBLAS's, which may not run here (the simulator, no nvmath-python).
    dtype = data.draw(st.sampled_from((I64,) if name == "matmul" and missing(device) else case.dtypes), "dtype")
    bases = {role: _values(dtype, BASE, role) for role in ("data", "index", "mask")}
    devices = {role: to_device(host, device) for role, host in bases.items()}
    inputs, starts = [], []
    for shape, role in case.inputs(*sizes):
        strides = data.draw(layouts(shape, broadcast=role != "index"), "strides")
        start = place(shape, strides, data.draw(st.integers(0, BASE), "start"))
        inputs.append(as_strided_view(devices[role], device, start, shape, strides))
        starts.append(start if role == "data" else None)
    # NumPy's answer on copies of the inputs, read before anything is written.
    hosts = [np.array(to_numpy(x)) for x in inputs]
    if name == "full":
        expected = np.full(case.out(*sizes), 7, dtype)
    else:
        expected = case.reference(*hosts)
    want = bases["data"].copy()
    if case.out is None:
        result = case.call(*inputs)
    else:
        shape = case.out(*sizes)
        # An out of any strides whose elements are apart, placed anywhere: over an input's
        # elements, shifted a little, or elsewhere.
        strides = data.draw(layouts(shape, broadcast=False), "out strides")
        near = [s for s in starts if s is not None]
        wanted = data.draw(st.sampled_from(near), "over") + data.draw(st.integers(-3, 3)) if near else data.draw(st.integers(0, BASE))
        start = place(shape, strides, wanted)
        # An out of another dtype of the same width (cast's uint64) views the same buffer.
        assert expected.dtype.itemsize == dtype.itemsize, name
        out_base = devices["data"].view(expected.dtype)
        out = as_strided_view(out_base, device, start, shape, strides)
        result = ep.ops.full(shape, 7, device=device, out=out) if name == "full" else case.call(*inputs, out=out)
        assert result is out
        np.lib.stride_tricks.as_strided(want.view(expected.dtype)[start:], shape, tuple(s * want.itemsize for s in strides))[...] = expected
    _assert_close(to_numpy(result), expected, dtype)
    # Nothing outside out was written (and no input was changed where out is not).
    _assert_close(to_numpy(devices["data"]), want, dtype)
    for role in ("index", "mask"):
        np.testing.assert_array_equal(to_numpy(devices[role]), bases[role])


@pytest.mark.parametrize("name", sorted(name for name, case in CASES.items() if case.out is not None))
def test_a_strided_out_receives_the_result_and_nothing_else_is_written(device, name):
    case = CASES[name]
    dtype = case.dtypes[0]
    host = _values(dtype, BASE, "data")
    base = to_device(host, device)
    hosts = [_values(dtype, math.prod(shape), role).reshape(shape) for shape, role in case.inputs(2, 3, 2)]
    inputs = [to_device(h, device) for h in hosts]
    expected = np.full(case.out(2, 3, 2), 7, dtype) if name == "full" else case.reference(*hosts)
    shape = expected.shape
    for strides in (
        tuple(2 * math.prod(shape[d + 1 :]) for d in range(len(shape))),  # every other element
        tuple(-math.prod(shape[d + 1 :]) for d in range(len(shape))),  # every dim reversed
    ):
        start = place(shape, strides, 10)
        out = as_strided_view(base.view(expected.dtype), device, start, shape, strides)
        result = ep.ops.full(shape, 7, device=device, out=out) if name == "full" else case.call(*inputs, out=out)
        assert result is out
        want = host.copy()
        np.lib.stride_tricks.as_strided(want.view(expected.dtype)[start:], shape, tuple(s * want.itemsize for s in strides))[...] = expected
        _assert_close(to_numpy(base), want, dtype)
        host = want
        base = to_device(host, device)


@pytest.mark.parametrize("name", sorted(name for name, case in CASES.items() if case.out is not None))
def test_an_out_whose_elements_share_memory_is_refused_before_anything_is_written(device, name):
    case = CASES[name]
    dtype = case.dtypes[0]
    host = _values(dtype, BASE, "data")
    base = to_device(host, device)
    inputs = [
        to_device(_values(dtype, math.prod(shape), role).reshape(shape), device) for shape, role in case.inputs(2, 3, 2)
    ]
    shape = case.out(2, 3, 2)
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    strides[next(d for d, n in enumerate(shape) if n > 1)] = 0  # a dim's elements all at one place
    dst_dtype = np.uint64 if name == "cast" else dtype
    out = as_strided_view(base.view(dst_dtype), device, 10, shape, tuple(strides))
    with pytest.raises(ValueError, match=r"out: element strides: \(.*\b0\b.* may put two elements at one offset"):
        ep.ops.full(shape, 7, device=device, out=out) if name == "full" else case.call(*inputs, out=out)
    np.testing.assert_array_equal(to_numpy(base), host)


@pytest.mark.parametrize("shape, strides, start", [((3, 4), (-4, 1), 8), ((3, 4), (-1, -3), 11), ((2, 3, 2), (6, -2, -1), 5)])
def test_reversed_inputs_are_read_as_numpy_reads_them(device, shape, strides, start):
    # A cuda copy (CopyNd) takes strides >= 0: reversed dims are turned around and back (Gathers).
    host = np.arange(12, dtype=np.int64)
    x = as_strided_view(to_device(host, device), device, start, shape, strides)
    want = np.lib.stride_tricks.as_strided(host[start:], shape, tuple(8 * s for s in strides))
    np.testing.assert_array_equal(to_numpy(ep.ops.unary("negative", x)), -want)
    np.testing.assert_array_equal(to_numpy(ep.ops.permute(x, tuple(range(len(shape)))[::-1])), want.T)
