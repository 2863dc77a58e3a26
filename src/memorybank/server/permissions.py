"""Who may do what: the one place the server decides it (seed 002 §6.5, seed 003's orgWide).

    | action        | user memory | project (drive) memory      |
    |---------------|-------------|-----------------------------|
    | view          | owner       | every member                |
    | add (AI)      | owner       | every member, during chat   |
    | add (manual)  | owner       | admin / owner               |
    | delete, edit  | owner       | admin / owner               |
    | org-wide read | org admins only (seed 003)                |

A user's private memory is only ever reached through the caller's own id, so "owner" there is
structural: nobody can name another user's private scope. For projects, non-members get
:class:`~memorybank.NotFound` (404), exactly as for a project that does not exist, so the API
never reveals which projects exist; members lacking the role get
:class:`~memorybank.PermissionDenied` (403). In a project conversation the AI's tool calls that
change or delete facts (:data:`CHANGING_TOOLS`, and ``remember`` given the ``id`` of a fact to
replace) need admin or owner too.

Callers come from :func:`resolve_caller`: in local mode (no users configured) everyone is the
single user ``local``, owner of every project; otherwise a valid ``Authorization: Bearer``
API key is required.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from memorybank.accounts import LOCAL_USER, Accounts, Role
from memorybank.errors import MemoryBankError, NotFound, PermissionDenied

Mode = Literal["local", "auth"]


class Unauthorized(MemoryBankError):
    """No valid API key on a request that needs one (HTTP 401)."""


class Action(StrEnum):
    """What a caller wants to do with a scope's memories."""

    VIEW = "view"
    ADD_AI = "add_ai"
    ADD_MANUAL = "add_manual"
    DELETE = "delete"  # also edit and clear


#: Tools that change or delete existing memories: like a manual delete, they need admin or
#: owner in a project conversation.
CHANGING_TOOLS = frozenset(
    {"forget", "forget_confirm", "memory_update", "memory_delete", "remove_memory"}
)
#: Tools that save a new fact, or replace the stored fact whose ``id`` they are given: a
#: replacement is an edit, so it needs admin or owner in a project conversation too.
REPLACING_TOOLS = frozenset({"remember"})
_MANAGERS: frozenset[str] = frozenset({"owner", "admin"})


@dataclass(frozen=True)
class Caller:
    """The user a request acts for."""

    user_id: str
    name: str
    mode: Mode

    @property
    def local(self) -> bool:
        """Whether this is the single user of local mode."""
        return self.mode == "local"


def resolve_caller(accounts: Accounts, authorization: str | None) -> Caller:
    """The caller of a request with this ``Authorization`` header; :class:`Unauthorized` when
    users are configured and the header holds no active API key."""
    if not accounts.has_users():
        return Caller(user_id=LOCAL_USER, name="Local user", mode="local")
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send your API key as 'Authorization: Bearer mb_…'")
    user = accounts.authenticate(token.strip())
    if user is None:
        raise Unauthorized("this API key is unknown or revoked: create a new one")
    return Caller(user_id=user.id, name=user.name, mode="auth")


def project_role(accounts: Accounts, caller: Caller, project_id: str) -> Role:
    """The caller's role in a project; :class:`NotFound` for non-members (and unknown
    projects), so existence is never revealed."""
    if caller.local:
        return "owner"
    role = accounts.role(project_id, caller.user_id)
    if role is None:
        raise NotFound(f"no project {project_id!r}")
    return role


def authorize(accounts: Accounts, caller: Caller, action: Action, project_id: str | None) -> Role:
    """Check that ``caller`` may do ``action`` in the user's private memory
    (``project_id=None``) or in a project's; returns the caller's role there."""
    if project_id is None:
        return "owner"
    role = project_role(accounts, caller, project_id)
    if action in (Action.VIEW, Action.ADD_AI):
        return role
    if role in _MANAGERS:
        return role
    verb = "add facts by hand to" if action == Action.ADD_MANUAL else "change or delete facts in"
    raise PermissionDenied(
        f"only the project's owners and admins can {verb} {project_id!r}; ask one of them"
    )


def authorize_tool(
    role: Role | None, project_id: str | None, tool_name: str, arguments: object = None
) -> None:
    """An AI tool call with the model's ``arguments`` (a dict or its JSON text): saving is
    fine for every member; changing or deleting project memory, or replacing a fact by id,
    needs admin or owner, like doing it by hand."""
    if project_id is None or role in _MANAGERS:
        return
    if tool_name in CHANGING_TOOLS or (tool_name in REPLACING_TOOLS and _names_a_fact(arguments)):
        raise PermissionDenied(
            f"{tool_name} changes the project's shared memory, which only its owners and "
            "admins may do; ask one of them"
        )


def _names_a_fact(arguments: object) -> bool:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:  # the dispatcher refuses it with a clear message
            return False
    return isinstance(arguments, dict) and arguments.get("id") is not None


def org_admin_of(accounts: Accounts, caller: Caller) -> str | None:
    """The org the caller administers (seed 003's orgWide), if any."""
    if caller.local:
        return None
    return next((org for org, role in accounts.orgs(caller.user_id) if role == "admin"), None)


def require_org_admin(accounts: Accounts, caller: Caller) -> str:
    """The org whose members an org-wide search may read; :class:`PermissionDenied` for
    everyone but org admins."""
    org = org_admin_of(accounts, caller)
    if org is None:
        raise PermissionDenied("org-wide search is only for org admins; search without org_wide")
    return org


__all__ = [
    "CHANGING_TOOLS",
    "REPLACING_TOOLS",
    "Action",
    "Caller",
    "Unauthorized",
    "authorize",
    "authorize_tool",
    "org_admin_of",
    "project_role",
    "require_org_admin",
    "resolve_caller",
]
