"""Caches tell apart values that compare equal (exact_key): an attribute of -0.0 after 0.0 (or the
reverse) reaches the kernel as given, in ep.ops and through NewPrimitive, as a fresh process and
PyTorch compute it."""
import struct

import numpy as np
import pytest

import ep
import ep.ops
from ep.common.runtime.keys import exact_key
from ep.testing import to_device, to_numpy

torch = pytest.importorskip("torch")

X = np.array([-1000.0, -1.0, 0.5, 3.0, 7.0], np.float32)
# Each order: the second call must not reuse what the first made.
ORDERS = [(-0.0, 0.0), (0.0, -0.0), (np.float32(-0.0), np.float32(0.0)), (np.float64(0.0), np.float64(-0.0))]


def assert_same(got, want) -> None:
    """Equal values and equal signs of zero (assert_array_equal takes -0.0 for 0.0)."""
    want = np.asarray(want)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("values", ORDERS, ids=str)
def test_unary_attributes_equal_but_unlike(device, values):
    x = to_device(X, device)
    for value in values:
        softplus = torch.nn.functional.softplus(torch.from_numpy(X), beta=float(value)).numpy()
        assert_same(to_numpy(ep.ops.unary("softplus", x, value)), softplus)
        threshold = torch.nn.functional.threshold(torch.from_numpy(X), 5.0, float(value)).numpy()
        assert_same(to_numpy(ep.ops.unary("threshold", x, 5.0, value)), threshold)
        assert_same(to_numpy(ep.ops.unary("threshold", x, threshold=5.0, value=value)), threshold)


@pytest.mark.parametrize("values", ORDERS, ids=str)
def test_binary_attributes_equal_but_unlike(device, values):
    dy = np.array([1.0, 2.0, -1.0, 1.0, 1.0], np.float32)
    for value in values:
        want = torch.ops.aten.leaky_relu_backward(torch.from_numpy(dy), torch.from_numpy(X), float(value), False).numpy()
        got = ep.ops.binary("leaky_relu_backward_with_dy_x", to_device(dy, device), to_device(X, device), value)
        assert_same(to_numpy(got), want)


@pytest.mark.parametrize("values", ORDERS, ids=str)
def test_new_primitive_attributes_equal_but_unlike(device, values):
    stream = ep.GetDevice(device).CreateStream()
    made = []
    for value in values:
        primitive = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kSoftPlus, "float32", "float32", value)
        made.append(primitive)
        out = to_device(np.empty_like(X), device)
        primitive.Launch(stream, to_device(X, device), out, X.size)
        stream.Sync()
        assert_same(to_numpy(out), torch.nn.functional.softplus(torch.from_numpy(X), beta=float(value)).numpy())
    assert made[0] is not made[1]
    again = ep.NewPrimitive(ep.ElementwiseUnaryFactory, device, ep.UnaryOp.kSoftPlus, "float32", "float32", values[0])
    assert again is made[0]  # still one primitive per exact attribute


def _nan(bits: int) -> np.float32:
    return np.frombuffer(struct.pack("<I", bits), np.float32)[0]


def test_exact_key():
    alike = [(0.0, 0.0), (np.float32(-0.0), np.float32(-0.0)), ((1, 2.5), (1, 2.5)), (ep.UnaryOp.kRelu, ep.UnaryOp.kRelu)]
    for a, b in alike + [(_nan(0x7FC00001), _nan(0x7FC00001)), (float("nan"), float("nan"))]:
        assert exact_key(a) == exact_key(b) and hash(exact_key(a)) == hash(exact_key(b))
    unlike = [
        (0.0, -0.0), (np.float32(0.0), np.float32(-0.0)), (np.float16(0.0), np.float16(-0.0)), (1, 1.0), (1, True),
        (1.0, True), (1, np.int64(1)), (0.0, np.float64(0.0)), (np.float32(1), np.float64(1)), (_nan(0x7FC00001), _nan(0x7FC00002)),
        ((1, 0.0), (1, -0.0)), ((1, 2), [1, 2]), (0j, -0j), ("relu", ep.UnaryOp.kRelu),
    ]
    for a, b in unlike:
        assert exact_key(a) != exact_key(b), (a, b)


def test_objects_that_change_in_place_are_keyed_by_their_value_or_not_at_all():
    torch = pytest.importorskip("torch")
    axis = torch.tensor(0)
    assert exact_key(axis) == (torch.Tensor, 0)
    axis.fill_(1)
    assert exact_key(axis) == (torch.Tensor, 1)
    device = ep.GetDevice("cpu")
    assert exact_key(device) is device  # equal only to itself
    for changing in (torch.tensor([3, 2]), torch.tensor(1.5), bytearray(b"ab"), np.array([1, 2])):
        with pytest.raises(TypeError):
            hash(exact_key(changing))


def test_ops_read_an_argument_changed_in_place_anew(device):
    # A cached plan keyed by the object would keep its old value: a silent wrong shape.
    torch = pytest.importorskip("torch")
    params = to_device(np.arange(6.0).reshape(2, 3), device)
    axis = torch.tensor(0)
    assert ep.ops.gather(params, to_device(np.array([1]), device), axis).shape == (1, 3)
    axis.fill_(1)
    np.testing.assert_array_equal(to_numpy(ep.ops.gather(params, to_device(np.array([1]), device), axis)), [[1.0], [4.0]])
    sizes = torch.tensor([3, 2])
    x = to_device(np.arange(3.0).reshape(3, 1), device)
    assert ep.ops.expand(x, sizes).shape == (3, 2)
    sizes[1] = 5
    np.testing.assert_array_equal(to_numpy(ep.ops.expand(x, sizes)), np.broadcast_to(np.arange(3.0).reshape(3, 1), (3, 5)))


def test_an_expression_graph_is_keyed_in_time_linear_in_its_nodes(monkeypatch):
    # x * (2 - d * x) repeated: a value used twice per step, so 2**16 paths through 48 nodes. A
    # recursive key walked every path (exact_key called once per path, and the key's hash as well).
    from ep.common.runtime import keys
    from ep.include.primitive.elementwise_fused import Binary, Input, Scalar

    def newton(steps):
        x, d = Input(0), Input(1)
        for _ in range(steps):
            x = Binary("mul", x, Binary("sub", Scalar(2), Binary("mul", d, x)))
        return x

    calls = []
    real = keys.exact_key
    monkeypatch.setattr(keys, "exact_key", lambda value: calls.append(1) or real(value))
    key = keys.exact_key(newton(16))
    assert len(calls) < 1000
    assert key == keys.exact_key(newton(16)) and hash(key) == hash(keys.exact_key(newton(16)))
    assert key != keys.exact_key(newton(15))


def test_a_cyclic_expression_is_refused_at_the_cycle():
    # The key's walk grew to 2**20 pending nodes (about 20 s) before it gave up on a node made its
    # own operand; it refuses at the first node that reaches itself.
    from ep.include.primitive.binary_op import BinaryOp
    from ep.include.primitive.elementwise_fused import Binary, Input

    shared = Binary(BinaryOp.kMul, Input(0), Input(1))
    cyclic = Binary(BinaryOp.kAdd, shared, Input(1))
    object.__setattr__(cyclic, "b", Binary(BinaryOp.kSub, cyclic, shared))
    with pytest.raises(TypeError, match="contains itself"):
        exact_key(cyclic)
    # A value reused (a DAG, not a cycle) is keyed.
    assert exact_key(Binary(BinaryOp.kAdd, shared, shared)) == exact_key(Binary(BinaryOp.kAdd, shared, Binary(BinaryOp.kMul, Input(0), Input(1))))
