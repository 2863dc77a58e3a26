"""Seed 004 (Oxydra): four tools over the user's notes, with their safety tiers and timeouts.

``memory_search`` (read-only, 15 s), ``memory_save``, ``memory_update``, ``memory_delete``
(side-effecting, 10 s). Notes live in the user's private scope, so they follow the user across
channels and never cross users; a note's id is its memory id. ``include_conversation`` also
searches the current conversation's stored messages (episodic conversation memories whose
``session_id`` is ``caller.thread_id``).

>>> [t.name for t in PROFILE.tools]
['memory_search', 'memory_save', 'memory_update', 'memory_delete']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from memorybank.errors import NotFound
from memorybank.model import Caller, Memory, Ring, SearchHit
from memorybank.providers.json_schemas import Arguments
from memorybank.rules.intake import is_conversation
from memorybank.rules.render import FACT_SOURCES
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import define, with_conflicts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

__all__ = [
    "PROFILE",
    "MemoryDeleteArgs",
    "MemorySaveArgs",
    "MemorySearchArgs",
    "MemoryUpdateArgs",
]

# Notes are lasting knowledge; "episodic" here holds what was said in conversations.
_NOTE_RINGS = [Ring.SEMANTIC.value, Ring.PROCEDURAL.value]


class MemorySearchArgs(Arguments):
    """Arguments of ``memory_search``."""

    query: str = Field(min_length=1, max_length=500, description="Natural language search query")
    top_k: int = Field(5, ge=1, le=20, description="Max results to return (default: 5, max: 20)")
    include_conversation: bool = Field(
        False, description="Also search the current conversation session (default: false)"
    )


class MemorySaveArgs(Arguments):
    """Arguments of ``memory_save``."""

    content: str = Field(
        min_length=1,
        max_length=500,
        description="Natural language text to save (fact, preference, decision, etc.)",
    )


class MemoryUpdateArgs(Arguments):
    """Arguments of ``memory_update``."""

    note_id: str = Field(
        min_length=1,
        max_length=100,
        description="ID of the note to update (from memory_search or memory_save results)",
    )
    content: str = Field(
        min_length=1, max_length=500, description="New content to replace the existing note"
    )


class MemoryDeleteArgs(Arguments):
    """Arguments of ``memory_delete``."""

    note_id: str = Field(
        min_length=1,
        max_length=100,
        description="ID of the note to delete (from memory_search results)",
    )


def _note(bank: MemoryBank, caller: Caller, note_id: str) -> Memory:
    """The user's note ``note_id``; conversation messages and project memories are not notes."""
    missing = NotFound(f"note {note_id!r} not found; use memory_search to find the note_id")
    try:
        memory = bank.get(note_id, caller.user_id)
    except NotFound:
        raise missing from None
    if memory.project_id is not None or is_conversation(memory.ring, memory.source):
        raise missing
    return memory


def _row(hit: SearchHit, source: str) -> dict[str, Any]:
    return {
        "note_id": hit.memory.id,
        "text": hit.memory.content,
        "score": round(hit.score, 4),
        "source": source,
    }


def memory_search(bank: MemoryBank, caller: Caller, args: MemorySearchArgs) -> list[dict[str, Any]]:
    """The user's notes (and optionally this conversation) best first, as a JSON array."""
    rows = [
        _row(hit, "user_memory")
        for hit in bank.search(
            caller.user_id,
            args.query,
            scopes="user",
            limit=args.top_k,
            ring=_NOTE_RINGS,
            source=FACT_SOURCES,  # notes: turns come only with include_conversation
        )
    ]
    if args.include_conversation and caller.thread_id is not None:
        said = bank.search(
            caller.user_id,
            args.query,
            project_id=caller.project_id,
            limit=args.top_k,
            ring=Ring.EPISODIC.value,
            session_id=caller.thread_id,
        )
        seen = {row["note_id"] for row in rows}
        rows += [
            _row(hit, "conversation")
            for hit in said
            if is_conversation(hit.memory.ring, hit.memory.source) and hit.memory.id not in seen
        ]
        # Both searches score on the same scale, so merging is a plain re-sort.
        rows.sort(key=lambda row: float(row["score"]), reverse=True)
    return rows[: args.top_k]


def memory_save(bank: MemoryBank, caller: Caller, args: MemorySaveArgs) -> dict[str, Any]:
    """Save a note in the user's private memory; its id is the note_id."""
    result = bank.save(caller.user_id, args.content)  # the seed has no category: inferred
    if result.duplicate:
        return {
            "note_id": result.existing_id,
            "message": f"A nearly identical note already exists ({result.existing_content!r}); "
            "nothing new was saved. Use memory_update with this note_id to change it.",
        }
    answer = {"note_id": result.memory_id, "message": f"Saved note: {result.content}"}
    return with_conflicts(answer, result, "note_id")


def memory_update(bank: MemoryBank, caller: Caller, args: MemoryUpdateArgs) -> dict[str, Any]:
    """Replace a note's content, keeping its note_id."""
    note = _note(bank, caller, args.note_id)
    changed = bank.update(note.id, caller.user_id, content=args.content)
    return {"note_id": changed.id, "message": f"Updated note: {changed.content}"}


def memory_delete(bank: MemoryBank, caller: Caller, args: MemoryDeleteArgs) -> dict[str, Any]:
    """Delete a note for real."""
    note = _note(bank, caller, args.note_id)
    bank.delete(note.id, caller.user_id)
    return {"note_id": note.id, "message": "Deleted note."}


# Seed 004, Step 9, word for word.
SEARCH_DESCRIPTION = (
    "Search your persistent memory for relevant information. Use this when you need to recall "
    "user preferences, past decisions, stored facts, or anything previously saved. Results are "
    "ranked by relevance using semantic similarity and keyword matching. By default searches "
    "only your saved notes; set include_conversation to true to also search the current "
    "conversation history."
)
SAVE_DESCRIPTION = (
    "Save an important piece of information to your persistent memory as a natural language "
    "note. Use this proactively whenever the user shares preferences, makes decisions, states "
    "facts, or tells you something worth remembering across conversations. Saved notes persist "
    "across all sessions and channels. Returns a note_id for future reference, the notes it "
    "replaced (replaced: tell the user), and any notes it may contradict (conflicts): update "
    "or delete those."
)
UPDATE_DESCRIPTION = (
    "Update a previously saved note with new content. Use this when the user corrects or "
    "changes previously stored information (e.g., a new preferred name, an updated "
    "preference). First use memory_search to find the note and its note_id, then call this "
    "with the note_id and the new content."
)
DELETE_DESCRIPTION = (
    "Delete a previously saved note from memory. Use this when the user asks you to forget "
    "specific information. First use memory_search to find the note and its note_id, then "
    "call this with the note_id to remove it."
)

GUIDANCE = """\
You have a persistent memory that belongs to this user and follows them across conversations \
and channels. Save important preferences, decisions and facts with memory_save as short natural \
language notes (e.g. "User's name is Shantanu"). Before answering questions about the user or \
past decisions, use memory_search. When the user corrects something, find the note with \
memory_search and change it with memory_update; when they ask you to forget something, find it \
and remove it with memory_delete.
"""

PROFILE = Profile(
    name="oxydra",
    description="Oxydra (seed 004): memory_search / memory_save / memory_update / "
    "memory_delete over per-user notes.",
    tools=(
        define(
            "memory_search",
            SEARCH_DESCRIPTION,
            MemorySearchArgs,
            memory_search,
            SafetyTier.READ_ONLY,
        ),
        define(
            "memory_save", SAVE_DESCRIPTION, MemorySaveArgs, memory_save, SafetyTier.SIDE_EFFECTING
        ),
        define(
            "memory_update",
            UPDATE_DESCRIPTION,
            MemoryUpdateArgs,
            memory_update,
            SafetyTier.SIDE_EFFECTING,
        ),
        define(
            "memory_delete",
            DELETE_DESCRIPTION,
            MemoryDeleteArgs,
            memory_delete,
            SafetyTier.SIDE_EFFECTING,
        ),
    ),
    guidance=GUIDANCE,
)
