"""The peers ep is measured against: NumPy and PyTorch on the CPU, CuPy and PyTorch on CUDA.

Each peer runs each workload twice over: returning a fresh result, and writing into a
preallocated out= where its API has one (np.tile, torch's repeat and the batch gather by advanced
indexing have none: their out= column is "not available").
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
    return _elementwise_call(torch, _TORCH, workload, inputs, out)


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
    for name, make in (_CPU_PEERS if device == "cpu" else _CUDA_PEERS).items():
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


_CPU_PEERS = {"numpy": _numpy, "torch": _torch_cpu}
_CUDA_PEERS = {"cupy": _cupy, "torch": _torch_cuda}


def peer_names(device: str) -> tuple[str, ...]:
    """The peers measured on device."""
    return tuple(_CPU_PEERS if device == "cpu" else _CUDA_PEERS)
