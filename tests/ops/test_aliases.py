"""NumPy's and PyTorch's names of ep's ops compute what the named library computes: each alias over
every dtype, against NumPy or PyTorch (torch.special, torch.nn.functional) computed here. OneFlow's
own names (kDiv, kPow) keep OneFlow's rules and are tested elsewhere."""
import warnings

import numpy as np
import pytest

import ep
import ep.ops
from ep.testing import to_device, to_numpy
from dtype_lists import ALL, assert_same, sampled
from dtype_lists import INTS as INT_DTYPES

torch = pytest.importorskip("torch")
F, special = torch.nn.functional, torch.special

# The library each alias is taken from: NumPy where NumPy has the name, else PyTorch.
UNARY = {
    "positive": np.positive, "absolute": np.absolute, "fix": np.fix, "invert": np.invert,
    "arccos": np.arccos, "arccosh": np.arccosh, "arcsin": np.arcsin, "arcsinh": np.arcsinh, "arctan": np.arctan,
    "arctanh": np.arctanh, "isinf": np.isinf, "isnan": np.isnan, "isfinite": np.isfinite,
    "radians": np.radians, "degrees": np.degrees,
    "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "hardshrink": F.hardshrink, "hardtanh": F.hardtanh,
    "softshrink": F.softshrink, "softsign": F.softsign, "softplus": F.softplus, "logsigmoid": F.logsigmoid,
    "neg": torch.neg, "psi": special.psi, "gammaln": special.gammaln, "expit": special.expit,
}
BINARY = {
    "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "true_divide": np.true_divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power, "floor_divide": np.floor_divide,
    "remainder": np.remainder, "mod": np.mod, "less": np.less, "greater": np.greater, "isclose": np.isclose,
    "arctan2": np.arctan2, "left_shift": np.left_shift, "right_shift": np.right_shift,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
}
DTYPES = sampled(ALL)
INTS = tuple(dtype.name for dtype in INT_DTYPES)
# Where the library computes and ep refuses (TypeError naming the dtype): ops ep has for floats only.
NOT_IMPLEMENTED = {
    "absolute": ("bool",),
}


# Where ep deliberately differs at an integer dtype's extremes (the record's doc says how): those
# values are left out for these names.
WRAPS_IN_TORCH = {"softsign"}


# PyTorch's uint16, uint32 and uint64 are storage types with few kernels ("not implemented for
# 'UInt16'"): there ep computes what the name means, as NumPy's function of that meaning does.
NUMPY_MEANING = {
    "neg": np.negative, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
    "softsign": lambda x: (x / (1 + np.abs(x).astype(np.float64))).astype(np.float32),  # torch's float32
}


def test_every_alias_has_its_reference():
    aliases = {alias for enum in (ep.UnaryOp, ep.BinaryOp) for alias, _ in enum.aliases()}
    assert aliases == set(UNARY) | set(BINARY)


def _values(dtype: np.dtype, extremes: bool = True) -> np.ndarray:
    if dtype == np.bool_:
        return np.array([True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = (0, 1, -1, 2, 3, -7, 7, 100) + ((info.min, info.max) if extremes else ())
        return np.array([v for v in values if info.min <= v <= info.max], dtype)
    return np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 7.0, 20.0, 1e4, -0.25, np.inf, -np.inf, np.nan], dtype)


def _reference(function, *arrays):
    """function's result, or the exception it raises; a torch function gets tensors."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if function is getattr(np, function.__name__, None):
                return np.asarray(function(*arrays))
            return function(*(torch.from_numpy(np.ascontiguousarray(x)) for x in arrays)).numpy()
    except NotImplementedError as error:
        meaning = NUMPY_MEANING.get(function.__name__)
        shell = arrays[0].dtype in (np.uint16, np.uint32, np.uint64)
        return meaning(*arrays) if meaning is not None and shell else error
    except Exception as error:  # noqa: BLE001 - the library's refusal is the expected result
        return error


def _check(name, dtype, got_call, want) -> None:
    if isinstance(want, Exception):
        with pytest.raises((TypeError, ValueError, OverflowError)):
            got_call()
        return
    if dtype.name in NOT_IMPLEMENTED.get(name, ()):
        with pytest.raises(TypeError, match=f"does not support dtype {dtype.name}"):
            got_call()
        return
    got = to_numpy(got_call())
    assert got.dtype == want.dtype, (name, dtype)
    if want.dtype.kind == "f":
        rtol = 2e-3 if dtype.itemsize <= 2 or want.dtype.itemsize <= 2 else 1e-5
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True, err_msg=f"{name} {dtype}")
    else:
        assert_same(got, want, err_msg=f"{name} {dtype}")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_alias_computes_as_its_library(device, name):
    for dtype in DTYPES:
        x = _values(dtype, extremes=name not in WRAPS_IN_TORCH)
        _check(name, dtype, lambda: ep.ops.unary(name, to_device(x, device)), _reference(UNARY[name], x))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_alias_computes_as_its_library(device, name):
    for dtype in DTYPES:
        x = _values(dtype)
        a, b = np.repeat(x, len(x)), np.tile(x, len(x))
        # Every pair, then only non-negative b (NumPy's power refuses negative integer exponents).
        for a, b in ((a, b), (a[~(b < 0)], b[~(b < 0)])):
            call = lambda: ep.ops.binary(name, to_device(a, device), to_device(b, device))  # noqa: E731
            _check(name, dtype, call, _reference(BINARY[name], a, b))


def test_new_primitive_has_no_alias_computed_otherwise(device):
    # NewPrimitive takes the source and destination dtypes: an alias has no primitive where its
    # library would compute in another dtype (or raise on values), while OneFlow's name has.
    binary = ep.BroadcastElementwiseBinaryFactory
    assert ep.NewPrimitive(binary, device, "true_divide", "int32", "int32", 4) is None
    assert ep.NewPrimitive(binary, device, "power", "int64", "int64", 4) is None
    assert ep.NewPrimitive(binary, device, "subtract", "bool", "bool", 4) is None
    assert ep.NewPrimitive(binary, device, "div", "int32", "int32", 4) is None  # torch.div: float32
    assert ep.NewPrimitive(binary, device, "kDiv", "int32", "int32", 4) is not None
    assert ep.NewPrimitive(binary, device, "true_divide", "float32", "float32", 4) is not None
    unary = ep.ElementwiseUnaryFactory
    assert ep.NewPrimitive(unary, device, "arccos", "float32", "float32") is not None
    assert ep.NewPrimitive(unary, device, "expit", "int32", "int32") is None


def test_a_refused_dtype_is_named():
    with pytest.raises(TypeError, match="a, b: 'subtract' .* does not support dtype bool"):
        ep.ops.binary("subtract", np.array([True]), np.array([False]))
    with pytest.raises(TypeError, match="x: 'positive' .* does not support dtype bool"):
        ep.ops.unary("positive", np.array([True]))


def test_bool_operands_of_sub_pow_and_fmod_follow_numpy(device):
    # sub is torch.sub (and NumPy's subtract): both refuse bools. pow and fmod are NumPy's names too
    # (numpy.pow, numpy.fmod), which compute bools as int8 where torch refuses them.
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    with pytest.raises(TypeError, match="a, b: 'sub' .* does not support dtype bool"):
        ep.ops.binary("sub", to_device(a, device), to_device(b, device))
    with pytest.raises(RuntimeError, match="bool"):
        torch.sub(torch.from_numpy(a), torch.from_numpy(b))
    assert ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, "sub", "bool", "bool", 4) is None
    assert ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, device, "kSub", "bool", "bool", 4) is not None
    for name, reference in (("pow", np.power), ("fmod", np.fmod)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = reference(a, b)
            got = to_numpy(ep.ops.binary(name, to_device(a, device), to_device(b, device)))
        assert got.dtype == want.dtype == np.int8
        assert_same(got, want)
