"""The SBP signatures of ep.fuse calls (ep/ops/fuse_rules.py): each dim of the outputs splits the
expression, inputs broadcast where they lack that dim's size; P only for plain sums of inputs.
Every signature verified in process as tests/sbp/sbp_check.py does for the ops: the fused call on
each position's pieces (2, 3 and 4 parts, uneven, and every nd-signature on 2x2), reassembled per
output, equals the call on the logical arrays."""
import itertools

import numpy as np
import pytest

import ep
import ep.ops
from ep.common.runtime.device import GetDevice
from ep.sbp import assemble, broadcast as B, nd_signatures, partial_sum as P, physical, sbp_of, signatures, split as S, split_array
from sbp_check import on
from ep.testing import to_numpy

PARTS = (2, 3, 4)


def relu_fma(x, y, z):
    return ep.ops.unary("relu", x * y + z)


def sums(a, b):
    return a + b, (a + b) + a


def rule_kw(fused, args, device):
    """The rule's keywords for a call of fused on args: input shapes by position, expression, dtypes."""
    trace = fused.trace(args, GetDevice(device))
    dtypes = tuple(d.dtype.name for d in trace.primitive.dst_dtypes)
    read = sorted({p for reads in trace.reads for p in reads})
    return {**{f"args[{p}]": np.shape(args[p]) for p in read}, "expression": trace.nodes, "dtypes": dtypes}


def check(fused, args, kw, nd_signature, hierarchy, expected, device, rng):
    """The fused call on every position's pieces under nd_signature, reassembled, equals expected."""
    names = {f"args[{p}]": p for p in range(len(args))}
    pieces = {n: split_array(args[p], sbp_of(nd_signature, n), hierarchy, rng) for n, p in names.items() if n in kw}
    outs = [{} for _ in expected]
    for index in itertools.product(*(range(n) for n in hierarchy)):
        piece = physical("fuse", nd_signature, hierarchy, index, **kw)
        local = [on(pieces[n][index], device) if n in pieces else a for n, a in zip(names, args)]
        got = fused(*local)
        for j, o in enumerate(got if isinstance(got, tuple) else (got,)):
            outs[j][index] = to_numpy(o)
            assert outs[j][index].shape == piece.shapes[f"out[{j}]"], (index, nd_signature)
    for j, want in enumerate(expected):
        np.testing.assert_array_equal(assemble(outs[j], sbp_of(nd_signature, f"out[{j}]"), hierarchy), want, err_msg=repr(nd_signature))


def check_all(fused, args, device):
    rng = np.random.default_rng(1)
    kw = rule_kw(fused, args, device)
    got = fused(*(on(a, device) if isinstance(a, np.ndarray) else a for a in args))
    expected = [to_numpy(o) for o in (got if isinstance(got, tuple) else (got,))]
    cases = [((s,), (parts,)) for parts in PARTS for s in signatures("fuse", **kw)]
    cases += [(s, (2, 2)) for s in nd_signatures("fuse", (2, 2), **kw)]
    for nd_signature, hierarchy in cases:
        check(fused, args, kw, nd_signature, hierarchy, expected, device, rng)
    return signatures("fuse", **kw)


def ints(rng, shape, dtype=np.float32):
    """Small integers: exact in every dtype, and so are their sums and products."""
    return rng.integers(-6, 7, shape).astype(dtype)


def test_splits_follow_broadcasting(device):
    rng = np.random.default_rng(0)
    sigs = check_all(ep.fuse(relu_fma), [ints(rng, (5, 3)), ints(rng, (3,)), ints(rng, (5, 1))], device)
    got = [(s["args[0]"], s["args[1]"], s["args[2]"], s["out[0]"]) for s in sigs]
    assert got == [(S(0), B, S(0), S(0)), (S(1), S(0), B, S(1)), (B, B, B, B)]


def test_plain_sums_take_partial_sums(device):
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.int32):
        sigs = check_all(ep.fuse(sums), [ints(rng, (4, 3), dtype), ints(rng, (3,), dtype)], device)
        assert sigs[-2].inputs == {"args[0]": P, "args[1]": P} and sigs[-2].outputs == {"out[0]": P, "out[1]": P}


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: a + b + 1,  # a scalar: each rank would add it
        lambda a, b: a - b,  # linear, but not a plain sum (conservative)
        lambda a, b: a * b,
        lambda a, b: a + b.astype(np.float64),  # a cast
    ],
    ids=["scalar", "sub", "mul", "cast"],
)
def test_other_expressions_take_no_partial_sums(device, fn):
    rng = np.random.default_rng(0)
    sigs = check_all(ep.fuse(fn), [ints(rng, (3, 2)), ints(rng, (3, 2))], device)
    assert all(P not in s.inputs.values() for s in sigs)


def test_bool_sums_take_no_partial_sums():
    a = np.zeros((2, 3), bool)
    kw = rule_kw(ep.fuse(lambda a, b: a | b), [a, a], "cpu")
    assert all(P not in s.inputs.values() for s in signatures("fuse", **kw))
    kw = rule_kw(ep.fuse(lambda a: a), [a], "cpu")
    assert [s["args[0]"] for s in signatures("fuse", **kw)] == [S(0), S(1), B]


def test_scalar_arguments_and_unread_arrays_are_not_inputs():
    x = np.ones((2, 3), np.float32)
    kw = rule_kw(ep.fuse(lambda x, unused, s: x * s), [x, x, 2.0], "cpu")
    assert [n for n in kw if n.startswith("args")] == ["args[0]"]
