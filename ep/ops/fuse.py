"""ep.fuse: several elementwise expressions of ep.ops in one kernel per device.

    step = ep.fuse(lambda x, y, z: ep.ops.unary("relu", x * y + z))
    out = step(x, y, z)          # one ElementwiseFused launch: reads x, y and z once, writes out once
    dot = ep.fuse(lambda x, y: ep.ops.sum(x * y, dim=-1))
    rows = dot(x, y)             # one ReduceFused launch: reads x and y once, writes only the sums

A call traces fn (trace.py) once per argument dtypes and kinds (array, or the scalar's promotion
kind) and device, into an ElementwiseFused primitive; shapes never enter the trace, so a new shape
compiles nothing new unless its broadcast pattern (which arguments are read along the output's
innermost dim) is new. The call takes what ep.ops functions take: NumPy, PyTorch, CuPy and numba
arrays, Python and NumPy scalars (NEP 50), NumPy broadcasting, any strides (a non-contiguous array
is copied first, as ep.ops do), out= (an array or a tuple), stream=. Global tensors go to
ep.sbp.global_ops.call (the expression's declaration: ep.ops.fuse_rules).
"""
from __future__ import annotations

import collections
import functools
import inspect
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ep.common.primitive.broadcast import broadcast_shape
from ep.common.primitive.operands import CPU, check_out, contiguous, device_of, given_out, stream_for, strided_out, through_stand_ins, unaliased
from ep.common.runtime.allocator import empty
from ep.common.runtime.buffer import plain
from ep.common.runtime.data_type import as_data_type
from ep.common.runtime.dlpack import from_dlpack, is_foreign, own, to_namespace
from ep.common.runtime.once import cached_property
from ep.common.runtime.plan_cache import PlanCache
from ep.common.runtime.scalar import is_scalar, promotion_key, scalar_value
from ep.include.primitive.elementwise_fused import NODE_TYPES, ElementwiseFusedFactory, Input, Scalar
from ep.include.primitive.primitive import NewPrimitive
from ep.include.primitive.reduce import ReduceOp
from ep.include.primitive.reduce_fused import ReduceFusedFactory
from ep.ops.arrays import namespace_of
from ep.ops.reduce import reduction_rule, run_stages
from ep.ops.trace import REDUCTIONS, ScalarSlot, Traced, TracedReduction, TracedScalar, Tracer
from ep.sbp import global_ops
from ep.sbp.global_tensor import GlobalTensor

# Each reduction's ep.ops function, by its op (a fused reduction of global tensors calls it).
OPS_OF = {op: name for name, op in REDUCTIONS.items()}

# Traces kept per fused function (argument dtypes and kinds, device); a program cycling through
# more traces them again.
MAX_TRACES = 64


@dataclass(frozen=True)
class _Trace:
    """What one trace made: the primitive, its arguments' sources (("array", call position) or a
    ScalarSlot), the call positions each output reads, whether fn returned one array, the
    outputs' nodes (the expression), and the calls' shape checks."""

    primitive: object
    sources: tuple
    reads: tuple[tuple[int, ...], ...]
    single: bool
    nodes: tuple
    shapes: PlanCache  # the arguments' shapes (None for a scalar) -> Fused._shapes', checked once
    reduction: TracedReduction | None = None  # fn's result when it ends with a reduction (a ReduceFused primitive)
    parts: tuple = ()  # where fn returns several reductions: each one's _Trace (this one has no primitive)
    rules: PlanCache | None = None  # the reduction's shape -> ep.ops' reduction_rule with the primitive first


def fuse(fn: Callable) -> Callable:
    """fn's elementwise expressions fused into one kernel: a callable taking fn's arguments, and
    out= and stream= keywords, giving what fn gives (an array or a tuple of arrays).

    fn takes arrays and scalars (by position, or by the names of its positional parameters) and
    returns one traced array or a tuple of them. It may use Python's operators (+ - * / // % ** -x
    abs(), < <= == != > >=, & | ^ ~ << >> with NumPy's meaning: / is true_divide, // floor_divide, %
    remainder, ** power), NumPy's ufuncs and torch's elementwise functions by name (np.exp(x),
    torch.tanh(x): each library's rule, as ep.ops takes the name), np.clip and x.clip,
    x.astype(dtype), ep.ops.unary, ep.ops.binary (any op, with attributes) and ep.ops.where, and
    ep.ops' elementwise composites (clamp, lerp, addcmul, addcdiv, nan_to_num, masked_fill);
    it may end with one of ep.ops' reductions of a traced value (sum, prod, mean, amax, amin, argmax,
    argmin, any, all, logsumexp, var, std, with their dim, keepdim, dtype and correction; or the
    methods x.sum(), prod, mean, any, all, argmax, argmin, which mean one thing in NumPy and torch), returned
    alone: the call is then one ReduceFused launch that reads the arguments once and writes only
    the reduced result (a tuple of several reductions of values of one shape: one launch each,
    out= a tuple; an array argument of another shape than the expression's is expanded to it
    first, and where the reduced dims are not one run every array argument is permuted first; on
    global tensors the elementwise part is fused on the pieces, then the reduction's global op runs).
    Results equal the unfused ep.ops chain's: the same dtype promotion (NEP 50), the
    same formulas and integer semantics, float16 rounded after each op. Python control flow on a
    traced value (if x > 0:, bool(), int(), len(), indexing) and ops that are not elementwise
    (ep.ops.gather, ...) raise TypeError. Outputs share one shape, the broadcast of the arrays they
    read. An expression may be 200 ops deep and 65,536 nodes as a tree (a value counted once per
    use: x = x * (2 - d * x) doubles it each step), and read up to 256 arguments (arrays and
    scalars, a closure's constants among them; 16 where it ends with a reduction) and give up to
    256 outputs; the op past a bound is a ValueError. A closed-over 0-d array is read at each call. Global
    tensors (all array arguments global, on one placement; no out= or stream=) give global
    tensors: the call runs on each rank's pieces where their SBPs allow the whole expression, else
    after boxing them to the layout that moves the fewest bytes.
    """
    return Fused(fn)


class Fused:
    """The callable ep.fuse returns (see fuse)."""

    def __init__(self, fn: Callable) -> None:
        if not callable(fn):
            raise TypeError(f"fn: {fn!r} is not callable")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._parameters = _positional_names(fn)
        self._traces: collections.OrderedDict = collections.OrderedDict()
        self._without_reduction = False  # _elementwise_part's: a reduction gives its operand
        self._lock = threading.Lock()

    def _positional(self, args: tuple, kwargs: dict) -> tuple:
        """args with kwargs (fn's parameters by name) in their positions: a trace takes them so."""
        try:
            bound = inspect.signature(self._fn).bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self.__name__}: {error}") from None
        if bound.kwargs:
            raise TypeError(f"{self.__name__}: keyword-only arguments {sorted(bound.kwargs)}: ep.fuse takes fn's arguments by position or by their positional names")
        return bound.args

    def _name(self, position: int) -> str:
        names = self._parameters
        return names[position] if position < len(names) else f"args[{position}]"

    def __call__(self, *args, out=None, stream=None, **kwargs):
        if kwargs:
            args = self._positional(args, kwargs)
        for arg in args:
            if type(arg) is GlobalTensor:
                trace = self.trace(args, global_ops.device_of(arg))
                if trace.reduction is not None or trace.parts:
                    # The elementwise part fused on the pieces (its SBP rules), then each reduction's global op.
                    if out is not None or stream is not None:
                        raise TypeError("out, stream: a fused call on global tensors takes neither")
                    from ep.ops import reduce as reductions

                    several = [part.reduction for part in trace.parts] or [trace.reduction]
                    values = self._elementwise_part(*args)
                    results = tuple(
                        getattr(reductions, OPS_OF[r.op])(
                            value, r.dim, keepdim=r.keepdim, **({"correction": r.correction} if r.op in (ReduceOp.kVar, ReduceOp.kStd) else {})
                        )
                        for r, value in zip(several, values if trace.parts else (values,))
                    )
                    return results if trace.parts else results[0]
                # The one global path (the expression's declaration: ep/ops/fuse_rules.py).
                return global_ops.call(Fused.__call__, _CALL, (self, *args), {"out": out, "stream": stream}, name="fuse", label="ep.fuse")
        # Each argument's value, its _kind and its shape (None for a scalar); NumPy arrays first,
        # with the fewest calls: a small fused call is mostly this loop and the launch's checks.
        values, key, arg_shapes, namespace, device = [], [], [], None, None
        for position, arg in enumerate(args):
            if type(arg) is np.ndarray:
                found = CPU
            elif is_scalar(arg):
                values.append(arg)
                key.append(_kind(arg))
                arg_shapes.append(None)
                continue
            else:
                if hasattr(type(arg), "__ep_trace__"):
                    return self._inlined(args, out, stream)
                name = self._name(position)
                if is_foreign(arg):
                    namespace = namespace_of(arg) if device is None else namespace
                    arg = from_dlpack(arg, name)
                found = device_of(arg, name)
            if device is None:
                device = found
            elif found.device_type is not device.device_type:
                raise TypeError(f"{self._name(position)}: is on {found.device_type.value}, the arguments before it on {device.device_type.value}; expected one device")
            values.append(arg)
            key.append(_kind(arg))
            arg_shapes.append(tuple(arg.shape))
        if device is None:
            raise TypeError("args: no array among the arguments; a fused call needs one (its result has their broadcast shape)")
        if out is not None and not (type(out) is np.ndarray and out.flags.c_contiguous):
            views = given_out(out)
            if strided_out(views):  # an out of any strides: written through C-contiguous stand-ins
                through_stand_ins(lambda written: self(*args, out=written, stream=stream), views, stream)
                return out
        trace = self._trace((tuple(key), device.device_type), values, device)
        stream = stream_for(device, stream)
        shape, shapes = trace.shapes.get(*arg_shapes)
        if trace.reduction is not None:
            return self._reduce(trace, values, shape, shapes, device, stream, out, namespace)
        if trace.parts:
            if out is not None and (not isinstance(out, tuple) or len(out) != len(trace.parts)):
                raise TypeError(f"out: expected a tuple of {len(trace.parts)} arrays, one per reduction; got {type(out).__name__}")
            results = tuple(
                self._reduce(part, values, *part.shapes.get(*arg_shapes), device, stream, o, namespace)
                for part, o in zip(trace.parts, out or (None,) * len(trace.parts))
            )
            return out if out is not None else results
        given = out
        outs = self._outs(out, trace, shape, device, stream)
        launch_args, arg_dims = [], []
        for source in trace.sources:
            if isinstance(source, ScalarSlot):
                value = source.constant() if source.position is None else values[source.position]
                name = repr(value) if source.position is None else self._name(source.position)
                if source.nonnegative and value < 0:
                    raise ValueError(f"{name}: integers to negative integer powers are not allowed (NumPy's power); use pow for OneFlow's rule or a float dtype")
                launch_args.append(scalar_value(value, name, source.dtype))
                arg_dims.append(())
                continue
            position = source[1]
            x = values[position]
            if not plain(x):
                x = contiguous(x, device, stream)
            for o in outs if given is not None else ():
                # Two NumPy arrays that own their memory cannot overlap: only views need the test.
                if x is o or type(x) is not np.ndarray or type(o) is not np.ndarray or x.base is not None or o.base is not None:
                    x = unaliased(x, o, device, stream, elementwise=shapes[position] == shape)
            launch_args.append(x)
            arg_dims.append(shapes[position])
        trace.primitive.Launch(stream, launch_args, arg_dims, outs)
        if given is not None:
            return given
        if namespace is not None:
            outs = [to_namespace(o, namespace) for o in outs]
        return outs[0] if trace.single else tuple(outs)

    def _inlined(self, args: tuple, out, stream):
        """A fused function called inside another's trace (ep.ops.clamp in ep.fuse): its fn traced there."""
        if out is not None or stream is not None:
            raise TypeError("out, stream: a fused function called inside ep.fuse takes neither; give them to the outer call")
        return self._fn(*args)

    @cached_property
    def _elementwise_part(self) -> Fused:
        """fn's elementwise part: fn with its final reduction's operand as the result."""
        part = Fused(self._fn)
        part._without_reduction = True
        return part

    def _reduce(self, trace: _Trace, values: list, shape: tuple[int, ...], shapes: dict, device, stream, out, namespace):
        """A call whose fn ends with a reduction: its dims and result as ep.ops' reductions make
        them, each array argument expanded to the expression's shape where it has another and
        permuted where the reduced dims are not one run and op's partials do not compose (var, std,
        float16 sums), then one ReduceFused launch (and a Reduce per further run of dims apart)."""
        from ep.common.primitive.operands import output
        from ep.ops.expand import expand
        from ep.ops.permute import permute

        reduction = trace.reduction
        order, stages, result_shapes = trace.rules.get(shape)
        _, src_dims, dst_dims = stages[0]
        result_shape = result_shapes[reduction.keepdim]
        given = out
        if type(out) is not np.ndarray:
            out = own(out, "out", writable=True)
        out = output(out, result_shape, reduction.dst, device, stream)
        launch_args = []
        for source in trace.sources:
            if isinstance(source, ScalarSlot):
                value = source.constant() if source.position is None else values[source.position]
                launch_args.append(scalar_value(value, repr(value) if source.position is None else self._name(source.position), source.dtype))
                continue
            x = values[source[1]]
            if shapes[source[1]] != shape:
                x = expand(x, shape, stream=stream)
            if order is not None:
                x = permute(x.reshape(shape) if len(x.shape) != len(shape) else x, order, stream=stream)
            x = contiguous(x, device, stream)
            launch_args.append(unaliased(x, out, device, stream))
        if len(stages) > 1:
            partial = empty(dst_dims, reduction.dst, device, stream)
            trace.primitive.Launch(stream, launch_args, src_dims, dst_dims, partial, reduction.correction)
            run_stages(stream, stages[1:], partial, out, reduction.dst, device, reduction.correction)
        else:
            trace.primitive.Launch(stream, launch_args, src_dims, dst_dims, out, reduction.correction)
        if given is not None:
            return given
        if namespace is not None:
            return to_namespace(out, namespace)
        return out

    def _shapes(self, reads: tuple, *arg_shapes: tuple | None) -> tuple[tuple[int, ...], dict[int, tuple[int, ...]]]:
        """The output shape and each array argument's (arg_shapes: each argument's, None for a
        scalar), for outputs that read the arguments at reads' positions; ValueError where they do
        not broadcast, or where an output reads arrays of a smaller broadcast."""
        shapes = {p: arg_shapes[p] for p in {p for output_reads in reads for p in output_reads}}
        shape: tuple[int, ...] = ()
        names: list[str] = []
        for p in sorted(shapes):
            before = f"the broadcast of {', '.join(names)}" if len(names) > 1 else names[0] if names else "()"
            shape = broadcast_shape(shape, shapes[p], (before, self._name(p)))
            names.append(self._name(p))
        for j, output_reads in enumerate(reads):
            own: tuple[int, ...] = ()
            for p in output_reads:
                own = broadcast_shape(own, shapes[p])
            if own != shape:
                raise ValueError(
                    f"output {j}: has shape {own} (the broadcast of {', '.join(self._name(p) for p in output_reads)}), the "
                    f"outputs' common shape is {shape}; ep.fuse writes outputs of one shape"
                )
        return shape, shapes

    def _outs(self, out, trace: _Trace, shape: tuple[int, ...], device, stream) -> list:
        """The output arrays: new ones, or out's (one array or a tuple, one per output) checked."""
        dtypes = trace.primitive.dst_dtypes
        if out is None:
            return [empty(shape, dtype, device, stream) for dtype in dtypes]
        outs = (out,) if trace.single and not isinstance(out, tuple) else out
        if not isinstance(outs, tuple) or len(outs) != len(dtypes):
            expected = "an array" if trace.single else f"a tuple of {len(dtypes)} arrays"
            raise TypeError(f"out: expected {expected}; got {type(out).__name__}")
        checked = []
        for j, (o, dtype) in enumerate(zip(outs, dtypes)):
            name = "out" if trace.single else f"out[{j}]"
            if type(o) is not np.ndarray:
                o = own(o, name, writable=True)
            checked.append(check_out(o, name, shape, dtype, device))
        return checked

    def trace(self, args: tuple, device) -> _Trace:
        """The trace for a call on device with arguments like args: scalars, and arrays or anything
        with their dtype (a global tensor)."""
        return self._trace((tuple(map(_kind, args)), device.device_type), list(args), device)

    def _trace(self, key: tuple, values: list, device) -> _Trace:
        found = self._traces.get(key)
        if found is not None:
            return found
        tracer = Tracer(tuple(self._name(p) for p in range(len(values))), without_reduction=self._without_reduction)
        traced = [
            tracer.scalar(p, value) if type(kind) is tuple else tracer.array(p, kind)
            for p, (value, kind) in enumerate(zip(values, key[0]))
        ]
        result = self._fn(*traced)
        if isinstance(result, tuple) and len(result) > 1 and all(isinstance(r, TracedReduction) for r in result):
            # Several reductions: one ReduceFused each, their operands of one shape (as outputs are).
            parts = tuple(self._made(tracer, r, values, device) for r in result)
            reads = tuple(part.reads[0] for part in parts)
            trace = _Trace(None, (), reads, False, (), PlanCache(functools.partial(self._shapes, reads)), None, parts)
        else:
            trace = self._made(tracer, result, values, device)
        with self._lock:
            self._traces[key] = trace
            if len(self._traces) > MAX_TRACES:
                self._traces.popitem(last=False)
        return trace

    def _made(self, tracer: Tracer, result, values: list, device) -> _Trace:
        """The trace of fn's result: its outputs' primitive, or one reduction's."""
        reduction = result if isinstance(result, TracedReduction) else None
        if reduction is not None:
            result = Traced(tracer, reduction.node, reduction.src, reduction.name)
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        for j, output in enumerate(outputs):
            if isinstance(output, TracedReduction):
                raise TypeError(f"{self.__name__}: output {j} is {output.name}; a fused function ending with reductions returns them alone")
            if not isinstance(output, Traced):
                what = "a scalar" if isinstance(output, TracedScalar) else f"{type(output).__name__}"
                raise TypeError(f"{self.__name__}: output {j} is {what}; fn must return traced arrays (computed from an array argument)")
        # The primitive's arguments: those the outputs read, renumbered in order.
        used = sorted({index for output in outputs for index in _leaves(output.node)})
        number = {old: new for new, old in enumerate(used)}
        nodes = tuple(_renumber(output.node, number) for output in outputs)
        sources = tuple(tracer.arguments[i] for i in used)
        dtypes = [source.dtype if isinstance(source, ScalarSlot) else as_data_type(values[source[1]].dtype) for source in sources]
        if reduction is None:
            primitive = NewPrimitive(ElementwiseFusedFactory, device, nodes, *dtypes)
        else:
            primitive = NewPrimitive(ReduceFusedFactory, device, reduction.op, nodes[0], reduction.dst, *dtypes)
        if primitive is None:
            kind = "ElementwiseFused" if reduction is None else f"ReduceFused of {reduction.op.value}"
            raise TypeError(f"{self.__name__}: {device.device_type.value} has no {kind} for {nodes} over {[d.value for d in dtypes]}")
        reads = tuple(
            tuple(sorted({tracer.arguments[i][1] for i in _leaves(output.node) if not isinstance(tracer.arguments[i], ScalarSlot)}))
            for output in outputs
        )
        rules = None if reduction is None else PlanCache(functools.partial(reduction_rule, primitive, reduction.op, device, reduction.dst, reduction.dim))
        return _Trace(primitive, sources, reads, single, nodes, PlanCache(functools.partial(self._shapes, reads)), reduction, (), rules)


# The global path's view of a call: fn's keyword arguments are in their positions by then (_positional).
_CALL = inspect.signature(Fused.__call__)
_CALL = _CALL.replace(parameters=[p for p in _CALL.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD])



def _kind(arg) -> object:
    """What a trace depends on of an argument: an array's dtype, a scalar's promotion kind (a tuple)."""
    if type(arg) is np.ndarray:
        return arg.dtype
    if is_scalar(arg):
        kind = promotion_key(arg)
        return ("scalar", type(kind), kind)
    return np.dtype(arg.dtype)


def _positional_names(fn: Callable) -> tuple[str, ...]:
    """fn's positional parameter names, for error messages (args[i] beyond them)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in parameters if p.kind in kinds)


def _leaves(node) -> set[int]:
    """The argument indices node's Input and Scalar leaves read."""
    if isinstance(node, (Input, Scalar)):
        return {node.index}
    return set().union(*(_leaves(child) for child in vars(node).values() if isinstance(child, NODE_TYPES)))


def _renumber(node, number: dict[int, int]):
    """node with its leaves' indices mapped by number."""
    if isinstance(node, (Input, Scalar)):
        return type(node)(number[node.index])
    fields = {name: _renumber(child, number) if isinstance(child, NODE_TYPES) else child for name, child in vars(node).items()}
    return type(node)(**fields)
