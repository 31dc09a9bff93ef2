"""A primitive's samples: small launches on host arrays, written beside the primitive's declaration.

Each factory's `Samples(op, dtypes)` yields them for one of its Combinations, one launch per shape
class that picks its own kernel. Everything that must launch every primitive is derived from them
and the registry, with no list kept per primitive: `python -m ep warmup` launches each sample,
`python -m ep check` compares the samples that carry a NumPy reference, and the bad-input tests
start from a sample's good launch.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ep.common.runtime.data_type import DataType


@dataclass
class Sample:
    """One launch: NewPrimitive's arguments after the device, Launch's arguments after the stream
    by name and in order (NumPy arrays, or lists of them, stand for device buffers, except those
    named in `host`), and each output's NumPy reference after it (None: a launch for its kernel
    alone), equal within rtol (0: exactly, bit for bit)."""

    new: tuple
    args: dict[str, object]
    expected: dict[str, np.ndarray] | None = None
    new_kwargs: dict[str, object] = field(default_factory=dict)
    host: tuple[str, ...] = ()
    rtol: float = 0.0


def values(count: int, dtype: DataType | str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """count small values of dtype, exact in every dtype (bool alternates), as shape."""
    dtype = DataType(dtype).dtype
    ramp = np.arange(count) % 5 + 1
    array = (ramp % 2 == 1) if dtype == np.bool_ else ramp.astype(dtype)
    return array.reshape(shape if shape is not None else (count,))


def zeros(count: int, dtype: DataType | str) -> np.ndarray:
    """count zeros of dtype: an output's storage before a launch."""
    return np.zeros(count, DataType(dtype).dtype)


def float_rtol(dtype: DataType) -> float:
    """The relative tolerance of a float result of dtype computed in several steps: a few units in
    its last place (float16 and bfloat16 round once, from float32)."""
    return {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5}.get(dtype.value, 1e-12)
