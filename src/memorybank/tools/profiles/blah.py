"""Seed 000 (blah.chat): ``saveMemory`` and ``searchMemories`` over the user's own memory.

Answers use the seed's exact shapes:

* saved: ``{"success": true, "message": "Memory saved successfully", "memoryId", "content",
  "category"}``;
* duplicate: ``{"success": false, "duplicate": true, "message": "Similar memory already
  exists", "existingContent"}``;
* error: ``{"success": false, "error": "Content too short (minimum 10 characters)"}``.

>>> PROFILE.tool("saveMemory").arguments.model_fields["category"].annotation
typing.Literal['identity', 'preference', 'project', 'context', 'relationship']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from memorybank.model import Caller
from memorybank.providers.json_schemas import Arguments, tool_error
from memorybank.rules.render import FACT_SOURCES
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import define, with_conflicts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

__all__ = ["PROFILE", "SaveMemoryArgs", "SearchMemoriesArgs"]

CONTENT_MIN, CONTENT_MAX = 10, 500
REASONING_MIN, REASONING_MAX = 10, 200

BlahCategory = Literal["identity", "preference", "project", "context", "relationship"]


def _bounded(value: Any, label: str, minimum: int, maximum: int) -> Any:
    """``value`` stripped, or the seed's own error when it is too short or too long."""
    if not isinstance(value, str):
        return value  # pydantic's type error names the field
    text = value.strip()
    if len(text) < minimum:
        raise tool_error(f"{label} too short (minimum {minimum} characters)")
    if len(text) > maximum:
        raise tool_error(f"{label} too long (maximum {maximum} characters)")
    return text


class SaveMemoryArgs(Arguments):
    """Arguments of ``saveMemory`` (seed 000's zod schema)."""

    content: str = Field(
        min_length=CONTENT_MIN,
        max_length=CONTENT_MAX,
        description="The fact to remember, rephrased in third person "
        "(e.g., 'User prefers dark mode')",
    )
    category: BlahCategory = Field(
        description="Memory category for better organization and retrieval: identity (who "
        "they are: name, role, location), preference (likes/dislikes, settings), project (work "
        "details, ongoing tasks), context (situational info, discussions), relationship "
        "(people they know)"
    )
    reasoning: str = Field(
        min_length=REASONING_MIN,
        max_length=REASONING_MAX,
        description="Brief explanation of why this is worth remembering long-term (1-2 sentences)",
    )

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: Any) -> Any:
        return _bounded(value, "Content", CONTENT_MIN, CONTENT_MAX)

    @field_validator("reasoning", mode="before")
    @classmethod
    def _reasoning(cls, value: Any) -> Any:
        return _bounded(value, "Reasoning", REASONING_MIN, REASONING_MAX)


class SearchMemoriesArgs(Arguments):
    """Arguments of ``searchMemories``."""

    query: str = Field(
        min_length=1,
        max_length=500,
        description="What to look for, in natural language (e.g., 'preferred programming "
        "language')",
    )
    limit: int = Field(5, ge=1, le=20, description="Maximum number of memories to return")
    category: BlahCategory | None = Field(None, description="Only return memories of this category")


def save_memory(bank: MemoryBank, caller: Caller, args: SaveMemoryArgs) -> dict[str, Any]:
    """Save one fact to the user's private memory (the bank rephrases it to third person)."""
    result = bank.save(
        caller.user_id,
        args.content,
        args.category,
        reasoning=args.reasoning,
    )
    if result.duplicate:
        return {
            "success": False,
            "duplicate": True,
            "message": "Similar memory already exists",
            "existingContent": result.existing_content,
        }
    answer = {
        "success": True,
        "message": "Memory saved successfully",
        "memoryId": result.memory_id,
        "content": result.content,
        "category": result.category.value,
    }
    return with_conflicts(answer, result, "memoryId")


def search_memories(bank: MemoryBank, caller: Caller, args: SearchMemoriesArgs) -> dict[str, Any]:
    """Hybrid search over the user's private memory, best first."""
    hits = bank.search(
        caller.user_id,
        args.query,
        scopes="user",
        limit=args.limit,
        category=args.category,
        source=FACT_SOURCES,  # facts: stored conversation turns are not facts about the user
    )
    memories = [
        {
            "memoryId": hit.memory.id,
            "content": hit.memory.content,
            "category": hit.memory.category.value,
            "importance": hit.memory.importance,
            "score": round(hit.score, 4),
        }
        for hit in hits
    ]
    out: dict[str, Any] = {"success": True, "count": len(memories), "memories": memories}
    if not memories:
        out["message"] = "No matching memories found"
    return out


SAVE_DESCRIPTION = (
    "Save important information about the user to their memory bank for future recall. "
    "Call when the user explicitly asks you to remember something, or shares lasting identity "
    "(name, role, location), clear preferences, ongoing projects with specific details, or "
    "important relationships. Do not call for temporary or one-off requests, vague or "
    "uncertain statements ('I might try X someday'), questions, generic facts, or anything "
    "already in the system prompt. Always write content in the third person "
    "('User prefers TypeScript', not 'I prefer TypeScript'). The answer lists saved memories "
    "the new one may contradict."
)
SEARCH_DESCRIPTION = (
    "Search the user's saved memories by meaning. Call when the user refers to something they "
    "told you before, or when their projects or context would improve your answer and it is "
    "not already in the system prompt. Identity, preference and relationship memories are "
    "usually in the system prompt already."
)

GUIDANCE = """\
You can save facts about the user with the saveMemory tool and look them up with searchMemories.

CALL saveMemory WHEN:
- The user explicitly asks: "remember this", "save this", "don't forget that I...", \
"keep in mind that..."
- The user shares critical identity info: name, role, job title, location, family members
- The user states clear preferences: "I prefer X", "I always Y", "I never Z"
- The user mentions ongoing projects with specific details
- The user shares important relationships: team members, collaborators with context

DO NOT CALL saveMemory FOR:
- Temporary context or one-off requests ("can you write a poem about X")
- Information already known (check the system prompt first)
- Vague or uncertain statements ("I might try X someday")
- Questions or curiosity without a stated preference
- Generic facts without personal relevance
- Conversation flow details (use the conversation context instead)

ALWAYS rephrase content in the third person before saving:
- "I am a software engineer" -> "User is a software engineer"
- "My wife is Jane" -> "User's wife is named Jane"
- "I prefer TypeScript" -> "User prefers TypeScript"
- "I'm based in London" -> "User is based in London"
"""

PROFILE = Profile(
    name="blah",
    description="blah.chat (seed 000): saveMemory / searchMemories with categories, "
    "third-person facts and duplicate detection.",
    tools=(
        define(
            "saveMemory", SAVE_DESCRIPTION, SaveMemoryArgs, save_memory, SafetyTier.SIDE_EFFECTING
        ),
        define(
            "searchMemories",
            SEARCH_DESCRIPTION,
            SearchMemoriesArgs,
            search_memories,
            SafetyTier.READ_ONLY,
        ),
    ),
    guidance=GUIDANCE,
)
