"""Where endpoints run, and what a read costs.

Endpoints are plain ``def`` functions; where each runs is decided once, by what it does.
CPU work — saves, edits, reads of every kind — runs in a small compute pool
(:func:`compute_threads`), in turns per user (:class:`FairShare`: one user's flood waits
behind itself, issue 34), never on the event loop, which every other request shares.

A route says what kind of work it is with one decorator, under its ``@router`` one:

* :func:`computing` — saves and edits (and tool calls, which the dispatcher charges): in the
  compute pool, in the caller's turn;
* :func:`reading` — every read (a page of memories, one memory, its history, the pairs
  asked about, a search, a memory block, an export, the caller's settings): the same, and
  charged to the caller's read limit by its cost (``bank.writes.count_read``): one unit when
  it starts (429 when the limit is spent), then one more for every
  :data:`~memorybank.core.writes.ANSWER_BYTES_PER_READ` of its answer beyond the first, which
  is rendered as JSON in the same thread (issue 44: a page of 1,000 pairs was read on the
  event loop, uncharged, and serialised there: another tenant's search p50 went from 5 to
  118 ms).

MCP tool calls and prompts, which are not endpoints of this app's own, run through
:func:`in_turn`: in the compute pool, in their caller's turn, like :func:`computing`.
``tests/server/test_read_rule.py`` walks the OpenAPI routes and fails for a read that is
not placed, charged and bounded by a page size.

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
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

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
#: How long (seconds) a thread that holds Python's GIL keeps it while another waits for it,
#: in a serving process (:func:`handing_over`). Python's 5 ms let one user's CPU-bound read
#: (a page of pairs or an export, rendered) make another's search wait up to 5 ms at each
#: of the many points where it gives the GIL up and takes it back (the database, the model,
#: the socket): the convoy effect. Measured in one process on the shared 2-core host, a loop
#: of pages of 299 pairs took another user's search p50 2.48× at 5 ms and 1.58× at 1 ms,
#: exports 2.40× and 1.27× (issue 44); four loops of pages of 1,000 pairs (``bench
#: fairness``) 4.40× at 1 ms and 2.69× at 0.2 ms, lists 4.56× and 2.85×.
SWITCH_INTERVAL_S = 0.0002


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


@contextmanager
def handing_over() -> Iterator[None]:
    """Python's GIL handed over every :data:`SWITCH_INTERVAL_S` at most while inside (the
    app's lifespan: a server's life), as it was after."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, SWITCH_INTERVAL_S))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def inline_searches(settings: Settings, bank: MemoryBank) -> bool:
    """Whether API-key lookups run on the event loop rather than in a thread.

    They may when nothing in them waits: the embedder and the store both run in this process
    (a WAL reader never waits for SQLite's write lock); two indexed lookups cost less than
    the thread hop. Every read endpoint runs in the compute pool, in its caller's turn,
    whatever this says (issue 44: a read on the loop, however plain, delayed every request
    of the process while it ran). ``inline_searches=False`` turns it off.
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

    #: API-key lookups run on the event loop.
    inline: bool
    #: The compute pool: saves, edits, reads, memory blocks and consolidation.
    compute: anyio.CapacityLimiter
    #: Each user's share of the compute pool.
    fair: FairShare

    @classmethod
    def for_bank(cls, settings: Settings, bank: MemoryBank) -> Execution:
        """What :func:`inline_searches` and :func:`compute_threads` decide for ``bank``."""
        limiter = anyio.CapacityLimiter(compute_threads(settings, bank))
        fair = FairShare(settings.compute_per_user)
        return cls(inline=inline_searches(settings, bank), compute=limiter, fair=fair)


@dataclass(frozen=True)
class Placement:
    """How a decorated endpoint runs (:func:`placement_of`), for the tests that hold every
    route to the rule of its kind."""

    #: In the compute pool, in the caller's turn (never on the event loop).
    in_turn: bool
    #: Charged to the caller's read limit by its answer (:func:`reading`).
    reads: bool


#: The attribute a decorated endpoint carries its :class:`Placement` in.
_PLACEMENT = "memorybank_placement"


def placement_of(endpoint: Callable[..., Any]) -> Placement | None:
    """How ``endpoint`` (a route's endpoint) runs; ``None`` when it is not decorated here."""
    found = getattr(endpoint, _PLACEMENT, None)
    return found if isinstance(found, Placement) else None


#: The keyword by which a decorated endpoint's wrapper receives the request, to read its app's
#: :class:`Execution` (``app.state.execution``). FastAPI fills a ``Request`` parameter without
#: resolving a dependency, and it adds nothing to the OpenAPI schema.
_REQUEST = "memorybank_request"
_REQUEST_PARAMETER = inspect.Parameter(_REQUEST, inspect.Parameter.KEYWORD_ONLY, annotation=Request)


def _user_of(kwargs: dict[str, Any]) -> str | None:
    """Who a request acts for: the :class:`Principal` among an endpoint's arguments."""
    for value in kwargs.values():
        if isinstance(value, Principal):
            return value.user_id
    return None


def rendered(answer: Any) -> Response:
    """A read's answer as the response FastAPI would have made of it (status 200), made here,
    in the read's own thread: FastAPI serialises what an ``async`` endpoint returns on the
    event loop, where a page of 1,000 memories held every other request.

    >>> rendered({"count": 2}).body
    b'{"count":2}'
    """
    if isinstance(answer, Response):
        return answer
    if isinstance(answer, BaseModel):
        answer = answer.model_dump(mode="json", by_alias=True)
    try:
        return JSONResponse(answer)
    except TypeError:  # a value JSON has no type for (a datetime): as FastAPI encodes it
        return JSONResponse(jsonable_encoder(answer))


def _charged_answer(call: Callable[[], Any], bank: MemoryBank, user: str | None) -> Response:
    """``call()``'s answer rendered (:func:`rendered`) and its size charged to ``user``'s read
    limit, never refused: the read is done, and the user's next reads wait for it."""
    response = rendered(call())
    if user is not None:
        bank.writes.charge_answer(user, len(response.body))
    return response


def _placed(endpoint: Callable[P, R], *, reads: bool) -> Callable[P, Awaitable[R]]:
    """``endpoint`` as a coroutine FastAPI awaits, run in the compute pool in its caller's
    turn; a read (``reads``) charged first to the caller's read limit, its answer rendered
    and charged by its size there too. FastAPI reads the parameters of ``endpoint`` (plus the
    request) from its signature."""

    async def placed(*args: Any, **kwargs: Any) -> R:
        state = kwargs.pop(_REQUEST).app.state
        user = _user_of(kwargs)
        bank: MemoryBank = state.bank
        call: Callable[[], Any] = functools.partial(endpoint, *args, **kwargs)
        if reads:
            if user is not None:
                bank.writes.count_read(user)
            call = functools.partial(_charged_answer, call, bank, user)
        result: R = await _in_compute_pool(state.execution, call, user)
        return result

    signature = inspect.signature(endpoint)
    if any(p.annotation in (Request, "Request") for p in signature.parameters.values()):
        # FastAPI fills one Request parameter per endpoint: the wrapper's would take its place.
        raise TypeError(f"{endpoint.__name__} takes the Request: it cannot be placed as well")
    functools.update_wrapper(placed, endpoint)
    parameters = [*signature.parameters.values(), _REQUEST_PARAMETER]
    placed.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    setattr(placed, _PLACEMENT, Placement(in_turn=True, reads=reads))
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


def computing(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """A save or an edit: ``endpoint`` run in a thread of the compute pool, in its caller's
    turn (a write is charged by what it stores, :func:`memorybank.core.writes.writing`)."""
    return _placed(endpoint, reads=False)


def reading(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """A read, of whatever kind: ``endpoint`` run in the compute pool in its caller's turn,
    charged one unit of the caller's read limit when it starts and one more per
    :data:`~memorybank.core.writes.ANSWER_BYTES_PER_READ` of its answer beyond the first,
    which is rendered as JSON in that thread (status 200). Not on the event loop: there one
    user's stream of reads delayed every other request of the process (issues 34 and 44)."""
    return _placed(endpoint, reads=True)


__all__ = [
    "LOCAL_COMPUTE_THREADS",
    "REMOTE_COMPUTE_THREADS",
    "SWITCH_INTERVAL_S",
    "Execution",
    "FairShare",
    "Placement",
    "compute_threads",
    "computing",
    "handing_over",
    "in_turn",
    "inline_searches",
    "placement_of",
    "reading",
    "rendered",
]
