"""ep.fuse against the unfused ep.ops chain (bit for bit where the ops are exact) and NumPy, on cpu and
the simulator: every operator, several outputs, broadcasting with strides, scalars, casts, float16,
integers, out=, other libraries' arrays, the refusals, and what a new shape compiles."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ep
import ep.ops
from ep.testing import to_device, to_numpy

ops = ep.ops
# Each operator and the chained ep.ops call it means (NumPy's names: / true_divide, % remainder).
OPERATORS = {
    "+": (lambda a, b: a + b, "add"), "-": (lambda a, b: a - b, "subtract"), "*": (lambda a, b: a * b, "multiply"),
    "/": (lambda a, b: a / b, "true_divide"), "//": (lambda a, b: a // b, "floor_divide"),
    "%": (lambda a, b: a % b, "remainder"), "**": (lambda a, b: a ** b, "power"),
    "<": (lambda a, b: a < b, "less"), "<=": (lambda a, b: a <= b, "less_equal"), "==": (lambda a, b: a == b, "equal"),
    "!=": (lambda a, b: a != b, "not_equal"), ">": (lambda a, b: a > b, "greater"), ">=": (lambda a, b: a >= b, "greater_equal"),
    "&": (lambda a, b: a & b, "bitwise_and"), "|": (lambda a, b: a | b, "bitwise_or"), "^": (lambda a, b: a ^ b, "bitwise_xor"),
    "<<": (lambda a, b: a << b, "left_shift"), ">>": (lambda a, b: a >> b, "right_shift"),
}
UNARY = {"-x": (lambda a: -a, "negative"), "abs": (lambda a: abs(a), "absolute"), "~": (lambda a: ~a, "invert")}
BITWISE = {"&", "|", "^", "~", "<<", ">>"}


def operands(device, dtype):
    a = np.array([-7, -3, -1, 0, 1, 2, 5, 9], dtype=np.int64).astype(dtype)
    b = np.array([2, 3, 1, 4, 2, 3, 1, 2], dtype=np.int64).astype(dtype)
    return to_device(a, device), to_device(b, device)


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=str)
def test_every_operator_equals_the_unfused_op(device, dtype):
    a, b = operands(device, dtype)
    floating = np.dtype(dtype).kind == "f"
    binary = {s: f for s, f in OPERATORS.items() if not (floating and s in BITWISE) and not (s == "**" and not floating)}
    unary = {s: f for s, f in UNARY.items() if not (floating and s in BITWISE)}
    fused = ep.fuse(lambda a, b: tuple(f(a, b) for f, _ in binary.values()) + tuple(f(a) for f, _ in unary.values()))
    results = fused(a, b)
    expected = [ops.binary(name, a, b) for _, name in binary.values()] + [ops.unary(name, a) for _, name in unary.values()]
    for symbol, got, want in zip([*binary, *unary], results, expected):
        got, want = to_numpy(got), to_numpy(want)
        assert got.dtype == want.dtype, symbol
        np.testing.assert_array_equal(got, want, err_msg=symbol)


def test_the_issue_example_and_two_outputs(device):
    rng = np.random.default_rng(0)
    x, y, z = (to_device(rng.random(50).astype(np.float32) + 0.25, device) for _ in range(3))
    step = ep.fuse(lambda x, y, z: ep.ops.unary("relu", x * y + z))
    chained = ops.unary("relu", ops.binary("add", ops.binary("mul", x, y), z))
    np.testing.assert_array_equal(to_numpy(step(x, y, z)), to_numpy(chained))

    def two(x, y, z):
        a = x * 2 + y
        return a, np.log(a) - ep.ops.unary("sqrt", z)

    a, b = ep.fuse(two)(x, y, z)
    first = ops.binary("add", ops.binary("mul", x, 2), y)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(first))
    np.testing.assert_allclose(to_numpy(b), to_numpy(ops.binary("sub", ops.unary("log", first), ops.unary("sqrt", z))), rtol=2e-7)


def test_broadcasting_strides_scalars_and_out(device):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 10)).astype(np.float32)
    row, col = rng.standard_normal(5).astype(np.float32), rng.standard_normal((6, 1)).astype(np.float32)
    strided = to_device(X, device)[:, ::2]  # a non-contiguous view, 6 x 5
    fused = ep.fuse(lambda X, row, col, s: ep.ops.unary("tanh", X * row + col) * s)
    out = to_device(np.zeros((6, 5), np.float32), device)
    assert fused(strided, to_device(row, device), to_device(col, device), 0.5, out=out) is out
    np.testing.assert_allclose(to_numpy(out), np.tanh(X[:, ::2] * row + col) * np.float32(0.5), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="do not broadcast"):
        fused(strided, to_device(np.ones(4, np.float32), device), to_device(col, device), 0.5)


def test_nep50_scalars_casts_and_float16(device):
    h = to_device(np.array([0.1, 1.5, -2.25, 60000.0], np.float16), device)
    i8 = to_device(np.array([-128, -1, 3, 127], np.int8), device)
    fused = ep.fuse(lambda h, i, s: (h * s + 1.5, i + 3, i * 1.5, (i > 0).astype("float32") + h, ep.ops.unary("cast", h, dtype="int32")))
    got = [to_numpy(r) for r in fused(h, i8, np.float16(3))]
    hs, i = to_numpy(h), to_numpy(i8)
    expected = [
        to_numpy(ops.binary("add", ops.binary("mul", h, np.float16(3)), 1.5)),
        (i + np.int8(3)), i * 1.5, (i > 0).astype(np.float32) + hs, to_numpy(ops.unary("cast", h, dtype="int32")),
    ]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.tobytes() == e.tobytes(), (g, e)
    with pytest.raises(OverflowError, match="s"):
        ep.fuse(lambda i, s: i + s)(i8, 300)


def test_a_numpy_scalar_left_of_a_comparison(device):
    # NumPy hands the ufunc a 0-d array made of the scalar: traced as that scalar, as on the right.
    x = np.array([0.25, 0.5, 1.0], np.float32)
    threshold, one = np.float32(0.5), np.int64(1)
    got = ep.fuse(lambda x: (threshold < x, one == x, threshold >= x))(to_device(x, device))
    for g, e in zip(got, (threshold < x, one == x, threshold >= x)):
        np.testing.assert_array_equal(to_numpy(g), e)


def test_an_expression_past_the_bounds_is_refused_at_the_op_that_makes_it():
    # A value reused at every step doubles the tree the fused kernel is composed from (13 Newton
    # steps: 81,915 nodes; 16 took 35 s); a chain past 200 ops deep overflowed Python's stack.
    def newton(d):
        x = d * 0 + 0.5
        for _ in range(13):
            x = x * (2 - d * x)
        return x

    def chain(x):
        for _ in range(101):
            x = x * 1.0001 + 0.0001
        return x

    x = np.linspace(0.5, 1.5, 4)
    with pytest.raises(ValueError, match=r"ep.fuse: the expression of d: has (\d+) nodes as a tree .* expected at most 65536") as refused:
        ep.fuse(newton)(x)
    # Each step holds the previous x twice: past 2**13 copies of the first one, whatever the rest.
    assert int(refused.value.args[0].split(" has ")[1].split()[0]) > 2**13 * 5
    with pytest.raises(ValueError, match=r"depth 201; expected at most 65536 and 200"):
        ep.fuse(chain)(x)


def test_other_libraries_arrays_come_back_as_theirs():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    got = ep.fuse(lambda x, y: x * y - 1)(x, np.float32(2))
    assert isinstance(got, torch.Tensor) and torch.equal(got, x * 2 - 1)


def test_refusals_name_the_argument_and_say_why():
    x = np.ones(4, np.float32)
    for fn, match in [
        (lambda x: x if x > 0 else -x, r"x: bool\(\) of a traced value .* use ep.ops.where"),
        (lambda x: float(x), r"x: float\(\) of"),
        (lambda x: int(x), r"x: int\(\) of"),
        (lambda x: len(x), r"x: len\(\) of .* elementwise"),
        (lambda x: x[0], r"x: indexing .* elementwise"),
        (lambda x: [v for v in x], r"x: iterating over"),
        (lambda x: ep.ops.gather(x, np.array([0]), axis=0), r"ep.ops.gather: is not elementwise"),
        (lambda x: ep.ops.unary("relu", x, out=x), r"out: ep.ops.unary inside ep.fuse takes no out="),
    ]:
        with pytest.raises(TypeError, match=match):
            ep.fuse(fn)(x)
    with pytest.raises(TypeError, match="an array exponent of integers"):
        ep.fuse(lambda i: i ** i)(np.arange(3))
    with pytest.raises(ValueError, match="negative integer powers"):
        ep.fuse(lambda i, e: i ** e)(np.arange(3), -1)
    with pytest.raises(ValueError, match="output 1: has shape"):
        ep.fuse(lambda x, y: (x + y, x * 2))(np.ones(3), np.ones((2, 3)))
    with pytest.raises(TypeError, match="no array"):
        ep.fuse(lambda a, b: a + b)(1, 2)


WARM = """
import json, time
import numpy as np
from numba.core import event
import ep, ep.ops
ep.ops.unary("relu", np.ones(4, np.float32))  # the process's shared builds (driver, entry) loaded
fused = ep.fuse(lambda x, y, z: ep.ops.unary("relu", x * y + z))
small = [np.ones((4, 3), np.float32), np.ones(3, np.float32), np.ones((4, 1), np.float32)]
start = time.perf_counter()
fused(*small)
first = time.perf_counter() - start
large = [np.ones((300, 200), np.float32), np.ones(200, np.float32), np.ones((300, 1), np.float32)]
with event.install_recorder("numba:compile") as recorder:
    result = fused(*large)
assert (result == 2).all()
print(json.dumps([first, [e.data["dispatcher"].py_func.__qualname__ for _, e in recorder.buffer if e.is_start]]))
"""


def test_a_new_shape_of_one_broadcast_pattern_compiles_nothing(device, tmp_path):
    if device != "cpu":
        pytest.skip("numba-cuda reports no compile events")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", WARM], env=env, capture_output=True, text=True, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    (cold, compiled), (warm, again) = (json.loads(run.stdout.strip().splitlines()[-1]) for run in runs)
    assert compiled == [] and again == []
    # The issue's budget is 1.0 s cold and 0.2 s warm on an idle CPU; the suite's machine is shared.
    assert warm < cold and warm < 1.0, (cold, warm)


def test_a_closed_over_0d_array_is_read_at_each_call(device):
    # Frozen at trace time, a change to c between calls was silently ignored.
    x = np.arange(4, dtype=np.float32)
    c = np.array(2.0)
    left, right = ep.fuse(lambda a: c * a), ep.fuse(lambda a: a * c)
    for f in (left, right):
        c[...] = 2.0
        np.testing.assert_array_equal(to_numpy(f(to_device(x, device))), c * x)
        c[...] = 3.0
        got = to_numpy(f(to_device(x, device)))
        assert got.dtype == (c * x).dtype
        np.testing.assert_array_equal(got, c * x)


def test_more_than_thirty_arguments_and_outputs(device):
    # CPython passes a call of over 30 arguments as *args, which Numba cannot inline: 31 arrays,
    # 30 scalars beside one array, or 31 outputs failed to compile on the CPU.
    xs = [np.full(5, i, np.float32) for i in range(40)]
    total = ep.fuse(lambda *xs: sum(xs[1:], xs[0]))(*[to_device(x, device) for x in xs])
    np.testing.assert_array_equal(to_numpy(total), sum(xs[1:], xs[0]))
    poly = ep.fuse(lambda x, *cs: sum((c * x ** k for k, c in enumerate(cs)), x * 0))
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    coefficients = [float(c) for c in range(1, 32)]
    np.testing.assert_allclose(to_numpy(poly(to_device(x, device), *coefficients)), np.polyval(coefficients[::-1], x), rtol=1e-5)
    many = ep.fuse(lambda x: tuple(x * i for i in range(33)))(to_device(x, device))
    assert len(many) == 33
    for i, got in enumerate(many):
        np.testing.assert_array_equal(to_numpy(got), x * i)


def test_composite_ops_inside_a_fused_function_are_traced_there(device):
    x = np.array([-3.0, -0.5, np.nan, 0.5, 3.0], np.float32)
    on = to_device(x, device)
    calls = {
        "clamp": lambda a: ops.clamp(a * 2, -1, 1),
        "lerp": lambda a: ops.lerp(a, a * 3, 0.25),
        "addcdiv": lambda a: ops.addcdiv(a, a, a + 10, value=2),
        "nan_to_num": lambda a: ops.nan_to_num(a / 0.0),
        "masked_fill": lambda a: ops.masked_fill(a, a > 0, 9.0),
    }
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x)
    references = {  # torch's own, computed here
        "clamp": torch.clamp(t * 2, -1, 1), "lerp": torch.lerp(t, t * 3, 0.25), "addcdiv": torch.addcdiv(t, t, t + 10, value=2),
        "nan_to_num": torch.nan_to_num(t / 0.0), "masked_fill": t.masked_fill(t > 0, 9.0),
    }
    for name, call in calls.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            fused = to_numpy(ep.fuse(call)(on))
            np.testing.assert_array_equal(fused, to_numpy(call(on)), err_msg=name)
        np.testing.assert_allclose(fused, references[name].numpy(), rtol=1e-6, err_msg=name)
    finite = np.nan_to_num(x)
    got = ep.fuse(lambda a: ops.sum(ops.clamp(a, 0, 1), dim=0))(to_device(finite, device))
    np.testing.assert_allclose(to_numpy(got), np.clip(finite, 0, 1).sum())
    with pytest.raises(TypeError, match="out, stream: a fused function called inside ep.fuse takes neither"):
        ep.fuse(lambda a: ops.clamp(a, 0, 1, out=a))(on)


def test_numpy_clip_torch_functions_and_keyword_arguments_trace(device):
    torch = pytest.importorskip("torch")
    x = np.array([-3.0, -0.5, np.nan, 0.5, 3.0], np.float32)
    on = to_device(x, device)
    np.testing.assert_array_equal(to_numpy(ep.fuse(lambda a: np.clip(a, -1, 1))(on)), np.clip(x, -1, 1))
    np.testing.assert_array_equal(to_numpy(ep.fuse(lambda a: a.clip(max=0.5))(on)), np.clip(x, None, 0.5))
    want = (torch.tanh(torch.from_numpy(x)) * torch.exp(torch.from_numpy(x))).numpy()
    np.testing.assert_allclose(to_numpy(ep.fuse(lambda a: torch.tanh(a) * torch.exp(a))(on)), want, rtol=1e-6)
    ints = np.arange(4, dtype=np.int32)
    got = to_numpy(ep.fuse(lambda a: torch.sqrt(a))(to_device(ints, device)))  # torch's rule: float32
    np.testing.assert_allclose(got, torch.sqrt(torch.from_numpy(ints)).numpy())
    assert got.dtype == np.float32
    scaled = ep.fuse(lambda a, scale: a * scale)
    np.testing.assert_array_equal(to_numpy(scaled(on, scale=2.0)), x * 2)
    np.testing.assert_array_equal(to_numpy(scaled(a=on, scale=2.0)), x * 2)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        scaled(on, a=on)


def test_what_cannot_be_traced_is_named_for_what_it_is():
    torch = pytest.importorskip("torch")
    import math

    x = np.ones(3, np.float32)
    cases = [
        (lambda a: math.tanh(a), TypeError, r"math's functions \(math.tanh\(x\)\) convert it to a Python float"),
        (lambda a: a.cumsum(), AttributeError, "a.cumsum: a traced value inside ep.fuse has no 'cumsum'"),
        (lambda a: a.T, AttributeError, "a.T: a traced value inside ep.fuse has no 'T'"),
        (lambda a: np.sum(a), TypeError, "numpy.sum is not traced by ep.fuse"),
        (lambda a: torch.sum(a), TypeError, "torch.sum is not traced by ep.fuse: no elementwise op of ep's has that name"),
    ]
    for fn, kind, message in cases:
        with pytest.raises(kind, match=message):
            ep.fuse(fn)(x)
