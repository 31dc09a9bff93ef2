"""PyTorch's own test inputs (the sample inputs of its OpInfo database) through the ep.ops function
of the same name, compared with what torch computes: the conformance suite of test_opinfo.py.

Each sample is run by torch and by ep.ops on NumPy copies of its tensors, and classed: passed,
a documented difference (ep's NumPy promotion where the name is NumPy's too), refused (ep raised
TypeError or ValueError where torch computes), unsupported (a keyword or mode ep.ops does not
take, a dtype ep has not), or a failure: a wrong value, shape or dtype, or any other exception.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

import ep
import ep.ops
from ep.include.primitive.binary_op import as_binary_op
from ep.include.primitive.unary_op import as_unary_op

DTYPES = (torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32, torch.float64)
TOLERANCE = {np.float16: 1e-2, np.float32: 1e-5, np.float64: 1e-10}

# Where ep deliberately computes what NumPy computes: for a name both libraries have (README: names),
# or NumPy's promotion of arrays, which every ep.ops op follows (ep.ops.composite).
DOCUMENTED = {
    "true_divide": "NumPy's true_divide of integers and bools gives float64 (torch: float32)",
    "clamp": "bounds promote with x as every ep.ops op's arrays do, as NumPy's (float32 and int32: float64; torch: float32)",
}


class Unsupported(Exception):
    """A sample ep.ops has no way to take (a keyword, a mode, a dtype)."""


def _host(value):
    return value.detach().numpy() if isinstance(value, torch.Tensor) else value


def _elementwise(kind: str, name: str) -> Callable:
    call = ep.ops.unary if kind == "unary" else ep.ops.binary

    def run(x, *args, **kwargs):
        return call(name, x, *args, **kwargs)

    return run


def _no_kwargs(function: Callable) -> Callable:
    def run(x, *args, **kwargs):
        if kwargs:
            raise Unsupported(f"keywords {sorted(kwargs)}")
        return function(x, *args)

    return run


def _pad(x, pad, mode="constant", value=None):
    if mode != "constant":
        raise Unsupported(f"mode {mode!r}")
    return ep.ops.pad(x, pad, value=value)


def _one_hot(x, num_classes=-1):
    return ep.ops.one_hot(x, num_classes)


# OpInfo name -> its ep.ops call (x, *args, **kwargs as the sample gives them).
CALLS: dict[str, Callable] = {
    "softmax": _no_kwargs(ep.ops.softmax),
    "log_softmax": _no_kwargs(ep.ops.log_softmax),
    "matmul": _no_kwargs(ep.ops.matmul),
    "mm": _no_kwargs(ep.ops.matmul),
    "bmm": _no_kwargs(ep.ops.matmul),
    "permute": _no_kwargs(ep.ops.permute),
    "nn.functional.pad": _pad,
    "where": _no_kwargs(lambda x, condition, other: ep.ops.where(condition, x, other)),
    "nn.functional.one_hot": _one_hot,
    "expand": _no_kwargs(lambda x, *shape: ep.ops.expand(x, shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape)),
    "repeat": _no_kwargs(lambda x, repeats: ep.ops.repeat(x, repeats)),
    "clamp": ep.ops.clamp,
    "lerp": ep.ops.lerp,
    "addcmul": ep.ops.addcmul,
    "addcdiv": ep.ops.addcdiv,
    "nan_to_num": ep.ops.nan_to_num,
    "roll": ep.ops.roll,
    "masked_fill": ep.ops.masked_fill,
    "index_select": ep.ops.index_select,
    "flip": ep.ops.flip,
    "cumsum": ep.ops.cumsum,
    "cumprod": ep.ops.cumprod,
    "cummax": ep.ops.cummax,
    "cummin": ep.ops.cummin,
    "logcumsumexp": ep.ops.logcumsumexp,
    "tril": ep.ops.tril,
    "triu": ep.ops.triu,
    "take_along_dim": ep.ops.take_along_dim,
    "index_add": ep.ops.index_add,
    "scatter_add": ep.ops.scatter_add,
    "scatter": ep.ops.scatter,
}
# torch functions of these names that are not elementwise (torch.equal gives one bool).
NOT_ELEMENTWISE = {"equal"}


def call_of(opinfo) -> Callable | None:
    """ep.ops' call for opinfo, or None where ep.ops has no function of that name."""
    if opinfo.name in CALLS:
        return CALLS[opinfo.name]
    name = opinfo.name.split(".")[-1]
    if opinfo.name in NOT_ELEMENTWISE or opinfo.variant_test_name.startswith("reduction"):
        return None
    for kind, resolve in (("unary", as_unary_op), ("binary", as_binary_op)):
        try:
            resolve(name)
        except ValueError:
            continue
        return _elementwise(kind, name)
    return None


@dataclass
class Tally:
    """Per class, how many samples; per failure and refusal, what they were."""

    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    refusals: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: str, detail: str | None = None) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        if outcome == "failed":
            self.failures.append(detail)
        elif outcome == "refused":
            self.refusals[detail] = self.refusals.get(detail, 0) + 1


def _compare(name: str, got, expected) -> str | None:
    """None when got is expected; else what differs, or "documented" for a documented difference."""
    expected = np.asarray(_host(expected))
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"shape {got.shape}, torch {expected.shape}"
    if got.dtype != expected.dtype:
        return "documented" if name in DOCUMENTED else f"dtype {got.dtype}, torch {expected.dtype}"
    if expected.dtype.kind in "fc":
        tol = TOLERANCE[expected.dtype.type]
        same = np.allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    else:
        same = np.array_equal(got, expected)
    if same:
        return None
    return "documented" if name in DOCUMENTED else "values differ"


def run_opinfo(opinfo, call: Callable, dtype: torch.dtype, tally: Tally, samples: int | None) -> None:
    """Every sample of opinfo at dtype (the first `samples` of them, or all), classed into tally."""
    try:
        inputs = list(opinfo.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception:  # an OpInfo that makes no samples here (torch's own limits)
        return
    for sample in inputs[:samples]:
        label = f"{opinfo.name}{'.' + opinfo.variant_test_name if opinfo.variant_test_name else ''} {dtype}"
        tensors = [sample.input, *sample.args, *sample.kwargs.values()]
        if any(isinstance(t, torch.Tensor) and t.dtype not in DTYPES for t in tensors) or not isinstance(sample.input, torch.Tensor):
            tally.add("unsupported")
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                expected = opinfo(sample.input, *sample.args, **sample.kwargs)
            except Exception:
                continue  # torch refuses it too
            try:
                got = call(_host(sample.input), *map(_host, sample.args), **{k: _host(v) for k, v in sample.kwargs.items()})
            except Unsupported:
                tally.add("unsupported")
                continue
            except (TypeError, ValueError) as error:
                message = str(error)
                if "has no attribute" in message or "unexpected keyword" in message:
                    tally.add("unsupported")
                else:
                    tally.add("refused", f"{opinfo.name} {dtype}: {type(error).__name__}: {message[:100]}")
                continue
            except Exception as error:  # anything else is a crash of ep's
                tally.add("failed", f"{label}: {type(error).__name__}: {str(error)[:200]}")
                continue
        difference = _compare(opinfo.name.split(".")[-1], got, expected)
        if difference is None:
            tally.add("passed")
        elif difference == "documented":
            tally.add("documented difference")
        else:
            tally.add("failed", f"{label}: {difference}")


def mapped_opinfos() -> list:
    """Every OpInfo of torch's op_db that an ep.ops function takes, with its call."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [(opinfo, call) for opinfo in op_db if (call := call_of(opinfo)) is not None]


if __name__ == "__main__":  # the totals, all samples: python tests/ops/opinfo.py
    tally = Tally()
    mapped = mapped_opinfos()
    for opinfo, call in mapped:
        for dtype in DTYPES:
            if dtype in opinfo.supported_dtypes("cpu"):
                run_opinfo(opinfo, call, dtype, tally, None)
    print(f"{len(mapped)} OpInfos mapped: {tally.counts}")
    for refusal, n in sorted(tally.refusals.items(), key=lambda item: -item[1]):
        print(f"  refused {n}x {refusal}")
    for failure in tally.failures:
        print(f"  FAILED {failure}")
