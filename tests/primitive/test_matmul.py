"""Matmul, BatchMatmul and BroadcastMatmul through NewPrimitive + Launch, against np.matmul and
torch.matmul computed here (alpha, beta, transposes, broadcast batch dims, float16), bad input
refused before anything is written, and the column-major cuBLAS calls checked by a NumPy model of
cuBLAS's GEMM (so the CUDA mapping is tested where no GPU runs it).

cuBLAS cannot run on Numba's CUDA simulator: there NewPrimitive gives None and the "cuda" cases
skip, saying so; on a GPU they run.
"""
import numpy as np
import pytest
import torch
from cublas import skip_without_cublas

import ep
from ep.common.primitive.matmul import plan_gemm
from ep.cuda.primitive.matmul import cublas_calls
from ep.testing import to_device, to_numpy

FLOATS = [np.dtype(t) for t in (np.float16, np.float32, np.float64)]
TRANS = [(False, False), (False, True), (True, False), (True, True)]
# The tolerance of each dtype's result against a float64 reference (float16: rounded once from float32).
TOLERANCE = {np.float16: (2e-3, 2e-3), np.float32: (1e-5, 1e-5), np.float64: (1e-12, 1e-12)}


def new(factory, device, *args):
    primitive = ep.NewPrimitive(factory, device, *args)
    if primitive is None:
        skip_without_cublas(device)
    assert primitive is not None
    return primitive


def stored(x: np.ndarray, transposed: bool) -> np.ndarray:
    """The C-contiguous storage of op(x) = x: x itself, or its transpose's storage."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2) if transposed else x)


def reference(a, b, alpha, beta, c):
    """alpha * a @ b + beta * c in float64 (torch.matmul), c ignored where beta == 0 (BLAS's rule)."""
    product = torch.matmul(torch.from_numpy(a.astype(np.float64)), torch.from_numpy(b.astype(np.float64))).numpy()
    return alpha * product + (beta * c.astype(np.float64) if beta else 0)


def check(got, expected, dtype):
    rtol, atol = TOLERANCE[np.dtype(dtype).type]
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=rtol, atol=atol)


def values(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("trans", TRANS, ids=str)
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (2.5, 0.0), (1.0, 1.0), (-0.5, 0.75)])
def test_matmul_matches_torch(device, dtype, trans, alpha, beta):
    rng = np.random.default_rng(7)
    m, n, k = 5, 3, 4
    a, b, c = values(rng, (m, k), dtype), values(rng, (k, n), dtype), values(rng, (m, n), dtype)
    matmul = new(ep.MatmulFactory, device, dtype, *trans)
    stream = ep.GetDevice(device).CreateStream()
    da, db, dc = to_device(stored(a, trans[0]), device), to_device(stored(b, trans[1]), device), to_device(c, device)
    matmul.Launch(stream, m, n, k, alpha, da, db, beta, dc)
    stream.Sync()
    check(to_numpy(dc).reshape(m, n), reference(a, b, alpha, beta, c), dtype)
    np.testing.assert_array_equal(to_numpy(da), stored(a, trans[0]))  # inputs unchanged
    np.testing.assert_array_equal(to_numpy(db), stored(b, trans[1]))


def test_matmul_takes_transpose_names(device):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(6, dtype=np.float32).reshape(2, 3)
    for trans_b in (ep.BlasTransposeType.T, "T", True):
        matmul = new(ep.MatmulFactory, device, "float32", ep.BlasTransposeType.N, trans_b)
        c = to_device(np.zeros((2, 2), np.float32), device)
        matmul.Launch(ep.GetDevice(device).default_stream, 2, 2, 3, 1, to_device(a, device), to_device(b, device), 0, c)
        np.testing.assert_array_equal(to_numpy(c), a @ b.T)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("trans", TRANS, ids=str)
def test_batch_matmul_matches_np_matmul(device, dtype, trans):
    rng = np.random.default_rng(3)
    batch, m, n, k = 6, 4, 5, 3
    a, b, c = values(rng, (batch, m, k), dtype), values(rng, (batch, k, n), dtype), values(rng, (batch, m, n), dtype)
    bmm = new(ep.BatchMatmulFactory, device, dtype, *trans)
    stream = ep.GetDevice(device).CreateStream()
    dc = to_device(c, device)
    bmm.Launch(stream, batch, m, n, k, 1.5, to_device(stored(a, trans[0]), device), to_device(stored(b, trans[1]), device), -1.0, dc)
    stream.Sync()
    expected = 1.5 * np.matmul(a.astype(np.float64), b.astype(np.float64)) - c.astype(np.float64)
    check(to_numpy(dc).reshape(batch, m, n), expected, dtype)


# (a's op shape, b's op shape): a batch broadcast either way, across different ranks, folded into
# m (b without batch dims), empty batches, k == 0.
BROADCASTS = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (1, 3, 4, 5)),
    ((2, 3, 2, 3, 4), (3, 1, 4, 5)),
    ((0, 3, 4), (4, 5)),
    ((2, 3, 0), (1, 0, 5)),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
@pytest.mark.parametrize("trans", TRANS, ids=str)
def test_broadcast_matmul_matches_np_matmul(device, dtype, shapes, trans):
    rng = np.random.default_rng(len(shapes[0]))
    a, b = values(rng, shapes[0], dtype), values(rng, shapes[1], dtype)
    expected_shape = np.matmul(a, b).shape
    c = values(rng, expected_shape, dtype)
    sa, sb = stored(a, trans[0]), stored(b, trans[1])
    primitive = new(ep.BroadcastMatmulFactory, device, dtype, *trans, 8)
    stream = ep.GetDevice(device).CreateStream()
    dc = to_device(c, device)
    primitive.Launch(stream, 0.5, sa.ndim, sa.shape, to_device(sa, device), sb.ndim, sb.shape, to_device(sb, device), 2.0, c.ndim, c.shape, dc)
    stream.Sync()
    check(to_numpy(dc).reshape(c.shape), reference(a, b, 0.5, 2.0, c), dtype)


def test_beta_zero_does_not_read_c_and_alpha_zero_does_not_read_a_or_b(device):
    # BLAS's rule: NaN in c with beta == 0, or in a and b with alpha == 0, does not reach the result.
    matmul = new(ep.MatmulFactory, device, "float32", False, False)
    stream = ep.GetDevice(device).default_stream
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    c = to_device(np.full((2, 2), np.nan, np.float32), device)
    matmul.Launch(stream, 2, 2, 3, 1.0, to_device(a, device), to_device(b, device), 0.0, c)
    np.testing.assert_array_equal(to_numpy(c), np.full((2, 2), 3, np.float32))
    nan = to_device(np.full((2, 3), np.nan, np.float32), device)
    matmul.Launch(stream, 2, 2, 3, 0.0, nan, to_device(b, device), 2.0, c)
    np.testing.assert_array_equal(to_numpy(c), np.full((2, 2), 6, np.float32))


@pytest.mark.parametrize("alpha", [float("inf"), float("nan")])
def test_k_zero_gives_beta_times_c_whatever_alpha(device, alpha):
    # BLAS's quick return (torch.addmm's too): with k == 0 no product is formed, so alpha times the
    # empty sum is never inf * 0 = NaN.
    matmul = new(ep.MatmulFactory, device, "float32", False, False)
    stream = ep.GetDevice(device).default_stream
    a, b, c = np.ones((2, 0), np.float32), np.ones((0, 3), np.float32), np.full((2, 3), 1.5, np.float32)
    expected = torch.addmm(torch.from_numpy(c), torch.from_numpy(a), torch.from_numpy(b), alpha=alpha, beta=2.0).numpy()
    dc = to_device(c, device)
    matmul.Launch(stream, 2, 3, 0, alpha, to_device(a, device), to_device(b, device), 2.0, dc)
    np.testing.assert_array_equal(to_numpy(dc), expected)


def test_float16_is_computed_in_float32(device):
    # 2048 products of 1 + 2**-10: float16 accumulation would stall at 2048; float32 gives 2050 -> 2048 or 2050.
    k = 2048
    a = np.full((1, k), 1 + 2**-10, np.float16)
    b = np.ones((k, 1), np.float16)
    c = to_device(np.zeros((1, 1), np.float16), device)
    new(ep.MatmulFactory, device, "float16", False, False).Launch(
        ep.GetDevice(device).default_stream, 1, 1, k, 1.0, to_device(a, device), to_device(b, device), 0.0, c
    )
    expected = np.float16(np.float32(k) * np.float32(1 + 2**-10))
    assert to_numpy(c)[0, 0] == expected


def test_unsupported_dtypes_give_none(device):
    # bool has no GEMM (torch refuses it); the integers do (tests/primitive/test_matmul_integer.py).
    assert ep.NewPrimitive(ep.MatmulFactory, device, "bool", False, False) is None
    assert ep.NewPrimitive(ep.BroadcastMatmulFactory, device, "bool", False, False, 8) is None
    assert ep.NewPrimitive(ep.BroadcastMatmulFactory, device, "float32", False, False, 9) is None


def test_new_names_bad_arguments(device):
    with pytest.raises(TypeError, match="^dtype: "):
        ep.NewPrimitive(ep.MatmulFactory, device, "complex64", False, False)
    with pytest.raises(TypeError, match="^trans_a: 'x' is not a transpose type"):
        ep.NewPrimitive(ep.MatmulFactory, device, "float32", "x", False)
    with pytest.raises(TypeError, match="^trans_b: 1 is not a transpose type"):
        ep.NewPrimitive(ep.BatchMatmulFactory, device, "float32", False, 1)
    with pytest.raises(ValueError, match="^max_num_dims: -1 is negative"):
        ep.NewPrimitive(ep.BroadcastMatmulFactory, device, "float32", False, False, -1)


GUARD = 4


def guarded(device, count, dtype=np.float32):
    """A buffer of count elements between GUARD elements of 7 on each side, and its whole."""
    whole = to_device(np.full(count + 2 * GUARD, 7, dtype), device)
    return whole, whole[GUARD : GUARD + count]


BAD_MATMUL = [
    ({"m": -1}, ValueError, "m: -1 is negative"),
    ({"k": 2.0}, TypeError, "k: 2.0 is not an integer"),
    ({"alpha": "2"}, TypeError, "alpha: '2' is not a real scalar"),
    ({"beta": [1.0]}, TypeError, r"beta: \[1.0\] is not a real scalar"),
    ({"alpha": None}, TypeError, "alpha: None is not a real scalar"),
    ({"n": 3}, ValueError, "b: holds 8 elements, fewer than the 9 the launch needs"),
    ({"a": "short"}, ValueError, "a: holds 5 elements, fewer than the 6 the launch needs"),
    ({"a": "float64"}, TypeError, "a: dtype float64 does not match the primitive's float32"),
    ({"c": "readonly"}, ValueError, "c: the array is read-only"),
    ({"stream": "cpu"}, TypeError, "stream: "),
]


@pytest.mark.parametrize("change, error, message", BAD_MATMUL, ids=lambda v: str(v)[:40])
def test_matmul_refuses_bad_input_before_writing(device, change, error, message):
    matmul = new(ep.MatmulFactory, device, "float32", False, False)
    m, n, k = 2, 2, 3
    a, b = np.arange(6, dtype=np.float32), np.arange(8, dtype=np.float32)
    args = {"stream": ep.GetDevice(device).default_stream, "m": m, "n": n, "k": k, "alpha": 1.0, "beta": 0.0}
    whole, c = guarded(device, m * n)
    args["a"], args["b"], args["c"] = to_device(a, device), to_device(b, device), c
    if change.get("stream") == "cpu":
        if device == "cpu":
            pytest.skip("a cpu stream is the right one on cpu")
        change = {"stream": ep.GetDevice("cpu").default_stream}
    elif change.get("a") == "short":
        change = {"a": to_device(a[:5], device)}
    elif change.get("a") == "float64":
        change = {"a": to_device(a.astype(np.float64), device)}
    elif change.get("c") == "readonly":
        if device != "cpu":
            pytest.skip("device arrays have no read-only flag")
        readonly = np.zeros(m * n, np.float32)
        readonly.flags.writeable = False
        change = {"c": readonly}
    args.update(change)
    with pytest.raises(error, match=message):
        matmul.Launch(args["stream"], args["m"], args["n"], args["k"], args["alpha"], args["a"], args["b"], args["beta"], args["c"])
    np.testing.assert_array_equal(to_numpy(whole), np.full(m * n + 2 * GUARD, 7, np.float32))
    np.testing.assert_array_equal(to_numpy(args["a"])[:5], a[:5])


BAD_DIMS = [
    ((2, 3), (4, 5), (2, 5), ValueError, r"a_dims, b_dims: \(2, 3\) and \(4, 5\) do not multiply"),
    ((2, 2, 3), (3, 3, 5), (2, 2, 5), ValueError, r"shapes a_dims=\(2,\) and b_dims=\(3,\) do not broadcast"),
    ((2, 3), (3, 5), (2, 4), ValueError, r"c_dims: \(2, 4\); expected \(2, 5\)"),
    ((3,), (3, 5), (5,), ValueError, r"a_dims: \(3,\) has 1 dims; expected at least 2"),
    ((2, 3), (3, -5), (2, 5), ValueError, r"b_dims\[1\]: -5 is negative"),
    ((1,) * 7 + (2, 3), (3, 5), (2, 5), ValueError, "num_a_dims: 9 is above max_num_dims=8"),
]


@pytest.mark.parametrize("a_dims, b_dims, c_dims, error, message", BAD_DIMS, ids=lambda v: str(v)[:30])
def test_broadcast_matmul_refuses_bad_dims_before_writing(device, a_dims, b_dims, c_dims, error, message):
    primitive = new(ep.BroadcastMatmulFactory, device, "float32", False, False, 8)
    whole, c = guarded(device, 10)
    a, b = to_device(np.ones(16, np.float32), device), to_device(np.ones(16, np.float32), device)
    with pytest.raises(error, match=message):
        primitive.Launch(ep.GetDevice(device).default_stream, 1.0, len(a_dims), a_dims, a, len(b_dims), b_dims, b, 0.0, len(c_dims), c_dims, c)
    np.testing.assert_array_equal(to_numpy(whole), np.full(10 + 2 * GUARD, 7, np.float32))


def test_broadcast_matmul_checks_num_dims(device):
    primitive = new(ep.BroadcastMatmulFactory, device, "float32", False, False, 3)
    a = to_device(np.ones(6, np.float32), device)
    c = to_device(np.ones(4, np.float32), device)
    stream = ep.GetDevice(device).default_stream
    with pytest.raises(ValueError, match="a_dims: has 2 dims; expected num_a_dims=3"):
        primitive.Launch(stream, 1.0, 3, (2, 3), a, 2, (3, 2), a, 0.0, 2, (2, 2), c)
    with pytest.raises(ValueError, match="num_b_dims: 4 is above max_num_dims=3"):
        primitive.Launch(stream, 1.0, 2, (2, 3), a, 4, (1, 1, 3, 2), a, 0.0, 2, (2, 2), c)


def test_batch_matmul_sizes_are_checked(device):
    bmm = new(ep.BatchMatmulFactory, device, "float64", False, False)
    x = to_device(np.ones(8), device)
    with pytest.raises(ValueError, match="batch_size: -2 is negative"):
        bmm.Launch(ep.GetDevice(device).default_stream, -2, 1, 1, 1, 1.0, x, x, 0.0, x)
    with pytest.raises(ValueError, match="a: holds 8 elements, fewer than the 9 the launch needs"):
        bmm.Launch(ep.GetDevice(device).default_stream, 3, 1, 1, 3, 1.0, x, x, 0.0, x)


# The GEMM plan: merged and dropped batch dims, broadcast strides, the fold into m.
@pytest.mark.parametrize(
    "a_dims, b_dims, trans_a, batch, a_strides, b_strides, m",
    [
        ((2, 3, 4, 5), (5, 6), False, (), (), (), 24),  # b has no batch: one GEMM of 24 rows
        ((2, 3, 5, 4), (5, 6), True, (6,), (20,), (0,), 4),  # transposed a cannot fold
        ((2, 1, 4, 5), (1, 3, 5, 6), False, (2, 3), (20, 0), (0, 30), 4),
        ((2, 3, 4, 5), (2, 3, 5, 6), False, (6,), (20,), (30,), 4),  # merged
        ((1, 1, 4, 5), (1, 3, 5, 6), False, (3,), (0,), (30,), 4),  # ones dropped
    ],
)
def test_plan_merges_broadcast_batch_dims(a_dims, b_dims, trans_a, batch, a_strides, b_strides, m):
    m_, k = (a_dims[-1], a_dims[-2]) if trans_a else a_dims[-2:]
    out = np.broadcast_shapes(a_dims[:-2], b_dims[:-2]) + (m_, b_dims[-1])
    plan = plan_gemm(a_dims, b_dims, out, trans_a, False)
    assert (plan.batch, plan.a_strides, plan.b_strides, plan.m) == (batch, a_strides, b_strides, m)


def cublas_gemm_model(call, a, b, c, alpha, beta):
    """cuBLAS's column-major GEMM (strided batched) on flat NumPy buffers, as its documentation
    defines it: C = alpha * op(A) @ op(B) + beta * C, each matrix at offset + i * stride."""
    as_strided = np.lib.stride_tricks.as_strided
    size = a.itemsize
    for i in range(call.batch_count):
        def matrix(flat, offset, stride, rows, cols, ld):
            return as_strided(flat[offset + i * stride :], (rows, cols), (size, ld * size))

        A = matrix(a, call.a_offset, call.stride_a, *((call.k, call.m) if call.trans_a else (call.m, call.k)), call.lda)
        B = matrix(b, call.b_offset, call.stride_b, *((call.n, call.k) if call.trans_b else (call.k, call.n)), call.ldb)
        C = matrix(c, call.c_offset, call.stride_c, call.m, call.n, call.ldc)
        C[...] = alpha * ((A.T if call.trans_a else A) @ (B.T if call.trans_b else B)) + beta * C


@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
@pytest.mark.parametrize("trans", TRANS, ids=str)
def test_cublas_calls_compute_the_row_major_product(shapes, trans):
    # The CUDA file's argument mapping, run through a model of cuBLAS: no GPU needed.
    rng = np.random.default_rng(1)
    a, b = values(rng, shapes[0], np.float64), values(rng, shapes[1], np.float64)
    c = values(rng, np.matmul(a, b).shape, np.float64)
    sa, sb = stored(a, trans[0]), stored(b, trans[1])
    plan = plan_gemm(sa.shape, sb.shape, c.shape, *trans)
    flat_c = c.copy().reshape(-1)
    if c.size:
        for call in cublas_calls(plan):
            # cuBLAS's A is ep's b, its B ep's a.
            cublas_gemm_model(call, sb.reshape(-1), sa.reshape(-1), flat_c, 0.5, 2.0)
    np.testing.assert_allclose(flat_c.reshape(c.shape), reference(a, b, 0.5, 2.0, c), rtol=1e-12, atol=1e-12)
