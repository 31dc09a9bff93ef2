"""The in-process check of an SBP signature: split logical inputs by the input SBPs (partial sums as
random parts that add up), run the op on each piece with its physical attributes, reassemble by the
output SBP and compare with the op on the logical inputs."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ep.sbp import assemble, physical, sbp_of, split_array
from ep.sbp.local import run_op, run_piece as local_piece
from ep.testing import to_device, to_numpy


def on(x: np.ndarray, device: str):
    """x on device, keeping its shape (0-d included)."""
    return to_device(x, device).reshape(np.shape(x))


def run_logical(name: str, arrays: dict, attrs: dict, device: str) -> np.ndarray:
    """The op on the logical inputs."""
    return to_numpy(run_op(name, {n: on(a, device) for n, a in arrays.items()}, attrs))


def run_piece(name: str, local: dict, piece, dtype, device: str) -> np.ndarray:
    """The op on one rank's pieces with that rank's physical attributes (ep.sbp.local.run_piece)."""
    return to_numpy(local_piece(name, {n: on(a, device) for n, a in local.items()}, piece, dtype, device))


def check(
    name: str, nd_signature, hierarchy, arrays: dict, attrs: dict, expected: np.ndarray, device: str, rng, tolerance=None,
    exchange=None,
) -> None:
    """Verifies one nd-signature of op name on hierarchy (see the module docstring).

    attrs: the op's logical attributes as ep.sbp.signatures takes them; tolerance: (rtol, atol) for
    float outputs of partial sums that are not exact (None: exact); exchange(outs, pieces): what the
    ranks' collective after the local run makes of their outputs (both keyed by index; an out None
    where the rank held none of an input), in process."""
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    pieces = {n: split_array(a, sbp_of(nd_signature, n), hierarchy, rng) for n, a in arrays.items()}
    outs, physicals = {}, {}
    for index in itertools.product(*(range(n) for n in hierarchy)):
        piece = physicals[index] = physical(name, nd_signature, hierarchy, index, **kw)
        local = {n: pieces[n][index] for n in arrays}
        for n, a in local.items():
            assert a.shape == piece.shapes[n], (n, index, nd_signature)
        if exchange is not None and math.prod(piece.shapes["out"]) and not all(a.size for a in local.values()):
            outs[index] = None  # a rank holding none of an input gives nothing to the exchange
            continue
        outs[index] = run_piece(name, local, piece, expected.dtype, device)
        assert outs[index].shape == piece.shapes["out"], (index, nd_signature)
    if exchange is not None:
        outs = exchange(outs, physicals)
    exact = tolerance is None or expected.dtype.kind != "f"
    # Broadcast copies of inexact partial sums may round differently.
    result = assemble(outs, sbp_of(nd_signature, "out"), hierarchy, check=exact)
    assert result.shape == expected.shape and result.dtype == expected.dtype, nd_signature
    if exact:
        np.testing.assert_array_equal(result, expected, err_msg=repr(nd_signature))
    else:
        rtol, atol = tolerance
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=repr(nd_signature))
