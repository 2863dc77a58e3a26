"""Seed 001 (Supermemory in a chat app): ``add_memory`` and ``search_memories``, scoped by folder.

Supermemory scopes every call with *container tags*: the user id, the folder's project tag
(``tag:project:<id>``, or ``tag:project:none`` for unfoldered chats) and optional
``category:<c>`` / ``tag:<t>`` entries. Here those are the memory's tags, and folder chats also
store into the folder's project scope, so:

* a chat in folder P reads and writes only P's pool (project scope P, tag ``tag:project:P``);
* an unfoldered chat reads and writes only the user's ``tag:project:none`` pool;
* the user id among the tags keeps one member's folder memories out of another's searches.

>>> container_tags(Caller(user_id="u1", project_id="p9"), "Incident", ["followup"])
['u1', 'tag:project:p9', 'category:incident', 'tag:followup']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from memorybank.errors import ValidationError
from memorybank.model import Caller, Category, utcnow
from memorybank.providers.json_schemas import Arguments
from memorybank.rules.render import FACT_SOURCES
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import define, with_conflicts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

__all__ = ["PROFILE", "AddMemoryArgs", "MemoryMetadata", "SearchMemoriesArgs", "container_tags"]

Label = Annotated[str, Field(min_length=1, max_length=48)]


def _label(value: str) -> str:
    # Case-folded so "Incident" saved today matches "incident" searched tomorrow.
    return " ".join(value.split()).lower()


def container_tags(
    caller: Caller, category: str | None = None, tags: Sequence[str] | None = None
) -> list[str]:
    """The seed's ``containerTags`` for a call: user, folder, then optional category and tags."""
    out = [caller.user_id, f"tag:project:{caller.project_id or 'none'}"]
    if category is not None and _label(category):
        out.append(f"category:{_label(category)}")
    for tag in tags or ():
        entry = f"tag:{_label(tag)}"
        if _label(tag) and entry not in out:
            out.append(entry)
    return out


class MemoryMetadata(Arguments):
    """Optional metadata of ``add_memory`` (seed 001: every field may be null)."""

    title: str | None = Field(None, max_length=200, description="Short title for the memory")
    category: Label | None = Field(
        None, description="One-word grouping such as 'preference' or 'incident'"
    )
    tags: list[Label] | None = Field(
        None, max_length=10, description="Keywords to filter by later, e.g. ['followup']"
    )


class AddMemoryArgs(Arguments):
    """Arguments of ``add_memory``."""

    content: str = Field(
        min_length=1,
        max_length=500,
        description="The information to remember, as a self-contained statement in the third "
        "person (e.g. 'User prefers concise answers')",
    )
    metadata: MemoryMetadata | None = Field(None, description="Optional title, category and tags")


class SearchMemoriesArgs(Arguments):
    """Arguments of ``search_memories``."""

    query: str = Field(
        min_length=1, max_length=500, description="What to look for, in natural language"
    )
    limit: int = Field(5, ge=1, le=10, description="Maximum number of results (default 5)")
    category: Label | None = Field(None, description="Only memories saved with this category")
    tags: list[Label] | None = Field(
        None, max_length=10, description="Only memories saved with all of these tags"
    )


def _bank_category(value: str | None) -> Category | None:
    """Supermemory categories are free text; ours drive importance, so map what we can and let
    the bank infer the rest from the content (``None``), as ``bank.save`` does."""
    try:
        return Category(_label(value or ""))
    except ValueError:
        return None


def _search_scope(caller: Caller) -> dict[str, Any]:
    if caller.project_id is None:
        return {"scopes": "user"}
    return {"project_id": caller.project_id, "scopes": "project"}


def add_memory(bank: MemoryBank, caller: Caller, args: AddMemoryArgs) -> dict[str, Any]:
    """Save ``content`` into the current folder's pool with the seed's metadata."""
    meta = args.metadata or MemoryMetadata()
    tags = container_tags(caller, meta.category, meta.tags)
    metadata: dict[str, Any] = {"addedAt": utcnow().isoformat()}
    if meta.title:
        metadata["title"] = meta.title
    if meta.category and _label(meta.category):
        metadata["category"] = _label(meta.category)
    labels = [t.removeprefix("tag:") for t in tags[2:] if t.startswith("tag:")]
    if labels:
        metadata["tags"] = ",".join(labels)  # the seed stores them joined
    result = bank.save(
        caller.user_id,
        args.content,
        _bank_category(meta.category),
        project_id=caller.project_id,
        tags=tags,
        metadata=metadata,
        role=caller.role,
    )
    if not result.duplicate:
        answer = {
            "success": True,
            "memoryId": result.memory_id,
            "message": f"Memory added: {result.content}",
        }
        # Only memories of the caller's own pool are named (as for a duplicate).
        mine = [c for c in result.conflicts if _own(bank, caller, c.memory_id)]
        gone = [c for c in result.replaced if _own(bank, caller, c.memory_id)]
        return with_conflicts(answer, mine, "memoryId", gone)
    existing = _own(bank, caller, result.existing_id)
    if existing is None:
        # Another pool (or another member of the folder) holds it: say nothing about it.
        return {
            "success": False,
            "error": "A nearly identical memory already exists, so nothing was added.",
        }
    return {
        "success": False,
        "memoryId": existing,
        "error": f"A nearly identical memory already exists ({result.existing_content!r}), "
        "so nothing was added.",
    }


def _own(bank: MemoryBank, caller: Caller, memory_id: str | None) -> str | None:
    """``memory_id`` if that memory is in the caller's current pool, else None."""
    if memory_id is None:
        return None
    try:
        memory = bank.get(memory_id, caller.user_id, project_id=caller.project_id)
    except (ValidationError, LookupError):
        return None
    return memory_id if set(container_tags(caller)) <= set(memory.tags) else None


def search_memories(bank: MemoryBank, caller: Caller, args: SearchMemoriesArgs) -> dict[str, Any]:
    """Semantic search within the current folder's pool, narrowed by category and tags."""
    hits = bank.search(
        caller.user_id,
        args.query,
        limit=args.limit,
        tags=container_tags(caller, args.category, args.tags),
        source=FACT_SOURCES,  # facts: stored conversation turns are not facts about the user
        **_search_scope(caller),
    )
    results = [
        {
            "content": hit.memory.content,
            "score": round(hit.score, 4),
            "metadata": hit.memory.metadata,
            "memoryId": hit.memory.id,
            "createdAt": hit.memory.created_at.isoformat(),
        }
        for hit in hits
    ]
    out: dict[str, Any] = {"success": True, "results": results}
    if not results:
        out["message"] = "No memories found for this query in this folder."
    return out


ADD_DESCRIPTION = (
    "Save information to the user's long-term memory for this folder so future chats can "
    "recall it. Use for lasting facts, preferences, decisions and context the user shares or "
    "asks you to remember; not for one-off requests or small talk. Add a category or tags when "
    "they will help find it later. Answers memories it may contradict."
)
SEARCH_DESCRIPTION = (
    "Search the user's long-term memory for this folder by meaning. Use before answering "
    "when past facts, preferences or decisions could matter, or when the user asks what you "
    "remember. Filter by category or tags only to narrow a search you know was tagged."
)

GUIDANCE = """\
You have long-term memory tools for this user, scoped to the current folder:
- add_memory(content, metadata?) saves information for future conversations. Use it when the \
user shares lasting preferences, facts about themselves or their work, decisions, or asks you \
to remember something. Write the content as a self-contained third-person statement and add a \
category or tags when they help later retrieval.
- search_memories(query, limit?, category?, tags?) finds previously saved information. Use it \
when the user refers to earlier conversations, asks what you remember, or when their \
preferences would change your answer.
Do not save one-off requests, small talk or information that is only useful in this chat.
"""

PROFILE = Profile(
    name="supermemory",
    description="Supermemory (seed 001): add_memory / search_memories scoped by user and "
    "folder through container tags.",
    tools=(
        define("add_memory", ADD_DESCRIPTION, AddMemoryArgs, add_memory, SafetyTier.SIDE_EFFECTING),
        define(
            "search_memories",
            SEARCH_DESCRIPTION,
            SearchMemoriesArgs,
            search_memories,
            SafetyTier.READ_ONLY,
        ),
    ),
    guidance=GUIDANCE,
)
