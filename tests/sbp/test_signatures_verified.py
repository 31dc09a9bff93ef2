"""Every SBP signature of every op, verified in process (tests/sbp/sbp_check.py): on 2, 3 and 4
parts with uneven sizes, and every nd-signature on a 2x2 hierarchy (a sample of them on the CUDA
simulator, which is slow)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ep.ops.expand import expand_shape
from ep.ops.gather import gather_shape
from ep.sbp import Split, nd_signatures, signatures
from sbp_check import check, run_logical

PARTS = (2, 3, 4)
HIERARCHY_2D = (2, 2)
# nd-signatures checked per example on the simulator (all of them on the cpu).
SIMULATED_ND = 4
INDEX_DTYPES = [np.int32, np.int64]
INTEGERS = [np.int32, np.int64]
FLOATS = [np.float32, np.float64]
FLOAT_TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-4), np.dtype(np.float64): (1e-12, 1e-10)}

sizes = st.integers(0, 5)
seeds = st.integers(0, 2**32 - 1)


def random_array(rng, shape, dtype):
    """Small integers: exact in every dtype, and their sums too."""
    return rng.integers(-6, 7, shape).astype(dtype)


def check_all(name, arrays, attrs, device, seed, tolerance=None, logical=None):
    """Every 1-d signature on 2, 3 and 4 parts, and the nd-signatures on 2x2.

    attrs: the op's attributes, as ep.sbp.signatures takes them. logical(nd_signature) may give
    other logical arrays for a signature (gather's non-negative indices)."""
    rng = np.random.default_rng(seed)
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    cases = [((s,), (parts,)) for parts in PARTS for s in signatures(name, **kw)]
    nd = nd_signatures(name, HIERARCHY_2D, **kw)
    if device != "cpu":
        nd = [nd[i] for i in rng.choice(len(nd), min(SIMULATED_ND, len(nd)), replace=False)]
    cases += [(s, HIERARCHY_2D) for s in nd]
    expected = {}
    for nd_signature, hierarchy in cases:
        inputs = logical(nd_signature) if logical else arrays
        key = tuple(id(a) for a in inputs.values())
        if key not in expected:
            expected[key] = run_logical(name, inputs, attrs, device)
        check(name, nd_signature, hierarchy, inputs, attrs, expected[key], device, rng, tolerance)


@st.composite
def gather_cases(draw):
    """(params shape, indices shape, axis, batch_dims); the gather axis is never empty."""
    rank = draw(st.integers(1, 3))
    params = draw(st.lists(sizes, min_size=rank, max_size=rank))
    axis = draw(st.integers(0, rank - 1))
    params[axis] = max(params[axis], 1)
    indices_rank = draw(st.integers(0, 2))
    batch_dims = draw(st.integers(0, min(axis, indices_rank)))
    own = indices_rank - batch_dims
    indices = params[:batch_dims] + draw(st.lists(st.integers(0, 4), min_size=own, max_size=own))
    return tuple(params), tuple(indices), axis, batch_dims


def gather_inputs(rng, params_shape, indices_shape, axis, dtype, index_dtype):
    n = params_shape[axis]
    return random_array(rng, params_shape, dtype), rng.integers(-n, n, indices_shape).astype(index_dtype)


@settings(max_examples=15, deadline=None)
@given(case=gather_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), index_dtype=st.sampled_from(INDEX_DTYPES), seed=seeds)
def test_gather(device, case, dtype, index_dtype, seed):
    params_shape, indices_shape, axis, batch_dims = case
    params, indices = gather_inputs(np.random.default_rng(seed), params_shape, indices_shape, axis, dtype, index_dtype)
    arrays = {"params": params, "indices": indices}
    wrap = {**arrays, "indices": indices % params_shape[axis]}
    check_all(
        "gather", arrays, {"axis": axis, "batch_dims": batch_dims}, device, seed,
        logical=lambda nd: wrap if any(s["params"] == Split(axis) for s in nd) else arrays,
    )


@st.composite
def batch_gather_cases(draw):
    rank = draw(st.integers(1, 3))
    indices = draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank))
    extra = draw(st.lists(sizes, min_size=0, max_size=2))
    params = indices[:-1] + [draw(st.integers(1, 5))] + extra
    return tuple(params), tuple(indices)


@settings(max_examples=15, deadline=None)
@given(case=batch_gather_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), index_dtype=st.sampled_from(INDEX_DTYPES), seed=seeds)
def test_batch_gather(device, case, dtype, index_dtype, seed):
    params_shape, indices_shape = case
    axis = len(indices_shape) - 1
    params, indices = gather_inputs(np.random.default_rng(seed), params_shape, indices_shape, axis, dtype, index_dtype)
    arrays = {"params": params, "indices": indices}
    wrap = {**arrays, "indices": indices % params_shape[axis]}
    check_all(
        "batch_gather", arrays, {}, device, seed,
        logical=lambda nd: wrap if any(s["params"] == Split(axis) for s in nd) else arrays,
    )


@settings(max_examples=15, deadline=None)
@given(case=gather_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), index_dtype=st.sampled_from(INDEX_DTYPES), seed=seeds)
def test_gather_grad(device, case, dtype, index_dtype, seed):
    params_shape, indices_shape, axis, batch_dims = case
    rng = np.random.default_rng(seed)
    n = params_shape[axis]
    dy = random_array(rng, gather_shape(params_shape, indices_shape, axis, batch_dims).shape, dtype)
    indices = rng.integers(-n, n, indices_shape).astype(index_dtype)
    arrays = {"dy": dy, "indices": indices}
    wrap = {**arrays, "indices": indices % n}
    check_all(
        "gather_grad", arrays, {"params_shape": params_shape, "axis": axis, "batch_dims": batch_dims}, device, seed,
        logical=lambda nd: wrap if any(s["out"] == Split(axis) for s in nd) else arrays,
    )


@st.composite
def expand_cases(draw):
    """(input shape, expand sizes): dims of 1 expanded or kept, others kept (some as -1), new leading dims."""
    rank = draw(st.integers(0, 3))
    shape = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 5]), min_size=rank, max_size=rank))
    # ep.ops.expand of a 0-d array to () fails (contiguous() makes it 1-d): a known ep.ops bug.
    lead = draw(st.lists(st.integers(1, 5), min_size=0 if rank else 1, max_size=2))
    kept = [draw(st.sampled_from([-1, n] + ([1, 2, 3, 5] if n == 1 else []))) for n in shape]
    return tuple(shape), tuple(lead + kept)


@settings(max_examples=15, deadline=None)
@given(case=expand_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), seed=seeds)
def test_expand(device, case, dtype, seed):
    shape, sizes = case
    check_all("expand", {"x": random_array(np.random.default_rng(seed), shape, dtype)}, {"sizes": sizes}, device, seed)


@settings(max_examples=15, deadline=None)
@given(case=expand_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), seed=seeds)
def test_expand_grad(device, case, dtype, seed):
    shape, sizes = case
    dy = random_array(np.random.default_rng(seed), expand_shape(shape, sizes), dtype)
    check_all("expand_grad", {"dy": dy}, {"input_shape": shape}, device, seed)


@st.composite
def repeat_cases(draw):
    rank = draw(st.integers(0, 3))
    shape = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=rank, max_size=rank))
    repeats = draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=rank, max_size=rank + 2))
    return tuple(shape), tuple(repeats)


@settings(max_examples=15, deadline=None)
@given(case=repeat_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), seed=seeds)
def test_repeat(device, case, dtype, seed):
    shape, sizes = case
    check_all("repeat", {"x": random_array(np.random.default_rng(seed), shape, dtype)}, {"sizes": sizes}, device, seed)


shapes = st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple)
UNARY = {"identity": INTEGERS + FLOATS, "negative": INTEGERS + FLOATS, "abs": INTEGERS + FLOATS, "relu": FLOATS, "exp": FLOATS}


@st.composite
def unary_cases(draw):
    op = draw(st.sampled_from(sorted(UNARY)))
    return op, draw(st.sampled_from(UNARY[op]))


@settings(max_examples=15, deadline=None)
@given(case=unary_cases(), shape=shapes, seed=seeds)
def test_unary(device, case, shape, seed):
    op, dtype = case
    x = random_array(np.random.default_rng(seed), shape, dtype)
    check_all("unary", {"x": x}, {"op": op, "dtype": np.dtype(dtype).name}, device, seed)


# Ops with and without partial-sum signatures; the backward ops take (dy, x) in floats.
BINARY = {
    "add": INTEGERS + FLOATS,
    "sub": INTEGERS + FLOATS,
    "mul": INTEGERS + FLOATS,
    "div": INTEGERS + FLOATS,
    "max": INTEGERS + FLOATS,
    "less_than": INTEGERS + FLOATS,
    "bitwise_xor": INTEGERS,
    "tanh_backward_with_dy_x": FLOATS,
    "relu_backward_with_dy_x": FLOATS,
    "sigmoid_backward_with_dy_y": FLOATS,
}


@st.composite
def binary_cases(draw):
    """(op, dtype, a's shape, b's shape): broadcastable, each side dropping leading dims or taking 1s."""
    op = draw(st.sampled_from(sorted(BINARY)))
    out = draw(shapes)
    operands = []
    for _ in range(2):
        drop = draw(st.integers(0, len(out)))
        operands.append(tuple(1 if draw(st.booleans()) else n for n in out[drop:]))
    return op, draw(st.sampled_from(BINARY[op])), operands[0], operands[1]


@settings(max_examples=20, deadline=None)
@given(case=binary_cases(), seed=seeds)
def test_binary(device, case, seed):
    op, dtype, a_shape, b_shape = case
    rng = np.random.default_rng(seed)
    a, b = random_array(rng, a_shape, dtype), random_array(rng, b_shape, dtype)
    if op == "div":
        b = np.where(b == 0, 1, b).astype(dtype)
    tolerance = FLOAT_TOLERANCE.get(np.dtype(dtype))
    check_all("binary", {"a": a, "b": b}, {"op": op, "dtype": np.dtype(dtype).name}, device, seed, tolerance)


@st.composite
def where_cases(draw):
    """(dtype, condition's, x's and y's shapes): broadcastable, each dropping leading dims or taking 1s."""
    out = draw(shapes)
    operands = []
    for _ in range(3):
        drop = draw(st.integers(0, len(out)))
        operands.append(tuple(1 if draw(st.booleans()) else n for n in out[drop:]))
    return draw(st.sampled_from(INTEGERS + FLOATS + [np.bool_])), *operands


@settings(max_examples=20, deadline=None)
@given(case=where_cases(), seed=seeds)
def test_where(device, case, seed):
    dtype, c_shape, x_shape, y_shape = case
    rng = np.random.default_rng(seed)
    arrays = {"condition": rng.random(c_shape) < 0.5, "x": random_array(rng, x_shape, dtype), "y": random_array(rng, y_shape, dtype)}
    check_all("where", arrays, {"dtype": np.dtype(dtype).name}, device, seed, FLOAT_TOLERANCE.get(np.dtype(dtype)))


@st.composite
def permute_cases(draw):
    """(shape, dims): dims a permutation, some entries negative."""
    shape = tuple(draw(st.lists(sizes, min_size=1, max_size=4)))
    dims = draw(st.permutations(range(len(shape))))
    return shape, tuple(d - len(shape) if draw(st.booleans()) else d for d in dims)


@settings(max_examples=15, deadline=None)
@given(case=permute_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), seed=seeds)
def test_permute(device, case, dtype, seed):
    shape, dims = case
    check_all("permute", {"x": random_array(np.random.default_rng(seed), shape, dtype)}, {"dims": dims}, device, seed)


@settings(max_examples=15, deadline=None)
@given(shape=shapes, count=st.integers(1, 4), dtype=st.sampled_from(INTEGERS + FLOATS + [np.bool_]), seed=seeds)
def test_add_n(device, shape, count, dtype, seed):
    rng = np.random.default_rng(seed)
    arrays = {f"arrays[{i}]": random_array(rng, shape, dtype) for i in range(count)}
    check_all("add_n", arrays, {"dtype": np.dtype(dtype).name}, device, seed, FLOAT_TOLERANCE.get(np.dtype(dtype)))


@st.composite
def pad_cases(draw):
    """(shape, pad): pairs for some trailing dims, some zero (unpadded, splittable), some cropping."""
    shape = tuple(draw(st.lists(sizes, min_size=1, max_size=3)))
    pad = []
    for n in reversed(shape[len(shape) - draw(st.integers(0, len(shape))) :]):
        b = draw(st.integers(-n, 2))
        pad += [b, draw(st.integers(-(n + min(b, 0)), 2))]
    return shape, tuple(pad)


@settings(max_examples=15, deadline=None)
@given(case=pad_cases(), dtype=st.sampled_from(INTEGERS + FLOATS), value=st.integers(-3, 3), seed=seeds)
def test_pad(device, case, dtype, value, seed):
    shape, pad = case
    x = random_array(np.random.default_rng(seed), shape, dtype)
    check_all("pad", {"x": x}, {"pad": pad, "value": value}, device, seed)
