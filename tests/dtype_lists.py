"""The dtypes the tests run, written out here (not read from ep): every DataType, by kind; and the
sample of them that tests compiling a kernel per case run."""
import zlib
from typing import Iterable

import ml_dtypes
import numpy as np

BOOL = np.dtype(np.bool_)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
INTS = tuple(np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"))
FLOATS = (np.dtype(np.float16), BFLOAT16, np.dtype(np.float32), np.dtype(np.float64))
ALL = (BOOL,) + INTS + FLOATS
# The dtypes every case runs in; each of the others takes part in one case in SAMPLE_EVERY.
CLASSIC = tuple(np.dtype(t) for t in ("bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64"))
SAMPLE_EVERY = 5
# For tests of primitives that move bytes (their kernels are per width, not per dtype): every width
# and kind, bfloat16 and uint64 among them (int16 and uint16 move as float16, uint32 as int32).
BY_WIDTH = CLASSIC + (BFLOAT16, np.dtype(np.uint64))


def kind(dtype) -> str:
    """NumPy's kind letter, with "f" for bfloat16 (ml_dtypes' is "V")."""
    dtype = np.dtype(dtype)
    return "f" if dtype == BFLOAT16 else dtype.kind


def sampled(cases: Iterable) -> list:
    """Every case whose dtypes are all CLASSIC, and one in SAMPLE_EVERY of the others, picked by a
    hash of the case's text: the same cases in every run. The rest are compiled by the PTX sweep
    and share their kernels' code with a classic dtype of their width."""
    def dtypes(case) -> list:
        items = case if isinstance(case, tuple) else (case,)
        found = []
        for item in items:
            try:
                found.append(np.dtype(item))
            except (TypeError, ValueError):
                pass
        return found

    return [c for c in cases if all(d in CLASSIC for d in dtypes(c)) or zlib.crc32(repr(c).encode()) % SAMPLE_EVERY == 0]


def comparable(x):
    """x with bfloat16 as float32 (exact), which NumPy's testing functions compare (NaN included)."""
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype == BFLOAT16 else x


def assert_same(got, want, **kwargs) -> None:
    """np.testing.assert_array_equal, bfloat16 included."""
    np.testing.assert_array_equal(comparable(got), comparable(want), **kwargs)
