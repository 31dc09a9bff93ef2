"""Every primitive's Launch as data: a good call built from sizes, its NumPy reference, the kind of
each parameter, and the bad values of each kind with the error they must raise.

A primitive with a declared launch and no Spec written here gets one derived from its samples (a
reference sample's good call, fixed sizes) and its declaration (its buffers and counts get bad
values; its other arguments, checked by its plan, are tested in tests/primitive)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import assume, strategies as st

import ep
from ep.common.primitive.launch import Count, In, Ins, Out
from ep.common.runtime.device import cuda_available
from ep.include.primitive.primitive import GetFactory
from ep.testing import to_device
from ep.testing.samples import on_device, reference_samples, registered

from guards import Guarded, digest, expect_error
from dtype_lists import ALL as ALL_DTYPES

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass
class Call:
    """A good launch: its arguments in Launch's order (stream first), its guarded outputs and what
    they must hold after it."""

    args: dict[str, object]
    outputs: dict[str, Guarded]
    expected: dict[str, np.ndarray]
    #: The outputs' tolerance relative to their largest reference value (0: exactly).
    rtol: float = 0.0


@dataclass
class Spec:
    """One primitive: New for a device, a good call for sizes, and each parameter's kind
    ("in", "out", "count", "offset", "dims", "dim", "dtype", "scalar": a value for an int64 element)."""

    name: str
    new: Callable[[str], object]
    build: Callable[[str, tuple[int, ...], int], Call]
    #: Sizes of good calls, zeros included; bad-argument cases draw sizes >= 1 of the same arity.
    sizes: st.SearchStrategy
    arity: int
    kinds: dict[str, str]
    dtypes: dict[str, np.dtype] = field(default_factory=dict)
    scalar_operands: tuple[str, ...] = ()

    def primitive(self, device: str):
        primitive = self.new(device)
        assert primitive is not None, f"{self.name} has no primitive on {device}"
        return primitive


def _stream(device: str):
    return ep.GetDevice(device).CreateStream()


def _floats(rng, shape, dtype) -> np.ndarray:
    return (rng.standard_normal(shape) * 10).astype(dtype)


def _unary(device, sizes, seed):
    (n,) = sizes
    src = _floats(np.random.default_rng(seed), n, np.float32)
    dst = Guarded(device, np.float32, n)
    args = {"stream": _stream(device), "src": to_device(src, device), "dst": dst.middle, "count": n}
    return Call(args, {"dst": dst}, {"dst": np.maximum(src, 0)})


def _binary(device, sizes, seed):
    a, b = sizes
    rng = np.random.default_rng(seed)
    x, y = _floats(rng, (a, b), np.float32), _floats(rng, (1, b), np.float32)
    dst = Guarded(device, np.float32, a * b)
    args = {"stream": _stream(device), "src0_dims": (a, b), "src0": to_device(x, device),
            "src1_dims": (1, b), "src1": to_device(y, device), "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": (x + y).ravel()})


def _batch_gather_parts(device, batch, outer, gather, inner, num, seed):
    rng = np.random.default_rng(seed)
    params = _floats(rng, (batch, outer, gather, inner), np.float16)
    indices = rng.integers(0, max(gather, 1), (batch, num)).astype(np.int64)
    out = Guarded(device, np.float16, batch * outer * num * inner)
    expected = np.zeros((batch, outer, num, inner), np.float16)
    for b in range(batch):
        expected[b] = params[b][:, indices[b], :]
    return to_device(params, device), to_device(indices, device), out, expected.ravel()


def _gather(device, sizes, seed):
    outer, gather, inner, num = sizes
    params, indices, out, expected = _batch_gather_parts(device, 1, outer, gather, inner, num, seed)
    args = {"stream": _stream(device), "indices": indices, "num_indices": num, "in_": params, "outer_dim_size": outer,
            "gather_dim_size": gather, "inner_dim_size": inner, "out": out.middle, "offset": 0}
    return Call(args, {"out": out}, {"out": expected})


def _batch_gather(device, sizes, seed):
    batch, outer, gather, inner, num = sizes
    params, indices, out, expected = _batch_gather_parts(device, batch, outer, gather, inner, num, seed)
    args = {"stream": _stream(device), "indices": indices, "num_indices": num, "in_": params, "batch_dim_size": batch,
            "outer_dim_size": outer, "gather_dim_size": gather, "inner_dim_size": inner, "out": out.middle, "offset": 0}
    return Call(args, {"out": out}, {"out": expected})


def _segment_sum(device, sizes, seed):
    batch, outer, segments, inner, num = sizes
    rng = np.random.default_rng(seed)
    data = rng.integers(-100, 100, (batch, outer, num, inner)).astype(np.int64)
    ids = rng.integers(0, max(segments, 1), (batch, num)).astype(np.int32)
    expected = np.zeros((batch, outer, segments, inner), np.int64)
    if segments:
        for b in range(batch):
            for i in range(num):
                expected[b, :, ids[b, i], :] += data[b, :, i, :]
    out = Guarded(device, np.int64, expected.size)
    args = {"stream": _stream(device), "segment_ids": to_device(ids, device), "num_segment_ids": num,
            "data": to_device(data, device), "batch_dim_size": batch, "outer_dim_size": outer, "num_segments": segments,
            "inner_dim_size": inner, "out": out.middle, "offset": 0}
    return Call(args, {"out": out}, {"out": expected.ravel()})


def _fill(device, sizes, seed):
    (n,) = sizes
    dst = Guarded(device, np.int64, n)
    args = {"stream": _stream(device), "dst": dst.middle, "scalar": -seed - 7, "count": n}
    return Call(args, {"dst": dst}, {"dst": np.full(n, -seed - 7, np.int64)})


def _tensor_fill(device, sizes, seed):
    (n,) = sizes
    dst = Guarded(device, np.int64, n)
    args = {"stream": _stream(device), "src": to_device(np.array([-seed - 7], np.int64), device), "dst": dst.middle, "count": n}
    return Call(args, {"dst": dst}, {"dst": np.full(n, -seed - 7, np.int64)})


def _expand(device, sizes, seed):
    a, b = sizes
    src = _floats(np.random.default_rng(seed), (1, b), np.float16)
    dst = Guarded(device, np.float16, a * b)
    args = {"stream": _stream(device), "src_dims": (1, b), "src": to_device(src, device), "dst_dims": (a, b), "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": np.broadcast_to(src, (a, b)).ravel()})


def _expand_grad(device, sizes, seed):
    a, b = sizes
    src = np.random.default_rng(seed).integers(-100, 100, (a, b)).astype(np.int64)
    dst = Guarded(device, np.int64, b)
    args = {"stream": _stream(device), "src_dims": (a, b), "src": to_device(src, device), "dst_dims": (1, b), "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": src.sum(axis=0)})


def _reduce(device, sizes, seed):
    a, b = sizes
    src = np.random.default_rng(seed).integers(-100, 100, (a, b)).astype(np.int64)
    dst = Guarded(device, np.int64, b)
    args = {"stream": _stream(device), "src_dims": (a, b), "src": to_device(src, device), "dst_dims": (1, b), "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": src.sum(axis=0)})


def _scan(device, sizes, seed):
    a, b = sizes
    src = np.random.default_rng(seed).integers(-100, 100, (a, b)).astype(np.int64)
    dst = Guarded(device, np.int64, a * b)
    args = {"stream": _stream(device), "src_dims": (a, b), "src": to_device(src, device), "dim": 1, "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": np.cumsum(src, axis=1).ravel()})


def _copy_nd(device, sizes, seed):
    a, b = sizes
    src = _floats(np.random.default_rng(seed), (a, b), np.float16)
    dst = Guarded(device, np.float16, (a + 1) * (b + 1))
    expected = dst.value().reshape(a + 1, b + 1).copy()
    expected[1:, 1:] = src
    args = {"stream": _stream(device), "data_type": ep.DataType.kFloat16, "num_dims": 2, "dst": dst.middle,
            "dst_dims": (a + 1, b + 1), "dst_pos": (1, 1), "src": to_device(src, device), "src_dims": (a, b),
            "src_pos": (0, 0), "extent": (a, b), "src_strides": (b, 1)}
    return Call(args, {"dst": dst}, {"dst": expected.ravel()})


def _permute(device, sizes, seed):
    a, b = sizes
    src = _floats(np.random.default_rng(seed), (a, b), np.float16)
    dst = Guarded(device, np.float16, a * b)
    args = {"stream": _stream(device), "data_type": ep.DataType.kFloat16, "num_dims": 2, "src_dims": (a, b),
            "src": to_device(src, device), "permutation": (1, 0), "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": src.T.ravel()})


def _constant_pad(device, sizes, seed):
    a, b = sizes
    src = np.random.default_rng(seed).integers(-100, 100, (a, b)).astype(np.int64)
    dst = Guarded(device, np.int64, (a + 1) * (b + 2))
    args = {"stream": _stream(device), "num_dims": 2, "src_dims": (a, b), "src": to_device(src, device),
            "padding_before": (1, 0), "padding_after": (0, 2), "pad_value": 7, "dst": dst.middle}
    return Call(args, {"dst": dst}, {"dst": np.pad(src, ((1, 0), (0, 2)), constant_values=7).ravel()})


_small = st.integers(1, 4)
_any = st.integers(0, 4)
_f16, _f32, _i64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int64)
_GATHER_SIZES = {"num_indices": "count", "outer_dim_size": "count", "gather_dim_size": "count", "inner_dim_size": "count"}

SPECS = {
    spec.name: spec
    for spec in (
        Spec(
            "ElementwiseUnary",
            lambda d: ep.NewPrimitive(ep.ElementwiseUnaryFactory, d, ep.UnaryOp.kRelu, np.float32, np.float32),
            _unary, st.tuples(_any), 1, {"src": "in", "dst": "out", "count": "count"}, {"src": _f32, "dst": _f32},
        ),
        Spec(
            "BroadcastElementwiseBinary",
            lambda d: ep.NewPrimitive(ep.BroadcastElementwiseBinaryFactory, d, ep.BinaryOp.kAdd, np.float32, np.float32),
            _binary, st.tuples(_any, _any), 2,
            {"src0_dims": "dims", "src0": "in", "src1_dims": "dims", "src1": "in", "dst": "out"},
            {"src0": _f32, "src1": _f32, "dst": _f32}, scalar_operands=("src0", "src1"),
        ),
        Spec(
            "Gather",
            lambda d: ep.NewPrimitive(ep.GatherFactory, d, np.float16, np.int64, check_bounds=True),
            _gather, st.tuples(_any, _small, _any, _any), 4,
            {"indices": "in", "in_": "in", "out": "out", **_GATHER_SIZES, "offset": "offset"},
            {"indices": _i64, "in_": _f16, "out": _f16},
        ),
        Spec(
            "BatchGather",
            lambda d: ep.NewPrimitive(ep.BatchGatherFactory, d, np.float16, np.int64, check_bounds=True),
            _batch_gather, st.tuples(_any, _any, _small, _any, _any), 5,
            {"indices": "in", "in_": "in", "out": "out", "batch_dim_size": "count", **_GATHER_SIZES, "offset": "offset"},
            {"indices": _i64, "in_": _f16, "out": _f16},
        ),
        Spec(
            "UnsortedSegmentSum",
            lambda d: ep.NewPrimitive(ep.UnsortedSegmentSumFactory, d, np.int64, np.int32, check_bounds=True),
            _segment_sum, st.tuples(_any, _any, _small, _any, _any), 5,
            {"segment_ids": "in", "data": "in", "out": "out", "num_segment_ids": "count", "batch_dim_size": "count",
             "outer_dim_size": "count", "num_segments": "count", "inner_dim_size": "count", "offset": "offset"},
            {"segment_ids": np.dtype(np.int32), "data": _i64, "out": _i64},
        ),
        Spec(
            "Fill",
            lambda d: ep.NewPrimitive(ep.FillFactory, d, np.int64),
            _fill, st.tuples(_any), 1, {"dst": "out", "scalar": "scalar", "count": "count"}, {"dst": _i64},
        ),
        Spec(
            "TensorFill",
            lambda d: ep.NewPrimitive(ep.TensorFillFactory, d, np.int64),
            _tensor_fill, st.tuples(_any), 1, {"src": "in", "dst": "out", "count": "count"}, {"src": _i64, "dst": _i64},
        ),
        Spec(
            "Expand",
            lambda d: ep.NewPrimitive(ep.ExpandFactory, d, np.float16),
            _expand, st.tuples(_small, _any), 2, {"src_dims": "dims", "src": "in", "dst_dims": "dims", "dst": "out"},
            {"src": _f16, "dst": _f16},
        ),
        Spec(
            "ExpandGrad",
            lambda d: ep.NewPrimitive(ep.ExpandGradFactory, d, np.int64),
            _expand_grad, st.tuples(_small, _any), 2, {"src_dims": "dims", "src": "in", "dst_dims": "dims", "dst": "out"},
            {"src": _i64, "dst": _i64},
        ),
        Spec(
            "Reduce",
            lambda d: ep.NewPrimitive(ep.ReduceFactory, d, ep.ReduceOp.kSum, np.int64, np.int64),
            _reduce, st.tuples(_any, _any), 2, {"src_dims": "dims", "src": "in", "dst_dims": "dims", "dst": "out"},
            {"src": _i64, "dst": _i64},
        ),
        Spec(
            "Scan",
            lambda d: ep.NewPrimitive(ep.ScanFactory, d, ep.ReduceOp.kSum, np.int64, np.int64),
            _scan, st.tuples(_any, _any), 2, {"src_dims": "dims", "src": "in", "dim": "dim", "dst": "out"},
            {"src": _i64, "dst": _i64},
        ),
        Spec(
            "CopyNd",
            lambda d: ep.NewPrimitive(ep.CopyNdFactory, d, 2),
            _copy_nd, st.tuples(_any, _any), 2,
            {"data_type": "dtype", "num_dims": "count", "dst": "out", "dst_dims": "dims", "dst_pos": "dims", "src": "in",
             "src_dims": "dims", "src_pos": "dims", "extent": "dims", "src_strides": "dims"},
            {"src": _f16, "dst": _f16},
        ),
        Spec(
            "Permute",
            lambda d: ep.NewPrimitive(ep.PermuteFactory, d, 2),
            _permute, st.tuples(_any, _any), 2,
            {"data_type": "dtype", "num_dims": "count", "src_dims": "dims", "src": "in", "permutation": "dims", "dst": "out"},
            {"src": _f16, "dst": _f16},
        ),
        Spec(
            # Paddings may be negative (crops): not a "dims" kind; tests/primitive/test_constant_pad.py checks them.
            "ConstantPad",
            lambda d: ep.NewPrimitive(ep.ConstantPadFactory, d, np.int64),
            _constant_pad, st.tuples(_any, _any), 2,
            {"num_dims": "count", "src_dims": "dims", "src": "in", "dst": "out"},
            {"src": _i64, "dst": _i64},
        ),
    )
}

def _devices() -> tuple[str, ...]:
    return ("cpu", "cuda") if cuda_available() else ("cpu",)


def _declared_kinds(factory_type) -> dict[str, str] | None:
    """The kinds of a declared launch's buffers and counts (a sequence of buffers left out), or
    None for a launch declared by hand."""
    declaration = getattr(GetFactory(factory_type, "cpu").primitive_type, "launch", None)
    if declaration is None:
        return None
    kinds = {}
    for arg in declaration.args:
        if isinstance(arg, Ins) or getattr(arg, "scalar", False):
            continue
        if isinstance(arg, (In, Count)):
            kinds[arg.name] = "out" if isinstance(arg, Out) else "in" if isinstance(arg, In) else "count"
    return kinds


def _derived(name: str, factory_type) -> Spec | None:
    """name's Spec from its first reference sample that runs on every device here, and its declaration."""
    kinds = _declared_kinds(factory_type)
    if kinds is None:
        return None
    _, (sample, *_) = reference_samples(factory_type, _devices())

    def build(device, sizes, seed):
        args = on_device(sample, device)
        outputs = {p: Guarded(device, sample.args[p].dtype, sample.args[p].size) for p, kind in kinds.items() if kind == "out"}
        args.update({p: guarded.middle for p, guarded in outputs.items()})
        return Call({"stream": _stream(device), **args}, outputs, {p: sample.expected[p] for p in outputs}, sample.rtol)

    dtypes = {p: sample.args[p].dtype for p, kind in kinds.items() if kind in ("in", "out")}
    return Spec(
        name, lambda d: ep.NewPrimitive(factory_type, d, *sample.new, **sample.new_kwargs), build, st.just(()), 0, kinds, dtypes
    )


DERIVED = {
    name: spec for name, (factory_type, _) in sorted(registered("cpu").items())
    if name not in SPECS and (spec := _derived(name, factory_type)) is not None
}
SPECS.update(DERIVED)

PARAMS = [(name, param) for name, spec in SPECS.items() for param in ("stream", *spec.kinds)]

# The module (test_launch_<family>.py) that gives each Spec's parameters their bad values, in
# three parts so that they run side by side; a new Spec joins one (test_launch_layouts checks).
FAMILIES = {
    "elementwise": ("ElementwiseUnary", "BroadcastElementwiseBinary", "Fill", "TensorFill"),
    "indexed": ("Gather", "BatchGather", "UnsortedSegmentSum"),
    "copies": ("Expand", "ExpandGrad", "Reduce", "Scan", "CopyNd", "Permute", "ConstantPad"),
    "derived": tuple(DERIVED),
}


def family_params(family: str) -> list[tuple[str, str]]:
    """(primitive, parameter) of every Spec of family."""
    return [p for p in PARAMS if p[0] in FAMILIES[family]]


def launch(primitive, call: Call) -> None:
    primitive.Launch(*call.args.values())
    call.args["stream"].Sync()


# Bad values by kind: (label, make(device, good value, spec, param) -> value, error). make may
# call hypothesis's assume() to skip a case that does not apply to these sizes.
def _other_device(device: str) -> str:
    return "cuda" if device == "cpu" else "cpu"


def _elements(value) -> int:
    return int(np.prod(value.shape))


def _buffer(device, dtype, n):
    return to_device(np.zeros(n, dtype), device)


def _short(device, good, spec, param):
    assume(_elements(good) >= 1)
    return _buffer(device, spec.dtypes[param], _elements(good) - 1)


def _noncontiguous(device, good, spec, param):
    assume(_elements(good) >= 2)
    return _buffer(device, spec.dtypes[param], 2 * _elements(good))[::2]


def _other_dtype(device, good, spec, param):
    # Every other dtype (uint16 for float16 or bfloat16 storage included) and one ep lacks.
    others = [d for d in (*ALL_DTYPES, np.dtype(np.complex64)) if d != spec.dtypes[param]]
    dtype = others[_elements(good) % len(others)]
    return _buffer(device, dtype, max(_elements(good), 1))


def _exotic_dtype(device, good, spec, param):
    n = max(_elements(good), 1)
    if device == "cpu":
        choices = [np.dtype(object), np.dtype([("a", "<f4")]), np.dtype("M8[s]"), spec.dtypes[param].newbyteorder(">")]
        choices = [d for d in choices if d != spec.dtypes[param]]
        return np.zeros(n, choices[n % len(choices)])
    return _buffer(device, np.dtype([("a", "<f4")]) if n % 2 else np.dtype(np.complex128), n)


def _masked(device, good, spec, param):
    return np.ma.masked_array(np.zeros(max(_elements(good), 1), spec.dtypes[param]))


def _read_only(device, good, spec, param):
    array = np.zeros(max(_elements(good), 1), spec.dtypes[param])
    array.flags.writeable = False
    return array


def _wrong_device(device, good, spec, param):
    return _buffer(_other_device(device), spec.dtypes[param], max(_elements(good), 1))


BUFFER_KINDS = [
    ("None", lambda *a: None, TypeError),
    ("list", lambda d, g, s, p: [0] * max(_elements(g), 1), TypeError),
    ("str", lambda *a: "0123", TypeError),
    ("object", lambda *a: object(), TypeError),
    ("short", _short, ValueError),
    ("non-contiguous", _noncontiguous, ValueError),
    ("other dtype", _other_dtype, TypeError),
    ("exotic dtype", _exotic_dtype, TypeError),
    ("wrong device", _wrong_device, TypeError),
    # On a cuda primitive a NumPy array of any kind is the wrong device: TypeError too.
    ("masked", _masked, TypeError),
]
OUT_KINDS = BUFFER_KINDS + [("read-only", _read_only, None)]  # None: ValueError on cpu, TypeError on cuda
COUNT_KINDS = [
    ("None", None, TypeError), ("str", "3", TypeError), ("float", 3.0, TypeError), ("bool", True, TypeError),
    ("nan", math.nan, TypeError), ("inf", math.inf, TypeError), ("numpy float", np.float64(2), TypeError),
    ("negative", -1, ValueError), ("2**63", 1 << 63, ValueError), ("10**400", 10**400, ValueError),
]
OFFSET_KINDS = [
    ("None", None, TypeError), ("str", "0", TypeError), ("float", 0.5, TypeError), ("bool", False, TypeError),
    ("nan", math.nan, TypeError), ("2**63", 1 << 63, ValueError), ("-2**63-1", INT64_MIN - 1, ValueError),
    ("10**400", 10**400, ValueError), ("-10**400", -(10**400), ValueError),
]
DIMS_KINDS = [
    ("None", lambda g: None, TypeError), ("str", lambda g: "12", TypeError), ("int", lambda g: 3, TypeError),
    ("float entry", lambda g: (1.0,) + g[1:], TypeError), ("bool entry", lambda g: (True,) + g[1:], TypeError),
    ("None entry", lambda g: (None,) + g[1:], TypeError),
    ("negative entry", lambda g: (-1,) + g[1:], ValueError), ("2**63 entry", lambda g: (1 << 63,) + g[1:], ValueError),
    ("10**400 entry", lambda g: (10**400,) + g[1:], ValueError), ("65 entries", lambda g: (1,) * 65, ValueError),
]
DIM_KINDS = [  # one dim of the src_dims given (here 2 of them)
    ("None", None, TypeError), ("str", "1", TypeError), ("float", 1.0, TypeError), ("bool", True, TypeError),
    ("numpy float", np.float64(1), TypeError), ("negative", -1, IndexError), ("ndim", 2, IndexError),
    ("10**400", 10**400, IndexError),
]
SCALAR_KINDS = [  # a value for an int64 element
    ("None", None, TypeError), ("str", "1", TypeError), ("list", [1], TypeError), ("complex", 1j, TypeError),
    ("array", np.zeros(2), TypeError), ("object", object(), TypeError), ("2**63", 1 << 63, OverflowError),
    ("-10**400", -(10**400), OverflowError), ("nan", math.nan, ValueError), ("inf", math.inf, ValueError),
]
DTYPE_KINDS = [
    ("None", None, TypeError), ("complex", np.complex64, TypeError), ("complex name", "complex64", TypeError),
    ("float", 3.5, TypeError), ("object", object(), TypeError), ("datetime", "M8[s]", TypeError),
]


def stream_kinds(device: str):
    return [
        ("None", None), ("str", device), ("object", object()), ("Device", ep.GetDevice(device)),
        ("other device's stream", ep.GetDevice(_other_device(device)).CreateStream()),
    ]


def bad_argument(data, device: str, spec: Spec, param: str, call: Call) -> tuple[str, object, type[Exception]]:
    """(label, a bad value for param drawn from its kind, the error it must raise)."""
    if param == "stream":
        label, value = data.draw(st.sampled_from(stream_kinds(device)), label="kind")
        return label, value, TypeError
    kind, good = spec.kinds[param], call.args[param]
    if kind in ("in", "out"):
        label, make, error = data.draw(st.sampled_from(OUT_KINDS if kind == "out" else BUFFER_KINDS), label="kind")
        value = make(device, good, spec, param)
        if error is None:
            error = ValueError if device == "cpu" else TypeError
        return label, value, error
    if kind == "dims":
        label, make, error = data.draw(st.sampled_from(DIMS_KINDS), label="kind")
        return label, make(tuple(good)), error
    kinds = {"count": COUNT_KINDS, "offset": OFFSET_KINDS, "dtype": DTYPE_KINDS, "scalar": SCALAR_KINDS, "dim": DIM_KINDS}[kind]
    return data.draw(st.sampled_from(kinds), label="kind")


def check_bad_argument(data, device: str, name: str, param: str) -> None:
    """A good call of spec name with param replaced by a bad value: the error names param, no input
    changes and the output is untouched, guards included."""
    spec = SPECS[name]
    sizes = data.draw(st.tuples(*[st.integers(1, 3)] * spec.arity), label="sizes")
    call = spec.build(device, sizes, sum(sizes))
    label, value, error = bad_argument(data, device, spec, param, call)
    # None is src_strides' default (C-contiguous src_dims): a good value.
    assume(not (param == "src_strides" and value is None))
    call.args[param] = value
    inputs = {key: digest(arg) for key, arg in call.args.items() if key not in call.outputs}
    primitive = spec.primitive(device)
    expect_error(lambda: launch(primitive, call), error, (param,))
    assert {key: digest(arg) for key, arg in call.args.items() if key not in call.outputs} == inputs, f"{label}: an input changed"
    for guarded in call.outputs.values():
        guarded.check_unchanged()
