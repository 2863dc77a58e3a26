"""The events of memory the caller may see: a Server-Sent Events stream that resumes after
``Last-Event-ID``, and the same events as pages of JSON.

Each SSE message is one :class:`~memorybank.model.Event`: ``id:`` its number, ``event:`` its
type (``created``, ``updated``, ``superseded``, ``merged``, ``deleted``, ``cleared``,
``forgotten``), ``data:`` the event as JSON. A client that reconnects with the last id it
saw (browsers' ``EventSource`` does so by itself) gets every event after it, then the live
ones. The caller sees their private memory and the projects they are a member of, checked
again at each poll, so a member removed from a project stops seeing its events.

A user holds at most ``MEMORYBANK_EVENT_STREAMS_PER_USER`` (5) streams open at once in one
server process (each one polls the database): one more is refused with 429 and
``Retry-After`` until another closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Header, Query, Request
from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from memorybank.core.bank import MemoryBank
from memorybank.core.events import MAX_EVENT_ID, MAX_EVENTS, read_events
from memorybank.errors import StoreError, ValidationError
from memorybank.model import Event
from memorybank.rules.limits import OpenLimit
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.error_responses import errors
from memorybank.server.execution import reading
from memorybank.server.principals import Principal
from memorybank.services.accounts import Accounts

router = APIRouter(tags=["events"])

#: How often a stream looks for new events (a read of one index range).
POLL_SECONDS = 0.25
#: The most events one poll sends; more wait for the next.
_BATCH = 200


class EventPage(BaseModel):
    """Events after ``after``, oldest first, and where the next page starts."""

    events: list[Event]
    #: The id to pass as ``after`` for the next page (the newest event's id when none).
    next_after: int


def visible_projects(accounts: Accounts, principal: Principal) -> list[str]:
    """The projects whose events ``principal`` sees: those they are a member of (in local
    mode, where the one user owns every project, also those of their threads)."""
    projects = {project.id for project, _ in accounts.projects(principal.user_id)}
    if principal.local:
        projects |= {t.project_id for t in accounts.threads(principal.user_id) if t.project_id}
    return sorted(projects)


class _HeldStream(EventSourceResponse):
    """An event stream that gives its place back (``close``) when it ends, however it ends:
    the client went away, the server shuts down, or the stream failed."""

    def __init__(self, *args: Any, close: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._close = close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._close()


def _read(
    bank: MemoryBank, accounts: Accounts, principal: Principal, after: int, limit: int
) -> list[Event]:
    projects = visible_projects(accounts, principal)
    return read_events(
        bank.store, principal.user_id, project_ids=projects, after=after, limit=limit
    )


def _resume_point(last_event_id: str | None, after: int | None) -> int | None:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else after ``after``,
    else ``None`` (only events from now on)."""
    if last_event_id is not None and last_event_id.strip():
        try:
            value = int(last_event_id)
            if not 0 <= value <= MAX_EVENT_ID:
                raise ValueError
            return value
        except ValueError:
            raise ValidationError(
                f"Last-Event-ID {last_event_id[:40]!r} is not an event id (a number)",
                field="Last-Event-ID",
            ) from None
    return after


@router.get(
    "/api/events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "Server-Sent Events, each an Event as JSON in its data",
            # Not a schema: the stream also carries keep-alive comments, which no JSON
            # schema describes; each event's data is an Event (GET /api/events/list).
            "content": {"text/event-stream": {}},
        },
        **errors(422, 429),
    },
)
async def stream_events(
    request: Request,
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    after: Annotated[
        int | None, Query(ge=0, le=MAX_EVENT_ID, description="Replay the events after this id")
    ] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """A Server-Sent Events stream of the changes to memory the caller may see (see the
    module documentation). Without ``Last-Event-ID`` or ``after`` it starts with the next
    change. 429 while the caller holds ``MEMORYBANK_EVENT_STREAMS_PER_USER`` streams open."""
    start = _resume_point(last_event_id, after)
    streams: OpenLimit = request.app.state.event_streams
    close = streams.open(principal.user_id)
    try:
        if start is None:
            start = await anyio.to_thread.run_sync(bank.store.last_event_id)
    except BaseException:
        close()
        raise

    async def messages() -> AsyncIterator[ServerSentEvent]:
        last = start
        while not await request.is_disconnected():
            try:
                found = await anyio.to_thread.run_sync(
                    _read, bank, accounts, principal, last, _BATCH
                )
            except StoreError:  # the database is gone (shutdown) or failing: the client
                return  # reconnects with Last-Event-ID and misses nothing
            for event in found:
                last = event.id
                yield ServerSentEvent(
                    data=event.model_dump_json(), event=event.type, id=str(event.id)
                )
            if len(found) < _BATCH:
                await asyncio.sleep(POLL_SECONDS)

    return _HeldStream(messages(), close=close, ping=15, headers={"Cache-Control": "no-store"})


@router.get("/api/events/list", responses=errors(422))
@reading
def list_events(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    after: Annotated[int, Query(ge=0, le=MAX_EVENT_ID)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENTS)] = 100,
) -> EventPage:
    """The same events as the stream, as a page of JSON: for clients that poll."""
    found = _read(bank, accounts, principal, after, limit)
    next_after = found[-1].id if found else max(after, 0)
    return EventPage(events=found, next_after=next_after)


__all__ = ["POLL_SECONDS", "EventPage", "router", "visible_projects"]
