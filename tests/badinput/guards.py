"""Helpers of the bad-input suite: guarded output buffers, input digests, error checks, a subprocess batch.

Not a conftest: test modules import it by name (pytest puts this folder on sys.path).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from ep.testing import to_device, to_numpy

# Elements on each side of a guarded buffer's middle.
GUARD = 8

# Few examples per test: the folder has to run in a few minutes on two cores. derandomize keeps
# every run the same; no example database is written.
FAST = settings(
    max_examples=12, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def host_bytes(array) -> bytes:
    """The bytes of a NumPy or cuda array's elements (a copy from the device for cuda)."""
    host = array if isinstance(array, np.ndarray) else to_numpy(array)
    return np.ascontiguousarray(host).tobytes()


def digest(value: object) -> str:
    """A hash of everything a launch argument could let a callee modify.

    A NumPy array is hashed with the whole allocation it views (a slice's neighbours too), a masked
    array with its mask, a cuda array through a host copy; anything else by its repr.
    """
    if isinstance(value, np.ma.MaskedArray):
        return digest(value.data) + digest(np.ma.getmaskarray(value))
    if isinstance(value, np.ndarray):
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        return hashlib.sha256(root.tobytes() + value.tobytes()).hexdigest()
    if hasattr(value, "copy_to_host") or getattr(value, "__cuda_ndarray__", False):
        return hashlib.sha256(host_bytes(value)).hexdigest()
    if isinstance(value, (list, dict)):
        return hashlib.sha256(repr(value).encode()).hexdigest()
    return repr(type(value))


def misaligned_copy(array: np.ndarray, device: str, start: int = 1):
    """A copy of array on device, in a byte buffer from byte start on (1: every element misaligned)."""
    raw = np.zeros(array.nbytes + start, np.uint8)
    raw[start:] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    return to_device(raw, device)[start:].view(array.dtype).reshape(array.shape)


class Guarded:
    """A device buffer of n elements (the middle) between GUARD elements on each side, all of it
    filled with a pattern, so a test can tell what a launch wrote and where."""

    def __init__(self, device: str, dtype, n: int, *, misaligned: bool = False) -> None:
        self.dtype, self.n = np.dtype(dtype), n
        total = (n + 2 * GUARD) * self.dtype.itemsize
        self.before = np.random.default_rng(n).integers(0, 256, total, dtype=np.uint8)
        # A bool element must hold 0 or 1, or Numba normalizes what it reads.
        if self.dtype == np.bool_:
            self.before &= 1
        self.whole = misaligned_copy(self.before, device, 1 if misaligned else 0).view(self.dtype)
        self.middle = self.whole[GUARD : GUARD + n]

    def bytes(self) -> np.ndarray:
        return np.frombuffer(host_bytes(self.whole), np.uint8)

    def check_guards(self) -> None:
        """Nothing outside the middle changed."""
        now, edge = self.bytes(), GUARD * self.dtype.itemsize
        assert np.array_equal(now[:edge], self.before[:edge]), "a launch wrote before its output"
        assert np.array_equal(now[-edge:], self.before[-edge:]), "a launch wrote after its output"

    def check_unchanged(self) -> None:
        """Nothing at all changed (a launch that raised)."""
        assert np.array_equal(self.bytes(), self.before), "a launch that raised wrote to its output"

    def value(self) -> np.ndarray:
        return to_numpy(self.middle)


def names_argument(message: str, name: str) -> bool:
    """Whether message names the argument as a word (src is not named by src_dims)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9])", message) is not None


def expect_error(call, error: type[Exception], names: tuple[str, ...]):
    """Run call(); it must raise error with a message naming one of names."""
    with pytest.raises(Exception) as info:
        call()
    assert isinstance(info.value, error), f"expected {error.__name__}, got {type(info.value).__name__}: {info.value}"
    message = str(info.value)
    assert any(names_argument(message, name) for name in names), f"{message!r} names none of {names}"
    return info.value


def run_batch(code: str, timeout: int = 600) -> dict:
    """Run code (which ends by printing one JSON object) in a fresh interpreter; its result.

    For cases that could crash the process if a check were missing: one interpreter per batch,
    so a segfault fails the test that owns the batch instead of the whole run.
    """
    env = dict(os.environ)
    env.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert result.returncode == 0, f"the batch died (rc {result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])
