"""ep.ops.pad against torch.nn.functional.pad (mode="constant"): pads, crops, values, out=, other libraries' arrays, bad pads."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ep
from ep.testing import to_device, to_numpy


def reference(x: np.ndarray, pad, value) -> np.ndarray:
    return F.pad(torch.from_numpy(np.array(x)), tuple(pad), mode="constant", value=value).numpy()


@pytest.mark.parametrize(
    "shape, pad",
    [((3, 4), (1, 2)), ((3, 4), (1, -1, 2, 0)), ((2, 3, 4), (0, 0, -1, -2)), ((2, 3, 4), (1, 1, 1, 1, 1, 1)), ((5,), ()), ((0, 2), (1, 1, 1, 0))],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16])
def test_pad_matches_torch(device, shape, pad, dtype):
    x = np.asarray(np.random.default_rng(0).random(shape) * 10).astype(dtype)
    value = True if dtype == np.bool_ else 3
    got = to_numpy(ep.ops.pad(to_device(x, device).reshape(shape), pad, value))
    expected = reference(x, pad, value)
    np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def test_a_strided_input_is_padded():
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)[:, ::2, 1:]
    np.testing.assert_array_equal(ep.ops.pad(x, (1, 0, 0, 2), value=-1.0), reference(x, (1, 0, 0, 2), -1.0))


def test_a_float_value_is_truncated_for_integers_and_a_tensor_comes_back():
    t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    got = ep.ops.pad(t, (1, 1), value=2.7)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.int32
    assert torch.equal(got, F.pad(t, (1, 1), value=2))


def test_out_is_written_and_returned(device):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = to_device(np.zeros((2, 5), np.int32), device)
    assert ep.ops.pad(to_device(x, device), (1, 1), 9, out=out) is out
    np.testing.assert_array_equal(to_numpy(out), reference(x, (1, 1), 9))


def test_out_overlapping_the_input_reads_the_input_first():
    base = np.arange(12, dtype=np.float32)
    x = base[:6].reshape(2, 3)
    expected = reference(x, (1, 0), 0)
    out = base[2:10].reshape(2, 4)
    ep.ops.pad(x, (1, 0), 0, out=out)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "pad, error, message",
    [
        ((1, 1, 1), ValueError, r"pad: has 3 entries; expected an even number"),
        ((1,) * 8, ValueError, r"pad: has 8 entries, more than 2 \* 3 for an array of 3 dims"),
        ((-3, -2), ValueError, r"pad: pad\[0\], pad\[1\] = -3, -2 crop dim 2 of size 4 to -1; expected a size >= 0"),
        ((0, 0, -2, -2), ValueError, r"pad: pad\[2\], pad\[3\] = -2, -2 crop dim 1 of size 3 to -1"),
        # torch crops before it pads: a crop past the dim is refused though padding would refill it.
        ((-5, 2), ValueError, r"pad: pad\[0\], pad\[1\] = -5, 2 crop dim 2 of size 4 to -1; expected a size >= 0"),
        ((2, -6), ValueError, r"pad: pad\[0\], pad\[1\] = 2, -6 crop dim 2 of size 4 to -2"),
        ((1, 1.5), TypeError, r"pad\[1\]: 1.5 is not an integer"),
        (2, TypeError, r"pad: 2 is not a sequence of ints"),
    ],
)
def test_bad_pads_are_refused(pad, error, message):
    with pytest.raises(error, match=message):
        ep.ops.pad(np.zeros((2, 3, 4), np.float32), pad)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_value_none_pads_with_zeros_as_torch(dtype):
    x = np.ones((2, 3), dtype)
    np.testing.assert_array_equal(ep.ops.pad(x, (1, 2), None), reference(x, (1, 2), None))
    np.testing.assert_array_equal(ep.ops.pad(x, (1, 2)), reference(x, (1, 2), None))


def test_bad_values_are_refused():
    with pytest.raises(OverflowError, match=r"value: 300 is out of the range of int8"):
        ep.ops.pad(np.zeros(3, np.int8), (1, 1), 300)
    with pytest.raises(TypeError, match=r"value: 'a' is not a real scalar"):
        ep.ops.pad(np.zeros(3, np.float32), (1, 1), "a")


def test_help_says_the_semantics():
    assert "torch.nn.functional.pad" in ep.ops.pad.__doc__ and "crops" in ep.ops.pad.__doc__


@pytest.mark.parametrize("shape, pad", [((2,) * 9, (1, 1) * 9), ((3,) * 11, (1, -1, 2, 0) * 5 + (0, 1))], ids=["9-d", "11-d crops"])
def test_more_dims_than_a_pad_merges_to_are_padded_in_stages(device, shape, pad):
    # "src_dims: needs 9 dims after merging" named an argument the caller never passed; torch pads them.
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    expected = torch.nn.functional.pad(torch.from_numpy(x), pad, value=7.0).numpy()
    np.testing.assert_array_equal(to_numpy(ep.ops.pad(to_device(x, device), pad, 7.0)), expected)
