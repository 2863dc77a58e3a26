"""Operations: liveness (no auth, says nothing about the data) and Prometheus metrics (a
token, else loopback clients only: :func:`~memorybank.server.guard.require_metrics_access`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import PlainTextResponse

from memorybank.server.deps import MetricsDep, SettingsDep
from memorybank.server.guard import require_metrics_access
from memorybank.server.metrics import CONTENT_TYPE
from memorybank.server.openapi import documented
from memorybank.server.schemas import Health

router = APIRouter(tags=["ops"])

#: /metrics answers Prometheus text, and its refusals JSON like every error.
_METRICS_REFUSALS: dict[int | str, dict[str, Any]] = {
    code: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for code, description in (
        (401, "MEMORYBANK_METRICS_TOKEN is set and the request lacks it as a bearer token"),
        (403, "No token is set and the caller is not on this machine"),
    )
}


@router.get("/healthz", responses=documented(Health))
def healthz() -> dict[str, str]:
    """Liveness: ``{"status": "ok"}`` (no auth, so nothing about what is stored)."""
    return {"status": "ok"}


@router.get("/metrics", response_class=PlainTextResponse, responses=_METRICS_REFUSALS)
def prometheus_metrics(request: Request, metrics: MetricsDep, settings: SettingsDep) -> Response:
    """Prometheus metrics: request counts and latencies by route, memories stored. With
    ``MEMORYBANK_METRICS_TOKEN`` set it needs ``Authorization: Bearer <token>``; without it,
    only clients on this machine get it (403 otherwise)."""
    require_metrics_access(request, settings)
    return Response(metrics.render(), media_type=CONTENT_TYPE)


__all__ = ["router"]
