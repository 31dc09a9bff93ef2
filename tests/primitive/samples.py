"""Test inputs shared by the primitive tests that move bytes (Expand, CopyNd)."""
import math

import numpy as np


def sample(shape, dtype, seed=0):
    """Random elements of dtype; floats are random bit patterns (NaNs and infinities included)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(0, 256, size=(math.prod(shape) * dtype.itemsize,), dtype=np.uint8).view(dtype).reshape(shape)
