"""Writes started through adapters (issue 27): what they cost against the per-user write
limit (the records they store), and where the heavy ones run (one at a time).

Counting requests let one request of 300 items, an import of a whole file, or a conversation
of 310 chunks through a limit of 10 writes a minute. Now an adapter opens a write for the
user it acts for (:func:`writing`): the request costs one unit when it starts, which covers
its first record, and each record the bank stores inside costs one more, charged for a whole
batch before anything is embedded (:func:`storing`, around the bank's embedding), so a batch
the limit cannot hold is refused whole. The host application's own calls open no write and
are never charged.

The write in progress is a context variable, like the channel of
:func:`~memorybank.model.acting_through`: it follows the code that runs the write, in the
thread that runs it, whichever adapter started it.

>>> from memorybank.rules.limits import RateLimiter
>>> limiter = RateLimiter(3)
>>> limiter.hit("ann")  # the request, counted by the adapter
>>> with charging(limiter, "ann", paid=1):
...     charge_records(limiter, 2)  # its first record was paid for: one more unit
>>> with charging(limiter, "ann", paid=0):
...     charge_records(limiter, 2)  # doctest: +ELLIPSIS
Traceback (most recent call last):
memorybank.errors.RateLimited: too many memory writes: at most 3 items a minute (MEMORYBANK_AI_WRITE_RATE_PER_MINUTE), 1 left and this request stores 2; try again in ... s
>>> charge_records(limiter, 500)  # no write open: the host application, never charged
"""  # noqa: E501

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from memorybank.providers.embedders.base import Embedder, ProgressFn, Vectors
from memorybank.rules.limits import RateLimiter


@dataclass
class _Write:
    """A write in progress: whose limit it spends, and units charged but not yet used."""

    limiter: RateLimiter
    user_id: str
    paid: int


_current: ContextVar[_Write | None] = ContextVar("memorybank_write", default=None)


@contextmanager
def charging(limiter: RateLimiter | None, user_id: str, paid: int) -> Iterator[None]:
    """Charge ``user_id`` on ``limiter`` for the records stored inside, beyond the ``paid``
    units already counted for this write (nothing at all without a limiter)."""
    if limiter is None:
        yield
        return
    token = _current.set(_Write(limiter, user_id, paid))
    try:
        yield
    finally:
        _current.reset(token)


class Budgeted(Protocol):
    """What has a :class:`WriteBudget`: a bank (``bank.writes``)."""

    @property
    def writes(self) -> WriteBudget: ...


def writing(
    bank: Budgeted, user_id: str, *, paid: int | None = None
) -> AbstractContextManager[None]:
    """A write ``user_id`` starts through an adapter on ``bank``, charged by what it stores:
    one unit for the request (now, unless ``paid`` says how many units
    :meth:`WriteBudget.count` already took for it), which covers its first record, and one
    more for each further record the bank stores inside
    (:meth:`~memorybank.MemoryBank.save_many`, each chunk of a conversation turn;
    :func:`~memorybank.core.records.save_records`). :class:`~memorybank.errors.RateLimited`
    when the request, or later a batch, does not fit; a refused batch stores nothing."""
    budget = bank.writes
    if paid is None:
        budget.count(user_id)
    return charging(budget.limiter, user_id, 1 if paid is None else paid)


def charge_records(limiter: RateLimiter | None, records: int) -> None:
    """Charge the write in progress for ``records`` records about to be stored, if it spends
    ``limiter`` (a bank charges only its own writes);
    :class:`~memorybank.errors.RateLimited`, charging nothing, when they do not fit."""
    write = _current.get()
    if write is None or limiter is None or write.limiter is not limiter or records < 1:
        return
    covered = min(write.paid, records)
    if records > covered:
        limiter.hit(write.user_id, records - covered, stores=records)
    write.paid -= covered


#: Bytes of a read's answer per unit of its caller's read limit, beyond the unit it costs when
#: it starts (issue 44): a search or one memory costs 1, a page of 1,000 memories (about
#: 600 KiB) 10, the export of 10,000 about 90. The answer's size is what a read's work grows
#: with (rows read, decoded and serialised), whatever the adapter: a REST route, a tool
#: call over REST or MCP. A limit of 600 a minute allows about 36 MiB of answers a minute.
ANSWER_BYTES_PER_READ = 64 * 1024


def answer_cost(size: int) -> int:
    """Units of the read limit an answer of ``size`` bytes costs beyond the read's first:
    one per :data:`ANSWER_BYTES_PER_READ` started after the first.

    >>> unit = ANSWER_BYTES_PER_READ
    >>> answer_cost(200), answer_cost(unit), answer_cost(unit + 1), answer_cost(2 * unit + 1)
    (0, 0, 1, 2)
    """
    return max(0, size - 1) // ANSWER_BYTES_PER_READ


#: Records from which a write is heavy: a batch, an import, a long conversation. A fact, or a
#: conversation of a few messages, is lighter and never waits for another write.
HEAVY_RECORDS = 32


class HeavyWrites:
    """Heavy writes run one at a time per bank (``at_once``), wherever they come from.

    Embedding is the costly part of a write (a few milliseconds a text on the bundled model,
    which spreads one text over every core): two parallel conversations of 310 chunks took
    another user's search p50 from 27 to 131 ms. Queued behind one another, heavy writes
    leave the rest of the machine to searches and small writes, which never wait here.
    ``peak`` is the most that ever ran at once, and ``waited`` how many had to wait.

    >>> heavy = HeavyWrites()
    >>> with heavy.running(500):
    ...     with heavy.running(1):  # a small write passes even now
    ...         pass
    >>> heavy.peak, heavy.waited
    (1, 0)
    """

    def __init__(self, at_once: int = 1) -> None:
        self._slots = threading.BoundedSemaphore(at_once)
        self._lock = threading.Lock()
        self._running = 0
        self.peak = 0
        self.waited = 0

    @contextmanager
    def running(self, records: int) -> Iterator[None]:
        """Run the work inside as a write of ``records`` records: heavy ones wait for a
        slot."""
        if records < HEAVY_RECORDS:
            yield
            return
        if not self._slots.acquire(blocking=False):
            with self._lock:
                self.waited += 1
            self._slots.acquire()
        try:
            with self._lock:
                self._running += 1
                self.peak = max(self.peak, self._running)
            yield
        finally:
            with self._lock:
                self._running -= 1
            self._slots.release()


class WriteBudget:
    """One bank's limits of the work adapters start, in one place (``bank.writes``): the
    per-user limit of writes (``per_minute`` units a minute, ``None`` for none;
    :meth:`count`, :func:`writing`), the queue heavy writes wait in (``heavy``,
    :class:`HeavyWrites`), and the per-user limit of reads the server sets beside it
    (``reads``, :meth:`count_read`: searches, memory blocks). The bank's own methods are
    never counted, so the host application itself is not limited.

    >>> budget = WriteBudget(per_minute=2)
    >>> budget.count("ann", 2)
    >>> budget.count("ann")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memorybank.errors.RateLimited: too many memory writes: at most 2 items a minute ...
    >>> WriteBudget().count("ann", 500)  # no limit
    >>> WriteBudget().count_read("ann", 500)  # no read limit unless one is set
    """

    def __init__(self, per_minute: int | None = None) -> None:
        self.limiter: RateLimiter | None = None
        self.heavy = HeavyWrites()  # big batches embed one at a time (issue 27)
        #: The read limit (``None``: none), which the server sets from its settings.
        self.reads: RateLimiter | None = None
        self.set_limit(per_minute)

    def set_limit(self, per_minute: int | None) -> None:
        """Allow each user ``per_minute`` units in any minute from now on (``None``: no
        limit); the writes already counted stay counted."""
        if per_minute is None:
            self.limiter = None
        elif self.limiter is None:
            self.limiter = RateLimiter(per_minute)
        else:
            self.limiter.per_minute = per_minute

    def count(self, user_id: str, cost: int = 1) -> None:
        """Charge ``cost`` units of ``user_id``'s limit for a write started through an
        adapter (every adapter spends the same budget).
        :class:`~memorybank.errors.RateLimited`, with ``retry_after``, when the last minute
        cannot hold them."""
        if self.limiter is not None:
            self.limiter.hit(user_id, cost)

    def count_read(self, user_id: str, cost: int = 1) -> None:
        """Charge ``cost`` units of ``user_id``'s read limit (when ``reads`` is set) for a
        read started through an adapter, as :meth:`count` does for writes."""
        if self.reads is not None:
            self.reads.hit(user_id, cost)

    def charge_read(self, user_id: str, cost: int) -> None:
        """Charge ``cost`` more units of ``user_id``'s read limit for a read already done
        (what its answer turned out to cost), never refusing: the user's next reads wait for
        it (:meth:`~memorybank.rules.limits.RateLimiter.charge`)."""
        if self.reads is not None:
            self.reads.charge(user_id, cost)

    def charge_answer(self, user_id: str, size: int) -> None:
        """Charge a read done for ``user_id`` by its answer of ``size`` bytes
        (:func:`answer_cost`), beyond the unit :meth:`count_read` took when it started."""
        self.charge_read(user_id, answer_cost(size))

    @contextmanager
    def storing(self, records: int) -> Iterator[None]:
        """Around the embedding of ``records`` records the bank is about to store: charge
        the write in progress for them first (:func:`charge_records`), then run as a heavy
        write when they are many (:class:`HeavyWrites`)."""
        charge_records(self.limiter, records)
        with self.heavy.running(records):
            yield


#: How many texts a write embeds at a time when it reports progress.
EMBED_BATCH = 256


def embedded(
    budget: WriteBudget,
    embedder: Embedder,
    texts: Sequence[str],
    progress: ProgressFn | None = None,
) -> Vectors:
    """The vectors of ``texts`` a bank is about to store, embedded as :meth:`WriteBudget.storing`
    charges and queues them; a long batch reports ``progress`` every :data:`EMBED_BATCH` texts."""
    with budget.storing(len(texts)):
        if progress is None or len(texts) <= EMBED_BATCH:
            return embedder.embed(texts)
        parts = []
        for start in range(0, len(texts), EMBED_BATCH):
            parts.append(embedder.embed(texts[start : start + EMBED_BATCH]))
            progress(min(start + EMBED_BATCH, len(texts)), len(texts))
        return np.concatenate(parts)


__all__ = [
    "ANSWER_BYTES_PER_READ",
    "EMBED_BATCH",
    "HEAVY_RECORDS",
    "Budgeted",
    "HeavyWrites",
    "WriteBudget",
    "answer_cost",
    "charge_records",
    "charging",
    "embedded",
    "writing",
]
