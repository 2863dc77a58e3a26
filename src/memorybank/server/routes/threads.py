"""Conversations: create, list, rename, move, and switch memory on or off."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep
from memorybank.server.error_responses import WRITE_ERRORS
from memorybank.server.execution import reading
from memorybank.server.openapi import documented
from memorybank.server.principals import Action, authorize
from memorybank.server.schemas import ThreadCreate, ThreadList, ThreadPatch, ThreadView
from memorybank.services.accounts import Thread

router = APIRouter(tags=["threads"])


def thread_view(thread: Thread) -> dict[str, Any]:
    """A thread as the API shows it."""
    return ThreadView(
        id=thread.id,
        project_id=thread.project_id,
        title=thread.title,
        memory_enabled=thread.memory_enabled,
        created_at=thread.created_at.isoformat(),
        updated_at=thread.updated_at.isoformat(),
    ).model_dump()


@router.post(
    "/api/threads",
    status_code=201,
    responses=documented(ThreadView, 404, 429, *WRITE_ERRORS, status=201),
)
def create_thread(
    principal: PrincipalDep, accounts: AccountsDep, bank: BankDep, body: ThreadCreate
) -> dict[str, Any]:
    """Start a conversation, optionally in a project, with memory on or off (one write
    against the caller's write limit: 429 with ``Retry-After`` over it)."""
    if body.project_id is not None:
        authorize(accounts, principal, Action.VIEW, body.project_id)
    bank.writes.count(principal.user_id)
    thread = accounts.create_thread(
        principal.user_id,
        project_id=body.project_id,
        title=body.title,
        memory_enabled=body.memory_enabled,
    )
    return thread_view(thread)


@router.get("/api/threads", responses=documented(ThreadList))
@reading
def list_threads(principal: PrincipalDep, accounts: AccountsDep) -> dict[str, Any]:
    """The caller's conversations, newest first."""
    return {"threads": [thread_view(t) for t in accounts.threads(principal.user_id)]}


@router.patch(
    "/api/threads/{thread_id}",
    responses=documented(ThreadView, 404, *WRITE_ERRORS),
)
def patch_thread(
    principal: PrincipalDep, accounts: AccountsDep, thread_id: str, body: ThreadPatch
) -> dict[str, Any]:
    """Rename, switch memory on/off, or move to another project (``project_id: null``
    makes it unfoldered)."""
    moving = "project_id" in body.model_fields_set
    if moving and body.project_id is not None:
        authorize(accounts, principal, Action.VIEW, body.project_id)
    thread = accounts.update_thread(
        thread_id,
        principal.user_id,
        title=body.title,
        memory_enabled=body.memory_enabled,
        project_id=body.project_id if moving else None,
        clear_project=moving and body.project_id is None,
    )
    return thread_view(thread)


__all__ = ["router"]
