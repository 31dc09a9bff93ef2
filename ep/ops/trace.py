"""Tracing for ep.fuse: traced values stand in for a fused function's arguments and record nodes.

Python's operators on a Traced value, NumPy's ufuncs of one, and ep.ops.unary, binary and where
calls (same_kind hands them here through Traced.__ep_trace__) record ElementwiseFused nodes with the
dtype rules of the unfused ops: NumPy 2's promotion (NEP 50 for Python scalars), the aliases'
dtypes, casts of the operands to the computed dtype. Anything that would need a traced value's
data (bool(), int(), len(), indexing, np.asarray) raises TypeError saying why, so Python control
flow is never silently traced one way.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from ep.common.math.aliases import checks_negative_powers, refuse_alias
from ep.common.math.binary_functor import binary_attrs, binary_dst_dtype, binary_keyword_attrs, binary_source
from ep.common.math.unary_functor import unary_attrs, unary_keyword_attrs, unary_result_dtype, unary_source
from ep.common.primitive.elementwise_fused import check_size
from ep.common.runtime.data_type import DataType, as_data_type
from ep.common.runtime.scalar import is_scalar, result_dtype
from ep.include.primitive.binary_op import as_binary_op
from ep.include.primitive.elementwise_fused import Binary, Cast, Input, Scalar, Unary, Where
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.unary_op import UnaryOp, as_unary_op

_ELEMENTWISE = ("unary", "binary", "where")
# The reductions a fused function may end with, by their ep.ops names.
REDUCTIONS = {
    "sum": ReduceOp.kSum, "prod": ReduceOp.kProd, "mean": ReduceOp.kMean, "amax": ReduceOp.kMax, "amin": ReduceOp.kMin,
    "argmax": ReduceOp.kArgMax, "argmin": ReduceOp.kArgMin, "any": ReduceOp.kAny, "all": ReduceOp.kAll,
    "logsumexp": ReduceOp.kLogSumExp, "var": ReduceOp.kVar, "std": ReduceOp.kStd,
}


@dataclass
class ScalarSlot:
    """A scalar argument of the fused primitive: the value of the call's argument `position` (or
    the constant `value` when position is None) in dtype; nonnegative: NumPy's power of integers
    refuses a negative exponent, checked on each call."""

    position: int | None
    value: object
    dtype: DataType
    nonnegative: bool = False

    def constant(self) -> object:
        """The constant's value now: a 0-d array's is read at each call (it may have changed)."""
        return self.value[()] if type(self.value) is np.ndarray else self.value


@dataclass
class Tracer:
    """One trace: the primitive's arguments in the order their leaves were made (array arguments
    by call position, scalar slots) and the names of the call's arguments."""

    names: tuple[str, ...]
    arguments: list = field(default_factory=list)  # ("array", position) or a ScalarSlot
    # A reduction records its operand alone (the elementwise part, which global tensors fuse apart).
    without_reduction: bool = False
    # The recorded nodes' (nodes as a tree, depth), by id: each new node is checked against the
    # bounds at the op that makes it (a value reused at every step doubles the tree).
    sizes: dict = field(default_factory=dict)

    def array(self, position: int, dtype: np.dtype) -> Traced:
        self.arguments.append(("array", position))
        return Traced(self, Input(len(self.arguments) - 1), as_data_type(dtype, self.names[position]), self.names[position])

    def scalar(self, position: int | None, value: object) -> TracedScalar:
        name = self.names[position] if position is not None else repr(value)
        return TracedScalar(self, position, value, name)

    def slot(self, scalar: TracedScalar, dtype: DataType, nonnegative: bool = False) -> Scalar:
        """The Scalar leaf of scalar in dtype (one per scalar and dtype)."""
        for index, argument in enumerate(self.arguments):
            if isinstance(argument, ScalarSlot) and argument.dtype is dtype and argument.position == scalar.position and (
                scalar.position is not None or argument.value is scalar.value
            ):
                argument.nonnegative |= nonnegative
                return Scalar(index)
        self.arguments.append(ScalarSlot(scalar.position, scalar.value, dtype, nonnegative))
        return Scalar(len(self.arguments) - 1)

    def operand(self, value: object) -> Traced | TracedScalar:
        """value as a traced operand: a Traced or TracedScalar of this trace, or a constant scalar."""
        if isinstance(value, TracedReduction):
            raise TypeError(f"{value.name}: is a reduction's result; a reduction is the last step of a fused function (fuse what follows in a second one)")
        if isinstance(value, (Traced, TracedScalar)):
            if value.tracer is not self:
                raise TypeError(f"{value.name}: is a traced value of another ep.fuse call")
            return value
        if is_scalar(value):
            return self.scalar(None, value)
        if type(value) is np.ndarray and value.ndim == 0 and (value.dtype.kind in "biuf" or value.dtype == DataType.kBFloat16.dtype):
            # A 0-d array may change between calls: the call reads it (ScalarSlot.read), typed by its dtype.
            return self.scalar(None, value)
        raise TypeError(
            f"{type(value).__name__} {value!r:.60}: ep.fuse traces only its arguments and Python or NumPy "
            "scalars; pass an array as an argument of the fused function"
        )

    def node(self, value: Traced | TracedScalar, dtype: DataType, nonnegative: bool = False):
        """value's node in dtype: a Traced cast when its dtype differs, a scalar's slot in dtype."""
        if isinstance(value, TracedScalar):
            return self.slot(value, dtype, nonnegative)
        return value.node if value.data_type is dtype else Cast(value.node, dtype)

    # The recording rules, one per elementwise ep.ops function.

    def unary(self, op, x, attr0=None, attr1=None, dtype=None, **attrs) -> Traced:
        name, op = op, as_unary_op(op)
        x = self.operand(x)
        if isinstance(x, TracedScalar):
            raise TypeError(f"x: {x.name} is a scalar; ep.ops.unary takes an array (use it beside an array, or compute it outside)")
        if attrs:
            attr0, attr1 = unary_keyword_attrs(op, attrs, attr0, attr1)
        op, src = unary_source(name, op, x.data_type)
        if src is None:
            raise refuse_alias(name, x.data_type, "x")
        dst = unary_result_dtype(op, src, dtype)
        unary_attrs(op, src, attr0, attr1)  # raises for a bad attribute, as ep.ops.unary
        operand = self.node(x, src)
        node = Cast(operand, dst) if op is UnaryOp.kCast else Unary(op, operand, attr0, attr1)
        return Traced(self, node, dst, x.name)

    def binary(self, op, a, b, attr0=None, attr1=None, **attrs) -> Traced:
        name, op = op, as_binary_op(op)
        a, b = self.operand(a), self.operand(b)
        if isinstance(a, TracedScalar) and isinstance(b, TracedScalar):
            raise TypeError("a, b: both are scalars; at least one must be an array")
        if attrs:
            attr0, attr1 = binary_keyword_attrs(op, attrs, attr0, attr1)
        src = as_data_type(result_dtype(a.promotion, b.promotion), "a, b")
        computed = binary_source(name, op, src)
        if computed is None:
            raise refuse_alias(name, src, "a, b")
        nonnegative = checks_negative_powers(name, computed)
        if nonnegative and isinstance(b, Traced):
            raise TypeError(
                f"b: {b.name} is an array exponent of integers; NumPy's power refuses negative ones, which a fused "
                "kernel cannot check: use 'pow' (OneFlow's rule) or a float dtype"
            )
        dst = binary_dst_dtype(op, computed)
        if dst is None:
            raise TypeError(f"op: {op.name} does not support dtype {computed.value}")
        binary_attrs(op, computed, attr0, attr1)  # raises for a bad attribute, as ep.ops.binary
        node = Binary(op, self.node(a, computed), self.node(b, computed, nonnegative), attr0, attr1)
        return Traced(self, node, dst, _joined(a, b))

    def where(self, condition, x, y) -> Traced:
        condition, x, y = self.operand(condition), self.operand(x), self.operand(y)
        if condition.data_type is not DataType.kBool:
            raise TypeError(f"condition: {condition.name} has dtype {condition.data_type.value}; expected bool (compare it first, e.g. condition != 0)")
        dtype = as_data_type(result_dtype(x.promotion, y.promotion), "x, y")
        node = Where(self.node(condition, DataType.kBool), self.node(x, dtype), self.node(y, dtype))
        return Traced(self, node, dtype, _joined(condition, x, y))

    def reduction(self, op: ReduceOp, x, dim=None, keepdim=False, dtype=None, correction=None, unbiased=None, axis=None, keepdims=None) -> TracedReduction:
        """ep.ops' reduction op of x (its signature's arguments): the fused function's result."""
        from ep.ops.reduce import MISSING, dim_keepdim, reduce_dtypes, var_correction

        correction = var_correction(correction, unbiased)
        x = self.operand(x)
        if isinstance(x, TracedScalar):
            raise TypeError(f"x: {x.name} is a scalar; a fused reduction takes an array")
        dim, keepdim = dim_keepdim(dim, keepdim, MISSING if axis is None else axis, MISSING if keepdims is None else keepdims, op.value)
        src, dst = reduce_dtypes(op, x.data_type, dtype)
        if self.without_reduction:
            return Traced(self, self.node(x, src), src, x.name)
        return TracedReduction(op, self.node(x, src), src, dst, dim, keepdim, correction, x.name)

    def call(self, function: str, signature: inspect.Signature, args: tuple, kwargs: dict) -> Traced | TracedReduction:
        """ep.ops.<function>(*args, **kwargs) on traced values: recorded, or refused."""
        if function not in _ELEMENTWISE and function not in REDUCTIONS:
            raise TypeError(
                f"ep.ops.{function}: is not elementwise, so ep.fuse cannot fuse it; a fused function may call "
                f"ep.ops.{', ep.ops.'.join(_ELEMENTWISE)} (casts included) and Python's operators, and end with one "
                f"of ep.ops' reductions ({', '.join(REDUCTIONS)}); call {function} outside it"
            )
        bound = signature.bind(*args, **kwargs)
        arguments = dict(bound.arguments)
        for keyword in ("out", "stream", "sbp"):
            if arguments.pop(keyword, None) is not None:
                raise TypeError(f"{keyword}: ep.ops.{function} inside ep.fuse takes no {keyword}=; give out= and stream= to the fused call")
        arguments.update(arguments.pop("attrs", {}))
        if function in REDUCTIONS:
            from ep.ops.reduce import MISSING

            arguments = {k: (None if v is MISSING else v) for k, v in arguments.items()}
            return self.reduction(REDUCTIONS[function], **arguments)
        return getattr(self, function)(**arguments)


def _joined(*values: Traced | TracedScalar) -> str:
    """The argument names values derive from (constants are named by no argument)."""
    names: list[str] = []
    for value in values:
        if isinstance(value, TracedScalar) and value.position is None:
            continue
        names += [name for name in value.name.split(", ") if name not in names]
    return ", ".join(names) or "constants"


def _refuse(what: str, why: str):
    def refuse(self, *args, **kwargs):
        raise TypeError(f"{self.name}: {what} a traced value inside ep.fuse; {why}")

    return refuse


_CONTROL_FLOW = (
    "its data is not known while fn is traced, so Python control flow (if, while, and, or, not) would be "
    "decided once for every call; use ep.ops.where(condition, x, y)"
)
_SCALAR_MATH = (
    "math's functions (math.tanh(x)) convert it to a Python float, which a traced value has not: use NumPy's "
    f"(np.tanh(x)) or ep.ops.unary; and {_CONTROL_FLOW}"
)
_NOT_ELEMENTWISE = "a fused function is elementwise: it computes every element alike, and sees no shape"


class _Operators:
    """Python's operators with NumPy's names and the refusals, shared by Traced and TracedScalar
    (the binary operators and comparisons: set from _BINARY_OPERATORS below)."""

    __hash__ = None

    def __neg__(self):
        return self.tracer.unary("negative", self)

    def __pos__(self):
        return self.tracer.unary("positive", self)

    def __abs__(self):
        return self.tracer.unary("absolute", self)

    def __invert__(self):
        return self.tracer.unary("invert", self)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of the value (ep.ops' composite ops read it to check their arguments)."""
        return self.data_type.dtype

    def astype(self, dtype) -> Traced:
        """self cast to dtype (ep.ops.unary("cast", self, dtype=dtype))."""
        return self.tracer.unary("cast", self, dtype=dtype)

    def _reduction(name: str):  # noqa: N805 - a helper run in the class body
        def method(self, *args, **kwargs):
            from ep.ops import reduce

            return getattr(reduce, name)(self, *args, **kwargs)

        method.__name__ = name
        method.__doc__ = f"ep.ops.{name}(self, ...) (dim or axis, keepdim or keepdims, dtype): the fused function's last step."
        return method

    # The reductions whose method means the same in NumPy and torch (max, min, var and std do not).
    sum, prod, mean, any, all, argmax, argmin = map(_reduction, ("sum", "prod", "mean", "any", "all", "argmax", "argmin"))
    del _reduction

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy's ufuncs by their names, which ep.ops takes as aliases (np.exp(x), np.maximum(x, 0)).
        if method != "__call__" or kwargs or ufunc.nin not in (1, 2):
            raise TypeError(f"{self.name}: numpy.{ufunc.__name__}.{method} with {sorted(kwargs)} is not traced by ep.fuse; call it with arrays only")
        # A 0-d array (a closed-over one, or the one NumPy made of a scalar on the left of a
        # comparison, np.float32(0.5) < x) is a constant that each call reads (operand).
        try:
            return (self.tracer.unary if ufunc.nin == 1 else self.tracer.binary)(ufunc.__name__, *inputs)
        except ValueError as error:  # an op name ep does not have
            raise TypeError(f"{self.name}: numpy.{ufunc.__name__} has no ep op to fuse ({error})") from None

    def clip(self, min=None, max=None) -> Traced:
        """self clipped to [min, max] (np.clip: NaN stays NaN; either bound may be None)."""
        if min is None and max is None:
            raise TypeError(f"{self.name}: clip needs min or max")
        clipped = self if min is None else self.tracer.binary("maximum", self, min)
        return clipped if max is None else self.tracer.binary("minimum", clipped, max)

    def __array_function__(self, func, types, args, kwargs):
        # NumPy's functions that are not ufuncs: np.clip is elementwise; the others are not traced.
        if func is np.clip:
            x, *bounds = args
            return self.tracer.operand(x).clip(*bounds, **{k.removeprefix("a_"): v for k, v in kwargs.items()})
        raise TypeError(
            f"{self.name}: numpy.{func.__name__} is not traced by ep.fuse: fn may use NumPy's ufuncs (np.exp), "
            "np.clip, ep.ops.unary, ep.ops.binary and ep.ops.where, whose ops are elementwise"
        )

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # torch's functions by their names, which ep.ops takes (torch.tanh(x), torch.maximum(x, y)).
        name = getattr(func, "__name__", repr(func))
        value = next(a for a in args if isinstance(a, _Operators))
        for record, resolve in ((value.tracer.unary, as_unary_op), (value.tracer.binary, as_binary_op)):
            try:
                resolve(name)
            except ValueError:
                continue
            return record(name, *args, **(kwargs or {}))
        raise TypeError(f"{value.name}: torch.{name} is not traced by ep.fuse: no elementwise op of ep's has that name")

    def __getattr__(self, name: str):
        # Array attributes a fused function cannot have (x.sum(), x.T, x.shape): say why.
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self.name}.{name}: a traced value inside ep.fuse has no {name!r}; {_NOT_ELEMENTWISE} (it has dtype, astype, "
            "clip and Python's operators, and as its last step sum, prod, mean, any, all, argmax and argmin)"
        )

    def __ep_trace__(self, function: str, signature: inspect.Signature, args: tuple, kwargs: dict):
        return self.tracer.call(function, signature, args, kwargs)

    __bool__ = _refuse("bool() of", _CONTROL_FLOW)
    __float__ = _refuse("float() of", _SCALAR_MATH)
    __int__ = _refuse("int() of", _CONTROL_FLOW)
    __complex__ = _refuse("complex() of", _CONTROL_FLOW)
    __index__ = _refuse("using as an index", _CONTROL_FLOW)
    __len__ = _refuse("len() of", _NOT_ELEMENTWISE)
    __iter__ = _refuse("iterating over", _NOT_ELEMENTWISE)
    __getitem__ = _refuse("indexing", _NOT_ELEMENTWISE)
    __setitem__ = _refuse("assigning into", _NOT_ELEMENTWISE)
    __array__ = _refuse("numpy.asarray of", _CONTROL_FLOW)


# Python's operators on traced values, as the NumPy functions they call: each binary one also
# reflected (1 + x), the comparisons not (Python turns 1 < x into x > 1 itself).
_BINARY_OPERATORS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "power", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARISONS = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal", "ne": "not_equal"}


def _binary(name: str, reflected: bool = False):
    if reflected:
        return lambda self, other: self.tracer.binary(name, other, self)
    return lambda self, other: self.tracer.binary(name, self, other)


for _stem, _name in _BINARY_OPERATORS.items():
    setattr(_Operators, f"__{_stem}__", _binary(_name))
    setattr(_Operators, f"__r{_stem}__", _binary(_name, True))
for _stem, _name in _COMPARISONS.items():
    setattr(_Operators, f"__{_stem}__", _binary(_name))


class Traced(_Operators):
    """An array value inside a traced function: its node and DataType, named after the arguments it derives from."""

    def __init__(self, tracer: Tracer, node, data_type: DataType, name: str) -> None:
        check_size(node, tracer.sizes, f"ep.fuse: the expression of {name}")
        self.tracer, self.node, self.data_type, self.name = tracer, node, data_type, name

    @property
    def dtype(self) -> np.dtype:
        return self.data_type.dtype

    @property
    def promotion(self) -> object:
        """What NumPy's promotion sees: an array of this dtype (scalar.result_dtype reads .dtype)."""
        return self

    def __repr__(self) -> str:
        return f"<traced {self.data_type.value} array from {self.name}>"


class TracedReduction:
    """A fused function's result that is a reduction of a traced value: op over dim of node (in
    src), giving dst; nothing may follow it."""

    def __init__(self, op: ReduceOp, node, src: DataType, dst: DataType, dim, keepdim: bool, correction, name: str) -> None:
        self.op, self.node, self.src, self.dst = op, node, src, dst
        self.dim, self.keepdim, self.correction, self.name = dim, keepdim, correction, f"{op.value}({name})"

    def __repr__(self) -> str:
        return f"<traced {self.op.value} of {self.src.value} into {self.dst.value}>"

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"{self.name}: is a reduction's result; a reduction is the last step of a fused function (fuse what follows in a second one)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __pow__ = __rpow__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __abs__ = __array_ufunc__ = __array_function__ = __ep_trace__ = _refuse
    __bool__ = __float__ = __int__ = __index__ = __array__ = __getitem__ = _refuse
    __hash__ = None


class TracedScalar(_Operators):
    """A scalar argument (or constant) inside a traced function: it becomes a Scalar leaf in the
    dtype each op computes it in (NEP 50: a Python scalar is weak, a NumPy one typed)."""

    def __init__(self, tracer: Tracer, position: int | None, value: object, name: str) -> None:
        self.tracer, self.position, self.value, self.name = tracer, position, value, name

    @property
    def promotion(self) -> object:
        return self.value

    @property
    def data_type(self) -> DataType:
        return as_data_type(result_dtype(self.value, self.value), self.name)

    def __repr__(self) -> str:
        return f"<traced scalar {self.name}>"
