"""Per-user limits: a sliding one-minute window of the writes each user starts
(:class:`RateLimiter`), and how many of something (event streams) a user holds open at once
(:class:`OpenLimit`).

One :class:`RateLimiter` belongs to a :class:`~memorybank.MemoryBank`
(``write_rate_per_minute``, :meth:`~memorybank.MemoryBank.count_write`), so every adapter that
serves the bank (the REST API, the tools API, MCP) spends the same budget: limits belong to
the operation, not to one adapter. In memory, per process: a restart forgets the counts,
and ``memorybank serve --workers N`` has one limiter in each of its N processes.

>>> clock = iter([0.0, 1.0, 2.0, 61.0]).__next__
>>> limiter = RateLimiter(2, clock=clock)
>>> limiter.hit("alice"); limiter.hit("alice")
>>> limiter.hit("alice")
Traceback (most recent call last):
memorybank.errors.RateLimited: too many memory writes: at most 2 a minute; try again in 58 s
>>> limiter.hit("alice")  # a minute after the first write
"""

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


class RateLimiter:
    """At most ``per_minute`` writes per user in any sliding 60-second window; thread-safe."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._sweep_at = _SWEEP_AT
        self.per_minute = per_minute

    @property
    def per_minute(self) -> int:
        """Writes allowed per user per minute (changing it keeps the counts so far)."""
        return self._per_minute

    @per_minute.setter
    def per_minute(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValidationError(
                f"the write rate must be a whole number of at least 1 a minute, not {value!r}",
                field="write_rate_per_minute",
            )
        self._per_minute = value

    def hit(self, user_id: str) -> None:
        """Count one write of ``user_id``, or raise :class:`~memorybank.errors.RateLimited`
        (counting nothing) when the last minute already holds ``per_minute`` of them."""
        now = self._clock()
        with self._lock:
            events = self._events.setdefault(user_id, deque())
            while events and events[0] <= now - WINDOW_S:
                events.popleft()
            if len(events) >= self._per_minute:
                retry = max(1, math.ceil(events[0] + WINDOW_S - now))
                raise RateLimited(
                    f"too many memory writes: at most {self._per_minute} a minute; try again "
                    f"in {retry} s",
                    retry_after=retry,
                )
            events.append(now)
            if len(self._events) > self._sweep_at:
                self._forget_idle(now)

    def _forget_idle(self, now: float) -> None:
        """Drop the users with no write in the window, so the map does not grow forever."""
        idle = [u for u, e in self._events.items() if not e or e[-1] <= now - WINDOW_S]
        for user_id in idle:
            del self._events[user_id]
        self._sweep_at = max(_SWEEP_AT, 2 * len(self._events))


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


__all__ = ["WINDOW_S", "OpenLimit", "RateLimiter"]
