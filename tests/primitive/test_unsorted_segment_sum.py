"""UnsortedSegmentSum (the gather's transpose) through NewPrimitive + Launch, against NumPy."""
import numpy as np
import pytest

import ep
from ep.include.primitive.primitive import registry_rows
from ep.testing import to_device, to_numpy

SUM_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64]
INDEX_DTYPES = [np.int32, np.int64]


def reference(data, ids, segments, offset=0, wrap=False):
    """out[b, o, ids[b, i] - offset, :] += data[b, o, i, :] for ids inside [0, segments), in float64."""
    batch, outer, _, inner = data.shape
    out = np.zeros((batch, outer, segments, inner), np.float64)
    for b in range(batch):
        for i, value in enumerate(ids[b].tolist()):
            if wrap and value < 0:
                value += segments
            if 0 <= value - offset < segments:
                out[b, :, value - offset] += data[b, :, i].astype(np.float64)
    return out


def launch(device, data, ids, segments, offset=0, **options):
    primitive = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, data.dtype, ids.dtype, **options)
    assert primitive is not None
    stream = ep.GetDevice(device).CreateStream()
    batch, outer, num_ids, inner = data.shape
    out = to_device(np.full((batch, outer, segments, inner), 3, data.dtype), device)
    primitive.Launch(stream, to_device(ids, device), num_ids, to_device(data, device), batch, outer, segments, inner, out, offset)
    stream.Sync()
    return to_numpy(out)


def small_integers(rng, shape, dtype):
    # Exact in every dtype, and so are their sums.
    return rng.integers(-8, 9, shape).astype(dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", SUM_DTYPES)
def test_matches_numpy_for_every_dtype_pair(device, dtype, index_dtype):
    rng = np.random.default_rng(0)
    data = small_integers(rng, (2, 3, 7, 4), dtype)
    # Repeated ids accumulate; negative and too large ones are dropped.
    ids = np.array([[0, 4, 4, -1, 2, 5, 4], [1, 1, 1, 3, 100, 0, -100]], index_dtype)
    got = launch(device, data, ids, 5)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, reference(data, ids, 5).astype(dtype))


def test_float16_sums_in_float32(device):
    # 2048 + 1 + 1 is 2050 in float32 but 2048 when each add rounds to float16.
    data = np.array([2048, 1, 1], np.float16).reshape(1, 1, 3, 1)
    got = launch(device, data, np.zeros((1, 3), np.int32), 2)
    np.testing.assert_array_equal(got.ravel(), np.array([2050, 0], np.float16))


@pytest.mark.parametrize("parts", [2, 3])
def test_split_along_the_segment_axis_concatenates_to_the_logical_sum(device, parts):
    rng = np.random.default_rng(parts)
    segments = 10
    data = small_integers(rng, (2, 2, 9, 3), np.float32)
    ids = rng.integers(0, segments, (2, 9)).astype(np.int64)
    cuts = np.sort(rng.choice(np.arange(1, segments), parts - 1, replace=False))
    bounds = [0, *cuts.tolist(), segments]
    pieces = [launch(device, data, ids, stop - start, offset=start) for start, stop in zip(bounds[:-1], bounds[1:])]
    np.testing.assert_array_equal(np.concatenate(pieces, axis=2), reference(data, ids, segments))


def test_wrap_negative_counts_ids_from_the_end(device):
    rng = np.random.default_rng(3)
    data = small_integers(rng, (1, 2, 6, 2), np.float64)
    ids = np.array([[-1, -4, 0, 3, -5, 4]], np.int32)
    got = launch(device, data, ids, 4, wrap_negative=True)
    np.testing.assert_array_equal(got, reference(data, ids, 4, wrap=True))


@pytest.mark.parametrize(
    "ids, options, message",
    [
        ([[0, 3, 4, 9]], {}, r"segment_ids\[2\] = 4 is out of range for an axis of size 4; expected 0 <= index < 4"),
        ([[0, -4, -5, 9]], {"wrap_negative": True}, r"segment_ids\[2\] = -5 is out of range .* expected -4 <= index < 4"),
        ([[0, -4, 1, 3]], {}, r"segment_ids\[1\] = -4 is out of range"),
    ],
)
def test_check_bounds_names_the_first_bad_id_and_writes_nothing(device, ids, options, message):
    primitive = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, np.float32, np.int64, check_bounds=True, **options)
    stream = ep.GetDevice(device).CreateStream()
    out = to_device(np.full(2 * 4, 7, np.float32), device)
    with pytest.raises(ep.include.primitive.gather.IndexOutOfRange, match=message):
        primitive.Launch(stream, to_device(np.array(ids, np.int64), device), 4, to_device(np.ones(8, np.float32), device), 1, 2, 4, 1, out)
        stream.Sync()  # where CUDA, which does not wait for the check, raises
    if device == "cuda":
        # The sum ran and dropped the bad ids' rows.
        ids = np.array(ids[0])
        valid = (ids >= (-4 if options else 0)) & (ids < 4)
        expected = np.zeros((2, 4), np.float32)
        np.add.at(expected, (slice(None), ids[valid] % 4), 1)
    else:
        expected = np.full((2, 4), 7, np.float32)
    np.testing.assert_array_equal(to_numpy(out).reshape(2, 4), expected)


def test_check_bounds_with_an_offset_accepts_the_rows_held(device):
    data = np.arange(1, 5, dtype=np.int64).reshape(1, 1, 4, 1)
    ids = np.array([[5, 6, 5, 7]], np.int64)
    got = launch(device, data, ids, 3, offset=5, check_bounds=True)
    np.testing.assert_array_equal(got.ravel(), [4, 2, 4])
    with pytest.raises(IndexError, match=r"segment_ids\[0\] = 4 is out of range .* expected 5 <= index < 8"):
        launch(device, data, ids - 1, 3, offset=5, check_bounds=True)


def test_launch_arguments_are_checked(device):
    primitive = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, np.float32, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    ids = to_device(np.zeros(3, np.int32), device)
    data = to_device(np.zeros(2 * 3 * 2, np.float32), device)
    out = to_device(np.zeros(2 * 4 * 2, np.float32), device)
    with pytest.raises(ValueError, match="segment_ids: holds 3 elements, fewer than the 4"):
        primitive.Launch(stream, ids, 4, data, 1, 2, 4, 2, out)
    with pytest.raises(ValueError, match="data: holds 12 elements, fewer than the 18"):
        primitive.Launch(stream, ids, 3, data, 1, 3, 4, 2, out)
    with pytest.raises(ValueError, match="out: holds 16 elements, fewer than the 20"):
        primitive.Launch(stream, ids, 3, data, 1, 2, 5, 2, out)
    with pytest.raises(TypeError, match="data: dtype float64 does not match the primitive's float32"):
        primitive.Launch(stream, ids, 3, to_device(np.zeros(12), device), 1, 2, 4, 2, out)
    with pytest.raises(ValueError, match="num_segments|gather_dim_size: -1 is negative"):
        primitive.Launch(stream, ids, 3, data, 1, 2, -1, 2, out)


def test_wrap_negative_needs_offset_0(device):
    primitive = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, np.float32, np.int32, wrap_negative=True)
    stream = ep.GetDevice(device).CreateStream()
    with pytest.raises(ValueError, match="offset: 2 with wrap_negative; expected 0"):
        primitive.Launch(stream, to_device(np.zeros(1, np.int32), device), 1, to_device(np.zeros(1, np.float32), device), 1, 1, 1, 1,
                         to_device(np.zeros(1, np.float32), device), 2)


@pytest.mark.parametrize("shape, segments", [((0, 2, 3, 2), 4), ((1, 2, 0, 2), 4), ((1, 2, 3, 2), 0), ((1, 2, 3, 0), 4)])
def test_empty_sizes(device, shape, segments):
    data = np.ones(shape, np.float32)
    ids = np.zeros((shape[0], shape[2]), np.int32)
    np.testing.assert_array_equal(launch(device, data, ids, segments), reference(data, ids, segments))


@pytest.mark.parametrize("dtype, index_dtype", [(np.int8, np.int32), (np.bool_, np.int64), (np.float32, np.float32), (np.float32, np.uint8)])
def test_new_returns_none_when_unsupported(device, dtype, index_dtype):
    assert ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, dtype, index_dtype) is None


def test_new_caches_one_primitive_per_options(device):
    plain = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, np.float32, np.int32)
    assert plain is ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, "float32", "int32", wrap_negative=False)
    checked = ep.NewPrimitive(ep.UnsortedSegmentSumFactory, device, np.float32, np.int32, check_bounds=True)
    assert checked is not plain and checked.check and not plain.check


def test_the_64_bit_kernels_match_the_32_bit_ones(device, monkeypatch):
    if device == "cpu":
        pytest.skip("the CPU kernel has one index width")
    from ep.common.math import fast_divmod

    rng = np.random.default_rng(6)
    data = small_integers(rng, (2, 2, 5, 3), np.float16)
    ids = np.array([[4, 0, 9, 4, -1], [1, 1, 3, 2, 2]], np.int64)
    narrow = launch(device, data, ids, 5)
    monkeypatch.setattr(fast_divmod, "needs_wide", lambda *counts: True)
    np.testing.assert_array_equal(launch(device, data, ids, 5), narrow)


def test_listed_with_every_combination(device):
    rows = registry_rows(device, "UnsortedSegmentSum")
    listed = {tuple(row["dtypes"]) for row in rows}
    assert listed == {(np.dtype(d).name, np.dtype(i).name) for d in [*SUM_DTYPES, "bfloat16"] for i in INDEX_DTYPES}
