"""Forgetting in two steps: preview a plan, then confirm or cancel it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memorybank.core.bank import MemoryBank
from memorybank.errors import NotFound
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep, SettingsDep, llm_for
from memorybank.server.error_responses import WRITE_ERRORS
from memorybank.server.openapi import documented
from memorybank.server.principals import Action, Principal, authorize
from memorybank.server.schemas import Cancelled, ForgetDone, ForgetPreview, ForgetRequest
from memorybank.services.accounts import Accounts
from memorybank.services.forget import (
    find_plan,
    forget_cancel,
    forget_confirm,
    forget_preview,
    preview_json,
)
from memorybank.tools import Caller

router = APIRouter(tags=["forget"])


@router.post(
    "/api/forget/preview",
    responses=documented(ForgetPreview, 404, 429, 502, *WRITE_ERRORS),
)
def preview_forget(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    settings: SettingsDep,
    body: ForgetRequest,
) -> dict[str, Any]:
    """Plan what forgetting ``query`` would do (changes nothing). One unit of the caller's
    write limit, as a write: it stores a plan and may ask an LLM (429 over the limit)."""
    if body.project_id is not None:
        authorize(accounts, principal, Action.CHANGE, body.project_id)
    bank.writes.count(principal.user_id)
    caller = Caller(user_id=principal.user_id, project_id=body.project_id)
    with llm_for(accounts, principal, settings) as llm:
        preview = forget_preview(bank, caller, body.query, llm=llm)
    return preview_json(preview)


def plan_context(
    bank: MemoryBank, accounts: Accounts, principal: Principal, plan_id: str
) -> Caller:
    """Where the caller's plan ``plan_id`` acts, after checking they may delete there: the
    same 404 for a plan that does not exist, another user's, and one in a project the caller
    has left (never named); 403 for a member lacking the role."""
    missing = NotFound(f"no forget plan {plan_id!r} for this user")  # the library's words
    plan = find_plan(bank, plan_id) if plan_id.startswith("fp_") else None
    if plan is None or plan.user_id != principal.user_id:
        raise missing
    try:
        role = authorize(accounts, principal, Action.CHANGE, plan.project_id)
    except NotFound:
        raise missing from None
    return Caller(user_id=principal.user_id, project_id=plan.project_id, role=role)


@router.post(
    "/api/forget/{plan_id}/confirm",
    responses=documented(ForgetDone, 404, *WRITE_ERRORS),
)
def confirm_forget(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, plan_id: str
) -> dict[str, Any]:
    """Carry out a previewed plan, atomically."""
    result = forget_confirm(bank, plan_context(bank, accounts, principal, plan_id), plan_id)
    return {
        "forgotten": len(result.forgotten),
        "rewritten": len(result.rewritten),
        "redacted": len(result.redacted),
        "kept": result.kept,
    }


@router.post(
    "/api/forget/{plan_id}/cancel",
    responses=documented(Cancelled, 404, *WRITE_ERRORS),
)
def cancel_forget(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, plan_id: str
) -> dict[str, Any]:
    """Drop a pending plan."""
    forget_cancel(bank, plan_context(bank, accounts, principal, plan_id), plan_id)
    return {"cancelled": True}


__all__ = ["router"]
