"""Finding memories: hybrid search (optionally across an org) and the newest first."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep, tool_context
from memorybank.server.errors import ERROR_RESPONSES
from memorybank.server.execution import reading, searching
from memorybank.server.permissions import Action, authorize
from memorybank.server.schemas import (
    IdParam,
    NameParam,
    SearchText,
    SinceParam,
    memory_json,
)

router = APIRouter(tags=["memories"], responses=ERROR_RESPONSES)


@router.get("/api/search")
@searching
def search(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    q: SearchText,
    project_id: IdParam = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    category: NameParam = None,
    scopes: Literal["all", "user", "project"] = "all",
    org_wide: bool = False,
    min_relevance: Annotated[float, Query(ge=0.0, le=1.0)] = 0.0,
) -> dict[str, Any]:
    """Hybrid search; ``org_wide`` (org admins only) searches every org member's private
    memories; ``min_relevance`` keeps only hits at least that relevant (calibrated, 0–1)."""
    if project_id is not None:
        authorize(accounts, principal, Action.VIEW, project_id)
    if org_wide:
        users = bank.org_readers(tool_context(accounts, principal, None), "org_wide")
        hits = [
            hit
            for user in users
            for hit in bank.search(
                user, q, scopes="user", limit=limit, category=category, min_relevance=min_relevance
            )
        ]
        hits = sorted(hits, key=lambda h: h.score, reverse=True)[:limit]
    else:
        hits = bank.search(
            principal.user_id,
            q,
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            category=category,
            min_relevance=min_relevance,
        )
    return {
        "hits": [
            {
                "memory": memory_json(h.memory),
                "score": h.score,
                "relevance": h.relevance,
                "importance": h.importance,
                "recency": h.recency,
            }
            for h in hits
        ]
    }


@router.get("/api/recent")
@reading
def recent(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    since: SinceParam = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 30,
    project_id: IdParam = None,
) -> dict[str, Any]:
    """Newest memories first (``since``: 24h, 7d, 30d, 90d, a number with h/d/w up to 100
    years, or an ISO datetime)."""
    if project_id is not None:
        authorize(accounts, principal, Action.VIEW, project_id)
    memories = bank.recent(principal.user_id, project_id=project_id, since=since, limit=limit)
    return {"memories": [memory_json(m) for m in memories], "count": len(memories)}


__all__ = ["router"]
