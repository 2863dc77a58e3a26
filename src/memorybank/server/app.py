"""The HTTP API of memorybank: thin FastAPI routes over :class:`~memorybank.MemoryBank` and
:class:`~memorybank.accounts.Accounts` (endpoints with examples: ``docs/api.md``; OpenAPI at
``/docs``).

* Auth: with no users configured the server is in local mode (one user, ``local``); otherwise
  every ``/api`` and ``/mcp`` request needs ``Authorization: Bearer <key>``
  (:func:`~memorybank.server.permissions.resolve_caller`).
* Permissions: seed 002 §6.5, decided in :mod:`memorybank.server.permissions` only.
* Errors: always ``{"error": "<what to fix>"}``; :func:`status_code` is the one mapping from
  the :class:`~memorybank.MemoryBankError` tree to HTTP statuses.
* Limits: request bodies over ``max_request_bytes`` get 413; AI writes over
  ``ai_write_rate_per_minute`` per user get 429 with ``Retry-After``.

Endpoints are plain ``def`` functions; where each runs is decided once, by what it waits on.
With the bundled model and SQLite nothing in a search waits, so searches, prompt blocks and
plain reads run on the event loop, and saves and edits (which may wait for SQLite's writer) in
a small compute pool (:func:`inline_searches`, :func:`compute_threads`). Otherwise, and for
every endpoint that may call an LLM, they run in threads: the store is thread-safe.

    >>> import uvicorn, memorybank  # doctest: +SKIP
    >>> app = create_app(bank, Accounts.open(bank, settings), settings)  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import functools
import os
import re
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, Literal, ParamSpec, TypeVar

import anyio
import anyio.to_thread
from fastapi import Body, Depends, FastAPI, Query, Request, Response
from fastapi.exceptions import HTTPException, RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

import memorybank
from memorybank import __version__, tools
from memorybank.accounts import Accounts, ProviderKind, Role, Thread
from memorybank.bank import MemoryBank
from memorybank.embedders.local import LocalEmbedder
from memorybank.errors import (
    ConfigurationError,
    MemoryBankError,
    NotFound,
    PermissionDenied,
    ProviderError,
    StoreError,
    ValidationError,
)
from memorybank.forget import forget_cancel, forget_confirm, forget_preview, render_preview
from memorybank.llm.client import ChatClient
from memorybank.model import Memory, Source
from memorybank.orgs import org_users
from memorybank.server.limits import (
    BodyLimit,
    ConfirmTokens,
    RateLimited,
    RateLimiter,
    TooLarge,
)
from memorybank.server.metrics import CONTENT_TYPE, Metrics, MetricsMiddleware
from memorybank.server.permissions import (
    Action,
    Caller,
    Unauthorized,
    authorize,
    authorize_tool,
    org_admin_of,
    require_org_admin,
    resolve_caller,
)
from memorybank.server.schemas import (
    AddFact,
    ClearRequest,
    ErrorBody,
    ForgetRequest,
    Me,
    MemoryPatch,
    ProjectView,
    ProviderUpdate,
    ProviderView,
    ThreadCreate,
    ThreadPatch,
    ThreadView,
    ToolCall,
)
from memorybank.settings import Settings
from memorybank.tokens import count_tokens
from memorybank.tools import ToolContext


class Conflict(MemoryBankError):
    """The request clashes with what is stored (HTTP 409); ``extra`` joins the error body."""

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.extra = extra


#: The error answers, documented once for every operation of the OpenAPI schema (each route
#: gives a subset; which one depends on the caller and the data, so none is left out).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": description}
    for code, description in (
        (400, "The request body is not valid JSON"),
        (401, "No valid API key (auth mode only)"),
        (403, "The caller's role does not allow this (org-wide search: org admins only)"),
        (404, "No such memory, plan, thread, profile or project, or not the caller's"),
        (409, "Already remembered, or memory is off for the thread"),
        (413, "The request body is over the size limit"),
        (422, "A parameter or field is invalid"),
        (429, "Too many AI writes: retry after Retry-After seconds"),
        (502, "The model provider failed"),
        (503, "The database refused the write (read-only, or locked for too long)"),
        (507, "The disk is full"),
    )
}


def status_code(exc: MemoryBankError) -> int:
    """The HTTP status of a memorybank error (the one mapping of the API)."""
    mapping: tuple[tuple[type[MemoryBankError], int], ...] = (
        (Unauthorized, 401),
        (PermissionDenied, 403),
        (NotFound, 404),
        (Conflict, 409),
        (TooLarge, 413),
        (ValidationError, 422),
        (RateLimited, 429),
        (ProviderError, 502),
    )
    if isinstance(exc, StoreError):  # the database refused: full disk 507, else 503
        return 507 if "disk is full" in str(exc) else 503
    return next((code for kind, code in mapping if isinstance(exc, kind)), 500)


def error_response(exc: MemoryBankError) -> JSONResponse:
    """``{"error": …}`` with the status of ``exc`` (and ``Retry-After`` / ``WWW-Authenticate``
    where they belong)."""
    body: dict[str, Any] = {"error": str(exc)}
    headers: dict[str, str] = {}
    if isinstance(exc, Conflict):
        body.update(exc.extra)
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body, status_code=status_code(exc), headers=headers)


async def current_caller(request: Request) -> Caller:
    """The dependency every ``/api`` route uses: who is calling (401 when unknown).

    Two indexed lookups: on the event loop when the store is in-process (a thread hop cost
    more than the lookups), in a thread when they are round trips to a database server."""
    accounts: Accounts = request.app.state.accounts
    header = request.headers.get("authorization")
    if request.app.state.inline_searches:
        return resolve_caller(accounts, header)
    return await anyio.to_thread.run_sync(resolve_caller, accounts, header)


CallerDep = Annotated[Caller, Depends(current_caller)]


def _m(memory: Memory) -> dict[str, Any]:
    return memory.model_dump(mode="json")


def _thread_view(thread: Thread) -> dict[str, Any]:
    return ThreadView(
        id=thread.id,
        project_id=thread.project_id,
        title=thread.title,
        memory_enabled=thread.memory_enabled,
        created_at=thread.created_at.isoformat(),
        updated_at=thread.updated_at.isoformat(),
    ).model_dump()


class _McpGate:
    """Refuses unauthenticated MCP requests before they reach the MCP app."""

    def __init__(self, app: ASGIApp, accounts: Accounts) -> None:
        self.app = app
        self.accounts = accounts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = Headers(scope=scope).get("authorization")
        try:
            await anyio.to_thread.run_sync(resolve_caller, self.accounts, header)
        except Unauthorized as exc:
            await error_response(exc)(scope, receive, send)
            return
        await self.app(scope, receive, send)


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
    return isinstance(bank.embedder, LocalEmbedder) and not bank.store.remote_reads


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


#: Where ``memorybank serve --workers N`` tells its worker processes the address it serves.
SERVE_HOST_ENV = "MEMORYBANK_SERVE_HOST"


def app_from_environment() -> FastAPI:
    """The app over the database and settings of the ``MEMORYBANK_*`` environment, owning
    its bank: what each worker process of ``memorybank serve --workers N`` runs.

    >>> uvicorn.run("memorybank.server.app:app_from_environment", factory=True, workers=2)
    ... # doctest: +SKIP
    """
    settings = Settings()
    bank = memorybank.open(settings.database_url())
    try:
        accounts = Accounts.open(bank, settings)
        host = os.environ.get(SERVE_HOST_ENV, "127.0.0.1")
        return create_app(bank, accounts, settings, host=host, owns_bank=True)
    except BaseException:
        bank.close()
        raise


def create_app(
    bank: MemoryBank,
    accounts: Accounts,
    settings: Settings | None = None,
    *,
    host: str = "127.0.0.1",
    owns_bank: bool = False,
) -> FastAPI:
    """The app serving ``bank`` with ``accounts``. The caller owns both and closes the bank
    after serving, unless ``owns_bank``: then the app closes it when it shuts down. ``host``
    is where clients reach the server (MCP's DNS-rebinding check)."""
    from memorybank.mcp import mcp_http_app

    settings = settings or Settings()
    limiter = RateLimiter(settings.ai_write_rate_per_minute)
    confirmations = ConfirmTokens()
    metrics = Metrics(lambda: float(bank.stats().get("memories", 0)), bank.query_cache)
    compute = anyio.CapacityLimiter(compute_threads(settings, bank))
    inline = inline_searches(settings, bank)

    def computing(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        """``endpoint`` run in a thread of the compute pool, not FastAPI's general one
        (which stays for requests that wait on an LLM or a provider)."""

        @functools.wraps(endpoint)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            call = functools.partial(endpoint, *args, **kwargs)
            return await anyio.to_thread.run_sync(call, limiter=compute)

        return run

    def on_loop(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        @functools.wraps(endpoint)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            return endpoint(*args, **kwargs)

        return run

    def searching(endpoint: Callable[P, R]) -> Callable[P, Awaitable[R]]:
        """A read-only, CPU-bound ``endpoint``: on the event loop when :func:`inline_searches`
        allows it, else like :func:`computing`."""
        return on_loop(endpoint) if inline else computing(endpoint)

    def reading(endpoint: Callable[P, R]) -> Callable[P, R] | Callable[P, Awaitable[R]]:
        """A plain read (a page, a memory, its history): on the event loop when searches are,
        so it takes its turn with them instead of waiting for the loop behind all of them;
        else as FastAPI runs any ``def`` endpoint, in its general pool."""
        return on_loop(endpoint) if inline else endpoint

    def tool_context(caller: Caller, thread: Thread | None) -> ToolContext:
        project_id = thread.project_id if thread else None
        role: Role | None = None
        if project_id is not None:
            role = authorize(accounts, caller, Action.VIEW, project_id)
        org = org_admin_of(accounts, caller)
        orgs = [] if caller.local else accounts.orgs(caller.user_id)
        return ToolContext(
            user_id=caller.user_id,
            project_id=project_id,
            thread_id=thread.id if thread else None,
            role=role,
            org_id=org or (orgs[0][0] if orgs else None),
            org_admin=org is not None,
            memory_enabled=thread.memory_enabled if thread else True,
        )

    def mcp_context(request: Request | None) -> ToolContext:
        header = request.headers.get("authorization") if request is not None else None
        return tool_context(resolve_caller(accounts, header), None)

    mcp_app = mcp_http_app(bank, "default", mcp_context, path="/mcp", host=host)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            async with mcp_app.router.lifespan_context(mcp_app):
                yield
        finally:
            if owns_bank:
                bank.close()

    app = FastAPI(
        title="memorybank",
        version=__version__,
        description='Long-term memory for LLM assistants. Errors are {"error": …}.',
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
    )
    app.state.bank = bank
    app.state.accounts = accounts
    app.state.settings = settings
    app.state.inline_searches = inline
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(MetricsMiddleware, metrics=metrics)

    @app.exception_handler(MemoryBankError)
    async def memorybank_error(request: Request, exc: MemoryBankError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(RequestValidationError)
    async def request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse({"error": "the request body is not valid JSON"}, status_code=400)
        parts = [
            f"{'.'.join(str(p) for p in error['loc'][1:]) or 'request'}: {error['msg']}"
            for error in errors
        ]
        return JSONResponse({"error": "; ".join(parts)}, status_code=422)

    # -- helpers over the services ----------------------------------------------------------

    @contextmanager
    def bank_for(caller: Caller) -> Iterator[MemoryBank]:
        """``bank``, or a view of it using the caller's own LLM when they enabled one."""
        provider = accounts.provider(caller.user_id, "llm")
        if provider is None or not provider.enabled:
            yield bank
            return
        client = ChatClient(
            provider.base_url, provider.model, api_key=accounts.provider_secret(provider)
        )
        view = copy.copy(bank)
        view.llm = client
        try:
            yield view
        finally:
            client.close()

    def memory_scope(caller: Caller, memory_id: str, action: Action) -> str | None:
        """The project of a memory addressed by id, after checking ``action`` there."""
        exists, project_id = accounts.memory_project(memory_id)
        if not exists:
            raise NotFound(f"no memory {memory_id!r}")
        authorize(accounts, caller, action, project_id)
        return project_id

    def add_fact(caller: Caller, body: AddFact, project_id: str | None) -> JSONResponse:
        limiter.hit(caller.user_id)
        result = bank.save(
            caller.user_id,
            body.fact,
            body.category or "context",
            project_id=project_id,
            source=Source.USER,
            created_by=caller.user_id,
        )
        if result.duplicate:
            existing = None
            if result.existing_id:
                try:
                    existing = _m(
                        bank.get(result.existing_id, caller.user_id, project_id=project_id)
                    )
                except NotFound:
                    existing = None
            raise Conflict(
                f"already remembered: {result.existing_content}",
                duplicate=True,
                existing=existing,
            )
        assert result.memory is not None
        return JSONResponse({"memory": _m(result.memory)}, status_code=201)

    def list_scope(
        caller: Caller,
        project_id: str | None,
        q: str | None,
        category: str | None,
        limit: int,
        offset: int,
    ) -> tuple[list[Memory], int]:
        scopes: Literal["user", "project"] = "project" if project_id else "user"
        if q:
            hits = bank.search(
                caller.user_id,
                q,
                project_id=project_id,
                scopes=scopes,
                limit=limit,
                category=category,
            )
            memories = [h.memory for h in hits]
            return memories, len(memories)
        filters: dict[str, Any] = {} if category is None else {"category": category}
        memories = bank.list(
            caller.user_id,
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            offset=offset,
            **filters,
        )
        total = bank.count(caller.user_id, project_id=project_id, scopes=scopes, **filters)
        return memories, total

    def clear_scope(caller: Caller, project_id: str | None, body: ClearRequest | None) -> Any:
        key = f"p:{project_id}" if project_id else f"u:{caller.user_id}"
        if body is None:
            scopes: Literal["user", "project"] = "project" if project_id else "user"
            count = bank.count(caller.user_id, project_id=project_id, scopes=scopes)
            return {"confirm_token": confirmations.issue(caller.user_id, key), "count": count}
        confirmations.redeem(body.confirm_token, caller.user_id, key)
        return {"deleted": bank.clear(caller.user_id, project_id, actor=caller.user_id)}

    def thread_of(caller: Caller, thread_id: str | None) -> Thread | None:
        return None if thread_id is None else accounts.thread(thread_id, caller.user_id)

    # -- health and metrics -----------------------------------------------------------------

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, Any]:
        """Liveness, with the number of stored memories (no auth)."""
        return {"status": "ok", "memories": int(bank.stats().get("memories", 0))}

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    def prometheus() -> Response:
        """Prometheus metrics: request counts and latencies by route, memories stored."""
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    # -- identity ---------------------------------------------------------------------------

    @app.get("/api/me", tags=["identity"])
    def me(caller: CallerDep) -> dict[str, Any]:
        """Who is calling, in which mode, and their projects."""
        projects = [] if caller.local else accounts.projects(caller.user_id)
        return Me(
            user_id=caller.user_id,
            name=caller.name,
            mode=caller.mode,
            projects=[ProjectView(id=p.id, name=p.name, role=r) for p, r in projects],
            org_admin=org_admin_of(accounts, caller) is not None,
        ).model_dump()

    # -- seed 002 §6.4: user and drive memory -----------------------------------------------

    @app.get("/api/memory/user", tags=["memory"])
    @reading
    def list_user_memory(
        caller: CallerDep,
        q: str | None = None,
        category: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> dict[str, Any]:
        """The caller's private memories (newest first; ``q`` searches instead)."""
        memories, total = list_scope(caller, None, q, category, limit, offset)
        return {"memories": [_m(m) for m in memories], "count": total}

    @app.post("/api/memory/user", status_code=201, tags=["memory"])
    @computing
    def add_user_memory(caller: CallerDep, body: AddFact) -> JSONResponse:
        """Add a fact to the caller's private memory by hand (409 for a duplicate)."""
        return add_fact(caller, body, None)

    @app.delete("/api/memory/user/{memory_id}", status_code=204, tags=["memory"])
    def delete_user_memory(caller: CallerDep, memory_id: str) -> Response:
        """Delete one of the caller's private memories."""
        exists, project_id = accounts.memory_project(memory_id)
        if not exists or project_id is not None:
            raise NotFound(f"no memory {memory_id!r} for this user")
        bank.delete(memory_id, caller.user_id)
        return Response(status_code=204)

    @app.post("/api/memory/user/clear", tags=["memory"])
    def clear_user_memory(
        caller: CallerDep, body: Annotated[ClearRequest | None, Body()] = None
    ) -> Any:
        """Without a body: a confirm token and how many would go. With it: delete them all."""
        return clear_scope(caller, None, body)

    @app.get("/api/memory/drive/{drive_id}", tags=["memory"])
    @reading
    def list_drive_memory(
        caller: CallerDep,
        drive_id: str,
        q: str | None = None,
        category: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> dict[str, Any]:
        """A project's memories, for every member, with the caller's role."""
        role = authorize(accounts, caller, Action.VIEW, drive_id)
        memories, total = list_scope(caller, drive_id, q, category, limit, offset)
        return {"memories": [_m(m) for m in memories], "count": total, "role": role}

    @app.post("/api/memory/drive/{drive_id}", status_code=201, tags=["memory"])
    @computing
    def add_drive_memory(caller: CallerDep, drive_id: str, body: AddFact) -> JSONResponse:
        """Add a fact to a project by hand (admins and owners)."""
        authorize(accounts, caller, Action.ADD_MANUAL, drive_id)
        return add_fact(caller, body, drive_id)

    @app.delete("/api/memory/drive/{memory_id}", status_code=204, tags=["memory"])
    def delete_drive_memory(caller: CallerDep, memory_id: str) -> Response:
        """Delete a project memory by its id (admins and owners of its project)."""
        exists, project_id = accounts.memory_project(memory_id)
        if not exists or project_id is None:
            raise NotFound(f"no project memory {memory_id!r}")
        authorize(accounts, caller, Action.DELETE, project_id)
        bank.delete(memory_id, caller.user_id, project_id=project_id)
        return Response(status_code=204)

    @app.post("/api/memory/drive/{drive_id}/clear", tags=["memory"])
    def clear_drive_memory(
        caller: CallerDep, drive_id: str, body: Annotated[ClearRequest | None, Body()] = None
    ) -> Any:
        """Clear a project's memory in two steps (admins and owners)."""
        authorize(accounts, caller, Action.DELETE, drive_id)
        return clear_scope(caller, drive_id, body)

    # -- search, read, edit -----------------------------------------------------------------

    @app.get("/api/search", tags=["memories"])
    @searching
    def search(
        caller: CallerDep,
        q: str,
        project_id: str | None = None,
        limit: Annotated[int, Query(ge=1, le=100)] = 10,
        category: str | None = None,
        scopes: Literal["all", "user", "project"] = "all",
        org_wide: bool = False,
    ) -> dict[str, Any]:
        """Hybrid search; ``org_wide`` (org admins only) searches every org member's private
        memories."""
        if project_id is not None:
            authorize(accounts, caller, Action.VIEW, project_id)
        if org_wide:
            org = require_org_admin(accounts, caller)
            users = sorted({*org_users(bank, org), caller.user_id})
            hits = [
                hit
                for user in users
                for hit in bank.search(user, q, scopes="user", limit=limit, category=category)
            ]
            hits = sorted(hits, key=lambda h: h.score, reverse=True)[:limit]
        else:
            hits = bank.search(
                caller.user_id,
                q,
                project_id=project_id,
                scopes=scopes,
                limit=limit,
                category=category,
            )
        return {
            "hits": [
                {
                    "memory": _m(h.memory),
                    "score": h.score,
                    "relevance": h.relevance,
                    "importance": h.importance,
                    "recency": h.recency,
                }
                for h in hits
            ]
        }

    @app.get("/api/recent", tags=["memories"])
    @reading
    def recent(
        caller: CallerDep,
        since: str | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 30,
        project_id: str | None = None,
    ) -> dict[str, Any]:
        """Newest memories first (``since``: 24h, 7d, 30d, 90d)."""
        if project_id is not None:
            authorize(accounts, caller, Action.VIEW, project_id)
        memories = bank.recent(caller.user_id, project_id=project_id, since=since, limit=limit)
        return {"memories": [_m(m) for m in memories], "count": len(memories)}

    @app.get("/api/memories/{memory_id}", tags=["memories"])
    @reading
    def get_memory(
        caller: CallerDep, memory_id: str, project_id: str | None = None
    ) -> dict[str, Any]:
        """One memory (private, or of a project the caller belongs to)."""
        scope = memory_scope(caller, memory_id, Action.VIEW)
        return _m(bank.get(memory_id, caller.user_id, project_id=scope))

    @app.patch("/api/memories/{memory_id}", tags=["memories"])
    @computing
    def patch_memory(
        caller: CallerDep, memory_id: str, body: MemoryPatch, project_id: str | None = None
    ) -> dict[str, Any]:
        """Change a memory in place (project memories: admins and owners)."""
        scope = memory_scope(caller, memory_id, Action.DELETE)
        changed = bank.update(
            memory_id,
            caller.user_id,
            project_id=scope,
            content=body.content,
            category=body.category,
            importance=body.importance,
            tags=body.tags,
            actor=caller.user_id,
        )
        return _m(changed)

    @app.get("/api/memories/{memory_id}/history", tags=["memories"])
    @reading
    def memory_history(
        caller: CallerDep, memory_id: str, project_id: str | None = None
    ) -> dict[str, Any]:
        """ADD / UPDATE / DELETE events of a memory, oldest first."""
        exists, scope = accounts.memory_project(memory_id)
        if exists:
            authorize(accounts, caller, Action.VIEW, scope)
        else:  # deleted: only its tombstone is left, in the scope the caller names
            if project_id is not None:
                authorize(accounts, caller, Action.VIEW, project_id)
            scope = project_id
        events = bank.history(memory_id, caller.user_id, project_id=scope)
        return {"events": [e.model_dump(mode="json") for e in events]}

    # -- moving data ------------------------------------------------------------------------

    @app.get(
        "/api/export",
        tags=["data"],
        responses={
            200: {
                "description": "A JSON export document, or Markdown with format=markdown",
                "content": {"text/markdown": {"schema": {"type": "string"}}},
            }
        },
    )
    def export(
        caller: CallerDep,
        format: Literal["json", "markdown"] = "json",
        project_id: str | None = None,
    ) -> Response:
        """Every memory of the caller's private scope (or one project) as a download."""
        if project_id is not None:
            authorize(accounts, caller, Action.VIEW, project_id)
        text = bank.export(caller.user_id, format, project_id=project_id)
        name = f"memorybank-{project_id or caller.user_id}"
        ext, media = ("json", "application/json") if format == "json" else ("md", "text/markdown")
        # Ids may hold any character: an ASCII fallback name plus the exact one, RFC 6266.
        plain = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        exact = urllib.parse.quote(f"{name}.{ext}", safe="")
        disposition = f"attachment; filename=\"{plain}.{ext}\"; filename*=UTF-8''{exact}"
        return Response(text, media_type=media, headers={"Content-Disposition": disposition})

    @app.post("/api/import", tags=["data"])
    async def import_(request: Request, project_id: str | None = None) -> dict[str, Any]:
        """Load a JSON export (the body) into the caller's scope or a project (admins)."""
        caller = await current_caller(request)
        data = await request.body()

        def run() -> dict[str, Any]:
            if project_id is not None:
                authorize(accounts, caller, Action.ADD_MANUAL, project_id)
            results = bank.import_(caller.user_id, data, project_id=project_id)
            imported = sum(1 for r in results if r.success)
            return {"imported": imported, "skipped": len(results) - imported}

        return await anyio.to_thread.run_sync(run)

    @app.get("/api/stats", tags=["data"])
    def stats(caller: CallerDep) -> dict[str, Any]:
        """The caller's own counts: private memories and each of their projects'."""
        projects = [] if caller.local else accounts.projects(caller.user_id)
        return {
            "user_id": caller.user_id,
            "memories": bank.count(caller.user_id, scopes="user"),
            "projects": [
                {
                    "id": p.id,
                    "name": p.name,
                    "role": role,
                    "memories": bank.count(caller.user_id, project_id=p.id, scopes="project"),
                }
                for p, role in projects
            ],
        }

    # -- forgetting -------------------------------------------------------------------------

    @app.post("/api/forget/preview", tags=["forget"])
    def preview_forget(caller: CallerDep, body: ForgetRequest) -> dict[str, Any]:
        """Plan what forgetting ``query`` would do (changes nothing)."""
        if body.project_id is not None:
            authorize(accounts, caller, Action.DELETE, body.project_id)
        ctx = ToolContext(user_id=caller.user_id, project_id=body.project_id)
        with bank_for(caller) as own:
            preview = forget_preview(own, ctx, body.query)
        return {
            "plan_id": preview.plan.id,
            "summary": preview.summary,
            "steps": [
                {
                    "memory_id": item.memory.id,
                    "action": item.action.value.upper(),
                    "reason": item.reason,
                    "content": item.memory.content,
                    "rewritten": item.rewrite,
                }
                for item in preview.items
            ],
            "expires_at": preview.plan.expires_at.isoformat(),
            "text": render_preview(preview),
        }

    def plan_context(caller: Caller, plan_id: str) -> ToolContext:
        plan = bank.store.get_forget_plan(plan_id) if plan_id.startswith("fp_") else None
        if plan is None or plan.user_id != caller.user_id:
            raise NotFound(f"no forget plan {plan_id!r} for this user")
        if plan.project_id is not None:
            authorize(accounts, caller, Action.DELETE, plan.project_id)
        return ToolContext(user_id=caller.user_id, project_id=plan.project_id)

    @app.post("/api/forget/{plan_id}/confirm", tags=["forget"])
    def confirm_forget(caller: CallerDep, plan_id: str) -> dict[str, Any]:
        """Carry out a previewed plan, atomically."""
        result = forget_confirm(bank, plan_context(caller, plan_id), plan_id)
        return {
            "forgotten": len(result.forgotten),
            "rewritten": len(result.rewritten),
            "kept": result.kept,
        }

    @app.post("/api/forget/{plan_id}/cancel", tags=["forget"])
    def cancel_forget(caller: CallerDep, plan_id: str) -> dict[str, Any]:
        """Drop a pending plan."""
        forget_cancel(bank, plan_context(caller, plan_id), plan_id)
        return {"cancelled": True}

    # -- threads ----------------------------------------------------------------------------

    @app.post("/api/threads", status_code=201, tags=["threads"])
    def create_thread(caller: CallerDep, body: ThreadCreate) -> dict[str, Any]:
        """Start a conversation, optionally in a project, with memory on or off."""
        if body.project_id is not None:
            authorize(accounts, caller, Action.VIEW, body.project_id)
        thread = accounts.create_thread(
            caller.user_id,
            project_id=body.project_id,
            title=body.title,
            memory_enabled=body.memory_enabled,
        )
        return _thread_view(thread)

    @app.get("/api/threads", tags=["threads"])
    def list_threads(caller: CallerDep) -> dict[str, Any]:
        """The caller's conversations, newest first."""
        return {"threads": [_thread_view(t) for t in accounts.threads(caller.user_id)]}

    @app.patch("/api/threads/{thread_id}", tags=["threads"])
    def patch_thread(caller: CallerDep, thread_id: str, body: ThreadPatch) -> dict[str, Any]:
        """Rename, switch memory on/off, or move to another project (``project_id: null``
        makes it unfoldered)."""
        moving = "project_id" in body.model_fields_set
        if moving and body.project_id is not None:
            authorize(accounts, caller, Action.VIEW, body.project_id)
        thread = accounts.update_thread(
            thread_id,
            caller.user_id,
            title=body.title,
            memory_enabled=body.memory_enabled,
            project_id=body.project_id if moving else None,
            clear_project=moving and body.project_id is None,
        )
        return _thread_view(thread)

    # -- tools ------------------------------------------------------------------------------

    def find_profile(name: str) -> tools.Profile:
        if name not in tools.PROFILE_NAMES:
            raise NotFound(f"no tool profile {name!r}: use one of {', '.join(tools.PROFILE_NAMES)}")
        return tools.profile(name)

    @app.get("/api/tools/{profile}", tags=["tools"])
    def tool_definitions(
        caller: CallerDep,
        profile: str,
        format: Literal["openai", "anthropic", "mcp"] = "openai",
    ) -> dict[str, Any]:
        """A profile's tool definitions for a chat API, and what they cost per request."""
        chosen = find_profile(profile)
        return {
            "profile": chosen.name,
            "format": format,
            "tools": tools.export(chosen, format),
            "token_cost": tools.token_cost(chosen, format),
        }

    @app.post("/api/tools/{profile}/call", tags=["tools"])
    def call_tool(caller: CallerDep, profile: str, body: ToolCall) -> dict[str, Any]:
        """Run what the model asked for, as the caller, in the thread's scope."""
        chosen = find_profile(profile)
        ctx = tool_context(caller, thread_of(caller, body.thread_id))
        offered = tools.toolkit(chosen, ctx)
        if not offered.tools:
            raise Conflict(
                f"memory is turned off for thread {ctx.thread_id!r}: offer the model no memory "
                "tools, or switch memory on with PATCH /api/threads/{id}"
            )
        tool = offered.tool(body.name)
        if tool is not None:
            authorize_tool(ctx.role, ctx.project_id, tool.name, body.arguments)
            if tool.tier == tools.SafetyTier.SIDE_EFFECTING:
                limiter.hit(caller.user_id)
        with bank_for(caller) as own:
            return {"result": tools.call(own, chosen, body.name, body.arguments, ctx)}

    @app.get("/api/prompt", tags=["tools"])
    @searching
    def prompt(
        caller: CallerDep,
        thread_id: str | None = None,
        budget: Annotated[int, Query(ge=50, le=20_000)] = 500,
        profile: str = "default",
    ) -> dict[str, Any]:
        """The system-prompt block: the profile's guidance and the pre-loaded memories."""
        find_profile(profile)
        ctx = tool_context(caller, thread_of(caller, thread_id))
        text = bank.system_prompt(ctx, profile, budget)
        return {"prompt": text, "tokens": count_tokens(text)}

    # -- bring-your-own providers -----------------------------------------------------------

    def provider_view(settings_: Any) -> dict[str, Any]:
        return ProviderView(
            kind=settings_.kind,
            base_url=settings_.base_url,
            model=settings_.model,
            enabled=settings_.enabled,
            key_set=settings_.key_set,
            key_hint=settings_.key_hint,
        ).model_dump()

    def provider_kind(kind: str) -> ProviderKind:
        if kind not in ("embedding", "llm"):
            raise NotFound(f"no provider kind {kind!r}: use embedding or llm")
        return "llm" if kind == "llm" else "embedding"

    @app.get("/api/settings/providers", tags=["settings"])
    def list_providers(caller: CallerDep) -> list[dict[str, Any]]:
        """The caller's providers; keys are never returned, only whether one is set."""
        return [provider_view(p) for p in accounts.providers(caller.user_id)]

    @app.put("/api/settings/providers/{kind}", tags=["settings"])
    def put_provider(caller: CallerDep, kind: str, body: ProviderUpdate) -> dict[str, Any]:
        """Configure, enable/disable or rotate the key of a provider (key stored encrypted)."""
        stored = accounts.set_provider(
            caller.user_id,
            provider_kind(kind),
            base_url=body.base_url,
            model=body.model,
            api_key=body.api_key,
            enabled=body.enabled,
        )
        return provider_view(stored)

    @app.delete("/api/settings/providers/{kind}", status_code=204, tags=["settings"])
    def delete_provider(caller: CallerDep, kind: str) -> Response:
        """Forget a provider and its key."""
        accounts.delete_provider(caller.user_id, provider_kind(kind))
        return Response(status_code=204)

    @app.post("/api/providers/llm/check", tags=["settings"])
    def check_llm(caller: CallerDep) -> dict[str, Any]:
        """Ask the caller's LLM a one-line question: ``success: false`` with guidance when it
        is not configured, disabled or failing."""
        provider = accounts.provider(caller.user_id, "llm")
        if provider is None or not provider.enabled:
            return {
                "success": False,
                "error": "no LLM provider is configured or enabled: add one in Settings "
                "(PUT /api/settings/providers/llm) and enable it",
            }
        with bank_for(caller) as own:
            try:
                own.llm.complete_json(
                    [{"role": "user", "content": 'Answer with the JSON {"ok": true}.'}],
                    "check",
                    {
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                        "required": ["ok"],
                        "additionalProperties": False,
                    },
                )
            except (ProviderError, ConfigurationError) as exc:
                return {"success": False, "error": f"the LLM provider failed: {exc}"}
        return {"success": True, "model": provider.model}

    # -- MCP, then the web UI ---------------------------------------------------------------

    for route in mcp_app.routes:
        if isinstance(route, Route):
            app.router.routes.append(Route(route.path, endpoint=_McpGate(route.endpoint, accounts)))

    from memorybank.server.ui import mount_ui

    mount_ui(app)
    return app


__all__ = ["ERROR_RESPONSES", "Conflict", "create_app", "error_response", "status_code"]
