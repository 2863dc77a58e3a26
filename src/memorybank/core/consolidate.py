"""Consolidation (seed 000, future 1): find the duplicates a scope already holds and merge
each cluster into one memory, after a preview.

Duplicates stored before the judge of :mod:`memorybank.rules.verdicts` existed (seed 000's "cosine
> 0.95" let "User currently lives in London" and "User lives in London" both in), or saved by two
tools at once, stay until something tidies them. A cluster is built around the memory that
says the most: a memory joins it only when the judge says it adds nothing to that one (so no
information is lost by the merge). The kept memory takes the cluster's highest importance and
all its tags; each merged memory is marked superseded by the kept one, with a MERGE history
event on both, so it leaves search and the prompt but stays in history (and a forget still
reaches it).

Nothing changes on a preview (``dry_run=True``, the default); applying recomputes the
clusters, so a memory changed in between is judged as it is now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np

from memorybank.model import (
    Channel,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Role,
    Scope,
    ScopeSet,
    utcnow,
)
from memorybank.model.stored import from_us, to_us
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.intake import is_conversation
from memorybank.rules.permissions import Action, require
from memorybank.rules.verdicts import THRESHOLDS, Relation, judge, specificity
from memorybank.stores.base import Store

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

#: Rows of the similarity matrix computed at once (memory stays ~ BLOCK × scope size floats).
_BLOCK = 512
#: Memories read a page at a time.
_PAGE = 1000


@dataclass(frozen=True)
class Merge:
    """One cluster: the memory kept and the memories merged into it (each adds nothing)."""

    keep: Memory
    merged: tuple[Memory, ...]
    importance: int  # the kept memory's importance after the merge (the cluster's highest)
    tags: tuple[str, ...]  # the kept memory's tags after the merge (all the cluster's)

    def as_dict(self) -> dict[str, object]:
        """The merge as plain data (for the API and the CLI)."""
        return {
            "keep": {"id": self.keep.id, "content": self.keep.content},
            "merged": [{"id": m.id, "content": m.content} for m in self.merged],
            "importance": self.importance,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class Consolidation:
    """What :func:`consolidate` found in one scope, and whether it was applied."""

    user_id: str
    project_id: str | None
    merges: tuple[Merge, ...] = ()
    applied: bool = False
    examined: int = 0  # memories looked at

    @property
    def merged_count(self) -> int:
        """How many memories are (or would be) merged into others."""
        return sum(len(m.merged) for m in self.merges)

    def as_dict(self) -> dict[str, object]:
        """The consolidation as plain data (for the API and the CLI)."""
        return {
            "user_id": self.user_id,
            "project_id": self.project_id,
            "applied": self.applied,
            "examined": self.examined,
            "merged_count": self.merged_count,
            "merges": [m.as_dict() for m in self.merges],
        }


def run(
    store: Store,
    user_id: str,
    project_id: str | None = None,
    *,
    dry_run: bool = True,
    only: Sequence[str] | None = None,
    role: Role | None = None,
    actor: str | None = None,
) -> Consolidation:
    """Find (and unless ``dry_run``, apply) the merges of one scope: the user's private
    memory, or ``project_id``'s. Applying in a project needs its admin or owner (``role``);
    ``only`` applies just the merges that keep these ids (the ones a person confirmed).

    >>> a = bank.save("u1", "User lives in London", "identity")
    >>> b = bank.save("u1", "User currently lives in London", "identity", on_conflict="keep")
    >>> preview = consolidate(bank, "u1")  # b was refused already: nothing to merge
    >>> preview.merged_count, preview.applied
    (0, False)
    """
    if not dry_run:
        require(role, Action.CHANGE, project_id)
    memories = current_facts(store, Scope(user_id=user_id, project_id=project_id))
    vectors = store.vectors_of([m.id for m in memories]) if memories else {}
    memories = [m for m in memories if m.id in vectors]
    ordered = np.stack([vectors[m.id] for m in memories]) if memories else np.zeros((0, 1))
    merges = plan(memories, ordered.astype(np.float32))
    chosen = merges if only is None else [m for m in merges if m.keep.id in set(only)]
    if not dry_run:
        apply(store, chosen, actor or user_id)
    return Consolidation(
        user_id=user_id,
        project_id=project_id,
        merges=tuple(chosen),
        applied=not dry_run,
        examined=len(memories),
    )


#: The store meta key holding when the scheduled job last ran (µs since the epoch).
LAST_RUN_KEY = "consolidated_at_us"
#: Who the scheduled job's history events name.
SCHEDULED_ACTOR = "memorybank:consolidation"


def consolidate(
    bank: MemoryBank,
    user_id: str,
    project_id: str | None = None,
    *,
    dry_run: bool = True,
    only: Sequence[str] | None = None,
    role: Role | None = None,
) -> Consolidation:
    """Merge one scope's duplicates in ``bank`` (:func:`run`, with the ids checked first): a
    preview unless ``dry_run=False``; ``only`` applies just the merges keeping these ids."""
    bank.scope_set(user_id, project_id)
    return run(bank.store, user_id, project_id, dry_run=dry_run, only=only, role=role)


def run_scheduled(store: Store, every: timedelta) -> list[Consolidation] | None:
    """The server's scheduled tidy-up: when ``every`` has passed since the last run (kept in
    the store, so restarts and other workers agree), apply the merges of every scope; the
    scopes where something was merged, or ``None`` when it was not due yet.

    Applying without a preview is the operator's choice (``MEMORYBANK_CONSOLIDATE_EVERY_HOURS``
    is off by default); each merge can still be read in history and undone by hand.
    """
    now = utcnow()
    last = store.get_meta(LAST_RUN_KEY)
    if last is not None and now - from_us(int(last)) < every:
        return None
    store.set_meta(LAST_RUN_KEY, str(to_us(now)))  # first, so a parallel worker skips
    done = [
        run(store, scope.user_id, scope.project_id, dry_run=False, actor=SCHEDULED_ACTOR)
        for scope in store.scopes()
    ]
    return [c for c in done if c.merges]


def current_facts(store: Store, scope: Scope) -> list[Memory]:
    """The scope's current facts (conversation turns and superseded memories left out)."""
    scopes = ScopeSet.of(scope)
    found: list[Memory] = []
    offset = 0
    while True:
        page = store.list_memories(
            scopes, MemoryFilter(superseded=False), limit=_PAGE, offset=offset, order="created_asc"
        )
        found += [m for m in page if not is_conversation(m.ring, m.source)]
        if len(page) < _PAGE:
            return found
        offset += _PAGE


def plan(memories: Sequence[Memory], vectors: Vectors) -> list[Merge]:
    """The merges among ``memories`` (rows of ``vectors`` in the same order).

    Keepers are chosen most specific first (then most important, then newest): each memory
    not yet in a cluster becomes a keeper, and every similar memory not yet placed that the
    judge calls a duplicate of it joins its cluster.
    """
    if len(memories) < 2:
        return []
    order = sorted(
        range(len(memories)),
        key=lambda i: (
            -specificity(memories[i].content),
            -memories[i].importance,
            -memories[i].updated_at.timestamp(),
        ),
    )
    similar = _similar(vectors)
    placed: set[int] = set()
    merges: list[Merge] = []
    for keeper in order:
        if keeper in placed:
            continue
        placed.add(keeper)
        joined = [
            other
            for other, similarity in similar[keeper]
            if other not in placed
            and judge(memories[other].content, memories[keeper].content, similarity).relation
            is Relation.DUPLICATE
        ]
        if not joined:
            continue
        placed.update(joined)
        cluster = [memories[keeper], *(memories[i] for i in joined)]
        merges.append(
            Merge(
                keep=memories[keeper],
                merged=tuple(memories[i] for i in joined),
                importance=max(m.importance for m in cluster),
                tags=tuple(dict.fromkeys(t for m in cluster for t in m.tags)),
            )
        )
    return merges


def _similar(vectors: Vectors) -> list[list[tuple[int, float]]]:
    """For each row, the other rows similar enough to be judged against it (at least
    :attr:`~memorybank.rules.verdicts.Thresholds.candidate`, as a save's candidates)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    out: list[list[tuple[int, float]]] = []
    for start in range(0, len(matrix), _BLOCK):
        block = matrix[start : start + _BLOCK] @ matrix.T
        for row_index, row in enumerate(block):
            me = start + row_index
            hits = np.nonzero(row >= THRESHOLDS.candidate)[0]
            out.append([(int(j), float(row[j])) for j in hits if j != me])
    return out


def apply(store: Store, merges: Sequence[Merge], actor: str) -> None:
    """Apply ``merges``: the kept memory takes the cluster's importance and tags, each merged
    memory is superseded by it; a MERGE event on each (no text, as for SUPERSEDE: the link is
    ``superseded_by``, and a forget of either must not leave words in the other's history)."""
    for merge in merges:
        now = utcnow()
        kept = merge.keep.model_copy(
            update={"importance": merge.importance, "tags": merge.tags, "updated_at": now}
        )
        through = Channel.CONSOLIDATION
        event = HistoryEvent.about(merge.keep, EventKind.MERGE, actor, channel=through)
        store.replace(kept, None, event)
        for old in merge.merged:
            marked = old.model_copy(update={"superseded_by": merge.keep.id, "updated_at": now})
            store.replace(
                marked, None, HistoryEvent.about(old, EventKind.MERGE, actor, channel=through)
            )


__all__ = [
    "LAST_RUN_KEY",
    "SCHEDULED_ACTOR",
    "Consolidation",
    "consolidate",
    "Merge",
    "apply",
    "current_facts",
    "plan",
    "run",
    "run_scheduled",
]
