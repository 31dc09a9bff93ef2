"""matmul's SBP signatures verified in process (sbp_check): matrices (S(0) x B -> S(0), B x S(1) ->
S(1), S(1) x S(0) -> P, P x B -> P, B x P -> P), 1-d operands and broadcast batch dims split on
both, on 2, 3 and 4 parts with uneven sizes and every nd-signature on 2x2."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ep.sbp import broadcast as B, partial_sum as P, signatures, split as S
from ep.sbp.signature import Signature
from cublas import skip_without_cublas
from test_signatures_verified import FLOAT_TOLERANCE, check_all, random_array, seeds

# (a's shape, b's shape): matrices, vectors, batches broadcast either way, empty dims.
CASES = [
    ((5, 3), (3, 4)),
    ((3,), (3, 4)),
    ((5, 3), (3,)),
    ((3,), (3,)),
    ((3, 5, 3), (3, 4)),
    ((2, 1, 5, 3), (3, 3, 2)),
    ((0, 3), (3, 2)),
]


def test_matrix_signatures_are_the_issues():
    sigs = signatures("matmul", a=(5, 3), b=(3, 4))
    for expected in [
        Signature({"a": S(0), "b": B}, {"out": S(0)}),
        Signature({"a": B, "b": S(1)}, {"out": S(1)}),
        Signature({"a": S(1), "b": S(0)}, {"out": P}),
        Signature({"a": P, "b": B}, {"out": P}),
        Signature({"a": B, "b": P}, {"out": P}),
        Signature({"a": B, "b": B}, {"out": B}),
    ]:
        assert expected in sigs
    batch = signatures("matmul", a=(6, 5, 3), b=(6, 3, 4))
    assert Signature({"a": S(0), "b": S(0)}, {"out": S(0)}) in batch


@pytest.mark.parametrize("shapes", CASES, ids=str)
@settings(max_examples=3, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), seed=seeds)
def test_matmul(device, shapes, dtype, seed):
    skip_without_cublas(device)
    rng = np.random.default_rng(seed)
    arrays = {"a": random_array(rng, shapes[0], dtype), "b": random_array(rng, shapes[1], dtype)}
    check_all("matmul", arrays, {"dtype": np.dtype(dtype).name}, device, seed, FLOAT_TOLERANCE[np.dtype(dtype)])



TERMS = [
    ("addmm", ("input", "mat1", "mat2"), ((4,), (5, 3), (3, 4)), {"beta": 0.5, "alpha": 2.0}),
    ("addmm", ("input", "mat1", "mat2"), ((5, 1), (5, 3), (3, 4)), {"beta": 0.5, "alpha": 2.0}),
    ("addmm", ("input", "mat1", "mat2"), ((5, 4), (5, 0), (0, 4)), {"beta": 0.5, "alpha": 2.0}),
    ("linear", ("bias", "input", "weight"), ((4,), (2, 5, 3), (4, 3)), {}),
    ("linear", ("bias", "input", "weight"), ((1,), (5, 3), (4, 3)), {}),
    ("linear", ("input", "weight"), ((5, 3), (3,)), {}),
    ("linear", ("input", "weight"), ((5, 3), (4, 3)), {}),
]


@pytest.mark.parametrize("name, names, shapes, scalars", TERMS, ids=str)
@settings(max_examples=2, deadline=None)
@given(seed=seeds)
def test_a_term_adds_the_products_way(device, name, names, shapes, scalars, seed):
    """addmm's input and linear's bias split with the product, B where they broadcast, and a partial
    sum beside a partial product."""
    skip_without_cublas(device)
    rng = np.random.default_rng(seed)
    arrays = {n: random_array(rng, s, np.float64) for n, s in zip(names, shapes)}
    sigs = signatures(name, **{n: a.shape for n, a in arrays.items()}, **scalars)
    term = {"addmm": "input", "linear": "bias"}[name]
    if term in arrays:
        assert any(s[term] == P and s["out"] == P for s in sigs)
        assert all(s[term] in (B, P) for s in sigs if s["out"] in (B, P))
    check_all(name, arrays, {**scalars, "dtype": "float64"}, device, seed, FLOAT_TOLERANCE[np.dtype(np.float64)])
