"""Every ep.ops function on global tensors (ep.sbp.global_tensor), by one path (call): the op's
declaration (an OpRule, which ep.ops hands to ep.sbp) plans the call on metadata, with every check
its local call makes, before any rank touches a piece, empty or not; the ranks of the tensors'
own placement agree on the op, its arguments (however nested) and its plan's identity; then the
nd-signature that matches the inputs' SBPs, or else the one whose boxing moves the fewest bytes
(boxing.cost), is chosen, the inputs boxed to it, and the op run on this rank's pieces with the
physical attributes (ep.sbp.physical). sbp= asks for the result's nd-SBP (counted in the choice).
An op without a declaration is global too: its tensors boxed to broadcast, the local function run
on the whole arrays on every rank, its results kept broadcast (correct, if slow).
An error in a rank's local run (an index out of bounds in its piece) is shared: every rank raises it.
"""
from __future__ import annotations

import inspect
from typing import Callable, Iterator

import numpy as np

from ep.common.runtime.caches import function_cache
from ep.common.runtime.device import GetDevice
from ep.sbp.boxing import cost
from ep.sbp.global_tensor import _AGREED, GlobalTensor, agree, device_name, world_comm
from ep.sbp.local import run_piece
from ep.sbp.sbp import NdSbp, PartialSum, broadcast, nd_sbp
from ep.sbp.signature import Plan, declared, nd_signatures, physical, rule, sbp_of

# The local call's keywords a global call refuses (its result is new, on the default stream, its
# indices always checked, a gather's offset the SBP's), other than None (and check_bounds=True).
_LOCAL_ONLY = ("out", "stream", "check_bounds", "offset")


def global_tensors(**named: object) -> dict[str, GlobalTensor]:
    """named, after checking every one is a GlobalTensor on the first one's placement."""
    first = None
    for name, t in named.items():
        if type(t) is not GlobalTensor:
            raise TypeError(f"{name}: {type(t).__name__} is not a GlobalTensor; global ops take global tensors only (make one with ep.to_global)")
        if first is None:
            first = t
        elif t.placement != first.placement:
            raise ValueError(f"{name}: placed on {t.placement!r}, unlike {next(iter(named))} on {first.placement!r}; expected one placement")
    return named


def device_of(tensor: GlobalTensor):
    """The Device of tensor's placement (what the local op's rules take)."""
    return GetDevice(device_name(tensor.placement))


def _found(value: object) -> Iterator[GlobalTensor]:
    """The global tensors in value, however nested in lists, tuples and dicts."""
    if type(value) is GlobalTensor:
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _found(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _found(item)


def call(function: Callable, signature: inspect.Signature, args: tuple, kwargs: dict, *, name: str | None = None, label: str | None = None):
    """The ep.ops function's call (args and kwargs, as its signature binds them) on global tensors:
    a new global tensor (a tuple for several outputs). Collective on the communicator of the first
    global tensor among the arguments, however nested. name: the op's (function's own by default);
    label names the call in errors."""
    name = name or function.__name__
    label = label or f"ep.ops.{name}"
    tensors = list(_found((args, kwargs)))
    if not tensors:
        raise TypeError(f"sbp: {name} takes sbp= only with global tensors (ep.to_global); got sbp={kwargs.get('sbp')!r} and none")
    if _AGREED.get():  # inside a call the ranks agreed on already
        return _run(name, *_plan(function, name, signature.bind(*args, **kwargs)))
    arguments, planned, error = None, None, None
    try:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        planned = _plan(function, name, bound)
    except Exception as e:  # Python's refusal (an extra argument) or the op's: shared, so that no rank waits in agree
        error = e
    compared = None if arguments is None else {"function": label, **arguments, **(planned[0].agreed if planned else {})}
    agree(world_comm(tensors[0]._group.world), label, compared, error)
    token = _AGREED.set(True)
    try:
        return _run(name, *planned)
    finally:
        _AGREED.reset(token)


def _plan(function: Callable, name: str, bound: inspect.BoundArguments) -> tuple[Plan, NdSbp | None]:
    """(op name's Plan, the result's requested nd-SBP) for the bound call of function."""
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    for key in _LOCAL_ONLY:
        value = arguments.pop(key, None)
        if value is not None and not (key == "check_bounds" and value is True):
            raise _refusal(name, key, value)
    sbp = arguments.pop("sbp", None)
    op = declared(name)
    if op is None:
        plan = _broadcast_plan(function, bound, arguments)
    elif op.plan is None:
        raise TypeError(f"{name}: takes no global tensors")
    else:
        plan = op.plan(**arguments)
        # The shape rule too, before any rank touches a piece.
        op.shapes(**{n: t.shape for n, t in plan.tensors.items()}, **{k: _frozen(v) for k, v in plan.attrs.items()})
    first = next(iter(plan.tensors.values()))
    return plan, None if sbp is None else nd_sbp(sbp, len(first.placement.hierarchy))


def _refusal(name: str, key: str, value: object) -> Exception:
    if key in ("out", "stream"):
        return TypeError(f"{key}: {name} of global tensors makes a new global tensor on the default stream; got {key}={value!r}, expected None")
    if key == "check_bounds":
        return ValueError(f"check_bounds: {name} of global tensors always checks its indices; got check_bounds={value!r}")
    return ValueError(f"offset: {name} of global tensors takes each rank's offset from the SBP; expected offset=None")


def _frozen(value: object) -> object:
    """value with lists as tuples and arrays (a NumPy or torch dims=, dim=) as their values: the
    choice cache's key, and what the rules read."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if hasattr(value, "tolist") and hasattr(value, "shape") and not isinstance(value, (np.generic, type)):
        return _frozen(value.tolist())
    return value


def _summed(tensor: GlobalTensor) -> GlobalTensor:
    """tensor with its partial sums summed (boxed to broadcast there), in its own dtype: an op
    that computes it in another dtype casts each piece, and no partial sum passes a cast (int8
    pieces 100 and 100 are -56, which int32 pieces would make 200)."""
    sbp = tuple(broadcast if isinstance(s, PartialSum) else s for s in tensor.sbp)
    return tensor.to_global(sbp=sbp)


def _broadcast_plan(function: Callable, bound: inspect.BoundArguments, arguments: dict) -> Plan:
    """The plan of an op without a declaration: run function on every global tensor's whole array
    (boxed to broadcast; the function checks them, alike on every rank), its results broadcast."""
    tensors = global_tensors(**{f"tensor {i}": t for i, t in enumerate(_found(arguments))})

    def run(local, piece):
        whole = {id(t): local[n] for n, t in tensors.items()}
        for key in (*_LOCAL_ONLY, "sbp"):
            bound.arguments.pop(key, None)
        bound.arguments.update({k: _replaced(v, whole) for k, v in arguments.items()})
        return function(*bound.args, **bound.kwargs)

    return Plan(tensors, {}, None, run=run)


def _replaced(value: object, whole: dict) -> object:
    """value with each global tensor in it (however nested) replaced by whole[id(tensor)]."""
    if type(value) is GlobalTensor:
        return whole[id(value)]
    if isinstance(value, (list, tuple)):
        return type(value)(_replaced(v, whole) for v in value)
    if isinstance(value, dict):
        return {k: _replaced(v, whole) for k, v in value.items()}
    return value


def _run_broadcast(plan: Plan, requested: NdSbp | None):
    """An undeclared op's plan, once the ranks agreed: box to broadcast, run, keep broadcast."""
    first = next(iter(plan.tensors.values()))
    group = first._group
    everywhere = (broadcast,) * len(first.placement.hierarchy)
    local = {n: t.to_global(sbp=everywhere).to_local() for n, t in plan.tensors.items()}
    result = _shared(first, lambda: plan.run(local, None))
    several = isinstance(result, tuple)
    results = tuple(GlobalTensor(r, group, everywhere, tuple(r.shape)).to_global(sbp=requested) for r in (result if several else (result,)))
    return _like(result, results) if several else results[0]


def _run(name: str, plan: Plan, requested: NdSbp | None):
    """The planned call, once the ranks agreed: choose, box, run this rank's pieces, and wrap."""
    if plan.out_dtype is None:
        return _run_broadcast(plan, requested)
    tensors = {n: _summed(t) if n in plan.casts else t for n, t in plan.tensors.items()}
    first = next(iter(tensors.values()))
    group, hierarchy = first._group, first.placement.hierarchy
    attrs = {k: _frozen(v) for k, v in plan.attrs.items()}
    several = isinstance(plan.out_dtype, tuple)
    dtypes = plan.out_dtype if several else (plan.out_dtype,)
    sig = choose(name, tensors, attrs, dtypes[0], requested)
    kw = {**{n: t.shape for n, t in tensors.items()}, **attrs}
    piece = physical(name, sig, hierarchy, group.index, **kw)
    local = {n: t.to_global(sbp=sbp_of(sig, n)).to_local() for n, t in tensors.items()}
    device = device_name(first.placement)
    run = plan.run or (lambda local, piece: run_piece(name, local, piece, np.dtype(dtypes[0]), device, **plan.options))
    result = _shared(first, lambda: run(local, piece))
    shapes = rule(name).shapes(**kw)
    outs = [n for n in shapes if n == "out" or n.startswith("out[")]
    results = tuple(GlobalTensor(r, group, sbp_of(sig, o), shapes[o]).to_global(sbp=requested) for o, r in zip(outs, result if several else (result,)))
    return _like(result, results) if several else results[0]


def _like(result: tuple, results: tuple) -> tuple:
    """results as the local result's kind of tuple: a named tuple (cummax's) keeps its names."""
    return result._make(results) if hasattr(result, "_make") else results


@function_cache("plans")
def _choose(name: str, hierarchy: tuple[int, ...], kw: tuple, sbps: tuple, itemsizes: tuple, out_itemsize: int, requested, bools: tuple = ()):
    """The nd-signature for inputs laid out by sbps (in kw's input order) and the result's requested
    nd-SBP (or None): one they match as they are, else the one of least boxing cost; never one that
    makes a partial sum of a tensor named in bools (a sum of bools is no count)."""
    kw = dict(kw)
    candidates = [sig for sig in nd_signatures(name, hierarchy, **kw) if not any(isinstance(s, PartialSum) for n in bools for s in sbp_of(sig, n))]
    names = [n for n, _ in sbps]
    for sig in candidates:
        if all(sbp_of(sig, n) == s for n, s in sbps) and (requested is None or requested == sbp_of(sig, "out")):
            return sig
    return min(candidates, key=lambda sig: signature_cost(name, hierarchy, kw, dict(sbps), dict(zip(names, itemsizes)), out_itemsize, requested, sig))


def signature_cost(name: str, hierarchy, kw: dict, sbps: dict, itemsizes: dict, out_itemsize: int, requested, sig) -> float:
    """The bytes boxing moves to run op name under the nd-signature sig: each input from sbps[n] to
    sig's, and the result from sig's to requested (when not None)."""
    shapes = rule(name).shapes(**kw)
    total = sum(cost(shapes[n], itemsizes[n], s, sbp_of(sig, n), hierarchy) for n, s in sbps.items())
    if requested is not None:
        total += cost(shapes["out"], out_itemsize, sbp_of(sig, "out"), requested, hierarchy)
    return total


def choose(name: str, tensors: dict[str, GlobalTensor], attrs: dict, out_dtype: np.dtype, requested: NdSbp | None = None):
    """The nd-signature op name runs under for these global inputs (see _choose)."""
    first = next(iter(tensors.values()))
    kw = tuple((n, t.shape) for n, t in tensors.items()) + tuple((k, _frozen(v)) for k, v in attrs.items())
    sbps = tuple((n, t.sbp) for n, t in tensors.items())
    itemsizes = tuple(t.dtype.itemsize for t in tensors.values())
    bools = tuple(n for n, t in tensors.items() if t.dtype == np.bool_)
    return _choose(name, first.placement.hierarchy, kw, sbps, itemsizes, np.dtype(out_dtype).itemsize, requested, bools)


def _shared(first: GlobalTensor, run: Callable[[], object]):
    """run() on this rank's pieces, with its error (an index out of bounds in its piece, a value its
    dtype cannot hold where other ranks' pieces are empty) raised on every rank of first's
    placement, so that no rank waits on another."""
    error, out = None, None
    try:
        out = run()
        # A CUDA launch reports a bad index at its stream's Sync: here, so that every rank agrees on it.
        GetDevice(device_name(first.placement)).default_stream.Sync()
    except Exception as e:  # any error (an OverflowError too): shared, so that no rank waits in agree
        error = e
    agree(first._group.comm, "the op on this rank's pieces", {}, error)
    return out
