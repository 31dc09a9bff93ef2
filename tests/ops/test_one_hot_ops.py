"""ep.ops.one_hot against torch.nn.functional.one_hot (and NumPy for on/off values and dtypes)."""
import numpy as np
import pytest
import torch

import ep
from ep.testing import to_device, to_numpy, transposed


def on(x, device):
    """x on device, keeping its shape (a 0-d one included)."""
    return to_device(x, device).reshape(np.shape(x))


def numpy_one_hot(indices, classes, on=1, off=0, dtype=np.int64):
    return np.where(indices[..., None] == np.arange(classes), on, off).astype(dtype)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 0, 4)], ids=str)
@pytest.mark.parametrize("num_classes", [-1, 7])
def test_matches_torch(device, shape, num_classes):
    indices = np.random.default_rng(1).integers(0, 5, shape).astype(np.int64)
    if not indices.size and num_classes == -1:
        # torch refuses too: "Can not infer total number of classes from empty tensor".
        with pytest.raises(ValueError, match="num_classes: -1 cannot be inferred from empty indices"):
            ep.ops.one_hot(on(indices, device), num_classes)
        return
    got = ep.ops.one_hot(on(indices, device), num_classes)
    expected = torch.nn.functional.one_hot(torch.from_numpy(indices), num_classes).numpy()
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(to_numpy(got), expected)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "float16", "float32", "float64"])
def test_dtype_and_values_as_tensorflow(device, dtype):
    indices = np.array([[3, 0], [1, 3]], np.int32)
    on, off = (True, False) if dtype == "bool" else (5, 2)
    got = ep.ops.one_hot(to_device(indices, device), 4, dtype=dtype, on_value=on, off_value=off)
    np.testing.assert_array_equal(to_numpy(got), numpy_one_hot(indices, 4, on, off, dtype))
    assert to_numpy(got).dtype == np.dtype(dtype)


def test_strided_indices_and_out(device):
    indices = np.arange(12, dtype=np.int64).reshape(3, 4) % 5
    out = to_device(np.zeros((4, 3, 5), np.float32), device)
    result = ep.ops.one_hot(transposed(to_device(indices, device)), 5, dtype=np.float32, on_value=0.5, out=out)
    assert result is out
    np.testing.assert_array_equal(to_numpy(out), numpy_one_hot(indices.T, 5, 0.5, 0, np.float32))


def test_other_libraries_arrays_in_and_out():
    got = ep.ops.one_hot(torch.tensor([2, 0, 1]), 3)
    assert isinstance(got, torch.Tensor)
    assert torch.equal(got, torch.nn.functional.one_hot(torch.tensor([2, 0, 1]), 3))


@pytest.mark.parametrize(
    "indices, num_classes, message",
    [
        (np.array([[0, 1], [4, 2]]), 4, r"indices\[1, 0\] = 4 is out of range for an axis of size 4; expected 0 <= index < 4"),
        (np.array([0, -1, 2]), -1, r"indices\[1\] = -1 is out of range for an axis of size 3"),
        (np.array(3), 2, r"indices = 3 is out of range"),
    ],
)
def test_an_index_out_of_range_names_its_position(device, indices, num_classes, message):
    stream = ep.GetDevice(device).CreateStream()
    with pytest.raises(IndexError, match=message):
        ep.ops.one_hot(on(indices, device), num_classes, stream=stream)
        stream.Sync()  # where CUDA, which does not wait for the check, raises


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"indices": np.array([1.0])}, TypeError, "indices: dtype float64 is not an index type"),
        ({"indices": np.array([1], np.int8)}, TypeError, "indices"),
        ({"num_classes": -2}, ValueError, "num_classes: -2"),
        ({"num_classes": 2.0}, TypeError, "num_classes"),
        ({"indices": np.zeros(0, np.int64)}, ValueError, "num_classes: -1 cannot be inferred"),
        ({"dtype": np.complex64}, TypeError, "dtype"),
        ({"dtype": np.int8, "on_value": 300}, OverflowError, "on_value"),
        ({"off_value": "0"}, TypeError, "off_value"),
        ({"num_classes": 3, "out": np.zeros((2, 4), np.int64)}, ValueError, "out: has shape"),
        ({"num_classes": 3, "out": np.zeros((2, 3), np.int32)}, TypeError, "out: has dtype"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, message):
    kwargs = {"indices": np.array([0, 2]), **kwargs}
    with pytest.raises(error, match=message):
        ep.ops.one_hot(kwargs.pop("indices"), **kwargs)


def test_out_sharing_memory_with_indices_reads_them_first():
    buffer = np.zeros(4, np.int64)
    buffer[:2] = [1, 0]
    ep.ops.one_hot(buffer[:2], 2, out=buffer.reshape(2, 2))
    np.testing.assert_array_equal(buffer, [0, 1, 1, 0])


def test_help_says_the_semantics():
    assert "torch.nn.functional.one_hot" in ep.ops.one_hot.__doc__ and "IndexError" in ep.ops.one_hot.__doc__


def test_a_result_beyond_the_machines_memory_is_refused_up_front(monkeypatch):
    # With overcommit the allocation succeeded and writing it got the process killed.
    from ep.common.runtime import allocator

    monkeypatch.setattr(allocator, "_PHYSICAL_BYTES", 1 << 20)
    with pytest.raises(MemoryError, match="num_classes: gives shape \\(1, 262145\\) of int32.*more than this machine's 1048576 bytes"):
        ep.ops.one_hot(np.array([262144]), -1, dtype=np.int32)
    assert ep.ops.one_hot(np.array([3]), -1).shape == (1, 4)
