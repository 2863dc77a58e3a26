"""Identity: who is calling, in which mode, and their projects."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memorybank.core.bank import MemoryBank
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.execution import reading
from memorybank.server.openapi import documented
from memorybank.server.principals import org_admin_of
from memorybank.server.schemas import Me, ProjectView
from memorybank.services.accounts import Accounts

router = APIRouter(tags=["account"])


def local_projects(bank: MemoryBank, accounts: Accounts) -> list[ProjectView]:
    """Local mode's projects: every project holding memories (its one user owns them all),
    named as the accounts name it when they know it."""
    views = []
    for project_id in bank.store.project_ids():
        known = accounts.project(project_id)
        name = known.name if known is not None and known.name else project_id
        views.append(ProjectView(id=project_id, name=name, role="owner"))
    return views


@router.get("/api/me", responses=documented(Me))
@reading
def get_me(principal: PrincipalDep, bank: BankDep, accounts: AccountsDep) -> dict[str, Any]:
    """Who is calling, in which mode, and their projects."""
    # Local mode: every project that holds memories, each as owner (local_projects).
    if principal.local:
        projects = local_projects(bank, accounts)
    else:
        projects = [
            ProjectView(id=p.id, name=p.name, role=r)
            for p, r in accounts.projects(principal.user_id)
        ]
    return Me(
        user_id=principal.user_id,
        name=principal.name,
        mode=principal.mode,
        projects=projects,
        org_admin=org_admin_of(accounts, principal) is not None,
    ).model_dump()


__all__ = ["local_projects", "router"]
