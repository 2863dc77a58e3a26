"""The pairs a save asked about: a new fact and a stored one it may update (the save's
``conflicts``), kept by the store until somebody answers. "Replace" is
:meth:`~memorybank.MemoryBank.supersede` (a restore asks again); "both are true" is
:func:`keep_both`, recorded for good: the pair leaves :func:`open_pairs`, and a memory block
never shows the older as an earlier, maybe outdated value of the newer.

>>> a = bank.save("u1", "User works at Globex as an engineer", "identity").memory_id
>>> b = bank.save("u1", "User moved to Initech as an engineer", "identity")
>>> [(new.id, old.id) for new, old in open_pairs(bank, "u1")] == [(b.memory_id, a)]
True
>>> keep_both(bank, b.memory_id, a, "u1")
>>> open_pairs(bank, "u1")
[]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.core.scopes import scope_set
from memorybank.errors import ValidationError
from memorybank.model import Memory, Role, ScopeChoice
from memorybank.rules.permissions import Action, require

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


def keep_both(
    bank: MemoryBank,
    memory_id: str,
    other_id: str,
    user_id: str,
    *,
    project_id: str | None = None,
    actor: str | None = None,
    role: Role | None = None,
) -> None:
    """Answer "both are true" for a fact and one it may update (either order): both stay
    current and the answer is stored, so every adapter and browser sees it. Facts of two
    scopes, or a fact paired with itself, are a :class:`~memorybank.ValidationError`."""
    require(role, Action.CHANGE, project_id)
    if memory_id == other_id:
        raise ValidationError(
            f"memory {memory_id!r} cannot be paired with itself; name the other fact",
            field="other_id",
        )
    newer = bank.get(memory_id, user_id, project_id=project_id)
    other = bank.get(other_id, user_id, project_id=project_id)
    if newer.scope.key != other.scope.key:
        raise ValidationError(
            f"memories {memory_id!r} and {other_id!r} are in different scopes; only facts "
            "of one scope are asked about as a pair",
            field="other_id",
        )
    bank.store.keep_both(newer, other, actor or user_id)


def open_pairs(
    bank: MemoryBank,
    user_id: str,
    *,
    project_id: str | None = None,
    scopes: ScopeChoice = "all",
    limit: int = 100,
) -> list[tuple[Memory, Memory]]:
    """The (newer, older) facts a save said may be an update that nobody has answered yet,
    oldest question first."""
    if not 1 <= limit <= 1000:
        raise ValidationError("limit must be 1–1000", field="limit")
    chosen = scope_set(user_id, project_id, scopes)
    return bank.store.open_pairs([s.key for s in chosen.scopes()], limit)


__all__ = ["keep_both", "open_pairs"]
