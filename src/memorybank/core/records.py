"""Ready-made records stored as they are (:func:`save_records`): an import, a decision log, a
framework's items. No rephrasing and no duplicate check, as the records already say what to
keep; each is embedded anew with the bank's model, charged and queued like any write,
checked against the permission table for the project it names, and judged once against the
facts written before it (what it may update is kept, :mod:`memorybank.core.relations`).

>>> record = Memory(user_id="u1", content="User was told about the outage", category="context")
>>> [m.content for m in save_records(bank, [record], actor="u1")]
['User was told about the outage']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.core.relations import rejudge
from memorybank.core.writes import embedded
from memorybank.model import Memory, Role
from memorybank.providers.embedders.base import ProgressFn
from memorybank.rules.permissions import adding, require

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


def save_records(
    bank: MemoryBank,
    memories: Sequence[Memory],
    *,
    actor: str,
    role: Role | None = None,
    progress: ProgressFn | None = None,
) -> list[Memory]:
    """Store ``memories`` in one transaction, as they are, and return them as stored;
    ``actor`` is who the history names, ``role`` the caller's role in each record's project
    (``None``: the host application), ``progress`` told how far a long batch's embedding is."""
    for memory in memories:
        require(role, adding(memory.source), memory.project_id)
    if not memories:
        return []
    model = {"embedding_model": bank.embedder.model_id}
    ready = [m.model_copy(update=model) for m in memories]
    vectors = embedded(bank.writes, bank.embedder, [m.content for m in ready], progress)
    outcomes = bank.store.insert(ready, vectors, dedup=[False] * len(ready), actor=actor)
    stored = [o.memory for o in outcomes]
    # Stored as they are, and judged once like any fact: what each may update is kept.
    rejudge(bank.store, bank.judge, stored, vectors)
    return stored


__all__ = ["save_records"]
