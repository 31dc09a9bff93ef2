"""One rank's share of a global op: the ep.ops function on its pieces with the physical attributes
ep.sbp.physical gives (a gather's offset: ep.ops' shard gather). Shared by the in-process SBP checks
(tests/sbp) and the MPI global ops (global_ops.py).
"""
from __future__ import annotations

import math

import numpy as np

import ep.ops
from ep.sbp.signature import Physical


def run_op(name: str, args: dict, attrs: dict, **options):
    """The ep.ops function name on arrays args (on one device) with the attributes attrs, as
    ep.sbp.signatures takes them; options: the call's other keywords (unary's cast dtype)."""
    if name == "full":
        return ep.ops.full(attrs["shape"], attrs["fill_value"], dtype=attrs.get("dtype"), device=attrs.get("device", "cpu"), **options)
    if name in ("gather", "gather_grad"):
        options = {"axis": attrs["axis"], "batch_dims": attrs["batch_dims"], **options}
    if name == "gather":
        return ep.ops.gather(args["params"], args["indices"], **options)
    if name == "batch_gather":
        return ep.ops.batch_gather(args["params"], args["indices"], **options)
    if name == "gather_grad":
        return ep.ops.gather_grad(args["dy"], args["indices"], attrs["params_shape"], **options)
    if name == "expand":
        return ep.ops.expand(args["x"], attrs["sizes"], **options)
    if name == "expand_grad":
        return ep.ops.expand_grad(args["dy"], attrs["input_shape"], **options)
    if name == "repeat":
        return ep.ops.repeat(args["x"], attrs["sizes"], **options)
    if name == "permute":
        return ep.ops.permute(args["x"], attrs["dims"], **options)
    if name == "pad":
        return ep.ops.pad(args["x"], attrs["pad"], attrs.get("value", 0), **options)
    if name == "unary":
        return ep.ops.unary(attrs["op"], args["x"], attrs.get("attr0"), attrs.get("attr1"), **options)
    if name == "binary":
        return ep.ops.binary(attrs["op"], args["a"], args["b"], attrs.get("attr0"), attrs.get("attr1"), **options)
    if name == "matmul":
        return ep.ops.matmul(args["a"], args["b"], **options)
    if name == "where":
        return ep.ops.where(args["condition"], args["x"], args["y"], **options)
    if name == "add_n":
        return ep.ops.add_n([args[f"arrays[{i}]"] for i in range(len(args))], **options)
    if name == "one_hot":
        values = {key: attrs[key] for key in ("dtype", "on_value", "off_value") if key in attrs}
        return ep.ops.one_hot(args["indices"], attrs["num_classes"], **values, **options)
    if name in ("softmax", "log_softmax"):
        return getattr(ep.ops, name)(args["x"], attrs["dim"], **options)
    if name in ("softmax_grad", "log_softmax_grad"):
        return getattr(ep.ops, name)(args["y"], args["dy"], attrs["dim"], **options)
    raise ValueError(f"name: {name!r} is not an ep.ops function with SBP signatures")


def zeros(shape: tuple[int, ...], dtype: np.dtype, device: str):
    """A new array of zeros on device ("cpu" or "cuda")."""
    return ep.ops.full(shape, 0, dtype=dtype, device=device)


def run_piece(name: str, local: dict, piece: Physical, out_dtype, device: str, **options):
    """The op on one rank's pieces (arrays on device, keyed as the op's parameters)
    with that rank's physical attributes (piece: ep.sbp.physical's); out_dtype: the result's. Where
    gather's or gather_grad's piece holds part of the gather axis (an offset), indices must be
    non-negative and in bounds: the launch checks neither. options: the ep.ops call's other
    keywords (unary's dtype, kCast's destination)."""
    out_shape, attrs = piece.shapes["out"], piece.attributes
    empty_input = name != "pad" and any(math.prod(a.shape) == 0 for a in local.values())
    if math.prod(out_shape) == 0 or empty_input:
        # A rank holding no elements launches nothing: its piece of a partial sum is zeros (but
        # pad's: an empty x pads to a piece of its value).
        return zeros(out_shape, out_dtype, device)
    if name in ("gather", "batch_gather", "gather_grad") and attrs["offset"] is not None:
        # The piece holds rows [offset, ...) of the gather axis: ep.ops' shard gather.
        options = {**options, "offset": attrs["offset"], "check_bounds": False}
    return run_op(name, local, attrs, **options)
