"""ep's contenders per workload: the ops layer, and a bare Launch of the primitive (NewPrimitive
once, then Launch), each with a fresh result and with a preallocated out=. A primitive or op that
does not exist yet is reported, not fatal."""
from __future__ import annotations

import importlib
import math
from typing import Callable

import numpy as np

import ep
from ep.bench.workloads import Workload

UNARY_OPS = {
    "relu": "kRelu", "exp": "kExp", "tanh": "kTanh", "gelu": "kGelu", "sigmoid": "kSigmoid", "cast": "kCast",
    "expm1": "kExpm1", "log": "kLog", "erf": "kErf", "silu": "kSilu", "softplus": "kSoftPlus", "mish": "kMish",
}
BINARY_OPS = {"add": "kAdd", "mul": "kMul", "less": "kLessThan"}


class Unavailable(Exception):
    """What a workload needs is not in ep (yet); the message says what."""


def _ops_function(name: str) -> Callable:
    try:
        ops = importlib.import_module("ep.ops")
    except ImportError as error:
        raise Unavailable(f"ep.ops does not import: {error}") from None
    fn = getattr(ops, name, None)
    if fn is None:
        raise Unavailable(f"ep.ops.{name} does not exist")
    return fn


def _primitive(factory_name: str, device: str, *args):
    factory = getattr(ep, factory_name, None)
    if factory is None:
        raise Unavailable(f"ep.{factory_name} does not exist")
    primitive = ep.NewPrimitive(factory, device, *args)
    if primitive is None:
        described = ", ".join(getattr(a, "name", None) or str(a) for a in args)
        raise Unavailable(f"NewPrimitive({factory_name}, {device}, {described}) is None")
    return primitive


def _enum_member(enum: type, name: str):
    member = getattr(enum, name, None)
    if member is None:
        raise Unavailable(f"{enum.__name__}.{name} does not exist")
    return member


def candidates(
    workload: Workload, device: str, inputs: dict, out, fresh: Callable[[], object]
) -> dict[tuple[str, bool], Callable | Unavailable]:
    """{(impl, with_out): fn} for impl "ep.ops" and "ep.Launch": each fn runs the workload once and
    returns its output, out when with_out, else a new array (fresh() makes the bare Launch's); an
    Unavailable in place of a fn says why it cannot run."""
    stream = ep.GetDevice(device).CreateStream()
    found: dict[tuple[str, bool], Callable | Unavailable] = {}
    for impl, builders in (("ep.ops", _OPS), ("ep.Launch", _LAUNCH)):
        for with_out in (False, True):
            if impl == "ep.ops":
                target = out if with_out else None
            else:
                target = (lambda: out) if with_out else fresh
            try:
                found[impl, with_out] = builders[workload.kind](workload, device, stream, inputs, target)
            except Unavailable as reason:
                found[impl, with_out] = reason
    return found


def _gather_dims(params_shape, axis: int, batch_dims: int) -> tuple[int, int, int, int]:
    """(batch, outer, gather, inner) sizes of params for a gather along axis."""
    return (
        math.prod(params_shape[:batch_dims]),
        math.prod(params_shape[batch_dims:axis]),
        params_shape[axis],
        math.prod(params_shape[axis + 1 :]),
    )


def _ops_gather(workload, device, stream, inputs, out):
    gather = _ops_function("gather")
    params, indices = inputs["params"], inputs["indices"]
    axis, batch_dims = workload.attrs["axis"], workload.attrs["batch_dims"]
    return lambda: gather(params, indices, axis, batch_dims, out=out)


# The _launch_* builders take `out`, a function giving the output buffer of each call.


def _launch_gather(workload, device, stream, inputs, out):
    params, indices = inputs["params"], inputs["indices"]
    _, outer, size, inner = _gather_dims(tuple(params.shape), workload.attrs["axis"], 0)
    primitive = _primitive("GatherFactory", device, params.dtype, indices.dtype)
    count = indices.size
    def run():
        o = out()
        primitive.Launch(stream, indices, count, params, outer, size, inner, o)
        return o

    return run


def _launch_batch_gather(workload, device, stream, inputs, out):
    params, indices = inputs["params"], inputs["indices"]
    attrs = workload.attrs
    batch, outer, size, inner = _gather_dims(tuple(params.shape), attrs["axis"], attrs["batch_dims"])
    primitive = _primitive("BatchGatherFactory", device, params.dtype, indices.dtype)
    count = indices.size // batch
    def run():
        o = out()
        primitive.Launch(stream, indices, count, params, batch, outer, size, inner, o)
        return o

    return run


def _ops_expand(workload, device, stream, inputs, out):
    expand, x, sizes = _ops_function("expand"), inputs["x"], workload.attrs["sizes"]
    return lambda: expand(x, sizes, out=out)


def _launch_expand(workload, device, stream, inputs, out):
    x = inputs["x"]
    primitive = _primitive("ExpandFactory", device, x.dtype)
    src_dims, dst_dims = tuple(x.shape), tuple(workload.attrs["sizes"])
    def run():
        o = out()
        primitive.Launch(stream, src_dims, x, dst_dims, o)
        return o

    return run


def _ops_repeat(workload, device, stream, inputs, out):
    repeat, x, repeats = _ops_function("repeat"), inputs["x"], workload.attrs["repeats"]
    return lambda: repeat(x, repeats, out=out)


def _launch_repeat(workload, device, stream, inputs, out):
    # A repeat r of a dim of size n is a new dim r in front of it, expanded: (1, n) -> (r, n).
    x = inputs["x"]
    primitive = _primitive("ExpandFactory", device, x.dtype)
    src_dims = tuple(d for n in x.shape for d in (1, n))
    dst_dims = tuple(d for n, r in zip(x.shape, workload.attrs["repeats"]) for d in (r, n))
    def run():
        o = out()
        primitive.Launch(stream, src_dims, x, dst_dims, o)
        return o

    return run


def _unary_primitive(workload, device):
    op = _enum_member(ep.UnaryOp, UNARY_OPS[workload.attrs["op"]])
    return op, _primitive("ElementwiseUnaryFactory", device, op, np.dtype(np.float32), workload.attrs["dtype"])


def _ops_unary(workload, device, stream, inputs, out):
    unary, x = _ops_function("unary"), inputs["x"]
    op, _ = _unary_primitive(workload, device)
    if workload.kind == "cast":
        dtype = workload.attrs["dtype"]
        return lambda: unary(op, x, dtype=dtype, out=out)
    return lambda: unary(op, x, out=out)


def _launch_unary(workload, device, stream, inputs, out):
    x = inputs["x"]
    _, primitive = _unary_primitive(workload, device)
    count = x.size
    def run():
        o = out()
        primitive.Launch(stream, x, o, count)
        return o

    return run


def _binary_op(workload):
    return _enum_member(ep.BinaryOp, BINARY_OPS[workload.attrs["op"]])


def _ops_binary(workload, device, stream, inputs, out):
    binary, a, b = _ops_function("binary"), inputs["a"], inputs["b"]
    op = _binary_op(workload)
    return lambda: binary(op, a, b, out=out)


def _launch_binary(workload, device, stream, inputs, out):
    a, b = inputs["a"], inputs["b"]
    primitive = _primitive(
        "BroadcastElementwiseBinaryFactory", device, _binary_op(workload), np.dtype(a.dtype), workload.attrs["dtype"]
    )
    a_dims, b_dims = tuple(a.shape), tuple(b.shape)
    def run():
        o = out()
        primitive.Launch(stream, a_dims, a, b_dims, b, o)
        return o

    return run


_OPS = {
    "gather": _ops_gather,
    "batch_gather": _ops_gather,
    "expand": _ops_expand,
    "repeat": _ops_repeat,
    "unary": _ops_unary,
    "cast": _ops_unary,
    "binary": _ops_binary,
}
_LAUNCH = {
    "gather": _launch_gather,
    "batch_gather": _launch_batch_gather,
    "expand": _launch_expand,
    "repeat": _launch_repeat,
    "unary": _launch_unary,
    "cast": _launch_unary,
    "binary": _launch_binary,
}
