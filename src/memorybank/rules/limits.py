"""Per-user limits: a sliding one-minute window of the work each user's writes cost
(:class:`RateLimiter`), and how many of something (event streams) a user holds open at once
(:class:`OpenLimit`).

One :class:`RateLimiter` belongs to a :class:`~memorybank.MemoryBank`
(``write_rate_per_minute``, ``bank.writes.count``), so every adapter that
serves the bank (the REST API, the tools API, MCP) spends the same budget: limits belong to
the operation, not to one adapter. In memory, per process: a restart forgets the counts,
and ``memorybank serve --workers N`` has one limiter in each of its N processes.

A write is charged what it stores (issue 27): one fact costs 1, a batch of N items or chunks
costs N, all at once before anything is stored, so a request the window cannot hold is
refused whole and stores nothing. Counting requests let one request of 300 items through a
limit of 10 a minute.

>>> clock = iter([0.0, 1.0, 2.0, 3.0, 61.0]).__next__
>>> limiter = RateLimiter(3, clock=clock)
>>> limiter.hit("alice"); limiter.hit("alice", 2)
>>> limiter.hit("alice")
Traceback (most recent call last):
memorybank.errors.RateLimited: too many memory writes: at most 3 items a minute (MEMORYBANK_AI_WRITE_RATE_PER_MINUTE), all used; try again in 58 s
>>> limiter.hit("alice", 4)
Traceback (most recent call last):
memorybank.errors.RateLimited: too many memory writes: this request stores 4 items and the limit is 3 a minute (MEMORYBANK_AI_WRITE_RATE_PER_MINUTE): send at most 3 at a time or raise the limit; try again in 60 s
>>> limiter.hit("alice")  # a minute after the first write
"""  # noqa: E501

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from memorybank.errors import RateLimited, ValidationError

#: The window the limit counts writes in, in seconds.
WINDOW_S = 60.0
#: Users tracked before idle ones are swept out (the threshold doubles while they are active).
_SWEEP_AT = 4096
#: The setting a refusal names, unless the bank is told another.
SETTING = "MEMORYBANK_AI_WRITE_RATE_PER_MINUTE"
#: The setting of the per-user read limit (searches, memory blocks, consolidation previews).
READ_SETTING = "MEMORYBANK_READ_RATE_PER_MINUTE"
#: The most records one page of a read answers (memories, pairs, hits, events): the page
#: size that bounds a read's work, whatever the adapter (issue 44: ``GET /api/memories``
#: answered 10,000 at once). The clients page through longer listings.
PAGE_MAX = 1000


class _Window:
    """One user's charges in the window: (time, cost), oldest first, and their sum."""

    __slots__ = ("charges", "used")

    def __init__(self) -> None:
        self.charges: deque[tuple[float, int]] = deque()
        self.used = 0

    def slide(self, now: float) -> None:
        while self.charges and self.charges[0][0] <= now - WINDOW_S:
            self.used -= self.charges.popleft()[1]

    def wait_for(self, room: int, now: float) -> int:
        """Seconds until ``room`` units are free again (as the oldest charges leave)."""
        freed = 0
        for at, cost in self.charges:
            freed += cost
            if freed >= room:
                return max(1, math.ceil(at + WINDOW_S - now))
        return max(1, math.ceil(WINDOW_S))


class RateLimiter:
    """At most ``per_minute`` units of writes per user in any sliding 60-second window;
    thread-safe. ``setting`` is the name a refusal tells people to change."""

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        *,
        setting: str = SETTING,
        what: str = "memory writes",
        unit: str = "items",
        verb: str = "stores",
    ) -> None:
        self._clock = clock
        # How refusals name the work: "too many memory writes … this request stores 4 items".
        self.what, self.unit, self.verb = what, unit, verb
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()
        self._sweep_at = _SWEEP_AT
        self.per_minute = per_minute
        self.setting = setting

    @property
    def per_minute(self) -> int:
        """Units allowed per user per minute (changing it keeps the counts so far)."""
        return self._per_minute

    @per_minute.setter
    def per_minute(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(
                f"a rate limit must be a whole number of at least 1 a minute, not {value!r}",
                field="per_minute",
            )
        self._per_minute = value

    def hit(self, user_id: str, cost: int = 1, *, stores: int | None = None) -> None:
        """Charge ``user_id`` ``cost`` units (one per item a request stores), or raise
        :class:`~memorybank.errors.RateLimited`, charging nothing, when the last minute cannot
        hold them: ``retry_after`` is when it can (a minute for a request larger than the
        whole limit, which never fits and must be split). ``stores`` is how many items the
        request stores in all, for the message, when part of them was charged before."""
        if isinstance(cost, bool) or not isinstance(cost, int) or cost < 1:
            raise ValueError(f"a write costs at least 1, not {cost!r}")
        now = self._clock()
        with self._lock:
            window = self._windows.setdefault(user_id, _Window())
            window.slide(now)
            if window.used + cost > self._per_minute:
                raise self._refusal(window, cost, now, cost if stores is None else stores)
            window.charges.append((now, cost))
            window.used += cost
            if len(self._windows) > self._sweep_at:
                self._forget_idle(now)

    def charge(self, user_id: str, cost: int) -> None:
        """Charge ``user_id`` ``cost`` units for work already done, never refusing: what a call
        turned out to cost beyond what :meth:`hit` charged at its start (consolidation's facts
        examined), so the user's next calls wait for it."""
        if cost < 1:
            return
        now = self._clock()
        with self._lock:
            window = self._windows.setdefault(user_id, _Window())
            window.slide(now)
            window.charges.append((now, cost))
            window.used += cost

    def _refusal(self, window: _Window, cost: int, now: float, stores: int) -> RateLimited:
        limit = self._per_minute
        if stores > limit:  # never fits, however long one waits: it must be split
            retry = math.ceil(WINDOW_S)
            return RateLimited(
                f"too many {self.what}: this request {self.verb} {stores} {self.unit} and the "
                f"limit is {limit} a minute ({self.setting}): send at most {limit} at a time "
                f"or raise the limit; try again in {retry} s",
                retry_after=retry,
            )
        retry = window.wait_for(window.used + cost - limit, now)
        left = limit - window.used
        state = "all used" if left <= 0 else f"{left} left and this request {self.verb} {stores}"
        return RateLimited(
            f"too many {self.what}: at most {limit} {self.unit} a minute ({self.setting}), "
            f"{state}; try again in {retry} s",
            retry_after=retry,
        )

    def _forget_idle(self, now: float) -> None:
        """Drop the users with no write in the window, so the map does not grow forever."""
        idle = [
            user
            for user, window in self._windows.items()
            if not window.charges or window.charges[-1][0] <= now - WINDOW_S
        ]
        for user_id in idle:
            del self._windows[user_id]
        self._sweep_at = max(_SWEEP_AT, 2 * len(self._windows))


class OpenLimit:
    """At most ``per_user`` things (``what``: "event streams") open at once per user, set by
    ``setting``; thread-safe. In memory, per process, like :class:`RateLimiter`.

    >>> streams = OpenLimit(1, "event streams", "MEMORYBANK_EVENT_STREAMS_PER_USER")
    >>> close = streams.open("alice")
    >>> streams.open("alice")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memorybank.errors.RateLimited: at most 1 event streams open at once per user ...
    >>> close(); close()  # closing twice closes once
    >>> streams.open("alice")()
    """

    #: What a refusal suggests waiting before trying again (nothing expires: a stream stays
    #: open until its client closes it).
    RETRY_AFTER_S = 5

    def __init__(self, per_user: int, what: str, setting: str) -> None:
        self.per_user = per_user
        self.what = what
        self.setting = setting
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self, user_id: str) -> Callable[[], None]:
        """Count one more open for ``user_id`` and return what closes it (once, however often
        it is called), or raise :class:`~memorybank.errors.RateLimited` counting nothing."""
        with self._lock:
            held = self._open.get(user_id, 0)
            if held >= self.per_user:
                raise RateLimited(
                    f"at most {self.per_user} {self.what} open at once per user "
                    f"({self.setting}): close one, then try again",
                    retry_after=self.RETRY_AFTER_S,
                )
            self._open[user_id] = held + 1
        closed = threading.Event()

        def close() -> None:
            with self._lock:
                if closed.is_set():
                    return
                closed.set()
                left = self._open.get(user_id, 1) - 1
                if left > 0:
                    self._open[user_id] = left
                else:  # users with nothing open are not kept
                    self._open.pop(user_id, None)

        return close

    def held(self, user_id: str) -> int:
        """How many ``user_id`` holds open now."""
        with self._lock:
            return self._open.get(user_id, 0)


__all__ = ["PAGE_MAX", "READ_SETTING", "SETTING", "WINDOW_S", "OpenLimit", "RateLimiter"]
