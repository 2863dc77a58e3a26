"""Seed 002 §8's success metrics for org admins (:mod:`memorybank.services.insights`): the figures
behind the UI's Insights page. ``GET /api/stats`` (in :mod:`.data`) answers the caller's own
counts, and these metrics (30 days) beside them for whoever may see them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from memorybank.errors import PermissionDenied
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.error_responses import errors
from memorybank.server.execution import reading
from memorybank.server.principals import org_admin_of
from memorybank.services.accounts import org_users
from memorybank.services.insights import SuccessMetrics, success_metrics
from memorybank.stores.webhooks_sql import sql_webhooks

router = APIRouter(tags=["stats"])


@router.get("/api/stats/metrics", responses=errors(403, 422))
@reading
def metrics(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    window_days: Annotated[int, Query(ge=1, le=365)] = 30,
) -> SuccessMetrics:
    """Adoption, retention, token cost, save outcomes and search hit rate over the last
    ``window_days`` days: for an org admin, of their org's members and projects; in local
    mode, of the whole database. Anyone else gets 403."""
    found = metrics_for(bank, accounts, principal, window_days)
    if found is None:
        raise PermissionDenied("the success metrics are for org admins: ask one of your org's")
    return found


def metrics_for(
    bank: BankDep, accounts: AccountsDep, principal: PrincipalDep, window_days: int = 30
) -> SuccessMetrics | None:
    """The success metrics ``principal`` may see (see :func:`metrics`), or ``None``."""
    if principal.local:
        return success_metrics(bank, window_days=window_days)
    org = org_admin_of(accounts, principal)
    if org is None:
        return None
    return success_metrics(
        bank,
        users=org_users(bank, org),
        projects=sql_webhooks(bank.store).org_projects(org),
        org_id=org,
        window_days=window_days,
    )


__all__ = ["metrics_for", "router"]
