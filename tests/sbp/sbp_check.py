"""The in-process check of an SBP signature: split logical inputs by the input SBPs (partial sums as
random parts that add up), run the op on each piece with its physical attributes, reassemble by the
output SBP and compare with the op on the logical inputs."""
from __future__ import annotations

import itertools
import math

import numpy as np

import ep
from ep.common.runtime.data_type import as_data_type
from ep.include.primitive import BatchGatherFactory, NewPrimitive, UnsortedSegmentSumFactory
from ep.ops.gather import gather_shape
from ep.sbp import assemble, physical, sbp_of, split_array
from ep.testing import to_device, to_numpy


def on(x: np.ndarray, device: str):
    """x on device, keeping its shape (0-d included)."""
    return to_device(x, device).reshape(np.shape(x))


def run_logical(name: str, arrays: dict, attrs: dict, device: str) -> np.ndarray:
    """The op on the logical inputs."""
    args = {n: on(a, device) for n, a in arrays.items()}
    calls = {
        "gather": lambda: ep.ops.gather(args["params"], args["indices"], attrs["axis"], attrs["batch_dims"]),
        "batch_gather": lambda: ep.ops.batch_gather(args["params"], args["indices"]),
        "gather_grad": lambda: ep.ops.gather_grad(
            args["dy"], args["indices"], attrs["params_shape"], attrs["axis"], attrs["batch_dims"]
        ),
        "expand": lambda: ep.ops.expand(args["x"], attrs["sizes"]),
        "expand_grad": lambda: ep.ops.expand_grad(args["dy"], attrs["input_shape"]),
        "repeat": lambda: ep.ops.repeat(args["x"], attrs["sizes"]),
        "unary": lambda: ep.ops.unary(attrs["op"], args["x"], attrs.get("attr0"), attrs.get("attr1")),
        "binary": lambda: ep.ops.binary(attrs["op"], args["a"], args["b"], attrs.get("attr0"), attrs.get("attr1")),
    }
    return to_numpy(calls[name]())


def _launch_with_offset(factory, device: str, data: np.ndarray, indices: np.ndarray, shape, out_shape, offset: int):
    """BatchGather or UnsortedSegmentSum over a piece holding rows [offset, offset + shape.gather)."""
    dev = ep.GetDevice(device)
    dtypes = as_data_type(data.dtype), as_data_type(indices.dtype)
    primitive = NewPrimitive(factory, dev, *dtypes, wrap_negative=False, check_bounds=False)
    out = on(np.zeros(out_shape, data.dtype), device)
    primitive.Launch(
        dev.default_stream, on(indices, device), shape.num_indices, on(data, device),
        shape.batch, shape.outer, shape.gather, shape.inner, out, offset=offset,
    )
    return to_numpy(out)


def run_piece(name: str, local: dict, piece, dtype, device: str) -> np.ndarray:
    """The op on one rank's pieces with that rank's physical attributes (piece: ep.sbp.physical's)."""
    out_shape, attrs = piece.shapes["out"], piece.attributes
    if math.prod(out_shape) == 0 or any(a.size == 0 for a in local.values()):
        # A rank holding no elements launches nothing: its piece of a partial sum is zeros.
        return np.zeros(out_shape, dtype)
    if name in ("gather", "batch_gather") and attrs["offset"] is not None:
        rank = local["indices"].ndim
        axis, batch_dims = (rank - 1, rank - 1) if name == "batch_gather" else (attrs["axis"], attrs["batch_dims"])
        shape = gather_shape(local["params"].shape, local["indices"].shape, axis, batch_dims)
        return _launch_with_offset(
            BatchGatherFactory, device, local["params"], local["indices"], shape, out_shape, attrs["offset"]
        )
    if name == "gather_grad" and attrs["offset"] is not None:
        shape = gather_shape(attrs["params_shape"], local["indices"].shape, attrs["axis"], attrs["batch_dims"])
        return _launch_with_offset(
            UnsortedSegmentSumFactory, device, local["dy"], local["indices"], shape, out_shape, attrs["offset"]
        )
    return run_logical(name, local, attrs, device)


def check(
    name: str, nd_signature, hierarchy, arrays: dict, attrs: dict, expected: np.ndarray, device: str, rng, tolerance=None
) -> None:
    """Verifies one nd-signature of op name on hierarchy (see the module docstring).

    attrs: the op's logical attributes as ep.sbp.signatures takes them; tolerance: (rtol, atol) for
    float outputs of partial sums that are not exact (None: exact)."""
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    pieces = {n: split_array(a, sbp_of(nd_signature, n), hierarchy, rng) for n, a in arrays.items()}
    outs = {}
    for index in itertools.product(*(range(n) for n in hierarchy)):
        piece = physical(name, nd_signature, hierarchy, index, **kw)
        local = {n: pieces[n][index] for n in arrays}
        for n, a in local.items():
            assert a.shape == piece.shapes[n], (n, index, nd_signature)
        outs[index] = run_piece(name, local, piece, expected.dtype, device)
        assert outs[index].shape == piece.shapes["out"], (index, nd_signature)
    exact = tolerance is None or expected.dtype.kind != "f"
    # Broadcast copies of inexact partial sums may round differently.
    result = assemble(outs, sbp_of(nd_signature, "out"), hierarchy, check=exact)
    assert result.shape == expected.shape and result.dtype == expected.dtype, nd_signature
    if exact:
        np.testing.assert_array_equal(result, expected, err_msg=repr(nd_signature))
    else:
        rtol, atol = tolerance
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=repr(nd_signature))
