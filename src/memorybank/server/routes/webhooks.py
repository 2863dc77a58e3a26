"""Webhooks for integrators: create one for a project (its admins and owners) or for an org
(its admins), list them, delete one, send a test, read its delivery log.

The secret that signs deliveries is shown once, in the answer that creates the webhook
(see :mod:`memorybank.services.webhooks` for the signature and how to verify it). Who may
manage a webhook is :func:`~memorybank.services.webhooks.manager_problem`'s decision; a
project's admins and owners see and may delete every webhook of it, whoever made it, and
the list says which ones are paused (their creator may no longer manage them).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from memorybank.errors import NotFound, RoleRequired
from memorybank.model.webhooks import Delivery, DeliveryStatus, Webhook
from memorybank.providers.netguard import AddressPolicy
from memorybank.server.deps import AccountsDep, PrincipalDep, SettingsDep, app_part
from memorybank.server.error_responses import errors
from memorybank.server.execution import reading
from memorybank.server.principals import Principal, project_role
from memorybank.server.schemas import RequestBody
from memorybank.services.accounts import Accounts
from memorybank.services.webhooks import Webhooks, manager_problem, paused_because

router = APIRouter(tags=["webhooks"])


class WebhookCreate(RequestBody):
    """``POST /api/webhooks``: where to send which events, for one project or one org."""

    url: str = Field(max_length=2048)
    project_id: str | None = Field(None, max_length=200)
    org_id: str | None = Field(None, max_length=200)
    #: Some of created, updated, superseded, merged, deleted, cleared, forgotten, test;
    #: omitted: all of them.
    event_types: list[str] | None = Field(None, max_length=20)


class WebhookView(BaseModel):
    """A webhook as the API shows it; ``secret`` only in the answer that created it."""

    id: str
    project_id: str | None
    org_id: str | None
    url: str
    event_types: list[str]
    active: bool
    created_by: str
    created_at: datetime
    #: Why nothing is sent to it now (its creator may no longer manage its project or org),
    #: or null while it delivers.
    paused: str | None = None
    secret: str | None = None


class WebhookList(BaseModel):
    """The webhooks the caller manages."""

    webhooks: list[WebhookView]


class DeliveryView(BaseModel):
    """One delivery in a webhook's log."""

    id: str
    event_id: int | None
    event_type: str
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    last_status: int | None
    last_error: str | None
    created_at: datetime
    done_at: datetime | None


class DeliveryLog(BaseModel):
    """A webhook's deliveries, newest first."""

    deliveries: list[DeliveryView]


def _view(hook: Webhook, accounts: Accounts, *, with_secret: bool = False) -> WebhookView:
    data = hook.model_dump(exclude={"secret", "event_types"})
    secret = hook.secret if with_secret else None
    paused = paused_because(accounts, hook)
    return WebhookView(**data, event_types=list(hook.event_types), paused=paused, secret=secret)


def _delivery_view(delivery: Delivery) -> DeliveryView:
    return DeliveryView(**delivery.model_dump(exclude={"webhook_id", "body"}))


#: The app's webhooks.
WebhooksDep = Annotated[Webhooks, Depends(app_part("webhooks"))]


def _check_manager(
    accounts: Accounts, principal: Principal, project_id: str | None, org_id: str | None
) -> None:
    """Refuse anyone who may not manage webhooks of this project (admins and owners) or
    org (org admins): non-members do not find the project (404, as for any project), its
    members lacking the role get 403, and orgs one does not administer are not found."""
    if project_id is not None:
        project_role(accounts, principal, project_id)  # non-members: 404
    elif principal.local:  # no orgs without users
        raise NotFound(f"no org {org_id!r} you administer")
    problem = manager_problem(accounts, principal.user_id, project_id=project_id, org_id=org_id)
    if problem is None:
        return
    if project_id is None:
        raise NotFound(f"no org {org_id!r} you administer")
    raise RoleRequired(f"only the project's owners and admins manage its webhooks ({problem})")


def _managed(accounts: Accounts, principal: Principal, webhooks: Webhooks) -> list[Webhook]:
    if principal.local:
        return webhooks.of([h.project_id for h in webhooks.tables.webhooks() if h.project_id], [])
    projects = [p.id for p, role in accounts.projects(principal.user_id) if role != "member"]
    orgs = [o for o, role in accounts.orgs(principal.user_id) if role == "admin"]
    return webhooks.of(projects, orgs)


def _hook(webhooks: Webhooks, accounts: Accounts, principal: Principal, hook_id: str) -> Webhook:
    hook = webhooks.get(hook_id)
    try:
        _check_manager(accounts, principal, hook.project_id, hook.org_id)
    except Exception as exc:  # a webhook of a project one cannot manage is not shown to exist
        raise NotFound(f"no webhook {hook_id!r}") from exc
    return hook


@router.post("/api/webhooks", status_code=201, responses=errors(403, 404, 422))
def create_webhook(
    webhooks: WebhooksDep,
    principal: PrincipalDep,
    accounts: AccountsDep,
    settings: SettingsDep,
    body: WebhookCreate,
) -> WebhookView:
    """A new webhook, with the secret that signs its deliveries (shown this once). Its URL
    follows the rule of users' provider URLs: public addresses, loopback in local mode,
    private ones when ``MEMORYBANK_PROVIDER_ALLOW_PRIVATE`` is set. A project (or org) has at
    most ``MEMORYBANK_WEBHOOK_MAX_PER_PROJECT`` (10) webhooks: 422 saying so past it."""
    _check_manager(accounts, principal, body.project_id, body.org_id)
    policy = AddressPolicy.for_users(
        allow_private=settings.provider_allow_private, local_mode=principal.local
    )
    hook = webhooks.create(
        principal.user_id,
        body.url,
        project_id=body.project_id,
        org_id=body.org_id,
        event_types=body.event_types,
        policy=policy,
    )
    return _view(hook, accounts, with_secret=True)


@router.get("/api/webhooks", responses=errors(403))
@reading
def list_webhooks(
    webhooks: WebhooksDep, principal: PrincipalDep, accounts: AccountsDep
) -> WebhookList:
    """The webhooks of the projects and orgs the caller administers, whoever made them, and
    whether each delivers (``paused`` says why not)."""
    hooks = _managed(accounts, principal, webhooks)
    return WebhookList(webhooks=[_view(h, accounts) for h in hooks])


@router.delete("/api/webhooks/{hook_id}", status_code=204, responses=errors(404))
def delete_webhook(
    webhooks: WebhooksDep, principal: PrincipalDep, accounts: AccountsDep, hook_id: str
) -> None:
    """Remove a webhook and its delivery log; nothing more is sent to it."""
    hook = _hook(webhooks, accounts, principal, hook_id)
    webhooks.delete(hook.id)


@router.post("/api/webhooks/{hook_id}/test", status_code=202, responses=errors(404, 429))
def send_test(
    webhooks: WebhooksDep, principal: PrincipalDep, accounts: AccountsDep, hook_id: str
) -> DeliveryView:
    """Queue a signed ``test`` delivery; its outcome appears in the log. At most
    ``MEMORYBANK_WEBHOOK_TEST_SENDS_PER_MINUTE`` (5) a minute per webhook: 429 with
    ``Retry-After`` past it."""
    hook = _hook(webhooks, accounts, principal, hook_id)
    return _delivery_view(webhooks.send_test(hook))


@router.get("/api/webhooks/{hook_id}/deliveries", responses=errors(404))
@reading
def delivery_log(
    webhooks: WebhooksDep,
    principal: PrincipalDep,
    accounts: AccountsDep,
    hook_id: str,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> DeliveryLog:
    """The webhook's deliveries, newest first: status, attempts, the last answer."""
    hook = _hook(webhooks, accounts, principal, hook_id)
    found = webhooks.deliveries(hook.id, limit)
    return DeliveryLog(deliveries=[_delivery_view(d) for d in found])


__all__ = ["DeliveryLog", "DeliveryView", "WebhookCreate", "WebhookList", "WebhookView", "router"]
