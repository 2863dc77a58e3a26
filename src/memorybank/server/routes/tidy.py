"""Tidying up: preview the duplicates a scope holds, then merge them (seed 000's
consolidation; see :mod:`memorybank.core.consolidate`).

Each call examines one page of the scope's facts within a bounded budget (issue 27: judging
every pair was quadratic) and says where to go on (``next_cursor``). A call, preview or
apply, is one unit of the caller's write limit when it starts, and then costs its caller's
read limit by the work it did: one unit per :data:`FACTS_PER_READ` facts examined (issue 34:
19 previews of 1,000 facts in 12 s held the compute pool). It runs in the compute pool in
its caller's turn, so one user's previews wait behind each other, not before others' saves.
"""

from __future__ import annotations

import math
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from memorybank.core.bank import MemoryBank
from memorybank.core.consolidate import (
    MAX_PAGE_FACTS,
    PAGE_FACTS,
    Budget,
    Consolidation,
    StoppedBy,
    consolidate,
)
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.error_responses import errors
from memorybank.server.execution import computing
from memorybank.server.principals import Action, authorize
from memorybank.server.schemas import CURSOR_MAX, ConsolidateRequest, Id

router = APIRouter(tags=["consolidate"])

#: Facts a consolidation call examines per unit of its caller's read limit.
FACTS_PER_READ = 10


def _starting(bank: MemoryBank, user_id: str) -> None:
    """A call's first unit of each limit, refused (429) when either is spent."""
    bank.writes.count_read(user_id)
    bank.writes.count(user_id)


def _charged(bank: MemoryBank, user_id: str, found: Consolidation) -> Consolidation:
    """``found``, the rest of its work charged to ``user_id``'s read limit (never refused: it
    is done; the next call waits for it)."""
    bank.writes.charge_read(user_id, math.ceil(found.examined / FACTS_PER_READ) - 1)
    return found


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


class SupersessionView(BaseModel):
    """A stored fact a newer one surely replaces: ``old`` is (or would be) superseded by
    ``new``, as a save of ``new`` would have done (issue 26)."""

    old: MergedFact
    new: MergedFact


class ConsolidationView(BaseModel):
    """What consolidating one page of a scope finds (a preview) or did (``applied``).
    ``truncated`` says facts are left: ask again with ``cursor=next_cursor``."""

    user_id: str
    project_id: str | None
    applied: bool
    examined: int
    pairs_judged: int
    remaining: int
    truncated: bool
    next_cursor: str | None
    stopped_by: StoppedBy | None
    merged_count: int
    merges: list[MergeView]
    superseded_count: int
    supersessions: list[SupersessionView]
    proposed_count: int
    proposals: list[SupersessionView] = Field(
        description="Replacements left to a person: the newer fact's author could not have "
        "retired the older one by a save (a member's fact over an owner's); never applied here"
    )
    proposed_merges: list[MergeView] = Field(
        description="Merges left to a person, for the same reason (the kept fact's author)"
    )


def _view(result: Consolidation) -> ConsolidationView:
    return ConsolidationView.model_validate(result.as_dict())


@router.get("/api/consolidate", responses=errors(404, 422, 429))
@computing
def preview_consolidation(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    project_id: Annotated[Id | None, Query()] = None,
    cursor: Annotated[str | None, Query(max_length=CURSOR_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_FACTS)] = PAGE_FACTS,
) -> ConsolidationView:
    """What merging the duplicates of one page of the caller's private memory (or
    ``project_id``'s) would do, from ``cursor``, examining at most ``limit`` facts; changes
    nothing."""
    role = authorize(accounts, principal, Action.VIEW, project_id)
    _starting(bank, principal.user_id)
    found = consolidate(
        bank,
        principal.user_id,
        project_id,
        role=role,
        cursor=cursor,
        budget=Budget(facts=limit),
        roles=accounts.author_role,
    )
    return _view(_charged(bank, principal.user_id, found))


@router.post("/api/consolidate", responses=errors(404, 429))
@computing
def apply_consolidation(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, body: ConsolidateRequest
) -> ConsolidationView:
    """Merge the duplicates of the page a preview showed (its ``cursor`` and ``limit``;
    those of ``keep_ids`` only, when given): a project's admins and owners only. What the
    newer fact's author could not have retired by a save stays, listed in ``proposals``."""
    role = authorize(accounts, principal, Action.CHANGE, body.project_id)
    _starting(bank, principal.user_id)
    result = consolidate(
        bank,
        principal.user_id,
        body.project_id,
        dry_run=False,
        only=body.keep_ids,
        role=role,
        cursor=body.cursor,
        budget=Budget(facts=body.limit),
        roles=accounts.author_role,
    )
    return _view(_charged(bank, principal.user_id, result))
