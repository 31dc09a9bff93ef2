"""DimScatter through NewPrimitive + Launch, against a NumPy loop computed here: random layouts
(broadcast index, src and out larger than the positions, indices outside out dropped), every op,
repeats combined in index order, and the plan's refusals."""
import numpy as np
import pytest

import ep
from ep.include.primitive.dim_scatter import DimScatterFactory, ScatterOp
from ep.testing import to_device, to_numpy
from dtype_lists import BFLOAT16

DTYPES = [np.dtype(t) for t in ("float32", "float16", "float64", "int8", "uint64", "bool")] + [BFLOAT16]


def _values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f" or dtype == BFLOAT16:
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(0, 100, shape).astype(dtype)


def _combine(op, old, new):
    if op is ScatterOp.kUpdate:
        return new
    if old.dtype == BFLOAT16:  # ml_dtypes' scalars compute in float32 and round, as the kernels do
        old, new = np.float32(old), np.float32(new)
        return BFLOAT16.type(old + new if op is ScatterOp.kAdd else old * new)
    with np.errstate(over="ignore"):
        return old + new if op is ScatterOp.kAdd else old * new


def reference(op, dims, dim, index, src, out):
    """out with src's positions p of dims combined at p with p[dim] = index[p] (broadcast), in C
    order: along a line, in index order."""
    expected = out.copy()
    for p in np.ndindex(*dims):
        j = int(index[tuple(0 if n == 1 else c for n, c in zip(index.shape, p))])
        if 0 <= j < out.shape[dim]:
            target = p[:dim] + (j,) + p[dim + 1 :]
            expected[target] = _combine(op, expected[target], src[p])
    return expected


def launch(device, op, dims, dim, index, src, out):
    primitive = ep.NewPrimitive(DimScatterFactory, device, op, src.dtype, index.dtype)
    stream = ep.GetDevice(device).CreateStream()
    given = {"index": to_device(index, device), "src": to_device(src, device)}
    result = to_device(out, device)
    primitive.Launch(stream, len(dims), dims, dim, given["index"], index.shape, given["src"], src.shape, result, out.shape)
    stream.Sync()
    for name, host in (("index", index), ("src", src)):
        assert to_numpy(given[name]).tobytes() == np.ascontiguousarray(host).tobytes(), f"{name} was modified"
    return to_numpy(result).reshape(out.shape)


@pytest.mark.parametrize("op", list(ScatterOp), ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("seed", range(4))
def test_random_layouts_match_numpy(device, op, dtype, seed):
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 5))
    dim = int(rng.integers(0, ndim))
    dims = tuple(int(n) for n in rng.integers(0 if seed == 3 else 1, 4, ndim))
    index_dims = tuple(n if rng.random() < 0.7 or d == dim else 1 for d, n in enumerate(dims))
    src_dims = tuple(n + int(rng.integers(0, 2)) for n in dims)
    out_dims = tuple(int(rng.integers(1, 5)) if d == dim else n + int(rng.integers(0, 2)) for d, n in enumerate(dims))
    # Repeats, and some indices outside out (dropped).
    index = rng.integers(-1, out_dims[dim] + 1, index_dims).astype(np.int64 if seed % 2 else np.int32)
    src, out = _values(rng, src_dims, dtype), _values(rng, out_dims, dtype)
    got = launch(device, op, dims, dim, index, src, out)
    expected = reference(op, dims, dim, index, src, out)
    assert got.tobytes() == expected.tobytes(), (got, expected)


def test_repeated_float_sums_are_the_same_on_every_device_and_run(device):
    # A million additions into 8 positions: atomics would add them in a varying order.
    rng = np.random.default_rng(5)
    src = rng.standard_normal((4096, 8)).astype(np.float32) * np.float32(1e4)
    index = rng.integers(0, 2, (4096, 8))
    out = np.zeros((2, 8), np.float32)
    runs = [launch(device, ScatterOp.kAdd, (4096, 8), 0, index, src, out) for _ in range(2)]
    expected = reference(ScatterOp.kAdd, (4096, 8), 0, index, src, out)
    assert runs[0].tobytes() == runs[1].tobytes() == expected.tobytes()


@pytest.mark.parametrize("index_rows", [3, 1])
def test_rows_longer_than_a_task_block(device, index_rows):
    # 600 lines in a row: a CPU task walks 256 of them together, the last 88.
    rng = np.random.default_rng(7)
    src, out = rng.standard_normal((3, 600)).astype(np.float32), rng.standard_normal((4, 600)).astype(np.float32)
    index = rng.integers(0, 4, (3, 600) if index_rows == 3 else (3, 1))
    got = launch(device, ScatterOp.kAdd, (3, 600), 0, index, src, out)
    assert got.tobytes() == reference(ScatterOp.kAdd, (3, 600), 0, index, src, out).tobytes()


@pytest.mark.parametrize(
    "args, match",
    [
        ((0, (), 0, (), (), ()), r"num_dims: 0; expected 1 to 8"),
        ((2, (2, 3), 2, (2, 3), (2, 3), (2, 3)), r"dim: 2; expected a dim in \[0, 2\)"),
        ((2, (2, 3), 0, (2, 2), (2, 3), (2, 3)), r"index_dims\[1\]: 2; expected 1 or dims\[1\]=3"),
        ((2, (2, 3), 0, (2, 3), (2, 2), (2, 3)), r"src_dims\[1\]: 2 is below dims\[1\]=3"),
        ((2, (2, 3), 0, (2, 3), (2, 3), (2, 2)), r"out_dims\[1\]: 2 is below dims\[1\]=3"),
        ((2, (2, 3), 0, (2, 3, 1), (2, 3), (2, 3)), r"index_dims: has 3 dims; expected num_dims=2"),
    ],
)
def test_the_plan_names_the_wrong_argument(device, args, match):
    num_dims, dims, dim, index_dims, src_dims, out_dims = args
    primitive = ep.NewPrimitive(DimScatterFactory, device, "add", np.float32, np.int64)
    stream = ep.GetDevice(device).CreateStream()
    buffers = [to_device(np.zeros(max(1, int(np.prod(d))), t), device) for d, t in ((index_dims, np.int64), (src_dims, np.float32), (out_dims, np.float32))]
    with pytest.raises(ValueError, match=match):
        primitive.Launch(stream, num_dims, dims, dim, buffers[0], index_dims, buffers[1], src_dims, buffers[2], out_dims)


def test_new_takes_integer_indices_only(device):
    assert ep.NewPrimitive(DimScatterFactory, device, ScatterOp.kMul, np.float16, np.int32) is not None
    assert ep.NewPrimitive(DimScatterFactory, device, "update", np.float32, np.float32) is None
    with pytest.raises(ValueError, match="op"):
        ep.NewPrimitive(DimScatterFactory, device, "max", np.float32, np.int64)
