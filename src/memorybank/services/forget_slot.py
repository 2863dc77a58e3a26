"""The whole of a thing of the user's, for forgetting without an LLM
(:mod:`memorybank.services.forget`): a request for a thing as such ("where I live", "my job"),
which names no value of it (no name, number, nor a word for an earlier value like "old": "my
old job at Globex" keeps the current job), takes every value of it. With the facts that
mention the request planned FORGET, a fact that replaced one of them, or that is another value
of one (the newer may update the older, as the judge said when it was written:
:func:`~memorybank.core.relations.updates_among`, what every read shows newest first), is
forgotten too: "where I live" takes "User moved to Lisbon" with "User lives in Berlin" (never a
pair answered "both are true", a fact about someone else of the user's, or a conversation
turn). A request that names a value does not reach the others: relevance cannot tell them
apart (it is relative to the user's other facts), the stored relation can.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memorybank.core.relations import updates_among
from memorybank.model import Memory
from memorybank.rules.intake import is_conversation
from memorybank.rules.policy import their_person

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank

# Words that ask for earlier values only ("my old address"): the current one stays.
_EARLIER_WORDS = frozenset("old older former previous earlier ex past used".split())
_WORD = re.compile(r"[^\W_][\w'’]*")


def whole_slot(query: str) -> bool:
    """Whether a request asks for a thing of the user as such, naming no value of it: no
    name or number (past its first word, which a sentence capitalises), and no word that
    asks for earlier values only.

    >>> whole_slot("where I live"), whole_slot("my old job"), whole_slot("my job at Globex")
    (True, False, False)
    """
    words = _WORD.findall(query)
    named = any(w != "I" and w[0].isupper() for w in words[1:])
    number = any(c.isdigit() for c in query)
    return not named and not number and not any(w.lower() in _EARLIER_WORDS for w in words)


def same_slot(
    bank: MemoryBank,
    memories: Sequence[Memory],
    forgotten: set[int],
    kept: set[int],
) -> dict[int, str]:
    """Position of each of ``memories`` among ``kept`` (the plan's KEEPs) that goes with
    those at ``forgotten`` (its FORGETs) → why: another value of what one of them says of the
    user (module docs). Until no more is found, so a chain of moves goes whole."""
    candidates = {
        n
        for n in kept
        if their_person(memories[n].content) is None
        and not is_conversation(memories[n].ring, memories[n].source)
    }
    found: dict[int, str] = {}
    forget = set(forgotten)
    while more := _one_round(bank, memories, sorted(forget), sorted(candidates - set(found))):
        found.update(more)
        forget.update(more)
    return found


def _one_round(
    bank: MemoryBank, memories: Sequence[Memory], forget: Sequence[int], keep: Sequence[int]
) -> dict[int, str]:
    """Position of each of ``keep`` that is another value of one of ``forget`` → why: the
    newer of the two may update the older (as judged when it was written, answers "both are
    true" left out), or one replaced the other."""
    if not forget or not keep:
        return {}
    updates = updates_among(bank.store, [memories[n].id for n in [*forget, *keep]])
    found: dict[int, str] = {}
    for k in keep:
        for f in forget:
            new, old = memories[k], memories[f]
            if (new.id, old.id) in updates or old.superseded_by == new.id:
                found[k] = f"may update {old.content!r}, which is forgotten"
            elif (old.id, new.id) in updates or new.superseded_by == old.id:
                found[k] = f"may be updated by {old.content!r}, which is forgotten"
            if k in found:
                break
    return found


__all__ = ["same_slot", "whole_slot"]
