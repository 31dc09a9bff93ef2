"""bfloat16 conversions through the Cast primitive, bit for bit against ml_dtypes (NumPy's bfloat16)
and PyTorch computed here: every class of float32 (normals, subnormals, ties, overflow, infinities,
NaN payloads), every bfloat16 pattern back to float32, and float64 rounded as both libraries round it."""
import ml_dtypes
import numpy as np
import torch
from numba import config

import ep
from ep.testing import to_device, to_numpy

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def cast(device, x: np.ndarray, dst_dtype) -> np.ndarray:
    primitive = ep.NewPrimitive(ep.CastFactory, device, x.dtype, dst_dtype)
    stream = ep.GetDevice(device).CreateStream()
    src = to_device(x, device)
    dst = to_device(np.zeros(x.size, dst_dtype), device)
    primitive.Launch(stream, src, dst, x.size)
    stream.Sync()
    np.testing.assert_array_equal(to_numpy(src).view(np.uint8), x.view(np.uint8))
    return to_numpy(dst)


def float32_patterns() -> np.ndarray:
    """Both signs of every exponent (0: zero and subnormals; 255: infinities and NaNs) with
    fractions around each rounding case: exact, just below, at and above a tie, with an even and
    an odd kept bit, all ones."""
    fractions = [0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x10000, 0x17FFF, 0x18000, 0x18001, 0x400000, 0x7F8000, 0x7FFFFF]
    exponents = np.arange(256, dtype=np.uint32) << 23
    patterns = (exponents[:, None] | np.array(fractions, np.uint32)).ravel()
    return np.concatenate([patterns, patterns | np.uint32(1 << 31)]).view(np.float32)


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(f"u{x.itemsize}")


def test_float32_to_bfloat16_matches_ml_dtypes_bit_for_bit(device):
    x = float32_patterns()
    got = cast(device, x, BFLOAT16)
    with np.errstate(invalid="ignore"):
        want = x.astype(BFLOAT16)
    np.testing.assert_array_equal(bits(got), bits(want))
    # PyTorch rounds every number the same way; its NaNs keep other payload bits (NaN either way).
    torch_bits = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(bits(got)[~nan], torch_bits[~nan])
    assert np.isnan(got[nan].astype(np.float32)).all()


def test_every_bfloat16_converts_to_float32_exactly(device):
    # The simulator runs each thread as Python: a stride through the patterns, keeping every NaN's neighbours.
    step = 1 if device == "cpu" else 7
    patterns = np.unique(np.concatenate([np.arange(0, 1 << 16, step), [0x7F80, 0x7F81, 0x7FC0, 0xFF80, 0xFFFF, 0x8000, 0x0001]]))
    x = patterns.astype(np.uint16).view(BFLOAT16)
    got, want = bits(cast(device, x, np.float32)), patterns.astype(np.uint32) << 16
    np.testing.assert_array_equal(want, bits(x.astype(np.float32)))
    if config.ENABLE_CUDASIM and device == "cuda":
        # The simulator hands the kernel's float32 through a Python float (float64), which quiets a
        # signalling NaN: there only quiet NaNs compare.
        quiet = np.where(np.isnan(x.astype(np.float32)), np.uint32(1 << 22), np.uint32(0))
        got, want = got | quiet, want | quiet
    np.testing.assert_array_equal(got, want)


def test_float64_rounds_through_float32_as_ml_dtypes_and_torch(device):
    # 1 + 2**-8 + 2**-40 is just above a bfloat16 tie: float32 drops the 2**-40 first, and the tie
    # then goes to even (1.0), in both libraries.
    rng = np.random.default_rng(0)
    x = np.concatenate([
        [1 + 2**-8 + 2**-40, 1 + 3 * 2**-8 - 2**-40, 3.4e38, 3.5e38, 1e-45, 1e-300, -0.0, np.inf, -np.inf, np.nan],
        rng.normal(0, 1e3, 200),
    ])
    got = cast(device, x, BFLOAT16)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(bits(got), bits(x.astype(BFLOAT16)))
    number = ~np.isnan(x)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(bits(got)[number], want[number])


def test_bfloat16_to_integers_and_float16_as_ml_dtypes(device):
    x = np.array([0.0, -0.0, 1.5, -2.5, 100.0, 255.0, 65504.0, 70000.0, 1e-8, -7.0], BFLOAT16)
    np.testing.assert_array_equal(bits(cast(device, x, np.float16)), bits(x.astype(np.float16)))
    small = x[np.abs(x.astype(np.float32)) < 128]
    np.testing.assert_array_equal(cast(device, small, np.int8), small.astype(np.int8))
    np.testing.assert_array_equal(cast(device, x, np.int64), x.astype(np.int64))


def test_ops_compute_in_float32_and_round_once_as_torch(device):
    rng = np.random.default_rng(1)
    a = rng.normal(0, 10, 257).astype(BFLOAT16)
    b = rng.normal(0, 10, 257).astype(BFLOAT16)
    ta, tb = (torch.from_numpy(v.view(np.int16)).view(torch.bfloat16) for v in (a, b))
    for name in ("add", "mul", "sub", "maximum"):
        got = to_numpy(ep.ops.binary(name, to_device(a, device), to_device(b, device)))
        want = getattr(torch, name)(ta, tb).view(torch.int16).numpy().view(np.uint16)
        assert got.dtype == BFLOAT16
        np.testing.assert_array_equal(bits(got), want, err_msg=name)
    got = to_numpy(ep.ops.unary("relu", to_device(a, device)))
    np.testing.assert_array_equal(bits(got), torch.relu(ta).view(torch.int16).numpy().view(np.uint16))


def test_torch_bfloat16_tensors_in_and_out_without_a_copy():
    t = torch.tensor([1.5, -2.25, 3.0, 0.1], dtype=torch.bfloat16)
    got = ep.ops.binary("mul", t, 2.0)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    assert torch.equal(got, t * 2.0)
    out = torch.empty(4, dtype=torch.bfloat16)
    assert ep.ops.unary("negative", t, out=out) is out
    assert torch.equal(out, -t)
    # The result views ep's memory: writing through it is seen by NumPy's view of the same bytes.
    assert ep.from_dlpack(t).dtype == BFLOAT16
    assert ep.from_dlpack(t).ctypes.data == t.data_ptr()
