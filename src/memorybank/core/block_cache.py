"""What the memory block reads again for a user's next message, kept until their scopes are
written (:mod:`memorybank.core.prompt`).

The always-loaded facts, "Recently Changed" and the size of a caller's memory change only when
one of the caller's scopes is written: a save, update, delete, supersede, restore, merge,
import, forget or clear. Every such write records a history event in its own transaction, in
a sequence that only grows, so the newest event number of the caller's scopes
(:meth:`~memorybank.stores.base.Store.last_event_of`, one index lookup per scope) says whether
what was read is still current. A write anywhere, by this process or another one on the same
database, changes that number; time alone never does (what depends on the clock, such as the
30 days of "Recently Changed", is applied to the cached read when the block is made).

>>> cache = BlockCache(bank.store)
>>> reads = cache.reads(ScopeSet(user_id="u1"))
>>> reads.get("answer", lambda: 42), reads.get("answer", lambda: 0)
(42, 42)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from memorybank.model import ScopeSet
from memorybank.stores.base import Store

T = TypeVar("T")

#: How many callers' reads are kept (each up to a few hundred memories: a few hundred KB).
BLOCK_CACHE_SIZE = 128


class Reads:
    """The cached reads of one scope set, current as of the event they were read at."""

    def __init__(self, event: int) -> None:
        self.event = event
        self._values: dict[str, Any] = {}

    def get(self, name: str, read: Callable[[], T]) -> T:
        """The value cached as ``name``, read with ``read`` the first time."""
        if name not in self._values:
            self._values[name] = read()
        value: T = self._values[name]
        return value


class BlockCache:
    """The block's reads per scope set, dropped when one of its scopes is written."""

    def __init__(self, store: Store, size: int = BLOCK_CACHE_SIZE) -> None:
        self._store = store
        self._size = size
        self._entries: OrderedDict[ScopeSet, Reads] = OrderedDict()
        self._lock = threading.Lock()

    def reads(self, scopes: ScopeSet) -> Reads:
        """The reads of ``scopes`` cached since its newest event, or a fresh set if it was
        written since (or never read). The event is read first, so a write that lands while
        a value is being read makes the next call read it again."""
        event = self._store.last_event_of(scopes)
        with self._lock:
            entry = self._entries.get(scopes)
            if entry is None or entry.event != event:
                entry = self._entries[scopes] = Reads(event)
            self._entries.move_to_end(scopes)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
            return entry

    def clear(self) -> None:
        """Forget every cached read (benchmarks time the block from cold with it)."""
        with self._lock:
            self._entries.clear()


__all__ = ["BLOCK_CACHE_SIZE", "BlockCache", "Reads"]
