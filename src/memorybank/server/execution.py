"""Where endpoints run: on the event loop, in the compute pool, or in FastAPI's general pool.

Endpoints are plain ``def`` functions; where each runs is decided once, by what it waits on.
CPU work — saves, edits, searches, memory blocks, consolidation — runs in a small compute pool
(:func:`compute_threads`), in turns per user (:class:`FairShare`: one user's flood waits
behind itself, issue 34); with the bundled model and SQLite nothing in a plain read waits, so
plain reads and API-key lookups run on the event loop (:func:`inline_searches`). Otherwise,
and for every endpoint that may call an LLM, they run in threads: the store is thread-safe.

A route says what kind of work it is with one decorator, under its ``@router`` one:

* :func:`computing` — saves and edits: in the compute pool, in the caller's turn;
* :func:`searching` — read-only CPU work: the same, charged as one read of the caller's read
  limit (``bank.writes.count_read``);
* :func:`reading` — plain reads: on the loop when reads run inline, else in FastAPI's
  general pool, like an undecorated ``def`` endpoint;
* :func:`listing` — a plain read that searches when given its search parameter: then as
  :func:`searching`.

MCP tool calls and prompts, which are not endpoints of this app's own, run through
:func:`in_turn`: in the compute pool, in their caller's turn, like :func:`computing`.

Undecorated ``def`` endpoints run in FastAPI's general pool (40 threads), which stays for
requests that wait on an LLM, a provider or the database. Each app decides once, in
:func:`~memorybank.server.app.create_app`, from its bank and settings
(:class:`Execution`, on ``app.state.execution``); the decorated endpoints read it per request.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

import anyio
import anyio.to_thread
from fastapi import Request
from starlette.concurrency import run_in_threadpool

from memorybank.core.bank import MemoryBank
from memorybank.server.principals import Principal
from memorybank.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")

#: Saves and edits one process computes at once with the bundled embedder and SQLite. They are
#: CPU work under Python's GIL (the model's forward pass aside), and with the 40 threads of
#: the general pool the requests in flight spent their CPU fighting over it: at 16 clients,
#: p95 search latency was 150 ms with the general pool and 110-120 ms with this one.
LOCAL_COMPUTE_THREADS = 3
#: With a remote embedder or a database server a request mostly waits on the network: keep
#: the pool's usual size.
REMOTE_COMPUTE_THREADS = 40


def _all_in_process(bank: MemoryBank) -> bool:
    """Whether the embedder and the store both run in this process (nothing waits on I/O)."""
    # A LocalEmbedder exists only once its module is imported: looking it up there, rather
    # than importing it, keeps onnxruntime out of servers whose embedder is remote.
    local = sys.modules.get("memorybank.providers.embedders.local")
    in_process = local is not None and isinstance(bank.embedder, local.LocalEmbedder)
    return in_process and not bank.store.remote_reads


def compute_threads(settings: Settings, bank: MemoryBank) -> int:
    """How many saves and edits (and searches, unless they run inline) a server process runs
    at once: the ``compute_threads`` setting, else few when they are pure CPU work."""
    if settings.compute_threads is not None:
        return settings.compute_threads
    return LOCAL_COMPUTE_THREADS if _all_in_process(bank) else REMOTE_COMPUTE_THREADS


def inline_searches(settings: Settings, bank: MemoryBank) -> bool:
    """Whether searches and prompt blocks run on the event loop rather than in a thread.

    They may when nothing in them waits: the embedder and the store both run in this process
    (a WAL reader never waits for SQLite's write lock). A search is then a few milliseconds of
    CPU, and handing it to a thread and back cost half a millisecond more and let the requests
    in flight contend for the GIL: at 16 clients on two workers, p95 search latency fell from
    110 to 55-75 ms (docs/reliability.md, Load). Saves stay in threads: they can wait for the
    write lock. ``inline_searches=False`` turns it off.
    """
    return settings.inline_searches is not False and _all_in_process(bank)


class FairShare:
    """At most ``per_user`` calls of one user in the compute pool at once; the user's other
    calls wait in a line of their own, on the event loop, before they ask for a thread. So
    the pool's queue holds at most ``per_user`` calls of each user, taken in turn, and a user
    who floods it waits behind themselves while everyone else's calls find a thread as soon
    as one is free (issue 34: two loops of one user's searches took another's p50 from 8 to
    184 ms, 19 consolidation previews another's save p50 from 19 to 1,901 ms).

    Runs on one event loop (the server's), so it needs no lock.
    """

    def __init__(self, per_user: int) -> None:
        self.per_user = per_user
        self._running: dict[str, int] = {}
        self._waiting: dict[str, deque[anyio.Event]] = {}

    async def run(self, user_id: str | None, call: Callable[[], Awaitable[R]]) -> R:
        """``call()`` in one of ``user_id``'s turns (at once when there is no user)."""
        if user_id is None:
            return await call()
        await self._take(user_id)
        try:
            return await call()
        finally:
            self._give(user_id)

    async def _take(self, user_id: str) -> None:
        if self._running.get(user_id, 0) < self.per_user:
            self._running[user_id] = self._running.get(user_id, 0) + 1
            return
        turn = anyio.Event()
        line = self._waiting.setdefault(user_id, deque())
        line.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():  # handed a turn while being cancelled: pass it on
                self._give(user_id)
            else:
                line.remove(turn)
            raise

    def _give(self, user_id: str) -> None:
        line = self._waiting.get(user_id)
        if line:
            line.popleft().set()  # the turn goes to the user's next call, as it is
            if not line:
                del self._waiting[user_id]
            return
        left = self._running.get(user_id, 1) - 1
        if left > 0:
            self._running[user_id] = left
        else:
            self._running.pop(user_id, None)


@dataclass(frozen=True)
class Execution:
    """Where one app runs its CPU-bound endpoints."""

    #: Plain reads (and API-key lookups) run on the event loop.
    inline: bool
    #: The compute pool: saves, edits, searches, memory blocks and consolidation.
    compute: anyio.CapacityLimiter
    #: Each user's share of the compute pool.
    fair: FairShare

    @classmethod
    def for_bank(cls, settings: Settings, bank: MemoryBank) -> Execution:
        """What :func:`inline_searches` and :func:`compute_threads` decide for ``bank``."""
        limiter = anyio.CapacityLimiter(compute_threads(settings, bank))
        fair = FairShare(settings.compute_per_user)
        return cls(inline=inline_searches(settings, bank), compute=limiter, fair=fair)


#: The keyword by which a decorated endpoint's wrapper receives the request, to read its app's
#: :class:`Execution` (``app.state.execution``). FastAPI fills a ``Request`` parameter without
#: resolving a dependency, and it adds nothing to the OpenAPI schema.
_REQUEST = "memorybank_request"
_REQUEST_PARAMETER = inspect.Parameter(_REQUEST, inspect.Parameter.KEYWORD_ONLY, annotation=Request)

Runner = Callable[[Execution, Callable[[], Any], "str | None"], Awaitable[Any]]


def _user_of(kwargs: dict[str, Any]) -> str | None:
    """Who a request acts for: the :class:`Principal` among an endpoint's arguments."""
    for value in kwargs.values():
        if isinstance(value, Principal):
            return value.user_id
    return None


def _placed(
    endpoint: Callable[P, R], runner: Runner, *, read: bool = False, search: str | None = None
) -> Callable[P, Awaitable[R]]:
    """``endpoint`` as a coroutine FastAPI awaits, run where ``runner`` puts it (a ``read``
    charged first to the caller's read limit), or, when its parameter ``search`` is given,
    as a search (:func:`searching`); FastAPI reads the parameters of ``endpoint`` (plus the
    request) from its signature."""

    async def placed(*args: Any, **kwargs: Any) -> R:
        state = kwargs.pop(_REQUEST).app.state
        execution: Execution = state.execution
        user = _user_of(kwargs)
        searches = search is not None and bool(kwargs.get(search))
        if (read or searches) and user is not None:
            state.bank.writes.count_read(user)
        call = functools.partial(endpoint, *args, **kwargs)
        result: R = await (_in_compute_pool if searches else runner)(execution, call, user)
        return result

    signature = inspect.signature(endpoint)
    if any(p.annotation in (Request, "Request") for p in signature.parameters.values()):
        # FastAPI fills one Request parameter per endpoint: the wrapper's would take its place.
        raise TypeError(f"{endpoint.__name__} takes the Request: it cannot be placed as well")
    functools.update_wrapper(placed, endpoint)
    parameters = [*signature.parameters.values(), _REQUEST_PARAMETER]
    placed.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return cast(Callable[P, Awaitable[R]], placed)


async def _in_compute_pool(execution: Execution, call: Callable[[], R], user: str | None) -> R:
    async def in_thread() -> R:
        return await anyio.to_thread.run_sync(call, limiter=execution.compute)

    return await execution.fair.run(user, in_thread)


async def in_turn(execution: Execution, user_id: str | None, call: Callable[[], R]) -> R:
    """``call()`` in the compute pool, in ``user_id``'s turn: what the decorators below do
    for an endpoint, for a call from elsewhere in the app (an MCP tool call or prompt,
    :data:`memorybank.mcp.Runner`)."""
    return await _in_compute_pool(execution, call, user_id)


async def _reading(execution: Execution, call: Callable[[], R], user: str | None) -> R:
    if execution.inline:
        return call()
    return await run_in_threadpool(call)


def computing(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """``endpoint`` run in a thread of the compute pool, not FastAPI's general one (which
    stays for requests that wait on an LLM or a provider)."""
    return _placed(endpoint, _in_compute_pool)


def searching(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """A read-only, CPU-bound ``endpoint`` (a search, a memory block): in the compute pool,
    in the caller's share of it, like :func:`computing`. Not on the event loop: there one
    user's stream of long searches delayed every other request of the process."""
    return _placed(endpoint, _in_compute_pool, read=True)


def reading(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """A plain read (a page, a memory, its history): on the event loop when nothing in it
    waits (an in-process store), else in FastAPI's general pool, as any ``def`` endpoint
    runs."""
    return _placed(endpoint, _reading)


def listing(search: str) -> Callable[[Callable[P, R]], Callable[P, Awaitable[R]]]:
    """A plain read, like :func:`reading`, that searches when its parameter ``search`` is
    given (a page of memories with ``q``): then it is placed and charged as :func:`searching`
    places and charges a search (before, such a search ran on the event loop, uncharged)."""

    def decorate(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        return _placed(endpoint, _reading, search=search)

    return decorate


__all__ = [
    "LOCAL_COMPUTE_THREADS",
    "REMOTE_COMPUTE_THREADS",
    "Execution",
    "FairShare",
    "compute_threads",
    "computing",
    "in_turn",
    "inline_searches",
    "listing",
    "reading",
    "searching",
]
