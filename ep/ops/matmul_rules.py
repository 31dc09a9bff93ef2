"""The declaration of matmul for global tensors: the local op's dtype rule (matmul_dtype) and SBP
rules (np.matmul's shapes: 1-d operands, broadcast batch dims).

With a's rows split, each rank multiplies its rows by the whole b: out's rows split (S(0) x B ->
S(0) for matrices). With b's columns split, out's columns split (B x S(1) -> S(1)). With the
contracted dim split in both (a's columns, b's rows: S(1) x S(0)), each rank's product is a part
of the sum: P. The product is linear in each operand, so P x B and B x P give P. A batch dim of
out splits it where each operand holding that dim splits it too (an operand broadcast there is B).
addmm and linear add a term (input, bias) the product's way: split where the product splits (B
where it broadcasts there), and a partial sum beside a partial product (each rank adds its part).
"""
from __future__ import annotations

import numpy as np

from ep.common.runtime.scalar import result_dtype
from ep.ops.elementwise_rules import _operand
from ep.ops.matmul import addmm, linear, matmul, matmul_dtype, matmul_shape
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


def _with_term(sigs: list[Signature], out: tuple[int, ...], name: str, term: tuple[int, ...] | None) -> list[Signature]:
    """The product's signatures with a term of shape term (None: no term) broadcast to out and
    added: split where out splits, a partial sum beside a partial product, B beside B."""
    if term is None:
        return sigs
    with_term = []
    for sig in sigs:
        o = sig["out"]
        with_term.append(Signature({**sig.inputs, name: o if o in (P, B) else _operand(term, out, o.axis)}, sig.outputs))
    return with_term


def _plan_with_term(a, b, term, names: tuple[str, str, str], attrs: dict) -> Plan:
    """addmm's and linear's plan: the product's dtype promoted with the term's (as the local ops)."""
    tensors = global_tensors(**{names[0]: a, names[1]: b, **({names[2]: term} if term is not None else {})})
    dtype = matmul_dtype(a, b).dtype
    if term is not None:
        dtype = np.dtype(result_dtype(np.empty(0, dtype), term))
    return Plan(tensors, {**attrs, "dtype": dtype.name}, dtype, casts=frozenset(n for n, t in tensors.items() if t.dtype != dtype))


def addmm_plan(input, mat1, mat2, beta=1, alpha=1) -> Plan:  # noqa: A002 - torch's names
    return _plan_with_term(mat1, mat2, input, ("mat1", "mat2", "input"), {"beta": beta, "alpha": alpha})


def addmm_shapes(input, mat1, mat2, beta=1, alpha=1, dtype="float32") -> dict:  # noqa: A002
    shapes = matmul_shapes(mat1, mat2)
    return {"input": shape(input, "input"), "mat1": shapes["a"], "mat2": shapes["b"], "out": shapes["out"]}


def addmm_signatures(input, mat1, mat2, beta=1, alpha=1, dtype="float32") -> list[Signature]:  # noqa: A002
    shapes = addmm_shapes(input, mat1, mat2)
    sigs = [Signature({"mat1": s["a"], "mat2": s["b"]}, s.outputs) for s in matmul_signatures(mat1, mat2)]
    return _with_term(sigs, shapes["out"], "input", shapes["input"])


def linear_plan(input, weight, bias=None) -> Plan:  # noqa: A002 - torch's names
    return _plan_with_term(input, weight, bias, ("input", "weight", "bias"), {})


def linear_shapes(input, weight, bias=None, dtype="float32") -> dict:  # noqa: A002
    input, weight = shape(input, "input"), shape(weight, "weight")
    out = matmul_shape(input, weight[::-1], ("input", "weight"))
    return {"input": input, "weight": weight, **({"bias": shape(bias, "bias")} if bias is not None else {}), "out": out}


def linear_signatures(input, weight, bias=None, dtype="float32") -> list[Signature]:  # noqa: A002
    """matmul's of input and weight's transpose, weight's dims named as its own."""
    shapes = linear_shapes(input, weight, bias)
    flip = {S(0): S(1), S(1): S(0)} if len(shapes["weight"]) == 2 else {}
    sigs = [Signature({"input": s["a"], "weight": flip.get(s["b"], s["b"])}, s.outputs) for s in matmul_signatures(shapes["input"], shapes["weight"][::-1])]
    return _with_term(sigs, shapes["out"], "bias", shapes.get("bias"))


def _scalars(slices, **shapes_and_attrs) -> dict:
    """addmm's beta and alpha, the same on every rank."""
    return {k: shapes_and_attrs[k] for k in ("beta", "alpha") if k in shapes_and_attrs}


RULES = {
    "matmul": OpRule(matmul_plan, matmul_signatures, matmul_shapes, matmul_attributes, lambda args, attrs, **options: matmul(args["a"], args["b"], **options)),
    "addmm": OpRule(
        addmm_plan, addmm_signatures, addmm_shapes, _scalars,
        lambda args, attrs, **options: addmm(args["input"], args["mat1"], args["mat2"], beta=attrs["beta"], alpha=attrs["alpha"], **options),
    ),
    "linear": OpRule(
        linear_plan, linear_signatures, linear_shapes, _scalars,
        lambda args, attrs, **options: linear(args["input"], args["weight"], args.get("bias"), **options),
    ),
}
register_rules(RULES)
