"""OneHot through NewPrimitive + Launch, against a NumPy one-hot computed here."""
import numpy as np
import pytest

import ep
from ep.include.primitive.gather import IndexOutOfRange
from ep.include.primitive.one_hot import OneHotFactory
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, BY_WIDTH

INDICES = [np.dtype(np.int32), np.dtype(np.int64)]


def reference(indices, lower, upper, on, off, dtype):
    """Row i: on at column indices[i] - lower, off elsewhere (a row of off for an index outside)."""
    columns = np.arange(lower, upper)
    return np.where(indices[:, None] == columns[None, :], np.asarray(on).astype(dtype), np.asarray(off).astype(dtype)).astype(dtype)


def launch(device, indices, lower, upper, on, off, dtype, check=False, out=None):
    one_hot = ep.NewPrimitive(OneHotFactory, device, indices.dtype, dtype, check_bounds=check)
    assert one_hot is not None
    stream = ep.GetDevice(device).CreateStream()
    given = to_device(indices, device)
    out = to_device(np.full(indices.size * (upper - lower), 7, dtype) if out is None else out, device)
    one_hot.Launch(stream, given, out, on, off, indices.size, lower, upper)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(given), indices)
    return to_numpy(out).reshape(indices.size, upper - lower)


@pytest.mark.parametrize("dtype", BY_WIDTH, ids=str)
@pytest.mark.parametrize("indices_dtype", INDICES, ids=str)
def test_matches_numpy(device, dtype, indices_dtype):
    rng = np.random.default_rng(0)
    indices = rng.integers(0, 5, 9).astype(indices_dtype)
    on, off = (True, False) if dtype == np.bool_ else (3, -1 if dtype.kind != "u" else 200)
    np.testing.assert_array_equal(launch(device, indices, 0, 5, on, off, dtype), reference(indices, 0, 5, on, off, dtype))


@pytest.mark.parametrize("classes", [1, 2, 3, 7, 16, 33])
def test_rows_of_any_width_cross_packs(device, classes):
    # Packs of 16 int8 elements hold several rows, or part of one: every split of a row is met.
    indices = np.arange(11, dtype=np.int64) % classes
    got = launch(device, indices, 0, classes, 5, 0, np.dtype(np.int8))
    np.testing.assert_array_equal(got, reference(indices, 0, classes, 5, 0, np.int8))


def test_an_out_misaligned_for_packs_gets_every_element(device):
    # out starts 4 bytes into a buffer: float32 elements, but no 16-byte packs.
    indices = np.array([2, 0, 1, 2, 1], np.int64)
    one_hot = ep.NewPrimitive(OneHotFactory, device, np.int64, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    raw = to_device(np.full(17, 9, np.float32), device)
    one_hot.Launch(stream, to_device(indices, device), raw[1:], 1.5, 0, 5, 0, 3)
    stream.Sync()
    got = to_numpy(raw)
    np.testing.assert_array_equal(got[1:16].reshape(5, 3), reference(indices, 0, 3, 1.5, 0, np.float32))
    assert got[0] == 9 and got[16] == 9


def test_a_shard_of_classes_writes_its_columns(device):
    # A device holding classes [4, 7): indices outside give rows of off_value; the shards' columns
    # side by side are the whole one-hot.
    indices = np.array([0, 5, 9, 4, 6, 3], np.int32)
    shards = [launch(device, indices, lo, hi, 1.0, 0.0, np.dtype(np.float64)) for lo, hi in ((0, 4), (4, 7), (7, 10))]
    np.testing.assert_array_equal(np.concatenate(shards, axis=1), reference(indices, 0, 10, 1.0, 0.0, np.float64))


def test_values_convert_as_fill_converts_them(device):
    indices = np.array([1, 0], np.int64)
    got = launch(device, indices, 0, 2, -0.0, np.nan, np.dtype(np.float16))
    assert got.view(np.uint16).tolist() == np.array([[np.nan, -0.0], [-0.0, np.nan]], np.float16).view(np.uint16).tolist()
    assert launch(device, indices, 0, 2, 2.9, -1.9, np.dtype(np.int32)).tolist() == [[-1, 2], [2, -1]]


def test_empty_launches_write_nothing(device):
    assert launch(device, np.zeros(0, np.int64), 0, 4, 1, 0, np.dtype(np.int64)).shape == (0, 4)
    assert launch(device, np.array([3, 1], np.int64), 2, 2, 1, 0, np.dtype(np.int64), check=False).shape == (2, 0)


@pytest.mark.parametrize("indices, lower, upper, message", [
    (np.array([0, 3, 4, 1], np.int64), 0, 4, r"indices\[2\] = 4 is out of range for an axis of size 4; expected 0 <= index < 4"),
    (np.array([2, -1], np.int32), 0, 4, r"indices\[1\] = -1 is out of range"),
    (np.array([5, 3, 9], np.int64), 3, 6, r"indices\[2\] = 9 is out of range for an axis of size 3; expected 3 <= index < 6"),
    (np.array([1], np.int64), 2, 2, r"indices\[0\] = 1 is out of range for an axis of size 0"),
])
def test_check_bounds_names_the_first_bad_index(device, indices, lower, upper, message):
    one_hot = ep.NewPrimitive(OneHotFactory, device, indices.dtype, np.float32, check_bounds=True)
    stream = ep.GetDevice(device).CreateStream()
    out = to_device(np.full(indices.size * (upper - lower), 7, np.float32), device)
    with pytest.raises(IndexOutOfRange, match=message):
        one_hot.Launch(stream, to_device(indices, device), out, 1, 0, indices.size, lower, upper)
        stream.Sync()  # where CUDA, which does not wait for the check, raises
    stream.Sync()  # raised once
    if device == "cpu":
        np.testing.assert_array_equal(out, 7)  # refused before writing


def test_new_supports_int32_and_int64_indices(device):
    for dtype in ALL:
        for indices in INDICES:
            assert ep.NewPrimitive(OneHotFactory, device, indices, dtype) is not None
    assert ep.NewPrimitive(OneHotFactory, device, np.int8, np.float32) is None
    assert ep.NewPrimitive(OneHotFactory, device, np.float32, np.float32) is None
    with pytest.raises(TypeError, match="out_dtype"):
        ep.NewPrimitive(OneHotFactory, device, np.int64, np.complex64)


def _bad_launch(device, **changes):
    one_hot = ep.NewPrimitive(OneHotFactory, device, np.int64, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    indices = to_device(np.array([0, 2, 1], np.int64), device)
    out = to_device(np.full(9, 7, np.int32), device)
    args = dict(indices=indices, out=out, on_value=1, off_value=0, num_indices=3, lower_bound=0, upper_bound=3)
    args.update(changes)
    try:
        one_hot.Launch(stream, *args.values())
    finally:
        np.testing.assert_array_equal(to_numpy(out), np.full(9, 7, np.int32))
        np.testing.assert_array_equal(to_numpy(indices), [0, 2, 1])


@pytest.mark.parametrize(
    "changes, error, named",
    [
        ({"num_indices": -1}, ValueError, "num_indices"),
        ({"num_indices": 3.0}, TypeError, "num_indices"),
        ({"lower_bound": -1}, ValueError, "lower_bound"),
        ({"upper_bound": True}, TypeError, "upper_bound"),
        ({"lower_bound": 2, "upper_bound": 1}, ValueError, "upper_bound: 1 is below lower_bound=2"),
        ({"num_indices": 4}, ValueError, "indices"),
        ({"upper_bound": 4}, ValueError, "out"),
        ({"on_value": "1"}, TypeError, "on_value"),
        ({"off_value": 1 << 40}, OverflowError, "off_value"),
        ({"off_value": float("nan")}, ValueError, "off_value"),
        ({"out": None}, TypeError, "out"),
    ],
)
def test_bad_arguments_are_named_and_write_nothing(device, changes, error, named):
    with pytest.raises(error, match=named):
        _bad_launch(device, **changes)


def test_indices_of_another_dtype_are_refused(device):
    with pytest.raises(TypeError, match="indices"):
        _bad_launch(device, indices=to_device(np.array([0, 2, 1], np.int32), device))
