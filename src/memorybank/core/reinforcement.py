"""Which memories searches recalled, so their importance decay starts again (seed 000's
"importance decay": a fact the assistant keeps needing stays important).

A search is a read; writing each one's hits would make every search a write transaction
(on SQLite with ``synchronous=FULL``, an fsync each). So recalls are gathered in memory and
written in one statement, on a thread of its own, at most every :data:`FLUSH_SECONDS`, and
when the bank closes; a crash loses at most that much of a ranking signal, never a memory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from memorybank.model import SearchHit, utcnow
from memorybank.stores.base import Store

log = logging.getLogger(__name__)

#: The longest recalls wait in memory before they are written.
FLUSH_SECONDS = 30.0


class Reinforcements:
    """Recalled memory ids on their way to :meth:`Store.reinforce`.

    >>> pending = Reinforcements(bank.store)
    >>> pending.note([])
    >>> pending.pending
    0
    """

    def __init__(self, store: Store, flush_seconds: float = FLUSH_SECONDS) -> None:
        self._store = store
        self._flush_seconds = flush_seconds
        self._ids: set[str] = set()
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._writer: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """How many recalled ids wait to be written."""
        return len(self._ids)

    def note(self, hits: Iterable[SearchHit]) -> None:
        """Remember that these hits were recalled; write them all when it is time."""
        with self._lock:
            self._ids.update(hit.memory.id for hit in hits)
            if not self._ids or time.monotonic() - self._last < self._flush_seconds:
                return
            self._last = time.monotonic()  # one write at a time starts
            # Off the searching thread (often the event loop): the write may wait for the
            # database's write lock. Started under the lock, so close() never sees it unstarted.
            self._writer = threading.Thread(target=self.flush, name="reinforce", daemon=True)
            self._writer.start()

    def close(self) -> None:
        """Wait for a write under way, then write what is left (before the store closes)."""
        with self._lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.join()
        self.flush()

    def flush(self) -> None:
        """Write every pending recall now (marked with the current time)."""
        with self._lock:
            ids, self._ids = self._ids, set()
            self._last = time.monotonic()
        if not ids:
            return
        try:
            self._store.reinforce(sorted(ids), utcnow())
        except Exception:  # a read-only or full database: drop the signal, never fail a read
            log.warning("could not record %d recalled memories", len(ids), exc_info=True)


__all__ = ["FLUSH_SECONDS", "Reinforcements"]
