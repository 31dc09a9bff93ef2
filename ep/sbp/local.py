"""One rank's share of a global op: the ep.ops function on its pieces (its OpRule's run) with the
physical attributes ep.sbp.physical gives (a gather's offset: ep.ops' shard gather). Shared by the
in-process SBP checks (tests/sbp) and the MPI global ops (global_ops.py).
"""
from __future__ import annotations

import math

import numpy as np

from ep.sbp.sbp import PartialSum, Split
from ep.sbp.signature import Physical, rule


def run_op(name: str, args: dict, attrs: dict, **options):
    """The ep.ops function name on arrays args (on one device) with the attributes attrs, as
    ep.sbp.signatures takes them; options: the call's other keywords (unary's cast dtype)."""
    run = rule(name).run
    if run is None:
        raise ValueError(f"name: {name!r} is not an ep.ops function a rank runs on its pieces")
    return run(args, attrs, **options)


def splitting(piece: Physical, name: str, dims) -> tuple[int, ...]:
    """The hierarchy axes that split tensor name on any of dims in piece's signature: the ranks a
    reduction or scan over dims finishes with (Group.over)."""
    return tuple(h for h, s in enumerate(piece.sbps[name]) if isinstance(s, Split) and s.axis in dims)


def zeros(shape: tuple[int, ...], dtype: np.dtype, device: str):
    """A new array of zeros on device ("cpu" or "cuda")."""
    return run_op("full", {}, {"shape": shape, "fill_value": 0, "dtype": dtype, "device": device})


def run_piece(name: str, local: dict, piece: Physical, out_dtype, device: str, **options):
    """The op on one rank's pieces (arrays on device, keyed as the op's parameters)
    with that rank's physical attributes (piece: ep.sbp.physical's); out_dtype: the result's. Where
    gather's or gather_grad's piece holds part of the gather axis (an offset), indices must be
    non-negative and in bounds: the launch checks neither. options: the ep.ops call's other
    keywords (unary's dtype, kCast's destination)."""
    out_shape, attrs = piece.shapes["out"], piece.attributes
    partial = any(isinstance(s, PartialSum) for s in piece.sbps.get("out", ()))
    if math.prod(out_shape) == 0 or (partial and all(math.prod(a.shape) == 0 for a in local.values())):
        # Nothing to compute, or a piece of a partial sum from no elements: zeros. (Any other op
        # runs on its empty pieces: a max refuses them, a product of none is 1, addmm's term adds.)
        return zeros(out_shape, out_dtype, device)
    if attrs.get("offset") is not None:
        # The piece holds rows [offset, ...) of the gather axis: ep.ops' shard gather.
        options = {**options, "offset": attrs["offset"], "check_bounds": False}
    return run_op(name, local, attrs, **options)
