"""A minimal FastAPI app over one :class:`~memorybank.MemoryBank` (the full API comes later).

    GET /healthz                                        → {"status": "ok", "memories": N}
    GET /api/memories?user_id=…&project_id=…&limit=50&offset=0
                                                        → {"memories": [...], "count": total}

Errors of the :class:`~memorybank.MemoryBankError` tree become ``{"error": message}`` with
the matching HTTP status, in one exception handler. Endpoints are plain ``def`` functions run
in the thread pool: the store is thread-safe (one SQLite connection per thread).

    >>> import uvicorn, memorybank  # doctest: +SKIP
    >>> uvicorn.run(create_app(memorybank.open()), host="127.0.0.1", port=8000)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from memorybank import __version__
from memorybank.bank import MemoryBank
from memorybank.errors import MemoryBankError, NotFound, PermissionDenied, ValidationError


def status_code(exc: MemoryBankError) -> int:
    """The HTTP status of a memorybank error."""
    if isinstance(exc, ValidationError):
        return 422
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, PermissionDenied):
        return 403
    return 500


def create_app(bank: MemoryBank) -> FastAPI:
    """The app serving ``bank``. The caller owns the bank and closes it after serving."""
    app = FastAPI(title="memorybank", version=__version__)
    app.state.bank = bank

    @app.exception_handler(MemoryBankError)
    async def memorybank_error(request: Request, exc: MemoryBankError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=status_code(exc))

    @app.exception_handler(RequestValidationError)
    async def request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Malformed query parameters (limit=abc) get the same shape as our own errors.
        parts = [
            f"{'.'.join(str(p) for p in error['loc'][1:]) or 'request'}: {error['msg']}"
            for error in exc.errors()
        ]
        return JSONResponse({"error": "; ".join(parts)}, status_code=422)

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        """Liveness, with the number of stored memories."""
        return {"status": "ok", "memories": int(bank.stats().get("memories", 0))}

    @app.get("/api/memories")
    def list_memories(
        user_id: str | None = None,
        project_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> dict[str, Any]:
        """A page of the user's memories (newest first) and how many there are in all."""
        if not user_id:
            raise ValidationError(
                "user_id is required: pass ?user_id=<the user's id>", field="user_id"
            )
        memories = bank.list(user_id, project_id=project_id, limit=limit, offset=offset)
        total = bank.count(user_id, project_id=project_id)
        return {"memories": [m.model_dump(mode="json") for m in memories], "count": total}

    return app


__all__ = ["create_app", "status_code"]
