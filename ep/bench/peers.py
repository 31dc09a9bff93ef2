"""The peers ep is measured against: NumPy and PyTorch on the CPU, CuPy and PyTorch on CUDA; for
issue 28's fused expressions also numexpr (CPU) and torch.compile.

Each peer runs each workload twice over: returning a fresh result, and writing into a
preallocated out= where its API has one (np.tile, np.pad, np.where, torch's repeat, pad and
one_hot, the batch gather by advanced indexing and torch.compile's functions have none: their
out= column is "not available").
"""
from __future__ import annotations

import importlib
from functools import partial
from typing import Callable

import numpy as np

from ep.bench.ep_calls import Unavailable
from ep.bench.workloads import Workload


def _module(name: str, hint: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise Unavailable(f"{name} is not installed ({hint})") from None


def torch_module():
    """PyTorch, or Unavailable."""
    return _module("torch", "pip install -e .[bench]")


def _no_out(out, what: str) -> None:
    if out is not None:
        raise Unavailable(f"{what} takes no out=")


def _batch_gather_rows(arange: Callable, inputs: dict, attrs: dict) -> Callable:
    """A batch gather along axis 1 by advanced indexing, whole rows per batch: the fastest way
    NumPy, CuPy and PyTorch users write it (take_along_axis or torch.gather go element by element)."""
    if attrs["axis"] != 1:
        raise Unavailable("the peer is written for axis 1")
    params, indices = inputs["params"], inputs["indices"]
    batch = arange(indices.shape[0])[:, None]
    return lambda: params[batch, indices]


def _array_api_call(xp, workload: Workload, inputs: dict, out) -> Callable:
    """The workload in NumPy's API, for NumPy itself and for CuPy; out None: a fresh result."""
    kind, attrs = workload.kind, workload.attrs
    if kind == "gather":
        params, indices, axis = inputs["params"], inputs["indices"], attrs["axis"]
        return lambda: xp.take(params, indices, axis=axis, out=out)
    if kind == "batch_gather":
        _no_out(out, "advanced indexing")
        return _batch_gather_rows(xp.arange, inputs, attrs)
    if kind in ("expand", "cast"):
        # The materialized expansion, or the cast: a copy with broadcasting or converting.
        src = xp.broadcast_to(inputs["x"], attrs["sizes"]) if kind == "expand" else inputs["x"]
        if out is None:
            dtype = attrs["dtype"] if kind == "cast" else src.dtype
            return lambda: src.astype(dtype)  # astype copies, also to the same dtype

        def copy():
            xp.copyto(out, src)
            return out

        return copy
    if kind == "repeat":
        _no_out(out, "tile")
        return lambda: xp.tile(inputs["x"], attrs["repeats"])
    if kind in _ARRAY_API_KINDS:
        return _ARRAY_API_KINDS[kind](xp, attrs, inputs, out)
    return _elementwise_call(xp, _ARRAY_API, workload, inputs, out)


def _torch_call(torch, workload: Workload, inputs: dict, out) -> Callable:
    kind, attrs = workload.kind, workload.attrs
    if kind == "gather":
        params, indices, axis = inputs["params"], inputs["indices"], attrs["axis"]
        return lambda: torch.index_select(params, axis, indices, out=out)
    if kind == "batch_gather":
        _no_out(out, "advanced indexing")
        return _batch_gather_rows(lambda n: torch.arange(n, device=inputs["indices"].device), inputs, attrs)
    if kind == "expand":
        x, shape = inputs["x"], attrs["sizes"]
        if out is None:
            return lambda: x.expand(*shape).contiguous()
        return lambda: out.copy_(x.expand(*shape))
    if kind == "repeat":
        _no_out(out, "Tensor.repeat")
        x, repeats = inputs["x"], attrs["repeats"]
        return lambda: x.repeat(*repeats)
    if kind == "cast":
        x = inputs["x"]
        if out is None:
            dtype = getattr(torch, attrs["dtype"].name)
            return lambda: x.to(dtype)
        return lambda: out.copy_(x)
    if kind in _TORCH_KINDS:
        return _TORCH_KINDS[kind](torch, attrs, inputs, out)
    return _elementwise_call(torch, _TORCH, workload, inputs, out)


def _fresh_or_out(fresh: Callable, into: Callable, out) -> Callable:
    """fresh() for a fresh result, else into(out), returning out."""
    if out is None:
        return fresh

    def run():
        into(out)
        return out

    return run


def _np_pad_widths(ndim: int, pad) -> list[tuple[int, int]]:
    widths = [(0, 0)] * ndim
    for pair in range(len(pad) // 2):
        widths[ndim - 1 - pair] = (pad[2 * pair], pad[2 * pair + 1])
    return widths


def _xp_softmax(xp, x, out):
    """exp(x - max) / sum over the last dim, as NumPy users write it (out: in place there)."""
    m = x.max(axis=-1, keepdims=True)
    out = xp.subtract(x, m, out=out)
    xp.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)
    return out


def _xp_fused(xp, expr: str, args: tuple, out):
    """W1-W3 in NumPy's API, in place where a user would write it so (one temporary at most)."""
    if expr == "W2":
        x, y, z = args
        a = xp.multiply(x, 2, out=None if out is None else out[0])
        a += y
        b = xp.log(a, out=None if out is None else out[1])
        b -= xp.sqrt(z)
        return (a, b) if out is None else out
    if expr == "W4":
        return (args[0] * args[1]).sum(axis=-1, out=out)
    t = xp.multiply(args[0], args[1], out=out)
    t += args[2]
    return xp.maximum(t, 0, out=t) if expr == "W1" else xp.tanh(t, out=t)


# This round's kinds in NumPy's API: fn(xp, attrs, inputs, out) -> the call.
_ARRAY_API_KINDS: dict[str, Callable] = {
    "permute": lambda xp, attrs, inputs, out: _fresh_or_out(
        lambda: xp.ascontiguousarray(inputs["x"].transpose(attrs["dims"])),
        lambda o: xp.copyto(o, inputs["x"].transpose(attrs["dims"])), out),
    "pad": lambda xp, attrs, inputs, out: (
        _no_out(out, "np.pad"),
        lambda: xp.pad(inputs["x"], _np_pad_widths(inputs["x"].ndim, attrs["pad"]), constant_values=attrs["value"]),
    )[1],
    "where": lambda xp, attrs, inputs, out: (
        _no_out(out, "np.where"), lambda: xp.where(inputs["condition"], inputs["x"], inputs["y"])
    )[1],
    # ndarray.fill: NumPy's full into an existing array.
    "full": lambda xp, attrs, inputs, out: _fresh_or_out(
        lambda: xp.full(attrs["shape"], attrs["value"], dtype=np.float32), lambda o: o.fill(attrs["value"]), out),
    "add_n": lambda xp, attrs, inputs, out: partial(_xp_add_n, xp, tuple(inputs.values()), out),
    "cat": lambda xp, attrs, inputs, out: partial(xp.concatenate, tuple(inputs.values()), out=out),
    "sum": lambda xp, attrs, inputs, out: partial(xp.sum, inputs["x"], attrs["axis"], out=out),
    "amax": lambda xp, attrs, inputs, out: partial(xp.amax, inputs["x"], attrs["axis"], out=out),
    "cumsum": lambda xp, attrs, inputs, out: partial(xp.cumsum, inputs["x"], attrs["axis"], out=out),
    # NumPy has no index_add: a copy, then np.add.at (which adds repeats).
    "index_add": lambda xp, attrs, inputs, out: _fresh_or_out(
        lambda: _xp_index_add(xp, inputs, xp.array(inputs["x"])),
        lambda o: _xp_index_add(xp, inputs, _copied(xp, o, inputs["x"])), out),
    "one_hot": lambda xp, attrs, inputs, out: partial(
        _xp_one_hot, xp.eye(attrs["classes"], dtype=np.int64), inputs["indices"], out),
    "softmax": lambda xp, attrs, inputs, out: partial(_xp_softmax, xp, inputs["x"], out),
    "matmul": lambda xp, attrs, inputs, out: partial(xp.matmul, inputs["a"], inputs["b"], out=out),
    "batch_matmul": lambda xp, attrs, inputs, out: partial(xp.matmul, inputs["a"], inputs["b"], out=out),
    "fused": lambda xp, attrs, inputs, out: partial(
        _xp_fused, xp, attrs["expr"], tuple(inputs.values()), None if out is None else _outputs(out)),
}


def _copied(xp, out, x):
    xp.copyto(out, x)
    return out


def _xp_index_add(xp, inputs, out):
    xp.add.at(out, inputs["index"], inputs["source"])
    return out


def _xp_add_n(xp, arrays, out):
    out = xp.add(arrays[0], arrays[1], out=out)
    for a in arrays[2:]:
        xp.add(out, a, out=out)
    return out


def _xp_one_hot(eye, indices, out):
    """np.eye(classes)[indices]: its out= form is np.take of the rows."""
    return eye[indices] if out is None else eye.take(indices, axis=0, out=out)


def _outputs(out):
    """out as a fused expression's outputs: W2's two are the rows of one (2, count) array."""
    return tuple(out) if out.ndim == 2 and out.shape[0] == 2 else out


def _torch_add_n(torch, arrays, out):
    out = torch.add(arrays[0], arrays[1], out=out)
    for a in arrays[2:]:
        out.add_(a)
    return out


def _torch_fused(torch, expr: str, args: tuple, out):
    """W1-W3 in PyTorch eager, in place where a user would write it so (one temporary at most)."""
    if expr == "W2":
        x, y, z = args
        a = torch.mul(x, 2, out=None if out is None else out[0]).add_(y)
        b = torch.log(a, out=None if out is None else out[1]).sub_(torch.sqrt(z))
        return (a, b) if out is None else out
    if expr == "W4":
        return torch.sum(args[0] * args[1], -1, out=out)
    t = torch.mul(args[0], args[1], out=out).add_(args[2])
    # clamp_min: torch.relu ran ~7x slower here (see _ELEMENTWISE).
    return t.clamp_min_(0) if expr == "W1" else t.tanh_()


def _torch_softmax(torch, x, out):
    if out is None:
        return torch.softmax(x, -1)
    return torch.ops.aten._softmax.out(x, -1, False, out=out)


_TORCH_KINDS: dict[str, Callable] = {
    "permute": lambda torch, attrs, inputs, out: _fresh_or_out(
        lambda: inputs["x"].permute(*attrs["dims"]).contiguous(), lambda o: o.copy_(inputs["x"].permute(*attrs["dims"])), out),
    "pad": lambda torch, attrs, inputs, out: (
        _no_out(out, "torch.nn.functional.pad"),
        lambda: torch.nn.functional.pad(inputs["x"], attrs["pad"], value=attrs["value"]),
    )[1],
    "where": lambda torch, attrs, inputs, out: partial(torch.where, inputs["condition"], inputs["x"], inputs["y"], out=out),
    "full": lambda torch, attrs, inputs, out: (
        partial(torch.full, attrs["shape"], attrs["value"], dtype=torch.float32)
        if out is None else partial(torch.full, attrs["shape"], attrs["value"], out=out)
    ),
    "add_n": lambda torch, attrs, inputs, out: partial(_torch_add_n, torch, tuple(inputs.values()), out),
    "cat": lambda torch, attrs, inputs, out: partial(torch.cat, tuple(inputs.values()), out=out),
    "sum": lambda torch, attrs, inputs, out: partial(torch.sum, inputs["x"], attrs["axis"], out=out),
    "amax": lambda torch, attrs, inputs, out: partial(torch.amax, inputs["x"], attrs["axis"], out=out),
    "cumsum": lambda torch, attrs, inputs, out: partial(torch.cumsum, inputs["x"], attrs["axis"], out=out),
    "index_add": lambda torch, attrs, inputs, out: partial(torch.index_add, inputs["x"], 0, inputs["index"], inputs["source"], out=out),
    "one_hot": lambda torch, attrs, inputs, out: (
        _no_out(out, "torch.nn.functional.one_hot"),
        partial(torch.nn.functional.one_hot, inputs["indices"], attrs["classes"]),
    )[1],
    "softmax": lambda torch, attrs, inputs, out: partial(_torch_softmax, torch, inputs["x"], out),
    "matmul": lambda torch, attrs, inputs, out: partial(torch.matmul, inputs["a"], inputs["b"], out=out),
    "batch_matmul": lambda torch, attrs, inputs, out: partial(torch.bmm, inputs["a"], inputs["b"], out=out),
    "fused": lambda torch, attrs, inputs, out: partial(
        _torch_fused, torch, attrs["expr"], tuple(inputs.values()), None if out is None else _outputs(out)),
}


def _relu(maximum: Callable, x, out=None):
    return maximum(x, 0, out=out)


def _sigmoid(xp, x, out=None):
    # No sigmoid ufunc: 1 / (1 + e^-x) in place, as a NumPy user writes it.
    out = xp.negative(x, out=out)
    xp.exp(out, out=out)
    xp.add(out, 1, out=out)
    return xp.reciprocal(out, out=out)


_ARRAY_API, _TORCH = 0, 1
# Each elementwise op's peers: (its function in the array API of xp, NumPy's and CuPy's; its
# function in PyTorch), each made from the library and called fn(*operands, out=out); None: none.
_ELEMENTWISE: dict[str, tuple[Callable | None, Callable | None]] = {
    "add": (lambda xp: xp.add, lambda torch: torch.add),
    "mul": (lambda xp: xp.multiply, lambda torch: torch.mul),
    "less": (lambda xp: xp.less, lambda torch: torch.lt),
    # torch.relu takes no out=, and here it (and aten's relu.out) ran ~7x slower than clamp_min.
    "relu": (lambda xp: partial(_relu, xp.maximum), lambda torch: partial(_relu, torch.clamp_min)),
    "exp": (lambda xp: xp.exp, lambda torch: torch.exp),
    "tanh": (lambda xp: xp.tanh, lambda torch: torch.tanh),
    "sigmoid": (lambda xp: partial(_sigmoid, xp), lambda torch: torch.sigmoid),
    "gelu": (None, lambda torch: torch.ops.aten.gelu),
    "expm1": (lambda xp: xp.expm1, lambda torch: torch.expm1),
    "log": (lambda xp: xp.log, lambda torch: torch.log),
    "erf": (None, lambda torch: torch.erf),
    # aten's ops (they take out=): torch.nn.functional's silu, softplus and mish take none.
    "silu": (None, lambda torch: torch.ops.aten.silu),
    "softplus": (None, lambda torch: partial(torch.ops.aten.softplus, beta=1, threshold=20)),
    "mish": (None, lambda torch: torch.ops.aten.mish),
    "atan2": (lambda xp: xp.arctan2, lambda torch: torch.atan2),
    "logaddexp": (lambda xp: xp.logaddexp, lambda torch: torch.logaddexp),
    "hypot": (lambda xp: xp.hypot, lambda torch: torch.hypot),
    "erfinv": (None, lambda torch: torch.erfinv),
}


def _elementwise_call(library, column: int, workload: Workload, inputs: dict, out) -> Callable:
    """A unary or binary workload's op in library, by its column of _ELEMENTWISE."""
    op = workload.attrs["op"]
    make = _ELEMENTWISE.get(op, (None, None))[column]
    if make is None:
        raise Unavailable(f"{library.__name__} has no {op}")
    fn = make(library)
    operands = (inputs["a"], inputs["b"]) if workload.kind == "binary" else (inputs["x"],)
    if out is None:
        return lambda: fn(*operands)
    return lambda: fn(*operands, out=out)


def candidates(
    workload: Workload, device: str, inputs: dict, out, names: tuple[str, ...] | None = None
) -> dict[tuple[str, bool], Callable | Unavailable]:
    """{(peer name, with_out): fn} for device (the peers of names, default all); each fn runs the
    workload once and returns its output: out when with_out, else a fresh result.

    inputs and out are host (NumPy) arrays; the peers' own device copies are made here.
    """
    found: dict[tuple[str, bool], Callable | Unavailable] = {}
    for name, make in _peers(device, {workload.kind}).items():
        if names is not None and name not in names:
            continue
        for with_out in (False, True):
            try:
                found[name, with_out] = make(workload, inputs, out if with_out else None)
            except Unavailable as reason:
                found[name, with_out] = reason
    return found


def _numpy(workload, inputs, out):
    return _array_api_call(np, workload, inputs, out)


def _torch_cpu(workload, inputs, out):
    torch = torch_module()
    # from_numpy shares the memory: the same inputs, the same output buffer.
    tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
    return _torch_call(torch, workload, tensors, None if out is None else torch.from_numpy(out))


def _torch_cuda(workload, inputs, out):
    torch = torch_module()
    if not torch.cuda.is_available():
        raise Unavailable("this PyTorch has no CUDA")
    tensors = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
    return _torch_call(torch, workload, tensors, None if out is None else torch.from_numpy(out).cuda())


def _cupy(workload, inputs, out):
    cupy = _module("cupy", "pip install cupy-cuda13x")
    device_out = None if out is None else cupy.asarray(out)
    return _array_api_call(cupy, workload, {k: cupy.asarray(v) for k, v in inputs.items()}, device_out)


# numexpr's expressions for W1-W3: (output, expression) in turn; W2's second reads the first's a.
_NUMEXPR = {
    "W1": (("out", "where(x * y + z > 0, x * y + z, 0)"),),
    "W2": (("a", "x * 2 + y"), ("b", "log(a) - sqrt(z)")),
    "W3": (("out", "tanh(X * row + col)"),),
    "W4": (("out", "sum(x * y, axis=1)"),),
}


def _numexpr(workload, inputs, out):
    numexpr = _module("numexpr", "pip install -e .[bench]")
    steps = _NUMEXPR[workload.attrs["expr"]]
    outs = (None,) * len(steps) if out is None else (_outputs(out) if len(steps) == 2 else (out,))

    def run():
        names, results = dict(inputs), []
        for (name, expression), target in zip(steps, outs):
            names[name] = numexpr.evaluate(expression, local_dict=names, out=target)
            results.append(names[name])
        return results[0] if len(results) == 1 else tuple(results)

    return run


# The expressions as torch.compile compiles them (its fused kernels: one pass, no temporaries).
_TORCH_EXPRESSIONS = {
    "W1": lambda torch: lambda x, y, z: torch.relu(x * y + z),
    "W2": lambda torch: lambda x, y, z: (lambda a: (a, torch.log(a) - torch.sqrt(z)))(x * 2 + y),
    "W3": lambda torch: lambda X, row, col: torch.tanh(X * row + col),
    "W4": lambda torch: lambda x, y: torch.sum(x * y, -1),
}


def _torch_compile(device: str):
    def make(workload, inputs, out):
        if not workload.attrs.get("compile"):
            raise Unavailable("left out by --quick (compiling takes seconds)")
        _no_out(out, "a torch.compile'd function")
        torch = torch_module()
        if device == "cuda" and not torch.cuda.is_available():
            raise Unavailable("this PyTorch has no CUDA")
        tensors = [torch.from_numpy(v) if device == "cpu" else torch.from_numpy(v).cuda() for v in inputs.values()]
        compiled = torch.compile(_TORCH_EXPRESSIONS[workload.attrs["expr"]](torch), dynamic=False)
        try:
            compiled(*tensors)  # compiles here: its compile time is no sample's
        except Exception as error:  # noqa: BLE001 (no C compiler, an unsupported platform, ...)
            raise Unavailable(f"torch.compile failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}") from None
        return lambda: compiled(*tensors)

    return make


_CPU_PEERS = {"numpy": _numpy, "torch": _torch_cpu}
_CUDA_PEERS = {"cupy": _cupy, "torch": _torch_cuda}
# Peers of the fused expressions (kind "fused") only.
_FUSED_PEERS = {"cpu": {"numexpr": _numexpr, "torch.compile": _torch_compile("cpu")}, "cuda": {"torch.compile": _torch_compile("cuda")}}


def _peers(device: str, kinds) -> dict[str, Callable]:
    found = dict(_CPU_PEERS if device == "cpu" else _CUDA_PEERS)
    if "fused" in kinds:
        found.update(_FUSED_PEERS[device])
    return found


def peer_names(device: str, kinds=()) -> tuple[str, ...]:
    """The peers measured on device for workloads of kinds (the set of their kinds)."""
    return tuple(_peers(device, kinds))
