"""ElementwiseFused on every device: New's resolution of an expression, Launch's checks and plan,
and what a device supplies.

New resolves the caller's tree (ep.include.primitive.elementwise_fused) into a resolved one of
nested tuples that says each node's dtypes and attributes (so it keys caches exactly, -0.0 apart
from 0.0), and fused_formula.py composes it into one scalar function per device. A Launch plans
the arguments' dims as Where does (simplified together, broadcast strides per argument) and says
for each argument how a kernel reads it (its "kind"), which keys the device kernel: a new shape of
the same kinds compiles nothing.
"""
from __future__ import annotations

import abc
import math
import sys
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from ep.common.math.binary_functor import binary_attrs, binary_dst_dtype
from ep.common.math.nd_index_offset_helper import broadcast_strides, contiguous_strides
from ep.common.math.unary_functor import unary_attrs, unary_dst_dtypes
from ep.common.primitive.broadcast import broadcast_shape, simplify_broadcast_dims
from ep.common.primitive.factory import GenericFactory
from ep.common.primitive.fused_formula import MAX_ARITY, children, compose_formula, node_dtype
from ep.common.primitive.sample import Sample, values, zeros
from ep.common.runtime import validate
from ep.common.runtime.buffer import storage
from ep.common.runtime.overlap import refuse_overlap
from ep.common.runtime.data_type import ALL_TYPES, DataType, as_data_type
from ep.common.runtime.device import DeviceType, STREAM_TYPES, check_stream
from ep.common.runtime.once import cached_property
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.scalar import scalar_value
from ep.include.primitive.binary_op import BinaryOp, as_binary_op
from ep.include.primitive.elementwise_fused import (
    NODE_TYPES, Binary, Cast, ElementwiseFused, ElementwiseFusedFactory, Input, Scalar, Unary, Where,
)
from ep.include.primitive.unary_op import UnaryOp, as_unary_op

# Launch's sequences, tested by type first (isinstance, on the slow path, admits their subclasses).
_SEQUENCES = (tuple, list)
# How a kernel reads an argument: the output's own elements (flat), a row of its own along the
# output's innermost dim (row), one value per output row (column: broadcast along it), a value (scalar).
FLAT, ROW, COLUMN, SCALAR = "flat", "row", "column", "scalar"


# An expression's bounds. Resolving and composing it walk it as a tree, where a value used twice is
# walked twice (a Newton step x * (2 - d * x) doubles the tree), and recursively: past these a walk
# takes exponential time or overflows Python's stack, and the kernel's compile grows with the tree.
MAX_TREE_NODES = 1 << 16
MAX_DEPTH = 200


def measure(node: object, sizes: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(nodes as a tree, depth) of an expression node, in time linear in its distinct nodes (sizes:
    by id(node), what is known already; filled in). Not a node: (0, 0)."""
    if type(node) not in NODE_TYPES:
        return 0, 0
    stack, entered = [node], set()
    while stack:
        top = stack[-1]
        if id(top) in sizes:
            stack.pop()
            continue
        operands = [child for child in vars(top).values() if type(child) in NODE_TYPES]
        missing = [child for child in operands if id(child) not in sizes]
        if missing:
            # A node met again before its operands are measured is its own operand's operand.
            if id(top) in entered or any(id(child) in entered for child in missing):
                raise TypeError(f"expression: {type(top).__name__} node is its own operand (a cycle); expected a tree or a DAG")
            entered.add(id(top))
            stack.extend(missing)
            continue
        stack.pop()
        measured = [sizes[id(child)] for child in operands]
        sizes[id(top)] = (1 + sum(m[0] for m in measured), 1 + max((m[1] for m in measured), default=0))
    return sizes[id(node)]


def check_size(node: object, sizes: dict[int, tuple[int, int]], name: str) -> None:
    """ValueError naming name when the expression node exceeds MAX_TREE_NODES or MAX_DEPTH."""
    tree, depth = measure(node, sizes)
    if tree > MAX_TREE_NODES or depth > MAX_DEPTH:
        raise ValueError(
            f"{name}: has {tree} nodes as a tree (a value counted once per use) and depth {depth}; expected at most "
            f"{MAX_TREE_NODES} and {MAX_DEPTH} (split it: fuse one part, pass its result to another)"
        )


def resolve_fused(expression: object, dtypes: Sequence[object]) -> tuple[tuple, tuple[DataType, ...]] | None:
    """(resolved outputs, argument DataTypes), or None where an op does not support its operands'
    dtype. TypeError names what is malformed: a node of another type, an argument index out of
    range or used both as Input and Scalar, an argument no leaf reads, operands of two dtypes."""
    outputs = expression if isinstance(expression, tuple) else (expression,)
    if not outputs:
        raise TypeError("expression: has no outputs")
    dtypes = tuple(as_data_type(dtype, f"dtypes[{i}]") for i, dtype in enumerate(dtypes))
    for name, count in (("dtypes", len(dtypes)), ("expression", len(outputs))):
        if count > MAX_ARITY:
            raise ValueError(f"{name}: {count} {'arguments' if name == 'dtypes' else 'outputs'}; at most {MAX_ARITY} are supported")
    sizes: dict[int, tuple[int, int]] = {}
    for position, node in enumerate(outputs):
        check_size(node, sizes, "expression" if len(outputs) == 1 and not isinstance(expression, tuple) else f"expression[{position}]")
    roles: dict[int, type] = {}
    resolved = []
    for position, node in enumerate(outputs):
        name = "expression" if len(outputs) == 1 and not isinstance(expression, tuple) else f"expression[{position}]"
        found = _resolve(node, dtypes, roles, name)
        if found is None:
            return None
        if found[0] == "scalar":
            raise TypeError(f"{name}: is a Scalar; an output must depend on an Input (it has the broadcast shape)")
        resolved.append(found)
    unread = [i for i in range(len(dtypes)) if i not in roles]
    if unread:
        raise TypeError(f"dtypes: argument {unread[0]} ({dtypes[unread[0]].value}) is read by no Input or Scalar of the expression")
    if Input not in roles.values():
        raise TypeError("expression: reads no Input; the output's shape is the broadcast of its array arguments")
    return tuple(resolved), dtypes


def _resolve(node: object, dtypes: tuple[DataType, ...], roles: dict[int, type], name: str) -> tuple | None:
    """The resolved form of node (None: unsupported dtype), its arguments' roles recorded."""
    kind = type(node)
    if kind not in NODE_TYPES:
        expected = ", ".join(t.__name__ for t in NODE_TYPES)
        raise TypeError(f"{name}: {node!r} is not an expression node; expected one of {expected}")
    if kind in (Input, Scalar):
        index = node.index
        if type(index) is not int or not 0 <= index < len(dtypes):
            raise TypeError(f"{name}: {node!r} names no argument; expected an index in [0, {len(dtypes)})")
        if roles.setdefault(index, kind) is not kind:
            raise TypeError(f"{name}: argument {index} is read both as Input and as Scalar")
        return ("input" if kind is Input else "scalar", index, dtypes[index])
    if kind is Where:
        children = [_resolve(c, dtypes, roles, f"{name}.{field}") for c, field in ((node.condition, "condition"), (node.x, "x"), (node.y, "y"))]
        if None in children:
            return None
        condition, x, y = children
        if node_dtype(condition) is not DataType.kBool:
            raise TypeError(f"{name}.condition: has dtype {node_dtype(condition).value}; expected bool")
        _same_dtype(name, ("x", x), ("y", y))
        return ("where", node_dtype(x), condition, x, y)
    if kind is Binary:
        op = as_binary_op(node.op)
        a, b = _resolve(node.a, dtypes, roles, f"{name}.a"), _resolve(node.b, dtypes, roles, f"{name}.b")
        if a is None or b is None:
            return None
        src = _same_dtype(name, ("a", a), ("b", b))
        dst = binary_dst_dtype(op, src)
        if dst is None:
            return None
        return ("binary", op, src, dst, binary_attrs(op, src, node.attr0, node.attr1), a, b)
    x = _resolve(node.x, dtypes, roles, f"{name}.x")
    if x is None:
        return None
    src = node_dtype(x)
    if kind is Cast:
        op, dst, attr0, attr1 = UnaryOp.kCast, as_data_type(node.dtype, f"{name}.dtype"), None, None
    else:
        op, attr0, attr1 = as_unary_op(node.op), node.attr0, node.attr1
        if op is UnaryOp.kCast:
            raise TypeError(f"{name}: kCast needs a destination dtype; write Cast(x, dtype)")
        choices = unary_dst_dtypes(op, src)
        if not choices:
            return None
        dst = choices[0]
    return ("unary", op, src, dst, unary_attrs(op, src, attr0, attr1), x)


def _same_dtype(name: str, *operands: tuple[str, tuple]) -> DataType:
    (first, a), (second, b) = operands
    if node_dtype(a) is not node_dtype(b):
        raise TypeError(
            f"{name}: {first} has dtype {node_dtype(a).value} and {second} {node_dtype(b).value}; "
            "expected one dtype (Cast one of them first)"
        )
    return node_dtype(a)


@dataclass(frozen=True)
class FusedPlan:
    """A launch: the output's simplified dims, each argument's element strides over them (None for
    a scalar) and kind, the elements each array argument holds, and the output's count."""

    dims: tuple[int, ...]
    strides: tuple[tuple[int, ...] | None, ...]
    kinds: tuple[str, ...]
    counts: tuple[int, ...]
    count: int

    @property
    def flat(self) -> bool:
        """Every array argument has the output's dims: one flat loop."""
        return ROW not in self.kinds and COLUMN not in self.kinds


def plan_fused(shapes: Sequence[tuple[int, ...] | None]) -> FusedPlan:
    """The plan of argument shapes (None for a scalar) that broadcast together (checked by the caller)."""
    arrays = [shape for shape in shapes if shape is not None]
    simplified = iter(simplify_broadcast_dims(*arrays))
    dims: tuple[int, ...] = ()
    per_argument = [None if shape is None else next(simplified) for shape in shapes]
    for s in per_argument:
        if s is not None:
            dims = broadcast_shape(dims, s)
    strides, kinds = [], []
    for s in per_argument:
        if s is None:
            strides.append(None)
            kinds.append(SCALAR)
            continue
        strides.append(broadcast_strides(s, dims))
        kinds.append(FLAT if s == dims else COLUMN if s[-1] == 1 and dims[-1] != 1 else ROW)
    counts = tuple(0 if shape is None else math.prod(shape) for shape in shapes)
    return FusedPlan(dims, tuple(strides), tuple(kinds), counts, math.prod(dims))


def output_strides(plan: FusedPlan) -> tuple[int, ...]:
    """The output's element strides over the plan's dims."""
    return contiguous_strides(plan.dims)


class ElementwiseFusedKernels(abc.ABC):
    """What a device supplies: a plan's launch and, for the PTX check, representative kernels."""

    @abc.abstractmethod
    def launcher(self, primitive: ElementwiseFusedImpl, plan: FusedPlan) -> Callable[..., None]:
        """run(stream, values, dsts) for a plan with count > 0 (values: each argument's checked
        storage or compute-dtype scalar); made once per plan."""

    @abc.abstractmethod
    def kernels(self, primitive: ElementwiseFusedImpl) -> Iterator[object]:
        """The kernels of primitive's expression for a flat plan and for a broadcast one, for the PTX check."""

    def all_kernels(self) -> Iterator[object]:
        for expression, dtypes in REPRESENTATIVE:
            resolved = resolve_fused(expression, dtypes)
            yield from self.kernels(ElementwiseFusedImpl(self.device_type, self, *resolved))


class ElementwiseFusedImpl(ElementwiseFused):
    def __init__(self, device_type: DeviceType, kernels: ElementwiseFusedKernels, outputs: tuple, dtypes: tuple[DataType, ...]) -> None:
        self.device_type = device_type
        self.outputs, self.dtypes = outputs, dtypes
        self.dst_dtypes = tuple(node_dtype(node) for node in outputs)
        self.scalars = frozenset(i for node in outputs for i in scalar_indices(node))
        self._kernels = kernels
        self._stream_type = STREAM_TYPES[device_type]
        self._plans: PlanCache[tuple[FusedPlan, Callable | None]] = PlanCache(self._plan)
        # Per argument: a Scalar's?, its dtype, its name in errors (made once: a launch is microseconds).
        self._arguments = tuple((i in self.scalars, dtype, f"args[{i}]") for i, dtype in enumerate(dtypes))
        self._outputs = tuple((dtype, f"dsts[{j}]") for j, dtype in enumerate(self.dst_dtypes))
        # The device's kernels of this expression, by the argument kinds of their plans (a device's key).
        self.device_kernels: dict[tuple, object] = {}

    @cached_property
    def formula(self) -> Callable:
        """The expression as one scalar function of the arguments (storage elements of Inputs,
        compute values of Scalars) giving a tuple of the outputs' storage values."""
        return compose_formula(self.outputs, self.dtypes, self.device_type)

    def Launch(self, stream, args, arg_dims, dsts) -> None:
        if type(stream) is not self._stream_type:
            stream = check_stream(stream, self.device_type)
        n = len(self.dtypes)
        if not (type(args) in _SEQUENCES and type(arg_dims) in _SEQUENCES and type(dsts) in _SEQUENCES and len(args) == len(arg_dims) == n and len(dsts) == len(self.outputs)):
            for name, given, expected in (("args", args, n), ("arg_dims", arg_dims, n), ("dsts", dsts, len(self.outputs))):
                if not isinstance(given, (tuple, list)) or len(given) != expected:
                    got = f"{len(given)} entries" if isinstance(given, (tuple, list)) else repr(type(given).__name__)
                    raise TypeError(f"{name}: expected a tuple or list of {expected} entries; got {got}")
        plan, run = self._plans.get(*arg_dims)  # unpacked: a key of two levels is exact_key's fast path
        device = self.device_type
        values = [
            scalar_value(arg, name, dtype) if scalar else storage(arg, name, device, dtype, count, stream=stream)
            for arg, (scalar, dtype, name), count in zip(args, self._arguments, plan.counts)
        ]
        outs = [storage(d, name, device, dtype, plan.count, writable=True, stream=stream) for d, (dtype, name) in zip(dsts, self._outputs)]
        self._refuse_overlaps(values, plan, outs)
        if run is not None:
            run(stream, values, outs)

    def _refuse_overlaps(self, values: list, plan: FusedPlan, outs: list) -> None:
        """The overlap rule of declared launches (launch.py), by hand for arguments that are
        buffers or scalars by position: a dst may be exactly an argument (the kernel loads every
        argument's element before it stores the outputs'), never part of one or of another dst."""
        for j, out in enumerate(outs):
            for (scalar, _, name), value, count in zip(self._arguments, values, plan.counts):
                if not scalar:
                    refuse_overlap(value, count, out, plan.count, name, self._outputs[j][1], True)
            for k in range(j + 1, len(outs)):
                refuse_overlap(outs[k], plan.count, out, plan.count, self._outputs[k][1], self._outputs[j][1], False)

    def _plan(self, *arg_dims: object) -> tuple[FusedPlan, Callable | None]:
        """The plan and run of these dims, made after checking them: each array argument's dims
        valid, each scalar's (), and all broadcasting together."""
        shapes: list[tuple[int, ...] | None] = []
        for i, dims in enumerate(arg_dims):
            # Any number of dims: the limit holds after merging (below), as for the unfused ops.
            dims = validate.dims(dims, f"arg_dims[{i}]", sys.maxsize)
            if i in self.scalars:
                if dims:
                    raise ValueError(f"arg_dims[{i}]: argument {i} is a Scalar; expected () dims, got {dims}")
                shapes.append(None)
            else:
                shapes.append(dims)
        out: tuple[int, ...] = ()
        for i, shape in enumerate(shapes):
            if shape is not None:
                out = broadcast_shape(out, shape, ("the broadcast of the arguments before", f"arg_dims[{i}]"))
        plan = plan_fused(shapes)
        if len(plan.dims) > validate.MAX_NUM_DIMS:
            raise ValueError(
                f"arg_dims: {tuple(arg_dims)} broadcast to {out} in {len(plan.dims)} alternating dims after merging;"
                f" at most {validate.MAX_NUM_DIMS} are supported"
            )
        return plan, self._kernels.launcher(self, plan) if plan.count else None


def scalar_indices(node: tuple) -> Iterator[int]:
    """The argument indices the Scalar leaves of a resolved node read."""
    if node[0] == "scalar":
        yield node[1]
    for child in children(node):
        yield from scalar_indices(child)


class ElementwiseFusedFactoryImpl(GenericFactory, ElementwiseFusedFactory):
    primitive_type = ElementwiseFusedImpl

    def __init__(self, device_type: DeviceType, kernels: ElementwiseFusedKernels) -> None:
        super().__init__(device_type, kernels)
        kernels.device_type = device_type

    def New(self, expression, *dtypes) -> ElementwiseFused | None:
        return self._new(resolve_fused(expression, dtypes))

    def Combinations(self):
        # Open-keyed: any expression whose ops support the dtypes; listed once per dtype.
        for dtype in ALL_TYPES:
            yield None, (dtype,)

    def Samples(self, op, dtypes) -> Iterator[Sample]:
        """x + y of the dtype, flat and broadcast (the expressions are the caller's: this one
        stands for them)."""
        (dtype,) = dtypes
        for x_dims, y_dims in (((4,), (4,)), ((2, 3), (1, 3))):
            x, y = values(math.prod(x_dims), dtype, x_dims), values(math.prod(y_dims), dtype, y_dims)
            total = x + y
            args = {"args": [x, y], "arg_dims": [x_dims, y_dims], "dsts": [zeros(total.size, dtype)]}
            yield Sample((Binary(BinaryOp.kAdd, Input(0), Input(1)), dtype, dtype), args, {"dsts": [total.ravel()]})


# Expressions the PTX check compiles (flat and broadcast each): ep.fuse's workloads, float16
# rounding after each op, integer semantics and a select, and outputs of mixed dtypes (CUDA's flat
# kernel moves packs of the widest one's 16 bytes: float64's 2 lanes, float32's, float16's and
# bool's narrower packs beside it).
_x, _y, _z = Input(0), Input(1), Input(2)
_a = Binary(BinaryOp.kAdd, Binary(BinaryOp.kMul, _x, Scalar(3)), _y)
REPRESENTATIVE = (
    (Unary(UnaryOp.kRelu, Binary(BinaryOp.kAdd, Binary(BinaryOp.kMul, _x, _y), _z)), ("float32",) * 3),
    ((_a, Binary(BinaryOp.kSub, Unary(UnaryOp.kLog, _a), Unary(UnaryOp.kSqrt, _z))), ("float32",) * 4),
    (Unary(UnaryOp.kTanh, Binary(BinaryOp.kAdd, Binary(BinaryOp.kMul, _x, _y), _z)), ("float16",) * 3),
    (
        Where(Binary(BinaryOp.kGreaterThan, _x, Scalar(2)), Binary(BinaryOp.kFloorDiv, _x, Scalar(2)), Cast(_y, "int32")),
        ("int32", "uint8", "int32"),
    ),
    (
        (
            Cast(Binary(BinaryOp.kMul, _x, _x), "float64"),
            Binary(BinaryOp.kGreaterThan, _x, Cast(_y, "float32")),
            Cast(_y, "int8"),
        ),
        ("float32", "float16"),
    ),
    # Past fused_formula.GROUP arguments and outputs: the formula's grouped call and results.
    (tuple(Binary(BinaryOp.kAdd, Input(i), Input(i + 1)) for i in range(17)), ("float32",) * 18),
)
