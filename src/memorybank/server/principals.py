"""Who a request acts for, and their role in a project: the server's half of authorisation.

The rules themselves (seed 002's table) are :data:`memorybank.rules.permissions.PROJECT_ROLES`, and
:class:`~memorybank.MemoryBank` enforces them on every operation with the role it is given.
What only the server knows is *who* is calling and *which projects* they belong to: a request's
:class:`Principal` comes from its API key (:func:`resolve_principal`), and their role in a
project from the accounts (:func:`project_role`). Routes check early with :func:`authorize`
(the same table) so a refused request does no work, then hand the role to the bank.

Non-members get :class:`~memorybank.NotFound` (404), exactly as for a project that does not
exist, so the API never reveals which projects exist; members lacking the role get
:class:`~memorybank.PermissionDenied` (403). Routes addressed by a project id answer
``no project 'apollo'``, naming only what the caller named; routes addressed by a memory, plan
or thread id turn that into the same 404 as an id that does not exist (``no memory 'mem_…'``),
so they never reveal the project of something the caller may not see.

In local mode (no users configured) a request acts for the user ``local``, or the one its
:data:`USER_HEADER` names, owner of every project; otherwise a valid ``Authorization: Bearer``
API key is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from memorybank.errors import MemoryBankError, NotFound, ValidationError
from memorybank.rules.permissions import Action, require
from memorybank.services.accounts import LOCAL_USER, Accounts, Role

Mode = Literal["local", "auth"]


class Unauthorized(MemoryBankError):
    """No valid API key on a request that needs one (HTTP 401)."""


@dataclass(frozen=True)
class Principal:
    """The user a request acts for, as its API key says (the core
    :class:`~memorybank.model.Caller` adds the project, thread and role of one call)."""

    user_id: str
    name: str
    mode: Mode

    @property
    def local(self) -> bool:
        """Whether this is the single user of local mode."""
        return self.mode == "local"


#: In local mode, the header that names the user a request acts for (default ``local``): the
#: web UI's user switch and :class:`memorybank.Client` send it, so the CLI's users (``alice``)
#: are reachable over HTTP too. Ignored in auth mode, where the API key says who is calling.
#: A page of another site cannot send it: a custom header needs a CORS preflight, which this
#: server never grants.
USER_HEADER = "X-Memorybank-User"

_USER_ID = re.compile(r"[^\x00-\x1f\x7f]{1,200}")


def resolve_principal(
    accounts: Accounts, authorization: str | None, acting_as: str | None = None
) -> Principal:
    """The principal of a request with this ``Authorization`` header; :class:`Unauthorized`
    when users are configured and the header holds no active API key. In local mode it is
    ``acting_as`` (:data:`USER_HEADER`) when given, else the user ``local``."""
    if not accounts.has_users():
        if acting_as is None or unquote(acting_as).strip() in ("", LOCAL_USER):
            return Principal(user_id=LOCAL_USER, name="Local user", mode="local")
        named = unquote(acting_as).strip()  # percent-encoded: headers carry Latin-1 only
        if not _USER_ID.fullmatch(named):
            raise ValidationError(
                f"{USER_HEADER}: a user id of 1-200 printable characters", field=USER_HEADER
            )
        return Principal(user_id=named, name=named, mode="local")
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send your API key as 'Authorization: Bearer mb_…'")
    user = accounts.authenticate(token.strip())
    if user is None:
        raise Unauthorized("this API key is unknown or revoked: create a new one")
    return Principal(user_id=user.id, name=user.name, mode="auth")


def project_role(accounts: Accounts, principal: Principal, project_id: str) -> Role:
    """The principal's role in a project; :class:`NotFound` for non-members (and unknown
    projects), so existence is never revealed."""
    if principal.local:
        return "owner"
    role = accounts.role(project_id, principal.user_id)
    if role is None:
        raise NotFound(f"no project {project_id!r}")
    return role


def authorize(
    accounts: Accounts, principal: Principal, action: Action, project_id: str | None
) -> Role:
    """Check that ``principal`` may do ``action`` in their private memory
    (``project_id=None``, always their own) or in a project's, by seed 002's table; returns
    their role there, which the route passes on to the bank."""
    if project_id is None:
        return "owner"
    role = project_role(accounts, principal, project_id)
    require(role, action, project_id)
    return role


def org_admin_of(accounts: Accounts, principal: Principal) -> str | None:
    """The org the principal administers (seed 003's orgWide), if any."""
    if principal.local:
        return None
    return next((org for org, role in accounts.orgs(principal.user_id) if role == "admin"), None)


__all__ = [
    "USER_HEADER",
    "Action",
    "Principal",
    "Unauthorized",
    "authorize",
    "org_admin_of",
    "project_role",
    "resolve_principal",
]
