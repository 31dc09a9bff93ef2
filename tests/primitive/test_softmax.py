"""Softmax, LogSoftmax and their backward through NewPrimitive + Launch, against torch.softmax,
torch.log_softmax and autograd's gradients computed here (float64 references of the same inputs):
inputs of magnitude 1e3, float16, every CUDA path (thresholds lowered), in place; bad arguments
named before anything is written, inputs unmodified, nothing written outside dst."""
import numpy as np
import pytest
import torch

import ep
from ep.common.math.softmax import SOFTMAX
from ep.include.primitive import GetFactory
from ep.testing import to_device, to_numpy

FLOATS = [np.dtype(t) for t in (np.float16, np.float32, np.float64)]
FORWARD = {ep.SoftmaxFactory: torch.softmax, ep.LogSoftmaxFactory: torch.log_softmax}
BACKWARD = {ep.SoftmaxBackwardFactory: torch.softmax, ep.LogSoftmaxBackwardFactory: torch.log_softmax}
FACTORIES = [*FORWARD, *BACKWARD]
# (rows, cols): one element; rows narrower than a warp; two elements per lane; several per lane;
# beyond CUDA's warp path.
SHAPES = [(1, 1), (3, 5), (4, 33), (2, 300), (2, 2100)]
GUARD = 4
# Relative and absolute tolerances per dtype (float16 rounds its result once, to 11 bits).
TOLERANCE = {np.dtype(np.float16): (2e-3, 2e-3), np.dtype(np.float32): (2e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-14)}


def references(factory, x: np.ndarray, dy: np.ndarray):
    """(the forward's output, the gradient of x) of the op behind factory, in float64."""
    reference = {**FORWARD, **BACKWARD}[factory]
    tx = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    y = reference(tx, -1)
    y.backward(torch.from_numpy(dy.astype(np.float64)))
    return y.detach().numpy(), tx.grad.numpy()


def run(device, factory, dtype, rows, cols, inputs, guard=GUARD):
    """Launch factory's primitive on inputs (host arrays of rows * cols) into a guarded dst; dst's
    middle, after checking that nothing outside it changed and that the inputs are as they were."""
    stream = ep.GetDevice(device).CreateStream()
    before = [x.copy() for x in inputs]
    on_device = [to_device(x.reshape(-1), device) for x in inputs]
    pattern = np.full(rows * cols + 2 * guard, 7, dtype)
    whole = to_device(pattern, device)
    dst = whole[guard : guard + rows * cols]
    ep.NewPrimitive(factory, device, dtype).Launch(stream, rows, cols, *on_device, dst)
    stream.Sync()
    after = to_numpy(whole)
    assert (after[:guard] == 7).all() and (after[guard + rows * cols :] == 7).all(), "wrote outside dst"
    for x, x_before, x_device in zip(inputs, before, on_device):
        assert np.array_equal(to_numpy(x_device).reshape(x.shape), x_before, equal_nan=True), "modified an input"
    return after[guard : guard + rows * cols].reshape(rows, cols)


def check(factory, dtype, got, expected):
    rtol, atol = TOLERANCE[np.dtype(dtype)]
    if factory is ep.LogSoftmaxFactory:
        # x - max - log(sum): the subtractions' rounding is relative to the row's largest terms.
        atol = max(atol, rtol * np.abs(expected).max(initial=0))
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=rtol, atol=atol)


def forward_case(device, factory, dtype, rows, cols, scale=1e3):
    x = (np.random.default_rng(rows * cols).standard_normal((rows, cols)) * scale).astype(dtype)
    y, _ = references(factory, x, np.zeros_like(x))
    check(factory, dtype, run(device, factory, dtype, rows, cols, [x]), y)


def backward_case(device, factory, dtype, rows, cols):
    rng = np.random.default_rng(rows + cols)
    x, dy = rng.standard_normal((2, rows, cols)).astype(dtype)
    y, dx = references(factory, x, dy)
    y = y.astype(dtype)  # the forward's output as the caller holds it
    # The reference gradient from the rounded y, as the primitive sees it.
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    if factory is ep.SoftmaxBackwardFactory:
        dx = y64 * (dy64 - (y64 * dy64).sum(-1, keepdims=True))
    else:
        dx = dy64 - np.exp(y64) * dy64.sum(-1, keepdims=True)
    check(factory, dtype, run(device, factory, dtype, rows, cols, [y, dy]), dx)


@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_every_float_dtype_is_registered(device, factory):
    combinations = GetFactory(factory, device).Combinations()
    assert sorted(dtypes[0].value for _, dtypes in combinations) == ["bfloat16", "float16", "float32", "float64"]
    assert ep.NewPrimitive(factory, device, np.int32) is None
    assert ep.NewPrimitive(factory, device, "float32") is ep.NewPrimitive(factory, device, np.float32)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("factory", list(FORWARD), ids=lambda f: f.__name__)
def test_forward_matches_torch_for_large_inputs(device, factory, dtype, shape):
    forward_case(device, factory, dtype, *shape)


@pytest.mark.parametrize("dtype, offset", [(np.float32, 1e6), (np.float32, 1e8), (np.float64, 1e17)], ids=str)
def test_log_softmax_of_a_large_offset_keeps_the_log_of_the_sum(device, dtype, offset):
    # (x - max) - log(sum): rounded x - (max + log(sum)) lost log(sum) beside a max of 1e8.
    rows = np.array([[0.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-3.0, 0.0, 0.0]])
    x = (rows + offset).astype(dtype)
    expected = torch.log_softmax(torch.from_numpy(x.astype(np.float64) - offset), -1).numpy()
    got = run(device, ep.LogSoftmaxFactory, dtype, 3, 3, [x]).astype(np.float64)
    # x - offset is exact only where the offset's spacing is 1 or finer: the rows as rounded.
    np.testing.assert_allclose(got, torch.log_softmax(torch.from_numpy(x.astype(np.float64)), -1).numpy(), rtol=TOLERANCE[np.dtype(dtype)][0])
    if offset <= 1e6:
        np.testing.assert_allclose(got, expected, rtol=TOLERANCE[np.dtype(dtype)][0])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_cpu_rows_of_several_blocks(factory, dtype):
    # Rows longer than the CPU's BLOCK: blocks merged by the online normalizer (the max growing
    # from block to block, as in a rising row).
    from ep.cpu.primitive.softmax import BLOCK

    rows, cols = 2, 2 * BLOCK + 7
    if factory in FORWARD:
        forward_case("cpu", factory, dtype, rows, cols)
        x = np.linspace(-50, 50, rows * cols).reshape(rows, cols).astype(dtype)
        y, _ = references(factory, x, np.zeros_like(x))
        check(factory, dtype, run("cpu", factory, dtype, rows, cols, [x]), y)
    else:
        backward_case("cpu", factory, dtype, rows, cols)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("factory", list(BACKWARD), ids=lambda f: f.__name__)
def test_backward_matches_autograd(device, factory, dtype, shape):
    # Checked against autograd's gradient too, from y unrounded: the formula is autograd's.
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal((2, *shape))
    y, dx = references(factory, x, dy)
    if dtype == np.float64:
        check(factory, dtype, run(device, factory, dtype, *shape, [y, dy]), dx)
    backward_case(device, factory, dtype, *shape)


@pytest.fixture
def cuda_thresholds(monkeypatch):
    """Set every op's CUDA path thresholds: (warp_max_cols, smem_max_bytes)."""
    from ep.cuda.primitive.softmax import KERNELS

    def set_thresholds(warp_max_cols: int, smem_max_bytes: int) -> None:
        for kernels in KERNELS.values():
            monkeypatch.setattr(kernels, "warp_max_cols", warp_max_cols)
            monkeypatch.setattr(kernels, "smem_max_bytes", smem_max_bytes)

    return set_thresholds


# (warp_max_cols, smem_max_bytes) choosing each path for rows of 9 elements.
CUDA_PATHS = {"warp": (1024, 48 * 1024), "block_smem": (4, 48 * 1024), "block_uncached": (4, 8)}


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(np.float32)], ids=str)
@pytest.mark.parametrize("path", list(CUDA_PATHS))
@pytest.mark.parametrize("factory", FACTORIES, ids=lambda f: f.__name__)
def test_every_cuda_path(cuda_thresholds, factory, dtype, path):
    if ep.NewPrimitive(factory, "cuda", dtype) is None:
        pytest.skip("no CUDA (numba-cuda is not installed)")
    cuda_thresholds(*CUDA_PATHS[path])
    # 3 rows: the block paths' grid of 2 loops over a row, the warp path masks a partial batch.
    if factory in FORWARD:
        forward_case("cuda", factory, dtype, 3, 9)
    else:
        backward_case("cuda", factory, dtype, 3, 9)


def test_the_paths_are_chosen_by_the_thresholds(cuda_thresholds):
    from ep.cuda.primitive import softmax

    if ep.NewPrimitive(ep.SoftmaxFactory, "cuda", np.float32) is None:
        pytest.skip("no CUDA (numba-cuda is not installed)")
    launched = []
    kernels = softmax.KERNELS[SOFTMAX]
    original = softmax._launch

    def record(stream, kernel, blocks, threads, shared, *args):
        launched.append((kernel.name, shared))
        original(stream, kernel, blocks, threads, shared, *args)

    for path, thresholds in CUDA_PATHS.items():
        cuda_thresholds(*thresholds)
        softmax._launch = record
        try:
            forward_case("cuda", ep.SoftmaxFactory, np.float32, 2, 9)
        finally:
            softmax._launch = original
    assert launched == [
        (kernels.warp_kernel(ep.DataType.kFloat, 1).name, 0),
        (kernels.block_kernel(ep.DataType.kFloat, True).name, 9 * 4),
        (kernels.block_kernel(ep.DataType.kFloat, False).name, 0),
    ]


def test_in_place(device):
    x = (np.random.default_rng(1).standard_normal((3, 40)) * 10).astype(np.float32)
    buffer = to_device(x.reshape(-1), device)
    stream = ep.GetDevice(device).CreateStream()
    ep.NewPrimitive(ep.LogSoftmaxFactory, device, np.float32).Launch(stream, 3, 40, buffer, buffer)
    stream.Sync()
    expected = torch.log_softmax(torch.from_numpy(x.astype(np.float64)), -1).numpy()
    np.testing.assert_allclose(to_numpy(buffer).reshape(3, 40), expected, rtol=2e-5, atol=1e-5)


def test_nan_in_a_row_gives_nan_there_only(device):
    x = np.zeros((2, 5), np.float32)
    x[0, 2] = np.nan
    y = run(device, ep.SoftmaxFactory, np.float32, 2, 5, [x])
    assert np.isnan(y[0]).all()
    np.testing.assert_allclose(y[1], 0.2, rtol=1e-6)


def test_zero_rows_or_cols_write_nothing(device):
    for rows, cols in ((0, 5), (5, 0)):
        run(device, ep.SoftmaxFactory, np.float32, rows, cols, [np.ones((rows, cols), np.float32)])


def bad_launch(device, error, match, **changes):
    """A Launch of SoftmaxBackward with changes to its arguments raises error matching match, and
    writes nothing."""
    stream = ep.GetDevice(device).CreateStream()
    dtype = np.float32
    args = {
        "stream": stream,
        "rows": 2,
        "cols": 3,
        "y": to_device(np.full(6, 0.5, dtype), device),
        "dy": to_device(np.ones(6, dtype), device),
        "dx": to_device(np.full(6, 7, dtype), device),
    }
    args.update(changes)
    dx = args["dx"]
    guarded = "dx" not in changes
    with pytest.raises(error, match=match):
        ep.NewPrimitive(ep.SoftmaxBackwardFactory, device, dtype).Launch(*args.values())
    stream.Sync()
    if guarded:
        assert (to_numpy(dx) == 7).all()


@pytest.mark.parametrize(
    "error, match, changes",
    [
        (ValueError, r"rows: -1 is negative", {"rows": -1}),
        (TypeError, r"cols: 2.0 is not an integer", {"cols": 2.0}),
        (TypeError, r"rows: True is not an integer", {"rows": True}),
        (ValueError, r"rows, cols: .* do not fit in int64", {"rows": 1 << 40, "cols": 1 << 40}),
        (ValueError, r"^y: holds 6 elements, fewer than the 9", {"rows": 3}),
        (ValueError, r"^dy: holds 4 elements", {"dy": np.ones(4, np.float32)}),
        (TypeError, r"y: .*", {"y": None}),
        (TypeError, r"dx", {"dx": np.zeros(6, np.float64)}),
        (TypeError, r"stream", {"stream": "cpu"}),
    ],
    ids=lambda v: str(v)[:30],
)
def test_bad_arguments_are_named_before_any_write(device, error, match, changes):
    changes = {k: (to_device(v, device) if isinstance(v, np.ndarray) else v) for k, v in changes.items()}
    bad_launch(device, error, match, **changes)


def test_new_refuses_a_non_dtype(device):
    with pytest.raises(TypeError, match="dtype"):
        ep.NewPrimitive(ep.SoftmaxFactory, device, "float17")
