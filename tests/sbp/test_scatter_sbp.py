"""index_add's, scatter_add's and scatter's SBP signatures (ep/ops/scatter_rules.py: S(d) on every d
but dim where the tensors have input's size there, P for the linear ones, B) verified in process
(sbp_check.py) against the local op on the whole tensors: on 2, 3 and 4 parts (uneven splits) and
on a 2x2 hierarchy. Inputs split on dim take no signature of theirs: they are boxed to the cheapest
declared one. tests/distributed/mpi_cases.py runs them on real ranks."""
import numpy as np
import pytest

from ep.sbp import broadcast as B, nd_signatures, partial_sum as P, signatures, split as S
from ep.sbp.global_ops import _choose
from sbp_check import check, run_logical

PARTS = (2, 3, 4)
SIMULATED_ND = 4
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-4), np.dtype(np.float64): (1e-12, 1e-10)}
DTYPES = [np.float32, np.int64, np.bool_]


def values(rng, shape, dtype):
    """Small integers: exact in every dtype, their sums too (uint8 and bool wrap as they do)."""
    return rng.integers(-6, 7, shape).astype(dtype)


def check_every(name, arrays, attrs, device, rng):
    """Every 1-d signature on 2, 3 and 4 parts and every nd-signature on 2x2, against the local op
    on the whole tensors; the signatures checked."""
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    sigs = signatures(name, **kw)
    expected = run_logical(name, arrays, attrs, device)
    assert expected.dtype == arrays["input"].dtype
    tolerance = TOLERANCE.get(expected.dtype)
    for parts in PARTS:
        for sig in sigs:
            check(name, (sig,), (parts,), arrays, attrs, expected, device, rng, tolerance)
    nd = nd_signatures(name, (2, 2), **kw)
    if device != "cpu":  # a sample on the CUDA simulator, which is slow
        nd = [nd[i] for i in rng.choice(len(nd), min(SIMULATED_ND, len(nd)), replace=False)]
    for sig in nd:
        check(name, sig, (2, 2), arrays, attrs, expected, device, rng, tolerance)
    return sigs


def check_split_on_dim(name, arrays, attrs, dim, device, rng):
    """Inputs split on dim (not declared): the choice is a declared signature, whose result matches."""
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    sigs = signatures(name, **kw)
    assert all(s["input"] != S(dim) for s in sigs)
    sbps = tuple((n, (S(dim) if a.ndim > dim else B,)) for n, a in arrays.items())
    chosen = _choose(name, (2,), tuple(kw.items()), sbps, tuple(a.dtype.itemsize for a in arrays.values()), arrays["input"].dtype.itemsize, None)
    assert chosen[0] in sigs
    expected = run_logical(name, arrays, attrs, device)
    check(name, chosen, (2,), arrays, attrs, expected, device, rng, TOLERANCE.get(expected.dtype))


@pytest.mark.parametrize("dtype", DTYPES + [np.float64, np.uint8], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, dim, count", [((5, 4, 3), 1, 6), ((4, 3), -1, 2), ((3,), 0, 4), ((2, 5), 0, 0)], ids=str)
def test_index_add(device, dtype, shape, dim, count):
    rng = np.random.default_rng(0)
    d = dim % len(shape)
    source_shape = shape[:d] + (count,) + shape[d + 1:]
    arrays = {"input": values(rng, shape, dtype), "index": rng.integers(0, shape[d], (count,)), "source": values(rng, source_shape, dtype)}
    alpha = 1 if dtype is np.bool_ else (-3 if np.dtype(dtype).kind in "iu" else 0.5)
    attrs = {"dim": dim, "alpha": alpha, "dtype": np.dtype(dtype).name}
    sigs = check_every("index_add", arrays, attrs, device, rng)
    splits = [e for e in range(len(shape)) if e != d]
    partial = [(P, B, P, P)] if dtype is not np.bool_ else []
    assert [(s["input"], s["index"], s["source"], s["out"]) for s in sigs] == [(S(e), B, S(e), S(e)) for e in splits] + partial + [(B, B, B, B)]
    check_split_on_dim("index_add", arrays, attrs, d, device, rng)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    "shape, dim, index_shape, src_shape, splits",
    [
        ((5, 4, 3), 1, (5, 6, 3), (5, 7, 3), [0, 2]),  # repeats along dim, every other dim splits
        ((5, 4, 3), -2, (5, 2, 2), (5, 3, 3), [0]),  # index smaller than input along 2: no split there
        ((4, 6), 0, (3, 6), (4, 6), [1]),
        ((5, 2), 1, (4, 2), (5, 2), []),  # index smaller along 0: only P and B
    ],
    ids=str,
)
def test_scatter_add(device, dtype, shape, dim, index_shape, src_shape, splits):
    rng = np.random.default_rng(1)
    d = dim % len(shape)
    arrays = {"input": values(rng, shape, dtype), "index": rng.integers(0, shape[d], index_shape), "src": values(rng, src_shape, dtype)}
    attrs = {"dim": dim, "dtype": np.dtype(dtype).name}
    sigs = check_every("scatter_add", arrays, attrs, device, rng)
    partial = [(P, B, P, P)] if dtype is not np.bool_ else []
    assert [(s["input"], s["index"], s["src"], s["out"]) for s in sigs] == [(S(e),) * 4 for e in splits] + partial + [(B, B, B, B)]
    check_split_on_dim("scatter_add", arrays, attrs, d, device, rng)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
@pytest.mark.parametrize("scalar", [False, True], ids=["src", "value"])
@pytest.mark.parametrize(
    "shape, dim, index_shape, src_shape, splits",
    [((5, 4, 3), 1, (5, 3, 3), (5, 4, 3), [0, 2]), ((5, 4, 3), 2, (5, 2, 2), (5, 4, 3), [0])],
    ids=str,
)
def test_scatter(device, dtype, reduce, scalar, shape, dim, index_shape, src_shape, splits):
    rng = np.random.default_rng(2)
    d = dim % len(shape)
    # Repeats too: a split never puts one position's writes on two ranks (the last along dim lands).
    index = rng.integers(0, shape[d], index_shape)
    arrays = {"input": values(rng, shape, dtype), "index": index}
    attrs = {"dim": dim, "reduce": reduce, "dtype": np.dtype(dtype).name}
    if scalar:
        attrs["value"] = True if dtype is np.bool_ else 3
    else:
        arrays["src"] = values(rng, src_shape, dtype)
    sigs = check_every("scatter", arrays, attrs, device, rng)
    names = list(arrays)
    summed = dtype is not np.bool_
    if not scalar and summed and reduce in (None, "add"):
        partial = [(P, B, P, P)]
    elif reduce == "multiply" and summed:
        partial = [(P, B) + (B,) * (not scalar) + (P,)]
    else:
        partial = []
    got = [tuple(s[n] for n in names) + (s["out"],) for s in sigs]
    assert got == [(S(e),) * (len(names) + 1) for e in splits] + partial + [(B,) * (len(names) + 1)]
    check_split_on_dim("scatter", arrays, attrs, d, device, rng)


def test_bad_arguments_are_the_local_ops_errors():
    with pytest.raises(ValueError, match=r"source: has shape \(3, 4\); expected \(3, 2\)"):
        signatures("index_add", input=(3, 4), index=(2,), source=(3, 4), dim=1)
    with pytest.raises(IndexError, match="dim: 2 is out of range"):
        signatures("scatter_add", input=(3, 4), index=(3, 4), src=(3, 4), dim=2)
    with pytest.raises(ValueError, match="index: has shape"):
        signatures("scatter", input=(3, 4), index=(4, 4), dim=1, value=1)
