"""Where through NewPrimitive + Launch, against np.where computed here."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import BY_WIDTH

CONDS = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int32, np.int64)]
# (cond, x, y) shapes: equal, each operand broadcast, new leading dims, a scalar, empty.
SHAPES = [
    ((2, 3, 4), (2, 3, 4), (2, 3, 4)),
    ((2, 1, 4), (3, 1), (2, 3, 4)),
    ((), (2, 3), (3,)),
    ((5,), (1,), ()),
    ((2, 1, 3, 1), (1, 4, 1, 2), (2, 4, 3, 2)),
    ((0, 3), (1, 3), (3,)),
]


def values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-100, 100, shape).astype(dtype)


def launch(device, cond, x, y, max_num_dims=8):
    where = ep.NewPrimitive(ep.WhereFactory, device, cond.dtype, x.dtype, max_num_dims)
    assert where is not None
    shape = np.broadcast_shapes(cond.shape, x.shape, y.shape)
    stream = ep.GetDevice(device).CreateStream()
    args = [to_device(a, device) for a in (cond, x, y)]
    z = to_device(np.zeros(shape, x.dtype), device)
    where.Launch(stream, cond.ndim, cond.shape, args[0], x.ndim, x.shape, args[1], y.ndim, y.shape, args[2], z)
    stream.Sync()
    for arg, a in zip(args, (cond, x, y)):
        np.testing.assert_array_equal(to_numpy(arg).reshape(a.shape), a)
    return to_numpy(z).reshape(shape)


@pytest.mark.parametrize("data", BY_WIDTH, ids=str)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_matches_numpy_where(device, data, shapes):
    rng = np.random.default_rng(len(shapes[0]))
    cond, x, y = values(rng, shapes[0], np.bool_), values(rng, shapes[1], data), values(rng, shapes[2], data)
    np.testing.assert_array_equal(launch(device, cond, x, y), np.where(cond, x, y))


@pytest.mark.parametrize("cond_dtype", CONDS, ids=str)
def test_an_integer_condition_is_true_where_nonzero(device, cond_dtype):
    cond = np.array([0, 1, -1, 2, 0, 127, -128, 0][: 8], np.int64).astype(cond_dtype)
    x, y = np.arange(8, dtype=np.float32), -np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(launch(device, cond, x, y), np.where(cond != 0, x, y))


def test_nans_and_bit_patterns_move_unchanged(device):
    x = np.array([np.nan, -0.0, np.inf, 1.5], np.float16)
    y = np.array([1, 2, 3, 4], np.float16)
    got = launch(device, np.array([True, True, False, True]), x, y)
    assert got.view(np.uint16).tolist() == np.where([True, True, False, True], x, y).view(np.uint16).tolist()


def test_new_supports_bool_and_integer_conditions_only(device):
    for cond in CONDS:
        assert ep.NewPrimitive(ep.WhereFactory, device, cond, np.float32, 8) is not None
    assert ep.NewPrimitive(ep.WhereFactory, device, np.float32, np.float32, 8) is None
    assert ep.NewPrimitive(ep.WhereFactory, device, np.bool_, np.float32, 9) is None
    with pytest.raises(TypeError, match="data_dtype"):
        ep.NewPrimitive(ep.WhereFactory, device, np.bool_, np.complex64, 8)


def _bad_launch(device, **changes):
    where = ep.NewPrimitive(ep.WhereFactory, device, np.bool_, np.int32, 3)
    stream = ep.GetDevice(device).CreateStream()
    cond = to_device(np.ones((2, 3), np.bool_), device)
    x = to_device(np.arange(6, dtype=np.int32), device)
    z = to_device(np.full(6, 7, np.int32), device)
    args = dict(num_cond_dims=2, cond_dims=(2, 3), cond=cond, num_x_dims=2, x_dims=(2, 3), x=x,
                num_y_dims=1, y_dims=(3,), y=x, z=z)
    args.update(changes)
    try:
        where.Launch(stream, *args.values())
    finally:
        np.testing.assert_array_equal(to_numpy(z), np.full(6, 7, np.int32))
        np.testing.assert_array_equal(to_numpy(x), np.arange(6))


@pytest.mark.parametrize(
    "changes, error, named",
    [
        ({"num_cond_dims": 1}, ValueError, "cond_dims"),
        ({"num_x_dims": 4, "x_dims": (1, 1, 2, 3)}, ValueError, "num_x_dims"),
        ({"num_y_dims": 1.0}, TypeError, "num_y_dims"),
        ({"y_dims": (4,)}, ValueError, "y_dims"),
        ({"x_dims": (2, 4)}, ValueError, "x_dims"),
        ({"cond_dims": (2, -3)}, ValueError, r"cond_dims\[1\]"),
        ({"x_dims": (3, 3)}, ValueError, "x_dims"),
        ({"z": None}, TypeError, "z"),
        ({"cond": np.ones(6, np.int8)}, TypeError, "cond"),
    ],
)
def test_bad_arguments_are_named_and_write_nothing(device, changes, error, named):
    if "cond" in changes and device != "cpu":
        changes = {"cond": to_device(np.ones(6, np.int8), device)}
    with pytest.raises(error, match=named):
        _bad_launch(device, **changes)


def test_short_buffers_are_refused(device):
    with pytest.raises(ValueError, match="z"):
        _bad_launch(device, z=to_device(np.full(5, 7, np.int32), device))
