"""Cast through NewPrimitive + Launch and through ep.ops.unary("cast"), against NumPy's astype."""
import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, assert_same, sampled

PAIRS = sampled((s, d) for s in ALL for d in ALL)


def inputs(src, dst):
    """Values whose conversion NumPy defines: a float cast to an integer stays inside its range."""
    if src == np.bool_:
        return np.array([True, False, True, True])
    values = np.array([0, 1, -1, 2, 5, -7, 100, -100, 127, -128, 255, 3000, -3000, 65504], np.float64)
    if src.kind == "f":
        values = np.concatenate([values, [0.5, -0.75, 2.5, -2.5, 1e-3, np.inf, -np.inf, np.nan]])
    if src.kind in "iu":
        values = values[(values >= np.iinfo(src).min) & (values <= np.iinfo(src).max)]
    x = values.astype(src)
    if dst.kind in "iu":
        wide = x.astype(np.float64)
        x = x[(wide > np.iinfo(dst).min - 1) & (wide < np.iinfo(dst).max + 1)]
    return x


def launch(device, x, dst_dtype, count=None):
    cast = ep.NewPrimitive(ep.CastFactory, device, x.dtype, dst_dtype)
    assert cast is not None
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.zeros(x.size, dst_dtype), device)
    cast.Launch(stream, src, dst, x.size if count is None else count)
    stream.Sync()
    assert_same(to_numpy(src), x)
    return to_numpy(dst)


@pytest.mark.parametrize("src, dst", PAIRS, ids=[f"{s.name}-{d.name}" for s, d in PAIRS])
def test_every_pair_matches_numpy_astype(device, src, dst):
    x = inputs(src, dst)
    with np.errstate(all="ignore"):
        expected = x.astype(dst)
    assert_same(launch(device, x, dst), expected)


def test_float_to_integer_saturates_as_the_unary_cast_op(device):
    x = np.array([300.7, -300.7, np.nan, np.inf, -np.inf, 127.9, -128.9], np.float32)
    assert_same(launch(device, x, np.int8), [127, -128, 0, 127, -128, 127, -128])
    unary = ep.ops.unary("cast", to_device(x, device), dtype=np.int8)
    assert_same(to_numpy(unary), [127, -128, 0, 127, -128, 127, -128])


def test_count_writes_only_the_first_elements(device):
    x = np.arange(6, dtype=np.int32)
    assert_same(launch(device, x, np.float64, count=4), [0, 1, 2, 3, 0, 0])


def test_ops_unary_cast_runs_on_cast(device, monkeypatch):
    from ep.common.primitive.cast import CastImpl

    launched = []
    # run: where both the checked Launch and ep.ops' trusted launch end.
    monkeypatch.setattr(CastImpl, "run", lambda self, *args: launched.append(self) or super(CastImpl, self).run(*args))
    x = np.array([[1.5, -2.5], [3.25, 4.0]], np.float64)
    got = to_numpy(ep.ops.unary("cast", to_device(x, device), dtype=np.float16))
    assert_same(got, x.astype(np.float16))
    assert len(launched) == 1


def test_new_names_its_bad_arguments(device):
    with pytest.raises(TypeError, match="from_dtype"):
        ep.NewPrimitive(ep.CastFactory, device, np.complex64, np.float32)
    with pytest.raises(TypeError, match="to_dtype"):
        ep.NewPrimitive(ep.CastFactory, device, np.float32, "floot32")
    assert ep.NewPrimitive(ep.CastFactory, device, "float32", ep.DataType.kInt8) is ep.NewPrimitive(
        ep.CastFactory, device, np.float32, np.int8
    )


def test_ops_cast_refuses_attributes(device):
    with pytest.raises(ValueError, match="attr0"):
        ep.ops.unary("cast", to_device(np.ones(3, np.float32), device), 1.0, dtype=np.int8)
