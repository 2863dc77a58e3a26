"""The whole of a thing of the user's, for forgetting without an LLM
(:mod:`memorybank.services.forget`): a request for a thing as such ("where I live", "my job"),
which names no value of it (no name, number, nor a word for an earlier value like "old": "my
old job at Globex" keeps the current job), takes every value of it. With the facts that
mention the request planned FORGET, a fact the memory block would recall for the request
(relevance at least :data:`~memorybank.rules.ranking.RECALL_MIN_RELEVANCE`) that replaced one
of them, or that the judge reads as another value of one (the newer may update the older, as
the block places them: :func:`~memorybank.rules.verdicts.shown_as_change`), is forgotten too:
"where I live" takes "User moved to Lisbon" with "User lives in Berlin" (never a pair answered
"both are true", a fact about someone else of the user's, or a conversation turn).

Both signals are needed: the judge reads "User commuted from Oak Street to the TechCorp
office" and "User works at TechCorp" as a change too, but the latter is not recalled for "my
old home address on Oak Street".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memorybank.core.answered import kept_both
from memorybank.model import Memory
from memorybank.providers.embedders.base import normalise
from memorybank.rules.intake import is_conversation
from memorybank.rules.policy import their_person
from memorybank.rules.ranking import RECALL_MIN_RELEVANCE
from memorybank.rules.verdicts import THRESHOLDS, shown_as_change

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
    relevance: Mapping[str, float],
) -> dict[int, str]:
    """Position of each of ``memories`` among ``kept`` (the plan's KEEPs) that goes with
    those at ``forgotten`` (its FORGETs) → why: recalled for the request (``relevance`` by
    id) and another value of what one of them says of the user (module docs). Until no more
    is found, so a chain of moves goes whole."""
    recalled = {i for i, r in relevance.items() if r >= RECALL_MIN_RELEVANCE}
    candidates = {
        n
        for n in kept
        if memories[n].id in recalled
        and their_person(memories[n].content) is None
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
    """Position of each of ``keep`` that is another value of one of ``forget`` → why."""
    if not forget or not keep:
        return {}
    ids = [memories[n].id for n in [*forget, *keep]]
    stored = bank.store.vectors_of(ids)
    asked, similarity = _slot_pairs(memories, forget, keep, stored)
    both = kept_both(bank.store, ids)
    asked = [(f, k) for f, k in asked if not both(memories[f].id, memories[k].id)]
    ordered = [_older_first(memories[f], memories[k]) for f, k in asked]
    scores = bank.judge.score([(old.content, new.content) for old, new in ordered]) if asked else []
    found: dict[int, str] = {}
    for (f, k), (_, new), score in zip(asked, ordered, scores, strict=True):
        linked = memories[k].id == memories[f].superseded_by or (
            memories[f].id == memories[k].superseded_by
        )
        if k not in found and (linked or shown_as_change(score, similarity[(f, k)])):
            how = "may update" if new is memories[k] else "may be updated by"
            found[k] = f"{how} {memories[f].content!r}, which is forgotten"
    return found


def _slot_pairs(
    memories: Sequence[Memory], forget: Sequence[int], keep: Sequence[int], stored: dict[str, Any]
) -> tuple[list[tuple[int, int]], dict[tuple[int, int], float]]:
    """The (FORGET, KEEP) pairs of one scope and author close enough to be shown together
    (``THRESHOLDS.together``), with their similarity; facts without a stored vector are
    left out."""
    have = [n for n in [*forget, *keep] if memories[n].id in stored]
    if len({stored[memories[n].id].shape for n in have}) > 1:
        return [], {}
    where = {n: a for a, n in enumerate(have)}
    matrix = normalise(np.stack([stored[memories[n].id] for n in have])) if have else None
    pairs, similarity = [], {}
    for f in forget:
        for k in keep:
            old, new = memories[f], memories[k]
            if matrix is None or f not in where or k not in where or old.scope != new.scope:
                continue
            if (old.created_by or "") != (new.created_by or ""):
                continue
            value = float(matrix[where[f]] @ matrix[where[k]])
            if value >= THRESHOLDS.together:
                pairs.append((f, k))
                similarity[(f, k)] = value
    return pairs, similarity


def _older_first(a: Memory, b: Memory) -> tuple[Memory, Memory]:
    return (a, b) if (a.created_at, a.id) <= (b.created_at, b.id) else (b, a)


__all__ = ["same_slot", "whole_slot"]
