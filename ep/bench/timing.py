"""Timing: per-call times of repeated samples, taken one contender after another within each round
so that the machine's drift (other processes, clock changes) hits every contender alike."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Timing:
    """Seconds per call of each sample (one sample per round, `number` calls each), and summaries."""

    samples_s: tuple[float, ...]
    number: int

    @property
    def repeats(self) -> int:
        return len(self.samples_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def min_s(self) -> float:
        return min(self.samples_s)

    @property
    def slowest_over_median(self) -> float:
        """The tail: the slowest sample over the median."""
        return max(self.samples_s) / self.median_s

    @property
    def spread(self) -> float:
        """Half the interquartile range of the samples over their median (0 with one sample)."""
        return relative_spread(self.samples_s)


def half_iqr(values) -> float:
    """Half the interquartile range of values (0 with one value)."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / 2


def relative_spread(values) -> float:
    """Half the interquartile range of values over their median: 0.05 reads "+-5%"."""
    return half_iqr(values) / statistics.median(values) if len(values) > 1 else 0.0


def calibrate(fn: Callable[[], object], sync: Callable[[], None], min_sample_s: float, pause: bool = True) -> int:
    """How many calls of fn (already run once: compiled) make one sample last at least min_sample_s;
    calls too short for the clock are batched."""
    fn()
    sync()
    number = 1
    while number < 1 << 20:
        elapsed = _sample(fn, sync, number, pause)
        if elapsed >= min_sample_s:
            # Confirmed by a second sample: one stall (another process had the core) must not
            # make a sample of one slow call (the quick bench's PyTorch relu: 20 ms, 50 us a call).
            elapsed = min(elapsed, _sample(fn, sync, number, pause))
        if elapsed >= min_sample_s:
            break
        # Aim past the target so the next sample usually is the last calibration step.
        number *= max(2, min(100, int(2 * min_sample_s / max(elapsed, 1e-9))))
    return number


def measure_interleaved(
    fns: dict[str, Callable[[], object]],
    sync: Callable[[], None],
    *,
    repeats: int,
    min_sample_s: float,
    pause: bool = True,
) -> dict[str, Timing]:
    """Time every fn of fns (each already run once) in `repeats` rounds of one sample each.

    The rounds take their orders from round_orders in turn, so that every contender runs in every
    position and right after every other contender equally often: none always runs first, last,
    or after the same one, whose leftovers it would pay for every time (after PyTorch, both of
    ep's contenders ran B1 ~1 ms slower, its threads quiet). sync waits for the device after each
    sample; with pause, each sample waits for the process's threads to go quiet (settle) first.
    """
    names = list(fns)
    if not names:
        return {}
    numbers = {name: calibrate(fns[name], sync, min_sample_s, pause) for name in names}
    samples: dict[str, list[float]] = {name: [] for name in names}
    orders = round_orders(len(names))
    for r in range(repeats):
        for i in orders[r % len(orders)]:
            name = names[i]
            samples[name].append(_sample(fns[name], sync, numbers[name], pause) / numbers[name])
    return {name: Timing(tuple(samples[name]), numbers[name]) for name in names}


def round_orders(n: int) -> list[list[int]]:
    """Orders of n contenders for successive rounds: a balanced Latin square (Williams' design).
    Over all of them each contender takes every position, and follows every other one, equally
    often (n orders for even n; for odd n, those n and their reverses)."""
    first, low, high = [0], 1, n - 1
    while len(first) < n:
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    orders = [[(i + r) % n for i in first] for r in range(n)]
    return orders + [order[::-1] for order in orders] if n % 2 and n > 1 else orders


def measure(
    fn: Callable[[], object], sync: Callable[[], None], *, repeats: int, min_sample_s: float, pause: bool = True
) -> Timing:
    """Time one fn alone (already run once): `repeats` samples; pause=False: back to back, as timeit."""
    return measure_interleaved({"fn": fn}, sync, repeats=repeats, min_sample_s=min_sample_s, pause=pause)["fn"]


# A sample starts once this process's threads have gone quiet (then one untimed call). Thread pools spin for a while
# after their work before they sleep (PyTorch's OpenMP workers spin 4-12 ms after every op on a
# 2-core AMD EPYC VM), and a sample started meanwhile shares its cores with the previous
# contender's spinning threads: the contender after PyTorch paid up to 1.5 ms a call for it.
# The pause is watched in windows of a few scheduler ticks, since the CPU time of a thread running
# on another core is brought up to date only at ticks (4 ms here).
_SETTLE_STEP_S = 0.01
_SETTLE_LIMIT_S = 0.2
# The share of one CPU below which the process counts as quiet (the sleeping caller uses none).
_QUIET_SHARE = 0.2


def settle(step_s: float = _SETTLE_STEP_S, limit_s: float = _SETTLE_LIMIT_S) -> float:
    """Wait until this process's threads used under _QUIET_SHARE of one CPU over a pause of step_s,
    or limit_s has passed; returns the seconds waited."""
    start = time.perf_counter()
    while True:
        cpu, begin = time.process_time(), time.perf_counter()
        time.sleep(step_s)
        end = time.perf_counter()
        if time.process_time() - cpu < _QUIET_SHARE * (end - begin) or end - start >= limit_s:
            return end - start


def _sample(fn: Callable[[], object], sync: Callable[[], None], number: int, pause: bool = True) -> float:
    if pause:
        settle()
        # One call untimed, which wakes the contender's pool as a loop's earlier calls do: the
        # first call after a pause wakes PyTorch's sleeping OpenMP worker, and with both cores busy
        # (other processes) the worker waits milliseconds for a core while the caller waits for it.
        fn()
        sync()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return time.perf_counter() - start
