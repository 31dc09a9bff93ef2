"""cat's, stack's, roll's and flip's SBP signatures (a split on a dim the op does not move stays, a
partial sum passes, broadcast) verified in process (sbp_check.py): on 2, 3 and 4 parts (uneven
splits) and on a 2x2 hierarchy."""
import numpy as np
import pytest

from ep.sbp import broadcast as B, nd_signatures, partial_sum as P, signatures, split as S
from sbp_check import check, run_logical

PARTS = (2, 3, 4)


def check_every_signature(name, arrays, attrs, device):
    rng = np.random.default_rng(1)
    kw = {**{n: a.shape for n, a in arrays.items()}, **attrs}
    expected = run_logical(name, arrays, attrs, device)
    for parts in PARTS:
        for sig in signatures(name, **kw):
            check(name, (sig,), (parts,), arrays, attrs, expected, device, rng)
    for nd in nd_signatures(name, (2, 2), **kw):
        check(name, nd, (2, 2), arrays, attrs, expected, device, rng)


def _integers(shape, seed=0):
    return np.random.default_rng(seed).integers(-9, 10, shape).astype(np.float32)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(device, dim):
    shapes = [(3, 4, 2), (3, 4, 2)]
    shapes[1] = tuple(5 if d == dim % 3 else n for d, n in enumerate(shapes[1]))
    arrays = {f"tensors[{i}]": _integers(s, i) for i, s in enumerate(shapes)}
    sigs = signatures("cat", dim=dim, **{n: a.shape for n, a in arrays.items()})
    assert [s["out"] for s in sigs] == [S(d) for d in range(3) if d != dim % 3] + [P, B]
    check_every_signature("cat", arrays, {"dim": dim}, device)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_stack(device, dim):
    arrays = {f"tensors[{i}]": _integers((3, 4), i) for i in range(3)}
    sigs = signatures("stack", dim=dim, **{n: a.shape for n, a in arrays.items()})
    assert [(s["tensors[0]"], s["out"]) for s in sigs][:2] == [(S(0), S(0 if dim > 0 else 1)), (S(1), S(1 if dim > 1 else 2))]
    check_every_signature("stack", arrays, {"dim": dim}, device)


@pytest.mark.parametrize("shifts, dims", [(2, 0), ((1, -3), (1, 2)), (5, None)], ids=str)
def test_roll(device, shifts, dims):
    x = _integers((3, 4, 5))
    if dims is None:
        assert [s["x"] for s in signatures("roll", x=x.shape, shifts=shifts, dims=dims)] == [B]
    check_every_signature("roll", {"x": x}, {"shifts": shifts, "dims": dims}, device)


@pytest.mark.parametrize("dims", [0, (0, 2), (-1,)], ids=str)
def test_flip(device, dims):
    check_every_signature("flip", {"x": _integers((3, 4, 5))}, {"dims": dims}, device)
