"""Identity: who is calling, in which mode, and their projects."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memorybank.server.deps import AccountsDep, PrincipalDep
from memorybank.server.openapi import documented
from memorybank.server.principals import org_admin_of
from memorybank.server.schemas import Me, ProjectView

router = APIRouter(tags=["account"])


@router.get("/api/me", responses=documented(Me))
def get_me(principal: PrincipalDep, accounts: AccountsDep) -> dict[str, Any]:
    """Who is calling, in which mode, and their projects."""
    projects = [] if principal.local else accounts.projects(principal.user_id)
    return Me(
        user_id=principal.user_id,
        name=principal.name,
        mode=principal.mode,
        projects=[ProjectView(id=p.id, name=p.name, role=r) for p, r in projects],
        org_admin=org_admin_of(accounts, principal) is not None,
    ).model_dump()


__all__ = ["router"]
