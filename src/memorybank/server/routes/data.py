"""Moving data: export a scope, import an export, and the caller's counts."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any, Literal

import anyio.to_thread
from fastapi import APIRouter, HTTPException, Request, Response

from memorybank.core.bank import MemoryBank
from memorybank.core.writes import writing
from memorybank.server.deps import AccountsDep, BankDep, PrincipalDep, current_principal
from memorybank.server.error_responses import WRITE_ERRORS, errors
from memorybank.server.execution import reading
from memorybank.server.openapi import documented
from memorybank.server.principals import Action, Principal, authorize
from memorybank.server.routes.stats import metrics_for
from memorybank.server.schemas import IdParam, ImportResult, Stats
from memorybank.services import transfer
from memorybank.services.accounts import Accounts

router = APIRouter(tags=["data"])


@router.get(
    "/api/export",
    responses={
        200: {
            "description": "A JSON export document, or Markdown with format=markdown",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ExportDocument"}},
                "text/markdown": {"schema": {"type": "string"}},
            },
        },
        **errors(404),
    },
)
@reading
def export_memories(
    principal: PrincipalDep,
    bank: BankDep,
    accounts: AccountsDep,
    format: Literal["json", "markdown"] = "json",
    project_id: IdParam = None,
) -> Response:
    """Every memory of the caller's private scope (or one project) as a download."""
    if project_id is not None:
        authorize(accounts, principal, Action.VIEW, project_id)
    text = transfer.export(bank, principal.user_id, format, project_id=project_id)
    name = f"memorybank-{project_id or principal.user_id}"
    ext, media = ("json", "application/json") if format == "json" else ("md", "text/markdown")
    # Ids may hold any character: an ASCII fallback name plus the exact one, RFC 6266.
    plain = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    exact = urllib.parse.quote(f"{name}.{ext}", safe="")
    disposition = f"attachment; filename=\"{plain}.{ext}\"; filename*=UTF-8''{exact}"
    return Response(text, media_type=media, headers={"Content-Disposition": disposition})


def import_into(
    bank: MemoryBank, accounts: Accounts, principal: Principal, data: bytes, project_id: str | None
) -> dict[str, Any]:
    """Load a JSON export into the caller's scope or a project (admins): how many memories
    were added and how many skipped. Charged against the caller's write limit like a batch
    save: one unit per memory it adds (at least one), all refused (429) if they do not fit."""
    role = authorize(accounts, principal, Action.ADD_MANUAL, project_id)
    with writing(bank, principal.user_id):
        results = transfer.import_(bank, principal.user_id, data, project_id=project_id, role=role)
    imported = sum(1 for r in results if r.success)
    return {
        "imported": imported,
        "skipped": len(results) - imported,
        "results": [r.model_dump(mode="json") for r in results],
    }


#: The body of ``POST /api/import``: an export document (``GET /api/export``), as JSON.
_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ExportDocument"}}
        },
    }
}


def require_json_body(request: Request) -> None:
    """415 unless the body is sent as JSON: ``Content-Type: application/json``, or no type at
    all (scripts posting a file's bytes). A cross-site form's ``text/plain`` never passes,
    whatever the mode."""
    ctype = request.headers.get("content-type")
    if ctype is not None and ctype.partition(";")[0].strip().lower() != "application/json":
        raise HTTPException(
            415,
            f"send the export document as JSON with 'Content-Type: application/json' "
            f"(got {ctype[:100]!r})",
        )


@router.post(
    "/api/import",
    openapi_extra=_IMPORT_BODY,
    responses=documented(ImportResult, 404, 429, *WRITE_ERRORS),
)
async def import_memories(
    request: Request, bank: BankDep, accounts: AccountsDep, project_id: IdParam = None
) -> dict[str, Any]:
    """Load a JSON export (the body) into the caller's scope or a project (admins)."""
    principal = await current_principal(request)
    require_json_body(request)
    data = await request.body()
    return await anyio.to_thread.run_sync(import_into, bank, accounts, principal, data, project_id)


@router.get("/api/stats", responses=documented(Stats))
@reading
def get_stats(principal: PrincipalDep, bank: BankDep, accounts: AccountsDep) -> dict[str, Any]:
    """The caller's own counts: private memories and each of their projects'; for an org
    admin (or in local mode) also seed 002's success metrics of the last 30 days."""
    projects = [] if principal.local else accounts.projects(principal.user_id)
    answer: dict[str, Any] = {
        "user_id": principal.user_id,
        "memories": bank.count(principal.user_id, scopes="user"),
        "projects": [
            {
                "id": p.id,
                "name": p.name,
                "role": role,
                "memories": bank.count(principal.user_id, project_id=p.id, scopes="project"),
            }
            for p, role in projects
        ],
    }
    found = metrics_for(bank, accounts, principal)
    if found is not None:
        answer["metrics"] = found.model_dump(mode="json")
    return answer


__all__ = ["router"]
