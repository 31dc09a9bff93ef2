"""full's SBP signature (B) verified in process (sbp_check.py): on 2, 3 and 4 parts and on a 2x2
hierarchy, each rank's piece against np.full of the logical shape."""
import numpy as np
import pytest

from ep.sbp import broadcast, nd_signatures, signatures
from sbp_check import check

PARTS = (2, 3, 4)


@pytest.mark.parametrize(
    "shape, fill_value, dtype", [((3, 5), 2.5, "float32"), ((0, 4), 1, "int64"), ((), True, "bool"), ((7,), -0.0, "float16")]
)
def test_full(device, shape, fill_value, dtype):
    attrs = {"shape": shape, "fill_value": fill_value, "dtype": dtype, "device": device}
    expected = np.full(shape, fill_value, dtype)
    rng = np.random.default_rng(0)
    sigs = signatures("full", **attrs)
    assert [s["out"] for s in sigs] == [broadcast]
    for parts in PARTS:
        for sig in sigs:
            check("full", (sig,), (parts,), {}, attrs, expected, device, rng)
    for nd in nd_signatures("full", (2, 2), **attrs):
        check("full", nd, (2, 2), {}, attrs, expected, device, rng)
