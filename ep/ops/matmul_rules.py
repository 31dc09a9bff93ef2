"""The declaration of matmul for global tensors: the local op's dtype rule (matmul_dtype) and SBP
rules (np.matmul's shapes: 1-d operands, broadcast batch dims).

With a's rows split, each rank multiplies its rows by the whole b: out's rows split (S(0) x B ->
S(0) for matrices). With b's columns split, out's columns split (B x S(1) -> S(1)). With the
contracted dim split in both (a's columns, b's rows: S(1) x S(0)), each rank's product is a part
of the sum: P. The product is linear in each operand, so P x B and B x P give P. A batch dim of
out splits it where each operand holding that dim splits it too (an operand broadcast there is B).
"""
from __future__ import annotations

from ep.ops.elementwise_rules import _operand
from ep.ops.matmul import matmul, matmul_dtype, matmul_shape
from ep.sbp.global_ops import global_tensors
from ep.sbp.sbp import broadcast as B, partial_sum as P, split as S
from ep.sbp.signature import OpRule, Plan, Signature, register_rules, shape, signature


def matmul_plan(a, b) -> Plan:
    """matmul's rule on two global tensors' metadata: they multiply in their float promotion."""
    tensors = global_tensors(a=a, b=b)
    dtype = matmul_dtype(a, b).dtype
    return Plan(tensors, {"dtype": dtype.name}, dtype, casts=frozenset(n for n, t in tensors.items() if t.dtype != dtype))


def matmul_shapes(a, b, dtype="float32") -> dict:
    a, b = shape(a, "a"), shape(b, "b")
    return {"a": a, "b": b, "out": matmul_shape(a, b)}


def matmul_signatures(a, b, dtype="float32") -> list[Signature]:
    """dtype: the result's (every float dtype sums: P is always valid)."""
    shapes = matmul_shapes(a, b)
    a, b, out = shapes["a"], shapes["b"], shapes["out"]
    # The batch dims of out, and of a and b aligned to them (a 1-d operand has none).
    batch = len(out) - (len(a) > 1) - (len(b) > 1)
    a_batch, b_batch = a[:-2] if len(a) > 1 else (), b[:-2] if len(b) > 1 else ()
    sigs = [signature(S(d), a=_operand(a_batch, out[:batch], d), b=_operand(b_batch, out[:batch], d)) for d in range(batch)]
    if len(a) > 1:  # a's rows: out's dim after the batch dims
        sigs.append(signature(S(batch), a=S(len(a) - 2), b=B))
    if len(b) > 1:  # b's columns: out's last dim
        sigs.append(signature(S(len(out) - 1), a=B, b=S(len(b) - 1)))
    sigs.append(signature(P, a=S(len(a) - 1), b=S(max(len(b) - 2, 0))))
    return sigs + [signature(P, a=P, b=B), signature(P, a=B, b=P), signature(B, a=B, b=B)]


def matmul_attributes(slices, a, b, dtype="float32") -> dict:
    """None: matmul has no attributes."""
    return {}


RULES = {"matmul": OpRule(matmul_plan, matmul_signatures, matmul_shapes, matmul_attributes, lambda args, attrs, **options: matmul(args["a"], args["b"], **options))}
register_rules(RULES)
