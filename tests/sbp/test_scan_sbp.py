"""cumsum's, cumprod's and logcumsumexp's SBP signatures (S on every axis but dim, S(dim), each part
continued from the totals of the parts before it, B; cumsum of floats also P -> P) verified in process (sbp_check.py): on 2, 3 and 4 parts (uneven splits) and on a 2x2
hierarchy. tests/distributed/mpi_cases.py runs them with MPI's Exscan (an all-gather for logcumsumexp) on real ranks."""
import numpy as np
import pytest

from ep.sbp import broadcast as B, nd_signatures, partial_sum as P, signatures, split as S
from sbp_check import check, run_logical

PARTS = (2, 3, 4)
COMBINE = {"cumsum": np.add, "cumprod": np.multiply, "logcumsumexp": np.logaddexp}
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-5), np.dtype(np.float64): (1e-12, 1e-12), np.dtype(np.int64): (0, 0)}


def continued(name, dim):
    """The exchange of a scan split on dim, in process: each part combined with the totals (last
    elements) of the parts before it along dim on the ranks that differ from it only on the axes
    splitting dim (a partial sum's parts continue their own)."""

    def exchange(outs, pieces):
        result = {}
        for index, piece in pieces.items():
            axes = [h for h, s in enumerate(piece.sbps["x"]) if s == S(dim)]
            out = outs[index].copy()
            for other, part in pieces.items():
                same = all(other[h] == index[h] for h in range(len(index)) if h not in axes)
                if same and part.slices["out"][dim].stop <= piece.slices["out"][dim].start and part.shapes["out"][dim]:
                    out = COMBINE[name](out, np.take(outs[other], [-1], axis=dim)).astype(out.dtype)
            result[index] = out
        return result

    return exchange


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("shape, dim", [((5, 3), -1), ((3, 4, 5), 1), ((6,), 0)], ids=str)
def test_every_signature_matches_the_logical_op(device, name, shape, dim):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 0.5).astype(np.float32)
    attrs = {"dim": dim, "dtype": None, "x_dtype": "float32"}
    kw = {"x": shape, **attrs}
    sigs = signatures(name, **kw)
    splits = [S(d) for d in range(len(shape)) if d != dim % len(shape)]
    continues = [S(dim % len(shape))] if name in COMBINE else []
    partial = [P] if name == "cumsum" else []
    assert [s["x"] for s in sigs] == splits + continues + partial + [B] and all(s["out"] == s["x"] for s in sigs)
    expected = run_logical(name, {"x": x}, attrs, device)
    exchange = continued(name, dim % len(shape)) if continues else None
    for parts in PARTS:
        for sig in sigs:
            check(name, (sig,), (parts,), {"x": x}, attrs, expected, device, rng, TOLERANCE[expected.dtype], exchange)
    for nd in nd_signatures(name, (2, 2), **kw):
        check(name, nd, (2, 2), {"x": x}, attrs, expected, device, rng, TOLERANCE[expected.dtype], exchange)


def test_integer_cumsum_has_no_partial_sum_and_gives_int64(device):
    x = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    attrs = {"dim": 1, "dtype": None, "x_dtype": "int32"}
    sigs = signatures("cumsum", x=x.shape, **attrs)
    assert [s["x"] for s in sigs] == [S(0), S(1), B]
    expected = run_logical("cumsum", {"x": x}, attrs, device)
    assert expected.dtype == np.int64
    for sig in sigs:
        check("cumsum", (sig,), (2,), {"x": x}, attrs, expected, device, np.random.default_rng(0), (0, 0), continued("cumsum", 1))


def test_bad_dim_is_named():
    with pytest.raises(IndexError, match="dim: 2 is out of range"):
        signatures("cumsum", x=(3, 4), dim=2)


def test_cummax_and_cummin_split_values_and_indices_alike():
    for name in ("cummax", "cummin"):
        sigs = signatures(name, x=(3, 4, 5), dim=1)
        assert [s["x"] for s in sigs] == [S(0), S(2), S(1), B]
        assert all(s["out[0]"] == s["out[1]"] == s["x"] for s in sigs)
