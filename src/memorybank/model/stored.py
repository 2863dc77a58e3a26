"""What stores hand back, as plain values: times as integer microseconds, rows decoded into
:class:`Memory`, search candidates that decode lazily, and the outcomes of inserts and forget
plans. Ranking (:mod:`memorybank.rules.ranking`) reads these without knowing any store.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memorybank.model.memory import Category, Decision, Domain, Memory, Ring, Source
from memorybank.model.times import MAX_US, MIN_US, clamped_us
from memorybank.model.times import from_us as from_us
from memorybank.model.times import to_us as to_us

# Enum members by value: a dict lookup, where calling the enum class costs microseconds a row.
_CATEGORIES = {member.value: member for member in Category}
_RINGS = {member.value: member for member in Ring}
_DOMAINS = {member.value: member for member in Domain}
_SOURCES = {member.value: member for member in Source}


def last_touched(memory: Memory) -> datetime:
    """When a memory was last saved, changed or reinforced (importance decays from then)."""
    if memory.reinforced_at is None or memory.reinforced_at < memory.updated_at:
        return memory.updated_at
    return memory.reinforced_at


def memory_from_row(row: Sequence[Any], tags: tuple[str, ...], metadata: dict[str, Any]) -> Memory:
    """A memory from a row in the column order both stores select (rowid first), with its
    tags and metadata already decoded (JSON text in SQLite, jsonb in PostgreSQL).

    Rows were validated on their way in, so they are not validated again: a search builds
    50-100 of them, and this is most of its CPU after the query embedding.
    """
    return Memory.from_trusted(
        id=row[1],
        user_id=row[2],
        project_id=row[3],
        content=row[4],
        category=_CATEGORIES[row[5]],
        ring=_RINGS[row[6]],
        domain=None if row[7] is None else _DOMAINS[row[7]],
        tags=tags,
        metadata=metadata,
        importance=row[10],
        source=_SOURCES[row[11]],
        created_by=row[12],
        reasoning=row[13],
        session_id=row[14],
        created_at=from_us(row[15]),
        updated_at=from_us(row[16]),
        occurred_at=from_us(row[17]),
        embedding_model=row[18],
        decision=None if row[19] is None else Decision.model_validate_json(row[19]),
        superseded_by=row[20],
        reinforced_at=from_us(row[21]),
    )


@dataclass(frozen=True)
class InsertOutcome:
    """What happened to one item of :meth:`Store.insert`."""

    memory: Memory
    inserted: bool
    duplicate_of: Memory | None = None
    similarity: float | None = None
    #: Stored facts the judge said the inserted one may update or contradict (kept).
    conflicts: tuple[Related, ...] = ()
    #: Stored facts it replaced: superseded by it in the insert's transaction.
    superseded: tuple[Related, ...] = ()
    #: The stored fact it restated (a probable duplicate): that fact, now in the new wording
    #: (its earlier wording is in its history); nothing new was inserted.
    restated: Memory | None = None


@dataclass(frozen=True)
class Related:
    """A stored memory a judge related to a new one: its similarity, why, and the judge's
    reading of the pair when it read one (``scores``: the probabilities of duplicate, update
    and distinct; ``judge``: which judge read them), which the store keeps with the relation."""

    memory: Memory
    similarity: float
    why: str = ""
    scores: tuple[float, float, float] | None = None
    judge: str | None = None


@dataclass(frozen=True)
class KeptPair:
    """A person's answer "both are true" for two facts: ``memory_id`` is the one a save said
    may update ``other_id``; ``actor`` answered at ``decided_at``."""

    memory_id: str
    other_id: str
    actor: str | None
    decided_at: datetime


def speaker_of(metadata: Mapping[str, Any]) -> str | None:
    """The non-blank ``metadata["speaker"]`` of a conversation turn, stripped, else ``None``."""
    speaker = metadata.get("speaker")
    return speaker.strip() if isinstance(speaker, str) and speaker.strip() else None


@functools.lru_cache(maxsize=65_536)
def _role_in(metadata: str) -> Any:
    """The ``role`` of a turn's metadata JSON text (cached: a search reads the same turns
    again and again)."""
    try:
        decoded = json.loads(metadata)
    except (ValueError, RecursionError):  # unreadable metadata names no role
        return None
    return decoded.get("role") if isinstance(decoded, dict) else None


class Candidate:
    """A memory returned by one retrieval signal with that signal's raw score.

    A search ranks 50-100 candidates and returns about ten, so a candidate made from a stored
    row keeps the row and decodes up front only what ranking reads (id, importance, times,
    session, speaker); the :class:`Memory` is built the first time :attr:`memory` is read.

    >>> memory = Memory(user_id="u", content="User likes tea", category="preference")
    >>> c = Candidate.of(memory, 0.8)
    >>> (c.memory.content, c.score, c.importance)
    ('User likes tea', 0.8, 5)
    """

    __slots__ = (
        "_decode",
        "_memory",
        "_row",
        "created_us",
        "id",
        "importance",
        "occurred_us",
        "score",
        "session_id",
        "speaker",
        "touched_us",
    )

    def __init__(
        self,
        row: Sequence[Any],
        score: float,
        decode: Callable[[Sequence[Any]], Memory],
        speaker: str | None,
    ) -> None:
        """From a row in the stores' column order (see :func:`memory_from_row`); ``decode``
        builds its memory when asked, ``speaker`` is what :func:`speaker_of` says of it."""
        self._row: Sequence[Any] | None = row
        self._decode = decode
        self._memory: Memory | None = None
        self.score = score
        self.id: str = row[1]
        self.session_id: str | None = row[14]
        importance, created, updated, occurred, reinforced = (
            row[10],
            row[15],
            row[16],
            row[17],
            row[21],
        )
        if not _plain(importance, created, updated, occurred, reinforced):
            # A row no save wrote (by hand, or before times were checked): ranked with the
            # nearest values that are valid, as its memory will be decoded (stores.rows).
            importance = min(max(importance, 1), 10) if type(importance) is int else 5
            created, updated = _us(created, 0), _us(updated, _us(created, 0))
            occurred = None if occurred is None else _us(occurred, None)
            reinforced = None if reinforced is None else _us(reinforced, None)
        self.importance: int = importance
        self.created_us: int = created
        self.occurred_us: int | None = occurred
        # Last saved, changed or reinforced: where importance decay starts.
        self.touched_us: int = updated if reinforced is None else max(updated, reinforced)
        self.speaker = speaker

    @classmethod
    def of(cls, memory: Memory, score: float) -> Candidate:
        """A candidate for a memory already built."""
        candidate = cls.__new__(cls)
        candidate._row, candidate._memory = None, memory
        candidate.score = score
        candidate.id, candidate.importance = memory.id, memory.importance
        candidate.session_id = memory.session_id
        candidate.created_us = to_us(memory.created_at)
        candidate.occurred_us = to_us(memory.occurred_at)
        candidate.touched_us = to_us(last_touched(memory))
        candidate.speaker = speaker_of(memory.metadata)
        return candidate

    @property
    def assistant(self) -> bool:
        """Whether the memory is a conversation turn the assistant said (``metadata.role``),
        read from the row without building the memory."""
        if self._row is None:
            memory = self.memory
            return memory.source == "conversation" and memory.metadata.get("role") == "assistant"
        if self._row[11] != "conversation":
            return False
        metadata = self._row[9]
        if isinstance(metadata, str):
            return '"assistant"' in metadata and _role_in(metadata) == "assistant"
        return isinstance(metadata, Mapping) and metadata.get("role") == "assistant"

    @property
    def content(self) -> str:
        """The memory's text (read from the row: the memory is not built for it)."""
        if self._row is not None:
            return str(self._row[4])
        return self.memory.content

    @property
    def memory(self) -> Memory:
        """The whole memory (built from the row on first use)."""
        if self._memory is None:
            assert self._row is not None
            self._memory, self._row = self._decode(self._row), None
        return self._memory

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Candidate):
            return NotImplemented
        return (self.id, self.score) == (other.id, other.score)

    def __hash__(self) -> int:
        return hash((self.id, self.score))

    def __repr__(self) -> str:
        return f"Candidate(id={self.id!r}, score={self.score!r})"


def _plain(importance: Any, *times: Any) -> bool:
    """Whether a row's importance and times are what saves write (one check, in the common
    case: a search reads 50-100 rows)."""
    try:
        return (
            1 <= importance <= 10
            and all(t is None or MIN_US <= t <= MAX_US for t in times)
            and type(importance) is int
        )
    except TypeError:  # text where a number belongs
        return False


def _us(value: Any, default: Any) -> Any:
    """Stored microseconds brought into the readable range; ``default`` for no number."""
    if type(value) in (int, float) and math.isfinite(value):
        return clamped_us(int(value))
    return default


@dataclass(frozen=True)
class PlanOutcome:
    """What :meth:`Store.execute_forget_plan` did: ids deleted and rewritten, how many were
    kept, ids that were already gone when the plan ran, and ids whose history was redacted."""

    forgotten: list[str]
    rewritten: list[str]
    kept: int
    missing: list[str]
    redacted: list[str] = field(default_factory=list)
