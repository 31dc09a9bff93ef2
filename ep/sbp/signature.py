"""Op declarations, SBP signatures of the ep.ops functions, and each rank's physical shapes and
attributes.

A Signature gives one SBP per input and output of an op (keyed by the ep.ops parameter names; the
result is "out"); an nd-signature is one Signature per hierarchy axis. Each op is declared beside
its function, in ep/ops/<family>_rules.py, which hands its OpRule here (register_rules) when ep.ops
loads: ep.sbp imports nothing of ep.ops. A lookup by name before then calls the loader the package
root gives (set_loader), which imports ep.ops.
"""
from __future__ import annotations

import itertools
import sys
from types import MappingProxyType
from typing import Callable, Mapping, NamedTuple

from ep.common.runtime.validate import dims
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


class Plan(NamedTuple):
    """What an op makes of one call's arguments (global tensors as metadata), with every check its
    local call makes: the global tensors its rules name, the rules' attributes, the result's dtype
    (a tuple for several outputs, named out[0], out[1], ...), the local call's other keywords, the
    inputs computed in another dtype (a partial sum of one is summed in its own dtype first), what
    else the ranks must agree on, and run(local, piece): this rank's result from its pieces (None:
    the OpRule's run, through ep.sbp.local.run_piece)."""

    tensors: dict
    attrs: dict
    out_dtype: object
    options: dict = {}
    casts: frozenset = frozenset()
    agreed: dict = {}
    run: Callable | None = None


class OpRule(NamedTuple):
    """An op's declaration for global tensors: its plan (the dtype rule and checks, on metadata),
    its SBP rules, each called with the op's logical shapes and attributes as keywords, and how a
    rank runs the op on its pieces."""

    plan: Callable[..., Plan] | None
    """plan(**arguments): the call's Plan, from the ep.ops function's arguments (bound, defaults
    applied; sbp= left out), raising what the local call raises; None for an op no global call takes."""

    signatures: Callable[..., list[Signature]]
    """The 1-d signatures."""
    shapes: Callable[..., dict[str, tuple[int, ...]]]
    """The logical shape of every input and output."""
    attributes: Callable[..., dict]
    """attributes(slices, **logical): the op's attributes on one rank, from the box each input and
    output holds there (physical_slices)."""
    run: Callable[..., object]
    """run(args, attrs, **options): the ep.ops function on arrays args (keyed by its parameter
    names) with the attributes attrs, as the signatures take them; options: the call's other keywords."""


_RULES: dict[str, OpRule] = {}
_LOADER: list[Callable[[], None]] = []


def register_rules(rules: Mapping[str, OpRule]) -> None:
    """Declares ops by ep.ops function name (each module of ep/ops/*_rules.py, on import)."""
    for name, op_rule in rules.items():
        if not isinstance(op_rule, OpRule):
            raise TypeError(f"rules[{name!r}]: {op_rule!r} is not an OpRule")
        _RULES[name] = op_rule


def set_loader(load: Callable[[], None]) -> None:
    """load(): what declares the ops (the package root's: import ep.ops), called on the first
    lookup by name, so that `import ep` stays without Numba."""
    _LOADER[:] = [load]


def _declared() -> dict[str, OpRule]:
    if _LOADER:
        _LOADER.pop()()
    return _RULES


def declared(name: str) -> OpRule | None:
    """The OpRule of the ep.ops function name, or None for an op declared without one (a global
    call boxes its tensors to broadcast: ep.sbp.global_ops)."""
    return _declared().get(name)


def rule(name: str) -> OpRule:
    """The OpRule of the ep.ops function name; ValueError for another name."""
    found = _declared().get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"name: {name!r} is not an op with SBP signatures; expected one of {', '.join(_RULES)}")
    return found


def __getattr__(name: str):
    # OPS: the declared ops' names, in declaration order (derived: ep.ops declares them as it loads).
    if name == "OPS":
        return tuple(_declared())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def signature(out: SBP, **inputs: SBP) -> Signature:
    """A Signature of an op with one output, "out"."""
    return Signature(inputs, {"out": out})


def box_shape(box: tuple[slice, ...]) -> tuple[int, ...]:
    """The shape of a box physical_slices gives."""
    return tuple(s.stop - s.start for s in box)


def shape(value: object, name: str) -> tuple[int, ...]:
    """A logical shape argument, checked (non-negative integer sizes, any rank)."""
    return dims(value, name, sys.maxsize)


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
    (slices), their shapes, the op's attributes there, and each one's nd-SBP under the signature
    (a scan along a split dim reads which hierarchy axes split it)."""

    slices: dict[str, tuple[slice, ...]]
    shapes: dict[str, tuple[int, ...]]
    attributes: dict
    sbps: dict[str, tuple[SBP, ...]]


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
    sbps = {t: sbp_of(signature, t) for t in shapes}
    return Physical(slices, local, op.attributes(slices, **shapes_and_attrs), sbps)
