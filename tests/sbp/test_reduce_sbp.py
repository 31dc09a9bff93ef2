"""The reductions' SBP signatures (a kept dim split stays split at its place in the result; sum and
mean over a split dim give a partial sum, and a float partial sum passes through; the others over a
split dim finish from the ranks' results, S -> B; B) verified in process (sbp_check.py): on 2, 3
and 4 parts (uneven splits) and on a 2x2 hierarchy, the ranks' combination emulated here (argmax's,
argmin's, var's and std's, which exchange more than their results, on real ranks only:
tests/distributed/mpi_cases.py)."""
import numpy as np
import pytest
import torch

import ep.ops
from ep.ops.reduce import reduced_dims
from ep.sbp import Split, broadcast as B, nd_signatures, partial_sum as P, signatures, split as S
from ep.testing import to_device, to_numpy
from sbp_check import check, run_logical

PARTS = (2, 3, 4)
NAMES = ["sum", "prod", "mean", "amax", "amin", "any", "all", "logsumexp", "var", "std", "norm"]
COMBINE = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum, "any": np.logical_or, "all": np.logical_and, "logsumexp": np.logaddexp}


def _norms(p):
    return lambda parts: (parts ** p).sum(0) ** (1 / p)


def combined(name, dims, attrs):
    """The ranks' combination over a split reduced dim, in process: each rank's result combined with
    those of the ranks that differ from it only on the axes splitting a reduced dim, holding any of x."""

    def exchange(outs, pieces):
        result, dtype = {}, next(o.dtype for o in outs.values() if o is not None)
        for index, piece in pieces.items():
            axes = [h for h, s in enumerate(piece.sbps["x"]) if isinstance(s, Split) and s.axis in dims]
            group = [
                outs[other].astype(np.float64) if outs[other].dtype.kind == "f" else outs[other]
                for other in pieces
                if all(other[h] == index[h] for h in range(len(index)) if h not in axes) and outs[other] is not None
            ]
            reduce = _norms(attrs.get("p", 2)) if name == "norm" else COMBINE[name].reduce
            result[index] = reduce(np.stack(group)).astype(dtype) if axes else outs[index]
        return result

    return exchange


def _finishes(nd) -> bool:
    return any(isinstance(s["x"], Split) and s["out"] == B for s in nd)


def check_every_signature(name, x, attrs, device, tolerance=(1e-5, 1e-5)):
    rng = np.random.default_rng(1)
    kw = {"x": x.shape, **attrs}
    expected = run_logical(name, {"x": x}, attrs, device)
    dims = reduced_dims(x.ndim, attrs["dim"], name in ("argmax", "argmin"))
    exchange = combined(name, dims, attrs) if name in COMBINE or name == "norm" else None
    cases = [((sig,), (parts,)) for parts in PARTS for sig in signatures(name, **kw)] + [(nd, (2, 2)) for nd in nd_signatures(name, (2, 2), **kw)]
    for nd, hierarchy in cases:
        if exchange is None and _finishes(nd):
            continue  # argmax's (value, index) combination: on real ranks only
        check(name, nd, hierarchy, {"x": x}, attrs, expected, device, rng, tolerance, exchange)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dim, keepdim", [((1,), False), ((0, 2), True), (None, False)], ids=str)
def test_every_signature_matches_the_logical_op(device, name, dim, keepdim):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    attrs = {"dim": dim, "keepdim": keepdim, "dtype": None, "x_dtype": "float32"}
    check_every_signature(name, x, attrs, device)


def test_sum_signatures_split_kept_dims_and_sum_reduced_ones():
    sigs = signatures("sum", x=(3, 4, 5), dim=(1,), keepdim=False, x_dtype="float32")
    assert [(s["x"], s["out"]) for s in sigs] == [(S(0), S(0)), (S(2), S(1)), (S(1), P), (P, P), (B, B)]
    kept = signatures("sum", x=(3, 4, 5), dim=(1,), keepdim=True, x_dtype="int32")
    assert [(s["x"], s["out"]) for s in kept] == [(S(0), S(0)), (S(2), S(2)), (S(1), P), (B, B)]
    assert [(s["x"], s["out"]) for s in signatures("amax", x=(3, 4), dim=(0,))] == [(S(1), S(0)), (S(0), B), (B, B)]
    assert [(s["x"], s["out"]) for s in signatures("mean", x=(3, 4), dim=(0,), x_dtype="float32")] == [(S(1), S(0)), (S(0), P), (P, P), (B, B)]
    # An empty reduction: x whole (a max of it refuses, a mean is NaN).
    assert [(s["x"], s["out"]) for s in signatures("amax", x=(0, 4), dim=(0,))] == [(S(1), S(0)), (B, B)]
    assert [(s["x"], s["out"]) for s in signatures("var", x=(0, 4), dim=(0,))] == [(S(1), S(0)), (B, B)]
    assert [(s["x"], s["out"]) for s in signatures("var", x=(3, 4), dim=(0,))] == [(S(1), S(0)), (S(0), B), (B, B)]


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_index_reductions(device, name):
    x = np.round(np.random.default_rng(0).standard_normal((3, 4, 5)) * 2).astype(np.float32)
    check_every_signature(name, x, {"dim": 1, "keepdim": False, "dtype": None, "x_dtype": "float32"}, device)
    assert [s["x"] for s in signatures(name, x=(3, 4), dim=None)] == [S(0), S(1), B]


def test_integer_sums_over_a_split_dim_are_exact(device):
    x = np.random.default_rng(0).integers(-50, 50, (4, 6)).astype(np.int32)
    check_every_signature("sum", x, {"dim": (1,), "keepdim": False, "dtype": None, "x_dtype": "int32"}, device, None)


@pytest.mark.parametrize("name", ["any", "all"])
def test_any_and_all_of_uint8_stay_uint8_over_a_split_dim(device, name):
    # torch's dtype (uint8 in, uint8 out) through every signature, a split reduced dim's combination
    # included; check_every_signature compares with the logical op, itself checked against torch here.
    x = (np.random.default_rng(3).integers(0, 4, (4, 6)) > 0).astype(np.uint8) * 7
    logical = to_numpy(getattr(ep.ops, name)(to_device(x, device), 1))
    np.testing.assert_array_equal(logical, getattr(torch, name)(torch.from_numpy(x), 1).numpy(), strict=True)
    check_every_signature(name, x, {"dim": (1,), "keepdim": False, "dtype": None, "x_dtype": "uint8"}, device, None)


def test_var_takes_its_correction_and_norm_its_p(device):
    x = np.random.default_rng(2).standard_normal((4, 6))
    check_every_signature("var", x, {"dim": (1,), "keepdim": False, "dtype": None, "x_dtype": "float64", "correction": 0}, device, (1e-12, 1e-12))
    check_every_signature("norm", x, {"dim": (0,), "keepdim": True, "dtype": None, "x_dtype": "float64", "p": 3.0}, device, (1e-12, 1e-12))


def test_no_dims_named_reads_as_the_local_op_reads_it(device):
    # dim=(): every dim for sum (torch's rule), none for any; the signatures follow.
    assert signatures("sum", x=(3, 4), dim=(), x_dtype="float32") == signatures("sum", x=(3, 4), dim=None, x_dtype="float32")
    assert [(s["x"], s["out"]) for s in signatures("any", x=(3, 4), dim=())] == [(S(0), S(0)), (S(1), S(1)), (B, B)]
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    check_every_signature("sum", x, {"dim": (), "keepdim": False, "dtype": None, "x_dtype": "float32"}, device)
    check_every_signature("any", x > 0, {"dim": (), "keepdim": True, "dtype": None, "x_dtype": "bool"}, device)
