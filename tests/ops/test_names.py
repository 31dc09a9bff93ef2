"""The names a NumPy or PyTorch user expects: op aliases, attributes by keyword, help, DataType names.

Each alias is checked twice: it resolves to the intended op, and ep.ops gives what NumPy computes
for the function of that name, on a small array of each device.
"""
import math
import pydoc

import numpy as np
import pytest

import ep
import ep.ops
from ep.common.math.binary_functor import BINARY_FUNCTORS
from ep.common.math.unary_functor import UNARY_FUNCTORS
from ep.common.runtime.names import NamedEnum, alias_table, lookup
from ep.include.primitive.binary_op import as_binary_op
from ep.include.primitive.unary_op import as_unary_op
from ep.testing import to_device, to_numpy

U = ep.UnaryOp
B = ep.BinaryOp

_ANY = np.linspace(-3, 3, 16)
_UNIT = np.linspace(-0.95, 0.95, 16)
_ABOVE_ONE = np.linspace(1.05, 4, 16)
_POSITIVE = np.linspace(0.3, 4, 16)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _hardsigmoid(x):
    return np.clip(x / 6 + 0.5, 0, 1)


def _digamma(x):
    # The derivative of log Gamma, by central differences of math.lgamma (NumPy has no digamma).
    h = 1e-5
    return np.array([(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x])


# alias -> (the op it names, NumPy's function of that name, the inputs)
UNARY_ALIASES = {
    "positive": (U.kIdentity, np.positive, _ANY),
    "expit": (U.kSigmoid, _sigmoid, _ANY),
    "logsigmoid": (U.kLogSigmoid, lambda x: -np.logaddexp(0, -x), _ANY),
    "softplus": (U.kSoftPlus, lambda x: np.logaddexp(0, x), _ANY),
    "softsign": (U.kSoftSign, lambda x: x / (1 + np.abs(x)), _ANY),
    "softshrink": (U.kSoftShrink, lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)), _ANY),
    "hardtanh": (U.kHardTanh, lambda x: np.clip(x, -1, 1), _ANY),
    "hardsigmoid": (U.kHardSigmoid, _hardsigmoid, _ANY),
    "hardswish": (U.kHardSwish, lambda x: x * _hardsigmoid(x), _ANY),
    "hardshrink": (U.kHardShrink, lambda x: np.where(np.abs(x) <= 0.5, 0, x), _ANY),
    "absolute": (U.kAbs, np.absolute, _ANY),
    "neg": (U.kNegative, np.negative, _ANY),
    "fix": (U.kTrunc, np.fix, _ANY),
    "psi": (U.kDigamma, _digamma, _POSITIVE),
    "gammaln": (U.kLgamma, np.vectorize(math.lgamma), _POSITIVE),
    "arcsinh": (U.kAsinh, np.arcsinh, _ANY),
    "arccosh": (U.kAcosh, np.arccosh, _ABOVE_ONE),
    "arctanh": (U.kAtanh, np.arctanh, _UNIT),
    "arcsin": (U.kAsin, np.arcsin, _UNIT),
    "arccos": (U.kAcos, np.arccos, _UNIT),
    "arctan": (U.kAtan, np.arctan, _ANY),
    "isinf": (U.kIsInf, np.isinf, np.array([0.0, np.inf, -np.inf, np.nan, 1.5])),
    "isnan": (U.kIsNan, np.isnan, np.array([0.0, np.inf, -np.inf, np.nan, 1.5])),
    "isfinite": (U.kIsFinite, np.isfinite, np.array([0.0, np.inf, -np.inf, np.nan, 1.5])),
    "invert": (U.kBitwiseNot, np.invert, np.arange(-8, 8, dtype=np.int32)),
    "radians": (U.kDeg2Rad, np.radians, _ANY * 60),
    "degrees": (U.kRad2Deg, np.degrees, _ANY),
}

_A = np.linspace(-3, 3, 16)
_B = np.linspace(2.5, -1.25, 16)
_BASES = np.linspace(0.5, 3, 16)

BINARY_ALIASES = {
    "subtract": (B.kSub, np.subtract, _A, _B),
    "multiply": (B.kMul, np.multiply, _A, _B),
    "divide": (B.kDiv, np.divide, _A, _B),
    "true_divide": (B.kDiv, np.true_divide, _A, _B),
    "maximum": (B.kMax, np.maximum, _A, _B),
    "minimum": (B.kMin, np.minimum, _A, _B),
    "power": (B.kPow, np.power, _BASES, _B),
    "floor_divide": (B.kFloorDiv, np.floor_divide, _A, _B),
    "remainder": (B.kFloorMod, np.remainder, _A, _B),
    "mod": (B.kFloorMod, np.mod, _A, _B),
    "eq": (B.kEqual, np.equal, _A, np.round(_A)),
    "ne": (B.kNotEqual, np.not_equal, _A, np.round(_A)),
    "less": (B.kLessThan, np.less, _A, _B),
    "lt": (B.kLessThan, np.less, _A, _B),
    "le": (B.kLessEqual, np.less_equal, _A, np.round(_A)),
    "greater": (B.kGreaterThan, np.greater, _A, _B),
    "gt": (B.kGreaterThan, np.greater, _A, _B),
    "ge": (B.kGreaterEqual, np.greater_equal, _A, np.round(_A)),
    "isclose": (B.kIsClose, np.isclose, _A, _A * (1 + np.linspace(-2e-5, 2e-5, 16))),
    "arctan2": (B.kAtan2, np.arctan2, _A, _B),
    # Shifts by negative amounts and by the width or more included.
    "left_shift": (B.kBitwiseLeftShift, np.left_shift, np.arange(-8, 8, dtype=np.int8), np.arange(-3, 13, dtype=np.int8)),
    "right_shift": (B.kBitwiseRightShift, np.right_shift, np.arange(-8, 8, dtype=np.int8) * 15, np.arange(-3, 13, dtype=np.int8)),
}


def _record_aliases(records):
    return {alias for record in records.values() for alias in record.aliases}


def test_every_alias_of_the_records_is_checked_here():
    assert set(UNARY_ALIASES) == _record_aliases(UNARY_FUNCTORS)
    assert set(BINARY_ALIASES) == _record_aliases(BINARY_FUNCTORS)


@pytest.mark.parametrize("alias", sorted(UNARY_ALIASES))
def test_unary_alias_gives_numpys_function(device, alias):
    op, reference, x = UNARY_ALIASES[alias]
    assert as_unary_op(alias) is op
    got = to_numpy(ep.ops.unary(alias, to_device(x, device)))
    with np.errstate(all="ignore"):
        expected = reference(x)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("alias", sorted(BINARY_ALIASES))
def test_binary_alias_gives_numpys_function(device, alias):
    op, reference, a, b = BINARY_ALIASES[alias]
    assert as_binary_op(alias) is op
    got = to_numpy(ep.ops.binary(alias, to_device(a, device), to_device(b, device)))
    with np.errstate(all="ignore"):
        expected = reference(a, b)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("alias", ["floor_divide", "remainder", "mod", "fmod"])
def test_integer_floor_division_and_modulo_follow_numpy_zero_divisor_included(device, alias):
    a = np.array([7, -7, 7, -7, 5, -5, 0, 3], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 0, 0, 3, 1], dtype=np.int32)
    got = to_numpy(ep.ops.binary(alias, to_device(a, device), to_device(b, device)))
    with np.errstate(all="ignore"):
        expected = getattr(np, alias)(a, b)
    np.testing.assert_array_equal(got, expected)


def test_integer_divide_truncates_and_gives_zero_for_a_zero_divisor(device):
    a = np.array([7, -7, 7, -7, 5, -5], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 0, 0], dtype=np.int32)
    # OneFlow's name keeps OneFlow's rule; NumPy's "divide" and PyTorch's "div" divide truly
    # (tests/ops/test_aliases.py, test_torch_promotion.py).
    got = to_numpy(ep.ops.binary("kDiv", to_device(a, device), to_device(b, device)))
    with np.errstate(all="ignore"):
        expected = np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(np.int32)
    np.testing.assert_array_equal(got, expected)


def test_integer_power_with_a_negative_exponent_gives_zero_but_for_bases_one_and_minus_one(device):
    a = np.array([2, -2, 1, -1, -1, 3], dtype=np.int64)
    b = np.array([-1, -3, -5, -2, -3, 2], dtype=np.int64)
    # OneFlow's name keeps OneFlow's rule; NumPy's "power" refuses a negative exponent, as NumPy.
    got = to_numpy(ep.ops.binary("pow", to_device(a, device), to_device(b, device)))
    expected = np.where(b >= 0, a ** np.abs(b), np.where(np.abs(a) == 1, a ** np.abs(b), 0))
    with pytest.raises(ValueError, match="b: integers to negative integer powers are not allowed"):
        ep.ops.binary("power", to_device(a, device), to_device(b, device))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("ops", [U, B], ids=lambda ops: ops.__name__)
def test_no_alias_names_another_op(ops):
    records = UNARY_FUNCTORS if ops is U else BINARY_FUNCTORS
    folded = {name.lower().replace("_", ""): op for op in ops for name in (op.name, op.value)}
    for op, record in records.items():
        for alias in record.aliases:
            assert folded.get(alias.lower().replace("_", ""), op) is op, f"{alias} of {op!r}"
    assert alias_table(ops)  # the table builds: its own check finds no clash either


@pytest.mark.parametrize("ops", [U, B], ids=lambda ops: ops.__name__)
def test_every_op_keeps_its_own_names(ops):
    for op in ops:
        assert lookup(ops, op.value, "op", "an op", "x") is op
        assert lookup(ops, op.name, "op", "an op", "x") is op


class _Color(NamedEnum):
    kRed = "red"
    kGreen = "green"


def _enum_with_aliases(pairs):
    # A fresh enum per call: the alias table is cached per enum type.
    color = NamedEnum("Color", {"kRed": "red", "kGreen": "green"})
    color.aliases = classmethod(lambda cls: [(alias, cls[member]) for alias, member in pairs])
    return color


def test_an_alias_that_names_another_member_is_refused():
    with pytest.raises(ValueError, match="alias 'Green' of Color.kRed is a name of Color.kGreen"):
        alias_table(_enum_with_aliases([("Green", "kRed")]))


def test_an_alias_that_two_members_claim_is_refused():
    with pytest.raises(ValueError, match="alias 'crimson' is claimed by Color.kRed and Color.kGreen"):
        alias_table(_enum_with_aliases([("crimson", "kRed"), ("crimson", "kGreen")]))


def test_an_alias_resolves_folded_like_a_name():
    color = _enum_with_aliases([("scarlet_red", "kRed")])
    assert lookup(color, "ScarletRed", "c", "a color", "red") is color.kRed
    assert lookup(_Color, "GREEN", "c", "a color", "red") is _Color.kGreen


@pytest.mark.parametrize(
    "convert, name, close",
    [(as_unary_op, "arcos", "arccos"), (as_unary_op, "expt", "expit"), (as_binary_op, "lesss", "less"),
     (as_binary_op, "remaindr", "remainder"), (as_unary_op, "leaky_rel", "leaky_relu")],
)
def test_an_unknown_name_lists_the_closest_names_aliases_included(convert, name, close):
    with pytest.raises(ValueError, match=f"op: '{name}' is not a .* op; did you mean .*'{close}'"):
        convert(name)


# op -> (the attributes by keyword, the same by position)
UNARY_KEYWORDS = {
    "leaky_relu": ({"negative_slope": 0.2}, (0.2,)),
    "elu": ({"alpha": 0.5}, (0.5,)),
    "celu": ({"alpha": 0.7}, (0.7,)),
    "soft_plus": ({"beta": 2.0, "threshold": 3.0}, (2.0, 3.0)),
    "hard_tanh": ({"min_val": -0.5, "max_val": 0.25}, (-0.5, 0.25)),
    "hard_shrink": ({"lambd": 0.3}, (0.3,)),
    "soft_shrink": ({"lambd": 0.3}, (0.3,)),
    "threshold": ({"threshold": 0.1, "value": -2.0}, (0.1, -2.0)),
    "logit": ({"eps": 0.25}, (0.25,)),
}
BINARY_KEYWORDS = {
    "is_close": ({"rtol": 1e-2, "atol": 0.5}, (0.5, 1e-2)),
    "is_close_equal_nan": ({"atol": 0.5}, (0.5,)),
    "leaky_relu_backward_with_dy_x": ({"negative_slope": 0.2}, (0.2,)),
}


def test_every_forward_op_with_attributes_is_checked_by_keyword():
    assert set(UNARY_KEYWORDS) == {op.value for op, record in UNARY_FUNCTORS.items() if record.attrs}
    forward = {op.value for op, record in BINARY_FUNCTORS.items() if record.attrs and "backward" not in op.value}
    assert forward <= set(BINARY_KEYWORDS)


@pytest.mark.parametrize("op", sorted(UNARY_KEYWORDS))
def test_unary_attributes_by_keyword_equal_those_by_position(device, op):
    keywords, positional = UNARY_KEYWORDS[op]
    x = to_device(_ANY, device)
    by_keyword = to_numpy(ep.ops.unary(op, x, **keywords))
    np.testing.assert_array_equal(by_keyword, to_numpy(ep.ops.unary(op, x, *positional)))


def test_leaky_relu_by_keyword_is_pytorchs(device):
    got = to_numpy(ep.ops.unary("leaky_relu", to_device(_ANY, device), negative_slope=0.2))
    np.testing.assert_allclose(got, np.where(_ANY > 0, _ANY, 0.2 * _ANY))


def test_one_attribute_by_position_and_the_other_by_keyword(device):
    x = to_device(_ANY, device)
    got = to_numpy(ep.ops.unary("hardtanh", x, -0.5, max_val=0.25))
    np.testing.assert_array_equal(got, np.clip(_ANY, -0.5, 0.25))


@pytest.mark.parametrize("op", sorted(BINARY_KEYWORDS))
def test_binary_attributes_by_keyword_equal_those_by_position(device, op):
    keywords, positional = BINARY_KEYWORDS[op]
    a, b = to_device(_A, device), to_device(_A + 0.3, device)
    by_keyword = to_numpy(ep.ops.binary(op, a, b, **keywords))
    np.testing.assert_array_equal(by_keyword, to_numpy(ep.ops.binary(op, a, b, *positional)))


def test_is_close_by_numpys_keywords_is_numpys(device):
    a, b = _A, _A + np.linspace(0, 0.1, 16)
    got = to_numpy(ep.ops.binary("isclose", to_device(a, device), to_device(b, device), rtol=1e-2, atol=1e-2))
    np.testing.assert_array_equal(got, np.isclose(a, b, rtol=1e-2, atol=1e-2))


BAD_KEYWORDS = [
    ("unary", "leaky_relu", (), {"alpha": 0.2},
     "alpha: kLeakyRelu has no attribute 'alpha'; its attributes are negative_slope"),
    ("unary", "relu", (), {"slope": 0.2}, "slope: kRelu has no attribute 'slope'; it takes no attributes"),
    ("unary", "hardtanh", (), {"min": 0.2},
     "min: kHardTanh has no attribute 'min'; its attributes are min_val, max_val"),
    ("unary", "leaky_relu", (0.1,), {"negative_slope": 0.2},
     "negative_slope: given twice, as attr0=0.1 and negative_slope=0.2"),
    ("binary", "isclose", (), {"equal_nan": True},
     "equal_nan: kIsClose has no attribute 'equal_nan'; its attributes are atol, rtol"),
    ("binary", "add", (), {"alpha": 2}, "alpha: kAdd has no attribute 'alpha'; it takes no attributes"),
    ("binary", "isclose", (None, 0.1), {"rtol": 0.2}, "rtol: given twice, as attr1=0.1 and rtol=0.2"),
]


@pytest.mark.parametrize("kind, op, positional, keywords, match", BAD_KEYWORDS)
def test_a_bad_keyword_raises_type_error_naming_it(kind, op, positional, keywords, match):
    operands = (_ANY,) if kind == "unary" else (_ANY, _ANY)
    with pytest.raises(TypeError, match=match):
        getattr(ep.ops, kind)(op, *operands, *positional, **keywords)


def _help(function):
    return pydoc.render_doc(function, renderer=pydoc.plaintext)


@pytest.mark.parametrize(
    "function, ops, records", [(ep.ops.unary, U, UNARY_FUNCTORS), (ep.ops.binary, B, BINARY_FUNCTORS)]
)
def test_help_lists_each_op_with_its_attributes_aliases_and_doc(function, ops, records):
    text = _help(function)
    first = function.__doc__.splitlines()[0]
    assert first.endswith(".") and "kRelu" not in first and "kAdd" not in first
    for op in ops:
        record = records[op]
        assert f"{op.value}(" in text and f"[{op.name}" in text and record.doc in text
        for name, default in record.attrs:
            assert (name if default is None else f"{name}={default!r}") in text
        for alias in record.aliases:
            assert alias in text


def test_help_says_the_integer_semantics():
    text = _help(ep.ops.binary)
    for claim in ["truncated toward zero and x / 0 = 0", "a negative exponent gives 0 but for bases 1 and -1",
                  "as np.floor_divide; integers: x // 0 = 0", "(np.remainder, torch.remainder); integers: x % 0 = 0",
                  "C's fmod", "integers wrap"]:
        assert claim in text


def test_describe_gives_the_record_of_a_member():
    assert ep.ops.describe(U.kLeakyRelu).startswith("leaky_relu(x, negative_slope=0.01)  [kLeakyRelu; float]")
    assert "also less, lt" in ep.ops.describe(B.kLessThan)
    assert ep.ops.describe(B.kReluBackwardWithDyY).startswith("relu_backward_with_dy_y(dy, y)")
    assert all(ep.ops.describe(op) for op in [*U, *B])
    # By any name the ops take: OneFlow's, the value, an alias; a name whose library computes other
    # dtypes than OneFlow's op says so in a third line (the entry of the name asked for).
    assert ep.ops.describe("kAcos") == ep.ops.describe(U.kAcos)
    assert ep.ops.describe("arccos") == ep.ops.describe("kAcos") + "\n    arccos: NumPy's: an integer or bool input computes in the smallest float that holds it (float64 for int32)"
    assert ep.ops.describe("lt") == ep.ops.describe(B.kLessThan)
    assert ep.ops.describe("divide").endswith("divide: NumPy's: integers and bools divide in float64")
    assert ep.ops.describe("div").endswith("div: PyTorch's: an integer or bool input computes in float32")
    assert ep.ops.describe("exp").endswith("exp: PyTorch's: an integer or bool input computes in float32")
    assert ep.ops.describe("ceil").endswith("ceil: integers are returned as they are")
    with pytest.raises(ValueError, match="op: 'relux' is neither a unary nor a binary op; did you mean 'relu'"):
        ep.ops.describe("relux")
    with pytest.raises(TypeError, match="op: 3 is not a unary op"):
        ep.ops.describe(3)


@pytest.mark.parametrize("data_type", list(ep.DataType))
def test_data_type_from_numpy_types_and_names(data_type):
    dtype = data_type.dtype
    for value in (dtype, dtype.type, dtype.name, data_type.value, data_type.name, data_type):
        assert ep.DataType(value) is data_type
