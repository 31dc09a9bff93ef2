"""SBP signatures of the ep.ops functions, and each rank's physical shapes and attributes.

A Signature gives one SBP per input and output of an op (keyed by the ep.ops parameter names; the
result is "out"); an nd-signature is one Signature per hierarchy axis. Each op's rules live in
ep.sbp.ops (loaded on first use: they use ep.ops' shape rules, which import Numba).
"""
from __future__ import annotations

import importlib
import itertools
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple

from ep.sbp.physical import Index, hierarchy_of, physical_slices
from ep.sbp.sbp import SBP


class Signature:
    """One SBP per input (inputs) and per output (outputs) of an op, on one hierarchy axis."""

    __slots__ = ("inputs", "outputs")

    def __init__(self, inputs: Mapping[str, SBP], outputs: Mapping[str, SBP]) -> None:
        for name, s in {**inputs, **outputs}.items():
            if not isinstance(s, SBP):
                raise TypeError(f"{name}: {s!r} is not an SBP")
        object.__setattr__(self, "inputs", MappingProxyType(dict(inputs)))
        object.__setattr__(self, "outputs", MappingProxyType(dict(outputs)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Signature is immutable")

    def __getitem__(self, name: str) -> SBP:
        """The SBP of an input or output by name."""
        if name in self.inputs:
            return self.inputs[name]
        return self.outputs[name]

    def __eq__(self, other: object) -> bool:
        return type(other) is Signature and (dict(self.inputs), dict(self.outputs)) == (dict(other.inputs), dict(other.outputs))

    def __hash__(self) -> int:
        return hash((frozenset(self.inputs.items()), frozenset(self.outputs.items())))

    def __repr__(self) -> str:
        def side(sbps: Mapping[str, SBP]) -> str:
            return ", ".join(f"{name}={s!r}" for name, s in sbps.items())

        return f"Signature({side(self.inputs)} -> {side(self.outputs)})"


class OpRule(NamedTuple):
    """An op's SBP rules, each called with the op's logical shapes and attributes as keywords."""

    signatures: Callable[..., list[Signature]]
    """The 1-d signatures."""
    shapes: Callable[..., dict[str, tuple[int, ...]]]
    """The logical shape of every input and output."""
    attributes: Callable[..., dict]
    """attributes(slices, **logical): the op's attributes on one rank, from the box each input and
    output holds there (physical_slices)."""


# The module holding each op's OpRule (in its RULES), by ep.ops function name.
_MODULES = {
    "full": "ep.sbp.ops.full",
    "gather": "ep.sbp.ops.gather",
    "batch_gather": "ep.sbp.ops.gather",
    "gather_grad": "ep.sbp.ops.gather",
    "matmul": "ep.sbp.ops.matmul",
    "expand": "ep.sbp.ops.expand",
    "expand_grad": "ep.sbp.ops.expand",
    "repeat": "ep.sbp.ops.expand",
    "permute": "ep.sbp.ops.layout",
    "pad": "ep.sbp.ops.layout",
    "unary": "ep.sbp.ops.elementwise",
    "binary": "ep.sbp.ops.elementwise",
    "where": "ep.sbp.ops.where",
    "add_n": "ep.sbp.ops.add_n",
    "one_hot": "ep.sbp.ops.one_hot",
    "softmax": "ep.sbp.ops.softmax",
    "log_softmax": "ep.sbp.ops.softmax",
    "softmax_grad": "ep.sbp.ops.softmax",
    "log_softmax_grad": "ep.sbp.ops.softmax",
    "fuse": "ep.sbp.ops.fuse",
}
OPS = tuple(_MODULES)


def rule(name: str) -> OpRule:
    """The OpRule of the ep.ops function name; ValueError for another name."""
    module = _MODULES.get(name) if isinstance(name, str) else None
    if module is None:
        raise ValueError(f"name: {name!r} is not an op with SBP signatures; expected one of {', '.join(OPS)}")
    return importlib.import_module(module).RULES[name]


def _call(name: str, fn: Callable, *args, **logical):
    try:
        return fn(*args, **logical)
    except TypeError as error:
        if "argument" in str(error):
            # A missing or unknown keyword: say which op's arguments they were.
            raise TypeError(f"{name}: {error}") from None
        raise


def signatures(name: str, /, **shapes_and_attrs) -> list[Signature]:
    """The 1-d SBP signatures of the ep.ops function name for these logical shapes and attributes,
    e.g. signatures("gather", params=(4, 5), indices=(3,), axis=1)."""
    return _call(name, rule(name).signatures, **shapes_and_attrs)


def nd_signatures(name: str, placement, /, **shapes_and_attrs) -> list[tuple[Signature, ...]]:
    """The nd-signatures on placement's hierarchy: one 1-d signature per hierarchy axis."""
    ones = signatures(name, **shapes_and_attrs)
    return list(itertools.product(ones, repeat=len(hierarchy_of(placement))))


def nd_signature(signature: Signature | tuple[Signature, ...], ndim: int) -> tuple[Signature, ...]:
    """signature as a tuple of ndim Signatures (a single one stands for a 1-tuple on a 1-d hierarchy)."""
    if isinstance(signature, Signature):
        signature = (signature,)
    if not isinstance(signature, tuple) or not all(isinstance(s, Signature) for s in signature):
        raise TypeError(f"signature: {signature!r} is not a Signature or a tuple of Signatures")
    if len(signature) != ndim:
        raise ValueError(f"signature: has {len(signature)} Signatures; expected {ndim}, one per hierarchy axis")
    return signature


def sbp_of(signature: Signature | tuple[Signature, ...], name: str) -> tuple[SBP, ...]:
    """The nd-SBP of the input or output name under an nd-signature."""
    signature = (signature,) if isinstance(signature, Signature) else signature
    return tuple(s[name] for s in signature)


class Physical(NamedTuple):
    """What the rank at one position computes: the box of each logical input and output it holds
    (slices), their shapes, and the op's attributes there."""

    slices: dict[str, tuple[slice, ...]]
    shapes: dict[str, tuple[int, ...]]
    attributes: dict


def physical(name: str, signature, placement, index: Index, /, **shapes_and_attrs) -> Physical:
    """The physical shapes and attributes of op name on the rank at index of placement (a Placement
    or a hierarchy) under signature (a Signature on a 1-d hierarchy, or one per hierarchy axis),
    which must be one of the op's signatures."""
    op = rule(name)
    hierarchy = hierarchy_of(placement)
    signature = nd_signature(signature, len(hierarchy))
    valid = _call(name, op.signatures, **shapes_and_attrs)
    for s in signature:
        if s not in valid:
            raise ValueError(f"signature: {s!r} is not a signature of {name} for these shapes and attributes")
    shapes = op.shapes(**shapes_and_attrs)
    slices = {t: physical_slices(shape, sbp_of(signature, t), hierarchy, index) for t, shape in shapes.items()}
    local = {t: tuple(s.stop - s.start for s in box) for t, box in slices.items()}
    return Physical(slices, local, op.attributes(slices, **shapes_and_attrs))
