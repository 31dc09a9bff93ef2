"""softmax's, log_softmax's and their gradients' SBP signatures (S on every axis but dim, B; the
gradients also P(dy) with B(y) -> P) verified in process (sbp_check.py): on 2, 3 and 4 parts
(uneven splits) and on a 2x2 hierarchy."""
import numpy as np
import pytest

from ep.sbp import broadcast as B, nd_signatures, partial_sum as P, signatures, split as S
from sbp_check import check, run_logical

PARTS = (2, 3, 4)
TOLERANCE = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-14)}


def check_every_signature(name, arrays, dim, device):
    rng = np.random.default_rng(1)
    attrs = {"dim": dim}
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    expected = run_logical(name, arrays, attrs, device)
    tolerance = TOLERANCE[expected.dtype]
    for parts in PARTS:
        for sig in signatures(name, **kw):
            check(name, (sig,), (parts,), arrays, attrs, expected, device, rng, tolerance)
    for nd in nd_signatures(name, (2, 2), **kw):
        check(name, nd, (2, 2), arrays, attrs, expected, device, rng, tolerance)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((5, 3), -1), ((3, 4, 5), 1), ((4,), 0)], ids=str)
def test_forward(device, name, shape, dim):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    sigs = signatures(name, x=shape, dim=dim)
    splits = [S(d) for d in range(len(shape)) if d != dim % len(shape)]
    assert [(s["x"], s["out"]) for s in sigs] == [(s, s) for s in splits] + [(B, B)]
    check_every_signature(name, {"x": x}, dim, device)


@pytest.mark.parametrize("name", ["softmax_grad", "log_softmax_grad"])
@pytest.mark.parametrize("shape, dim", [((5, 3), 0), ((3, 4, 5), -1)], ids=str)
def test_grad(device, name, shape, dim):
    rng = np.random.default_rng(0)
    y, dy = rng.random(shape), rng.standard_normal(shape)
    sigs = signatures(name, y=shape, dy=shape, dim=dim)
    splits = [S(d) for d in range(len(shape)) if d != dim % len(shape)]
    assert [(s["y"], s["dy"], s["out"]) for s in sigs] == [(s, s, s) for s in splits] + [(B, P, P), (B, B, B)]
    check_every_signature(name, {"y": y, "dy": dy}, dim, device)


def test_bad_arguments():
    with pytest.raises(IndexError, match="dim: 2 is out of range"):
        signatures("softmax", x=(3, 4), dim=2)
    with pytest.raises(ValueError, match=r"dy: has shape \(3, 5\); expected y's, \(3, 4\)"):
        signatures("softmax_grad", y=(3, 4), dy=(3, 5))
