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


def test_subtrees_that_differ_in_a_zero_sign_are_two(device):
    # Equal subtrees are computed once; one with attribute -0.0 is not one with 0.0.
    a = np.array([-2.0, -1.0, 1.0], np.float32)
    expression = (Unary(U.kSoftPlus, x, 0.0), Unary(U.kSoftPlus, x, -0.0), Unary(U.kLeakyRelu, x, 0.0), Unary(U.kLeakyRelu, x, -0.0))
    got = launch(device, expression, [a])
    for output, (op, beta) in zip(got, [("softplus", 0.0), ("softplus", -0.0), ("leaky_relu", 0.0), ("leaky_relu", -0.0)]):
        expected = ep.ops.unary(op, a, beta)
        assert output.view(np.uint32).tolist() == expected.view(np.uint32).tolist(), (op, beta)


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


def test_dims_count_after_merging_as_for_the_unfused_ops(device):
    # Nine equal dims merge to one (ep.ops.binary takes them); ten alternating broadcasts do not.
    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, Binary(B.kAdd, x, y), "float32", "float32")
    stream = ep.GetDevice(device).CreateStream()
    a = np.arange(2**9, dtype=np.float32)
    out = to_device(np.zeros(2**9, np.float32), device)
    fused.Launch(stream, [to_device(a, device), to_device(a, device)], [(2,) * 9, (2,) * 9], [out])
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(out), 2 * a)
    with pytest.raises(ValueError, match="in 10 alternating dims after merging; at most 8"):
        fused.Launch(stream, [to_device(a[:32], device), to_device(a[:32], device)], [(2, 1) * 5, (1, 2) * 5], [to_device(np.zeros(2**10, np.float32), device)])


def test_new_refuses_a_cycle_and_an_expression_past_the_bounds(device):
    cyclic = Binary(B.kAdd, x, y)
    object.__setattr__(cyclic, "b", cyclic)
    with pytest.raises(TypeError, match="its own operand"):
        ep.NewPrimitive(ep.ElementwiseFusedFactory, device, cyclic, "float32", "float32")
    deep = x
    for _ in range(201):
        deep = Unary(U.kNegative, deep)
    with pytest.raises(ValueError, match="expression: has 204 nodes as a tree .* depth 203"):
        ep.NewPrimitive(ep.ElementwiseFusedFactory, device, Binary(B.kAdd, deep, y), "float32", "float32")


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


# CUDA's flat kernel (every array argument has the output's dims) moves packs (ep/cuda/pack.py): as
# many lanes as 16 bytes of the widest dtype among the array arguments and outputs hold (at most 4;
# 2 with an op that narrows them), one vector access per buffer where every buffer is aligned to its
# pack, else one element per work item, and a tail shorter than a pack element by element. A
# broadcast argument runs the per-element kernel. Each case: expression, NumPy reference, dtypes of
# the array arguments, scalars, lanes of CUDA's packs.
def _numpy_cases():
    return {
        "relu_fma_float32": (
            Unary(U.kRelu, Binary(B.kAdd, Binary(B.kMul, x, y), z)),
            lambda a, b, c: [np.maximum(a * b + c, np.float32(0))], (np.float32,) * 3, (), 4,
        ),
        "float16_rounds": (
            Binary(B.kAdd, Binary(B.kMul, x, y), x),
            lambda a, b: [((a * b).astype(np.float16) + a).astype(np.float16)], (np.float16,) * 2, (), 4,  # 8-byte packs: at most 4 lanes
        ),
        "float64_scalar": (
            Binary(B.kSub, Binary(B.kMul, x, Scalar(2)), y),
            lambda a, b, s: [a * s - b], (np.float64,) * 2, (1.5,), 2,
        ),
        "mixed_outputs": (  # float64, bool and int8 outputs of float32 and float16 arguments: 2 lanes
            (Cast(Binary(B.kMul, x, x), "float64"), Binary(B.kGreaterThan, x, Cast(y, "float32")), Cast(y, "int8")),
            lambda a, b: [(a * a).astype(np.float64), a > b.astype(np.float32), b.astype(np.int8)],
            (np.float32, np.float16), (), 2,
        ),
        "bool_where_int8": (  # 1-byte buffers: 4 lanes
            (Where(x, y, z), Binary(B.kLogicalAnd, x, Binary(B.kGreaterThan, y, z))),
            lambda c, a, b: [np.where(c, a, b), c & (a > b)], (np.bool_, np.int8, np.int8), (), 4,
        ),
        "int32_floor_div": (  # an integer division narrows the pack (binary NARROW_PACKS): 2 lanes
            (Binary(B.kFloorDiv, x, Scalar(1)), Cast(x, "float32")),
            lambda a, s: [np.floor_divide(a, s), a.astype(np.float32)], (np.int32,), (np.int32(3),), 2,
        ),
    }


PACKED = _numpy_cases()


def _values(dtype, n, seed):
    """n small values of dtype (quarters for floats), which every formula here computes exactly."""
    rng = np.random.default_rng(seed)
    if dtype is np.bool_:
        return rng.random(n) < 0.5
    values = rng.integers(-20, 21, n)
    if np.issubdtype(dtype, np.floating):
        return (values / 4).astype(dtype)
    return values.astype(dtype)


def _offset_view(values, device, offset):
    """values on device as a view offset elements into its buffer (misaligned for a pack where offset > 0)."""
    return to_device(np.concatenate([np.zeros(offset, values.dtype), values]), device)[offset:]


@pytest.fixture
def flat_launches(device, monkeypatch):
    """(kernel name, work items, packs) of every CUDA fused launch the test makes (empty on the CPU)."""
    launches = []
    if device != "cpu":
        from ep.cuda.kernel import CudaKernel

        original = CudaKernel.launch

        def recording(self, stream, work, *args):
            if self.name.startswith("fused_"):
                launches.append((self.name, work, args[-1] if self.name.startswith("fused_flat") else None))
            return original(self, stream, work, *args)

        monkeypatch.setattr(CudaKernel, "launch", recording)
    return launches


@pytest.mark.parametrize("case", sorted(PACKED))
def test_packs_tails_and_offset_buffers(device, case, flat_launches):
    expression, reference, dtypes, scalars, lanes = PACKED[case]
    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, expression, *dtypes, *(np.asarray(s).dtype for s in scalars))
    stream = ep.GetDevice(device).CreateStream()
    n = 41
    values = [_values(dtype, n, seed) for seed, dtype in enumerate(dtypes)]
    expected = [np.asarray(e) for e in reference(*values, *scalars)]
    aligned = (0,) * len(dtypes)
    for count in (1, 3, 4, 8, 17, 40):
        # Aligned buffers; the last input a view one element into its buffer; the first output one.
        for offsets, dst_offset in ((aligned, 0), (aligned[:-1] + (1,), 0), (aligned, 1)):
            args = [_offset_view(v, device, o)[:count] for v, o in zip(values, offsets)]
            buffers = [to_device(np.zeros(n + 1, d), device) for d in fused.dst_dtypes]
            starts = [dst_offset] + [0] * (len(buffers) - 1)
            dsts = [buffer[start : start + count] for buffer, start in zip(buffers, starts)]
            del flat_launches[:]
            fused.Launch(stream, [*args, *scalars], [(count,)] * len(dtypes) + [()] * len(scalars), dsts)
            stream.Sync()
            where = (case, count, offsets, dst_offset)
            for buffer, start, want in zip(buffers, starts, expected):
                got = to_numpy(buffer)
                assert got.dtype == want.dtype, where
                np.testing.assert_array_equal(got[start : start + count], want[:count], err_msg=str(where))
                # Nothing written around the count's elements.
                assert not got[:start].any() and not got[start + count :].any(), where
            if device == "cpu":
                continue
            ((name, work, packs),) = flat_launches  # one launch per call
            assert name.startswith("fused_flat"), where
            if any(offsets) or dst_offset:
                assert (packs, work) == (0, count), where  # a misaligned buffer: element by element
            else:  # full packs, then the tail element by element
                assert (packs, work) == (count // lanes, count - count // lanes * (lanes - 1)), where
    if device != "cpu":
        # The flat kernels' packs (the primitive is shared: another test may have made its strided kernel too).
        assert {k.lanes for k in fused.device_kernels.values() if k.name.startswith("fused_flat")} == {lanes}


def test_broadcast_operands_beside_flat_ones_take_the_element_kernel(device, flat_launches):
    """A row and a column beside flat float16 and misaligned float32 arguments, outputs of three dtypes."""
    rng = np.random.default_rng(5)
    a = (rng.integers(-20, 21, (5, 7)) / 4).astype(np.float16)
    b = (rng.integers(-20, 21, 7) / 4).astype(np.float32)
    c = (rng.integers(-20, 21, (5, 1)) / 4).astype(np.float32)
    d = (rng.integers(-20, 21, (5, 7)) / 4).astype(np.float32)
    s = Binary(B.kAdd, Binary(B.kMul, Cast(x, "float32"), y), z)
    expression = (Cast(Binary(B.kSub, s, Input(3)), "float64"), Binary(B.kLessThan, s, Input(3)), Cast(s, "float16"))
    fused = ep.NewPrimitive(ep.ElementwiseFusedFactory, device, expression, np.float16, np.float32, np.float32, np.float32)
    stream = ep.GetDevice(device).CreateStream()
    args = [to_device(a, device), to_device(b, device), to_device(c, device), _offset_view(d.ravel(), device, 1)]
    dsts = [_offset_view(np.zeros(35, t), device, 1) for t in fused.dst_dtypes]
    fused.Launch(stream, args, [a.shape, b.shape, c.shape, d.shape], dsts)
    stream.Sync()
    expected_s = a.astype(np.float32) * b + c
    got = [to_numpy(o).reshape(5, 7) for o in dsts]
    np.testing.assert_array_equal(got[0], (expected_s - d).astype(np.float64))
    np.testing.assert_array_equal(got[1], expected_s < d)
    np.testing.assert_array_equal(got[2], expected_s.astype(np.float16))
    if device != "cpu":
        assert [name for name, _, _ in flat_launches] == ["fused_strided"]
