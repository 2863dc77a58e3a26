"""Who may do what with memory: seed 002's permission table as data, and the one check.

    | action              | user memory | project memory              |
    |---------------------|-------------|-----------------------------|
    | view                | owner       | every member                |
    | add by the AI       | owner       | every member, during chat   |
    | add by hand, import | owner       | admin / owner               |
    | change, delete      | owner       | admin / owner               |
    | org-wide read       | org admins only (seed 003's ``orgWide``)  |

:data:`PROJECT_ROLES` is that table for project memory; nothing else in the code states these
rules. :class:`~memorybank.MemoryBank` checks every operation against it for the project the
operation reaches, whichever adapter or tool led there, using the role in the caller's
:class:`~memorybank.model.Caller` (``role=None`` is the host application itself, which may do
everything). A change made in a project's context needs admin or owner there even when the
memory it names turns out to be private: the call reached into shared memory, and what a
member's assistant may do there is add, never change or hide.

A user's private memory is only ever reached through the caller's own id, so "owner" there is
structural: no call can name another user's private scope. Whether a user is a member of a
project at all is the host's to know (the server's accounts): non-members never get a role.

>>> require("member", Action.ADD_AI, "apollo")
>>> try:
...     require("member", Action.CHANGE, "apollo")
... except RoleRequired as exc:
...     print(exc)
only the project's owners and admins can change or delete facts in 'apollo'; ask one of them
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from memorybank.errors import PermissionDenied, RoleRequired, ValidationError
from memorybank.model import Caller, Role, Source


class Action(StrEnum):
    """What a caller wants to do with a scope's memories."""

    VIEW = "view"
    ADD_AI = "add_ai"
    ADD_MANUAL = "add_manual"
    # Edit, delete, clear, supersede, forget: anything that changes or hides a stored memory.
    CHANGE = "change"


_EVERY_MEMBER: frozenset[Role] = frozenset({"owner", "admin", "member"})
_MANAGERS: frozenset[Role] = frozenset({"owner", "admin"})

#: Seed 002's table for project memory: the roles that may do each action.
PROJECT_ROLES: Mapping[Action, frozenset[Role]] = MappingProxyType(
    {
        Action.VIEW: _EVERY_MEMBER,
        Action.ADD_AI: _EVERY_MEMBER,
        Action.ADD_MANUAL: _MANAGERS,
        Action.CHANGE: _MANAGERS,
    }
)

_VERBS = {
    Action.VIEW: "see",
    Action.ADD_AI: "add facts to",
    Action.ADD_MANUAL: "add facts by hand to",
    Action.CHANGE: "change or delete facts in",
}


def allowed(role: Role | None, action: Action) -> bool:
    """Whether ``role`` may do ``action`` in a project (``None``: the host application).

    >>> [allowed(role, Action.CHANGE) for role in ("admin", "member", None)]
    [True, False, True]
    """
    return role is None or role in PROJECT_ROLES[action]


def require(role: Role | None, action: Action, project_id: str | None) -> None:
    """Raise :class:`~memorybank.errors.RoleRequired` (a :class:`~memorybank.PermissionDenied`)
    unless ``role`` may do ``action`` in ``project_id``; the user's private memory
    (``project_id=None``) is always the caller's own."""
    if project_id is None or allowed(role, action):
        return
    raise RoleRequired(
        f"only the project's owners and admins can {_VERBS[action]} {project_id!r}; ask one of them"
    )


def adding(source: Source | str) -> Action:
    """The action a save is: a fact the user typed or imported is added by hand, anything
    the assistant or an app over the API saved (a fact or a conversation turn) is added as the
    AI's are.

    >>> adding("user"), adding("ai")
    (<Action.ADD_MANUAL: 'add_manual'>, <Action.ADD_AI: 'add_ai'>)
    """
    return Action.ADD_MANUAL if Source(source) in (Source.USER, Source.IMPORT) else Action.ADD_AI


def retires_by_save(project_id: str | None, author_role: Role | None) -> bool:
    """Whether the author of a newer fact could have retired an older fact of its scope by
    saving it: always in their own private memory (``project_id=None``); in a project only
    when their role there may change facts, since a member's save keeps every fact it may
    update as a conflict. ``author_role`` is their role now; ``None``, no longer a member.
    Consolidation retires nothing a save by the newer fact's author could not have
    (issue 34): the rest it only proposes.

    >>> [retires_by_save("apollo", role) for role in ("owner", "admin", "member", None)]
    [True, True, False, False]
    >>> retires_by_save(None, None)
    True
    """
    return project_id is None or (
        author_role is not None and author_role in PROJECT_ROLES[Action.CHANGE]
    )


def require_org_admin(caller: Caller, argument: str = "orgWide") -> str:
    """The org whose members' private memory ``caller`` may read (seed 003's ``orgWide``,
    named ``argument`` in the messages); :class:`~memorybank.PermissionDenied` for everyone
    but an org admin, :class:`~memorybank.ValidationError` when the caller has no org."""
    if not caller.org_admin:
        raise PermissionDenied(f"{argument} is only for org admins; search without {argument}")
    if not caller.org_id:
        raise ValidationError(
            f"{argument} needs an org, and this conversation has none", field=argument
        )
    return caller.org_id


__all__ = [
    "PROJECT_ROLES",
    "Action",
    "adding",
    "allowed",
    "require",
    "require_org_admin",
    "retires_by_save",
]
