"""Timing: median per-call time of repeated samples after warm-up, with a device sync per sample."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median and the fastest of `repeats` samples of `number` calls each."""

    median_s: float
    min_s: float
    repeats: int
    number: int


def measure(
    fn: Callable[[], object],
    sync: Callable[[], None],
    *,
    repeats: int,
    min_sample_s: float,
    warmup: int = 1,
) -> Timing:
    """Time fn, which has already run once (compiled); sync waits for the device after each sample.

    Calls too short for the clock are batched: a sample runs fn `number` times, with number grown
    until one sample takes at least min_sample_s, and reports the time per call.
    """
    for _ in range(warmup):
        fn()
    sync()
    number = 1
    while True:
        elapsed = _sample(fn, sync, number)
        if elapsed >= min_sample_s or number >= 1 << 20:
            break
        # Aim past the target so the next sample usually is the last calibration step.
        number *= max(2, min(100, int(2 * min_sample_s / max(elapsed, 1e-9))))
    samples = [elapsed / number] + [_sample(fn, sync, number) / number for _ in range(repeats - 1)]
    return Timing(statistics.median(samples), min(samples), repeats, number)


def _sample(fn: Callable[[], object], sync: Callable[[], None], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return time.perf_counter() - start
