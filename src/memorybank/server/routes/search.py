"""Finding memories: hybrid search (optionally across an org) and the newest first."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from memorybank.errors import ValidationError
from memorybank.model import Domain, MemoryFilter, Ring, Source
from memorybank.rules.filtering import memory_filter
from memorybank.rules.limits import PAGE_MAX
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep, caller_of
from memorybank.server.execution import reading
from memorybank.server.openapi import documented
from memorybank.server.principals import Action, authorize
from memorybank.server.schemas import (
    QUERY_MAX,
    TAG_MAX,
    TAGS_MAX,
    IdParam,
    MemoryList,
    SearchResults,
    SearchText,
    SinceParam,
    memory_list_json,
)
from memorybank.services.accounts import org_readers

router = APIRouter(tags=["search"])


async def search_filters(
    category: Annotated[list[str] | None, Query(max_length=TAGS_MAX)] = None,
    tags: Annotated[list[str] | None, Query(max_length=TAGS_MAX)] = None,
    ring: Annotated[list[Ring] | None, Query()] = None,
    domain: Annotated[list[Domain] | None, Query()] = None,
    source: Annotated[list[Source] | None, Query()] = None,
    min_importance: Annotated[int | None, Query(ge=1, le=10)] = None,
    since: SinceParam = None,
    until: datetime | None = None,
    session_id: IdParam = None,
    metadata: Annotated[
        str | None,
        Query(max_length=QUERY_MAX, description='JSON object the metadata must hold: {"k": "v"}'),
    ] = None,
) -> MemoryFilter:
    """The optional conditions of a search or a listing: the :class:`MemoryFilter` the
    bank's search, list and count take (a list matches any of its values). Async: it
    computes nothing, so it needs no thread."""
    for name, values in (("category", category), ("tags", tags)):
        if values and any(len(value) > TAG_MAX for value in values):
            raise ValidationError(f"{name}: at most {TAG_MAX} characters each", field=name)
    return memory_filter(
        category=category or None,
        tags=tags or None,
        ring=ring or None,
        domain=domain or None,
        source=source or None,
        min_importance=min_importance,
        since=since,
        until=until,
        session_id=session_id,
        metadata=None if metadata is None else metadata_condition(metadata),
    )


def metadata_condition(text: str) -> dict[str, Any]:
    """The ``metadata`` query parameter: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise ValidationError(
            'metadata: send a JSON object, e.g. {"topic": "work"}', field="metadata"
        )
    return value


#: The optional conditions of a search or a listing.
SearchFilters = Annotated[MemoryFilter, Depends(search_filters)]


@router.get("/api/search", responses=documented(SearchResults, 403, 404))
@reading
def search_memories(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    filters: SearchFilters,
    q: SearchText,
    project_id: IdParam = None,
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 10,
    scopes: Literal["all", "user", "project"] = "all",
    org_wide: bool = False,
    include_superseded: bool = False,
    min_relevance: Annotated[float, Query(ge=0.0, le=1.0)] = 0.0,
) -> dict[str, Any]:
    """Hybrid search; ``org_wide`` (org admins only) searches every org member's private
    memories; ``min_relevance`` keeps only hits at least that relevant (calibrated, 0–1).
    Each hit has the memory, its score and the parts of the score."""
    authorize(accounts, principal, Action.VIEW, project_id)
    if org_wide:
        users = org_readers(bank, caller_of(accounts, principal, None), "org_wide")
        if len(users) > 1:  # one search per member: charged by the work, before it is done
            bank.writes.count_read(principal.user_id, len(users) - 1)
        hits = [
            hit
            for user in users
            for hit in bank.search(
                user,
                q,
                filters,
                scopes="user",
                limit=limit,
                include_superseded=include_superseded,
                min_relevance=min_relevance,
            )
        ]
        hits = sorted(hits, key=lambda h: h.score, reverse=True)[:limit]
    else:
        hits = bank.search(
            principal.user_id,
            q,
            filters,
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            include_superseded=include_superseded,
            min_relevance=min_relevance,
        )
    return {"hits": [h.model_dump(mode="json") for h in hits]}


@router.get("/api/recent", responses=documented(MemoryList, 404))
@reading
def recent_memories(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    filters: SearchFilters,
    limit: Annotated[int, Query(ge=1, le=500)] = 30,
    project_id: IdParam = None,
    scopes: Literal["all", "user", "project"] = "all",
    include_superseded: bool = False,
) -> dict[str, Any]:
    """Newest memories first (``since``: 24h, 7d, 30d, 90d, a number with h/d/w up to 100
    years, or an ISO datetime)."""
    authorize(accounts, principal, Action.VIEW, project_id)
    current = filters.model_copy(update={"superseded": None if include_superseded else False})
    memories = bank.list(
        principal.user_id, current, project_id=project_id, scopes=scopes, limit=limit
    )
    return memory_list_json(memories, bank, len(memories))


__all__ = ["SearchFilters", "router", "search_filters"]
