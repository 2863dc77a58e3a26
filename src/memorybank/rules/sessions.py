"""Implicit sessions: conversation turns saved without a ``session_id`` get one from save
order and time gaps, so the retrieval steps that read a conversation around a turn (session
neighbours, :mod:`memorybank.rules.ranking`) work for apps that keep no threads.

A turn (``ring="episodic"``, ``source="conversation"``) saved without a ``session_id``
continues the implicit session of the turn saved before it (in the same batch, else the
scope's latest turn) when the two happened within :data:`SESSION_GAP` of each other (by
``occurred_at``, else ``created_at``); otherwise it starts a new one, named
``auto_<its memory id>``. A turn saved with a ``session_id`` keeps it, and explicit sessions
are never continued implicitly.

A turn whose metadata has no ``speaker`` but whose text starts with a name and a colon
(``"Caroline: I went hiking"``: one to three capitalised words) gets that name as
``metadata["speaker"]`` (every chunk of a long turn does), so the speaker step of retrieval
works too. A ``speaker`` of ``None`` in the metadata says "no speaker" and is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from memorybank.model import Memory
from memorybank.rules.intake import is_conversation

SESSION_GAP = timedelta(minutes=30)
"""A longer silence between two turns starts a new implicit session."""

IMPLICIT_PREFIX = "auto_"
"""How an implicit session's id starts."""

_SPEAKER = re.compile(r"^\s*([A-Z][\w'’.-]{0,30}(?: [A-Z][\w'’.-]{0,30}){0,2}):\s+\S")


def speaker_prefix(text: str) -> str | None:
    """The name a turn's text starts with (``"Name: …"``), else ``None``.

    >>> speaker_prefix("Mary Ann: I went hiking")
    'Mary Ann'
    >>> speaker_prefix("note: the build is green") is None
    True
    """
    found = _SPEAKER.match(text)
    return found.group(1) if found else None


def _when(memory: Memory) -> datetime:
    return memory.occurred_at or memory.created_at


def _with_speaker(memory: Memory, previous: Memory | None) -> Memory:
    """``memory`` with the speaker its text names; a later chunk of a long turn
    (``metadata["chunk"]`` > 0) has the speaker of the chunk before it."""
    if "speaker" in memory.metadata:
        return memory
    chunk = memory.metadata.get("chunk")
    if isinstance(chunk, int) and chunk > 0 and previous is not None:
        name = previous.metadata.get("speaker")
    else:
        name = speaker_prefix(memory.content)
    if not isinstance(name, str):
        return memory
    return memory.model_copy(update={"metadata": {**memory.metadata, "speaker": name}})


def assign_sessions(
    memories: Sequence[Memory], latest: Callable[[], Memory | None]
) -> list[Memory]:
    """``memories`` (one save, in save order, all in one scope) with implicit sessions and
    speakers filled in. ``latest`` gives the scope's most recent turn; it is called only
    when a turn needs a session.

    >>> from datetime import UTC
    >>> day = datetime(2024, 5, 1, 9, tzinfo=UTC)
    >>> def turn(text, minutes):
    ...     return Memory(user_id="u", content=text, category="context", ring="episodic",
    ...                   source="conversation", occurred_at=day + timedelta(minutes=minutes))
    >>> a, b, c = assign_sessions([turn("Ann: hi", 0), turn("Bo: hey", 2),
    ...                            turn("Ann: back", 300)], lambda: None)
    >>> a.session_id == b.session_id != c.session_id, a.metadata["speaker"]
    (True, 'Ann')
    """
    out: list[Memory] = []
    previous: Memory | None = None
    looked = False
    for memory in memories:
        if not is_conversation(memory.ring, memory.source):
            out.append(memory)
            continue
        memory = _with_speaker(memory, previous)
        if memory.session_id is None:
            if not looked and previous is None:
                previous, looked = latest(), True
            session = f"{IMPLICIT_PREFIX}{memory.id}"
            if (
                previous is not None
                and previous.session_id is not None
                and previous.session_id.startswith(IMPLICIT_PREFIX)
                and abs(_when(memory) - _when(previous)) <= SESSION_GAP
            ):
                session = previous.session_id
            memory = memory.model_copy(update={"session_id": session})
        out.append(memory)
        previous = memory
    return out


__all__ = ["IMPLICIT_PREFIX", "SESSION_GAP", "assign_sessions", "speaker_prefix"]
