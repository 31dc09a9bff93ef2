"""Add through NewPrimitive + Launch, against sums computed here with NumPy."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, assert_same, sampled



def values(rng, n, dtype):
    if dtype == np.bool_:
        return rng.random(n) < 0.3
    return rng.integers(-100, 100, n).astype(dtype)


def reference(xs, dtype):
    """The sum as the binary add op computes it: wrapping integers, or for bools, float16 summed in
    float32 within each pass of 8 (rounded to float16 between passes)."""
    if dtype == np.bool_:
        return np.logical_or.reduce(xs)
    if dtype == np.float16:
        acc = xs[0].astype(np.float32)
        for k, x in enumerate(xs[1:], 1):
            if k >= 8 and (k - 8) % 7 == 0:
                acc = acc.astype(np.float16).astype(np.float32)
            acc = acc + x
        return acc.astype(np.float16)
    acc = xs[0].copy()
    for x in xs[1:]:
        acc = acc + x
    return acc


def launch(device, xs, count=None):
    add = ep.NewPrimitive(ep.AddFactory, device, xs[0].dtype)
    assert add is not None
    stream = ep.GetDevice(device).CreateStream()
    srcs = [to_device(x, device) for x in xs]
    dst = to_device(np.zeros(xs[0].size, xs[0].dtype), device)
    add.Launch(stream, srcs, len(xs), dst, xs[0].size if count is None else count)
    stream.Sync()
    for src, x in zip(srcs, xs):
        assert_same(to_numpy(src), x)
    return to_numpy(dst)


@pytest.mark.parametrize("dtype", sampled(ALL), ids=str)
@pytest.mark.parametrize("arity", [1, 2, 3, 8, 9, 16, 20])
def test_sums_every_arity(device, dtype, arity):
    rng = np.random.default_rng(arity)
    xs = [values(rng, 37, dtype) for _ in range(arity)]
    with np.errstate(over="ignore"):
        expected = reference(xs, dtype)
    assert_same(launch(device, xs), expected)


def test_integers_wrap(device):
    xs = [np.array([127, -128, 100], np.int8)] * 3
    assert_same(launch(device, xs), (xs[0].astype(np.int64) * 3).astype(np.int8))


def test_dst_may_be_a_source(device):
    add = ep.NewPrimitive(ep.AddFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    x = to_device(np.arange(5, dtype=np.float32), device)
    add.Launch(stream, [x, x, x], 3, x, 5)
    stream.Sync()
    assert_same(to_numpy(x), 3 * np.arange(5))


@pytest.mark.parametrize("arity, position", [(10, 8), (10, 9), (17, 15), (17, 16), (17, 3)])
def test_dst_may_be_a_source_a_later_pass_reads(device, arity, position):
    # Past 8 sources the sum runs in passes: dst, when a later pass reads it, must still hold its own values.
    add = ep.NewPrimitive(ep.AddFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    xs = [np.full(5, i + 1, np.float32) for i in range(arity)]
    srcs = [to_device(x, device) for x in xs]
    add.Launch(stream, srcs, arity, srcs[position], 5)
    stream.Sync()
    assert_same(to_numpy(srcs[position]), reference(xs, np.float32))


@pytest.mark.parametrize("shift", [1, -1, 3])
def test_dst_overlapping_a_source_otherwise_is_refused_before_any_write(device, shift):
    # A shifted view of a source would be written before its elements are read: refused, as Memcpy's overlap.
    add = ep.NewPrimitive(ep.AddFactory, device, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    host = np.arange(20, dtype=np.float32)
    buffer = to_device(host, device)
    src, dst = (buffer[:16], buffer[shift:shift + 16]) if shift > 0 else (buffer[-shift:-shift + 16], buffer[:16])
    other = to_device(np.ones(16, np.float32), device)
    with pytest.raises(ValueError, match=r"srcs\[1\], dst: share memory without being the same elements"):
        add.Launch(stream, [other, src], 2, dst, 16)
    stream.Sync()
    assert_same(to_numpy(buffer), host)


def test_count_writes_the_first_elements_only(device):
    xs = [np.ones(6, np.int32)] * 2
    assert_same(launch(device, xs, count=4), [2, 2, 2, 2, 0, 0])


@pytest.mark.parametrize(
    "change, error, named",
    [
        ({"arity": 0, "srcs": []}, ValueError, "arity"),
        ({"arity": 3}, ValueError, "srcs"),
        ({"arity": -1}, ValueError, "arity"),
        ({"arity": 2.0}, TypeError, "arity"),
        ({"srcs": 5}, TypeError, "srcs"),
        ({"count": 7}, ValueError, r"srcs\[0\]"),
        ({"second": np.ones(6, np.float64)}, TypeError, r"srcs\[1\]"),
        ({"dst": None}, TypeError, "dst"),
        ({"count": -1}, ValueError, "count"),
    ],
)
def test_bad_arguments_are_named_and_write_nothing(device, change, error, named):
    add = ep.NewPrimitive(ep.AddFactory, device, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    a = to_device(np.arange(6, dtype=np.int32), device)
    change = dict(change)
    second = change.pop("second", None)
    b = to_device(second, device) if second is not None else a
    dst = to_device(np.full(6, 9, np.int32), device)
    args = {"srcs": [a, b], "arity": 2, "dst": dst, "count": 6, **change}
    with pytest.raises(error, match=named):
        add.Launch(stream, *args.values())
    assert_same(to_numpy(dst), np.full(6, 9))
    assert_same(to_numpy(a), np.arange(6))


def test_new_takes_every_dtype(device):
    for dtype in ALL:
        assert ep.NewPrimitive(ep.AddFactory, device, dtype) is not None
    with pytest.raises(TypeError, match="dtype"):
        ep.NewPrimitive(ep.AddFactory, device, np.complex64)
