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

>>> sure = PairScores(duplicate=0.0003, update=0.9995, distinct=0.0002)
>>> verdict(sure, "User lives in Porto", "User lives in Lisbon", 0.8).relation
<Relation.CONFLICT: 'conflict'>
>>> surely_replaces([sure, PairScores(0.05, 0.30, 0.65)])
[True, False]
>>> code = weighed(PairScores(0.99, 0.0, 0.01), "User's code is 4410", "User's code is 4411")
>>> verdict(code, "User's code is 4411", "User's code is 4410", 0.9).relation
<Relation.CONFLICT: 'conflict'>
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Relation(StrEnum):
    """How a new fact relates to a stored one."""

    DUPLICATE = "duplicate"  # surely says nothing the stored one does not: refused
    RESTATED = "restated"  # probably says the same: the stored one takes the new wording
    CONFLICT = "conflict"  # may update or contradict the stored one: stored, and surfaced
    DISTINCT = "distinct"  # both can be true at once: stored


@dataclass(frozen=True)
class Verdict:
    """A relation and, for people and models reading it, why (one short phrase); with the
    judge's ``scores`` it was read from and which ``judge`` read them, kept with the relation
    so that a read never asks again."""

    relation: Relation
    why: str = ""
    scores: PairScores | None = None
    judge: str | None = None

    @property
    def probabilities(self) -> tuple[float, float, float] | None:
        """The judge's (duplicate, update, distinct) probabilities, if it read the pair."""
        s = self.scores
        return None if s is None else (s.duplicate, s.update, s.distinct)


@dataclass(frozen=True)
class PairScores:
    """A judge's calibrated probabilities for (stored, new): they sum to one. ``copied`` is
    the part of ``update`` that the model read as a duplicate of a near copy carrying a new
    value (:func:`weighed`): enough to show the two together, never to retire one unasked
    (the model cannot tell "likes hiking" / "likes climbing", both true, from "favourite
    colour is blue" / "green")."""

    duplicate: float
    update: float
    distinct: float
    copied: float = 0.0


class Judge(Protocol):
    """Reads pairs of facts; one interface for the shipped model and an LLM. It is asked when
    a fact is written, never by a read: a batch at a time, one model call for all of it."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        """The scores of each (stored, new) pair of fact texts."""
        ...


def judge_version(judge: Judge) -> str:
    """Which judge read a pair (its ``version``, else its class name): kept with each relation,
    so that ``memorybank rejudge`` knows which were read by an older model."""
    return str(getattr(judge, "version", None) or type(judge).__name__)


@dataclass(frozen=True)
class Thresholds:
    """The similarities that choose which stored facts are judged, and the probabilities
    the decisions start from.

    >>> THRESHOLDS.candidate < THRESHOLDS.reconcile < THRESHOLDS.same
    True
    """

    candidate: float = 0.35
    """A stored fact at least this similar (cosine) to a new one is judged when the new one is
    written; a less similar one is distinct without being read. A change is often worded
    apart from what it changes ("User lives in Cali" / "User moved to Bogotá for a new job":
    0.36), so the floor is low and :func:`shown_as_change` asks more of a pair worded apart.
    Chosen on the second development lifecycle set: 0.55 kept 24/40 changes right, 0.35
    33/40, distinct facts 18/20 at both."""
    candidates: int = 3
    """How many of the most similar stored facts a new one is compared with, at most: the
    judge reads each pair when a fact is written, so this is a save's cost. On the lifecycle
    sets (30 unrelated facts, then the scenario) the fact a change or a paraphrase is about
    was the nearest for 96 % of 90 scenarios and among the nearest three for all of them."""
    reconcile: float = 0.55
    """From this similarity of the nearest stored fact (up to :attr:`same`), remember asks its
    LLM what a new fact does to the stored ones (:func:`needs_reconciling`)."""
    apart: float = 0.85
    """Below :attr:`reconcile`, the update probability from which a newer fact is read as
    changing an older one (:func:`shown_as_change`), chosen on the unseen pairs that choose
    the thresholds, among their pairs worded apart: the most updates shown less non-updates
    shown (a change missed leaves a stale fact current; one made up marks a true fact
    earlier), ties to the lower. From 0.85: 5 of 7 updates and 1 non-update (two databases
    of one team, 0.88); from 0.89 4 and 0; from 0.65 5 and 3 (two allergies read 0.67)."""
    same: float = 0.95
    """Above it, two facts without content words are the same (seed 000's cosine)."""
    topic: float = 0.18
    """Forgetting without an LLM (:mod:`memorybank.services.forget`): the similarity from
    which the rest of a memory is about the rest of a forget request."""
    restated: float = 0.8
    """The judge's duplicate probability from which a new fact that is not surely a duplicate
    (:attr:`duplicate`) restates the stored one, when duplicate is also its likeliest
    reading: the stored fact takes the new wording and keeps the earlier one in its history,
    so a paraphrase is stored once (a change misread as a paraphrase still leaves the newest
    wording current), but a fact misread as one leaves the block (its wording stays in the
    history). On the pairs that choose the thresholds (``pairs_dev`` and ``lifecycle_dev``,
    never trained on) no distinct pair reaches 0.5 (the highest reads 0.42); on SICK train
    (scenes, not facts: a guard only) each step down costs neutral pairs, from 0.8 12 of
    2,536 (0.5 %) for 40 of 1,299 paraphrases more, from 0.6 60 (2.4 %) for 131: so 0.8."""
    duplicate: float = 0.85
    """The judge's duplicate probability from which a new fact is refused: refusing loses the
    new fact, so only the surest are. On the pairs the shipped model never saw and that
    choose its thresholds (``pairs_dev`` and ``lifecycle_dev``) the highest non-duplicate
    reads 0.46 and 14 of 28 duplicates reach 0.85; lower, SICK train's neutral scenes refused
    grow from 74 of 2,536 (2.9 %) to 134 at 0.6, so it stays at 0.85. A probable duplicate
    below it is stored (docs/benchmarks.md gives the ranges)."""
    sure: float = 0.975
    """The update probability from which a save retires the stored fact unasked (one at most,
    :func:`surely_replaces`). Above every distinct pair of the same unseen pairs (their
    highest reads 0.964; the model reaches 0.986; 6 of their 36 updates pass it): below it a
    change is reported as a conflict, which the calling model settles (``remember`` with the
    id) and the block shows newest first, the older marked as earlier."""
    conflict: float = 0.35
    """The update probability from which a pair is reported as a conflict (may update), and
    shown together in the block (:func:`same_slot`)."""
    slot: float = 0.6
    """The probability of duplicate and update together (the same slot of the same person)
    from which a pair that is not refused is reported and shown together all the same: a
    near-copy kept for its number or its "not" is a change to show, not another fact."""


#: The thresholds of every decision.
THRESHOLDS = Thresholds()

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


def _someone_else(old: str, new: str) -> bool:
    """Whether ``new`` names someone ``old`` does not in its opening three words, where an
    English fact says whom it is about ("User's friend *Bella* lives nearby"): another
    person's fact, never a change of the first one's. Further on a name is a value ("… lives
    in *Porto*")."""
    opening = " " + " ".join(new.split()[:3])
    return bool(_names(opening) - _names(" " + old))


#: A fact's opening on someone of the user's ("User's husband …", "User's friend Bella …").
_SOMEONE_OF_THE_USERS = re.compile(r"^User['’]s\s+[a-z-]+(?:\s+[A-Z][\w'’-]*)?\s+")


def _said_of_another(old: str, new: str) -> bool:
    """Whether one fact says what the other says of the user, of someone of the user's
    ("User is fond of tea" / "User's husband is fond of tea"): the same words of two people,
    two facts. The model reads that pair as one fact, one way round (0.87)."""

    def of_user(text: str) -> str:
        return " ".join(_SOMEONE_OF_THE_USERS.sub("User ", text.strip()).lower().split())

    plain = [" ".join(text.strip().lower().split()) for text in (old, new)]
    return plain[0] != plain[1] and (of_user(old) == plain[1] or of_user(new) == plain[0])


def _refusable(new: str, old: str) -> bool:
    """Whether ``new`` could be a rewording of ``old``: it brings no name ``old`` lacks,
    denies only what ``old`` denies, and swaps no value of ``old`` for another (a new number
    is such a value)."""
    return (
        _names(new) <= _names(old) and _denies(new) == _denies(old) and not _swaps_a_value(new, old)
    )


def _words(text: str) -> list[str]:
    return [word.lower().removesuffix("'s") for word in _WORD.findall(text.replace("\u2019", "'"))]


def _swaps_a_value(new: str, old: str) -> bool:
    """Whether ``new`` puts another word where ``old`` had its value: one word swapped for
    one past the first two (where the subject's verb stands: "User prefers" / "User likes"),
    or a last word that no word of ``old`` shares a stem with. An English fact says its value
    after the verb ("… keeps a *green* notebook", "… is *vegan*"), and a rewording changes
    the verb or the wording around a value, not the value. The judge reads near copies as
    duplicates whatever word differs, so this is decided from the words."""
    before, after = _words(old), _words(new)
    if not after:
        return False
    if not any(_stem(after[-1]) == _stem(word) for word in before):
        return True
    spans = difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
    return any(
        tag == "replace" and i2 - i1 == 1 and j2 - j1 == 1 and j1 > 2
        for tag, i1, i2, j1, j2 in spans
    )


def _stem(word: str) -> str:
    """A word's first five letters: "diabetic" and "diabetes" share a stem, "green" and
    "grey" do not."""
    return word[:5]


def verdict(scores: PairScores, new: str, old: str, similarity: float) -> Verdict:
    """The relation of fact ``new`` to the stored ``old``, ``similarity`` apart (cosine), from
    the judge's ``scores`` (the shipped model's as :func:`weighed` reads them: a near copy
    with a new value is never a duplicate). Decided once, when ``new`` is written: a conflict
    is reported to the caller, kept with the pair, and every read shows the two newest first,
    the older marked as earlier.

    >>> verdict(PairScores(0.1, 0.1, 0.8), "User likes tea", "User likes coffee", 0.7).relation
    <Relation.DISTINCT: 'distinct'>
    >>> scores = weighed(PairScores(0.99, 0.0, 0.01), "User is vegetarian", "User is vegan")
    >>> verdict(scores, "User is vegan", "User is vegetarian", 0.8).relation
    <Relation.CONFLICT: 'conflict'>
    >>> verdict(PairScores(0.1, 0.6, 0.3), "User lives in Oslo", "User likes skiing", 0.4).relation
    <Relation.DISTINCT: 'distinct'>
    """
    if " ".join(new.lower().split()) == " ".join(old.lower().split()):
        return Verdict(Relation.DUPLICATE, "says the same", scores)
    if scores.duplicate >= THRESHOLDS.duplicate:
        return Verdict(Relation.DUPLICATE, f"says nothing new (p={scores.duplicate:.2f})", scores)
    if scores.duplicate >= max(THRESHOLDS.restated, scores.update, scores.distinct):
        return Verdict(Relation.RESTATED, f"says the same (p={scores.duplicate:.2f})", scores)
    if shown_as_change(scores, similarity):
        return Verdict(Relation.CONFLICT, f"may update it (p={scores.update:.2f})", scores)
    return Verdict(Relation.DISTINCT, "", scores)


def surely_replaces(scores: Sequence[PairScores]) -> list[bool]:
    """Which of the stored facts judged against one new fact it surely replaces: the one
    with the highest update probability the model read as a change (not ``copied``), when
    that is at least :attr:`Thresholds.sure`. A new fact is about one slot, so it retires
    one fact at most; the others stay, reported.

    >>> surely_replaces([PairScores(0, 0.9, 0.1), PairScores(0, 0.9995, 0.0005)])
    [False, True]
    """
    out = [False] * len(scores)
    if not scores:
        return out
    sure = [score.update - score.copied for score in scores]
    best = max(range(len(scores)), key=lambda i: sure[i])
    out[best] = sure[best] >= THRESHOLDS.sure
    return out


def weighed(scores: PairScores, old: str, new: str) -> PairScores:
    """The shipped model's ``scores`` of (``old``, ``new``) as the decisions read them (an
    LLM's answers are taken as they are: it reads values itself): when ``new``
    carries what no rewording adds (a number, a name, a "not", another value), it cannot
    be a duplicate: when the judge reads the pair as one (duplicate above update), that
    probability goes to update (the same slot, changed). A pair read as a change keeps its
    update probability: a little duplicate mass does not make a partial change sure. A fact
    that opens on someone the older one does not name is never a change of it: its
    probabilities go to distinct, as do those of the same words said of the user and of
    someone of the user's.

    >>> weighed(PairScores(0.75, 0.125, 0.125), "User is 30", "User is 31")
    PairScores(duplicate=0.0, update=0.875, distinct=0.125, copied=0.75)
    >>> weighed(PairScores(0.125, 0.75, 0.125), "User is 30", "User is 31").update
    0.75
    >>> weighed(PairScores(0.9, 0.05, 0.05), "User's friend Aaron is 9", "User's friend Bella is 9")
    PairScores(duplicate=0.0, update=0.0, distinct=1.0, copied=0.0)
    >>> weighed(PairScores(0.875, 0.0, 0.125), "User's husband likes tea", "User likes tea")
    PairScores(duplicate=0.0, update=0.0, distinct=1.0, copied=0.0)
    """
    if _someone_else(old, new) or _said_of_another(old, new):
        return PairScores(0.0, 0.0, scores.duplicate + scores.update + scores.distinct)
    if scores.duplicate < scores.update or _refusable(new, old):
        return scores
    return PairScores(0.0, scores.update + scores.duplicate, scores.distinct, scores.duplicate)


def same_slot(scores: PairScores) -> bool:
    """Whether the newer fact of a pair shown together may update the older one: they sit
    together, newest first, the older marked as earlier.

    >>> same_slot(PairScores(0.1, 0.6, 0.3)), same_slot(PairScores(0.1, 0.1, 0.8))
    (True, False)
    """
    return (
        scores.update >= THRESHOLDS.conflict or scores.update + scores.duplicate >= THRESHOLDS.slot
    )


def shown_as_change(scores: PairScores, similarity: float) -> bool:
    """Whether the newer of two facts shown together, this ``similarity`` apart, is read as
    changing the older (:func:`same_slot`): facts worded apart (below
    :attr:`Thresholds.reconcile`) need a clear update probability
    (:attr:`Thresholds.apart`), as the judge's update reading of unrelated facts ("User's
    manager is …" / "User lives in …") can reach 0.8.

    >>> likely = PairScores(0.1, 0.6, 0.3)
    >>> shown_as_change(likely, 0.7), shown_as_change(likely, 0.4)
    (True, False)
    """
    if similarity >= THRESHOLDS.reconcile:
        return same_slot(scores)
    return scores.update >= THRESHOLDS.apart


def unsure(scores: PairScores) -> bool:
    """Whether the judge is unsure of a pair (no probability reaches 0.7): with an LLM
    configured, the pairs it is asked about.

    >>> unsure(PairScores(0.4, 0.35, 0.25)), unsure(PairScores(0.9, 0.05, 0.05))
    (True, False)
    """
    return max(scores.duplicate, scores.update, scores.distinct) < 0.7


def asks_llm(scores: PairScores) -> bool:
    """Whether a configured LLM is asked about a pair: the model is unsure, or reads a
    change it is not sure enough of to retire a fact (:attr:`Thresholds.sure`): the LLM's
    answer then decides.

    >>> asks_llm(PairScores(0.0, 0.95, 0.05)), asks_llm(PairScores(0.02, 0.03, 0.95))
    (True, False)
    """
    return unsure(scores) or THRESHOLDS.conflict <= scores.update < THRESHOLDS.sure


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
    "asks_llm",
    "judge_version",
    "Judge",
    "PairScores",
    "Relation",
    "Thresholds",
    "Verdict",
    "is_candidate",
    "needs_reconciling",
    "same_slot",
    "shown_as_change",
    "specificity",
    "surely_replaces",
    "unsure",
    "verdict",
    "weighed",
]
