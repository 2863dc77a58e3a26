"""Which requests the server accepts at all, before any route runs: the host it was reached
by, where a write comes from, and what a write's body is. Together they keep web pages in a
browser out of a server that has no credentials to check (local mode).

* **Host** (DNS rebinding): the ``Host`` header must name ``localhost``, ``127.0.0.1`` or
  ``[::1]`` (any port) or a host of ``MEMORYBANK_ALLOWED_HOSTS``; otherwise 421. Always in
  local mode; in auth mode only once ``MEMORYBANK_ALLOWED_HOSTS`` is set, since a deployed
  server is reached by its own name and its API keys are the defence there.
* **Origin** (cross-site writes): a ``POST``, ``PUT``, ``PATCH`` or ``DELETE`` whose ``Origin``
  header names any other host (or is ``null``) gets 403, under the same condition as the
  host. Requests without ``Origin`` (the CLI, scripts, same-origin pages of old browsers)
  pass.
* **Content type** (form posts): in local mode a write with a body must send
  ``Content-Type: application/json``, the one type a cross-site page cannot send without a
  CORS preflight (which this server never grants); otherwise 415. Writes without a body pass.
* ``/metrics``: :func:`require_metrics_access` (a token, else loopback callers only).

The mode is asked of the accounts only when a request would be refused (a foreign host,
origin or content type) and no setting decides it, and a positive answer (auth mode: users
exist, and they are never deleted) is kept for :data:`AUTH_RECHECK_S` seconds, so a request
from an allowed host costs a few header comparisons.

    >>> host_name("[::1]:8000"), host_name("LocalHost:8811"), host_name("attacker.example")
    ('::1', 'localhost', 'attacker.example')
"""

from __future__ import annotations

import hmac
import ipaddress
import time
import urllib.parse
from dataclasses import dataclass

import anyio.to_thread
from fastapi import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memorybank.errors import PermissionDenied
from memorybank.server.principals import Unauthorized
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings

#: Host names every server answers to, with any port.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

#: The methods that may change something: they get the origin and content-type checks.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: How long an answer "users exist" (auth mode) is trusted before the accounts are asked again.
AUTH_RECHECK_S = 5.0

_SETTING = "MEMORYBANK_ALLOWED_HOSTS"


def host_name(authority: str) -> str:
    """The host of a ``Host`` header or of a ``MEMORYBANK_ALLOWED_HOSTS`` entry: lower case,
    without port and without the brackets of an IPv6 address."""
    value = authority.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else value
    if value.count(":") == 1:  # name:port (an IPv6 address without brackets has several)
        return value.partition(":")[0]
    return value


def origin_host(origin: str) -> str | None:
    """The host of an ``Origin`` header, or ``None`` for ``null`` and anything unparsable."""
    try:
        return urllib.parse.urlsplit(origin.strip()).hostname
    except ValueError:
        return None


def _shown(value: str) -> str:
    return repr(value[:100])


@dataclass(frozen=True)
class _Refusal:
    status: int
    message: str
    local_only: bool  # refused only in local mode (no setting decides it)


class Guard:
    """ASGI middleware refusing requests by host, origin and body type (module docstring),
    with ``{"error": …}`` saying what to change."""

    def __init__(self, app: ASGIApp, accounts: Accounts, settings: Settings) -> None:
        self.app = app
        self._accounts = accounts
        self._hosts = LOOPBACK_NAMES | {host_name(h) for h in settings.allowed_hosts}
        self._configured = bool(settings.allowed_hosts)  # checks apply in auth mode too
        self._auth_until = 0.0
        names = ["localhost", "127.0.0.1", "[::1]", *sorted(self._hosts - LOOPBACK_NAMES)]
        self._names = ", ".join(names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None and (not refusal.local_only or await self._local_mode()):
                response = JSONResponse({"error": refusal.message}, status_code=refusal.status)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> _Refusal | None:
        """The first rule ``scope`` breaks, if any (header lookups only)."""
        host = origin = ctype = None
        body = False
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
            elif name == b"content-type":
                ctype = value.decode("latin-1")
            elif name == b"content-length":
                body = value.strip() not in (b"0", b"")
            elif name == b"transfer-encoding":
                body = True
        if host is None or host_name(host) not in self._hosts:
            return self._host_refusal(host)
        if scope["method"] not in WRITE_METHODS:
            return None
        if origin is not None and origin_host(origin) not in self._hosts:
            return _Refusal(
                403,
                f"cross-site request refused: it comes from a page at {_shown(origin)} (Origin "
                f"header), and writes are accepted only from pages on {self._names}; if you "
                f"serve a web app from that host on purpose, add it to {_SETTING}",
                not self._configured,
            )
        if body and (
            ctype is None or ctype.partition(";")[0].strip().lower() != "application/json"
        ):
            got = "none" if ctype is None else _shown(ctype)
            return _Refusal(
                415,
                "send the request body as JSON with 'Content-Type: application/json' (got "
                f"{got}): without credentials (local mode) the server accepts no other body "
                "type on POST, PUT, PATCH and DELETE, so that no web page can post a form to it",
                True,
            )
        return None

    def _host_refusal(self, host: str | None) -> _Refusal:
        got = "no Host header" if host is None else f"Host {_shown(host)}"
        return _Refusal(
            421,
            f"this server does not answer to {got}: it answers to {self._names}; if you "
            f"reach it by that name, add the name to {_SETTING} (comma-separated)",
            not self._configured,
        )

    async def _local_mode(self) -> bool:
        """Whether no users are configured (local mode), asked of the accounts off the loop."""
        if time.monotonic() < self._auth_until:
            return False
        if await anyio.to_thread.run_sync(self._accounts.has_users):
            self._auth_until = time.monotonic() + AUTH_RECHECK_S
            return False
        return True


def _loopback_peer(request: Request) -> bool:
    """Whether the request came straight from this machine (not through a proxy)."""
    headers = request.headers
    if "forwarded" in headers or "x-forwarded-for" in headers:
        return False
    try:
        return request.client is not None and ipaddress.ip_address(request.client.host).is_loopback
    except ValueError:
        return False


def require_metrics_access(request: Request, settings: Settings) -> None:
    """Let ``request`` read ``/metrics``: with ``MEMORYBANK_METRICS_TOKEN`` set it must carry
    ``Authorization: Bearer <token>`` (else :class:`Unauthorized`, 401); without it, only a
    client on this machine may (else :class:`~memorybank.PermissionDenied`, 403)."""
    token = settings.metrics_token
    if token is not None:
        scheme, _, sent = request.headers.get("authorization", "").partition(" ")
        expected = token.get_secret_value().encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode(), expected):
            raise Unauthorized(
                "/metrics needs 'Authorization: Bearer <token>' with the token set in "
                "MEMORYBANK_METRICS_TOKEN"
            )
        return
    if not _loopback_peer(request):
        raise PermissionDenied(
            "/metrics answers only to clients on this machine (loopback, not through a proxy); "
            "to scrape it from elsewhere set MEMORYBANK_METRICS_TOKEN and send "
            "'Authorization: Bearer <token>'"
        )


__all__ = [
    "AUTH_RECHECK_S",
    "LOOPBACK_NAMES",
    "WRITE_METHODS",
    "Guard",
    "host_name",
    "origin_host",
    "require_metrics_access",
]
