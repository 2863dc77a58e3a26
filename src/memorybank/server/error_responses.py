"""The error answers of the HTTP API: always ``{"error": "<what to fix>"}``.

:func:`status_code` is the one mapping from the :class:`~memorybank.MemoryBankError` tree to
HTTP statuses; :func:`register_error_handlers` makes every route answer through it, and turns
FastAPI's own errors (bad JSON, invalid parameters, ``HTTPException``) into the same body.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from memorybank.errors import (
    MemoryBankError,
    NotFound,
    PermissionDenied,
    ProviderError,
    RateLimited,
    StoreError,
    ValidationError,
)
from memorybank.rules.pydantic_errors import reason
from memorybank.server.principals import Unauthorized
from memorybank.server.request_limits import TooLarge
from memorybank.server.schemas import ErrorBody


class StateConflict(MemoryBankError):
    """The request clashes with what is stored (HTTP 409); ``extra`` joins the error body."""

    def __init__(self, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.extra = extra


#: What each error status of the API means, for the OpenAPI schema. A route documents the
#: ones it can answer with :func:`errors`; :mod:`memorybank.server.openapi` adds those every
#: route of a kind shares (401 for ``/api``, 413 and 415 for a body, 421 for all, 422 for
#: parameters), so each operation lists exactly what it may answer.
ERROR_TEXT: dict[int, str] = {
    400: "The request body is not valid JSON",
    401: "No valid API key (auth mode only)",
    403: "The caller's role does not allow this, or a write from another site's page",
    404: "No such memory, plan, thread, profile or project, or not the caller's",
    405: "The path exists, but not with this method",
    409: "Already remembered, or memory is off for the thread",
    413: "The request body is over the size limit",
    415: "The body is not sent as Content-Type: application/json",
    421: "The Host header is not an allowed host (MEMORYBANK_ALLOWED_HOSTS)",
    422: "A parameter or field is invalid",
    429: "Too many writes by this user in a minute: retry after Retry-After seconds",
    502: "The model provider failed",
    503: "The database refused the write (read-only, or locked for too long)",
    507: "The disk is full",
}

#: The statuses of a route that writes to the database.
WRITE_ERRORS = (503, 507)


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of these error statuses, each ``{"error": …}``:
    ``@router.get(..., responses=errors(404))``."""
    return {code: {"model": ErrorBody, "description": ERROR_TEXT[code]} for code in codes}


def status_code(exc: MemoryBankError) -> int:
    """The HTTP status of a memorybank error (the one mapping of the API)."""
    mapping: tuple[tuple[type[MemoryBankError], int], ...] = (
        (Unauthorized, 401),
        (PermissionDenied, 403),
        (NotFound, 404),
        (StateConflict, 409),
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
    if isinstance(exc, StateConflict):
        body.update(exc.extra)
    if isinstance(exc, ValidationError) and exc.field:
        body["field"] = exc.field  # which input to fix, for clients that re-raise it
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body, status_code=status_code(exc), headers=headers)


async def memorybank_error(request: Request, exc: MemoryBankError) -> JSONResponse:
    """Any :class:`~memorybank.MemoryBankError` a route raises."""
    return error_response(exc)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """An ``HTTPException`` — Starlette's (an unknown route, a body that is not UTF-8) or
    FastAPI's (413 from :class:`~memorybank.server.request_limits.BodyLimit` while a body streams
    in) — in the same body."""
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)


async def request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """A body that is not JSON (400), or parameters and fields that are invalid (422, each
    named by where it is)."""
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return JSONResponse({"error": "the request body is not valid JSON"}, status_code=400)
    parts = [
        f"{'.'.join(str(p) for p in error['loc'][1:]) or 'request'}: {reason(error)}"
        for error in errors
    ]
    return JSONResponse({"error": "; ".join(parts)}, status_code=422)


def register_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` with ``{"error": …}`` and its status."""
    app.exception_handler(MemoryBankError)(memorybank_error)
    app.exception_handler(HTTPException)(http_error)
    app.exception_handler(RequestValidationError)(request_error)


__all__ = [
    "ERROR_TEXT",
    "WRITE_ERRORS",
    "StateConflict",
    "errors",
    "error_response",
    "register_error_handlers",
    "status_code",
]
