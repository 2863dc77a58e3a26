"""What the routes are given: ``Annotated[…, Depends()]`` aliases over the app's parts, and the
helpers over the services that several routers share.

:func:`~memorybank.server.app.create_app` stores the parts on ``app.state``; each dependency
reads one. They are ``async def``, so FastAPI resolves them on the event loop rather than
handing each to a thread.

    @router.get("/api/stats")
    def stats(principal: PrincipalDep, bank: BankDep, accounts: AccountsDep) -> dict[str, Any]: ...
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio.to_thread
from fastapi import Depends, Request

from memorybank.core.bank import MemoryBank
from memorybank.providers.llm.client import ChatClient
from memorybank.providers.netguard import AddressPolicy
from memorybank.server.metrics import Metrics
from memorybank.server.principals import (
    USER_HEADER,
    Action,
    Principal,
    authorize,
    org_admin_of,
    resolve_principal,
)
from memorybank.server.request_limits import ConfirmTokens
from memorybank.services.accounts import Accounts, Role, Thread
from memorybank.settings import Settings
from memorybank.tools import Caller

# -- the app's parts --------------------------------------------------------------------------


def app_part(name: str) -> Callable[[Request], Awaitable[Any]]:
    """The dependency that reads ``app.state.<name>``, one of the parts the app was made with."""

    async def part(request: Request) -> Any:
        return getattr(request.app.state, name)

    part.__name__ = part.__qualname__ = f"app_{name}"
    return part


async def current_principal(request: Request) -> Principal:
    """The dependency every ``/api`` route uses: who is calling (401 when unknown).

    Two indexed lookups: on the event loop when the store is in-process (a thread hop cost
    more than the lookups), in a thread when they are round trips to a database server."""
    accounts: Accounts = request.app.state.accounts
    header = request.headers.get("authorization")
    acting_as = request.headers.get(USER_HEADER)
    if request.app.state.inline_searches:
        return resolve_principal(accounts, header, acting_as)
    return await anyio.to_thread.run_sync(resolve_principal, accounts, header, acting_as)


#: The bank the app serves.
BankDep = Annotated[MemoryBank, Depends(app_part("bank"))]
#: Users, projects, keys, threads and providers.
AccountsDep = Annotated[Accounts, Depends(app_part("accounts"))]
#: The settings the app was made with.
SettingsDep = Annotated[Settings, Depends(app_part("settings"))]
#: The pending confirm tokens of clearing a scope.
ConfirmationsDep = Annotated[ConfirmTokens, Depends(app_part("confirmations"))]
#: The app's Prometheus registry.
MetricsDep = Annotated[Metrics, Depends(app_part("metrics"))]
PrincipalDep = Annotated[Principal, Depends(current_principal)]


# -- helpers over the services ----------------------------------------------------------------


@contextmanager
def llm_for(
    accounts: Accounts, principal: Principal, settings: Settings
) -> Iterator[ChatClient | None]:
    """The principal's own chat model for the calls made inside, when they enabled one
    (closed afterwards); ``None`` otherwise, which means the bank's own.

    It connects only to addresses the user policy allows (:mod:`memorybank.providers.netguard`):
    public ones, loopback in local mode, private ones too when ``settings`` allow them."""
    provider = accounts.provider(principal.user_id, "llm")
    if provider is None or not provider.enabled:
        yield None
        return
    policy = AddressPolicy.for_users(
        allow_private=settings.provider_allow_private,
        local_mode=principal.local,
    )
    with ChatClient(
        provider.base_url,
        provider.model,
        api_key=accounts.provider_secret(provider),
        address_policy=policy,
    ) as client:
        yield client


def thread_of(accounts: Accounts, principal: Principal, thread_id: str | None) -> Thread | None:
    """The caller's thread ``thread_id`` (none asked for: ``None``)."""
    return None if thread_id is None else accounts.thread(thread_id, principal.user_id)


def caller_of(accounts: Accounts, principal: Principal, thread: Thread | None) -> Caller:
    """Who the AI's tools act for, and where: the thread's project (after checking the caller
    may view it), the caller's role there, and their org."""
    project_id = thread.project_id if thread else None
    role: Role | None = None
    if project_id is not None:
        role = authorize(accounts, principal, Action.VIEW, project_id)
    org = org_admin_of(accounts, principal)
    orgs = [] if principal.local else accounts.orgs(principal.user_id)
    return Caller(
        user_id=principal.user_id,
        project_id=project_id,
        thread_id=thread.id if thread else None,
        role=role,
        org_id=org or (orgs[0][0] if orgs else None),
        org_admin=org is not None,
        memory_enabled=thread.memory_enabled if thread else True,
    )


def mcp_caller(accounts: Accounts, request: Request | None) -> Caller:
    """The :class:`Caller` of an MCP request: its caller, outside any thread."""
    header = request.headers.get("authorization") if request is not None else None
    acting_as = request.headers.get(USER_HEADER) if request is not None else None
    return caller_of(accounts, resolve_principal(accounts, header, acting_as), None)


__all__ = [
    "AccountsDep",
    "BankDep",
    "PrincipalDep",
    "ConfirmationsDep",
    "MetricsDep",
    "SettingsDep",
    "llm_for",
    "current_principal",
    "mcp_caller",
    "thread_of",
    "caller_of",
]
