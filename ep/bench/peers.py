"""The peers ep is measured against: NumPy and PyTorch on the CPU, CuPy and PyTorch on CUDA.

Each peer writes into a preallocated output where its API allows (out=), as ep does, so no one
pays for page-faulting a fresh buffer; np.tile, torch's repeat and take_along_axis allocate.
"""
from __future__ import annotations

import importlib
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


def _batch_gather_rows(arange: Callable, inputs: dict, attrs: dict) -> Callable:
    """A batch gather along axis 1 by advanced indexing, whole rows per batch: the fastest way
    NumPy, CuPy and PyTorch users write it (take_along_axis or torch.gather go element by element)."""
    if attrs["axis"] != 1:
        raise Unavailable("the peer is written for axis 1")
    params, indices = inputs["params"], inputs["indices"]
    batch = arange(indices.shape[0])[:, None]
    return lambda: params[batch, indices]


def _array_api_call(xp, workload: Workload, inputs: dict, out) -> Callable:
    """The workload in NumPy's API, for NumPy itself and for CuPy."""
    kind, attrs = workload.kind, workload.attrs
    if kind == "gather":
        params, indices, axis = inputs["params"], inputs["indices"], attrs["axis"]
        return lambda: xp.take(params, indices, axis=axis, out=out)
    if kind == "batch_gather":
        return _batch_gather_rows(xp.arange, inputs, attrs)
    if kind in ("expand", "cast"):
        # The materialized expansion, or the cast: a copy into out with broadcasting or converting.
        src = xp.broadcast_to(inputs["x"], attrs["sizes"]) if kind == "expand" else inputs["x"]

        def copy():
            xp.copyto(out, src)
            return out

        return copy
    if kind == "repeat":
        return lambda: xp.tile(inputs["x"], attrs["repeats"])
    if kind == "binary":
        ufunc = {"add": xp.add, "mul": xp.multiply, "less": xp.less}[attrs["op"]]
        a, b = inputs["a"], inputs["b"]
        return lambda: ufunc(a, b, out=out)
    x, op = inputs["x"], attrs["op"]
    if op == "relu":
        return lambda: xp.maximum(x, 0, out=out)
    if op in ("exp", "tanh"):
        ufunc = getattr(xp, op)
        return lambda: ufunc(x, out=out)
    if op == "sigmoid":
        # No sigmoid ufunc: 1 / (1 + e^-x) in place, as a NumPy user writes it.
        def sigmoid():
            xp.negative(x, out=out)
            xp.exp(out, out=out)
            xp.add(out, 1, out=out)
            return xp.reciprocal(out, out=out)

        return sigmoid
    raise Unavailable(f"{xp.__name__} has no {op}")


def _torch_call(torch, workload: Workload, inputs: dict, out) -> Callable:
    kind, attrs = workload.kind, workload.attrs
    if kind == "gather":
        params, indices, axis = inputs["params"], inputs["indices"], attrs["axis"]
        return lambda: torch.index_select(params, axis, indices, out=out)
    if kind == "batch_gather":
        return _batch_gather_rows(lambda n: torch.arange(n, device=inputs["indices"].device), inputs, attrs)
    if kind == "expand":
        x, shape = inputs["x"], attrs["sizes"]
        return lambda: out.copy_(x.expand(*shape))
    if kind == "repeat":
        x, repeats = inputs["x"], attrs["repeats"]
        return lambda: x.repeat(*repeats)
    if kind == "cast":
        x = inputs["x"]
        return lambda: out.copy_(x)
    if kind == "binary":
        fn = {"add": torch.add, "mul": torch.mul, "less": torch.lt}[attrs["op"]]
        a, b = inputs["a"], inputs["b"]
        return lambda: fn(a, b, out=out)
    x, op = inputs["x"], attrs["op"]
    if op == "relu":
        # torch.relu takes no out=, and here it (and aten's relu.out) ran ~7x slower than clamp_min.
        return lambda: torch.clamp_min(x, 0, out=out)
    if op == "gelu":
        return lambda: torch.ops.aten.gelu.out(x, out=out)
    fn = getattr(torch, op)
    return lambda: fn(x, out=out)


def candidates(workload: Workload, device: str, inputs: dict, out) -> dict[str, Callable | Unavailable]:
    """{peer name: fn} for device; each fn runs the workload once and returns its output.

    inputs and out are host (NumPy) arrays; the peers' own device copies are made here.
    """
    found: dict[str, Callable | Unavailable] = {}
    for name, make in (_CPU_PEERS if device == "cpu" else _CUDA_PEERS).items():
        try:
            found[name] = make(workload, inputs, out)
        except Unavailable as reason:
            found[name] = reason
    return found


def _numpy(workload, inputs, out):
    return _array_api_call(np, workload, inputs, out)


def _torch_cpu(workload, inputs, out):
    torch = torch_module()
    # from_numpy shares the memory: the same inputs, the same output buffer.
    tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
    return _torch_call(torch, workload, tensors, torch.from_numpy(out))


def _torch_cuda(workload, inputs, out):
    torch = torch_module()
    if not torch.cuda.is_available():
        raise Unavailable("this PyTorch has no CUDA")
    tensors = {k: torch.from_numpy(v).cuda() for k, v in inputs.items()}
    return _torch_call(torch, workload, tensors, torch.from_numpy(out).cuda())


def _cupy(workload, inputs, out):
    cupy = _module("cupy", "pip install cupy-cuda13x")
    return _array_api_call(cupy, workload, {k: cupy.asarray(v) for k, v in inputs.items()}, cupy.asarray(out))


_CPU_PEERS = {"numpy": _numpy, "torch": _torch_cpu}
_CUDA_PEERS = {"cupy": _cupy, "torch": _torch_cuda}


def peer_names(device: str) -> tuple[str, ...]:
    """The peers measured on device."""
    return tuple(_CPU_PEERS if device == "cpu" else _CUDA_PEERS)
