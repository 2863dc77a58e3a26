"""Moving a scope's memories out and in: :func:`export` and :func:`import_` over a bank (the
formats themselves are :mod:`memorybank.rules.portability`), with the person's answers "both
are true" (:func:`memorybank.services.pairs.keep_both`) for pairs of them.

>>> data = export(bank, "u1")
>>> [r.success for r in import_(bank, "u2", data)] == [True] * len(bank.list("u1"))
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from memorybank.core.records import save_records
from memorybank.core.scopes import scope_set
from memorybank.errors import ValidationError
from memorybank.model import (
    Channel,
    Memory,
    MemoryFilter,
    Role,
    SaveResult,
    Scope,
    ScopeSet,
    acting_through,
)
from memorybank.model.stored import KeptPair
from memorybank.rules.intake import imported, stored
from memorybank.rules.permissions import Action, require
from memorybank.rules.portability import export_json, export_markdown, parse_document

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank
    from memorybank.providers.embedders.base import ProgressFn

_ALL = 1_000_000_000


def export(
    bank: MemoryBank,
    user_id: str,
    format: Literal["json", "markdown"] = "json",
    *,
    project_id: str | None = None,
) -> str:
    """Every memory of one scope as JSON (lossless, with the pairs of them answered "both are
    true") or Markdown (for people)."""
    scopes = scope_set(user_id, project_id, "project" if project_id else "user")
    memories = bank.store.list_memories(scopes, MemoryFilter(), limit=_ALL, order="created_asc")
    if format == "json":
        kept = bank.store.kept_pairs([m.id for m in memories]) if memories else []
        return export_json(user_id, project_id, memories, kept)
    if format == "markdown":
        return export_markdown(user_id, project_id, memories)
    raise ValidationError(f"unknown export format {format!r}: use json or markdown", field="format")


def import_(
    bank: MemoryBank,
    user_id: str,
    data: str | bytes | Mapping[str, Any],
    *,
    project_id: str | None = None,
    progress: ProgressFn | None = None,
    role: Role | None = None,
) -> list[SaveResult]:
    """Load a JSON export into ``user_id`` (and ``project_id``): times, categories and
    metadata are kept, vectors are made anew; memories the scope already holds are skipped.
    The export's answers "both are true" are kept too, for the memories it stored or held
    already (with who answered and when). Every item is validated as a save validates it,
    and every pair (see :func:`~memorybank.rules.portability.parse_document`): the first
    invalid one is a :class:`~memorybank.errors.ValidationError` naming its index, and
    nothing is imported.

    Ids are kept only for the host application itself (``role=None``, a restore): a user's
    import gets new ids throughout, so its answer cannot tell whether an id exists in
    someone else's memory (see :func:`memorybank.rules.intake.imported`), and names the
    importer as the author of what it stores and as the actor of its answers "both are
    true", whoever the document names (issue 44)."""
    scope_set(user_id, project_id)
    require(role, Action.ADD_MANUAL, project_id)
    target = ScopeSet.of(Scope(user_id=user_id, project_id=project_id))
    document = parse_document(data, bank.policy)
    memories = document.memories
    keep_ids = role is None
    taken = bank.store.existing_ids([m.id for m in memories]) if keep_ids else set()
    # What the target scope holds already, so importing the same file twice (even into
    # another user, where ids had to change) adds nothing the second time.
    present = {
        (m.content, m.created_at): m.id
        for m in bank.store.list_memories(target, MemoryFilter(), limit=_ALL)
    }
    importer = None if keep_ids else user_id
    results, fresh = imported(
        memories, taken, present, user_id, project_id, keep_ids=keep_ids, author=importer
    )
    new_ids = _new_ids(memories, present, fresh)
    fresh = _relinked(fresh, new_ids, keep=bank.store.existing_ids if keep_ids else None)
    with acting_through(Channel.IMPORT):  # the records keep their source: who first said it
        added = save_records(bank, fresh, actor=user_id, role=role, progress=progress)
    held = set(present.values()) | {m.id for m in added}
    bank.store.keep_pairs(_moved_pairs(document.pairs, new_ids, held, importer))
    return results + [stored(m) for m in added]


def _new_ids(
    memories: Sequence[Memory],
    present: Mapping[tuple[str, datetime], str],
    fresh: Sequence[Memory],
) -> dict[str, str]:
    """The id each of the document's ``memories`` has here: the one it is stored under now
    (``fresh``), or the one it was already held under (``present``)."""
    new_ids: dict[str, str] = {}
    stored_ones = iter(fresh)
    for memory in memories:  # imported() keeps the document's order, skipping what is held
        held = present.get((memory.content, memory.created_at))
        new_ids[memory.id] = held if held is not None else next(stored_ones).id
    return new_ids


def _moved_pairs(
    pairs: Sequence[KeptPair], new_ids: Mapping[str, str], held: set[str], actor: str | None
) -> list[KeptPair]:
    """The document's pairs on the ids its memories have here, answered by ``actor`` (a
    user's import: the importer; ``None``: whoever the document says, a restore). A pair is
    dropped when one of its memories is not held here after the import (not stored): it
    would pair nothing."""
    moved = []
    for pair in pairs:
        newer, other = new_ids.get(pair.memory_id), new_ids.get(pair.other_id)
        if newer is None or other is None or newer == other:
            continue
        if newer in held and other in held:
            moved.append(KeptPair(newer, other, actor or pair.actor, pair.decided_at))
    return moved


def _relinked(
    fresh: Sequence[Memory],
    new_ids: Mapping[str, str],
    keep: Callable[[list[str]], set[str]] | None,
) -> list[Memory]:
    """``fresh`` with each ``superseded_by`` following its memory's new id (``new_ids``: the
    memory the document's id became here, stored now or already held from an earlier
    import). A link to a memory the document does not hold is kept only for the host
    application's own restore (``keep``) and only while that id is stored; a user's import
    drops it, since it would point at nothing of theirs (and the fact it names as outdated
    comes back as current)."""
    outside = {m.superseded_by for m in fresh if m.superseded_by and m.superseded_by not in new_ids}
    still_stored = keep(sorted(outside)) if keep is not None and outside else set()
    relinked = []
    for memory in fresh:
        link = memory.superseded_by
        if link is not None:
            link = new_ids.get(link, link if link in still_stored else None)
        relinked.append(memory.model_copy(update={"superseded_by": link}))
    return relinked


__all__ = ["export", "import_"]
