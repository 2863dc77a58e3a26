"""Counters of how memory is used, for the success metrics of seed 002 §8
(:mod:`memorybank.services.insights`): searches and how many found something (the search hit rate),
saves refused as duplicates and conflicts surfaced, and the size of the memory block put
into system prompts.

Each :class:`~memorybank.MemoryBank` counts in memory, per user and day, and hands what it
counted to a ``sink`` (the database, :func:`memorybank.stores.insights_sql.usage_sink`) at
most every ``flush_seconds`` (on a thread of its own), and when it closes: counting is a lock
and a few additions, cheap enough for every search. Block sizes are counted in buckets
(:data:`BLOCK_BUCKETS`), so a 95th percentile is known to within a bucket.

>>> usage = Usage()
>>> usage.searched("u1", hits=3)
>>> usage.searched("u1", hits=0)
>>> usage.prompt_built("u1", block_tokens=120, prompt_tokens=400)
>>> {name: n for (_, user, name), n in usage.pending().items() if name.startswith("block")}
{'block_tokens': 120, 'block_le_150': 1}
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence

from memorybank.model import SaveResult
from memorybank.stores.insights_sql import Key, Sink

log = logging.getLogger(__name__)

#: Upper bounds (tokens) of the memory-block size buckets; larger blocks count as "more".
BLOCK_BUCKETS: tuple[int, ...] = (0, 25, 50, 100, 150, 200, 300, 400, 500, 750, 1000, 2000)


def bucket_name(tokens: int) -> str:
    """The counter of the block-size bucket ``tokens`` falls in.

    >>> bucket_name(120), bucket_name(5000)
    ('block_le_150', 'block_le_more')
    """
    for bound in BLOCK_BUCKETS:
        if tokens <= bound:
            return f"block_le_{bound}"
    return "block_le_more"


def today() -> int:
    """Today's day number (UTC)."""
    return int(time.time() // 86_400)


class Usage:
    """Thread-safe usage counters per user and day (see the module documentation)."""

    def __init__(self, sink: Sink | None = None, *, flush_seconds: float = 5.0) -> None:
        self._lock = threading.Lock()
        self._pending: Counter[Key] = Counter()
        self._sink = sink
        self._flush_seconds = flush_seconds
        self._flushed = time.monotonic()
        self._flusher: threading.Thread | None = None

    def _add(self, user_id: str, **amounts: int) -> None:
        day = today()
        with self._lock:
            for name, amount in amounts.items():
                if amount:
                    self._pending[(day, user_id, name)] += amount
            due = self._sink is not None and time.monotonic() - self._flushed > self._flush_seconds
            if due:
                self._flushed = time.monotonic()  # one flush at a time starts
        if due:
            # Off the caller's thread: a search on the event loop must not wait for the
            # database's write lock. Kept, so close() can wait for it before the store goes.
            flusher = threading.Thread(target=self.flush, name="usage-flush", daemon=True)
            with self._lock:  # started under the lock: close() never sees it unstarted
                self._flusher = flusher
                flusher.start()

    def searched(self, user_id: str, *, hits: int) -> None:
        """One search (or recall) by ``user_id`` that found ``hits`` memories."""
        self._add(user_id, searches=1, searches_with_hits=1 if hits else 0)

    def saves_decided(self, user_id: str, results: Sequence[SaveResult]) -> None:
        """What one :meth:`~memorybank.MemoryBank.save_many` decided: facts stored, refused
        as duplicates, and conflicts surfaced."""
        self._add(
            user_id,
            saves=sum(1 for r in results if r.success),
            duplicates_refused=sum(1 for r in results if r.duplicate),
            conflicts_surfaced=sum(len(r.conflicts) for r in results),
        )

    def prompt_built(self, user_id: str, *, block_tokens: int, prompt_tokens: int) -> None:
        """A system prompt for ``user_id``: its memory block and its whole size, in tokens."""
        self._add(
            user_id,
            prompts=1,
            block_tokens=block_tokens,
            prompt_tokens=prompt_tokens,
            **{bucket_name(block_tokens): 1},
        )

    def pending(self) -> dict[Key, int]:
        """What has been counted and not yet handed to the sink."""
        with self._lock:
            return dict(self._pending)

    def close(self) -> None:
        """Wait for a flush under way, then hand over what is left (before the store closes:
        a flush still writing would find its connection gone)."""
        with self._lock:
            flusher, self._flusher = self._flusher, None
        if flusher is not None:
            flusher.join()
        self.flush()

    def flush(self) -> None:
        """Hand the pending counts to the sink; kept for the next time if it fails."""
        if self._sink is None:
            return
        with self._lock:
            taken, self._pending = self._pending, Counter()
            self._flushed = time.monotonic()
        if not taken:
            return
        try:
            self._sink(taken)
        except Exception:  # a busy or closed database must not fail a search
            log.warning("could not store usage counters; keeping them for later", exc_info=True)
            with self._lock:
                self._pending.update(taken)


__all__ = ["BLOCK_BUCKETS", "Usage", "bucket_name", "today"]
