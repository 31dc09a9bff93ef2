"""Memcpy through NewPrimitive + Launch: count bytes between arrays of any dtype in every kind's
memory, against NumPy done here; kinds that do not match the buffers, overlaps and counts past a
buffer refused by name with nothing written."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy

K = ep.MemcpyKind


def memory(device, side):
    """The device an array on side ("h" or "d") of a copy lives on: the CPU's memory is both there."""
    return "cuda" if device == "cuda" and side == "d" else "cpu"


def copy(device, kind, dst, src, count):
    stream = ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.MemcpyFactory, device, kind).Launch(stream, dst, src, count)
    stream.Sync()


KIND_SIDES = [(K.kHtoD, "d", "h"), (K.kDtoH, "h", "d"), (K.kDtoD, "d", "d"), (K.kAuto, "d", "h"), (K.kAuto, "h", "d"), (K.kAuto, "d", "d")]


@pytest.mark.parametrize("kind, dst_side, src_side", KIND_SIDES, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.int32, np.float64, np.complex64], ids=lambda d: np.dtype(d).name)
def test_every_kind_copies_bytes(device, kind, dst_side, src_side, dtype):
    src = np.random.default_rng(0).integers(0, 2, 40).astype(dtype)
    dst_before = np.zeros(40, dtype)
    dst = to_device(dst_before, memory(device, dst_side))
    source = to_device(src, memory(device, src_side))
    count = 30 * np.dtype(dtype).itemsize - 1  # past a whole element: bytes, not elements
    copy(device, kind, dst, source, count)
    expected = dst_before.copy()
    expected.view(np.uint8)[:count] = src.view(np.uint8)[:count]
    assert to_numpy(dst).tobytes() == expected.tobytes()
    assert to_numpy(source).tobytes() == src.tobytes(), "src changed"


@pytest.mark.parametrize("offset", [0, 1, 2, 4, 8])
def test_any_alignment_and_count(device, offset):
    # The CPU moves the widest unit dividing count and both addresses: every width is taken here.
    raw = np.arange(200, dtype=np.uint8)
    for count in (0, 1, 6, 64, 100 + offset):
        dst = to_device(np.zeros(200, np.uint8), device)
        copy(device, K.kDtoD, dst[offset:], to_device(raw, device)[8:], count)
        expected = np.zeros(200, np.uint8)
        expected[offset : offset + count] = raw[8 : 8 + count]
        np.testing.assert_array_equal(to_numpy(dst), expected)


def test_one_buffer_onto_itself_is_nothing(device):
    data = np.arange(16, dtype=np.int64)
    buffer = to_device(data, device)
    copy(device, K.kDtoD, buffer, buffer, data.nbytes)
    np.testing.assert_array_equal(to_numpy(buffer), data)


def test_a_large_copy_runs_in_parallel():
    src = np.random.default_rng(1).random(1 << 18)
    dst = np.empty_like(src)
    copy("cpu", K.kAuto, dst, src, src.nbytes)
    np.testing.assert_array_equal(dst, src)


def test_other_libraries_arrays(device):
    torch = pytest.importorskip("torch")
    src = torch.arange(6, dtype=torch.float32)
    dst = to_device(np.zeros(6, np.float32), device)
    copy(device, K.kAuto if device == "cuda" else K.kDtoD, dst, src, 24)
    np.testing.assert_array_equal(to_numpy(dst), np.arange(6, dtype=np.float32))


def test_kinds_and_registry(device):
    for name in ("kHtoD", "htod", K.kHtoD):
        assert ep.NewPrimitive(ep.MemcpyFactory, device, name) is ep.NewPrimitive(ep.MemcpyFactory, device, K.kHtoD)
    with pytest.raises(ValueError, match=r"kind: 'kHtoX' is not a memcpy kind"):
        ep.NewPrimitive(ep.MemcpyFactory, device, "kHtoX")
    with pytest.raises(TypeError, match=r"kind: 3 is not a memcpy kind"):
        ep.NewPrimitive(ep.MemcpyFactory, device, 3)
    factory = ep.include.primitive.GetFactory(ep.MemcpyFactory, device)
    assert sorted(kind.name for kind, _ in factory.Combinations()) == sorted(k.name for k in K)


def _refused(device, kind, dst, src, count, error, match, keep):
    with pytest.raises(error, match=match):
        copy(device, kind, dst, src, count)
    for array, before in keep:
        assert to_numpy(array).tobytes() == before.tobytes(), "a launch that raised wrote"


def test_kinds_that_do_not_match_the_buffers_name_kind():
    if ep.NewPrimitive(ep.MemcpyFactory, "cuda", K.kAuto) is None:
        pytest.skip("no cuda factories")
    host, data = np.zeros(4, np.float32), np.arange(4, dtype=np.float32)
    device_array = to_device(np.zeros(4, np.float32), "cuda")
    cases = [
        (K.kHtoD, host, data, r"kind: kHtoD copies into device memory from host memory, but dst is host memory"),
        (K.kHtoD, device_array, to_device(data, "cuda"), r"kind: kHtoD .* but src is device memory"),
        (K.kDtoH, device_array, to_device(data, "cuda"), r"kind: kDtoH .* but dst is device memory"),
        (K.kDtoD, device_array, data, r"kind: kDtoD .* but src is host memory"),
        (K.kAuto, host, data, r"kind: kAuto was given two host arrays on a cuda Memcpy"),
    ]
    for kind, dst, src, match in cases:
        _refused("cuda", kind, dst, src, 16, ValueError, match, [(dst, to_numpy(dst))])


def test_bad_buffers_and_counts_are_named(device):
    before = np.arange(8, dtype=np.int32)
    dst = to_device(before, device)
    src = to_device(np.full(8, 7, np.int32), device)
    keep = [(dst, before)]
    _refused(device, K.kDtoD, dst, src, 33, ValueError, r"dst: holds 32 bytes, fewer than the 33 the launch needs", keep)
    _refused(device, K.kDtoD, dst, src[:4], 20, ValueError, r"src: holds 16 bytes, fewer than the 20", keep)
    _refused(device, K.kDtoD, dst, dst[1:], 8, ValueError, r"dst, src: bytes \[.*\) and \[.*\) overlap", keep)
    _refused(device, K.kDtoD, dst[::2], src, 8, ValueError, r"dst: memory must be C-contiguous", keep)
    _refused(device, K.kDtoD, dst, None, 8, TypeError, r"src: ", keep)
    _refused(device, K.kDtoD, dst, src, -1, ValueError, r"count: -1 is negative", keep)
    _refused(device, K.kDtoD, dst, src, 2.0, TypeError, r"count: 2.0 is not an integer", keep)
    if device == "cpu":
        read_only = before.copy()
        read_only.flags.writeable = False
        _refused(device, K.kDtoD, read_only, src, 8, ValueError, r"dst: the array is read-only", [])
        _refused(device, K.kDtoD, np.array([None, 1]), src, 8, TypeError, r"dst: dtype object holds Python objects", [])
