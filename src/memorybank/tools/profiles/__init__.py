"""Named tool sets, one per seed plus our recommended ``default``.

Profiles are imported on first use, so an application that only needs one pays for one and a
profile module that does not exist yet (``hyperspark`` while it is being written) breaks only
itself.

Facts saved through tools never carry the conversation's ``session_id``: in the bank a session
groups conversation turns, and retrieval lets turns of one session boost their neighbours,
which would tie unrelated facts from one chat together.

>>> profile("oxydra").tool("memory_search").tier
<SafetyTier.READ_ONLY: 'read_only'>
>>> profile("nope")
Traceback (most recent call last):
...
memorybank.errors.ValidationError: unknown tool profile 'nope': use one of blah, supermemory, pagespace, hyperspark, oxydra, default
"""  # noqa: E501

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from memorybank.errors import ValidationError
from memorybank.model import Conflict, SaveResult
from memorybank.tools.base import Handler, Profile, SafetyTier, Tool

__all__ = ["PROFILE_NAMES", "TIMEOUTS", "define", "profile", "with_conflicts"]

PROFILE_NAMES: tuple[str, ...] = (
    "blah",
    "supermemory",
    "pagespace",
    "hyperspark",
    "oxydra",
    "default",
)

# Seed 004: reads may take a search's worth of time, writes should be quick.
TIMEOUTS: dict[SafetyTier, float] = {
    SafetyTier.READ_ONLY: 15.0,
    SafetyTier.SIDE_EFFECTING: 10.0,
}


def with_conflicts(
    answer: dict[str, Any],
    conflicts: Sequence[Conflict] | SaveResult,
    id_key: str = "id",
    replaced: Sequence[Conflict] = (),
) -> dict[str, Any]:
    """``answer`` plus the stored facts the save replaced (``replaced``: superseded by the new
    one, their id under the profile's own name and text) and those it may update or
    contradict (``conflicts``: also why), so the calling model can tell the user what changed
    and update or delete the rest; each key only when there are some (a :class:`SaveResult`
    gives both lists).

    >>> with_conflicts({"success": True}, [Conflict(memory_id="m1", content="x", why="y")])
    {'success': True, 'conflicts': [{'id': 'm1', 'fact': 'x', 'why': 'y'}]}
    >>> with_conflicts({}, [], replaced=[Conflict(memory_id="m2", content="z")])
    {'replaced': [{'id': 'm2', 'fact': 'z'}]}
    """
    found = conflicts.conflicts if isinstance(conflicts, SaveResult) else conflicts
    gone = conflicts.replaced if isinstance(conflicts, SaveResult) else replaced
    if gone:
        answer["replaced"] = [{id_key: c.memory_id, "fact": c.content} for c in gone]
    if found:
        answer["conflicts"] = [
            {id_key: c.memory_id, "fact": c.content, "why": c.why} for c in found
        ]
    return answer


def define(
    name: str,
    description: str,
    arguments: type[BaseModel],
    handler: Handler,
    tier: SafetyTier,
    *,
    timeout_s: float | None = None,
    uses_llm: bool = False,
    limited: bool = False,
) -> Tool:
    """A :class:`Tool` whose timeout follows its safety tier unless given (``limited``: a
    read-only tool that still counts against the caller's write limit).

    >>> from memorybank.providers.json_schemas import Arguments
    >>> define("ping", "Check.", Arguments, lambda b, c, a: "pong", SafetyTier.READ_ONLY).timeout_s
    15.0
    """
    return Tool(
        name=name,
        description=description,
        arguments=arguments,
        handler=handler,
        tier=tier,
        timeout_s=TIMEOUTS[tier] if timeout_s is None else timeout_s,
        uses_llm=uses_llm,
        limited=limited,
    )


def profile(name: str) -> Profile:
    """The profile called ``name`` (one of :data:`PROFILE_NAMES`).

    Raises :class:`~memorybank.errors.ValidationError` naming the valid profiles otherwise.
    """
    if not isinstance(name, str) or name.strip().lower() not in PROFILE_NAMES:
        shown: Any = name if isinstance(name, str) else type(name).__name__
        raise ValidationError(
            f"unknown tool profile {shown!r}: use one of {', '.join(PROFILE_NAMES)}",
            field="profile",
        )
    module = importlib.import_module(f"{__name__}.{name.strip().lower()}")
    result = module.PROFILE
    if not isinstance(result, Profile):
        raise TypeError(f"{module.__name__}.PROFILE is not a Profile")
    return result
