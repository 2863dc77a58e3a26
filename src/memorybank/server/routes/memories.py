"""Memories by scope and by id: seed 002 §6.4's user and drive (project) memory, and one
memory's read, edit and history."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Response
from fastapi.responses import JSONResponse

from memorybank.core.bank import MemoryBank
from memorybank.errors import NotFound
from memorybank.model import Source
from memorybank.rules.filtering import memory_filter
from memorybank.rules.intake import is_conversation
from memorybank.rules.limits import PAGE_MAX
from memorybank.rules.quoted import check_client_marks
from memorybank.server.deps import (
    AccountsDep,
    BankDep,
    ConfirmationsDep,
    PrincipalDep,
)
from memorybank.server.error_responses import WRITE_ERRORS, StateConflict
from memorybank.server.execution import computing, reading
from memorybank.server.openapi import SEED_002, documented
from memorybank.server.principals import Action, Principal, authorize
from memorybank.server.request_limits import ConfirmTokens
from memorybank.server.routes.bank import memory_page
from memorybank.server.schemas import (
    AddFact,
    Cleared,
    ClearRequest,
    ClearToken,
    DriveMemoryList,
    HistoryList,
    IdParam,
    KeepBothRequest,
    MemoryCreated,
    MemoryList,
    MemoryPair,
    MemoryPairList,
    MemoryPatch,
    NameParam,
    OptionalSearchText,
    ShownMemory,
    SupersedeRequest,
    memory_json,
    memory_list_json,
)
from memorybank.services import pairs
from memorybank.services.accounts import Accounts, Role

router = APIRouter(tags=["memories"])

#: How seed 002's two deletes by id are declared (they differ in the scope they accept).
_DELETE_ONE: dict[str, Any] = {
    "tags": [SEED_002],
    "status_code": 204,
    "responses": documented(None, 404, *WRITE_ERRORS, status=204),
}


# -- helpers ----------------------------------------------------------------------------------


def add_fact(
    bank: MemoryBank,
    principal: Principal,
    body: AddFact,
    project_id: str | None,
    role: Role,
) -> JSONResponse:
    """Save a fact by hand (one write against the caller's write limit, which MCP and the
    tools share); :class:`StateConflict` with the stored one for a duplicate. The answer's
    ``replaced`` are the stored facts the new one surely replaced (superseded by it),
    ``conflicts`` those it may update or contradict (kept)."""
    bank.writes.count(principal.user_id)
    result = bank.save(
        principal.user_id,
        body.fact,
        body.category or None,
        project_id=project_id,
        source=Source.USER,
        created_by=principal.user_id,
        role=role,
    )
    if result.duplicate:
        existing = None
        if result.existing_id:
            try:
                existing = memory_json(
                    bank.get(result.existing_id, principal.user_id, project_id=project_id),
                    bank,
                )
            except NotFound:
                existing = None
        raise StateConflict(
            f"already remembered: {result.existing_content}",
            duplicate=True,
            existing=existing,
        )
    assert result.memory is not None
    # The stored facts the new one may update or contradict: the caller decides what to do.
    conflicts = [c.model_dump(mode="json") for c in result.conflicts]
    return JSONResponse(
        {
            "memory": memory_json(result.memory, bank),
            "conflicts": conflicts,
            "replaced": [c.model_dump(mode="json") for c in result.replaced],
        },
        status_code=201,
    )


IncludeSuperseded = Annotated[
    bool, Query(description="Also the facts a newer one replaced (kept in history)")
]


def list_scope(
    bank: MemoryBank,
    principal: Principal,
    project_id: str | None,
    q: str | None,
    category: str | None,
    limit: int,
    offset: int,
    include_superseded: bool = False,
) -> dict[str, Any]:
    """A page of the caller's private memories or a project's, and how many there are in all
    (with ``q``: the best matches, and how many were found), as :class:`MemoryList`. Facts a
    newer one replaced are left out unless ``include_superseded``."""
    scopes: Literal["user", "project"] = "project" if project_id else "user"
    if q:
        hits = bank.search(
            principal.user_id,
            q,
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            category=category,
            include_superseded=include_superseded,
        )
        return memory_list_json([h.memory for h in hits], bank, len(hits))
    filters = memory_filter(category=category, superseded=None if include_superseded else False)
    return memory_page(bank, principal.user_id, project_id, scopes, limit, offset, filters)


def clear_scope(
    bank: MemoryBank,
    confirmations: ConfirmTokens,
    principal: Principal,
    project_id: str | None,
    body: ClearRequest | None,
    role: Role,
) -> Any:
    """Clearing in two steps: without ``body`` a confirm token and how many would go; with
    it, delete them all."""
    key = f"p:{project_id}" if project_id else f"u:{principal.user_id}"
    if body is None:
        scopes: Literal["user", "project"] = "project" if project_id else "user"
        count = bank.count(principal.user_id, project_id=project_id, scopes=scopes)
        return {"confirm_token": confirmations.issue(principal.user_id, key), "count": count}
    confirmations.redeem(body.confirm_token, principal.user_id, key)
    deleted = bank.clear(principal.user_id, project_id, actor=principal.user_id, role=role)
    return {"deleted": deleted}


def no_memory(memory_id: str) -> NotFound:
    """The one answer for a memory id the caller may not see: it does not exist, it is another
    user's, or it is in a project the caller is not a member of (which is never named). The
    bank answers with the same words, so every route addressed by a memory id does."""
    return NotFound(f"no memory {memory_id!r}")


def memory_scope(
    accounts: Accounts, principal: Principal, memory_id: str, action: Action
) -> tuple[str | None, Role]:
    """The project of a memory addressed by id and the principal's role there, after
    checking ``action`` there: :func:`no_memory` for a non-member,
    :class:`~memorybank.PermissionDenied` (403) for a member lacking the role."""
    exists, project_id = accounts.memory_project(memory_id)
    if not exists:
        raise no_memory(memory_id)
    try:
        return project_id, authorize(accounts, principal, action, project_id)
    except NotFound:
        raise no_memory(memory_id) from None


# -- seed 002 §6.4: user memory ---------------------------------------------------------------


@router.get("/api/memory/user", responses=documented(MemoryList), tags=[SEED_002])
@reading
def list_user_memory(
    principal: PrincipalDep,
    bank: BankDep,
    q: OptionalSearchText = None,
    category: NameParam = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
    include_superseded: IncludeSuperseded = False,
) -> dict[str, Any]:
    """The caller's private memories (newest first; ``q`` searches instead)."""
    return list_scope(bank, principal, None, q, category, limit, offset, include_superseded)


@router.post(
    "/api/memory/user",
    tags=[SEED_002],
    status_code=201,
    responses=documented(MemoryCreated, 409, 429, *WRITE_ERRORS, status=201),
)
@computing
def add_user_memory(principal: PrincipalDep, bank: BankDep, body: AddFact) -> JSONResponse:
    """Add a fact to the caller's private memory by hand (409 for a duplicate)."""
    return add_fact(bank, principal, body, None, "owner")


@router.delete("/api/memory/user/{memory_id}", **_DELETE_ONE)
def delete_user_memory(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, memory_id: str
) -> Response:
    """Delete one of the caller's private memories."""
    exists, project_id = accounts.memory_project(memory_id)
    if not exists or project_id is not None:
        raise no_memory(memory_id)
    bank.delete(memory_id, principal.user_id)  # another user's: the same NotFound
    return Response(status_code=204)


def clear_private_memory(
    principal: PrincipalDep,
    bank: BankDep,
    confirmations: ConfirmationsDep,
    body: Annotated[ClearRequest | None, Body()] = None,
) -> Any:
    """Without a body: a confirm token and how many would go. With it: delete them all."""
    return clear_scope(bank, confirmations, principal, None, body, "owner")


# -- seed 002 §6.4: drive (project) memory ----------------------------------------------------


@router.get(
    "/api/memory/drive/{drive_id}", responses=documented(DriveMemoryList, 404), tags=[SEED_002]
)
@reading
def list_drive_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    drive_id: str,
    q: OptionalSearchText = None,
    category: NameParam = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
    include_superseded: IncludeSuperseded = False,
) -> dict[str, Any]:
    """A project's memories, for every member, with the caller's role."""
    role = authorize(accounts, principal, Action.VIEW, drive_id)
    page = list_scope(bank, principal, drive_id, q, category, limit, offset, include_superseded)
    return {**page, "role": role}


@router.post(
    "/api/memory/drive/{drive_id}",
    tags=[SEED_002],
    status_code=201,
    responses=documented(MemoryCreated, 404, 409, 429, *WRITE_ERRORS, status=201),
)
@computing
def add_drive_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    drive_id: str,
    body: AddFact,
) -> JSONResponse:
    """Add a fact to a project by hand (admins and owners)."""
    role = authorize(accounts, principal, Action.ADD_MANUAL, drive_id)
    return add_fact(bank, principal, body, drive_id, role)


@router.delete("/api/memory/drive/{memory_id}", **_DELETE_ONE)
def delete_drive_memory(
    principal: PrincipalDep, bank: BankDep, accounts: AccountsDep, memory_id: str
) -> Response:
    """Delete a project memory by its id (admins and owners of its project)."""
    project_id, role = memory_scope(accounts, principal, memory_id, Action.CHANGE)
    if project_id is None:  # a private memory, whoever's, is not deleted as drive memory
        raise no_memory(memory_id)
    bank.delete(memory_id, principal.user_id, project_id=project_id, role=role)
    return Response(status_code=204)


def clear_project_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    confirmations: ConfirmationsDep,
    project_id: str,
    body: Annotated[ClearRequest | None, Body()] = None,
) -> Any:
    """Clear a project's memory in two steps (admins and owners)."""
    role = authorize(accounts, principal, Action.CHANGE, project_id)
    return clear_scope(bank, confirmations, principal, project_id, body, role)


# -- clearing a scope (ours, not seed 002's) ---------------------------------------------------

_CLEAR_ANSWERS = ClearToken | Cleared
for _path, _clear, _name, _codes in (
    ("/api/memories/clear", clear_private_memory, "clear_private_memory", ()),
    (
        "/api/memories/projects/{project_id}/clear",
        clear_project_memory,
        "clear_project_memory",
        (404,),
    ),
):
    router.add_api_route(
        _path,
        _clear,
        methods=["POST"],
        name=_name,
        responses=documented(_CLEAR_ANSWERS, *_codes, *WRITE_ERRORS),  # type: ignore[arg-type]
    )


# -- one memory by id -------------------------------------------------------------------------


@router.get("/api/memories/{memory_id}", responses=documented(ShownMemory, 404))
@reading
def get_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    memory_id: str,
    project_id: IdParam = None,
) -> dict[str, Any]:
    """One memory (private, or of a project the caller belongs to)."""
    scope, _ = memory_scope(accounts, principal, memory_id, Action.VIEW)
    return memory_json(
        bank.get(memory_id, principal.user_id, project_id=scope),
        bank,
    )


@router.patch(
    "/api/memories/{memory_id}",
    responses=documented(ShownMemory, 404, *WRITE_ERRORS),
)
@computing
def patch_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    memory_id: str,
    body: MemoryPatch,
    project_id: IdParam = None,
) -> dict[str, Any]:
    """Change a memory in place (project memories: admins and owners). A conversation
    turn's ``role`` and ``confirmed`` stay as ``remember`` wrote them."""
    scope, role = memory_scope(accounts, principal, memory_id, Action.CHANGE)
    if body.metadata is not None:
        stored = bank.get(memory_id, principal.user_id, project_id=scope)
        if is_conversation(stored.ring, stored.source):  # who said it is the server's word
            check_client_marks(body.metadata, kept=stored.metadata)
    changed = bank.update(
        memory_id,
        principal.user_id,
        project_id=scope,
        **body.model_dump(),
        actor=principal.user_id,
        role=role,
    )
    return memory_json(changed, bank)


@router.post(
    "/api/memories/{memory_id}/restore",
    responses=documented(ShownMemory, 404, *WRITE_ERRORS),
)
@computing
def restore_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    memory_id: str,
    project_id: IdParam = None,
) -> dict[str, Any]:
    """Bring a superseded memory back into search and the prompt (the UI's "Undo" of a
    "Replaced: …"); the newer memory stays. Project memories: admins and owners."""
    scope, role = memory_scope(accounts, principal, memory_id, Action.CHANGE)
    back = bank.restore(
        memory_id, principal.user_id, project_id=scope, actor=principal.user_id, role=role
    )
    return memory_json(back, bank)


@router.post(
    "/api/memories/{memory_id}/supersede",
    responses=documented(ShownMemory, 404, *WRITE_ERRORS),
)
@computing
def supersede_memory(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    memory_id: str,
    body: SupersedeRequest,
) -> dict[str, Any]:
    """Mark this memory replaced by the newer memory ``by`` (the UI's "Replace" of a fact
    that may update another): it stays stored and in history, out of search and the prompt,
    and ``restore`` brings it back. Both must be in the same scope; project memories: admins
    and owners."""
    scope, role = memory_scope(accounts, principal, memory_id, Action.CHANGE)
    old = bank.supersede(
        memory_id, body.by, principal.user_id, project_id=scope, actor=principal.user_id, role=role
    )
    return memory_json(old, bank)


@router.post(
    "/api/memories/{memory_id}/keep-both",
    responses=documented(MemoryPair, 404, *WRITE_ERRORS),
)
@computing
def keep_both_memories(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    memory_id: str,
    body: KeepBothRequest,
) -> dict[str, Any]:
    """Answer "both are true" for this fact and ``other``, one of which may update the other
    (the UI's "Both are true"): both stay current, the pair is not asked about again (it
    leaves ``GET /api/memory-pairs``), and the memory block never shows one as an earlier,
    maybe outdated value of the other. Both must be in the same scope; project memories:
    admins and owners."""
    scope, role = memory_scope(accounts, principal, memory_id, Action.CHANGE)
    pairs.keep_both(
        bank,
        memory_id,
        body.other,
        principal.user_id,
        project_id=scope,
        actor=principal.user_id,
        role=role,
    )
    return {
        "memory": memory_json(bank.get(memory_id, principal.user_id, project_id=scope), bank),
        "other": memory_json(bank.get(body.other, principal.user_id, project_id=scope), bank),
    }


@router.get("/api/memory-pairs", responses=documented(MemoryPairList, 404))
@reading
def list_memory_pairs(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    project_id: IdParam = None,
    scopes: Literal["all", "user", "project"] = "all",
    limit: Annotated[int, Query(ge=1, le=PAGE_MAX)] = 100,
) -> dict[str, Any]:
    """The facts a save said may update a stored one (its ``conflicts``), with that one, not
    yet answered: neither replaced (``POST …/supersede``) nor both kept (``POST
    …/keep-both``). In the caller's private memory and, with ``project_id``, that project's
    (``scopes`` as for search)."""
    authorize(accounts, principal, Action.VIEW, project_id)
    found = pairs.open_pairs(
        bank, principal.user_id, project_id=project_id, scopes=scopes, limit=limit
    )
    return {
        "pairs": [
            {"memory": memory_json(new, bank), "other": memory_json(old, bank)}
            for new, old in found
        ]
    }


@router.get("/api/memories/{memory_id}/history", responses=documented(HistoryList, 404))
@reading
def memory_history(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    memory_id: str,
    project_id: IdParam = None,
) -> dict[str, Any]:
    """ADD / UPDATE / DELETE events of a memory, oldest first."""
    exists, scope = accounts.memory_project(memory_id)
    if not exists:  # deleted: only its tombstone is left, in the scope the caller names
        scope = project_id
    try:
        authorize(accounts, principal, Action.VIEW, scope)
    except NotFound:  # not a member: answered as for any memory the caller may not see
        raise no_memory(memory_id) from None
    events = bank.history(memory_id, principal.user_id, project_id=scope)
    return {"events": [e.model_dump(mode="json") for e in events]}


__all__ = ["router"]
