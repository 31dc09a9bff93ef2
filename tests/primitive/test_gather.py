"""Gather through NewPrimitive + Launch, against NumPy: dtypes, move units, the zero rule and offsets."""

import numpy as np
import pytest
from numba import njit

import ep
from ep.common.math.intrinsics import move16
from ep.common.primitive.byte_units import as_units, move_unit
from ep.testing import to_device, to_numpy
from nvvm import run_without_simulator
from dtype_lists import BY_WIDTH

INDEX_DTYPES = [np.int32, np.int64]
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def random_array(rng, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 100).astype(dtype)


def reference(params, indices, offset=0):
    """out[o, i, k] = params[o, indices[i] - offset, k] inside [0, gather), else 0 (Python-int exact)."""
    outer, gather, inner = params.shape
    out = np.zeros((outer, indices.size, inner), params.dtype)
    for i, index in enumerate(indices.tolist()):
        if 0 <= index - offset < gather:
            out[:, i] = params[:, index - offset]
    return out


def launch(device, params, indices, offset=0, stream=None):
    """The Gather of params ([outer, gather, inner], or [gather] for flat buffers) by indices."""
    primitive = ep.NewPrimitive(ep.GatherFactory, device, params.dtype, indices.dtype)
    assert primitive is not None
    stream = stream or ep.GetDevice(device).CreateStream()
    outer, gather, inner = params.shape if params.ndim == 3 else (1, params.size, 1)
    out = to_device(np.full(indices.size if params.ndim == 1 else (outer, indices.size, inner), 1, params.dtype), device)
    primitive.Launch(stream, to_device(indices, device), indices.size, to_device(params, device), outer, gather, inner, out, offset)
    stream.Sync()
    return to_numpy(out)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", BY_WIDTH)
def test_matches_numpy_for_every_dtype_pair(device, dtype, index_dtype):
    rng = np.random.default_rng(0)
    params = random_array(rng, (3, 7, 5), dtype)
    indices = np.array([0, 6, 3, 3, -1, 7, 100, -100, 2], index_dtype)
    np.testing.assert_array_equal(launch(device, params, indices), reference(params, indices))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("dtype", BY_WIDTH)
def test_flat_buffers_of_every_dtype_pair(device, dtype, index_dtype):
    # 1-d buffers of one slab: on the CPU the launch that calls the compiled kernel directly.
    rng = np.random.default_rng(9)
    params = random_array(rng, (1, 9, 1), dtype)
    indices = np.array([8, 0, -1, 9, 4, 4, 1 << 20], index_dtype)
    np.testing.assert_array_equal(launch(device, params.ravel(), indices), reference(params, indices).ravel())


@pytest.mark.parametrize(
    "dtype, inner", [(np.uint8, 1), (np.uint8, 3), (np.int8, 2), (np.float16, 1), (np.float16, 3), (np.int32, 1),
                     (np.float16, 4), (np.float32, 3), (np.float64, 1), (np.float32, 4), (np.float16, 12), (np.float64, 6)]
)
def test_every_move_unit(device, dtype, inner):
    # Rows of 1, 2, 3, 4, 6, 8, 12, 16, 24 and 48 bytes: every unit from 1 to 16 bytes and odd ones.
    rng = np.random.default_rng(1)
    params = random_array(rng, (2, 6, inner), dtype)
    indices = np.array([5, 0, 2, 9, 4, 4], np.int64)
    np.testing.assert_array_equal(launch(device, params, indices), reference(params, indices))


def test_move_unit_is_the_widest_that_sizes_and_addresses_allow(device):
    widest = 8 if device == "cpu" else 16
    base = to_device(np.zeros(64, np.uint8), device)
    assert move_unit(32, [base], widest) == widest
    assert move_unit(24, [base], widest) == 8
    assert move_unit(12, [base], widest) == 4
    assert move_unit(6, [base], widest) == 2
    assert move_unit(5, [base], widest) == 1
    assert move_unit(32, [base, base[2:]], widest) == 2
    assert move_unit(32, [base[1:]], widest) == 1


def test_misaligned_buffers_fall_back_to_narrower_units(device):
    rng = np.random.default_rng(2)
    params = random_array(rng, (2, 5, 8), np.float16)
    indices = np.array([4, 1, 1, 0, 6], np.int32)
    primitive = ep.NewPrimitive(ep.GatherFactory, device, np.float16, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    # One float16 in: the buffers sit 2 bytes off the 16-byte alignment of their allocations.
    in_ = to_device(np.concatenate([np.zeros(1, np.float16), params.ravel()]), device)[1:]
    out = to_device(np.zeros(1 + 2 * 5 * 8, np.float16), device)[1:]
    primitive.Launch(stream, to_device(indices, device), 5, in_, 2, 5, 8, out)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out).reshape(2, 5, 8), reference(params, indices))


@pytest.mark.parametrize("parts", [2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16, np.uint8])
def test_split_along_the_gather_axis_sums_to_the_logical_gather(device, parts, dtype):
    rng = np.random.default_rng(parts)
    gather = 11
    params = random_array(rng, (3, gather, 4), dtype)
    indices = rng.integers(0, gather, 13).astype(np.int64)
    # Unequal parts, one of them possibly a single row.
    cuts = np.sort(rng.choice(np.arange(1, gather), parts - 1, replace=False))
    bounds = [0, *cuts.tolist(), gather]
    total = np.zeros((3, indices.size, 4), np.float64)
    for start, stop in zip(bounds[:-1], bounds[1:]):
        part = launch(device, np.ascontiguousarray(params[:, start:stop]), indices, offset=start)
        np.testing.assert_array_equal(part, reference(params[:, start:stop], indices, offset=start))
        total += part.astype(np.float64)
    np.testing.assert_array_equal(total.astype(dtype), reference(params, indices))


def test_never_reads_outside_in_and_writes_only_out_count(device):
    # in_ is the middle of a buffer full of sentinels: no index may bring one into out.
    buffer = np.full(3 * 4 * 2 + 20, 99, np.int32)
    buffer[10:34] = np.arange(24)
    primitive = ep.NewPrimitive(ep.GatherFactory, device, np.int32, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    indices = np.array([-1, 4, 3, 0, -5, 7], np.int64)
    out = to_device(np.full(3 * 6 * 2 + 5, 7, np.int32), device)
    primitive.Launch(stream, to_device(indices, device), 6, to_device(buffer, device)[10:34], 3, 4, 2, out)
    stream.Sync()
    got = to_numpy(out)
    np.testing.assert_array_equal(got[:36].reshape(3, 6, 2), reference(np.arange(24, dtype=np.int32).reshape(3, 4, 2), indices))
    np.testing.assert_array_equal(got[36:], 7)


def test_launch_leaves_indices_and_in_unchanged(device):
    rng = np.random.default_rng(3)
    params = random_array(rng, (2, 5, 3), np.float32)
    indices = np.array([4, -2, 0, 9], np.int64)
    primitive = ep.NewPrimitive(ep.GatherFactory, device, np.float32, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    d_params, d_indices = to_device(params, device), to_device(indices, device)
    out = to_device(np.zeros((2, 4, 3), np.float32), device)
    primitive.Launch(stream, d_indices, 4, d_params, 2, 5, 3, out, 1)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(d_params), params)
    np.testing.assert_array_equal(to_numpy(d_indices), indices)


def test_offsets_near_the_ends_of_int64(device):
    params = np.arange(2 * 5 * 3, dtype=np.int64).reshape(2, 5, 3)
    indices = np.array([INT64_MAX, INT64_MAX - 1, INT64_MAX - 4, INT64_MAX - 5, 0, INT64_MIN, -1], np.int64)
    for offset in (INT64_MAX - 4, INT64_MAX, INT64_MIN, -3, 0):
        np.testing.assert_array_equal(launch(device, params, indices, offset), reference(params, indices, offset))


@pytest.mark.parametrize(
    "outer, gather, inner, num_indices", [(0, 4, 3, 2), (2, 4, 0, 2), (2, 4, 3, 0), (2, 0, 3, 2), (0, 0, 0, 0)]
)
def test_empty_sizes(device, outer, gather, inner, num_indices):
    params = np.arange(outer * gather * inner, dtype=np.float32).reshape(outer, gather, inner)
    indices = np.arange(num_indices, dtype=np.int32)
    # With gather_dim_size 0 every row is missing: all zeros, and nothing is read.
    np.testing.assert_array_equal(launch(device, params, indices), reference(params, indices))


@pytest.mark.parametrize("index_dtype", [np.float32, np.int8, np.uint8, np.bool_, np.float64])
def test_new_returns_none_unless_indices_are_int32_or_int64(device, index_dtype):
    assert ep.NewPrimitive(ep.GatherFactory, device, np.float32, index_dtype) is None


def test_new_refuses_what_is_not_a_dtype(device):
    with pytest.raises(TypeError, match="params_dtype: 'frobnicate' is not a supported data type"):
        ep.NewPrimitive(ep.GatherFactory, device, "frobnicate", np.int32)


def _primitive_and_buffers(device):
    primitive = ep.NewPrimitive(ep.GatherFactory, device, np.float32, np.int32)
    stream = ep.GetDevice(device).CreateStream()
    indices = to_device(np.array([0, 1, 2], np.int32), device)
    in_ = to_device(np.zeros((2, 4, 3), np.float32), device)
    out = to_device(np.zeros((2, 3, 3), np.float32), device)
    return primitive, stream, indices, in_, out


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"num_indices": 4}, ValueError, "indices: holds 3 elements, fewer than the 4"),
        ({"gather_dim_size": 5}, ValueError, "in_: holds 24 elements, fewer than the 30"),
        ({"inner_dim_size": 4}, ValueError, "in_: holds 24 elements, fewer than the 32"),
        ({"outer_dim_size": 3}, ValueError, "in_: holds 24 elements, fewer than the 36"),
        ({"outer_dim_size": -1}, ValueError, "outer_dim_size: -1 is negative"),
        ({"inner_dim_size": 1.5}, TypeError, "inner_dim_size: 1.5 is not an integer"),
        ({"offset": 1.0}, TypeError, "offset: 1.0 is not an integer"),
        ({"offset": True}, TypeError, "offset: True is not an integer"),
        ({"offset": 1 << 63}, ValueError, "offset: 9223372036854775808 does not fit in int64"),
    ],
)
def test_launch_arguments_are_checked(device, change, error, message):
    primitive, stream, indices, in_, out = _primitive_and_buffers(device)
    args = dict(num_indices=3, outer_dim_size=2, gather_dim_size=4, inner_dim_size=3, offset=0)
    args.update(change)
    with pytest.raises(error, match=message):
        primitive.Launch(
            stream, indices, args["num_indices"], in_, args["outer_dim_size"], args["gather_dim_size"],
            args["inner_dim_size"], out, args["offset"],
        )
    np.testing.assert_array_equal(to_numpy(out), 0)


def test_short_out_wrong_dtype_and_wrong_stream(device):
    primitive, stream, indices, in_, out = _primitive_and_buffers(device)
    with pytest.raises(ValueError, match="out: holds 18 elements, fewer than the 24"):
        primitive.Launch(stream, to_device(np.zeros(4, np.int32), device), 4, in_, 2, 4, 3, out)
    with pytest.raises(TypeError, match="indices: dtype int64 does not match the primitive's int32"):
        primitive.Launch(stream, to_device(np.zeros(3, np.int64), device), 3, in_, 2, 4, 3, out)
    with pytest.raises(TypeError, match="in_: dtype float64 does not match the primitive's float32"):
        primitive.Launch(stream, indices, 3, to_device(np.zeros(24), device), 2, 4, 3, out)
    with pytest.raises(TypeError, match="stream: .* is not an ep Stream"):
        primitive.Launch(object(), indices, 3, in_, 2, 4, 3, out)
    if device == "cuda":
        with pytest.raises(TypeError, match="stream: .* is a cpu stream; expected a cuda stream"):
            primitive.Launch(ep.GetDevice("cpu").CreateStream(), indices, 3, in_, 2, 4, 3, out)


def test_read_only_out_is_refused_on_cpu():
    primitive, stream, indices, in_, out = _primitive_and_buffers("cpu")
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out: the array is read-only"):
        primitive.Launch(stream, indices, 3, in_, 2, 4, 3, out)


@pytest.mark.parametrize("shape, flat", [((2, 6, 3), False), ((1, 6, 1), True)])
def test_read_only_in_and_indices_are_read_on_cpu(shape, flat):
    rng = np.random.default_rng(8)
    params = random_array(rng, shape, np.float32)
    indices = np.array([5, 0, -1, 2, 7], np.int64)
    params.flags.writeable = False
    indices.flags.writeable = False
    got = launch("cpu", params.ravel() if flat else params, indices)
    np.testing.assert_array_equal(got, reference(params, indices).reshape(got.shape))


@pytest.mark.parametrize(
    "dtype, outer, gather, inner, num_indices",
    [
        (np.float32, 80, 300, 1, 500),  # parallel element gather: the next slab prefetched along the way
        (np.float64, 20, 300, 1, 400),  # serial element gather
        (np.float32, 3, 700, 8, 2000),  # parallel: prefetched rows
        (np.float32, 2, 50, 12, 300),  # serial chunks
        (np.int8, 3, 40, 16, 200),
    ],
)
def test_cpu_prefetch_paths_match_numpy(monkeypatch, dtype, outer, gather, inner, num_indices):
    # The threshold that switches prefetching on for large params, lowered to test it on small
    # ones; the sizes are new to the plan caches, so the lowered value applies.
    from ep.cpu.primitive import gather as cpu_gather

    monkeypatch.setattr(cpu_gather, "_PREFETCH_BYTES", 0)
    rng = np.random.default_rng(outer * gather)
    params = random_array(rng, (outer, gather, inner), dtype)
    indices = rng.integers(-2, gather + 2, num_indices).astype(np.int64)
    in_range = rng.integers(0, gather, num_indices).astype(np.int64)
    for index_values, offset in ((indices, 0), (in_range, 0), (in_range + 5, 5)):
        np.testing.assert_array_equal(launch("cpu", params, index_values, offset), reference(params, index_values, offset))


@pytest.mark.parametrize(
    "dtype, index_dtype, low, high, offset, wrap",
    [
        (np.float32, np.int64, -300, 300, 0, True),  # negatives wrap, all in range
        (np.float64, np.int32, 5, 305, 5, False),  # an offset, all in range
        (np.int32, np.int64, -2, 302, 0, False),  # some out of range: zeros, no streaming
    ],
)
def test_cpu_element_gather_into_a_large_out_matches_numpy(dtype, index_dtype, low, high, offset, wrap):
    # An out of STREAM_BYTES or more is streamed; 2003 indices split the rows into spans that
    # start inside a slab and end in a group of fewer than 8 elements.
    from ep.cpu.primitive.copy_nd import STREAM_BYTES

    outer, gather, num_indices = STREAM_BYTES // (2003 * np.dtype(dtype).itemsize) + 1, 300, 2003
    rng = np.random.default_rng(outer)
    params = random_array(rng, (outer, gather, 1), dtype)
    indices = rng.integers(low, high, num_indices).astype(index_dtype)
    primitive = ep.NewPrimitive(ep.GatherFactory, "cpu", dtype, index_dtype, wrap_negative=wrap)
    out = np.ones((outer, num_indices, 1), dtype)
    primitive.Launch(ep.GetDevice("cpu").CreateStream(), indices, num_indices, params, outer, gather, 1, out, offset)
    expected = reference(params, indices + gather * (indices < 0) if wrap else indices, offset)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "dtype, outer, inner",
    [
        (np.float32, 3, 1),  # serial: chunks of rows cut the slabs' indices
        (np.float64, 12, 1),  # parallel
        (np.uint8, 2, 8),  # rows of one 8-byte unit: the element kernel too
    ],
)
def test_cpu_element_gather_of_more_indices_than_a_span_converts_at_once(dtype, outer, inner):
    # A span converts a slab's indices into a buffer of _POSITIONS on its stack: slabs of more
    # indices run in chunks no longer than it, in range (converted) or not.
    from ep.cpu.primitive.gather import _POSITIONS

    rng = np.random.default_rng(outer)
    num_indices, gather = _POSITIONS + 905, 700
    params = random_array(rng, (outer, gather, inner), dtype)
    for indices in (rng.integers(0, gather, num_indices), rng.integers(-3, gather + 3, num_indices)):
        np.testing.assert_array_equal(launch("cpu", params, indices), reference(params, indices))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_cpu_element_gather_compiles_to_streaming_stores(dtype):
    # Its streamed outputs need streaming stores in the machine code: with `stream` a run-time flag
    # at each store, LLVM merged the streaming and the ordinary store into one ordinary store.
    from numba import from_dtype, types

    from ep.common.jit import specialize
    from ep.cpu.primitive.gather import _gather_element_span

    array = types.Array(from_dtype(np.dtype(dtype)), 1, "C")
    params = types.Array(types.int64, 1, "C")
    args = types.Tuple((types.Array(types.int64, 1, "C"), array, array, params, types.int64))
    # Compiled here, not loaded from the cache: the span over rows [start, stop) of args.
    span = njit(specialize(_gather_element_span, "gather_span_probe"))
    signature = (types.int64, types.int64, args)
    span.compile(signature)
    assert "!nontemporal" in span.inspect_llvm(signature)


def test_the_64_bit_kernels_match_the_32_bit_ones(device, monkeypatch):
    if device == "cpu":
        pytest.skip("the CPU kernel has one index width")
    from ep.common.math import fast_divmod

    rng = np.random.default_rng(4)
    params = random_array(rng, (3, 6, 8), np.float16)
    indices = np.array([5, -1, 0, 2, 6, 3], np.int32)
    narrow = launch(device, params, indices, 1)
    monkeypatch.setattr(fast_divmod, "needs_wide", lambda *counts: True)
    np.testing.assert_array_equal(launch(device, params, indices, 1), narrow)
    np.testing.assert_array_equal(narrow, reference(params, indices, 1))


def test_as_units_views_the_same_bytes(device):
    x = np.arange(12, dtype=np.float32)
    units = to_numpy(as_units(to_device(x, device), 8, 16))
    assert units.dtype == np.uint64 and units.size == 4
    np.testing.assert_array_equal(units.view(np.float32), x[:8])


@njit
def _move_pairs(dst, src, pairs):
    for j in range(pairs):
        move16(dst, 2 * j, src, 2 * (pairs - 1 - j))


def test_move16_copies_16_bytes():
    src = np.arange(8, dtype=np.uint64)
    dst = np.zeros(8, np.uint64)
    _move_pairs(dst, src, 4)
    np.testing.assert_array_equal(dst, [6, 7, 4, 5, 2, 3, 0, 1])


_PTX_PROBE = """
from ep.common.runtime.data_type import DataType
from ep.cuda.primitive.gather import gather_kernel
for wide in (False, True):
    print("WIDE" if wide else "NARROW")
    print(gather_kernel(DataType.kInt64, 16, wide, True).ptx((8, 0)))
"""


@pytest.mark.ptx
def test_32_bit_kernels_divide_by_multiply_high_and_move_16_bytes_at_once():
    stdout = run_without_simulator(["-c", _PTX_PROBE], timeout=600)
    narrow, wide = stdout.split("NARROW\n", 1)[1].split("\nWIDE\n", 1)
    assert "mul.hi.u32" in narrow and "div." not in narrow and "rem." not in narrow
    assert "div." in wide or "rem." in wide
    assert "ld.global.v2.u64" in narrow and "ld.global.v2.u64" in wide


def test_cpu_rows_move_in_the_widest_raw_unit():
    # The CPU plan moves short rows of int8 as uint64, uint32 or uint16 words when the row size allows.
    from ep.common.primitive.gather import gather_sizes
    from ep.cpu.primitive.gather import CPU_GATHER_KERNELS

    def unit(inner):
        sizes = gather_sizes(5, 1, 2, 6, inner, 0, wrap=False)
        return CPU_GATHER_KERNELS.plan(ep.DataType.kInt8, ep.DataType.kInt64, sizes, False, False).unit

    assert unit(24) == np.dtype(np.uint64)
    assert unit(12) == np.dtype(np.uint32)
    assert unit(6) == np.dtype(np.uint16)
    assert unit(3) is None
    assert unit(64) is None and unit(1024) is None  # long rows move as elements (_UNIT_ROW_BYTES)
    params = np.arange(2 * 6 * 24, dtype=np.int8).reshape(2, 6, 24)
    indices = np.array([5, 0, 2, 9, -1], np.int64)
    np.testing.assert_array_equal(launch("cpu", params, indices), reference(params, indices))


def test_cpu_gather_has_one_build_for_every_size():
    # A warm-up at one size warms every size: launches below and above the parallel threshold run
    # one compiled index pass and span (ParallelFor's parallel argument picks the loop), never a second build.
    from ep.cpu.parallel_for import PARALLEL_THRESHOLD
    from ep.cpu.primitive import gather as cpu_gather

    rng = np.random.default_rng(12)
    kernels = (cpu_gather._INDEX_PASS, cpu_gather._span(np.dtype(np.int64), np.dtype(np.uint8), False).span)
    builds = []
    for gather in (5, PARALLEL_THRESHOLD):
        params = random_array(rng, (2, gather, 3), np.uint8)
        indices = rng.integers(-1, gather + 1, gather).astype(np.int64)
        np.testing.assert_array_equal(launch("cpu", params, indices), reference(params, indices))
        # Other tests of this worker may have compiled the entry for other dtypes.
        builds.append([kernel.serial.signatures[:] for kernel in kernels])
        assert not any("parallel" in vars(kernel) for kernel in kernels)
    assert builds[0] == builds[1] and len(builds[0][1]) == 1


def launch_with(device, params, indices, offset=0, **options):
    """launch() of a Gather made with New's index options."""
    primitive = ep.NewPrimitive(ep.GatherFactory, device, params.dtype, indices.dtype, **options)
    stream = ep.GetDevice(device).CreateStream()
    outer, gather, inner = params.shape
    out = to_device(np.full((outer, indices.size, inner), 1, params.dtype), device)
    primitive.Launch(stream, to_device(indices, device), indices.size, to_device(params, device), outer, gather, inner, out, offset)
    stream.Sync()
    return to_numpy(out)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("shape", [(3, 7, 5), (1, 7, 1), (2, 7, 1)])
def test_wrap_negative_counts_indices_from_the_end(device, shape, index_dtype):
    rng = np.random.default_rng(11)
    params = random_array(rng, shape, np.float32)
    indices = np.array([0, -1, -7, -8, 6, 7, -100, 3], index_dtype)
    wrapped = np.where((indices < 0) & (indices >= -7), indices + 7, indices)
    np.testing.assert_array_equal(launch_with(device, params, indices, wrap_negative=True), reference(params, wrapped))
    # In range once wrapped: the CPU's wrapped fast loop.
    in_range = np.array([-1, -7, 0, 6, -3], index_dtype)
    np.testing.assert_array_equal(launch_with(device, params, in_range, wrap_negative=True), reference(params, in_range % 7))


@pytest.mark.parametrize(
    "indices, options, message",
    [
        ([0, 4, 5, 9], {}, r"indices\[2\] = 5 is out of range for an axis of size 5; expected 0 <= index < 5"),
        ([0, -1, 4], {}, r"indices\[1\] = -1 is out of range"),
        ([0, -5, -6, 9], {"wrap_negative": True}, r"indices\[2\] = -6 is out of range for an axis of size 5; expected -5 <= index < 5"),
    ],
)
@pytest.mark.parametrize("outer, inner", [(1, 1), (2, 3)])
def test_check_bounds_names_the_first_bad_index_and_writes_nothing(device, indices, options, message, outer, inner):
    primitive = ep.NewPrimitive(ep.GatherFactory, device, np.float32, np.int64, check_bounds=True, **options)
    stream = ep.GetDevice(device).CreateStream()
    indices = np.array(indices, np.int64)
    out = to_device(np.full(outer * indices.size * inner, 7, np.float32), device)
    in_ = to_device(np.ones(outer * 5 * inner, np.float32), device)
    with pytest.raises(ep.include.primitive.gather.IndexOutOfRange, match=message) as raised:
        primitive.Launch(stream, to_device(indices, device), indices.size, in_, outer, 5, inner, out)
        stream.Sync()  # where CUDA, which does not wait for the check, raises
    assert isinstance(raised.value, IndexError) and raised.value.position == int(message.split(r"\[")[1][0])
    if device == "cuda":
        # The gather ran: rows of valid indices copied, those of bad ones zeros.
        valid = (indices >= (-5 if options else 0)) & (indices < 5)
        expected = np.broadcast_to(valid[None, :, None], (outer, indices.size, inner)).astype(np.float32).ravel()
    else:
        expected = np.full(outer * indices.size * inner, 7, np.float32)
    np.testing.assert_array_equal(to_numpy(out), expected)
    stream.Sync()  # the error was raised once


def test_check_bounds_with_an_offset_accepts_the_rows_held(device):
    params = np.arange(2 * 3 * 2, dtype=np.int32).reshape(2, 3, 2)
    indices = np.array([10, 12, 11, 10], np.int64)
    got = launch_with(device, params, indices, 10, check_bounds=True)
    np.testing.assert_array_equal(got, reference(params, indices, 10))
    with pytest.raises(IndexError, match=r"indices\[3\] = 13 is out of range for an axis of size 3; expected 10 <= index < 13"):
        launch_with(device, params, np.array([10, 12, 11, 13], np.int64), 10, check_bounds=True)


def test_check_bounds_checks_indices_when_out_is_empty(device):
    params = np.zeros((0, 4, 2), np.float32)
    with pytest.raises(IndexError, match=r"indices\[1\] = 4 is out of range"):
        launch_with(device, params, np.array([0, 4], np.int32), check_bounds=True)


def test_wrap_negative_needs_offset_0(device):
    with pytest.raises(ValueError, match="offset: 3 with wrap_negative; expected 0"):
        launch_with(device, np.zeros((1, 4, 1), np.float32), np.array([0], np.int32), 3, wrap_negative=True)


def test_new_takes_the_options_by_keyword_only_and_caches_per_options(device):
    plain = ep.NewPrimitive(ep.GatherFactory, device, np.float32, np.int32)
    assert plain is ep.NewPrimitive(ep.GatherFactory, device, np.float32, np.int32, wrap_negative=False, check_bounds=False)
    wrapping = ep.NewPrimitive(ep.GatherFactory, device, np.float32, np.int32, wrap_negative=True)
    assert wrapping is not plain and wrapping.wrap and not plain.wrap
    with pytest.raises(TypeError):
        ep.include.primitive.GetFactory(ep.GatherFactory, device).New(np.float32, np.int32, True)


@pytest.mark.parametrize("options", [{}, {"wrap_negative": True}, {"wrap_negative": True, "check_bounds": True}])
def test_cpu_index_pass_over_many_indices_picks_the_loops_and_the_first_bad_one(options):
    # The least/greatest pass over 2**18 indices, on the calling thread before the rows' chunks.
    rng = np.random.default_rng(13)
    params = random_array(rng, (1, 50, 2), np.float32)
    indices = rng.integers(-50, 50, (1 << 18) + 7).astype(np.int64)
    wrapped = np.where(indices < 0, indices + 50, indices) if options else indices
    np.testing.assert_array_equal(launch_with("cpu", params, indices, **options), reference(params, wrapped))
    if options.get("check_bounds"):
        indices[[200000, 250000]] = [50, -51]
        with pytest.raises(IndexError, match=r"indices\[200000\] = 50 is out of range"):
            launch_with("cpu", params, indices, **options)


@pytest.mark.parametrize("gather, offset, wrap", [(0, 0, False), (0, 0, True), (5, 0, False), (5, 0, True), (5, 7, False), (1, -3, False)])
def test_index_range_is_the_index_rule(gather, offset, wrap):
    # The CPU's index pass tests [least, hi]; gather_row is the rule every kernel applies per index.
    from ep.common.primitive.gather import gather_row, gather_sizes, index_range

    sizes = gather_sizes(1, 1, 1, gather, 1, offset, wrap)
    least, hi = index_range(sizes, wrap)
    for value in range(offset - 2 * gather - 3, offset + 2 * gather + 3):
        selects = gather_row.py_func(value, sizes.lo, sizes.hi, gather, wrap) >= 0
        assert selects == (least <= value <= hi), (value, least, hi)
