"""ep's caches in three named tiers, each with one bound, all listed by ep.cache_info() and emptied
by ep.cache_clear():

- "kernels": the device kernel objects (a ParallelFor, a CudaKernel) a primitive launches, one per
  kernel key (op, dtypes, element sizes): unbounded, as the registry's combinations bound them;
  behind them is Numba's disk cache, keyed by each kernel's content;
- "plans": every PlanCache (the primitives NewPrimitive made, each factory's primitives, each
  primitive's launch plans, ep.ops' rules) and the global view's choices and boxing routes: at
  most 4096 entries a cache, the oldest out;
- "launch state": what launches keep of the device arrays they were given (buffer.py's checks,
  flat views and addresses): at most 4096 entries, all dropped past that.

Emptying a tier costs only the work of making its entries again: primitives and kernels already
in a caller's hands keep working.
"""
from __future__ import annotations

import functools
import weakref
from typing import Callable

#: Each tier's one bound: the entries a cache of it holds at most (None: bounded by its keys).
BOUNDS: dict[str, int | None] = {"kernels": None, "plans": 4096, "launch state": 4096}

# tier -> its caches by id: objects with __len__ and clear(), held weakly (a primitive's plans go with it).
_CACHES: dict[str, weakref.WeakValueDictionary] = {tier: weakref.WeakValueDictionary() for tier in BOUNDS}


def register(tier: str, cache: object) -> None:
    """Count cache (anything with __len__ and clear(), holding at most BOUNDS[tier]) in tier."""
    _CACHES[tier][id(cache)] = cache


class Table(dict):
    """A dict a tier counts (a subclass: a dict cannot be held weakly)."""


def table(tier: str) -> Table:
    """A new dict of tier, counted in it; its owner keeps it within BOUNDS[tier]."""
    made = Table()
    register(tier, made)
    return made


class _Function:
    """A functools cache as a tier's cache."""

    def __init__(self, cached: Callable) -> None:
        self.cached = cached

    def __len__(self) -> int:
        return self.cached.cache_info().currsize

    def clear(self) -> None:
        self.cached.cache_clear()


_FUNCTIONS: list[_Function] = []  # held here: the tiers hold their caches weakly


def function_cache(tier: str) -> Callable[[Callable], Callable]:
    """Decorator: functools' lru_cache with tier's bound, counted in tier (a device's kernel(*key)
    method in "kernels"; a function of hashable plain arguments in "plans")."""

    def decorate(function: Callable) -> Callable:
        cached = functools.lru_cache(maxsize=BOUNDS[tier])(function)
        _FUNCTIONS.append(_Function(cached))
        register(tier, _FUNCTIONS[-1])
        return cached

    return decorate


def cache_info() -> dict[str, dict[str, object]]:
    """Per tier: its bound, how many caches it holds and their entries."""
    return {
        tier: {"bound": BOUNDS[tier], "caches": len(caches), "entries": sum(len(c) for c in list(caches.values()))}
        for tier, caches in _CACHES.items()
    }


def cache_clear() -> None:
    """Empty every cache of every tier."""
    for caches in _CACHES.values():
        for cache in list(caches.values()):
            cache.clear()
