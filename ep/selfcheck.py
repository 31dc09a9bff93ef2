"""`python -m ep check`: launch each primitive family once per available device against NumPy."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

CHECKS: list[tuple[str, Callable]] = []


class Skipped(Exception):
    """Raised by a check with nothing of ep's to run on that device (said so, not counted as ok)."""


def check(name: str):
    """Register a self-check: fn(device) raises AssertionError on a wrong result."""

    def register(fn: Callable) -> Callable:
        CHECKS.append((name, fn))
        return fn

    return register


@check("ElementwiseUnary")
def _unary(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.linspace(-4, 4, 257, dtype=np.float32)
    got = to_numpy(ep.ops.unary("relu", to_device(x, device)))
    np.testing.assert_array_equal(got, np.maximum(x, 0))


@check("Fill")
def _fill(device: str) -> None:
    import ep
    from ep.testing import to_numpy

    got = to_numpy(ep.ops.full((3, 7), -0.0, dtype=np.float16, device=device))
    assert got.tobytes() == np.full((3, 7), -0.0, np.float16).tobytes()


@check("TensorFill")
def _tensor_fill(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    dst, stream = to_device(np.zeros(9, np.int64), device), ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.TensorFillFactory, device, np.int64).Launch(stream, to_device(np.array([-7]), device), dst, 9)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst), np.full(9, -7))


@check("Memset")
def _memset(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    ptr, stream = to_device(np.zeros(5, np.int32), device), ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.MemsetFactory, device).Launch(stream, ptr, 0xAB, 18)
    stream.Sync()
    assert to_numpy(ptr).view(np.uint8).tolist() == [0xAB] * 18 + [0, 0]


@check("Memcpy")
def _memcpy(device: str) -> None:
    from ep.testing import to_device, to_numpy

    x = np.linspace(-1, 1, 33)  # to_device and to_numpy copy on Memcpy (kHtoD and kDtoH on cuda)
    np.testing.assert_array_equal(to_numpy(to_device(x, device)), x)


@check("Cast")
def _cast(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.linspace(-300, 300, 257, dtype=np.float32)
    got = to_numpy(ep.ops.unary("cast", to_device(x, device), dtype=np.int32))
    np.testing.assert_array_equal(got, x.astype(np.int32))


@check("Add")
def _add(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    xs = [np.arange(257, dtype=np.float32) * k for k in range(1, 11)]
    np.testing.assert_array_equal(to_numpy(ep.ops.add_n([to_device(x, device) for x in xs])), sum(xs))


@check("Where")
def _where(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = np.array([True, False, True, False])
    got = to_numpy(ep.ops.where(to_device(c, device), to_device(x, device), to_device(-x[:, :1], device)))
    np.testing.assert_array_equal(got, np.where(c, x, -x[:, :1]))


@check("BroadcastElementwiseUnary")
def _broadcast_unary(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 1, 3)
    new = ep.NewPrimitive(ep.BroadcastElementwiseUnaryFactory, device, "relu", np.float32, np.float32, 3)
    dst, stream = to_device(np.zeros(24, np.float32), device), ep.GetDevice(device).CreateStream()
    new.Launch(stream, 3, (2, 1, 3), (3, 3, 1), to_device(x, device), 3, (2, 4, 3), (1, 2, 8), dst)  # dst (3, 4, 2) transposed
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(dst).reshape(3, 4, 2).transpose(2, 1, 0), np.maximum(np.broadcast_to(x, (2, 4, 3)), 0))


@check("OneHot")
def _one_hot(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    indices = np.array([[2, 0], [1, 4]])
    got = to_numpy(ep.ops.one_hot(to_device(indices, device), 5, dtype=np.float16, on_value=0.5))
    np.testing.assert_array_equal(got, np.where(indices[..., None] == np.arange(5), 0.5, 0).astype(np.float16))


@check("Expand")
def _expand(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(12, dtype=np.float32).reshape(3, 1, 4)
    got = to_numpy(ep.ops.expand(to_device(x, device), (2, 3, 5, 4)))
    np.testing.assert_array_equal(got, np.broadcast_to(x, (2, 3, 5, 4)))


@check("Reduce")
def _reduce(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7 - 3
    on_device = to_device(x, device)
    np.testing.assert_allclose(to_numpy(ep.ops.sum(on_device, (0, 2))), x.sum((0, 2)), rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(ep.ops.amax(on_device, 1)), x.max(1))
    np.testing.assert_array_equal(to_numpy(ep.ops.argmax(on_device, 2)), x.argmax(2))
    np.testing.assert_allclose(to_numpy(ep.ops.var(on_device)), x.var(ddof=1), rtol=1e-5)


@check("Scan")
def _scan(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7 - 3
    on_device = to_device(x, device)
    np.testing.assert_array_equal(to_numpy(ep.ops.cumsum(on_device, 2)), np.cumsum(x, 2))
    np.testing.assert_array_equal(to_numpy(ep.ops.cummax(on_device, 1).values), np.maximum.accumulate(x, 1))


@check("Permute")
def _permute(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(2 * 33 * 40, dtype=np.float32).reshape(2, 33, 40)
    got = to_numpy(ep.ops.permute(to_device(x, device).reshape(x.shape), (0, 2, 1)))
    np.testing.assert_array_equal(got.reshape(2, 40, 33), x.transpose(0, 2, 1))


@check("ConstantPad")
def _constant_pad(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = to_numpy(ep.ops.pad(to_device(x, device).reshape(x.shape), (1, -1, 2, 0), value=-1.0))
    np.testing.assert_array_equal(got.reshape(5, 4), np.pad(x, ((2, 0), (1, 0)), constant_values=-1.0)[:, :4])


@check("Gather")
def _gather(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    params = np.arange(60, dtype=np.float32).reshape(3, 5, 4)
    indices = np.array([[4, -1], [0, 2]], dtype=np.int64)
    got = to_numpy(ep.ops.gather(to_device(params, device), to_device(indices, device), axis=1))
    np.testing.assert_array_equal(got, np.take(params, indices, axis=1))


@check("BatchGather")
def _batch_gather(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    params = np.arange(60, dtype=np.float32).reshape(3, 5, 4)
    indices = np.array([[4, 0], [1, 1], [2, 3]], dtype=np.int32)
    got = to_numpy(ep.ops.batch_gather(to_device(params, device), to_device(indices, device)))
    np.testing.assert_array_equal(got, np.take_along_axis(params, indices[:, :, None], axis=1))


@check("UnsortedSegmentSum")
def _segment_sum(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    dy = np.arange(48, dtype=np.float32).reshape(3, 2, 2, 4)
    indices = np.array([[4, -1], [0, 2]], dtype=np.int64)
    got = to_numpy(ep.ops.gather_grad(to_device(dy, device), to_device(indices, device), (3, 5, 4), axis=1))
    want = np.zeros((3, 5, 4), np.float32)
    np.add.at(want, (slice(None), indices % 5), dy)
    np.testing.assert_array_equal(got, want)


@check("CopyNd")
def _copy_nd(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    got = to_numpy(ep.ops.unary("identity", to_device(x, device)[:, 1:, ::2]))
    np.testing.assert_array_equal(got, x[:, 1:, ::2])


@check("BroadcastElementwiseBinary")
def _binary(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    a = np.linspace(-4, 4, 60, dtype=np.float32).reshape(3, 4, 5)
    b = np.linspace(1, 2, 20, dtype=np.float32).reshape(4, 5)
    got = to_numpy(ep.ops.binary("mul", to_device(a, device), to_device(b, device)))
    np.testing.assert_array_equal(got, a * b)


@check("Matmul")
def _matmul(device: str) -> None:
    import ep
    from ep.testing import to_device, to_numpy

    if ep.NewPrimitive(ep.BroadcastMatmulFactory, device, np.float32, False, False, 8) is None:
        raise Skipped("cuBLAS cannot run on Numba's CUDA simulator; a GPU runs it")
    a = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    b = np.linspace(0, 2, 20, dtype=np.float32).reshape(4, 5)
    got = to_numpy(ep.ops.matmul(to_device(a, device), to_device(b, device)))
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)



def _softmax_family(device: str, name: str) -> None:
    """ep.ops' name (softmax, log_softmax or a _grad) over rows of 40 against NumPy's formula."""
    import ep
    from ep.testing import to_device, to_numpy

    x = np.linspace(-300, 500, 120).reshape(3, 40)
    e = np.exp(x - x.max(1, keepdims=True))
    y, dy = e / e.sum(1, keepdims=True), np.cos(x)
    expected = {
        "softmax": y,
        "log_softmax": np.log(y),
        "softmax_grad": y * (dy - (y * dy).sum(1, keepdims=True)),
        "log_softmax_grad": dy - y * dy.sum(1, keepdims=True),
    }[name]
    args = (x,) if name in ("softmax", "log_softmax") else (np.log(y) if name.startswith("log") else y, dy)
    got = to_numpy(getattr(ep.ops, name)(*(to_device(a, device) for a in args)))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@check("Softmax")
def _softmax(device: str) -> None:
    _softmax_family(device, "softmax")


@check("LogSoftmax")
def _log_softmax(device: str) -> None:
    _softmax_family(device, "log_softmax")


@check("SoftmaxBackward")
def _softmax_backward(device: str) -> None:
    _softmax_family(device, "softmax_grad")


@check("LogSoftmaxBackward")
def _log_softmax_backward(device: str) -> None:
    _softmax_family(device, "log_softmax_grad")

def run_self_check(device: str | None = None) -> int:
    """Run every check on every available device (or one); 0 when all pass."""
    from ep.common.runtime.device import available_device_types, cuda_installed

    devices = [device] if device else [d.value for d in available_device_types()]
    if device is None and "cuda" not in devices:
        if cuda_installed():
            print("check cuda skipped: no CUDA device here (NUMBA_ENABLE_CUDASIM=1 runs it on the simulator)")
        else:
            print("check cuda skipped: numba-cuda is not installed (pip install 'ep[cuda]' adds it)")
    failed = skipped = 0
    for tag in devices:
        for name, fn in CHECKS:
            start = time.perf_counter()
            try:
                fn(tag)
                status = f"ok ({time.perf_counter() - start:.2f} s)"
            except Skipped as reason:
                status = f"skipped ({reason})"
                skipped += 1
            except Exception as error:  # report every failing family, then fail
                status = f"FAILED: {type(error).__name__}: {error} ({time.perf_counter() - start:.2f} s)"
                failed += 1
            print(f"check {tag:4s} {name:28s} {status}")
    print(f"self-check: {len(devices) * len(CHECKS) - failed - skipped} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
