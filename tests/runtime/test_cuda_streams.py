"""CUDA streams on the simulator: the caller's stream objects accepted and launched on, producers'
streams waited for with events, no host work hidden in a Launch (counted by instrumenting numba),
check_bounds raised at Sync, the default stream's CAI v3 handle, the device a launch runs on."""
from __future__ import annotations

import weakref

import numpy as np
import pytest

import ep
import ep.ops
from ep.common.runtime import buffer, device as streams, dlpack
from ep.common.runtime.device import Device, DeviceType, cuda_available
from ep.testing import to_device, to_numpy

pytestmark = pytest.mark.skipif(not cuda_available(), reason="needs numba-cuda (a GPU or the simulator)")


class StreamProtocol:
    """A stream in the CUDA stream protocol (cuda.core, CuPy >= 13, numba): __cuda_stream__()."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


class StreamAttribute:
    """An older protocol producer: __cuda_stream__ as an attribute."""

    def __init__(self, handle):
        self.__cuda_stream__ = (0, handle)


class TorchLikeStream:
    """torch.cuda.Stream's attributes: cuda_stream and device.index."""

    def __init__(self, handle, index=0):
        self.cuda_stream = handle
        self.device = type("device", (), {"index": index})()


class CupyLikeStream:
    """CuPy's older Stream: ptr and device_id."""

    def __init__(self, handle, index=0):
        self.ptr, self.device_id = handle, index


@pytest.fixture
def cuda_device():
    return ep.GetDevice("cuda")


@pytest.fixture
def new_handle():
    """new_handle(): a caller's stream handle: a made-up number on the simulator (which launches on
    no stream), a new stream's on a GPU (kept until the test ends)."""
    from numba import config, cuda

    kept = []

    def make(fake: int) -> int:
        if config.ENABLE_CUDASIM:
            return fake
        kept.append(cuda.stream())
        return streams.bound_handle(kept[-1])

    return make


@pytest.fixture
def launches(monkeypatch):
    """The ep stream of every kernel launch made while the test runs, on streams first used in it.

    Every launch calls a kernel configured for its stream by CudaKernel._bind (kept by the stream:
    CudaKernel.launch and the launches primitives keep), so the configured kernels made here record
    their stream; the streams drop them afterwards.
    """
    from ep.cuda.kernel import CudaKernel

    seen, bound = [], []
    original = CudaKernel._bind

    def bind(self, stream, work):
        configured = original(self, stream, work)
        bound.append(stream)

        def launch(*args):
            seen.append(stream)
            configured(*args)

        return launch

    monkeypatch.setattr(CudaKernel, "_bind", bind)
    yield seen
    for stream in bound:
        stream.launches.clear()


@pytest.mark.parametrize("make", [StreamProtocol, StreamAttribute, TorchLikeStream, CupyLikeStream, int])
def test_a_callers_stream_object_is_wrapped_and_launched_on(cuda_device, launches, new_handle, make):
    handle = new_handle(0x7F0000 + 16 * [StreamProtocol, StreamAttribute, TorchLikeStream, CupyLikeStream, int].index(make))
    foreign = make(handle)
    wrapped = cuda_device.WrapStream(foreign)
    assert isinstance(wrapped, streams.CudaStream) and wrapped.handle == handle and wrapped.device is cuda_device
    assert cuda_device.WrapStream(make(handle)) is wrapped  # one ep stream per caller's stream
    x = np.linspace(-2, 2, 40, dtype=np.float32)
    # Straight to a primitive: Launch wraps what it is given.
    primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cuda", ep.UnaryOp.kRelu, np.float32, np.float32)
    out = to_device(np.zeros_like(x), "cuda")
    primitive.Launch(foreign, to_device(x, "cuda"), out, x.size)
    wrapped.Sync()
    np.testing.assert_array_equal(to_numpy(out), np.maximum(x, 0))
    assert launches and all(s is wrapped for s in launches)


def test_handle_zero_is_the_default_stream_and_ep_streams_pass_through(cuda_device):
    assert cuda_device.WrapStream(0) is cuda_device.default_stream
    created = cuda_device.CreateStream()
    assert cuda_device.WrapStream(created) is created


@pytest.mark.parametrize("bad", [None, "stream", 2.5, True, StreamProtocol("x")])
def test_what_is_no_stream_is_refused_naming_it(cuda_device, bad):
    with pytest.raises(TypeError, match="stream: .* is not a stream; expected an ep Stream"):
        cuda_device.WrapStream(bad)


@pytest.mark.parametrize("handle", [-3, -1, 2**64, 2**64 + 5, 2**70])
@pytest.mark.parametrize("make", [int, StreamProtocol], ids=["int", "protocol"])
def test_a_handle_outside_64_bits_is_refused(cuda_device, handle, make):
    # A CUstream is a 64-bit pointer: nothing outside [0, 2**64) names one.
    with pytest.raises(OverflowError, match=rf"stream: {handle} .*expected a 64-bit pointer, 0 <= handle < 2\*\*64"):
        cuda_device.WrapStream(make(handle))
    with pytest.raises(OverflowError, match=rf"stream: {handle} "):
        ep.ops.unary("relu", to_device(np.ones(3, np.float32), "cuda"), stream=make(handle))


def test_the_largest_handle_is_taken(cuda_device):
    assert cuda_device.WrapStream(2**64 - 1).handle == 2**64 - 1


def test_a_stream_of_another_device_is_refused(cuda_device):
    with pytest.raises(ValueError, match=r"stream: .* is on cuda:1; expected a stream of Device\(cuda:0\)"):
        cuda_device.WrapStream(TorchLikeStream(0x7E0000, index=1))
    with pytest.raises(TypeError, match="only a cuda device wraps a stream"):
        ep.GetDevice("cpu").WrapStream(5)


def test_ops_take_the_callers_stream_and_copy_on_it(cuda_device, launches, new_handle):
    foreign = StreamProtocol(new_handle(0x7D0000))
    wrapped = cuda_device.WrapStream(foreign)
    x = np.arange(24, dtype=np.float32).reshape(4, 6) - 10
    strided = to_device(x, "cuda")[:, ::2]  # not contiguous: ep.ops copies it first
    got = ep.ops.unary("relu", strided, stream=foreign)
    wrapped.Sync()
    np.testing.assert_array_equal(to_numpy(got), np.maximum(x[:, ::2], 0))
    assert len(launches) >= 2 and all(s is wrapped for s in launches)  # the CopyNd copy included


def test_the_default_stream_exports_a_valid_cai_v3_handle(cuda_device):
    default = cuda_device.default_stream
    assert default.handle == streams.LEGACY_DEFAULT_STREAM == 1
    array = ep.ops.unary("relu", to_device(np.ones(4, np.float32), "cuda"))
    # The stream the array is bound to, and so its CAI "stream", is a handle v3 allows (not 0).
    assert array.stream is default.native and streams.bound_handle(array.stream) == 1
    created = cuda_device.CreateStream()
    other = ep.ops.unary("relu", to_device(np.ones(4, np.float32), "cuda"), stream=created)
    assert streams.bound_handle(other.stream) == created.handle not in (0, 1, 2)
    from numba import config

    if not config.ENABLE_CUDASIM:
        assert array.__cuda_array_interface__["stream"] == 1
        assert other.__cuda_array_interface__["stream"] == created.handle


@pytest.mark.parametrize(
    "interface, expected",
    [({}, None), ({"stream": None}, None), ({"stream": 1}, 1), ({"stream": 2}, 2), ({"stream": 0x5000}, 0x5000)],
)
def test_the_cai_stream_key_names_the_producer(interface, expected):
    assert dlpack.producer_stream(interface, "x") == expected


@pytest.mark.parametrize("value, message", [(0, "stream 0, which CAI v3 forbids"), (-1, "stream -1"), ("s", "stream 's'")])
def test_a_cai_stream_key_v3_forbids_is_refused(value, message):
    with pytest.raises(ValueError, match=f"x: __cuda_array_interface__ has {message}"):
        dlpack.producer_stream({"stream": value}, "x")


@pytest.fixture
def events(monkeypatch):
    """Counts of event records and waits (the simulator's events do nothing else)."""
    from numba import cuda

    counts = {"record": 0, "wait": 0}
    event_type = type(cuda.event())

    def counting(name):
        def method(self, stream=0):
            counts[name] += 1

        return method

    monkeypatch.setattr(event_type, "record", counting("record"))
    monkeypatch.setattr(event_type, "wait", counting("wait"))
    return counts


def test_an_input_from_another_stream_is_waited_for_with_an_event(cuda_device, events):
    producer, consumer = cuda_device.CreateStream(), cuda_device.CreateStream()
    x = ep.ops.unary("relu", to_device(np.arange(-4, 4, dtype=np.float32), "cuda"), stream=producer)
    assert events == {"record": 0, "wait": 0}
    got = ep.ops.unary("negative", x, stream=consumer)
    assert events == {"record": 1, "wait": 1}  # the consumer waits for the producer, the host does not
    consumer.Sync()
    np.testing.assert_array_equal(to_numpy(got), -np.maximum(np.arange(-4, 4, dtype=np.float32), 0))
    ep.ops.unary("negative", x, stream=producer)
    assert events == {"record": 1, "wait": 1}  # its own stream: nothing to wait for


@pytest.mark.parametrize("view", ["stepped", "overlapping out"])
def test_an_input_copied_first_is_waited_for_before_its_copy(cuda_device, monkeypatch, view):
    # The copy of a strided input (or of one overlapping out=) reads it: the consumer stream waits
    # for its producer before that copy, not only before the op's own launch. (Slices keep their
    # stream on the simulator; its reshape and .T drop it, numba's keep it.)
    from ep.common.runtime.device import CudaStream
    from ep.cuda.kernel import CudaKernel

    producer, consumer = cuda_device.CreateStream(), cuda_device.CreateStream()
    host = np.arange(-4, 4, dtype=np.float32)
    x = ep.ops.unary("negative", to_device(host, "cuda"), stream=producer)
    order = []
    wait_for, bind = CudaStream.wait_for, CudaKernel._bind
    monkeypatch.setattr(CudaStream, "wait_for", lambda self, handle: (order.append(("wait", self, handle)), wait_for(self, handle))[1])
    monkeypatch.setattr(CudaKernel, "_bind", lambda self, stream, work: (order.append(("launch", stream, None)), bind(self, stream, work))[1])
    if view == "overlapping out":
        got = ep.ops.binary("add", x[:7], x[1:], out=x[1:], stream=consumer)
        expected = host[:7] + host[1:]
    else:
        got = ep.ops.unary("negative", x[::2], stream=consumer)
        expected = host[::2]
    first = next(event for event in order if event[0] == "launch" or event[2] == producer.handle)
    assert first == ("wait", consumer, producer.handle), order
    consumer.Sync()
    np.testing.assert_array_equal(to_numpy(got), -expected if view == "overlapping out" else expected)


def test_wait_for_records_on_the_producer_and_waits_on_the_consumer(cuda_device, events):
    consumer = cuda_device.CreateStream()
    consumer.wait_for(0x6000)
    consumer.wait_for(0x6000)
    consumer.wait_for(None)
    consumer.wait_for(consumer.handle)
    assert events == {"record": 2, "wait": 2}
    assert len(consumer._events) == 1  # one event per producer, reused


@pytest.fixture
def host_work(monkeypatch):
    """Counts of numba's host synchronizations, allocations and copies."""
    from numba import cuda
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    counts = {}

    def counted(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    for name in ("synchronize", "device_array", "device_array_like", "to_device", "pinned_array", "mapped_array"):
        counted(cuda, name)
    counted(type(cuda.stream()), "synchronize")
    for name in ("copy_to_host", "copy_to_device"):
        counted(FakeCUDAArray, name)
    return counts


def _launches(stream):
    """One Launch of each primitive family on stream, with check_bounds where it applies."""
    rng = np.random.default_rng(3)
    a = to_device(rng.standard_normal(64).astype(np.float32), "cuda")
    b = to_device(rng.standard_normal(64).astype(np.float32), "cuda")
    half = to_device(rng.standard_normal(64).astype(np.float16), "cuda")
    out = to_device(np.zeros(64, np.float32), "cuda")
    half_out = to_device(np.zeros(64, np.float16), "cuda")
    indices = to_device(np.array([3, 0, -1, 7], np.int64), "cuda")
    unary = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cuda", ep.UnaryOp.kRelu, np.float32, np.float32)
    binary = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, "cuda", ep.BinaryOp.kAdd, np.float32, np.float32, 2)
    gather = ep.NewPrimitive(ep.GatherFactory, "cuda", np.float32, np.int64, wrap_negative=True, check_bounds=True)
    segment_sum = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, "cuda", np.float16, np.int64, wrap_negative=True, check_bounds=True)
    expand = ep.NewPrimitive(ep.ExpandFactory, "cuda", np.float32)
    copy = ep.NewPrimitive(ep.CopyNdFactory, "cuda", 2)
    expand_grad = ep.NewPrimitive(ep.ExpandGradFactory, "cuda", np.float16)
    long_half = to_device(rng.standard_normal(512).astype(np.float16), "cuda")

    def run():
        unary.Launch(stream, a, out, 64)
        binary.Launch(stream, (8, 8), a, (1, 8), b, out)
        gather.Launch(stream, indices, 4, a, 8, 8, 1, out)
        segment_sum.Launch(stream, indices, 4, half, 1, 8, 8, 1, half_out)  # float16: a float32 temporary
        expand.Launch(stream, (1, 8), b, (8, 8), out)
        copy.Launch(stream, np.float32, 2, out, (8, 8), (0, 0), a, (8, 8), (0, 0), (8, 8))
        expand_grad.Launch(stream, (512,), long_half, (1,), half_out)  # two passes: float32 partials

    return run


def test_a_launch_does_no_host_work(cuda_device, host_work):
    stream = cuda_device.CreateStream()
    run = _launches(stream)
    run()  # the first launches may allocate the stream's record and temporaries, once
    host_work.clear()
    for _ in range(3):
        run()
    assert host_work == {}
    stream.Sync()
    assert host_work.get("synchronize", 0) >= 1  # the instrumentation sees a sync where there is one


def test_a_host_copy_leaves_the_default_streams_pending_error_to_its_sync(cuda_device):
    # to_numpy, to_device and one_hot's class count copy on the default stream and wait on the
    # host: another launch's bounds error stays for the caller's own Sync().
    params = to_device(np.arange(6, dtype=np.float32).reshape(3, 2), "cuda")
    ep.ops.gather(params, to_device(np.array([0, 7]), "cuda"))  # on the default stream
    np.testing.assert_array_equal(to_numpy(to_device(np.arange(3.0), "cuda")), np.arange(3.0))
    got = ep.ops.one_hot(to_device(np.array([0, 2, 1]), "cuda"), -1)
    with pytest.raises(IndexError, match=r"indices\[1\] = 7 is out of range for an axis of size 3"):
        cuda_device.default_stream.Sync()
    np.testing.assert_array_equal(to_numpy(got), np.eye(3, dtype=np.int64)[[0, 2, 1]])


def test_a_bad_index_is_raised_by_sync_once_and_the_first_one_wins(cuda_device):
    stream, other = cuda_device.CreateStream(), cuda_device.CreateStream()
    params = np.arange(10, dtype=np.float32)
    gather = ep.NewPrimitive(ep.GatherFactory, "cuda", np.float32, np.int32, check_bounds=True)

    def launch(on, indices):
        indices = np.array(indices, np.int32)
        out = to_device(np.full(indices.size, 7, np.float32), "cuda")
        gather.Launch(on, to_device(indices, "cuda"), indices.size, to_device(params, "cuda"), 1, 10, 1, out)
        return out

    first = launch(stream, [1, 12, 3, -2])
    launch(stream, [-5, 0])  # bad too, but later
    good = launch(stream, [9, 0])
    other_out = launch(other, [2])
    other.Sync()  # another stream's error is not this one's
    with pytest.raises(ep.include.primitive.gather.IndexOutOfRange, match=r"indices\[1\] = 12 is out of range for an axis of size 10; expected 0 <= index < 10"):
        stream.Sync()
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(first), [1, 0, 3, 0])  # zeros where indices are bad
    np.testing.assert_array_equal(to_numpy(good), [9, 0])
    np.testing.assert_array_equal(to_numpy(other_out), [2])


def test_an_ops_bad_index_names_the_callers_position_at_sync(cuda_device):
    stream = cuda_device.CreateStream()
    params = to_device(np.arange(15, dtype=np.float32).reshape(3, 5), "cuda")
    indices = to_device(np.array([[0, 4], [-5, 5]], np.int64), "cuda").reshape(2, 2)
    ep.ops.gather(params, indices, axis=1, stream=stream)
    with pytest.raises(IndexError, match=r"indices\[1, 1\] = 5 is out of range for an axis of size 5; expected -5 <= index < 5"):
        stream.Sync()


def test_a_launch_runs_on_its_streams_device(monkeypatch, launches):
    from ep.cuda import kernel

    devices = []
    original = kernel.launch_config

    def launch_config(work, device_index=0):
        devices.append(device_index)
        return original(work, device_index)

    monkeypatch.setattr(kernel, "launch_config", launch_config)
    # A second device's stream as ep makes it (the simulator has one device; its kernels run anyway).
    second = Device(DeviceType.kCUDA, 1)
    from numba import config, cuda

    if not config.ENABLE_CUDASIM:
        if streams.cuda_device_count() < 2:
            pytest.skip("needs a second GPU")
        second = ep.GetDevice("cuda", 1)
    stream = second.CreateStream() if not config.ENABLE_CUDASIM else streams.CudaStream(second, cuda.stream(), 0x9000)
    x = np.arange(8, dtype=np.float32)
    out = to_device(np.zeros(8, np.float32), "cuda")
    ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cuda", ep.UnaryOp.kNegative, np.float32, np.float32).Launch(stream, to_device(x, "cuda"), out, 8)
    assert devices == [1]
    np.testing.assert_array_equal(to_numpy(out), -x)


def test_devices_and_their_streams_are_per_index(cuda_device):
    assert ep.GetDevice("cuda", 0) is cuda_device and cuda_device.default_stream.device is cuda_device
    count = ep.common.runtime.device.cuda_device_count()
    with pytest.raises(ValueError, match=f"device: cuda:{count} does not exist"):
        ep.GetDevice("cuda", count)


@pytest.mark.parametrize("op", ["gather", "gather_grad", "expand", "binary"])
def test_every_ops_copy_goes_on_the_callers_stream(cuda_device, launches, op):
    stream = cuda_device.CreateStream()
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = to_device(x, "cuda")[:, ::2]  # not contiguous: copied first
    indices = to_device(np.array([2, 0, 3], np.int64), "cuda")
    if op == "gather":
        got, expected = ep.ops.gather(strided, indices, stream=stream), x[:, ::2][[2, 0, 3]]
    elif op == "gather_grad":
        got = ep.ops.gather_grad(strided[:3], indices, (4, 3), stream=stream)
        expected = np.zeros((4, 3), np.float32)
        np.add.at(expected, [2, 0, 3], x[:3, ::2])
    elif op == "expand":
        got, expected = ep.ops.expand(strided[:1], (2, 3), stream=stream), np.broadcast_to(x[:1, ::2], (2, 3))
    else:
        got, expected = ep.ops.binary("add", strided, strided, stream=stream), 2 * x[:, ::2]
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(got), expected)
    assert len(launches) >= 2 and all(s is stream for s in launches)


def test_a_kept_array_is_checked_again_for_what_changes_per_launch(cuda_device):
    stream = cuda_device.CreateStream()
    x = to_device(np.linspace(-1, 1, 64, dtype=np.float32), "cuda")
    out = to_device(np.zeros(64, np.float32), "cuda")
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cuda", ep.UnaryOp.kRelu, np.float32, np.float32)
    relu.Launch(stream, x, out, 64)
    relu.Launch(stream, x, out, 64)  # both kept now
    with pytest.raises(ValueError, match="src: holds 64 elements, fewer than the 65 the launch needs"):
        relu.Launch(stream, x, out, 65)
    as_double = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cuda", ep.UnaryOp.kRelu, np.float64, np.float64)
    with pytest.raises(TypeError, match="src: dtype float32 does not match the primitive's float64"):
        as_double.Launch(stream, x, out, 64)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), np.maximum(to_numpy(x), 0))


def test_what_a_launch_keeps_of_an_array_goes_with_it(cuda_device):
    import gc

    stream = cuda_device.CreateStream()
    gather = ep.NewPrimitive(ep.GatherFactory, "cuda", np.float32, np.int64)
    params = to_device(np.arange(32, dtype=np.float32).reshape(8, 4), "cuda")  # 2-d: a flat view is kept
    indices = to_device(np.array([3, 1], np.int64), "cuda")
    out = to_device(np.zeros(8, np.float32), "cuda")
    gather.Launch(stream, indices, 2, params, 1, 8, 4, out)
    ids = {id(params), id(indices), id(out)}
    assert ids <= set(buffer._kept)
    del params, indices, out
    gc.collect()
    assert not ids & set(buffer._kept)
    assert all(entry[0]() is not None for entry in buffer._kept.values())  # views and addresses gone too


def _kept_launchers(x, out, indices):
    """Launch(stream) of each family that keeps its prepared launch on the stream, reading x (8
    float32) into out (8 float32; ExpandGrad's first 4), and its NumPy reference."""
    host = to_numpy(x)
    gather = ep.NewPrimitive(ep.GatherFactory, "cuda", np.float32, np.int64, check_bounds=True)
    copy = ep.NewPrimitive(ep.CopyNdFactory, "cuda", 2)
    expand = ep.NewPrimitive(ep.ExpandFactory, "cuda", np.float32)
    segment_sum = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, "cuda", np.float32, np.int64)
    expand_grad = ep.NewPrimitive(ep.ExpandGradFactory, "cuda", np.float32)
    summed = np.zeros((4, 2), np.float32)
    np.add.at(summed, to_numpy(indices), host.reshape(4, 2))
    return {
        "gather": (lambda s: gather.Launch(s, indices, 4, x, 1, 4, 2, out), host.reshape(4, 2)[to_numpy(indices)].ravel()),
        "copy": (lambda s: copy.Launch(s, np.float32, 2, out, (2, 4), (0, 0), x, (2, 4), (0, 0), (2, 4)), host),
        "expand": (lambda s: expand.Launch(s, (1, 4), x, (2, 4), out), np.tile(host[:4], 2)),
        "segment_sum": (lambda s: segment_sum.Launch(s, indices, 4, x, 1, 1, 4, 2, out), summed.ravel()),
        "expand_grad": (lambda s: expand_grad.Launch(s, (2, 4), x, (1, 4), out), host.reshape(2, 4).sum(0)),
    }


@pytest.mark.parametrize("family", ["unary", "gather", "copy", "expand", "segment_sum", "expand_grad"])
def test_a_kept_array_of_another_stream_is_waited_for_at_every_launch(cuda_device, events, family):
    producer, consumer = cuda_device.CreateStream(), cuda_device.CreateStream()
    x = to_device(np.arange(-4, 4, dtype=np.float32), "cuda").bind(producer.native)
    out = to_device(np.zeros(8, np.float32), "cuda")
    relu = ep.NewPrimitive(ep.ElementwiseUnaryFactory, "cuda", ep.UnaryOp.kRelu, np.float32, np.float32)
    launchers = _kept_launchers(x, out, to_device(np.array([3, 0, 1, 3], np.int64), "cuda"))
    launchers["unary"] = (lambda s: relu.Launch(s, x, out, 8), None)
    launch = launchers[family][0]
    for launches in (1, 2, 3):  # the second and third find their launch kept
        launch(consumer)
        assert events == {"record": launches, "wait": launches}
    launch(producer)
    assert events == {"record": 3, "wait": 3}


@pytest.mark.parametrize("family", ["gather", "copy", "expand", "segment_sum", "expand_grad"])
def test_a_kept_launch_reads_what_its_buffers_hold_now_and_checks_them_again(cuda_device, family):
    stream = cuda_device.CreateStream()
    rng = np.random.default_rng(8)
    x = to_device(np.zeros(8, np.float32), "cuda")
    out = to_device(np.zeros(8, np.float32), "cuda")
    indices = to_device(np.array([3, 0, 1, 3], np.int64), "cuda")
    for _ in range(3):
        host = rng.standard_normal(8).astype(np.float32)
        x.copy_to_device(host)
        launch, expected = _kept_launchers(x, out, indices)[family]
        launch(stream)
        launch(stream)  # kept: the same buffers' new contents are read
        stream.Sync()
        np.testing.assert_allclose(to_numpy(out)[: expected.size], expected, rtol=1e-6)
    short = to_device(np.zeros(expected.size - 1, np.float32), "cuda")
    with pytest.raises(ValueError, match=f"holds {expected.size - 1} elements, fewer than the {expected.size} the launch needs"):
        _kept_launchers(x, short, indices)[family][0](stream)


def test_a_kept_gathers_bad_index_is_raised_by_sync(cuda_device):
    stream = cuda_device.CreateStream()
    x = to_device(np.arange(8, dtype=np.float32), "cuda")
    out = to_device(np.full(8, 7, np.float32), "cuda")
    indices = to_device(np.array([3, 0, 1, 3], np.int64), "cuda")
    launch = _kept_launchers(x, out, indices)["gather"][0]
    launch(stream)
    launch(stream)
    stream.Sync()
    indices.copy_to_device(np.array([3, 9, 1, 3], np.int64))
    launch(stream)  # the kept launch, its bounds check included
    with pytest.raises(ep.include.primitive.gather.IndexOutOfRange, match=r"indices\[1\] = 9 is out of range for an axis of size 4"):
        stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), [6, 7, 0, 0, 2, 3, 6, 7])


def _kept_entries(stream) -> dict:
    # What keep_launch kept with buffers: (weak reference, weak reference, launch).
    return {key: entry for key, entry in stream.launches.items() if type(entry) is tuple and isinstance(entry[0], weakref.ref)}


@pytest.mark.parametrize("family", ["gather", "copy", "expand"])
def test_what_a_stream_keeps_of_a_launch_goes_with_its_buffers(cuda_device, family):
    import gc

    stream = cuda_device.CreateStream()
    x = to_device(np.arange(8, dtype=np.float32), "cuda")
    indices = to_device(np.array([3, 0, 1, 3], np.int64), "cuda")
    outs = [to_device(np.zeros(8, np.float32), "cuda") for _ in range(3)]
    for out in outs:
        _kept_launchers(x, out, indices)[family][0](stream)
    kept = _kept_entries(stream)
    assert len(kept) == 3
    views = [weakref.ref(argument) for entry in kept.values() for argument in entry[2][1] if hasattr(argument, "__cuda_ndarray__")]
    assert len(views) == 6  # each launch's unit views of x and of its out
    del outs, out, kept
    gc.collect()
    assert _kept_entries(stream) == {}
    assert all(view() is None for view in views[1::2])  # the outs' views went with them
    np.testing.assert_array_equal(to_numpy(x), np.arange(8))


def test_a_streams_kept_launches_are_bounded(cuda_device, monkeypatch):
    from ep.cuda import kernel as kernel_module

    monkeypatch.setattr(kernel_module, "_MAX_CONFIGURED", 4)
    stream = cuda_device.CreateStream()
    x = to_device(np.arange(8, dtype=np.float32), "cuda")
    indices = to_device(np.array([3, 0, 1, 3], np.int64), "cuda")
    outs = [to_device(np.zeros(8, np.float32), "cuda") for _ in range(10)]
    for out in outs:
        launch, expected = _kept_launchers(x, out, indices)["gather"]
        launch(stream)
        assert len(stream.launches) <= 4
    stream.Sync()
    for out in outs:
        np.testing.assert_array_equal(to_numpy(out), expected)


def test_configured_launches_are_kept_per_stream_and_grid(cuda_device, monkeypatch):
    from ep.cuda import kernel as kernel_module
    from ep.cuda.primitive import gather_common

    configured, calls = [], []

    class Compiled:
        def __getitem__(self, config):
            configured.append(config)
            return lambda *args: calls.append((config, args))

    monkeypatch.setattr(kernel_module.CudaKernel, "compiled", property(lambda self: Compiled()))
    argtypes = gather_common.bounds_kernel(ep.DataType.kInt64).argtypes
    kernel = kernel_module.CudaKernel(gather_common._first_bad, "configured_once", argtypes)
    first, second = cuda_device.CreateStream(), cuda_device.CreateStream()
    for stream, work, tag in [(first, 10, 0), (first, 10, 1), (second, 10, 2), (first, 10**6, 3), (first, 10**6 - 1, 4)]:
        kernel.launch(stream, work, tag)
    small, large = kernel_module.launch_config(10), kernel_module.launch_config(10**6)
    assert configured == [(*small, first.native), (*small, second.native), (*large, first.native)]
    assert calls == [
        ((*small, first.native), (0,)),
        ((*small, first.native), (1,)),
        ((*small, second.native), (2,)),
        ((*large, first.native), (3,)),
        ((*large, first.native), (4,)),
    ]


@pytest.mark.parametrize("factory", ["gather", "segment_sum"])
def test_one_plan_serves_buffers_of_every_alignment(cuda_device, factory):
    # The launch (move unit, index width, divisors) is kept per plan and the buffers' address bits:
    # the same sizes with buffers offset by 0..3 elements take 16-, 4- and 8-byte units in turn.
    stream = cuda_device.CreateStream()
    rng = np.random.default_rng(5)
    host = rng.standard_normal(64).astype(np.float32)
    ids = np.array([3, 0, 3, 1], np.int64)
    seen = set()
    for offset in (0, 1, 2, 3, 0):
        data = to_device(np.concatenate([np.zeros(offset, np.float32), host]), "cuda")[offset:]
        indices = to_device(ids, "cuda")
        if factory == "gather":
            out = to_device(np.zeros(4 * 4 + offset, np.float32), "cuda")[offset:]
            primitive = ep.NewPrimitive(ep.GatherFactory, "cuda", np.float32, np.int64, check_bounds=True)
            primitive.Launch(stream, indices, 4, data, 1, 16, 4, out)
            expected = host.reshape(16, 4)[ids].ravel()
            seen.add((buffer.address(data) | buffer.address(out)) % 16)
        else:
            out = to_device(np.full(4 * 4 + offset, 7, np.float32), "cuda")[offset:]
            primitive = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, "cuda", np.float32, np.int64, check_bounds=True)
            primitive.Launch(stream, indices, 4, data[:16], 1, 1, 4, 4, out)
            expected = np.zeros((4, 4), np.float32)
            np.add.at(expected, ids, host[:16].reshape(4, 4))
            expected = expected.ravel()
        stream.Sync()
        np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-6)
    if factory == "gather":
        # One kept launch per alignment met, each moving the widest unit that alignment allows.
        launches = primitive._plans.get(4, 1, 16, 4, 0)[1].launches  # Gather.plan(num_indices, outer, gather, inner, offset)
        assert set(launches) == seen
        for alignment, (_, unit, _, _) in launches.items():
            assert alignment % unit == 0 and (unit == 16 or alignment % (2 * unit))


def test_repeated_launches_keep_nothing_new(cuda_device, monkeypatch):
    stream = cuda_device.CreateStream()
    run = _launches(stream)
    copy = ep.NewPrimitive(ep.CopyNdFactory, "cuda", 2)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    src, dst = to_device(x, "cuda"), to_device(np.zeros((8, 8), np.float32), "cuda")

    def launches():
        run()
        copy.Launch(stream, np.float32, 2, dst, (8, 8), (1, 2), src, (8, 8), (2, 1), (3, 4))  # offset views

    launches()
    kept, made = set(buffer._kept), []
    original = buffer._keep
    monkeypatch.setattr(buffer, "_keep", lambda *args: made.append(args) or original(*args))
    for _ in range(3):
        launches()
    assert made == [] and set(buffer._kept) == kept  # nothing made again, not even for a moment
    stream.Sync()
    expected = np.zeros((8, 8), np.float32)
    expected[1:4, 2:6] = x[2:5, 1:5]
    np.testing.assert_array_equal(to_numpy(dst), expected)
