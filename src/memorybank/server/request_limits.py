"""Request limits of the server: body size and clear-all tokens. (The per-user write rate
belongs to the bank, so that MCP and the tools spend the same budget as REST:
:mod:`memorybank.rules.limits`.)

All in memory, per process: a restart forgets pending confirmations, which only ever errs
towards asking again.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memorybank.errors import MemoryBankError, ValidationError


class TooLarge(MemoryBankError):
    """A request body over the configured limit (HTTP 413)."""


@dataclass(frozen=True)
class _Pending:
    user_id: str
    scope_key: str
    expires: float


class ConfirmTokens:
    """Single-use, short-lived tokens confirming a destructive request, bound to the user and
    the scope they were issued for."""

    def __init__(self, ttl_s: float = 300.0, clock: Any = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def issue(self, user_id: str, scope_key: str) -> str:
        """A new token for ``user_id`` to confirm an action on ``scope_key``."""
        token = "ct_" + secrets.token_urlsafe(24)
        now = self._clock()
        with self._lock:
            self._pending = {k: v for k, v in self._pending.items() if v.expires > now}
            self._pending[token] = _Pending(user_id, scope_key, now + self.ttl_s)
        return token

    def redeem(self, token: str, user_id: str, scope_key: str) -> None:
        """Use up ``token``; :class:`ValidationError` if it is unknown, used, expired, or was
        issued to someone else or for another scope."""
        with self._lock:
            pending = self._pending.get(token)
            if pending is None or pending.user_id != user_id or pending.scope_key != scope_key:
                raise ValidationError(
                    "confirm_token is unknown, used or not for this memory: ask for a new one "
                    "by posting without a body",
                    field="confirm_token",
                )
            del self._pending[token]
            if pending.expires <= self._clock():
                raise ValidationError(
                    "confirm_token expired: ask for a new one by posting without a body",
                    field="confirm_token",
                )


class BodyLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` with 413 and a JSON error:
    at once when ``Content-Length`` says so, else while the body streams in."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return f"the request body is over the limit of {self.max_bytes} bytes; send less"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            from starlette.responses import JSONResponse

            response = JSONResponse({"error": self._message()}, status_code=413)
            await response(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # An HTTPException, which FastAPI lets through its body parsing as is.
                    raise HTTPException(status_code=413, detail=self._message())
            return message

        await self.app(scope, limited, send)


__all__ = ["BodyLimit", "ConfirmTokens", "TooLarge"]
