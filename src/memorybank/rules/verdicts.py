"""What a new fact is to a stored one that resembles it, decided from a judge's scores.

A :class:`Judge` (the learned cross-encoder shipped in the package,
:class:`memorybank.providers.judges.LocalJudge`, or an LLM behind the same interface) reads a
pair of facts and answers three calibrated probabilities (:class:`PairScores`): the new fact
is a **duplicate** of the stored one (says nothing it does not), an **update** of the same
slot (a new value, a denial, an ended state, for the same person), or **distinct** (both true
at once: another person, another slot, one more of many). This module turns those scores
into the decisions every path shares, with one set of thresholds (:data:`THRESHOLDS`):

* :func:`verdict` - refuse as a duplicate, report as a conflict (may update), or store
  quietly; saving, consolidation and conversation reconciliation all ask it;
* :func:`surely_replaces` - which conflicts a save retires unasked (sure: at most one, the
  most likely, and only from a high probability);
* :func:`same_slot` - which older fact a newer one shown beside it may update: the block and
  recall put those together, newest first, the older marked as earlier. Nothing is hidden on
  this alone.

Similarity only chooses which stored facts are judged (:attr:`Thresholds.candidate`).

>>> sure = PairScores(duplicate=0.003, update=0.995, distinct=0.002)
>>> verdict(sure, "User lives in Porto", "User lives in Lisbon").relation
<Relation.CONFLICT: 'conflict'>
>>> moves = [("User lives in Lisbon", "User lives in Porto")] * 2
>>> surely_replaces([sure, PairScores(0.05, 0.30, 0.65)], moves)
[True, False]
>>> verdict(PairScores(0.99, 0.0, 0.01), "User's code is 4411", "User's code is 4410").relation
<Relation.CONFLICT: 'conflict'>
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Relation(StrEnum):
    """How a new fact relates to a stored one."""

    DUPLICATE = "duplicate"  # says nothing the stored one does not: refused
    CONFLICT = "conflict"  # may update or contradict the stored one: stored, and surfaced
    DISTINCT = "distinct"  # both can be true at once: stored


@dataclass(frozen=True)
class Verdict:
    """A relation and, for people and models reading it, why (one short phrase)."""

    relation: Relation
    why: str = ""


@dataclass(frozen=True)
class PairScores:
    """A judge's calibrated probabilities for (stored, new): they sum to one."""

    duplicate: float
    update: float
    distinct: float


class Judge(Protocol):
    """Reads pairs of facts and (message, fact) pairs; one interface for the shipped model
    and an LLM. Both methods take a batch: one model call for all of it."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        """The scores of each (stored, new) pair of fact texts."""
        ...

    def relevance(self, message: str, texts: Sequence[str]) -> list[float]:
        """How likely each fact text answers or bears on ``message`` (0 to 1)."""
        ...


@dataclass(frozen=True)
class Thresholds:
    """The similarities that choose which stored facts are judged, and the probabilities
    the decisions start from.

    >>> THRESHOLDS.candidate < THRESHOLDS.reconcile < THRESHOLDS.same
    True
    """

    candidate: float = 0.4
    """A stored fact at least this similar (cosine) to a new one is judged; a less similar one
    is distinct without being read."""
    candidates: int = 5
    """How many of the most similar stored facts a new one is compared with, at most."""
    reconcile: float = 0.55
    """From this similarity of the nearest stored fact (up to :attr:`same`), remember asks its
    LLM what a new fact does to the stored ones (:func:`needs_reconciling`)."""
    together: float = 0.35
    """The least similarity at which two facts shown together (the block, recall) are judged
    for :func:`same_slot`: a change is often worded apart from what it changes ("User lives in
    Cali" / "User moved to Bogotá for a new job": 0.36), and the judge reads the few pairs
    this lets through (answers cached). Chosen on the second development lifecycle set:
    0.55 kept 24/40 changes right, 0.35 33/40, distinct facts 18/20 at both."""
    same: float = 0.95
    """Above it, two facts without content words are the same (seed 000's cosine)."""
    topic: float = 0.18
    """Forgetting without an LLM (:mod:`memorybank.services.forget`): the similarity from
    which the rest of a memory is about the rest of a forget request."""
    duplicate: float = 0.98
    """The judge's duplicate probability from which a new fact is refused: refusing loses the
    new fact, so only the surest are (chosen on SICK train, which the judge never saw: 1.4 %
    of its contradictions and 2.6 % of its neutral pairs refused at 0.98, with the polarity
    rule below; 0.8 refused 77 % and 19 %)."""
    sure: float = 0.99
    """The update probability from which a save retires the stored fact unasked."""
    conflict: float = 0.35
    """The update probability from which a pair is reported as a conflict (may update), and
    shown together in the block (:func:`same_slot`)."""
    slot: float = 0.6
    """The probability of duplicate and update together (the same slot of the same person)
    from which a pair that is not refused is reported and shown together all the same: a
    near-copy kept for its number or its "not" is a change to show, not another fact."""


#: The thresholds of every decision.
THRESHOLDS = Thresholds()

_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
#: Words that deny what a sentence says (English grammar's negators): a fact and its denial
#: are never one fact, however alike they read. The one lexicon of the judge's decisions.
_DENIAL = re.compile(r"\b(?:not|no|never|nobody|nothing|none|neither|nor)\b|n't\b", re.I)


#: A word written with a capital inside a sentence: a name (a person, a place, a product).
_WORD = re.compile(r"[A-Za-z0-9']+")
_NAME = re.compile(r"(?<=\s)[A-Z][\w'’-]*")


def _names(text: str) -> set[str]:
    return {name.rstrip("'’s") for name in _NAME.findall(text)}


def _denies(text: str) -> bool:
    return _DENIAL.search(text.replace("\u2019", "'")) is not None


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def _refusable(new: str, old: str) -> bool:
    """Whether ``new`` could be a rewording of ``old``: it brings no number or name ``old``
    lacks, denies only what ``old`` denies, and ends on a word of ``old``."""
    return (
        _numbers(new) <= _numbers(old)
        and _names(new) <= _names(old)
        and _denies(new) == _denies(old)
        and not _ends_anew(new, old)
    )


def _words(text: str) -> list[str]:
    return [word.lower().removesuffix("'s") for word in _WORD.findall(text.replace("\u2019", "'"))]


def _ends_anew(new: str, old: str) -> bool:
    """Whether ``new`` ends on a word ``old`` lacks: an English fact ends on its value (where,
    what, who: "… is green", "… prefers coffee"), and a rewording keeps the value while it
    changes the verb ("likes" for "prefers")."""
    words = _words(new)
    return bool(words) and words[-1] not in _words(old)


def verdict(scores: PairScores, new: str, old: str) -> Verdict:
    """The relation of fact ``new`` to the stored ``old`` from the judge's ``scores``. A new
    fact carrying a number or a name the stored one lacks, denying what the other does not
    (or the other way round), or ending on another value, is never refused: a digit, a name,
    a "not" or a new value is information no rewording adds.

    >>> verdict(PairScores(0.1, 0.1, 0.8), "User likes tea", "User likes coffee").relation
    <Relation.DISTINCT: 'distinct'>
    >>> verdict(PairScores(0.99, 0.0, 0.01), "User is vegan", "User is vegetarian").relation
    <Relation.CONFLICT: 'conflict'>
    """
    if " ".join(new.lower().split()) == " ".join(old.lower().split()):
        return Verdict(Relation.DUPLICATE, "says the same")
    if scores.duplicate >= THRESHOLDS.duplicate and _refusable(new, old):
        return Verdict(Relation.DUPLICATE, f"says nothing new (p={scores.duplicate:.2f})")
    if same_slot(scores):
        return Verdict(Relation.CONFLICT, f"may update it (p={scores.update:.2f})")
    return Verdict(Relation.DISTINCT)


def surely_replaces(scores: Sequence[PairScores], pairs: Sequence[tuple[str, str]]) -> list[bool]:
    """Which of the stored facts judged against one new fact it surely replaces, given the
    (stored, new) texts of each pair: the one with the highest update probability, when that
    is at least :attr:`Thresholds.sure`. A new fact is about one slot, so it retires one fact
    at most; the others stay, reported. A near copy that carries a new value (a number, a
    name, a "not", another last word) is the same slot changed: what the judge reads as a
    duplicate of it counts as an update (:func:`weighed`).

    >>> pairs = [("User lives in Rome", "User lives in Oslo")] * 2
    >>> surely_replaces([PairScores(0, 0.9, 0.1), PairScores(0, 0.995, 0.005)], pairs)
    [False, True]
    >>> surely_replaces([PairScores(0.95, 0.045, 0.005)], [("User is 30", "User is 31")])
    [True]
    """
    out = [False] * len(scores)
    if not scores:
        return out
    read = [weighed(score, old, new) for score, (old, new) in zip(scores, pairs, strict=True)]
    best = max(range(len(read)), key=lambda i: read[i].update)
    out[best] = read[best].update >= THRESHOLDS.sure
    return out


def weighed(scores: PairScores, old: str, new: str) -> PairScores:
    """The judge's ``scores`` of (``old``, ``new``) as the decisions read them: when ``new``
    carries what no rewording adds (a number, a name, a "not", another last word), it cannot
    be a duplicate, so the duplicate probability goes to update (the same slot, changed).

    >>> weighed(PairScores(0.75, 0.125, 0.125), "User is 30", "User is 31")
    PairScores(duplicate=0.0, update=0.875, distinct=0.125)
    """
    if _refusable(new, old):
        return scores
    return PairScores(0.0, scores.update + scores.duplicate, scores.distinct)


def same_slot(scores: PairScores) -> bool:
    """Whether the newer fact of a pair shown together may update the older one: they sit
    together, newest first, the older marked as earlier.

    >>> same_slot(PairScores(0.1, 0.6, 0.3)), same_slot(PairScores(0.1, 0.1, 0.8))
    (True, False)
    """
    return (
        scores.update >= THRESHOLDS.conflict or scores.update + scores.duplicate >= THRESHOLDS.slot
    )


def unsure(scores: PairScores) -> bool:
    """Whether the judge is unsure of a pair (no probability reaches 0.7): with an LLM
    configured, the pairs it is asked about.

    >>> unsure(PairScores(0.4, 0.35, 0.25)), unsure(PairScores(0.9, 0.05, 0.05))
    (True, False)
    """
    return max(scores.duplicate, scores.update, scores.distinct) < 0.7


def is_candidate(similarity: float) -> bool:
    """Whether a stored fact this similar to a new one is judged at all.

    >>> is_candidate(THRESHOLDS.candidate), is_candidate(0.2)
    (True, False)
    """
    return similarity >= THRESHOLDS.candidate


def needs_reconciling(nearest: float) -> bool:
    """Whether remember asks its LLM what a new fact does to the stored ones, given the
    similarity of the ``nearest``: less similar, it is about something else and is saved; more
    than :attr:`Thresholds.same`, it is a near copy, which the save's judge decides.

    >>> needs_reconciling(0.7), needs_reconciling(0.3), needs_reconciling(0.99)
    (True, False, False)
    """
    return THRESHOLDS.reconcile <= nearest <= THRESHOLDS.same


def specificity(text: str) -> int:
    """How much a fact says: its words of three letters or more and its numbers (the more,
    the more specific; consolidation keeps the most specific of duplicates).

    >>> specificity("User likes tea") < specificity("User likes green tea in the morning")
    True
    """
    return sum(1 for word in _WORD.findall(text) if len(word) >= 3 or word.isdigit())


__all__ = [
    "THRESHOLDS",
    "Judge",
    "PairScores",
    "Relation",
    "Thresholds",
    "Verdict",
    "is_candidate",
    "needs_reconciling",
    "same_slot",
    "specificity",
    "surely_replaces",
    "unsure",
    "verdict",
    "weighed",
]
