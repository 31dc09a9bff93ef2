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
    if device != "cpu":
        pytest.skip("cuBLAS cannot run on Numba's CUDA simulator (no GPU)")
    rng = np.random.default_rng(seed)
    arrays = {"a": random_array(rng, shapes[0], dtype), "b": random_array(rng, shapes[1], dtype)}
    check_all("matmul", arrays, {"dtype": np.dtype(dtype).name}, device, seed, FLOAT_TOLERANCE[np.dtype(dtype)])


@pytest.mark.parametrize("shapes", [((4,), (5, 3), (3, 4)), ((5, 1), (5, 3), (3, 4)), ((5, 4), (5, 0), (0, 4))], ids=str)
@settings(max_examples=2, deadline=None)
@given(seed=seeds)
def test_addmm(device, shapes, seed):
    if device != "cpu":
        pytest.skip("cuBLAS cannot run on Numba's CUDA simulator (no GPU)")
    rng = np.random.default_rng(seed)
    arrays = {n: random_array(rng, s, np.float64) for n, s in zip(("input", "mat1", "mat2"), shapes)}
    sigs = signatures("addmm", **{n: a.shape for n, a in arrays.items()}, beta=0.5, alpha=2.0)
    assert Signature({"mat1": S(1), "mat2": S(0), "input": P}, {"out": P}) in sigs
    check_all("addmm", arrays, {"beta": 0.5, "alpha": 2.0, "dtype": "float64"}, device, seed, FLOAT_TOLERANCE[np.dtype(np.float64)])


@pytest.mark.parametrize("shapes", [((2, 5, 3), (4, 3), (4,)), ((5, 3), (3,), None), ((5, 3), (4, 3), None), ((5, 3), (4, 3), (1,))], ids=str)
@settings(max_examples=2, deadline=None)
@given(seed=seeds)
def test_linear(device, shapes, seed):
    if device != "cpu":
        pytest.skip("cuBLAS cannot run on Numba's CUDA simulator (no GPU)")
    rng = np.random.default_rng(seed)
    arrays = {n: random_array(rng, s, np.float32) for n, s in zip(("input", "weight", "bias"), shapes) if s is not None}
    sigs = signatures("linear", **{n: a.shape for n, a in arrays.items()})
    if len(shapes[1]) == 2:
        out_features = Signature({"input": B, "weight": S(0), **({"bias": S(0) if shapes[2] == (4,) else B} if shapes[2] else {})}, {"out": S(len(shapes[0]) - 1)})
        assert out_features in sigs
    check_all("linear", arrays, {"dtype": "float32"}, device, seed, FLOAT_TOLERANCE[np.dtype(np.float32)])
