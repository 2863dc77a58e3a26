"""Seed 002 (PageSpace): short facts in two scopes, all of them shown in every conversation.

``save_memory(scope, fact)`` and ``remove_memory(scope, factId)``: ``user`` facts follow the
user everywhere (their private scope); ``drive`` facts belong to the current workspace
(``caller.project_id``) and are shared with its members. Each scope holds at most
:data:`DEFAULT_MAX_FACTS` facts (configurable with :func:`make_profile`), because the seed
includes every fact in every prompt instead of retrieving them. :func:`pagespace_context`
renders that prompt section.

>>> make_profile(max_facts=20).extras
{'max_facts_per_scope': 20}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from memorybank.errors import NotFound, ValidationError
from memorybank.model import Caller, Memory, ScopeChoice, Source
from memorybank.providers.json_schemas import Arguments
from memorybank.rules.permissions import Action, require
from memorybank.rules.render import FACT_SOURCES, sanitize_memory_text
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import define, with_conflicts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

__all__ = [
    "DEFAULT_MAX_FACTS",
    "FACT_MAX",
    "PROFILE",
    "RemoveMemoryArgs",
    "SaveMemoryArgs",
    "make_profile",
    "pagespace_context",
]

DEFAULT_MAX_FACTS = 50
FACT_MAX = 200

ScopeName = Literal["user", "drive"]


class SaveMemoryArgs(Arguments):
    """Arguments of ``save_memory``."""

    scope: ScopeName = Field(
        description="user: about the user, follows them everywhere; drive: about this "
        "workspace, shared with its members"
    )
    fact: str = Field(
        min_length=1,
        max_length=FACT_MAX,
        description="One short, specific fact (under 20 words), e.g. 'Prefers concise responses'",
    )


class RemoveMemoryArgs(Arguments):
    """Arguments of ``remove_memory``."""

    scope: ScopeName = Field(description="The scope the fact is listed under")
    factId: str = Field(  # noqa: N815 - the seed's parameter name
        min_length=1, max_length=100, description="The id in brackets after the fact"
    )


def _where(caller: Caller, scope: str) -> tuple[str | None, ScopeChoice]:
    """(project_id, scopes) for a PageSpace scope name."""
    if scope == "user":
        return None, "user"
    if caller.project_id is None:
        raise ValidationError(
            "this conversation is not in a drive, so there is no drive memory; use scope "
            "'user' for facts about the user",
            field="scope",
        )
    return caller.project_id, "project"


def _facts(bank: MemoryBank, caller: Caller, scope: str, limit: int) -> list[Memory]:
    project_id, scopes = _where(caller, scope)
    return bank.list(
        caller.user_id,
        project_id=project_id,
        scopes=scopes,
        limit=limit,
        order="created_asc",
        source=FACT_SOURCES,
    )


def make_profile(max_facts: int = DEFAULT_MAX_FACTS) -> Profile:
    """The PageSpace profile with a cap of ``max_facts`` facts per scope."""
    if max_facts < 1:
        raise ValueError("max_facts must be at least 1")

    def save_memory(bank: MemoryBank, caller: Caller, args: SaveMemoryArgs) -> dict[str, Any]:
        project_id, scopes = _where(caller, args.scope)
        held = bank.count(caller.user_id, project_id=project_id, scopes=scopes, source=FACT_SOURCES)
        if held >= max_facts:
            return {
                "success": False,
                "error": f"{args.scope} memory is full ({held} of {max_facts} facts). Remove an "
                "outdated fact with remove_memory, then save again.",
            }
        result = bank.save(
            caller.user_id,
            args.fact,
            None if args.scope == "user" else "project",  # user: inferred, as bank.save does
            project_id=project_id,
            role=caller.role,
        )
        if result.duplicate:
            return {
                "success": False,
                "error": f"Already remembered as [{result.existing_id}]: {result.existing_content}",
            }
        answer = {
            "success": True,
            "factId": result.memory_id,
            "scope": args.scope,
            "fact": result.content,
            "message": f"Remembered: {result.content}",
        }
        return with_conflicts(answer, result, "factId")

    def remove_memory(bank: MemoryBank, caller: Caller, args: RemoveMemoryArgs) -> dict[str, Any]:
        project_id, _ = _where(caller, args.scope)
        # Seed 002 §6.5: only drive owners and admins delete workspace memory (asked before
        # the fact is looked up, so a member learns nothing about which ids exist).
        require(caller.role, Action.CHANGE, project_id)
        missing = NotFound(f"no {args.scope} fact with id {args.factId!r}")
        try:
            memory = bank.get(args.factId, caller.user_id, project_id=project_id)
        except NotFound:
            raise missing from None
        if memory.project_id != project_id or memory.source == Source.CONVERSATION:
            raise missing
        bank.delete(memory.id, caller.user_id, project_id=project_id, role=caller.role)
        return {
            "success": True,
            "factId": memory.id,
            "scope": args.scope,
            "message": f"Forgot: {memory.content}",
        }

    return Profile(
        name="pagespace",
        description="PageSpace (seed 002): short user and drive facts, all included in every "
        f"prompt, at most {max_facts} per scope.",
        tools=(
            define(
                "save_memory",
                SAVE_DESCRIPTION,
                SaveMemoryArgs,
                save_memory,
                SafetyTier.SIDE_EFFECTING,
            ),
            define(
                "remove_memory",
                REMOVE_DESCRIPTION,
                RemoveMemoryArgs,
                remove_memory,
                SafetyTier.SIDE_EFFECTING,
            ),
        ),
        guidance=GUIDANCE,
        extras={"max_facts_per_scope": max_facts},
    )


def pagespace_context(
    bank: MemoryBank,
    caller: Caller,
    *,
    max_facts: int = DEFAULT_MAX_FACTS,
    with_ids: bool = True,
) -> str:
    """The memory section of the system prompt (seed 002 §6.3), oldest fact first.

    With ``with_ids`` each fact ends with its id in brackets, which ``remove_memory`` needs;
    ``with_ids=False`` gives the seed's text exactly. Empty scopes are left out. Each fact is
    rendered by :func:`~memorybank.rules.render.sanitize_memory_text`: one line of data.

    >>> caller = Caller(user_id="sam", project_id="apollo")
    >>> _ = bank.save("sam", "User prefers concise responses", "preference")
    >>> _ = bank.save("sam", "Team chose Zustand over Redux", "project", project_id="apollo")
    >>> print(pagespace_context(bank, caller), end="")  # doctest: +ELLIPSIS
    ## About This User
    <BLANKLINE>
    - User prefers concise responses [mem_...]
    <BLANKLINE>
    ## About This Workspace
    <BLANKLINE>
    - Team chose Zustand over Redux [mem_...]
    <BLANKLINE>
    """

    def bullets(facts: list[Memory]) -> str:
        # A drive fact is written by any member and read in every member's prompt: each
        # becomes one inert line (the one sanitiser), never a heading or a closing tag.
        lines = ((sanitize_memory_text(m.content), m.id) for m in facts)
        return "\n".join(
            f"- {text} [{mid}]" if with_ids else f"- {text}" for text, mid in lines if text
        )

    context = ""
    user_facts = _facts(bank, caller, "user", max_facts)
    if user_facts:
        context += "## About This User\n\n" + bullets(user_facts) + "\n\n"
    if caller.project_id is not None:
        drive_facts = _facts(bank, caller, "drive", max_facts)
        if drive_facts:
            context += "## About This Workspace\n\n" + bullets(drive_facts) + "\n\n"
    return context


SAVE_DESCRIPTION = (
    "Remember one short fact for future conversations: the user's preferences and background "
    "(scope user) or this workspace's decisions, terminology and current focus (scope drive). "
    "Not for trivia, one-off questions or what the page tree already shows. Answers facts "
    "it may contradict: remove outdated ones."
)
REMOVE_DESCRIPTION = (
    "Forget a remembered fact that is wrong, outdated or that the user asks you to drop."
)

GUIDANCE = """\
You can remember important information using the save_memory tool.

Save a memory when you learn:
- User preferences (communication style, technical background)
- Project decisions (architecture choices, rejected alternatives)
- Terminology (project-specific terms and their meanings)
- Context (current focus, ongoing work)

Keep facts:
- Short (under 20 words)
- Specific (not vague)
- Actionable (helps future conversations)

Don't save:
- Trivial information
- Things already in the page tree
- Temporary context (one-off questions)

Remembered facts are listed under "About This User" and "About This Workspace" with their ids \
in brackets; use remove_memory with that id when a fact is wrong or the user asks you to forget it.
"""

PROFILE = make_profile()
