"""Webhooks for integrators: create one for a project (its admins and owners) or for an org
(its admins), list them, delete one, send a test, read its delivery log.

The secret that signs deliveries is shown once, in the answer that creates the webhook
(see :mod:`memorybank.services.webhooks` for the signature and how to verify it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from memorybank.errors import NotFound
from memorybank.model.webhooks import Delivery, DeliveryStatus, Webhook
from memorybank.providers.netguard import AddressPolicy
from memorybank.server.deps import AccountsDep, PrincipalDep, SettingsDep
from memorybank.server.error_responses import errors
from memorybank.server.principals import Action, Principal, authorize, org_admin_of
from memorybank.server.schemas import RequestBody
from memorybank.services.accounts import Accounts
from memorybank.services.webhooks import Webhooks

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


def _view(hook: Webhook, *, with_secret: bool = False) -> WebhookView:
    data = hook.model_dump(exclude={"secret", "event_types"})
    secret = hook.secret if with_secret else None
    return WebhookView(**data, event_types=list(hook.event_types), secret=secret)


def _delivery_view(delivery: Delivery) -> DeliveryView:
    return DeliveryView(**delivery.model_dump(exclude={"webhook_id", "body"}))


def app_webhooks(request: Request) -> Webhooks:
    """The app's webhooks."""
    webhooks: Webhooks = request.app.state.webhooks
    return webhooks


def _check_manager(
    accounts: Accounts, principal: Principal, project_id: str | None, org_id: str | None
) -> None:
    """Refuse anyone who may not manage webhooks of this project (admins and owners) or
    org (org admins); others' webhooks are not found, as their projects are not."""
    if project_id is not None:
        authorize(accounts, principal, Action.CHANGE, project_id)
    elif principal.local or org_admin_of(accounts, principal) != org_id:
        raise NotFound(f"no org {org_id!r} you administer")


def _managed(accounts: Accounts, principal: Principal, webhooks: Webhooks) -> list[Webhook]:
    if principal.local:
        return webhooks.of([h.project_id for h in webhooks.tables.webhooks() if h.project_id], [])
    projects = [p.id for p, role in accounts.projects(principal.user_id) if role != "member"]
    orgs = [o for o, role in accounts.orgs(principal.user_id) if role == "admin"]
    return webhooks.of(projects, orgs)


def _hook(request: Request, accounts: Accounts, principal: Principal, hook_id: str) -> Webhook:
    webhooks = app_webhooks(request)
    hook = webhooks.get(hook_id)
    try:
        _check_manager(accounts, principal, hook.project_id, hook.org_id)
    except Exception as exc:  # a webhook of a project one cannot manage is not shown to exist
        raise NotFound(f"no webhook {hook_id!r}") from exc
    return hook


@router.post("/api/webhooks", status_code=201, responses=errors(403, 404, 422))
def create_webhook(
    request: Request,
    principal: PrincipalDep,
    accounts: AccountsDep,
    settings: SettingsDep,
    body: WebhookCreate,
) -> WebhookView:
    """A new webhook, with the secret that signs its deliveries (shown this once). Its URL
    follows the rule of users' provider URLs: public addresses, loopback in local mode,
    private ones when ``MEMORYBANK_PROVIDER_ALLOW_PRIVATE`` is set."""
    _check_manager(accounts, principal, body.project_id, body.org_id)
    policy = AddressPolicy.for_users(
        allow_private=settings.provider_allow_private, local_mode=principal.local
    )
    hook = app_webhooks(request).create(
        principal.user_id,
        body.url,
        project_id=body.project_id,
        org_id=body.org_id,
        event_types=body.event_types,
        policy=policy,
    )
    return _view(hook, with_secret=True)


@router.get("/api/webhooks", responses=errors(403))
def list_webhooks(request: Request, principal: PrincipalDep, accounts: AccountsDep) -> WebhookList:
    """The webhooks of the projects and orgs the caller administers."""
    hooks = _managed(accounts, principal, app_webhooks(request))
    return WebhookList(webhooks=[_view(h) for h in hooks])


@router.delete("/api/webhooks/{hook_id}", status_code=204, responses=errors(404))
def delete_webhook(
    request: Request, principal: PrincipalDep, accounts: AccountsDep, hook_id: str
) -> None:
    """Remove a webhook and its delivery log; nothing more is sent to it."""
    hook = _hook(request, accounts, principal, hook_id)
    app_webhooks(request).delete(hook.id)


@router.post("/api/webhooks/{hook_id}/test", status_code=202, responses=errors(404))
def send_test(
    request: Request, principal: PrincipalDep, accounts: AccountsDep, hook_id: str
) -> DeliveryView:
    """Queue a signed ``test`` delivery; its outcome appears in the log."""
    hook = _hook(request, accounts, principal, hook_id)
    return _delivery_view(app_webhooks(request).send_test(hook))


@router.get("/api/webhooks/{hook_id}/deliveries", responses=errors(404))
def delivery_log(
    request: Request,
    principal: PrincipalDep,
    accounts: AccountsDep,
    hook_id: str,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> DeliveryLog:
    """The webhook's deliveries, newest first: status, attempts, the last answer."""
    hook = _hook(request, accounts, principal, hook_id)
    found = app_webhooks(request).deliveries(hook.id, limit)
    return DeliveryLog(deliveries=[_delivery_view(d) for d in found])


__all__ = ["DeliveryLog", "DeliveryView", "WebhookCreate", "WebhookList", "WebhookView", "router"]
