"""The dtype ep.ops computes two operands in: NumPy's promotion table (NEP 50) for every pair of
dtypes without bfloat16, PyTorch's for every pair with it (NumPy has no bfloat16 of its own), and
Python scalars weak in both; against np.result_type and torch.result_type computed here."""
import itertools

import ml_dtypes
import numpy as np
import pytest
import torch

import ep
from dtype_lists import ALL
from ep.testing import to_device, to_numpy

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
PAIRS = list(itertools.product(ALL, ALL))


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.bfloat16 if dtype == BFLOAT16 else getattr(torch, dtype.name if dtype != np.bool_ else "bool")


def reference(a, b) -> np.dtype:
    """np.result_type, or torch.result_type where bfloat16 takes part; a and b are dtypes or Python scalars."""
    if BFLOAT16 not in (a, b):
        return np.result_type(a, b)
    as_torch = [torch.empty(0, dtype=torch_dtype(x)) if isinstance(x, np.dtype) else x for x in (a, b)]
    found = torch.result_type(*as_torch)
    return BFLOAT16 if found == torch.bfloat16 else np.dtype(str(found).removeprefix("torch."))


@pytest.mark.parametrize("a, b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_two_arrays_promote_as_numpy_or_torch(device, a, b):
    # Empty operands: the dtype is decided before any kernel runs.
    got = ep.ops.binary("add", to_device(np.empty(0, a), device), to_device(np.empty(0, b), device))
    assert got.dtype == reference(a, b)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_python_scalars_are_weak(device, dtype):
    x = to_device(np.empty(0, dtype), device)
    for scalar in (True, 3, 2.5):
        if dtype == np.bool_ and scalar is True:
            continue  # bool + bool is logical or, kept bool by both
        assert ep.ops.binary("add", x, scalar).dtype == reference(dtype, scalar), scalar
        assert ep.ops.binary("mul", scalar, x).dtype == reference(scalar, dtype), scalar


@pytest.mark.parametrize("a, b", [("int8", "uint8"), ("uint64", "int64"), ("uint16", "int16"), ("bfloat16", "float16"), ("bfloat16", "int32")])
def test_mixed_values_compute_in_the_promoted_dtype(device, a, b):
    a, b = np.dtype(a), np.dtype(b)
    x = np.array([0, 1, 7, 100], np.int64)
    got = to_numpy(ep.ops.binary("add", to_device(x.astype(a), device), to_device(x[::-1].astype(b), device)))
    want = (x.astype(np.float64) + x[::-1]).astype(reference(a, b))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
