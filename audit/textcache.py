"""A least-recently-used cache of results computed from source texts, bounded by the texts' size.

The rules engine evaluates rule by rule over every code unit of a run, so a cache bounded by a
number of entries thrashes as soon as a run holds more units than entries (a 1,000-node AIDE
journal re-parsed once per rule). Bounding the cache by the characters of the texts it holds
keeps every unit of an ordinary run cached while a few huge units cannot pin unbounded memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

__all__ = ["TextCache", "UNIT_ENTRIES"]

#: Entries of the per-unit caches (parses, folded strings, query matches, write sites): every unit
#: of a large run, whose rules each go over all of its units; a smaller bound is emptied before
#: any entry is used again once a run has more units than it (a 4 MB log of 39,000 small code
#: units was parsed 487,000 times under 20,000). Small units cost about 2.3 KB each (parse and
#: folds), so the bound holds them to about 250 MB; the characters bound holds large ones.
UNIT_ENTRIES = 100_000


class TextCache:
    """``get_or_compute(key, size, compute)``: the cached value, or ``compute()`` stored under ``key``.

    Parameters
    ----------
    max_chars : int
        Total ``size`` (characters of source) of the entries kept; the least recently used go first.
        An entry larger than this is computed and returned, never stored.
    max_entries : int
        Entries kept at most.
    """

    def __init__(self, *, max_chars: int, max_entries: int) -> None:
        self.max_chars = max_chars
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, size: int, compute: Callable[[], Any]) -> Any:
        """The value stored under ``key``, else ``compute()`` (stored when ``size`` fits)."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[0]
        value = compute()
        if size > self.max_chars:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, size)
                self._chars += size
                while self._chars > self.max_chars or len(self._entries) > self.max_entries:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._chars -= dropped
        return value

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._entries)
