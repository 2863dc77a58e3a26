"""The HTTP API of memorybank: thin FastAPI routes over :class:`~memorybank.MemoryBank` and
:class:`~memorybank.services.accounts.Accounts` (endpoints with examples: ``docs/api.md``;
OpenAPI at
``/docs``). :func:`create_app` assembles it; the parts live beside it:

* Routes: one module per resource in :mod:`memorybank.server.routes`, given the app's parts
  by the dependencies of :mod:`memorybank.server.deps`.
* Auth: with no users configured the server is in local mode (one user, ``local``), and only
  serves a loopback address (:data:`LOOPBACK_HOSTS`); otherwise every ``/api`` and ``/mcp``
  request needs ``Authorization: Bearer <key>``
  (:func:`~memorybank.server.principals.resolve_principal`).
* Permissions: seed 002 §6.5's table is :mod:`memorybank.rules.permissions`, enforced by the bank;
  :mod:`memorybank.server.principals` says who is calling and their role in a project.
* Browsers: every answer forbids framing and inline scripts (a Content-Security-Policy and
  more: :mod:`memorybank.server.headers`).
* Errors: always ``{"error": "<what to fix>"}``;
  :func:`~memorybank.server.error_responses.status_code` is the one mapping from the
  :class:`~memorybank.MemoryBankError` tree to HTTP statuses.
* Limits: request bodies over ``max_request_bytes`` get 413. Writes a user starts (tool calls
  that change memory, facts added by hand, batches, imports, new threads, forget previews,
  consolidation), charged one unit per record they store, over ``ai_write_rate_per_minute``
  a minute get 429 with ``Retry-After``, and over MCP an error result saying when to retry:
  the app sets the bank's one limiter (``bank.writes.count``,
  :func:`memorybank.core.writes.writing`), which REST, the tools and MCP share.
* Where endpoints run (the event loop, a small compute pool, or FastAPI's general pool) is
  decided once per app, by what they wait on: :mod:`memorybank.server.execution`.

    >>> import uvicorn, memorybank  # doctest: +SKIP
    >>> app = create_app(bank, Accounts.open(bank, settings), settings)  # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import anyio.to_thread
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import memorybank
from memorybank import __version__
from memorybank.core.bank import MemoryBank
from memorybank.errors import ConfigurationError, NotFound, ValidationError
from memorybank.providers.netguard import AddressPolicy
from memorybank.rules.limits import READ_SETTING, OpenLimit, RateLimiter
from memorybank.server.deps import mcp_caller
from memorybank.server.error_responses import error_response, register_error_handlers
from memorybank.server.execution import Execution, handing_over, in_turn
from memorybank.server.guard import Guard, host_name
from memorybank.server.headers import with_security_headers
from memorybank.server.metrics import Metrics, MetricsMiddleware
from memorybank.server.openapi import TAGS, contract_schema, mount_docs
from memorybank.server.principals import USER_HEADER, Unauthorized, resolve_principal
from memorybank.server.request_limits import BodyLimit, ConfirmTokens
from memorybank.server.routes import ROUTERS
from memorybank.server.schedule import consolidation_loop
from memorybank.services.accounts import Accounts
from memorybank.services.webhook_worker import RetryPolicy, WebhookWorker
from memorybank.services.webhooks import Webhooks
from memorybank.settings import Settings

#: The addresses a server in local mode may listen on: with no users it has no
#: authentication, so it must not be reachable from other machines.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

#: The header naming a streamable-HTTP MCP session (lower case, as ASGI spells headers).
MCP_SESSION_HEADER = "mcp-session-id"

#: Where ``memorybank serve --workers N`` tells its worker processes the address it serves.
SERVE_HOST_ENV = "MEMORYBANK_SERVE_HOST"


def require_loopback_in_local_mode(accounts: Accounts, host: str) -> None:
    """:class:`~memorybank.ConfigurationError` when ``host`` is not a loopback address and no
    users are configured (local mode, without authentication)."""
    if host in LOOPBACK_HOSTS or accounts.has_users():
        return
    raise ConfigurationError(
        f"refusing to listen on {host!r}: no users are configured, so the server runs "
        "in single-user local mode without authentication and only binds to a loopback "
        "address (127.0.0.1, localhost or ::1); create a user and an API key with "
        "`memorybank admin create-user` and `memorybank admin create-key` first"
    )


class _McpGate:
    """Refuses unauthenticated MCP requests before they reach the MCP app, and holds each MCP
    session to the principal that opened it: a request naming another principal's session id
    (``Mcp-Session-Id``), to send in it, read its stream or end it, is answered 404 as for a
    session that does not exist. Without this anyone holding alice's session id could end
    her session (``DELETE /mcp``) or read what the server streams to it."""

    def __init__(self, app: ASGIApp, accounts: Accounts, owners: dict[str, str]) -> None:
        self.app = app
        self.accounts = accounts
        self.owners = owners  # session id -> the user id of whoever opened it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        try:
            principal = await anyio.to_thread.run_sync(
                resolve_principal,
                self.accounts,
                headers.get("authorization"),
                headers.get(USER_HEADER),
            )
        except (Unauthorized, ValidationError) as exc:
            await error_response(exc)(scope, receive, send)
            return
        session = headers.get(MCP_SESSION_HEADER)
        if session is not None and self.owners.get(session, principal.user_id) != principal.user_id:
            await error_response(NotFound("no MCP session with that id"))(scope, receive, send)
            return
        ending = session if scope["method"] == "DELETE" else None
        await self.app(scope, receive, self._noting(send, principal.user_id, ending))

    def _noting(self, send: Send, user_id: str, ending: str | None) -> Send:
        """``send``, noting who opened a session the answer names, and forgetting one ended."""

        async def noted(message: Message) -> None:
            if message["type"] == "http.response.start":
                if ending is not None and message["status"] < 300:
                    self.owners.pop(ending, None)
                for name, value in message.get("headers", ()):
                    if name.decode("latin-1").lower() == MCP_SESSION_HEADER and ending is None:
                        self.owners.setdefault(value.decode("latin-1"), user_id)
            await send(message)

        return noted


def _add_routes(app: FastAPI) -> None:
    """The API's routes, in the order of :data:`~memorybank.server.routes.ROUTERS`, added to
    ``app``'s own router. Not with ``include_router``: FastAPI includes a router lazily, as one
    more level every request is matched through (50 µs a request for the nine routers,
    measured), while their routes hold nothing of one app and serve every app as they are."""
    for router in ROUTERS:
        app.router.routes.extend(router.routes)


def _mount_mcp(app: FastAPI, mcp_app: Starlette, accounts: Accounts) -> None:
    """Serve ``mcp_app``'s routes from ``app``, each behind :class:`_McpGate`."""
    owners: dict[str, str] = {}
    for route in mcp_app.routes:
        if isinstance(route, Route):
            gate = _McpGate(route.endpoint, accounts, owners)
            app.router.routes.append(Route(route.path, endpoint=gate))


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Runs the MCP session manager (Starlette does not run a mounted app's lifespan), the
    webhook worker and the scheduled consolidation when set, with the GIL handed over often
    (:func:`~memorybank.server.execution.handing_over`), and closes the bank at shutdown
    when the app owns it."""
    mcp_app: Starlette = app.state.mcp_app
    every = app.state.settings.consolidate_every_hours
    worker: WebhookWorker | None = app.state.webhook_worker
    try:
        if worker is not None:
            worker.start()
        async with anyio.create_task_group() as jobs:
            if every:
                roles = app.state.accounts.author_role
                jobs.start_soon(consolidation_loop, app.state.bank, timedelta(hours=every), roles)
            with handing_over():  # one user's CPU-bound read never holds the GIL for long
                async with mcp_app.router.lifespan_context(mcp_app):
                    yield
            jobs.cancel_scope.cancel()
    finally:
        if worker is not None:
            await anyio.to_thread.run_sync(worker.stop)
        if app.state.owns_bank:
            app.state.bank.close()


def _add_webhooks(app: FastAPI, bank: MemoryBank, accounts: Accounts, settings: Settings) -> None:
    """The app's webhooks, and the worker its lifespan runs (unless turned off). Their URLs
    may reach what users' provider URLs may (:mod:`memorybank.providers.netguard`): loopback too
    while
    the server has no users (local mode)."""

    def policy() -> AddressPolicy:
        return AddressPolicy.for_users(
            allow_private=settings.provider_allow_private, local_mode=not accounts.has_users()
        )

    cipher = accounts.cipher  # webhook secrets sealed like provider keys
    app.state.webhooks = Webhooks(
        bank.store,
        AddressPolicy(allow_private=False),
        cipher,
        max_per_project=settings.webhook_max_per_project,
        test_sends_per_minute=settings.webhook_test_sends_per_minute,
    )
    retry = RetryPolicy(
        base_seconds=settings.webhook_retry_base_seconds,
        max_attempts=settings.webhook_max_attempts,
        timeout_seconds=settings.webhook_read_timeout_seconds,
        connect_timeout_seconds=settings.webhook_connect_timeout_seconds,
    )
    app.state.webhook_worker = (
        WebhookWorker(
            bank.store,
            policy,
            retry,
            poll_seconds=settings.webhook_poll_seconds,
            cipher=cipher,
            concurrency=settings.webhook_concurrency,
        )
        if settings.webhooks_enabled
        else None
    )


def _stored_memories(bank: MemoryBank) -> float:
    return float(bank.store.stats().get("memories", 0))


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


def _api_app(**more: Any) -> FastAPI:
    """The FastAPI app with the API's description, before its parts and routes."""
    return FastAPI(
        title="memorybank",
        version=__version__,
        description=(
            "Long-term memory for LLM assistants. Every error is "
            '`{"error": "<what to fix>"}`. Send `Authorization: Bearer <API key>` '
            "(none in local mode, where `X-Memorybank-User` may name the user)."
        ),
        docs_url=None,  # mount_docs serves them, with their assets (no CDN)
        redoc_url=None,
        openapi_tags=TAGS,
        **more,
    )


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI schema, as ``/openapi.json`` serves it, without a database: what the
    TypeScript client's types are generated from (``memorybank openapi``)."""
    app = _api_app()
    _add_routes(app)
    return contract_schema(app)


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
    is where clients reach the server (MCP's DNS-rebinding check); with no users configured
    it must be a loopback address (:class:`~memorybank.ConfigurationError` otherwise).

    The bank's per-user write limit becomes ``settings.ai_write_rate_per_minute`` (replacing
    the rate it had, keeping what it counted): the server's settings decide the server's
    limit, and every route and ``/mcp`` of the process count against that one limiter."""
    from memorybank.mcp import mcp_http_app
    from memorybank.server.ui import mount_ui

    settings = settings or Settings()
    require_loopback_in_local_mode(accounts, host)
    execution = Execution.for_bank(settings, bank)
    mcp_app = mcp_http_app(
        bank,
        "default",
        functools.partial(mcp_caller, accounts),
        path="/mcp",
        host=host,
        # The guard checks every path; the SDK's own check on /mcp must know the same names.
        allowed_hosts=[host_name(h) for h in settings.allowed_hosts],
        run=functools.partial(in_turn, execution),  # one compute pool, turns per user
    )
    app = _api_app(lifespan=_lifespan)
    metrics = Metrics(functools.partial(_stored_memories, bank), bank.query_cache)
    app.state.bank = bank
    app.state.accounts = accounts
    app.state.settings = settings
    app.state.execution = execution
    app.state.inline_searches = execution.inline
    bank.writes.set_limit(settings.ai_write_rate_per_minute)  # one limiter: REST, tools, MCP
    bank.writes.reads = RateLimiter(
        settings.read_rate_per_minute,
        setting=READ_SETTING,
        what="reads",
        unit="units",
        verb="costs",
    )
    app.state.confirmations = ConfirmTokens()
    app.state.event_streams = OpenLimit(
        settings.event_streams_per_user, "event streams", "MEMORYBANK_EVENT_STREAMS_PER_USER"
    )
    app.state.metrics = metrics
    app.state.mcp_app = mcp_app
    app.state.owns_bank = owns_bank
    _add_webhooks(app, bank, accounts, settings)
    app.add_middleware(BodyLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(Guard, accounts=accounts, settings=settings)  # host, origin, body type
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    with_security_headers(app)  # CSP, no framing, nosniff, no referrer: on every answer
    register_error_handlers(app)
    _add_routes(app)
    _mount_mcp(app, mcp_app, accounts)  # after the API's routes, then the web UI last
    mount_docs(app)
    mount_ui(app)
    return app


__all__ = [
    "LOOPBACK_HOSTS",
    "SERVE_HOST_ENV",
    "app_from_environment",
    "create_app",
    "openapi_document",
    "require_loopback_in_local_mode",
]
