"""The declaration of an ep.fuse call for global tensors: its plan (the expression traced on the
arrays' metadata, which the ranks agree on) and SBP rules: an ElementwiseFused expression over
broadcast arrays, named
args[0], args[1], ... by their position in the call (only the arrays the outputs read), with
outputs out[0], out[1], ... of one shape.

Every op of a fused expression is elementwise, so each dim of the outputs splits them all, every
input split on its own dim where it has the outputs' size there, else broadcast (as for binary's
operands); all broadcast gives broadcast outputs. Partial sums pass, conservatively, only where
every output is a plain sum of inputs (Input leaves under attribute-free kAdd nodes: no scalar,
cast or other op, which a partial sum might not pass through), outside bool (whose sum is no count).
"""
from __future__ import annotations

import numpy as np

from ep.common.primitive.broadcast import broadcast_shape
from ep.include.primitive.binary_op import BinaryOp
from ep.include.primitive.elementwise_fused import Binary, Input
from ep.common.runtime.scalar import is_scalar
from ep.ops.elementwise_rules import _operand
from ep.sbp.global_ops import device_of, global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape


def fuse_plan(self, args) -> Plan:
    """The call self(*args) (self: the Fused): its trace on the arrays' metadata, which every rank
    must share (a closure's constants too); the arrays the outputs read, named by call position,
    and this rank's run of self on its pieces (scalars as they are, unread arrays unused)."""
    arrays = global_tensors(**{self._name(p): a for p, a in enumerate(args) if not is_scalar(a)})
    trace = self.trace(args, device_of(next(iter(arrays.values()))))
    read = {f"args[{p}]": p for p in sorted({p for reads in trace.reads for p in reads})}
    dtypes = tuple(d.dtype for d in trace.primitive.dst_dtypes)

    def run(local, piece):
        values = [a if is_scalar(a) else a.to_local() for a in args]
        for name, p in read.items():
            values[p] = local[name]
        return self(*values)

    attrs = {"expression": trace.nodes, "dtypes": tuple(d.name for d in dtypes)}
    agreed = {"expression": trace.nodes, "its constants": trace.sources}
    return Plan({n: args[p] for n, p in read.items()}, attrs, dtypes[0] if trace.single else dtypes, agreed=agreed, run=run)


def is_sum(node) -> bool:
    """Whether node is a sum of inputs (linear in each, so it takes partial sums)."""
    if isinstance(node, Input):
        return True
    plain = isinstance(node, Binary) and node.op is BinaryOp.kAdd and node.attr0 is None and node.attr1 is None
    return plain and is_sum(node.a) and is_sum(node.b)


def fuse_shapes(expression, dtypes, **arrays) -> dict:
    """expression: the outputs' nodes; dtypes: their dtypes; arrays: the inputs' shapes."""
    shapes = {name: shape(value, name) for name, value in arrays.items()}
    out: tuple[int, ...] = ()
    for name, s in shapes.items():
        out = broadcast_shape(out, s, ("the arrays before", name))
    return {**shapes, **{f"out[{j}]": out for j in range(len(expression))}}


def fuse_signatures(expression, dtypes, **arrays) -> list[Signature]:
    shapes = fuse_shapes(expression, dtypes, **arrays)
    outs = [f"out[{j}]" for j in range(len(expression))]
    out = shapes[outs[0]] if outs else ()

    def each(sbp, inputs):
        return Signature(inputs, {o: sbp for o in outs})

    sigs = [each(S(d), {n: _operand(shapes[n], out, d) for n in arrays}) for d in range(len(out))]
    if all(map(is_sum, expression)) and all(np.dtype(d).kind != "b" for d in dtypes):
        sigs.append(each(P, {n: P for n in arrays}))
    return sigs + [each(B, {n: B for n in arrays})]


def fuse_attributes(slices, expression, dtypes, **arrays) -> dict:
    """None: the expression is the same on every rank."""
    return {}


RULES = {"fuse": OpRule(fuse_plan, fuse_signatures, fuse_shapes, fuse_attributes, None)}
register_rules(RULES)
