"""ep's contenders per workload: the ops layer, and a bare Launch of the primitive (NewPrimitive
once, then Launch), each with a fresh result and with a preallocated out=; for a fused expression
(kind "fused") the ep.ops chain and ep.fuse's fused function (made once) instead. A primitive or op
that does not exist yet is reported, not fatal."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

import ep
from ep.bench.workloads import Workload

UNARY_OPS = {
    "relu": "kRelu", "exp": "kExp", "tanh": "kTanh", "gelu": "kGelu", "sigmoid": "kSigmoid", "cast": "kCast",
    "expm1": "kExpm1", "log": "kLog", "erf": "kErf", "silu": "kSilu", "softplus": "kSoftPlus", "mish": "kMish",
    "erfinv": "kErfInv",
}
BINARY_OPS = {
    "add": "kAdd", "mul": "kMul", "less": "kLessThan", "atan2": "kAtan2", "logaddexp": "kLogAddExp", "hypot": "kHypot",
}


class Unavailable(Exception):
    """What a workload needs is not in ep (yet); the message says what."""


def _ops_function(name: str) -> Callable:
    try:
        import ep.ops
    except ImportError as error:
        raise Unavailable(f"ep.ops does not import: {error}") from None
    fn = getattr(ep.ops, name, None)
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
    """{(impl, with_out): fn} for impl "ep.ops" and "ep.Launch" ("ep.ops" and "ep.fuse" for a fused
    expression): each fn runs the workload once and
    returns its output, out when with_out, else a new array (fresh() makes the bare Launch's); an
    Unavailable in place of a fn says why it cannot run."""
    stream = ep.GetDevice(device).CreateStream()
    found: dict[tuple[str, bool], Callable | Unavailable] = {}
    for impl, builders in (("ep.ops", _OPS), ("ep.Launch", _LAUNCH), ("ep.fuse", _FUSE)):
        if workload.kind not in builders:
            continue  # a fused expression has no one primitive to Launch; only it has ep.fuse
        for with_out in (False, True):
            if impl != "ep.Launch":
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


def _ops_on_x(name: str, attr: str) -> Callable:
    """The builder of the call ep.ops.<name>(x, workload.attrs[attr], out=out)."""

    def build(workload, device, stream, inputs, out):
        fn, x, arg = _ops_function(name), inputs["x"], workload.attrs[attr]
        return lambda: fn(x, arg, out=out)

    return build


def _ops_gather(workload, device, stream, inputs, out):
    gather = _ops_function("gather")
    params, indices = inputs["params"], inputs["indices"]
    axis, batch_dims = workload.attrs["axis"], workload.attrs["batch_dims"]
    return lambda: gather(params, indices, axis, batch_dims, out=out)


# The _launch_* builders take `out`, a function giving the output buffer of each call.


def _run(out: Callable[[], object], launch: Callable[[object], object]) -> Callable[[], object]:
    """A _launch_* builder's call: launch(o) into o = out(), this call's output buffer; returns o."""

    def run():
        o = out()
        launch(o)
        return o

    return run


def _launch_gather(workload, device, stream, inputs, out):
    params, indices = inputs["params"], inputs["indices"]
    _, outer, size, inner = _gather_dims(tuple(params.shape), workload.attrs["axis"], 0)
    primitive = _primitive("GatherFactory", device, params.dtype, indices.dtype)
    count = indices.size
    return _run(out, lambda o: primitive.Launch(stream, indices, count, params, outer, size, inner, o))


def _launch_batch_gather(workload, device, stream, inputs, out):
    params, indices = inputs["params"], inputs["indices"]
    attrs = workload.attrs
    batch, outer, size, inner = _gather_dims(tuple(params.shape), attrs["axis"], attrs["batch_dims"])
    primitive = _primitive("BatchGatherFactory", device, params.dtype, indices.dtype)
    count = indices.size // batch
    return _run(out, lambda o: primitive.Launch(stream, indices, count, params, batch, outer, size, inner, o))


def _launch_expand(workload, device, stream, inputs, out):
    x = inputs["x"]
    primitive = _primitive("ExpandFactory", device, x.dtype)
    if workload.kind == "expand":
        src_dims, dst_dims = tuple(x.shape), tuple(workload.attrs["sizes"])
    else:
        # A repeat r of a dim of size n is a new dim r in front of it, expanded: (1, n) -> (r, n).
        src_dims = tuple(d for n in x.shape for d in (1, n))
        dst_dims = tuple(d for n, r in zip(x.shape, workload.attrs["repeats"]) for d in (r, n))
    return _run(out, lambda o: primitive.Launch(stream, src_dims, x, dst_dims, o))


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
    return _run(out, lambda o: primitive.Launch(stream, x, o, count))


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
    return _run(out, lambda o: primitive.Launch(stream, a_dims, a, b_dims, b, o))


def _data_type(dtype):
    from ep.common.runtime.data_type import as_data_type

    return as_data_type(np.dtype(dtype))


def _launch_permute(workload, device, stream, inputs, out):
    x, dims = inputs["x"], workload.attrs["dims"]
    primitive = _primitive("PermuteFactory", device, len(x.shape))
    dtype, shape = _data_type(x.dtype), tuple(x.shape)
    return _run(out, lambda o: primitive.Launch(stream, dtype, len(shape), shape, x, dims, o))


def _torch_pad_widths(shape, pad):
    """torch's pad pairs (from the last dim backwards) as (before, after) per dim."""
    before, after = [0] * len(shape), [0] * len(shape)
    for pair in range(len(pad) // 2):
        before[-1 - pair], after[-1 - pair] = pad[2 * pair], pad[2 * pair + 1]
    return tuple(before), tuple(after)


def _ops_pad(workload, device, stream, inputs, out):
    pad, x, attrs = _ops_function("pad"), inputs["x"], workload.attrs
    return lambda: pad(x, attrs["pad"], attrs["value"], out=out)


def _launch_pad(workload, device, stream, inputs, out):
    x, attrs = inputs["x"], workload.attrs
    primitive = _primitive("ConstantPadFactory", device, _data_type(x.dtype))
    shape = tuple(x.shape)
    before, after = _torch_pad_widths(shape, attrs["pad"])
    value = attrs["value"]
    return _run(out, lambda o: primitive.Launch(stream, len(shape), shape, x, before, after, value, o))


def _ops_where(workload, device, stream, inputs, out):
    where = _ops_function("where")
    c, x, y = inputs["condition"], inputs["x"], inputs["y"]
    return lambda: where(c, x, y, out=out)


def _launch_where(workload, device, stream, inputs, out):
    c, x, y = inputs["condition"], inputs["x"], inputs["y"]
    from ep.common.runtime.validate import MAX_NUM_DIMS

    primitive = _primitive("WhereFactory", device, _data_type(np.bool_), _data_type(x.dtype), MAX_NUM_DIMS)
    dims = (x.size,)
    return _run(out, lambda o: primitive.Launch(stream, 1, dims, c, 1, dims, x, 1, dims, y, o))


def _ops_full(workload, device, stream, inputs, out):
    full = _ops_function("full")
    shape, value = workload.attrs["shape"], workload.attrs["value"]
    return lambda: full(shape, value, dtype=np.float32, device=device, out=out)


def _launch_full(workload, device, stream, inputs, out):
    primitive = _primitive("FillFactory", device, _data_type(np.float32))
    value = workload.attrs["value"]
    return _run(out, lambda o: primitive.Launch(stream, o, value, o.size))


def _ops_add_n(workload, device, stream, inputs, out):
    add_n, arrays = _ops_function("add_n"), list(inputs.values())
    return lambda: add_n(arrays, out=out)


def _ops_cat(workload, device, stream, inputs, out):
    cat, arrays = _ops_function("cat"), list(inputs.values())
    return lambda: cat(arrays, out=out)


def _ops_index_add(workload, device, stream, inputs, out):
    index_add, x, index, source = _ops_function("index_add"), inputs["x"], inputs["index"], inputs["source"]
    return lambda: index_add(x, 0, index, source, out=out)


def _launch_add_n(workload, device, stream, inputs, out):
    arrays = list(inputs.values())
    primitive = _primitive("AddFactory", device, _data_type(arrays[0].dtype))
    count = arrays[0].size
    return _run(out, lambda o: primitive.Launch(stream, arrays, len(arrays), o, count))


def _ops_one_hot(workload, device, stream, inputs, out):
    one_hot, indices, classes = _ops_function("one_hot"), inputs["indices"], workload.attrs["classes"]
    return lambda: one_hot(indices, classes, out=out)


def _launch_one_hot(workload, device, stream, inputs, out):
    indices, classes = inputs["indices"], workload.attrs["classes"]
    primitive = _primitive("OneHotFactory", device, _data_type(indices.dtype), _data_type(np.int64))
    count = indices.size
    return _run(out, lambda o: primitive.Launch(stream, indices, o, 1, 0, count, 0, classes))


def _ops_softmax(workload, device, stream, inputs, out):
    softmax, x = _ops_function("softmax"), inputs["x"]
    return lambda: softmax(x, -1, out=out)


def _launch_softmax(workload, device, stream, inputs, out):
    x = inputs["x"]
    primitive = _primitive("SoftmaxFactory", device, _data_type(x.dtype))
    cols = x.shape[-1]
    rows = x.size // cols
    return _run(out, lambda o: primitive.Launch(stream, rows, cols, x, o))


def _ops_matmul(workload, device, stream, inputs, out):
    matmul, a, b = _ops_function("matmul"), inputs["a"], inputs["b"]
    return lambda: matmul(a, b, out=out)


def _launch_matmul(workload, device, stream, inputs, out):
    a, b = inputs["a"], inputs["b"]
    n_ = _enum_member(ep.BlasTransposeType, "N")
    *batch, m, k = a.shape
    n = b.shape[-1]
    if workload.kind == "batch_matmul":
        primitive = _primitive("BatchMatmulFactory", device, _data_type(a.dtype), n_, n_)
        count = batch[0]
        return _run(out, lambda o: primitive.Launch(stream, count, m, n, k, 1.0, a, b, 0.0, o))
    primitive = _primitive("MatmulFactory", device, _data_type(a.dtype), n_, n_)
    return _run(out, lambda o: primitive.Launch(stream, m, n, k, 1.0, a, b, 0.0, o))


def _fused_outs(out):
    """out as the expression's outputs: W2's two are the rows of one (2, count) array."""
    return None if out is None else (tuple(out) if out.ndim == 2 and out.shape[0] == 2 else out)


def _ops_fused(workload, device, stream, inputs, out):
    unary, binary = _ops_function("unary"), _ops_function("binary")
    expr = workload.attrs["expr"]
    if expr == "W4":
        x, y = inputs.values()
        return lambda: ep.ops.sum(binary("mul", x, y), -1, out=out)
    a, b, c = inputs.values()
    if expr == "W1":
        return lambda: unary("relu", binary("add", binary("mul", a, b), c), out=out)
    if expr == "W3":
        return lambda: unary("tanh", binary("add", binary("mul", a, b), c), out=out)
    outs = (None, None) if out is None else _fused_outs(out)

    def w2():
        first = binary("add", binary("mul", a, 2), b, out=outs[0])
        return first, binary("sub", unary("log", first), unary("sqrt", c), out=outs[1])

    return w2


# The expressions as ep.fuse traces them (ep.ops' functions, operators, NumPy's ufuncs by name).
_FUSED_FNS = {
    "W1": lambda x, y, z: ep.ops.unary("relu", x * y + z),
    "W2": lambda x, y, z: (lambda a: (a, np.log(a) - np.sqrt(z)))(x * 2 + y),
    "W3": lambda X, row, col: np.tanh(X * row + col),
    "W4": lambda x, y: ep.ops.sum(x * y, dim=-1),
}


def _fuse(workload, device, stream, inputs, out):
    fused = ep.fuse(_FUSED_FNS[workload.attrs["expr"]])  # made once, as a program makes it
    args, outs = tuple(inputs.values()), _fused_outs(out)
    if outs is None:
        return lambda: fused(*args)
    return lambda: fused(*args, out=outs)


_OPS = {
    "gather": _ops_gather,
    "batch_gather": _ops_gather,
    "expand": _ops_on_x("expand", "sizes"),
    "repeat": _ops_on_x("repeat", "repeats"),
    "unary": _ops_unary,
    "cast": _ops_unary,
    "binary": _ops_binary,
    "permute": _ops_on_x("permute", "dims"),
    "pad": _ops_pad,
    "where": _ops_where,
    "full": _ops_full,
    "add_n": _ops_add_n,
    "cat": _ops_cat,
    "sum": _ops_on_x("sum", "axis"),
    "amax": _ops_on_x("amax", "axis"),
    "cumsum": _ops_on_x("cumsum", "axis"),
    "index_add": _ops_index_add,
    "one_hot": _ops_one_hot,
    "softmax": _ops_softmax,
    "matmul": _ops_matmul,
    "batch_matmul": _ops_matmul,
    "fused": _ops_fused,
}
_LAUNCH = {
    "gather": _launch_gather,
    "batch_gather": _launch_batch_gather,
    "expand": _launch_expand,
    "repeat": _launch_expand,
    "unary": _launch_unary,
    "cast": _launch_unary,
    "binary": _launch_binary,
    "permute": _launch_permute,
    "pad": _launch_pad,
    "where": _launch_where,
    "full": _launch_full,
    "add_n": _launch_add_n,
    "one_hot": _launch_one_hot,
    "softmax": _launch_softmax,
    "matmul": _launch_matmul,
    "batch_matmul": _launch_matmul,
}
_FUSE = {"fused": _fuse}
