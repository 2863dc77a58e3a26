"""Operations: liveness and Prometheus metrics (no auth)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from fastapi.responses import PlainTextResponse

from memorybank.server.deps import BankDep, MetricsDep
from memorybank.server.errors import ERROR_RESPONSES
from memorybank.server.metrics import CONTENT_TYPE

router = APIRouter(tags=["ops"], responses=ERROR_RESPONSES)


@router.get("/healthz")
def healthz(bank: BankDep) -> dict[str, Any]:
    """Liveness, with the number of stored memories (no auth)."""
    return {"status": "ok", "memories": int(bank.stats().get("memories", 0))}


@router.get("/metrics", response_class=PlainTextResponse)
def prometheus(metrics: MetricsDep) -> Response:
    """Prometheus metrics: request counts and latencies by route, memories stored."""
    return Response(metrics.render(), media_type=CONTENT_TYPE)


__all__ = ["router"]
