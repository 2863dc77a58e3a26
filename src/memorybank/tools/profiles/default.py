"""Our recommended tool set: the fewest, smallest tools that still cover the whole life of a fact.

Three tools: ``remember`` saves a fact, or replaces fact ``id`` when it changed; ``recall``
searches; ``forget`` deletes. Every tool definition is paid for in every request (about 48
tokens of JSON frame per tool before any description), so updating is folded into
``remember`` rather than given its own tool, descriptions are short, and string lengths are
not advertised: a fact's is the bank's policy, whose errors tell the model what to fix, and
``query`` and ``id`` are checked against :data:`QUERY_MAX` and :data:`ID_MAX` without a
``maxLength`` in the definitions; ``recall`` returns the best
:data:`RECALL_LIMIT` facts rather than taking a limit. ``category`` stays: it decides which
facts are pre-loaded into every prompt; left out, the bank infers it from the fact as
:meth:`~memorybank.MemoryBank.save` does ("User's name is Kim" is identity), and what the
model passes wins. Facts go to the user's private memory; ``recall`` also
reads the current project's memory. Only when the call has a project does ``remember`` offer
``scope`` ("user" | "project", seed 002's drive memory, which every member's AI may add to): the
variant in ``PROFILE.extras["in_project"]``, which :func:`~memorybank.tools.toolkit` picks, so
the definitions without a project stay the cheapest.

>>> [t.name for t in PROFILE.tools]
['remember', 'recall', 'forget']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field

from memorybank.errors import ValidationError
from memorybank.model import Caller
from memorybank.providers.json_schemas import Arguments, tool_error
from memorybank.rules.permissions import Action, require
from memorybank.rules.render import FACT_SOURCES
from memorybank.tools.base import Profile, SafetyTier
from memorybank.tools.profiles import define, with_conflicts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

__all__ = [
    "ID_MAX",
    "IN_PROJECT",
    "PROFILE",
    "QUERY_MAX",
    "RECALL_LIMIT",
    "ForgetArgs",
    "RecallArgs",
    "RememberArgs",
    "RememberInProjectArgs",
]

# A fixed page of short facts: a ``limit`` argument would cost ~29 tokens in every request,
# and ten one-line facts are a small answer.
RECALL_LIMIT = 10

#: The longest ``query`` and ``id`` accepted (a fact's length is the bank's policy).
QUERY_MAX, ID_MAX = 1000, 100


def _at_most(limit: int, what: str) -> AfterValidator:
    def check(value: str) -> str:
        if len(value) > limit:
            raise tool_error(f"{what} is too long (maximum {limit} characters)")
        return value

    return AfterValidator(check)


# Checked, not advertised: a maxLength keyword would cost tokens in every request, and no
# model writes a thousand-character search.
Query = Annotated[str, _at_most(QUERY_MAX, "query")]
FactId = Annotated[str, _at_most(ID_MAX, "id")]


# A category in the order the definitions show. ``Annotated`` keeps ``FactCategory | None`` its
# own type: typing caches ``Literal[...] | None`` by the Literal's set of values, so another
# profile's Optional Literal of the same values in another order (blah's) would be shared and
# show the other order.
FactCategory = Annotated[
    Literal["identity", "preference", "relationship", "project", "context"], "default profile"
]


class RememberArgs(Arguments):
    """Arguments of ``remember``."""

    fact: str = Field(description="Third person, e.g. 'User prefers tea'")
    category: FactCategory | None = Field(None, description="Inferred if omitted")
    id: FactId | None = Field(None, description="Replace this fact (id from recall)")


class RememberInProjectArgs(RememberArgs):
    """Arguments of ``remember`` when the call has a project."""

    scope: Literal["user", "project"] = Field("user", description="project: shared with members")


class RecallArgs(Arguments):
    """Arguments of ``recall``."""

    query: Query


class ForgetArgs(Arguments):
    """Arguments of ``forget``."""

    id: FactId


def remember(bank: MemoryBank, caller: Caller, args: RememberArgs) -> dict[str, Any]:
    """Save a fact in the user's private memory (or, with ``scope`` "project", the current
    project's), or replace fact ``args.id``."""
    if args.id is not None:
        return _replace(bank, caller, args, args.id)
    if isinstance(args, RememberInProjectArgs) and args.scope == "project":
        if caller.project_id is None:
            raise ValidationError(
                "this conversation has no project; use scope 'user'", field="scope"
            )
        result = bank.save(
            caller.user_id, args.fact, args.category, project_id=caller.project_id, role=caller.role
        )
    else:
        result = bank.save(caller.user_id, args.fact, args.category)
    if result.duplicate:
        return {
            "success": False,
            "error": f"already remembered as {result.existing_id}: {result.existing_content}",
        }
    answer = {"success": True, "id": result.memory_id, "fact": result.content}
    if result.restated:
        answer["note"] = (
            f"already remembered as {result.memory_id}, now in these words "
            f"(it said: {result.existing_content})"
        )
    return with_conflicts(answer, result)


def _replace(bank: MemoryBank, caller: Caller, args: RememberArgs, fact_id: str) -> dict[str, Any]:
    """Replace fact ``fact_id``: nothing when a save already replaced it, a merge when another
    fact already says the new text (the answer's ``replaced`` then names ``fact_id``)."""
    # The right to change comes first, as in MemoryBank.update: a member who may not change
    # this project's facts learns nothing about which ids exist in it.
    require(caller.role, Action.CHANGE, caller.project_id)
    current = bank.get(fact_id, caller.user_id, project_id=caller.project_id)
    if current.superseded_by is not None:
        newer = bank.get(current.superseded_by, caller.user_id, project_id=caller.project_id)
        note = f"{fact_id} was already replaced by {newer.id}; nothing changed"
        return {"success": True, "id": newer.id, "fact": newer.content, "note": note}
    changed = bank.update(
        fact_id,
        caller.user_id,
        project_id=caller.project_id,
        content=args.fact,
        category=args.category,
        role=caller.role,
    )
    answer: dict[str, Any] = {"success": True, "id": changed.id, "fact": changed.content}
    if changed.id != fact_id:
        answer["replaced"] = [{"id": fact_id, "fact": current.content}]
        answer["note"] = f"already remembered as {changed.id}; {fact_id} is replaced by it"
    return answer


def recall(bank: MemoryBank, caller: Caller, args: RecallArgs) -> dict[str, Any]:
    """Best-matching facts from the user's and the current project's memory."""
    hits = bank.search(
        caller.user_id,
        args.query,
        project_id=caller.project_id,
        limit=RECALL_LIMIT,
        source=FACT_SOURCES,  # facts: stored conversation turns are not facts about the user
    )
    return {
        "success": True,
        "facts": [{"id": h.memory.id, "fact": h.memory.content} for h in hits],
    }


def forget(bank: MemoryBank, caller: Caller, args: ForgetArgs) -> dict[str, Any]:
    """Delete a fact for real."""
    bank.delete(args.id, caller.user_id, project_id=caller.project_id, role=caller.role)
    return {"success": True, "id": args.id}


GUIDANCE = """\
You have a long-term memory of this user. Use remember for lasting facts they share or ask you \
to keep (who they are, preferences, people, projects), in the third person; not for one-off \
requests or guesses. Use recall before answering when their history may matter. remember \
replaces a stored fact the new one surely updates (its answer's "replaced": tell the user); \
for its "conflicts", if the fact changed, call remember with that id. When they ask you to \
forget a fact, call forget with its id (ids come from recall).
"""

_REMEMBER = (
    "remember",
    "Save a lasting fact about the user, or replace one that changed. "
    "Not for one-off or vague things. Answers facts it replaced and those it may conflict with.",
)
_RECALL = define(
    "recall",
    "Search saved facts about the user.",
    RecallArgs,
    recall,
    SafetyTier.READ_ONLY,
)
_FORGET = define(
    "forget",
    "Delete a saved fact (id from recall).",
    ForgetArgs,
    forget,
    SafetyTier.SIDE_EFFECTING,
)
_DESCRIPTION = (
    "memorybank's recommended set: remember / recall / forget with the smallest definitions."
)

#: The profile offered when the call has a project: ``remember`` also takes ``scope``.
IN_PROJECT = Profile(
    name="default",
    description=_DESCRIPTION,
    tools=(
        define(*_REMEMBER, RememberInProjectArgs, remember, SafetyTier.SIDE_EFFECTING),
        _RECALL,
        _FORGET,
    ),
    guidance=GUIDANCE,
)

PROFILE = Profile(
    name="default",
    description=_DESCRIPTION,
    tools=(define(*_REMEMBER, RememberArgs, remember, SafetyTier.SIDE_EFFECTING), _RECALL, _FORGET),
    guidance=GUIDANCE,
    extras={"in_project": IN_PROJECT},
)
