"""PlanCache: the one cache a primitive keeps, with the one bound policy.

A factory keeps its primitives in one (New's resolved arguments -> primitive), and a primitive its
launch plans in one (Launch's size and shape arguments, as the caller gave them -> what checking
and planning them made), so a repeated call skips every check and derivation. Keys are exact
(exact_key): 1, 1.0 and True, or -0.0 and 0.0, never find each other's entry, so a float size is
refused on every call and an attribute reaches its kernel as given.
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

from ep.common.runtime.caches import BOUNDS, register
from ep.common.runtime.keys import exact_key, is_named

T = TypeVar("T")

# Entries kept per cache: keys are caller data (shapes, attribute values), so without a bound a
# program cycling through shapes would grow it forever. Past it the oldest entry goes, and is made
# again if asked for.
MAX_ENTRIES = BOUNDS["plans"]

_MISSING = object()


class PlanCache(Generic[T]):
    """make(*args) per distinct args, made on first use; thread-safe (two threads may both make a
    missing entry; one is kept) and bounded by MAX_ENTRIES (the "plans" tier of caches.py).

    With by_name, arguments of names only (is_named: strings, None, enums, dtypes, devices;
    ep.ops.unary's op, dtype and attributes left out) are found as given, in one dict lookup: no
    value of another type equals such a value, so the exact key is not needed to find their entry
    (it was half of a tiny ep.ops call). Every lookup then hashes the arguments as given, which only
    a cache of small arguments should do (an expression graph's dataclasses hash every path:
    exponential in its depth). All others are found by their exact key.

    With as_given, every key is found as given: for arguments ep itself makes, never a caller's
    values (arrays' shapes: tuples of ints, or None), whose equal values are the same values.
    """

    def __init__(self, make: Callable[..., T], *, by_name: bool = False, as_given: bool = False, remember: int = 0) -> None:
        """remember: the number of arguments whose last lookup `last` keeps (0: none)."""
        self._make = make
        self._by_name = by_name
        self._as_given = as_given
        self._named: dict = {}
        self._entries: dict = {}
        self._lock = threading.Lock()
        self._remember = remember
        #: (*args, entry) of the last lookup whose args are their own exact key (ints, names and
        #: tuples of them: immutable), for a caller that compares its arguments with them by
        #: identity (a declared launch: ep.ops passes its rule's tuples, the same objects each
        #: call), which finds the entry in a fifth of get's time.
        self.last = (_MISSING,) * (remember + 1)
        register("plans", self)

    def clear(self) -> None:
        with self._lock:
            self._named.clear()
            self._entries.clear()
            self.last = (_MISSING,) * (self._remember + 1)

    def get(self, *args) -> T:
        try:
            if self._named:  # only a cache by_name or as_given holds entries found as given
                made = self._named.get(args, _MISSING)
                if made is not _MISSING:
                    return made
            key = exact_key(args)
            made = self._entries[key]
        except KeyError:
            pass
        except TypeError:
            # An unhashable argument (a list of dims): made on every call, or refused by make.
            return self._make(*args)
        else:
            if key is args and self._remember:
                self.last = (*args, made)
            return made
        made = self._make(*args)
        key = args if self._as_given else exact_key(args)
        entries = self._named if self._as_given or (self._by_name and is_named(key)) else self._entries
        with self._lock:
            made = entries.setdefault(key, made)
            if len(self._named) + len(self._entries) > MAX_ENTRIES:
                oldest = self._named if len(self._named) > len(self._entries) else self._entries
                del oldest[next(iter(oldest))]
        if key is args and self._remember:
            self.last = (*args, made)
        return made

    def __len__(self) -> int:
        return len(self._named) + len(self._entries)
