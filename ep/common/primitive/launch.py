"""A primitive's Launch declared once: its arguments in order, each with its role.

From the declaration (CuPy's ElementwiseKernel declares in_params and out_params the same way)
`declare` generates two methods, as dataclasses generates __init__:

- `Launch(stream, ...)`, the checked entry: the stream; each count; the plan (the primitive's
  `plan(...)` over its size and shape arguments, checked once and cached per value); each scalar
  in the primitive's dtype; each buffer's device, dtype, contiguity, size and writability
  (`storage`); and the overlap rule: an output that shares memory with an input without being
  exactly its elements is refused, unless the output declares that it reads that input's element
  before writing it (`reads_first`) or that it may hold the input (`holds`: a value every
  element written takes, as whole elements of the output), and no two outputs share memory;
- `launch_trusted(stream, ...)`, the same arguments for a caller that made those checks itself
  (ep.ops): the plan and the flat storage only (what is not a NumPy array is checked as storage,
  its size included: the memory a kernel reads is the buffer's, whatever its attributes say).

Both end in the primitive's own `run(stream, [plan,] ...)`: the arguments in declared order, the
plan's own arguments replaced by the plan, buffers as flat storage (float16 as its uint16 words).
`Launch.__source__` holds the generated code; help(Launch) shows the interface's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ep.common.jit import define
from ep.common.runtime.buffer import storage, trusted_storage
from ep.common.runtime.device import STREAM_TYPES, check_stream
from ep.common.runtime.once import cached_property
from ep.common.runtime.overlap import owner, refuse_overlap, refuse_straddle
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.scalar import SCALAR_TYPES, scalar_bits, scalar_value
from ep.common.runtime.validate import INT64_MAX, count as check_count


@dataclass(frozen=True)
class In:
    """An input buffer: its DataType (an expression, `self.src_dtype`) and the elements it must hold
    (an expression over the arguments before the buffers and `plan`). With scalar, a scalar value
    may stand for it (a binary op's operand): run then gets the value in dtype's compute dtype
    (launch_trusted takes it converted, by scalar_value), and the plan one more argument, a mask
    of which such inputs are scalars (bit k: the k-th)."""

    name: str
    dtype: str = "self.dtype"
    size: str = "count"
    scalar: bool = False


@dataclass(frozen=True)
class Out(In):
    """An output buffer; reads_first names the inputs it may be exactly (elementwise in place),
    holds the inputs it may hold anywhere (a value every element written takes: TensorFill's src)."""

    reads_first: tuple[str, ...] = ()
    holds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ins(In):
    """A sequence of `number` input buffers; dtype and size may use `i`, the buffer's position."""

    number: str = "arity"


@dataclass(frozen=True)
class Count:
    """An element count or size: an integer in [0, INT64_MAX]."""

    name: str


@dataclass(frozen=True)
class Scalar:
    """A scalar converted to a DataType (an expression): its value in the compute dtype, or with
    bits its element's bit pattern as an unsigned integer."""

    name: str
    dtype: str = "self.dtype"
    bits: bool = False


@dataclass(frozen=True)
class Attr:
    """Any other argument (dims, a permutation, an offset): the plan checks it, or run takes it;
    default, an expression, makes it optional (Gather's offset=0)."""

    name: str
    default: str | None = None


@dataclass(frozen=True)
class Declaration:
    args: tuple
    plan: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(arg.name for arg in self.args)

    @property
    def buffers(self) -> tuple[In, ...]:
        return tuple(arg for arg in self.args if isinstance(arg, In))

    @property
    def plan_keys(self) -> list[str]:
        """What the plan cache is keyed by: the plan's arguments, then the mask of scalar inputs
        (In(..., scalar=True)) if any."""
        return list(self.plan) + (["scalar_mask"] if any(arg.scalar for arg in self.buffers) else [])

    def run_args(self) -> list[str]:
        names = [name for name in self.names if name not in self.plan]
        return (["plan"] if self.plan else []) + names


def declare(*args, plan: tuple[str, ...] = ()) -> Declaration:
    """A Launch of these arguments, after the stream, in order; plan names the arguments that the
    primitive's plan(*plan) checks and plans (cached per value)."""
    names = [arg.name for arg in args]
    if len(set(names)) != len(names) or not set(plan) <= set(names):
        raise ValueError(f"declare: arguments {names} with plan {plan}: names must be distinct and include the plan's")
    for arg in args:
        if isinstance(arg, Out):
            for name in arg.reads_first + arg.holds:
                if not any(isinstance(a, In) and not isinstance(a, Out) and a.name == name for a in args):
                    raise ValueError(f"declare: {arg.name} names {name!r} in reads_first or holds, which is not an input")
    return Declaration(tuple(args), tuple(plan))


class Declared:
    """Base of a primitive with a declared launch: a subclass sets `launch = declare(...)` and
    defines run (and plan when it declares one); Launch and launch_trusted are made from it."""

    launch: Declaration

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        declaration = cls.__dict__.get("launch")
        if declaration is not None:
            # help(Launch) says what the interface's Launch does (ep/include/primitive).
            interface = next((base.__dict__["Launch"] for base in cls.__mro__[1:] if "Launch" in base.__dict__), None)
            for checked in (True, False):
                function = _generate(declaration, checked, getattr(interface, "__doc__", None))
                function.__module__, function.__qualname__ = cls.__module__, f"{cls.__qualname__}.{function.__name__}"
                setattr(cls, function.__name__, function)

    @cached_property
    def _plans(self) -> PlanCache:
        # Keyed by the caller's own size and shape arguments: a repeated launch checks nothing again.
        return PlanCache(self.plan, remember=len(type(self).launch.plan_keys))

    @cached_property
    def _stream_type(self) -> type:
        return STREAM_TYPES[self.device_type]


def _buffer_lines(arg: In, checked: bool) -> list[str]:
    writable = isinstance(arg, Out)
    if isinstance(arg, Ins):
        lines = [
            f"if isinstance({arg.name}, (str, bytes)) or not hasattr({arg.name}, '__len__') or not hasattr({arg.name}, '__getitem__'):",
            f"    raise TypeError(f'{arg.name}: {{type({arg.name}).__name__}} is not a sequence of buffers')",
            f"if len({arg.name}) != {arg.number}:",
            f"    raise ValueError(f'{arg.name}: has {{len({arg.name})}} buffers; expected {arg.number}={{{arg.number}}}')",
        ] if checked else []
        if checked:
            each = f"storage(b, f'{arg.name}[{{i}}]', self.device_type, {arg.dtype}, {arg.size}, {writable}, stream)"
        else:
            each = f"trusted_storage(b, f'{arg.name}[{{i}}]', {arg.dtype}, self.device_type, {arg.size}, stream)"
        return lines + [f"{arg.name} = [{each} for i, b in enumerate({arg.name})]"]
    if arg.scalar:
        lines = _buffer_lines(In(arg.name, arg.dtype, arg.size), checked)
        if not checked:
            return [f"if not {arg.name}_is_scalar:"] + [f"    {line}" for line in lines]
        convert = f"{arg.name} = scalar_value({arg.name}, {arg.name!r}, {arg.dtype})"
        return [f"if {arg.name}_is_scalar:", f"    {convert}", "else:"] + [f"    {line}" for line in lines]
    if checked:
        return [f"{arg.name} = storage({arg.name}, {arg.name!r}, self.device_type, {arg.dtype}, {arg.size}, {writable}, stream)"]
    # A flat NumPy array of the storage dtype is its own storage: no call.
    return [
        f"if type({arg.name}) is not ndarray or {arg.name}.ndim != 1 or {arg.name}.dtype is not {arg.dtype}.storage_dtype:",
        f"    {arg.name} = trusted_storage({arg.name}, {arg.name!r}, {arg.dtype}, self.device_type, {arg.size}, stream)",
    ]


def _overlap_lines(declaration: Declaration) -> list[str]:
    """Every output against every input and every later output, on the elements the launch uses."""
    lines = []
    buffers = declaration.buffers
    outputs = [b for b in buffers if isinstance(b, Out)]
    # NumPy arrays of different owners share no memory: the common case costs no call (an array
    # that owns its memory is its owner, inline; each buffer's owner is found once).
    owners = {b.name: f"{b.name}_owner" for b in buffers if not isinstance(b, Ins)}
    for b in buffers:
        if b.name in owners:
            lines.append(f"{owners[b.name]} = {b.name} if type({b.name}) is ndarray and {b.name}.base is None else owner({b.name})")
    for k, out in enumerate(outputs):
        for other in [b for b in buffers if not isinstance(b, Out)] + outputs[k + 1 :]:
            sides, loops = [], []
            for buffer in (other, out):
                if isinstance(buffer, Ins):
                    # One buffer of the sequence at a time, its position i_<name> in its size.
                    each, position = f"{buffer.name}_i", f"i_{buffer.name}"
                    loops.append(f"for {position}, {each} in enumerate({buffer.name}):")
                    sides.append((each, f"f'{buffer.name}[{{{position}}}]'", f"(lambda i: {buffer.size})({position})", f"owner({each})"))
                else:
                    sides.append((buffer.name, repr(buffer.name), buffer.size, owners[buffer.name]))
            (a, a_name, a_size, a_owner), (b, b_name, b_size, b_owner) = sides
            condition = f"{a_owner} is None or {a_owner} is {b_owner} or {b_owner} is None"
            if other.scalar:
                condition = f"not {other.name}_is_scalar and ({condition})"
            if other.name in out.holds:
                call = f"refuse_straddle({a}, {a_size}, {b}, {b_size}, {a_name}, {b_name})"
            else:
                call = f"refuse_overlap({a}, {a_size}, {b}, {b_size}, {a_name}, {b_name}, {other.name in out.reads_first})"
            lines += ["    " * depth + loop for depth, loop in enumerate(loops)]
            lines.append("    " * len(loops) + f"if {condition}: {call}")
    return lines


def _generate(declaration: Declaration, checked: bool, doc: str | None):
    body = []
    if checked:
        body += [
            "if type(stream) is not self._stream_type:",
            "    stream = check_stream(stream, self.device_type)",
        ]
        for arg in declaration.args:
            if isinstance(arg, Count):
                body += [
                    f"if type({arg.name}) is not int or not 0 <= {arg.name} <= INT64_MAX:",
                    f"    {arg.name} = check_count({arg.name}, {arg.name!r})",
                ]
    scalars = [arg.name for arg in declaration.buffers if arg.scalar]
    for name in scalars:
        # A NumPy array is never a scalar: the common case skips the isinstance.
        body.append(f"{name}_is_scalar = type({name}) is not ndarray and isinstance({name}, SCALAR_TYPES)")
    if declaration.plan:
        keys = declaration.plan_keys
        if scalars:
            body.append("scalar_mask = " + " + ".join(f"{1 << k} * {name}_is_scalar" for k, name in enumerate(scalars)))
        # The same objects as the last lookup's (PlanCache.last) are the same key.
        body += [
            "last = self._plans.last",
            f"if {' and '.join(f'last[{k}] is {key}' for k, key in enumerate(keys))}:",
            f"    plan = last[{len(keys)}]",
            "else:",
            f"    plan = self._plans.get({', '.join(keys)})",
        ]
    for arg in declaration.args:
        if isinstance(arg, Scalar):
            convert = "scalar_bits" if arg.bits else "scalar_value"
            body.append(f"{arg.name} = {convert}({arg.name}, {arg.name!r}, {arg.dtype})")
    for arg in declaration.buffers:
        body += _buffer_lines(arg, checked)
    if checked:
        body += _overlap_lines(declaration)
    body.append(f"return self.run(stream, {', '.join(declaration.run_args())})")
    name = "Launch" if checked else "launch_trusted"
    parameters = [arg.name if getattr(arg, "default", None) is None else f"{arg.name}={arg.default}" for arg in declaration.args]
    source = f"def {name}(self, stream, {', '.join(parameters)}):\n" + "".join(f"    {line}\n" for line in body)
    scope = {
        "storage": storage, "trusted_storage": trusted_storage, "check_stream": check_stream, "check_count": check_count,
        "INT64_MAX": INT64_MAX, "ndarray": np.ndarray, "scalar_bits": scalar_bits, "scalar_value": scalar_value,
        "refuse_overlap": refuse_overlap, "refuse_straddle": refuse_straddle, "owner": owner, "SCALAR_TYPES": SCALAR_TYPES,
    }
    function = define(source, name, scope)
    function.__source__ = source
    how = "Checks every argument (types, dtypes, sizes, device, stream, overlaps) first." if checked else (
        "Launch for a caller that made Launch's checks itself (ep.ops): the plan and flat storage only "
        "(a buffer that is not a NumPy array checked as storage, its size included)."
    )
    function.__doc__ = f"{doc.rstrip()}\n\n{how}" if doc else how
    return function
