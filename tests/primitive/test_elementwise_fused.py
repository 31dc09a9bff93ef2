"""ElementwiseFused through NewPrimitive + Launch, against the unfused primitives' chain (ep.ops) and
NumPy computed here; the expression's resolution and its bad input; its disk cache across processes."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ep
from ep.include.primitive.elementwise_fused import Binary, Cast, Input, Scalar, Unary, Where
from ep.testing import to_device, to_numpy

U, B = ep.UnaryOp, ep.BinaryOp
x, y, z = Input(0), Input(1), Input(2)


def launch(device, expression, arrays, scalars=(), dtypes=None):
    """The outputs of expression over arrays (arguments 0..) and scalars (the arguments after them)."""
    dtypes = dtypes or [a.dtype for a in arrays] + [np.asarray(s).dtype for s in scalars]
    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, expression, *dtypes)
    assert fused is not None
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    stream = ep.GetDevice(device).CreateStream()
    args = [to_device(a, device) for a in arrays]
    dsts = [to_device(np.zeros(shape, d), device) for d in fused.dst_dtypes]
    fused.Launch(stream, [*args, *scalars], [a.shape for a in arrays] + [()] * len(scalars), dsts)
    stream.Sync()
    for arg, a in zip(args, arrays):  # inputs unchanged
        np.testing.assert_array_equal(to_numpy(arg).reshape(a.shape), a)
    return [to_numpy(d).reshape(shape) for d in dsts]


def test_two_outputs_of_one_expression_equal_the_unfused_chain(device):
    rng = np.random.default_rng(0)
    a, b, c = (rng.random((3, 5)).astype(np.float32) + 0.5 for _ in range(3))
    first = Binary(B.kAdd, Binary(B.kMul, x, Scalar(3)), y)
    second = Binary(B.kSub, Unary(U.kLog, first), Unary(U.kSqrt, z))
    got = launch(device, (first, second), [a, b, c], [np.float32(2)])
    ops = ep.ops
    expected_first = ops.binary("add", ops.binary("mul", a, np.float32(2)), b)
    expected_second = ops.binary("sub", ops.unary("log", expected_first), ops.unary("sqrt", c))
    np.testing.assert_array_equal(got[0], expected_first)
    np.testing.assert_allclose(got[1], expected_second, rtol=2e-7)  # CUDA's log and the CPU's differ in the last bit


@pytest.mark.parametrize("shapes", [((4, 6), (6,), (4, 1)), ((2, 1, 3), (1, 4, 1), ()), ((0, 3), (3,), (1, 3))], ids=str)
def test_broadcast_arguments_read_as_rows_and_columns(device, shapes):
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    expression = Unary(U.kTanh, Binary(B.kAdd, Binary(B.kMul, x, y), z))
    np.testing.assert_allclose(launch(device, expression, [a, b, c])[0], np.tanh(a * b + c), rtol=1e-6, atol=1e-7)


def test_float16_rounds_after_each_op_as_the_chain(device):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(64).astype(np.float16) for _ in range(2))
    expression = Binary(B.kAdd, Binary(B.kMul, x, y), x)
    expected = ((a * b).astype(np.float16) + a).astype(np.float16)
    assert launch(device, expression, [a, b])[0].view(np.uint16).tolist() == expected.view(np.uint16).tolist()


def test_integer_ops_casts_and_where(device):
    a = np.arange(-20, 20, dtype=np.int32)
    b = np.arange(40, dtype=np.uint8)
    expression = (
        Where(Binary(B.kGreaterThan, x, Scalar(2)), Binary(B.kFloorDiv, x, Scalar(2)), Cast(y, "int32")),
        Binary(B.kFloorMod, x, Scalar(2)),
        Cast(Binary(B.kMul, x, x), "int8"),
    )
    got = launch(device, expression, [a, b], [np.int32(3)])
    np.testing.assert_array_equal(got[0], np.where(a > 3, a // 3, b.astype(np.int32)))
    np.testing.assert_array_equal(got[1], a % 3)
    np.testing.assert_array_equal(got[2], (a * a).astype(np.int8))  # wraps


def test_attributes_and_predicates(device):
    a = np.array([-2.0, -0.5, 0.0, np.nan, np.inf, 3.0], np.float64)
    expression = (Unary(U.kLeakyRelu, x, 0.25), Unary(U.kIsNan, x), Binary(B.kMax, x, Scalar(1)))
    got = launch(device, expression, [a], [0.0])
    np.testing.assert_array_equal(got[0], np.where(a > 0, a, a * 0.25))
    np.testing.assert_array_equal(got[1], np.isnan(a))
    np.testing.assert_array_equal(got[2], np.maximum(a, 0.0))


def test_resolution_and_refusals():
    new = lambda e, *d: ep.NewPrimitive(ep.ElementwiseFusedFactory, "cpu", e, *d)  # noqa: E731
    assert new(Unary(U.kSqrt, x), "int32") is None  # sqrt has no integer formula
    assert new(Unary(U.kRelu, x), "float32") is new(Unary(U.kRelu, x), np.float32)
    assert new(Unary(U.kLeakyRelu, x, 0.0), "float32") is not new(Unary(U.kLeakyRelu, x, -0.0), "float32")
    with pytest.raises(TypeError, match=r"expression: a has dtype float32 and b int32"):
        new(Binary(B.kAdd, x, y), "float32", "int32")
    with pytest.raises(TypeError, match=r"argument 1 .* is read by no Input"):
        new(Unary(U.kRelu, x), "float32", "float32")
    with pytest.raises(TypeError, match=r"names no argument"):
        new(Unary(U.kRelu, Input(3)), "float32")
    with pytest.raises(TypeError, match=r"read both as Input and as Scalar"):
        new(Binary(B.kAdd, x, Scalar(0)), "float32")
    with pytest.raises(TypeError, match=r"condition: has dtype float32; expected bool"):
        new(Where(x, x, x), "float32")
    with pytest.raises(TypeError, match=r"is not an expression node"):
        new(("relu", x), "float32")
    with pytest.raises(TypeError, match=r"reads no Input"):
        new(Unary(U.kRelu, Scalar(0)), "float32")


def test_launch_checks_every_argument_before_writing(device):
    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, Binary(B.kAdd, x, y), "float32", "float32")
    stream = ep.GetDevice(device).CreateStream()
    a, b = to_device(np.ones(6, np.float32), device), to_device(np.ones(6, np.float32), device)
    out = to_device(np.zeros(6, np.float32), device)
    with pytest.raises(ValueError, match=r"arg_dims\[1\]=\(4,\)"):
        fused.Launch(stream, [a, b], [(6,), (4,)], [out])
    with pytest.raises(TypeError, match=r"args: expected a tuple or list of 2 entries"):
        fused.Launch(stream, [a], [(6,)], [out])
    with pytest.raises(ValueError, match=r"dsts\[0\]"):
        fused.Launch(stream, [a, b], [(6,), (6,)], [to_device(np.zeros(3, np.float32), device)])
    with pytest.raises(TypeError, match=r"args\[0\]"):
        fused.Launch(stream, [to_device(np.ones(6, np.float64), device), b], [(6,), (6,)], [out])
    assert not to_numpy(out).any()


def test_python_command_lists_one_open_keyed_primitive():
    from ep.include.primitive.primitive import registry_rows

    rows = registry_rows(device="cpu", primitive="ElementwiseFused")
    assert sorted(row["dtypes"][0] for row in rows) == sorted(t.value for t in ep.DataType) and {row["op"] for row in rows} == {None}


CACHED = """
import json, time
import numpy as np
from numba.core import event
import ep
from ep.include.primitive.elementwise_fused import Binary, Input, Scalar, Unary
fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, "cpu", Unary(ep.UnaryOp.kExp, Binary(ep.BinaryOp.kMul, Input(0), Scalar(1))), "float32", "float32")
x, out = np.arange(5, dtype=np.float32), np.empty(5, np.float32)
with event.install_recorder("numba:compile") as recorder:
    fused.Launch(ep.GetDevice("cpu").CreateStream(), [x, 0.5], [(5,), ()], [out])
names = [e.data["dispatcher"].py_func.__qualname__ for _, e in recorder.buffer if e.is_start]
print(json.dumps([names, out.tolist()]))
"""


def test_a_new_process_loads_the_expression_from_the_disk_cache(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", CACHED], env=env, capture_output=True, text=True, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    (first, values), (second, again) = (json.loads(run.stdout.strip().splitlines()[-1]) for run in runs)
    assert any(name.startswith("fused_flat") for name in first)  # compiled by the first process
    assert second == [] and values == again
    np.testing.assert_allclose(values, np.exp(np.arange(5, dtype=np.float32) * np.float32(0.5)), rtol=1e-6)
