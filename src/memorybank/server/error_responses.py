"""The error answers of the HTTP API: always ``{"error": "<what to fix>"}``.

:func:`status_code` is the one mapping from the :class:`~memorybank.MemoryBankError` tree to
HTTP statuses; :func:`register_error_handlers` makes every route answer through it, and turns
FastAPI's own errors (bad JSON, invalid parameters, ``HTTPException``) into the same body.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
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
from memorybank.server.schemas import BODY_SHAPES, ErrorBody


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
    429: (
        "Over one of this user's limits (writes a minute, webhook test sends a minute, open "
        "event streams): retry after Retry-After seconds"
    ),
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
    named by where it is); when the body is at fault, an example of the body the route
    takes follows, so the answer shows the expected shape."""
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        message = "the request body is not valid JSON" + expected_body(request)
        return JSONResponse({"error": message}, status_code=400)
    parts = []
    for error in errors:
        where = [str(p) for p in error["loc"][1:]]
        if where and error["loc"][0] == "body" and where[0] in BODY_SHAPES:
            where = where[1:]  # the shape pydantic chose names no field
        parts.append(f"{'.'.join(where) or error['loc'][0]}: {reason(error)}")
    message = "; ".join(parts)
    if any(error["loc"][:1] == ("body",) for error in errors):
        message += expected_body(request)
    return JSONResponse({"error": message}, status_code=422)


def expected_body(request: Request) -> str:
    """`` — expected a body like {…}`` for the route ``request`` reached (each shape, for a
    body that has several), or nothing when it takes no body."""
    field = getattr(request.scope.get("route"), "body_field", None)
    if field is None:
        return ""
    shapes = [json.dumps(e, ensure_ascii=False) for e in body_examples(field.field_info.annotation)]
    return f" — expected a body like {' or '.join(shapes)}" if shapes else ""


def body_examples(annotation: Any) -> list[Any]:
    """An example of each body model in a route's body annotation (``AddFact``,
    ``ClearRequest | None``, the tagged union of ``POST /api/memories``): the model's own
    example (:func:`memorybank.server.schemas.example`), else its required fields."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        extra = annotation.model_config.get("json_schema_extra")
        examples = extra.get("examples") if isinstance(extra, dict) else None
        return [examples[0] if isinstance(examples, list) and examples else sketch(annotation)]
    return [e for arg in typing.get_args(annotation) for e in body_examples(arg)]


def sketch(model: type[BaseModel]) -> dict[str, Any]:
    """A body of ``model`` with only its required fields, each a placeholder of its type."""
    return {
        name: _placeholder(field.annotation)
        for name, field in model.model_fields.items()
        if field.is_required()
    }


def _placeholder(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return typing.get_args(annotation)[0]
    if origin in (list, tuple, set) or annotation in (list, tuple, set):
        return []
    if origin is dict or annotation is dict:
        return {}
    if origin in (typing.Union, types.UnionType):
        return _placeholder(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return sketch(annotation)
    simple: dict[Any, Any] = {bool: True, int: 1, float: 0.5}
    return simple.get(annotation, "…")


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
