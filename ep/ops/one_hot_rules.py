"""The declaration of one_hot for global indices: the local op's dtype rule (one_hot_dtype) and SBP
rules: a row per index, so the result splits with the indices.

Indices split on any of their axes give the result split on the same axis (each rank one-hot
encodes its own indices), and broadcast indices a broadcast result. The class axis never splits
from the indices, and partial sums do not pass: a one-hot is not linear in its indices. A global
one_hot needs num_classes: -1 would infer it from each rank's piece.
"""
from __future__ import annotations

import numpy as np

from ep.common.runtime.validate import count
from ep.ops.one_hot import one_hot, one_hot_dtype
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


def one_hot_plan(indices, num_classes=-1, dtype=np.int64, on_value=1, off_value=0) -> Plan:
    """one_hot's rule on the indices' metadata (num_classes given: -1 would differ between pieces)."""
    indices = global_tensors(indices=indices)["indices"]
    dtype = one_hot_dtype(indices.dtype, dtype)
    attrs = {"num_classes": num_classes, "dtype": dtype.value, "on_value": on_value, "off_value": off_value}
    return Plan({"indices": indices}, attrs, dtype.dtype)


def one_hot_shapes(indices, num_classes, dtype=np.int64, on_value=1, off_value=0) -> dict:
    indices = shape(indices, "indices")
    if num_classes == -1:
        raise ValueError("num_classes: -1 (inferred from the indices) is not supported on global tensors; pass num_classes")
    return {"indices": indices, "out": indices + (count(num_classes, "num_classes"),)}


def one_hot_signatures(indices, num_classes, dtype=np.int64, on_value=1, off_value=0) -> list[Signature]:
    rank = len(one_hot_shapes(indices, num_classes)["indices"])
    return [signature(S(axis), indices=S(axis)) for axis in range(rank)] + [signature(B, indices=B)]


def one_hot_attributes(slices, indices, num_classes, dtype=np.int64, on_value=1, off_value=0) -> dict:
    """The same on every rank: each piece has every class."""
    return {"num_classes": num_classes, "dtype": dtype, "on_value": on_value, "off_value": off_value}


def _run_one_hot(args, attrs, **options):
    values = {key: attrs[key] for key in ("dtype", "on_value", "off_value") if key in attrs}
    return one_hot(args["indices"], attrs["num_classes"], **values, **options)


RULES = {"one_hot": OpRule(one_hot_plan, one_hot_signatures, one_hot_shapes, one_hot_attributes, _run_one_hot)}
register_rules(RULES)
