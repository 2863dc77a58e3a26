"""Tidying up: preview the duplicates a scope holds, then merge them (seed 000's
consolidation; see :mod:`memorybank.consolidate`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.errors import ERROR_RESPONSES
from memorybank.server.permissions import Action, authorize
from memorybank.server.schemas import ConsolidateRequest, Id

router = APIRouter(tags=["consolidate"], responses=ERROR_RESPONSES)


@router.get("/api/consolidate")
def preview_consolidation(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    project_id: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """What merging the duplicates of the caller's private memory (or ``project_id``'s)
    would do; changes nothing."""
    role = authorize(accounts, principal, Action.VIEW, project_id)
    return bank.consolidate(principal.user_id, project_id, role=role).as_dict()


@router.post("/api/consolidate")
def apply_consolidation(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, body: ConsolidateRequest
) -> dict[str, Any]:
    """Merge the duplicates (those of ``keep_ids`` only, when given): a project's admins
    and owners only."""
    role = authorize(accounts, principal, Action.CHANGE, body.project_id)
    result = bank.consolidate(
        principal.user_id, body.project_id, dry_run=False, only=body.keep_ids, role=role
    )
    return result.as_dict()
