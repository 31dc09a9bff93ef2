"""one_hot's SBP signatures (S on each indices axis -> S on the same result axis, B -> B) verified in
process (sbp_check.py): on 2, 3 and 4 parts (uneven splits) and on a 2x2 hierarchy."""
import numpy as np
import pytest

from ep.sbp import broadcast, nd_signatures, signatures, split
from sbp_check import check

PARTS = (2, 3, 4)


@pytest.mark.parametrize("shape", [(5,), (3, 7)], ids=str)
def test_one_hot(device, shape):
    rng = np.random.default_rng(0)
    indices = rng.integers(0, 6, shape)
    attrs = {"num_classes": 6, "dtype": "float32", "on_value": 2.5, "off_value": -1}
    expected = np.where(indices[..., None] == np.arange(6), 2.5, -1).astype(np.float32)
    sigs = signatures("one_hot", indices=shape, **attrs)
    assert [(s["indices"], s["out"]) for s in sigs] == [(split(a), split(a)) for a in range(len(shape))] + [(broadcast, broadcast)]
    for parts in PARTS:
        for sig in sigs:
            check("one_hot", (sig,), (parts,), {"indices": indices}, attrs, expected, device, rng)
    for nd in nd_signatures("one_hot", (2, 2), indices=shape, **attrs):
        check("one_hot", nd, (2, 2), {"indices": indices}, attrs, expected, device, rng)


def test_num_classes_must_be_given():
    with pytest.raises(ValueError, match="num_classes: -1"):
        signatures("one_hot", indices=(4,), num_classes=-1)
