"""The scopes one call may touch (:func:`scope_set`): the checks every bank operation, and
every service that reads the store directly, makes of who is asking and where.

>>> scope_set("u1", "apollo").project_ids
('apollo',)
>>> scope_set("u1", None, "project")
Traceback (most recent call last):
...
memorybank.errors.ValidationError: scopes='project' needs a project_id
"""

from __future__ import annotations

from memorybank.errors import ValidationError
from memorybank.model import ScopeChoice, ScopeSet


def scope_set(user_id: str, project_id: str | None, scopes: ScopeChoice = "all") -> ScopeSet:
    """The scopes a call may touch: the user's private memory and/or one project's
    (``scopes``: ``"all"``, ``"user"`` or ``"project"``). A missing ``user_id``, an unknown
    choice, or ``"project"`` without a project is a :class:`~memorybank.ValidationError`."""
    if not user_id or not isinstance(user_id, str):
        raise ValidationError("user_id is required", field="user_id")
    if scopes not in ("all", "user", "project"):
        raise ValidationError(f"scopes {scopes!r} is not one of all, user, project", field="scopes")
    if scopes == "project" and project_id is None:
        raise ValidationError("scopes='project' needs a project_id", field="project_id")
    projects = (project_id,) if project_id is not None and scopes != "user" else ()
    return ScopeSet(user_id=user_id, include_private=scopes != "project", project_ids=projects)


__all__ = ["scope_set"]
