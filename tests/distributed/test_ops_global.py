"""ep.ops functions on global tensors, in process (one MPI rank: the placement is [0]), on every
device: each returns a global tensor equal to NumPy's result, sbp= lays the result out, and a
non-global array among global ones, out=, stream= or sbp= without globals are clear errors.
tests/distributed/mpi_cases.py runs the same ops on 2 and 4 real ranks."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import ep  # noqa: E402
from cublas import skip_without_cublas  # noqa: E402
from ep.sbp import GlobalTensor, broadcast as B, partial_sum as P, split as S  # noqa: E402
from ep.testing import to_device, to_numpy  # noqa: E402


def glob(x: np.ndarray, device: str, sbp=B) -> GlobalTensor:
    return ep.to_global(to_device(x, device).reshape(x.shape), ep.placement(device, [0]), sbp)


def softmax(x: np.ndarray, dim: int) -> np.ndarray:
    """In float64."""
    e = np.exp(x - x.max(dim, keepdims=True).astype(np.float64))
    return e / e.sum(dim, keepdims=True)


def cases(rng):
    """(call on ep.ops with the inputs as keyword sources, inputs, NumPy reference)."""
    params = rng.integers(-9, 10, (5, 3)).astype(np.float32)
    idx = rng.integers(-5, 5, (4,))
    bparams = rng.integers(-9, 10, (2, 5, 3)).astype(np.int64)
    bidx = rng.integers(0, 5, (2, 4))
    dy = rng.integers(-9, 10, (4, 3)).astype(np.float64)
    gidx = rng.integers(0, 5, (4,))
    dx = np.zeros((5, 3))
    np.add.at(dx, gidx, dy)
    x = rng.integers(-9, 10, (3, 1)).astype(np.int32)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    y = softmax(dy[::-1], 0)
    return [
        (lambda t: ep.ops.gather(t["p"], t["i"], axis=0), {"p": params, "i": idx}, np.take(params, idx, 0)),
        (lambda t: ep.ops.batch_gather(t["p"], t["i"]), {"p": bparams, "i": bidx}, np.take_along_axis(bparams, bidx[:, :, None], 1)),
        (lambda t: ep.ops.gather_grad(t["dy"], t["i"], (5, 3)), {"dy": dy, "i": gidx}, dx),
        (lambda t: ep.ops.expand(t["x"], (2, 3, 4)), {"x": x}, np.broadcast_to(x, (2, 3, 4))),
        (lambda t: ep.ops.expand_grad(t["dy"], (1, 3)), {"dy": dy}, dy.sum(0, keepdims=True)),
        (lambda t: ep.ops.repeat(t["x"], (2, 2)), {"x": x}, np.tile(x, (2, 2))),
        (lambda t: ep.ops.permute(t["a"], (-1, 0)), {"a": a}, a.T),
        (lambda t: ep.ops.pad(t["a"], (1, -1), 2.5), {"a": a}, np.pad(a, ((0, 0), (1, 0)), constant_values=2.5)[:, :4]),
        (lambda t: ep.ops.unary("leaky_relu", t["a"], negative_slope=0.5), {"a": a}, np.where(a > 0, a, 0.5 * a)),
        (lambda t: ep.ops.unary("cast", t["x"], dtype=np.float64), {"x": x}, x.astype(np.float64)),
        (lambda t: ep.ops.binary("mul", t["a"], t["b"]), {"a": a, "b": b}, a * b),
        (lambda t: ep.ops.binary("less", t["a"], t["b"]), {"a": a, "b": b}, a < b),
        (lambda t: ep.ops.where(t["c"], t["a"], t["b"]), {"c": a > 0, "a": a, "b": b}, np.where(a > 0, a, b)),
        (lambda t: ep.ops.one_hot(t["i"], 5, on_value=3), {"i": bidx}, np.where(bidx[..., None] == np.arange(5), 3, 0)),
        (lambda t: ep.ops.softmax(t["a"], 0), {"a": a}, softmax(a, 0).astype(np.float32)),
        (lambda t: ep.ops.log_softmax(t["a"]), {"a": a}, np.log(softmax(a, -1)).astype(np.float32)),
        (lambda t: ep.ops.softmax(t["a"], 1, dtype=np.float64), {"a": a}, softmax(a, 1).astype(np.float64)),
        (lambda t: ep.ops.softmax_grad(t["y"], t["dy"], 0), {"y": y, "dy": dy}, y * (dy - (y * dy).sum(0))),
        (lambda t: ep.ops.log_softmax_grad(t["y"], t["dy"]), {"y": y, "dy": dy}, dy - np.exp(y) * dy.sum(-1, keepdims=True)),
        (lambda t: ep.ops.cumsum(t["a"], 0), {"a": a}, np.cumsum(a, 0)),
        (lambda t: ep.ops.sum(t["a"], 1), {"a": a}, a.sum(1)),
        (lambda t: ep.ops.var(t["a"], 0, correction=0), {"a": a}, a.var(0)),
        (lambda t: ep.ops.std(t["a"], 1, unbiased=True), {"a": a}, a.std(1, ddof=1)),
        (lambda t: ep.ops.cumprod(t["x"], -1), {"x": x}, np.cumprod(x, -1, dtype=np.int64) if x.dtype.kind in "biu" else np.cumprod(x, -1)),
        (lambda t: ep.ops.cummax(t["a"], 1).values, {"a": a}, np.maximum.accumulate(a, 1)),
    ]


def test_every_ops_function_takes_and_returns_global_tensors(device):
    for k, (call, arrays, expected) in enumerate(cases(np.random.default_rng(0))):
        out = call({n: glob(x, device) for n, x in arrays.items()})
        assert type(out) is GlobalTensor and out.placement == ep.placement(device, [0]), k
        assert out.shape == expected.shape and out.dtype == expected.dtype, (k, out)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, err_msg=str(k))
        # The local op gives the same on the arrays themselves (the dispatch leaves arrays alone).
        local = call({n: to_device(x, device).reshape(x.shape) for n, x in arrays.items()})
        assert not isinstance(local, GlobalTensor)
        np.testing.assert_allclose(to_numpy(local), expected, rtol=1e-6, err_msg=str(k))


def test_matmul_runs_the_matching_signature_else_boxes(device):
    skip_without_cublas(device)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    for sa, sb, out_sbp in [(S(0), B, S(0)), (B, S(1), S(1)), (S(1), S(0), P), (P, B, P), (B, P, P), (B, B, B)]:
        out = ep.ops.matmul(glob(a, device, sa), glob(b, device, sb))
        assert type(out) is GlobalTensor and out.sbp == (out_sbp,), (sa, sb, out)
        assert out.shape == (5, 4) and out.dtype == np.float32
        np.testing.assert_allclose(out.numpy(), np.matmul(a, b), rtol=1e-5, atol=1e-6, err_msg=f"{sa} x {sb}")
    # A partial sum boxed to B on request; both columns split (no signature) boxed to one that takes them.
    for sa, sb, sbp in [(S(1), S(0), B), (S(1), S(1), None)]:
        out = ep.ops.matmul(glob(a, device, sa), glob(b, device, sb), sbp=sbp)
        assert sbp is None or out.sbp == (sbp,)
        np.testing.assert_allclose(to_numpy(out.to_global(sbp=B).to_local()), np.matmul(a, b), rtol=1e-5, atol=1e-6)
    # Batches split on both (and broadcast), a vector, and float32 x float64 promoting.
    x, y, v = rng.standard_normal((2, 5, 3)), rng.standard_normal((1, 3, 4)).astype(np.float32), rng.standard_normal(3)
    out = ep.ops.matmul(glob(x, device, S(0)), glob(y, device, B))
    assert out.sbp == (S(0),) and out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), np.matmul(x, y), rtol=1e-6)
    np.testing.assert_allclose(ep.ops.matmul(glob(x, device, S(2)), glob(v, device, S(0))).numpy(), np.matmul(x, v), rtol=1e-6)
    # Integers multiply exactly, wrapping, as locally; bools are refused before anything is boxed.
    ints = np.arange(4, dtype=np.int32).reshape(2, 2)
    np.testing.assert_array_equal(ep.ops.matmul(glob(ints, device, S(1)), glob(ints, device, S(0))).numpy(), ints @ ints)
    bools = glob(np.ones((2, 2), bool), device)
    with pytest.raises(TypeError, match="a, b: dtypes bool and bool multiply in bool; expected float16, float32, float64 or an integer dtype"):
        ep.ops.matmul(bools, bools)


def test_sbp_asks_for_the_results_layout(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for sbp in (S(0), S(1), B, P):
        out = ep.ops.unary("negative", glob(a, device, S(1)), sbp=sbp)
        assert out.sbp == (sbp,)
        np.testing.assert_array_equal(out.numpy(), -a)
        np.testing.assert_array_equal(to_numpy(out.to_local()), -a)


def test_clear_errors(device):
    a = np.ones((2, 3), np.float32)
    g = glob(a, device)
    with pytest.raises(TypeError, match="b: ndarray is not a GlobalTensor"):
        ep.ops.binary("add", g, a)
    with pytest.raises(TypeError, match="a: ndarray is not a GlobalTensor"):
        ep.ops.binary("add", np.ones((2, 3), np.float32), g)
    with pytest.raises(TypeError, match="b: float is not a GlobalTensor"):
        ep.ops.binary("add", g, 2.0)
    with pytest.raises(TypeError, match="indices: ndarray is not a GlobalTensor"):
        ep.ops.gather(g, np.zeros(2, np.int64))
    with pytest.raises(TypeError, match="out: unary of global tensors makes a new global tensor"):
        ep.ops.unary("relu", g, out=np.empty_like(a))
    with pytest.raises(TypeError, match="stream: expand of global tensors"):
        ep.ops.expand(g, (2, 3), stream=ep.GetDevice("cpu").default_stream)
    with pytest.raises(ValueError, match="check_bounds: gather of global tensors always checks"):
        ep.ops.gather(g, glob(np.zeros(2, np.int64), device), check_bounds=False)
    with pytest.raises(TypeError, match="sbp: unary takes sbp= only with global tensors"):
        ep.ops.unary("relu", to_device(a, device), sbp=B)
    with pytest.raises(IndexError, match="out of range for an axis of size 2"):
        ep.ops.gather(g, glob(np.array([0, 2]), device))


def test_global_tensors_always_take_the_dispatching_path(device):
    # same_kind decides: a GlobalTensor never joins the types its fast path passes through, so a
    # second call is dispatched like the first, and NumPy calls in between are unaffected.
    from ep.ops import arrays

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for _ in range(2):
        out = ep.ops.binary("add", glob(a, device), glob(a, device))
        assert type(out) is GlobalTensor and GlobalTensor not in arrays._NATIVE
        np.testing.assert_array_equal(out.numpy(), a + a)
        np.testing.assert_array_equal(to_numpy(ep.ops.binary("add", to_device(a, device), to_device(a, device))), a + a)


@pytest.mark.parametrize("dtype, message", [
    *((d, "is not a supported data type; expected one of bool, ") for d in (object, "U3", [("a", "i4"), ("b", "f8")])),
    (">f4" if np.little_endian else "<f4", "is float32 in the other byte order; ep takes native byte order"),
])
def test_to_global_refuses_dtypes_ep_does_not_support(dtype, message):
    # Boxing sent an object array's PyObject pointers to the other ranks, which crashed.
    with pytest.raises(TypeError, match=rf"rank 0: local: dtype\(.*\) {message}"):
        ep.to_global(np.zeros(3, dtype), ep.placement("cpu", [0]), B)


def test_a_call_python_refuses_is_an_error_of_every_rank():
    t = glob(np.zeros((2, 3), np.float32), "cpu")
    with pytest.raises(TypeError, match=r"rank 0: .*argument"):
        ep.ops.expand(t, (2, 3), 1)


def test_a_fused_call_runs_on_the_pieces_its_sbps_allow(device):
    # Inputs laid out as the whole expression allows: the result keeps their layout (nothing boxed).
    rng = np.random.default_rng(0)
    x, y, z = (rng.integers(-6, 7, s).astype(np.float32) for s in [(3, 4), (4,), (3, 1)])
    relu_fma = ep.fuse(lambda x, y, z: ep.ops.unary("relu", x * y + z))
    for sbps, out_sbp in [((S(0), B, S(0)), S(0)), ((S(1), S(0), B), S(1)), ((B, B, B), B)]:
        out = relu_fma(*(glob(a, device, s) for a, s in zip((x, y, z), sbps)))
        assert type(out) is GlobalTensor and out.sbp == (out_sbp,) and out.shape == (3, 4)
        np.testing.assert_array_equal(out.numpy(), np.maximum(x * y + z, 0))
    a, b = ep.fuse(lambda x, y, s: (x + y, x + y + x))(glob(x, device, P), glob(y, device, P), 2.0)
    assert a.sbp == b.sbp == (P,)
    np.testing.assert_array_equal(b.numpy(), x + y + x)


def test_a_fused_call_boxes_inputs_its_expression_does_not_allow(device):
    rng = np.random.default_rng(0)
    x, y = rng.integers(-6, 7, (2, 3, 4)).astype(np.float32), rng.integers(-6, 7, (3, 4)).astype(np.float32)
    out = ep.fuse(lambda x: ep.ops.unary("relu", x))(glob(x, device, P))  # relu of a partial sum is no sum
    assert out.sbp != (P,)
    np.testing.assert_array_equal(out.numpy(), np.maximum(x, 0))
    out = ep.fuse(lambda x, y: x * y + 1)(glob(x, device, S(1)), glob(y, device, S(1)))  # y's dim 1 is x's dim 2
    np.testing.assert_array_equal(out.numpy(), x * y + 1)


def test_a_fused_call_boxes_to_the_signature_moving_fewest_bytes():
    # On 2 and 2x2 ranks (the choice is a pure function of the layout): the least boxing cost, here
    # less than the all-reduce of x that broadcasting everything would take.
    from ep.sbp import global_ops, nd_signatures

    step = ep.fuse(lambda x, y: ep.ops.unary("relu", x) + y)
    x, y = glob(np.zeros((6, 5), np.float32), "cpu", P), glob(np.zeros((6, 1), np.float32), "cpu", S(0))
    trace = step.trace((x, y), ep.GetDevice("cpu"))
    kw = {"args[0]": x.shape, "args[1]": y.shape, "expression": trace.nodes, "dtypes": ("float32",)}
    sizes = {"args[0]": 4, "args[1]": 4}
    for hierarchy in [(2,), (2, 2)]:
        sbps = {"args[0]": (P,) * len(hierarchy), "args[1]": (S(0),) * len(hierarchy)}
        chosen = global_ops._choose("fuse", hierarchy, tuple(kw.items()), tuple(sbps.items()), (4, 4), 4, None)
        costs = {sig: global_ops.signature_cost("fuse", hierarchy, kw, sbps, sizes, 4, None, sig) for sig in nd_signatures("fuse", hierarchy, **kw)}
        broadcast = next(sig for sig in costs if all(s["out[0]"] == B for s in sig))
        assert costs[chosen] == min(costs.values()) < costs[broadcast], (hierarchy, chosen, costs)


def test_fused_calls_refuse_local_arrays_and_out():
    g = glob(np.ones((2, 3), np.float32), "cpu")
    add = ep.fuse(lambda a, b: a + b)
    with pytest.raises(TypeError, match="b: ndarray is not a GlobalTensor"):
        add(g, np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="out: fuse of global tensors makes a new global tensor"):
        add(g, g, out=np.empty((2, 3), np.float32))


def test_an_op_without_a_declaration_is_global_boxed_to_broadcast(device):
    # An ops function no ep/ops/*_rules.py declares: its global tensors (a list's too) are boxed to
    # broadcast, it runs on the whole arrays, and its results stay broadcast; its own checks hold.
    from ep.ops.arrays import same_kind

    @same_kind("x")
    def sums(x, others, *, out=None, stream=None):
        """x + each of others (a list), as a tuple."""
        return tuple(ep.ops.add_n([x, o]) for o in others)

    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    others = [np.ones((2, 3)) * k for k in (1, 2)]
    got = sums(glob(x, device, S(0)), [glob(others[0], device, S(1)), glob(others[1], device, P)])
    assert isinstance(got, tuple) and len(got) == 2
    for g, o in zip(got, others):
        assert isinstance(g, GlobalTensor) and g.sbp == (B,)
        np.testing.assert_array_equal(g.numpy(), x + o)
    assert sums(glob(x, device), [glob(others[0], device)], sbp=S(0))[0].sbp == (S(0),)
    with pytest.raises(ValueError, match=r"rank 0: arrays\[1\]: has shape \(5, 5\); expected \(2, 3\)"):
        sums(glob(x, device), [glob(np.ones((5, 5)), device)])
    with pytest.raises(TypeError, match="out: sums of global tensors"):
        sums(glob(x, device), [], out=x)


def test_reductions_over_an_empty_dim_give_the_local_answer(device):
    x = np.zeros((0, 3), np.float32)
    with pytest.raises(ValueError, match="amax over dim 0 of size 0"):
        ep.ops.amax(glob(x, device), 0)
    with pytest.raises(ValueError, match="norm of order -1.0 over dim 0 of size 0"):
        ep.ops.norm(glob(x, device, S(0)), -1, 0)
    for name, expected in [("prod", np.ones(3, np.float32)), ("mean", np.full(3, np.nan, np.float32)), ("all", np.ones(3, bool)), ("logsumexp", np.full(3, -np.inf, np.float32))]:
        out = getattr(ep.ops, name)(glob(x, device, S(0)), 0)
        assert out.dtype == expected.dtype, name
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=name)


def test_reductions_and_scans_over_a_split_dim_run_on_the_pieces(device):
    """One rank's run of the signatures that finish over a split dim (S -> B: all-gathered and
    combined; S(dim) scans: continued by Exscan), on each device; mpi_cases.py runs them on 2-4 ranks."""
    x = np.array([[1.0, -2.0, 3.0], [np.nan, 5.0, -6.0], [7.0, 5.0, 0.5]], np.float32)
    g = glob(x, device, S(0))
    for call, sbp, expected in [
        (lambda: ep.ops.amax(g, 0), B, np.max(x, 0)),
        (lambda: ep.ops.argmin(g, 0), B, np.argmin(x, 0)),
        (lambda: ep.ops.prod(g, 0), B, np.prod(x, 0)),
        (lambda: ep.ops.mean(g, 0), P, np.mean(x, 0)),
        (lambda: ep.ops.cumsum(g, 0), S(0), np.cumsum(x, 0)),
    ]:
        out = call()
        assert out.sbp == (sbp,) and out.dtype == expected.dtype, out
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


def test_cummax_keeps_its_names_and_its_split(device):
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, 3.0], [np.nan, 3.0], [2.0, 5.0]], np.float32)
    for sbp in (S(0), S(1), B):
        out = ep.ops.cummax(glob(x, device, sbp), 0)
        assert type(out).__name__ == "ValuesIndices" and out.values.sbp == out.indices.sbp == (sbp,)
        want = torch.cummax(torch.from_numpy(x), 0)
        np.testing.assert_array_equal(out.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(out.indices.numpy(), want.indices.numpy())
