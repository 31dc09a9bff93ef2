"""Scalar operands of ep.ops.binary follow NumPy 2 (NEP 50): every forward op, with Python bool,
int and float scalars on either side of arrays of several dtypes, against NumPy's ufuncs; NumPy
scalars are typed; and a primitive refuses a Python int outside its dtype as NumPy does."""
import warnings

import numpy as np
import pytest

import ep
from ep.testing import to_device, to_numpy
from test_binary_ops import BITWISE, COMPARISON, LOGICAL, MATH, assert_matches, compute_type, is_close_reference
from test_two_argument_ops import FLOAT_OPS as TWO_ARGUMENT_FLOAT_OPS, INTEGER_OPS as TWO_ARGUMENT_INTEGER_OPS

UFUNCS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "kDiv": np.true_divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "fmod": np.fmod,
    "floor_div": np.floor_divide,
    "trunc_div": lambda a, b: np.trunc(np.true_divide(a, b)),
    "floor_mod": np.remainder,
    **COMPARISON,
    **LOGICAL,
    **BITWISE,
}
# div is torch.div (tests/ops/test_torch_promotion.py); OneFlow's kDiv is the op checked here.
EVERY_FORWARD_OP = [op.name if op is ep.BinaryOp.kDiv else op.value for op in ep.BinaryOp if "Backward" not in op.name]
# PyTorch's functions of two arguments keep torch's dtype rules (atan2 of ints in float32, hypot of
# ints refused): tests/ops/test_two_argument_ops.py checks their scalars against their arrays.
TORCH_OPS = set(TWO_ARGUMENT_FLOAT_OPS) | set(TWO_ARGUMENT_INTEGER_OPS)
FORWARD_OPS = [op for op in EVERY_FORWARD_OP if op not in TORCH_OPS]
# Where ep's op means what NumPy's ufunc means on the promoted dtype. Elsewhere ep keeps OneFlow's
# semantics, checked with test_binary_ops' references on NumPy's promoted dtype: integer
# division, modulo and power (zero divisors give 0, negative powers 0 or +-1, where NumPy warns,
# raises or gives float64), bool arithmetic of OneFlow's names (NumPy's div and modulo give int8
# or float64), and is_close, which has no ufunc. sub refuses bools, as NumPy and torch do; pow and
# fmod, NumPy's names too, compute bools as int8.
_INTEGER_SEMANTICS = {"kDiv", "pow", "fmod", "floor_div", "trunc_div", "floor_mod"}
_BOOLS_AS_INT8 = {"pow", "fmod"}

DTYPES = [np.int8, np.int32, np.uint8, np.bool_, np.float16, np.float32]
SCALARS = [True, False, 0, 1, -1, 3, 128, 256, -129, 2**31, 2**63, 0.0, 1.5, -2.5, 1e5, float("nan"), float("inf")]


def array_of(dtype) -> np.ndarray:
    if dtype is np.bool_:
        return np.array([True, False, True, False, True])
    if np.dtype(dtype).kind == "f":
        return np.array([0.0, -0.0, 1.0, -1.0, 2.5, -7.5, 3.0, np.inf, np.nan], dtype)
    info = np.iinfo(dtype)
    return np.array([0, 1, 2, 5, info.max, info.min] + ([-1, -7] if info.min else [7, 200]), dtype)


def same_as_numpy(op: str, src: np.dtype) -> bool:
    if op in ("is_close", "is_close_equal_nan"):
        return False
    return op not in _INTEGER_SEMANTICS or src.kind == "f"


def oneflow_reference(op: str, x, y, src: np.dtype) -> np.ndarray:
    """op on x and y made src (a scalar as NumPy 2 converts it: OverflowError out of range), with
    test_binary_ops' references: integers in int64 wrapped to src, bool as int64 then != 0."""
    x, y = np.asarray(x, src), np.asarray(y, src)
    if op.startswith("is_close"):
        return is_close_reference(*np.broadcast_arrays(x, y), 1e-8, 1e-5, equal_nan=op == "is_close_equal_nan")
    compute = compute_type(src)
    reference = MATH[op if op in MATH else ep.BinaryOp(op).name][1]  # "pow": kPow's rule
    result = reference(x.astype(compute), y.astype(compute))
    return result != 0 if src == np.bool_ else result.astype(src)


def numpy_result(op: str, x, y):
    """(NumPy's result, None) or (None, the exception type NumPy raises)."""
    array = x if isinstance(x, np.ndarray) else y
    src = np.result_type(x, y)
    if op in _BOOLS_AS_INT8 and src == np.bool_:
        src = np.dtype(np.int8)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if same_as_numpy(op, src):
                return UFUNCS[op](x, y), None
            return oneflow_reference(op, x, y, src), None
        except (OverflowError, TypeError, ValueError) as error:
            assert array.dtype  # the array itself is fine: the error is NumPy's about the scalar or op
            return None, next(e for e in (OverflowError, TypeError, ValueError) if isinstance(error, e))


def check(device, op, x, y):
    expected, error = numpy_result(op, x, y)
    args = [to_device(v, device) if isinstance(v, np.ndarray) else v for v in (x, y)]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if error is not None:
            with pytest.raises(error):
                ep.ops.binary(op, *args)
            return
        got = to_numpy(ep.ops.binary(op, *args))
    assert got.dtype == expected.dtype, (op, x, y)
    assert_matches(got, expected, expected.dtype)


@pytest.mark.parametrize("op", FORWARD_OPS)
def test_python_scalars_follow_numpy2(device, op):
    for dtype in DTYPES:
        array = array_of(dtype)
        for scalar in SCALARS:
            check(device, op, array, scalar)
            check(device, op, scalar, array)


def test_every_forward_op_is_covered():
    assert set(EVERY_FORWARD_OP) == set(UFUNCS) | {"is_close", "is_close_equal_nan"} | TORCH_OPS


NUMPY_SCALARS = [np.float32(1.5), np.float64(-0.5), np.float16(2.0), np.int8(-3), np.int64(300), np.uint8(200), np.bool_(True)]


@pytest.mark.parametrize("op", ["add", "mul", "max", "less_than", "equal", "logical_and"])
def test_numpy_scalars_are_typed(device, op):
    for dtype in DTYPES:
        for scalar in NUMPY_SCALARS:
            array = array_of(dtype)
            check(device, op, array, scalar)
            check(device, op, scalar, array)


def test_examples(device):
    ints = to_device(np.array([0, 1, 2], np.int32), device)
    got = to_numpy(ep.ops.binary("add", ints, 1.5))
    assert got.dtype == np.float64 and got.tolist() == [1.5, 2.5, 3.5]
    assert to_numpy(ep.ops.binary("less_than", ints, 0.5)).tolist() == [True, False, False]
    assert to_numpy(ep.ops.binary("greater_than", 0.5, ints)).tolist() == [True, False, False]
    assert to_numpy(ep.ops.binary("less_than", ints, 2**70)).tolist() == [True] * 3
    assert to_numpy(ep.ops.binary("add", to_device(np.array([True, False]), device), 1)).dtype == np.int64
    with pytest.raises(OverflowError, match=r"b: 300 is out of the range of int8"):
        ep.ops.binary("add", to_device(np.zeros(3, np.int8), device), 300)
    with pytest.raises(OverflowError, match=r"a: -1 is out of the range of uint8"):
        ep.ops.binary("sub", -1, to_device(np.zeros(3, np.uint8), device))


def _launch_scalar(device, dtype, value):
    primitive = ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, "add", dtype, dtype)
    dst = to_device(np.zeros(3, dtype), device)
    primitive.Launch(ep.GetDevice(device).default_stream, (3,), to_device(np.ones(3, dtype), device), (), value, dst)
    return to_numpy(dst)


@pytest.mark.parametrize("dtype, value", [(np.int8, 128), (np.uint8, -1), (np.int64, 2**63), (np.float32, 10**400)])
def test_primitive_refuses_a_scalar_out_of_range(device, dtype, value):
    with pytest.raises(OverflowError, match=r"src1: .* is out of the range of"):
        _launch_scalar(device, dtype, value)


def test_primitive_takes_a_scalar_in_range(device):
    np.testing.assert_array_equal(_launch_scalar(device, np.int8, 127), np.full(3, -128, np.int8))
    np.testing.assert_array_equal(_launch_scalar(device, np.uint8, 255), np.zeros(3, np.uint8))
