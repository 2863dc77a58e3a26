"""Tidying up: preview the duplicates a scope holds, then merge them (seed 000's
consolidation; see :mod:`memorybank.core.consolidate`)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from memorybank.core.consolidate import Consolidation, consolidate
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.error_responses import errors
from memorybank.server.principals import Action, authorize
from memorybank.server.schemas import ConsolidateRequest, Id

router = APIRouter(tags=["consolidate"])


class MergedFact(BaseModel):
    """One memory of a merge: its id and text."""

    id: str
    content: str


class MergeView(BaseModel):
    """One merge: the memory kept and those merged into it, with the kept one's importance
    and tags after the merge."""

    keep: MergedFact
    merged: list[MergedFact]
    importance: int
    tags: list[str]


class ConsolidationView(BaseModel):
    """What consolidating a scope finds (a preview) or did (``applied``)."""

    user_id: str
    project_id: str | None
    applied: bool
    examined: int
    merged_count: int
    merges: list[MergeView]


def _view(result: Consolidation) -> ConsolidationView:
    return ConsolidationView.model_validate(result.as_dict())


@router.get("/api/consolidate", responses=errors(404, 422))
def preview_consolidation(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    project_id: Annotated[Id | None, Query()] = None,
) -> ConsolidationView:
    """What merging the duplicates of the caller's private memory (or ``project_id``'s)
    would do; changes nothing."""
    role = authorize(accounts, principal, Action.VIEW, project_id)
    return _view(consolidate(bank, principal.user_id, project_id, role=role))


@router.post("/api/consolidate", responses=errors(404))
def apply_consolidation(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, body: ConsolidateRequest
) -> ConsolidationView:
    """Merge the duplicates (those of ``keep_ids`` only, when given): a project's admins
    and owners only."""
    role = authorize(accounts, principal, Action.CHANGE, body.project_id)
    result = consolidate(
        bank, principal.user_id, body.project_id, dry_run=False, only=body.keep_ids, role=role
    )
    return _view(result)
