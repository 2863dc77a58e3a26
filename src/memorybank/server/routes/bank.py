""":class:`~memorybank.MemoryBank`'s own calls over HTTP, with every argument the library
takes: saving facts and conversation turns (one or a batch), listing with filters,
counting, and deleting several at once. :class:`memorybank.Client` uses them; the routes
beside this one serve the UI's shapes (seed 002's user and drive memory)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from memorybank.core.bank import MemoryBank
from memorybank.core.writes import writing
from memorybank.errors import PermissionDenied
from memorybank.model import MemoryFilter, SaveInput
from memorybank.rules.intake import is_conversation
from memorybank.rules.limits import PAGE_MAX
from memorybank.rules.permissions import Action
from memorybank.rules.quoted import check_client_marks
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.error_responses import WRITE_ERRORS
from memorybank.server.execution import computing, reading
from memorybank.server.openapi import documented
from memorybank.server.principals import USER_HEADER, Principal, authorize
from memorybank.server.routes.search import SearchFilters
from memorybank.server.schemas import (
    Count,
    DeletedIds,
    DeleteRequest,
    IdParam,
    MemoryList,
    SaveBody,
    SaveRequest,
    SaveResults,
    memory_list_json,
)

router = APIRouter(tags=["memories"])

Scopes = Literal["all", "user", "project"]
Order = Literal["created_desc", "created_asc", "importance_desc"]
Superseded = Annotated[
    bool | None,
    Query(description="false: only current memories; true: only those a newer one replaced"),
]


def memory_page(
    bank: MemoryBank,
    user_id: str,
    project_id: str | None,
    scopes: Scopes,
    limit: int,
    offset: int,
    filters: MemoryFilter,
    order: Order = "created_desc",
) -> dict[str, Any]:
    """A page of the memories in ``scopes`` that meet ``filters``, and how many do in all,
    as :class:`MemoryList`."""
    memories = bank.list(
        user_id,
        filters,
        project_id=project_id,
        scopes=scopes,
        limit=limit,
        offset=offset,
        order=order,
    )
    total = bank.count(user_id, filters, project_id=project_id, scopes=scopes)
    return memory_list_json(memories, bank, total)


def check_caller(principal: Principal, user_id: str | None) -> None:
    """:class:`~memorybank.PermissionDenied` when a body names a ``user_id`` other than the
    caller's, saying how to act for that user: the API key or local mode's header decides
    who a request acts for, never the body."""
    if user_id is None or user_id == principal.user_id:
        return
    how = (
        f"send the header {USER_HEADER}: {user_id}"
        if principal.local
        else f"use {user_id}'s API key"
    )
    raise PermissionDenied(
        f"this request acts for {principal.user_id!r}, not {user_id!r}: to act for "
        f"{user_id!r}, {how} (user_id in the body may be left out)"
    )


@router.post(
    "/api/memories",
    responses=documented(SaveResults, 404, 429, *WRITE_ERRORS),
)
@computing
def save_memories(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, body: SaveBody
) -> dict[str, Any]:
    """Save facts or conversation turns as :meth:`~memorybank.MemoryBank.save_many` does:
    all or nothing, a duplicate is a result (``duplicate: true``), not an error. The body is
    a batch (``{"items": [...]}``) or one item's fields (``{"content": …}``). Charged against
    the caller's write limit by what it stores: one unit per fact or chunk of a turn, and a
    batch the limit cannot hold is refused whole (429). In a project, a member may save what
    an app or the AI says (``source: "api"``, the default, or ``"ai"``) and admins and owners
    what the user typed."""
    batch = body if isinstance(body, SaveRequest) else body.batch()
    check_caller(principal, batch.user_id)
    role = authorize(accounts, principal, Action.VIEW, batch.project_id)
    for item in batch.items:
        if is_conversation(item.ring, item.source):  # who said it is the server's word
            check_client_marks(item.metadata)
    items = [
        SaveInput.model_validate({**item.model_dump(), "created_by": principal.user_id})
        for item in batch.items
    ]
    with writing(bank, principal.user_id):
        results = bank.save_many(
            principal.user_id,
            items,
            project_id=batch.project_id,
            role=role,
            on_conflict=batch.on_conflict,
        )
    return {"results": [r.model_dump(mode="json") for r in results]}


@router.get("/api/memories", responses=documented(MemoryList, 404))
@reading
def list_memories(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    filters: SearchFilters,
    project_id: IdParam = None,
    scopes: Scopes = "all",
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 50,
    offset: Annotated[int, Query(ge=0, lt=2**63)] = 0,
    order: Order = "created_desc",
    superseded: Superseded = None,
) -> dict[str, Any]:
    """A page of the caller's memories in the chosen scopes, with the total count."""
    authorize(accounts, principal, Action.VIEW, project_id)
    if superseded is not None:
        filters = filters.model_copy(update={"superseded": superseded})
    return memory_page(
        bank, principal.user_id, project_id, scopes, limit, offset, filters, order=order
    )


@router.get("/api/memories/count", responses=documented(Count, 404))
@reading
def count_memories(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    filters: SearchFilters,
    project_id: IdParam = None,
    scopes: Scopes = "all",
    superseded: Superseded = None,
) -> dict[str, Any]:
    """How many memories the caller has in the chosen scopes, meeting the filters."""
    authorize(accounts, principal, Action.VIEW, project_id)
    if superseded is not None:
        filters = filters.model_copy(update={"superseded": superseded})
    return {"count": bank.count(principal.user_id, filters, project_id=project_id, scopes=scopes)}


@router.post("/api/memories/delete", responses=documented(DeletedIds, 404, *WRITE_ERRORS))
@computing
def delete_memories(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, body: DeleteRequest
) -> dict[str, Any]:
    """Delete several memories in one transaction, as :meth:`~memorybank.MemoryBank.delete_many`
    does: the caller's private ones, and with ``project_id`` that project's (admins and
    owners, 403 for a member). Answers the ids deleted; one not in those scopes is left out."""
    role = authorize(accounts, principal, Action.VIEW, body.project_id)
    deleted = bank.delete_many(
        body.ids, principal.user_id, project_id=body.project_id, actor=principal.user_id, role=role
    )
    return {"deleted": deleted}


__all__ = ["router"]
