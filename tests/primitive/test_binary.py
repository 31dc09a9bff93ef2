"""BroadcastElementwiseBinary: every path on every dtype, scalars, argument checks, and ep.ops.binary."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ep
from ep.common.primitive.broadcast_elementwise_binary import plan_binary
from ep.common.runtime.device import available_device_types
from ep.common.runtime.validate import MAX_NUM_DIMS
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, BOOL, FLOATS, INTS, assert_same, sampled


# (dims0, dims1, the path plan_binary picks); None stands for a scalar value operand.
PATHS = [
    ((3, 4), (3, 4), "elementwise"),
    ((1, 1), (1,), "elementwise"),
    ((3, 4), None, "scalar"),
    (None, (3, 4), "scalar"),
    ((3, 4), (1,), "scalar"),
    ((1, 1), (2, 3, 4), "scalar"),
    ((3, 4), (4,), "row"),
    ((1, 4), (3, 4), "row"),
    ((3, 4), (3, 1), "column"),
    ((3, 1), (3, 4), "column"),
    ((2, 3, 1), (2, 3, 4), "column"),
    ((2, 1, 4), (2, 3, 4), "general"),
    ((3, 1), (1, 4), "general"),
    ((2, 3, 4), (3, 1), "general"),
    ((2, 5, 10, 5), (5, 1, 5, 10, 1), "general"),
    ((0, 3), (3,), "empty"),
]
PATH_IDS = [f"{d0}-{d1}-{path}" for d0, d1, path in PATHS]


def operand(dims, dtype, seed):
    """An array of dims, or for None a scalar value, with negative values where dtype has them."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dims is None:
        return {"b": True, "i": -3, "u": 3, "f": 2.5}[dtype.kind]
    if dtype == np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(-50 if dtype.kind == "i" else 0, 50, dims).astype(dtype)
    return rng.normal(0, 3, dims).astype(dtype)


def numpy_reference(op, a, b, dtype):
    """op on a and b (arrays or a scalar) of dtype with NumPy, computed as the kernels are: float16 in
    float32, integers in int64 wrapped to dtype, bool as int64 then != 0; a scalar is first made a
    dtype. Predicates give bool."""
    compute = np.float32 if dtype == np.float16 else np.int64 if np.dtype(dtype).kind in "biu" else dtype
    x = np.asarray(np.asarray(a, dtype), compute)
    y = np.asarray(np.asarray(b, dtype), compute)
    with np.errstate(all="ignore"):
        result = op(x, y)
    if result.dtype == np.bool_:
        return result
    return result != 0 if dtype == np.bool_ else result.astype(dtype)


def launch(device, op, a, b, dst_dtype, attr0=None, attr1=None, stream=None):
    """op(a, b) through NewPrimitive + Launch; a scalar operand passes as itself with dims ()."""
    src_dtype = (b if np.isscalar(a) else a).dtype
    primitive = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, op, src_dtype, dst_dtype, 8, attr0, attr1)
    stream = stream or ep.GetDevice(device).CreateStream()
    dims0, dims1 = np.shape(a), np.shape(b)
    src0 = a if np.isscalar(a) else to_device(a, device)
    src1 = b if np.isscalar(b) else to_device(b, device)
    dst = to_device(np.zeros(np.broadcast_shapes(dims0, dims1), dst_dtype), device)
    primitive.Launch(stream, dims0, src0, dims1, src1, dst)
    stream.Sync()
    for x, src in ((a, src0), (b, src1)):
        if not np.isscalar(x):
            assert_same(to_numpy(src), x)  # inputs are never modified
    return to_numpy(dst)


def assert_close(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind == "f":
        rtol = {2: 2.0**-10, 4: 2e-6, 8: 1e-12}[expected.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol)
    else:
        assert_same(got, expected)


# The dtype table, written out from the issue rather than read from ep: math ops on every dtype,
# predicates on every dtype giving bool, bitwise ops on the integers and bool, and the backward
# ops on the floating dtypes.

B = ep.BinaryOp
MATH_OPS = (
    B.kAdd, B.kSub, B.kMul, B.kDiv, B.kMax, B.kMin, B.kPow, B.kFmod, B.kFloorDiv, B.kTruncDiv, B.kFloorMod,
    B.kFmax, B.kFmin, B.kHeaviside,
)
# PyTorch's float functions of two arguments (torch computes integers in float32: ep.ops does, by name).
FLOAT_FUNCTION_OPS = (B.kAtan2, B.kHypot, B.kCopysign, B.kLdexp, B.kXlogy, B.kLogAddExp, B.kLogAddExp2)
INTEGER_OPS = (B.kGcd, B.kLcm, B.kBitwiseLeftShift, B.kBitwiseRightShift)
PREDICATE_OPS = (
    B.kEqual, B.kNotEqual, B.kLessThan, B.kLessEqual, B.kGreaterThan, B.kGreaterEqual, B.kIsClose, B.kIsCloseEqualNan,
    B.kLogicalAnd, B.kLogicalOr, B.kLogicalXor,
)
BITWISE_OPS = (B.kBitwiseAnd, B.kBitwiseOr, B.kBitwiseXor)
BACKWARD_OPS = tuple(op for op in B if op.name.endswith(("BackwardWithDyX", "BackwardWithDyY")))


def expected_combinations():
    """(op, src, dst) for every combination the issue asks for."""
    every = (BOOL,) + INTS + FLOATS
    table = {(op, s, s) for op in MATH_OPS for s in every}
    table |= {(op, s, BOOL) for op in PREDICATE_OPS for s in every}
    table |= {(op, s, s) for op in BITWISE_OPS for s in INTS + (BOOL,)}
    table |= {(op, s, s) for op in BACKWARD_OPS + FLOAT_FUNCTION_OPS for s in FLOATS}
    table |= {(op, s, s) for op in INTEGER_OPS for s in INTS}
    # nextafter steps in the compute dtype: float16 and bfloat16 (computed in float32) are refused.
    table |= {(B.kNextAfter, s, s) for s in (np.dtype(np.float32), np.dtype(np.float64))}
    return table


COMBINATIONS = expected_combinations()


def test_every_op_has_one_row_of_the_table():
    groups = MATH_OPS + PREDICATE_OPS + BITWISE_OPS + BACKWARD_OPS + FLOAT_FUNCTION_OPS + INTEGER_OPS + (B.kNextAfter,)
    assert len(groups) == len(set(groups)) and set(groups) == set(B)


def test_the_table_is_the_issues_on_every_device(device):
    factory = ep.include.primitive.GetFactory(ep.BroadcastElementwiseBinaryFactory, device)
    listed = [(op, src.dtype, dst.dtype) for op, (src, dst) in factory.Combinations()]
    assert len(listed) == len(set(listed)) and set(listed) == COMBINATIONS
    if device == "cuda":
        # One kernel per combination serves every path: the PTX check compiles each once.
        assert len(list(factory.Kernels())) == len(COMBINATIONS)


@pytest.mark.parametrize("op", list(B), ids=lambda op: op.name)
def test_every_other_combination_is_none(device, op):
    every = (BOOL,) + INTS + FLOATS
    attrs = {"attr0": 0.5} if op is B.kThresholdBackwardWithDyX else {}  # its threshold has no default
    for src in every:
        for dst in every:
            primitive = new(device, op, src, dst, **attrs)
            assert (primitive is not None) == ((op, src, dst) in COMBINATIONS), (src, dst)


@pytest.mark.parametrize("dims0, dims1, path", PATHS, ids=PATH_IDS)
def test_shapes_take_the_intended_path(dims0, dims1, path):
    assert plan_binary(dims0 or (), dims1 or (), dims0 is None, dims1 is None).path == path


@pytest.mark.parametrize("dtype", sampled(ALL))
@pytest.mark.parametrize("dims0, dims1, path", PATHS, ids=PATH_IDS)
def test_sub_on_every_path_and_dtype(device, dims0, dims1, path, dtype):
    a, b = operand(dims0, dtype, 0), operand(dims1, dtype, 1)
    # OneFlow's kSub (the string "sub" is torch.sub, which refuses bools).
    assert_close(launch(device, "kSub", a, b, dtype), numpy_reference(np.subtract, a, b, dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float64])
@pytest.mark.parametrize("dims0, dims1, path", PATHS, ids=PATH_IDS)
def test_comparison_on_every_path(device, dims0, dims1, path, dtype):
    a, b = operand(dims0, dtype, 2), operand(dims1, dtype, 3)
    assert_close(launch(device, "greater_equal", a, b, np.bool_), numpy_reference(np.greater_equal, a, b, dtype))


# CUDA moves packs of up to 16 bytes per thread where no pack crosses a row and the buffers are
# aligned to their packs, one element where not, and a pack cut short by the count element by
# element; an operand broadcast along the innermost dim gives the whole pack one element
# (ep/cuda/pack.py). Shapes with rows of whole packs (16, 32) and not (5), counts that leave tails.
PACK_SHAPES = [
    ((35,), (35,)), ((35,), None), (None, (17,)), ((33,), (1,)), ((3, 32), (32,)), ((3, 16), (3, 1)),
    ((2, 3, 16), (2, 1, 16)), ((3, 5), (5,)),
]


def _offset_buffer(x, device, offset):
    """x on device as a view offset elements into its buffer (misaligned for a pack where offset > 0)."""
    flat = np.concatenate([np.zeros(offset, x.dtype), np.ravel(x)])
    return to_device(flat, device)[offset:]


@pytest.mark.parametrize("op, dtype, dst_dtype", [
    ("kSub", np.int8, np.int8), ("kSub", np.bool_, np.bool_), ("kSub", np.float16, np.float16),
    ("kSub", np.float64, np.float64), ("less", np.float32, np.bool_),
])
@pytest.mark.parametrize("dims0, dims1", PACK_SHAPES)
def test_packs_tails_broadcasts_and_offset_buffers(device, op, dtype, dst_dtype, dims0, dims1):
    a, b = operand(dims0, dtype, 6), operand(dims1, dtype, 7)
    expected = numpy_reference({"kSub": np.subtract, "less": np.less}[op], a, b, dtype)
    primitive = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, op, dtype, dst_dtype, 8)
    stream = ep.GetDevice(device).CreateStream()
    for offset0, offset1, offset in ((0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)):
        src0 = a if dims0 is None else _offset_buffer(a, device, offset0)
        src1 = b if dims1 is None else _offset_buffer(b, device, offset1)
        dst = _offset_buffer(np.zeros(expected.shape, dst_dtype), device, offset)
        primitive.Launch(stream, np.shape(a), src0, np.shape(b), src1, dst)
        stream.Sync()
        assert_close(to_numpy(dst).reshape(expected.shape), expected)


@pytest.mark.parametrize("dims0, dims1, path", PATHS, ids=PATH_IDS)
def test_attributes_reach_every_path(device, dims0, dims1, path):
    a, b = operand(dims0, np.float32, 4), operand(dims1, np.float32, 5)
    atol, rtol = 1.5, 0.25
    expected = np.abs(np.subtract(a, b, dtype=np.float32)) <= np.float32(atol) + np.float32(rtol) * np.abs(np.float32(b))
    assert_close(launch(device, "is_close", a, b, np.bool_, atol, rtol), expected)


def test_scalar_is_converted_to_the_src_dtype(device):
    a = np.array([100, 120, -128], np.int8)
    assert_same(launch(device, "add", a, 10.9, np.int8), a + np.int8(10))
    h = np.array([1.0, 2.0, 3.0], np.float16)
    expected = (h.astype(np.float32) * np.float32(np.float16(0.1))).astype(np.float16)
    assert_same(launch(device, "mul", h, 0.1, np.float16), expected)
    assert_same(launch(device, "add", np.array([True, False]), 2, np.bool_), [True, True])
    assert_same(launch(device, "sub", np.float32(1.5), np.ones(3, np.float32), np.float32), 0.5)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_integer_results_wrap_like_numpy(device, dtype):
    info = np.iinfo(dtype)
    a = np.array([info.min, info.max, info.max - 1, info.min + 1, 100, 0], dtype)
    b = np.array([info.max, info.max, 2, info.min, 100, info.max], dtype)
    for op, reference in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply)):
        assert_same(launch(device, op, a, b, dtype), reference(a, b), err_msg=op)
        assert_same(launch(device, op, a, b[1], dtype), reference(a, b[1]), err_msg=op)


@pytest.mark.parametrize(
    "value, error, message",
    [(300, OverflowError, "out of the range of int8"), (float("nan"), ValueError, "has no int8 value")],
)
def test_scalar_without_a_value_in_the_dtype(device, value, error, message):
    with pytest.raises(error, match=f"src1: .*{message}"):
        launch(device, "add", np.ones(3, np.int8), value, np.int8)


def test_integer_division_by_zero_on_every_path(device):
    a = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    for b in (np.zeros((3, 4), np.int32), np.zeros((4,), np.int32), np.zeros((3, 1), np.int32), np.zeros(1, np.int32), 0):
        assert not launch(device, "floor_mod", a, b, np.int32).any()
        assert not launch(device, "kDiv", a, b, np.int32).any()


def new(device, *args, **kwargs):
    return ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, *args, **kwargs)


def test_new_returns_none_for_unsupported_combinations(device):
    assert new(device, "add", np.float32, np.float32, max_num_dims=9) is None
    assert new(device, "add", np.float32, np.bool_) is None
    assert new(device, "less_than", np.float32, np.float32) is None
    assert new(device, "bitwise_and", np.float32, np.float32) is None
    assert new(device, "sigmoid_backward_with_dy_y", np.int32, np.int32) is None
    assert new(device, ep.BinaryOp.kAdd, np.float32, np.float32, max_num_dims=2) is not None


def test_new_checks_attributes(device):
    with pytest.raises(ValueError, match="attr0: kAdd takes no attributes"):
        new(device, "add", np.float32, np.float32, 8, 1.0)
    with pytest.raises(ValueError, match="attr0: kThresholdBackwardWithDyX needs threshold"):
        new(device, "threshold_backward_with_dy_x", np.float32, np.float32)
    with pytest.raises(TypeError, match="attr1: rtol of kIsClose must be a number"):
        new(device, "is_close", np.float32, np.bool_, 8, 1e-3, "x")
    with pytest.raises(ValueError, match="op: 'frobnicate' is not a binary op"):
        new(device, "frobnicate", np.float32, np.float32)
    with pytest.raises(TypeError, match="max_num_dims"):
        new(device, "add", np.float32, np.float32, max_num_dims=2.5)


def test_new_keeps_one_primitive_per_resolved_arguments(device):
    add = new(device, "add", np.float32, np.float32)
    assert new(device, ep.BinaryOp.kAdd, np.dtype(np.float32), "float32", 8) is add
    assert new(device, "add", np.float32, np.float32, max_num_dims=2) is not add
    elu = new(device, "elu_backward_with_dy_x", np.float32, np.float32)
    assert new(device, "elu_backward_with_dy_x", np.float32, np.float32, 8, 1.0) is elu  # alpha's default
    assert new(device, "elu_backward_with_dy_x", np.float32, np.float32, 8, 2.0) is not elu


@pytest.fixture
def sub_f32(device):
    return new(device, "sub", np.float32, np.float32, max_num_dims=3), ep.GetDevice(device).CreateStream()


def test_launch_rejects_more_dims_than_max_num_dims(device, sub_f32):
    primitive, stream = sub_f32
    x = to_device(np.ones(16, np.float32), device)
    with pytest.raises(ValueError, match="src0_dims: has 4 dims; expected at most 3"):
        primitive.Launch(stream, (2, 2, 2, 2), x, (2,), x, to_device(np.zeros(16, np.float32), device))


def test_launch_rejects_shapes_that_do_not_broadcast(device, sub_f32):
    primitive, stream = sub_f32
    x = to_device(np.ones(12, np.float32), device)
    with pytest.raises(ValueError, match=r"src0_dims=\(3, 4\) and src1_dims=\(3,\) do not broadcast"):
        primitive.Launch(stream, (3, 4), x, (3,), x, to_device(np.zeros(12, np.float32), device))


def test_launch_checks_buffers(device, sub_f32):
    primitive, stream = sub_f32
    small = to_device(np.ones(5, np.float32), device)
    full = to_device(np.ones(6, np.float32), device)
    dst = to_device(np.zeros(6, np.float32), device)
    with pytest.raises(ValueError, match="src1: holds 5 elements, fewer than the 6"):
        primitive.Launch(stream, (2, 3), full, (2, 3), small, dst)
    with pytest.raises(ValueError, match="dst: holds 5 elements, fewer than the 6"):
        primitive.Launch(stream, (2, 3), full, (3,), full, small)
    with pytest.raises(TypeError, match="src0: dtype float64 does not match the primitive's float32"):
        primitive.Launch(stream, (2, 3), to_device(np.ones(6), device), (3,), full, dst)
    with pytest.raises(TypeError, match="src0, src1: both are scalars"):
        primitive.Launch(stream, (), 1.0, (), 2.0, dst)
    with pytest.raises(ValueError, match=r"src1: a scalar operand has dims \(\); got src1_dims=\(1,\)"):
        primitive.Launch(stream, (2, 3), full, (1,), 2.0, dst)
    with pytest.raises(TypeError, match="src1: str"):
        primitive.Launch(stream, (2, 3), full, (), "2", dst)
    with pytest.raises(TypeError, match="stream"):
        primitive.Launch(None, (2, 3), full, (3,), full, dst)
    assert_same(to_numpy(dst), 0)


def test_launch_checks_dims_with_the_validator(device, sub_f32):
    primitive, stream = sub_f32
    x = to_device(np.ones(6, np.float32), device)
    dst = to_device(np.zeros(6, np.float32), device)
    with pytest.raises(ValueError, match=r"src1_dims\[0\]: -3 is negative"):
        primitive.Launch(stream, (2, 3), x, (-3,), x, dst)
    with pytest.raises(TypeError, match=r"src0_dims\[1\]: True is not an integer"):
        primitive.Launch(stream, (2, True), x, (3,), x, dst)
    with pytest.raises(TypeError, match="src0_dims: 6 is not a sequence of sizes"):
        primitive.Launch(stream, 6, x, (3,), x, dst)
    # Equal to dims already planned, but not ints: the kept plan is not used.
    primitive.Launch(stream, (2, 3), x, (3,), x, dst)
    with pytest.raises(TypeError, match=r"src0_dims\[0\]: 2.0 is not an integer"):
        primitive.Launch(stream, (2.0, 3), x, (3,), x, dst)
    primitive.Launch(stream, [np.int64(2), 3], x, (np.int32(3),), x, dst)
    stream.Sync()
    assert_same(to_numpy(dst), 0)


def test_kept_plans_tell_a_value_from_a_one_element_buffer(device, sub_f32):
    primitive, stream = sub_f32
    a = np.arange(6, dtype=np.float32)
    src, one = to_device(a, device), to_device(np.array([2.0], np.float32), device)
    for src1 in (one, 2.0, one, np.float32(2.0)):
        for args in (((6,), src, (), src1), ((), src1, (6,), src)):
            dst = to_device(np.zeros(6, np.float32), device)
            primitive.Launch(stream, *args, dst)
            stream.Sync()
            expected = a - 2 if args[1] is src else 2 - a
            assert_same(to_numpy(dst), expected)
    with pytest.raises(TypeError, match="src0, src1: both are scalars"):
        primitive.Launch(stream, (), 1.0, (), 2.0, to_device(np.zeros(1, np.float32), device))


def test_launch_writes_count_elements_only(device, sub_f32):
    primitive, stream = sub_f32
    a = np.arange(6, dtype=np.float32)
    dst = to_device(np.full(10, 7, np.float32), device)
    primitive.Launch(stream, (2, 3), to_device(a, device), (3,), to_device(a[:3], device), dst)
    stream.Sync()
    out = to_numpy(dst)
    assert_same(out[:6], (a.reshape(2, 3) - a[:3]).ravel())
    assert_same(out[6:], 7)


def test_buffer_of_the_other_device_is_refused(device, sub_f32):
    other = "cpu" if device == "cuda" else "cuda"
    if other not in [d.value for d in available_device_types()]:
        pytest.skip("needs both devices")
    primitive, stream = sub_f32
    x = to_device(np.ones(3, np.float32), device)
    with pytest.raises(TypeError, match=f"src1: .* was given to a {device} primitive"):
        primitive.Launch(stream, (3,), x, (3,), to_device(np.ones(3, np.float32), other), x)


@st.composite
def broadcastable_shapes(draw, max_rank=5):
    """Two shapes that broadcast: suffixes of one output shape with some dims set to 1."""
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=max_rank))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(out)))
        suffix = out[len(out) - rank:]
        shapes.append(tuple(1 if draw(st.booleans()) else n for n in suffix))
    return shapes


@settings(max_examples=30, deadline=None)
@given(shapes=broadcastable_shapes(), dtype=st.sampled_from([np.int32, np.float32]))
def test_random_broadcastable_shapes_match_numpy(device, shapes, dtype):
    # to_device makes a 0-d array 1-d: the reference takes the arrays as they reach the device.
    a = to_device(operand(shapes[0], dtype, 6), device)
    b = to_device(operand(shapes[1], dtype, 7), device)
    got = to_numpy(ep.ops.binary("sub", a, b))
    assert_close(got, numpy_reference(np.subtract, to_numpy(a), to_numpy(b), dtype))


# Every simplified rank, and the CUDA launches beyond 32-bit offsets


def alternating(rank):
    """Operand dims whose broadcast dims alternate, so that no two dims fold: rank dims after simplification."""
    return tuple(2 if d % 2 else 1 for d in range(rank)), tuple(1 if d % 2 else 3 for d in range(rank))


@pytest.mark.parametrize("dtype", [np.float16, np.int64])
@pytest.mark.parametrize("rank", range(1, MAX_NUM_DIMS + 1))
def test_every_simplified_rank_matches_numpy(device, rank, dtype):
    dims0, dims1 = alternating(rank)
    assert len(plan_binary(dims0, dims1, False, False).dims) == rank
    a, b = operand(dims0, dtype, 8), operand(dims1, dtype, 9)
    assert_close(launch(device, "mul", a, b, dtype), numpy_reference(np.multiply, a, b, dtype))


# Shapes no other test launches (plans are kept per dims), one per path.
BOXED = [((7, 5), (7, 5)), ((7, 5), None), ((7, 5), (5,)), ((7, 1), (7, 5)), ((2, 1, 7), (2, 3, 7)), ((3, 1, 2), (1, 5, 1))]


@pytest.mark.parametrize("dims0, dims1", BOXED)
def test_launches_cut_into_boxes_match_numpy(device, monkeypatch, dims0, dims1):
    if device == "cpu":
        pytest.skip("the CPU kernel indexes in 64 bits")
    from ep.common.math import fast_divmod

    # A 32-bit limit of 4 elements: every launch here runs as several boxes.
    monkeypatch.setattr(fast_divmod, "FAST_DIVMOD_LIMIT", 4)
    a, b = operand(dims0, np.int32, 10), operand(dims1, np.int32, 11)
    assert_close(launch(device, "sub", a, b, np.int32), numpy_reference(np.subtract, a, b, np.int32))


@pytest.mark.parametrize("dims0, dims1", [((3, 1, 1_500_000_000), (3, 2, 1_500_000_000)), ((5_000_000_000,), (1,))])
def test_the_host_cuts_launches_beyond_32_bits_into_boxes_that_fit(device, dims0, dims1):
    if device == "cpu":
        pytest.skip("the CPU kernel indexes in 64 bits")
    from ep.common.math.fast_divmod import FAST_DIVMOD_LIMIT
    from ep.common.primitive.strided_copy import span
    from ep.cuda.primitive.broadcast_elementwise_binary import launch_parts

    plan = plan_binary(dims0, dims1, False, False)
    parts = launch_parts(plan, FAST_DIVMOD_LIMIT)
    assert len(parts) > 1 and sum(part.count for part in parts) == plan.count
    for offset0, offset1, offset, count, split in parts:
        ndim, sizes, _, _, strides0, strides1, outer0, outer1 = split
        inner = tuple(reversed(sizes[: ndim - 1]))
        box = (count // math.prod(inner),) + inner
        # Every offset a launch computes fits in 32 bits, and its box starts where the elements before it end.
        assert count <= FAST_DIVMOD_LIMIT
        for outer, strides in ((outer0, strides0), (outer1, strides1)):
            assert span(box, (outer,) + tuple(reversed(strides[: ndim - 1]))) <= FAST_DIVMOD_LIMIT
    assert [part.offset for part in parts] == list(itertools.accumulate([0] + [part.count for part in parts[:-1]]))
    # Small launches run as one.
    assert len(launch_parts(plan_binary((3, 1), (3, 4), False, False), FAST_DIVMOD_LIMIT)) == 1


# ep.ops.binary


def ops_binary(device, op, a, b, **kwargs):
    a = a if np.isscalar(a) else to_device(a, device)
    b = b if np.isscalar(b) else to_device(b, device)
    return to_numpy(ep.ops.binary(op, a, b, **kwargs))


@pytest.mark.parametrize(
    "dtype0, dtype1",
    [(np.int32, np.float32), (np.bool_, np.int8), (np.int8, np.float16), (np.uint8, np.int32), (np.float16, np.float64)],
)
def test_ops_promote_by_result_type(device, dtype0, dtype1):
    a = operand((2, 3), dtype0, 8)
    b = operand((3,), dtype1, 9)
    got = ops_binary(device, "mul", a, b)
    result = np.result_type(dtype0, dtype1)
    assert_close(got, numpy_reference(np.multiply, a.astype(result), b.astype(result), result))


def test_ops_scalars_promote_as_numpy2(device):
    # NEP 50: a Python int keeps an integer array's dtype, a Python float makes it float64.
    a = np.array([[120, -5, 3]], np.int8)
    assert_close(ops_binary(device, "add", a, 10), (a + np.int8(10)).astype(np.int8))
    assert_close(ops_binary(device, "sub", 3, a), (np.int8(3) - a).astype(np.int8))
    assert_close(ops_binary(device, "mul", a, 2.7), a * 2.7)
    assert_close(ops_binary(device, "add", a, np.float64(0.5)), a + np.float64(0.5))
    assert_close(ops_binary(device, "less_than", a, 3), a < 3)


def test_ops_shapes_that_do_not_broadcast_name_both(device):
    with pytest.raises(ValueError, match=r"shapes a=\(2, 3\) and b=\(4,\) do not broadcast together"):
        ops_binary(device, "add", np.ones((2, 3), np.float32), np.ones(4, np.float32))


def test_ops_errors(device):
    with pytest.raises(TypeError, match="a, b: both are scalars"):
        ep.ops.binary("add", 1, 2)
    with pytest.raises(TypeError, match="op: kBitwiseAnd does not support dtype float32"):
        ops_binary(device, "bitwise_and", np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="float128.* is not a supported data type"):
        ops_binary(device, "add", np.ones(3, np.longdouble), np.ones(3, np.int8))


def test_ops_out(device):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones(3, np.float32)
    out = to_device(np.zeros((2, 3), np.float32), device)
    assert ep.ops.binary("add", to_device(a, device), to_device(b, device), out=out) is out
    assert_same(to_numpy(out), a + b)
    with pytest.raises(ValueError, match=r"out: has shape \(3,\); expected \(2, 3\)"):
        ep.ops.binary("add", to_device(a, device), to_device(b, device), out=to_device(np.zeros(3, np.float32), device))
    with pytest.raises(TypeError, match="out: has dtype float32; expected bool"):
        ep.ops.binary("less_than", to_device(a, device), to_device(b, device), out=out)


def test_ops_strided_inputs(device):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = np.arange(4, dtype=np.float32).reshape(4, 1)
    got = to_numpy(ep.ops.binary("sub", to_device(a, device)[:, ::2], to_device(b, device)))
    assert_same(got, a[:, ::2] - b)


def test_ops_rank_above_max_num_dims_when_it_merges(device):
    a = np.arange(6, dtype=np.float32).reshape((1,) * 9 + (2, 3))
    b = np.arange(3, dtype=np.float32).reshape((1,) * 10 + (3,))
    assert_close(ops_binary(device, "add", a, b), a + b)
    alternating = (2, 1) * 5
    with pytest.raises(ValueError, match="at most 8 are supported"):
        ops_binary(device, "add", np.ones(alternating, np.float32), np.ones(alternating[::-1], np.float32))


def test_a_broadcast_beyond_int64_is_refused_by_every_broadcasting_primitive(device):
    # Each operand's dims fit in int64, their broadcast does not: named, before any plan or write.
    from ep.include.primitive.elementwise_fused import Binary, Input

    stream = ep.GetDevice(device).CreateStream()
    H = 1 << 32
    buffer = to_device(np.zeros(4, np.float32), device)
    binary = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, ep.BinaryOp.kAdd, np.float32, np.float32)
    where = ep.NewPrimitive(ep.WhereFactory, device, np.bool_, np.float32, 8)
    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, Binary(ep.BinaryOp.kAdd, Input(0), Input(1)), np.float32, np.float32)
    launches = [
        (lambda: binary.Launch(stream, (H, 1, H), buffer, (1, H, 1), buffer, buffer), "src0_dims=.* and src1_dims="),
        (lambda: where.Launch(stream, 3, (H, 1, H), to_device(np.zeros(4, bool), device), 3, (1, H, 1), buffer, 1, (1,), buffer, buffer), "cond_dims=.* and x_dims="),
        (lambda: fused.Launch(stream, [buffer, buffer], [(H, 1, 4), (1, H, 1)], [buffer]), r"the broadcast of the arguments before=.* and arg_dims\[1\]="),
    ]
    for launch, names in launches:
        with pytest.raises(ValueError, match=f"shapes {names}.* broadcast to .*, more than 2\\*\\*63 - 1 elements"):
            launch()
    stream.Sync()
    assert_same(to_numpy(buffer), 0)
