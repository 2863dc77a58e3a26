"""What a new fact is to a stored one that resembles it: the same fact (a duplicate, refused),
a change of it (a conflict, surfaced: it may update the stored one), or another fact (distinct,
stored quietly). This module is the one place that decides it, and :data:`THRESHOLDS` is the
one set of similarities the decision uses: saving (the store's judge, through
:func:`memorybank.rules.intake.judge_pair`), an LLM settling the unsure pairs
(:mod:`memorybank.core.settle`), remembering a conversation
(:mod:`memorybank.services.conversations`) and consolidation (:mod:`memorybank.core.consolidate`)
all ask it; ``tests/rules/test_verdicts.py``
checks that no other module of src/ holds a similarity threshold.

Why this module and not a new one: the relation, the rules and model that decide it and the
thresholds that choose which pairs reach them are one definition, measured together
(docs/benchmarks.md); kept apart, a threshold could drift from the judge it was tuned with.
What a pair looks like is measured in :mod:`memorybank.rules.pair_features`; the learned part
is :mod:`memorybank.rules.pair_model` (weights shipped as ``pair_model.json``, written by
``memorybank bench train-pair-model``).

Similarity only finds the candidates (:attr:`Thresholds.candidate`); :func:`judge` decides,
with grammar rules and a small pair model (a logistic regression, well under a millisecond a
pair), and no hand-written list of synonyms or values:

* it is a **conflict** (may update or contradict) when its polarity differs ("not",
  "no longer"), it names an ended or changed state ("quit", "moved to", "cancelled"), or it is
  the same attribute with another value (a number, one short phrase swapped in the same place,
  or the first word and one value swapped in a sentence otherwise the same);
* the new fact is a **duplicate** only if no rule keeps it (no number, name or place of its
  own, no shared word moved across another into another role) and the pair model finds it
  says nothing the stored one does not, with a probability of at least
  :attr:`Thresholds.duplicate` (chosen when training to refuse no training pair that must
  be kept). The model reads the whole facts' cosine, the overlap of their content words, how
  close the words that differ are (the embedding model's word vectors, handed in by the bank:
  "large"/"big"), word order, places, voice and length;
* otherwise it is **distinct**: both can be true at once.

The pairs the rules are least sure of are :func:`borderline`: with an LLM configured, the
model settles those and only those (:mod:`memorybank.core.settle`).

>>> judge("User likes tea", "User likes tea", 1.0).relation
<Relation.DUPLICATE: 'duplicate'>
>>> judge("User is not allergic to nuts", "User is allergic to nuts", 0.97).relation
<Relation.CONFLICT: 'conflict'>
>>> judge("User works from home remotely", "User works remotely from home", 0.99).relation
<Relation.DUPLICATE: 'duplicate'>
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from memorybank.rules.pair_features import (
    WORD_FEATURES,
    Fact,
    WordVectors,
    copula_swap,
    covered,
    inversions,
    needs_words,
    pair_features,
    place_changed,
    read_fact,
    roles_swapped,
    split,
    stem,
    uncovered,
)
from memorybank.rules.pair_model import PairModel, load_model

#: The judge's tokeniser (cached) and what it reads, under the names the tests and other
#: modules used before the pair model.
_features = read_fact
_Fact = Fact


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
class Thresholds:
    """The cosine similarities (of the bundled embedding model) that take part in deciding
    duplicates (and, :attr:`topic`, what a forget request is about), how many stored facts a
    new one is compared with, and the pair model's refusal probability. Where a fact has
    words, similarity never decides alone: it chooses the pairs the judge reads (and is one of
    the model's features), the pairs an LLM settles, and whether remember asks its LLM at all.

    >>> THRESHOLDS.candidate < THRESHOLDS.reconcile < THRESHOLDS.borderline < THRESHOLDS.same
    True
    """

    candidate: float = 0.4
    """A stored fact at least this similar to a new one is judged; a less similar one is
    distinct without being read."""
    candidates: int = 5
    """How many of the most similar stored facts a new one is compared with, at most."""
    reconcile: float = 0.55
    """From this similarity of the nearest stored fact (up to :attr:`same`), remember asks its
    LLM what a new fact does to the stored ones (:func:`needs_reconciling`)."""
    borderline: float = 0.85
    """A pair at least this similar that the judge calls distinct is borderline
    (:func:`borderline`)."""
    same: float = 0.95
    """Seed 000's duplicate cosine: above it (strictly), two facts without content words are
    the same, and remember leaves a fact this close to the save's judge rather than its LLM."""
    topic: float = 0.18
    """Forgetting without an LLM (:mod:`memorybank.services.forget`): a memory that mentions
    some of a request's words but too few for the word rule ("User left Globex in 2023" for
    "my old job at Globex") is about the request when the rest of it is at least this similar
    to the rest of the request ("User left in 2023" to "old job"). Set in the widest gap of a
    hand-labelled sample (8 requests, 57 memories sharing one word with one): 8 of those
    stayed on the wrong side (6 kept, 2 forgotten), which the preview shows before anything is
    deleted; the old rule kept all of them."""

    @property
    def duplicate(self) -> float:
        """Not a similarity: the pair model's probability from which a pair is refused as a
        duplicate (:func:`duplicate_probability`), chosen when the model is trained and
        shipped with its weights (``pair_model.json``)."""
        return load_model().threshold


#: The thresholds of every duplicate decision.
THRESHOLDS = Thresholds()

#: Longest value (in words, a run of names counting as one) swapped for another that makes
#: a conflict; a longer difference is another fact.
_MAX_VALUE_WORDS = 1


_ANOTHER_NUMBER = "a different number"
_NEGATES, _REVERSES = "negates it", "reverses a negation"


def _state_change(new: Fact, old: Fact) -> str:
    """Why the new fact changes the old one's state or polarity ("" when it does not)."""
    if (new.negations > 0) != (old.negations > 0):
        return _NEGATES if new.negations > 0 else _REVERSES
    ended = new.changes - old.changes
    if ended:
        return f"ended or changed state ({sorted(ended)[0]})"
    return ""


def _says_more(new: Fact, old: Fact, new_text: str, old_text: str, swaps: bool = True) -> str:
    """What the new fact says that no wording of the old one can (""  when nothing): a
    number, a name or a place of its own, the same words in other roles, or one value swapped
    for another. Such a pair is never refused, whatever the model says."""
    if not new.numbers <= old.numbers:
        return "a number of its own"
    if any(not covered(name, old.names) for name in new.names):
        return "a name of its own"
    if place_changed(new, old):
        return "a place of its own"
    if (roles_swapped(new, old) or inversions(new, old) > 0) and not copula_swap(
        new_text, old_text
    ):
        return "same words, other roles"
    if split(new, old) >= 1.0:
        # Two words said side by side that the old fact keeps three or more words apart:
        # the subject of one clause with the verb of another.
        return "joins words the old fact keeps apart"
    gaps, old_gaps = uncovered(new, old), uncovered(old, new)
    if swaps and ((len(gaps) == 1 and gaps == old_gaps) or _value_swap(new, old, gaps)):
        # One word for another in the same place: a synonym ("big" / "large") or a sibling
        # value ("sister" / "brother"), which word vectors cannot tell apart. Surfaced as a
        # conflict (an LLM, if any, settles it), never refused.
        return "one value swapped"
    return ""


def _value_swap(new: Fact, old: Fact, new_gaps: list[int]) -> str:
    """Why the new fact is the same attribute with another value ("" when it is not)."""
    old_gaps = uncovered(old, new)
    if new.numbers != old.numbers and new.numbers and old.numbers:
        if not new_gaps:
            return _ANOTHER_NUMBER
        counted = new.counted & old.counted
        if counted and not old_gaps:
            # Another count of the same thing, with more said around it ("User has 2
            # monitors" / "User added a third monitor to their desk").
            return f"a different number of {sorted(counted)[0]}"
    if not new_gaps or not old_gaps:
        return ""
    if _parallel(new, old, new_gaps, old_gaps):
        before = " ".join(old.content[i] for i in old_gaps)
        after = " ".join(new.content[i] for i in new_gaps)
        return f"a different value ({before} / {after})"
    if _runs(new_gaps) != 1 or _runs(old_gaps) != 1:
        return ""
    if _slot(new, new_gaps) != _slot(old, old_gaps):
        return ""  # the words differ in another place of the sentence: not one value swapped
    shared = len(new.content) - len(new_gaps)
    new_size = _phrase_size(new, new_gaps)
    old_size = _phrase_size(old, old_gaps)
    if (
        shared < 1
        or new_size > _MAX_VALUE_WORDS
        or old_size > _MAX_VALUE_WORDS
        or shared < new_size
    ):
        return ""
    before = " ".join(old.content[i] for i in old_gaps)
    after = " ".join(new.content[i] for i in new_gaps)
    return f"a different value ({before} / {after})"


def _parallel(new: Fact, old: Fact, new_gaps: list[int], old_gaps: list[int]) -> bool:
    """Whether the two facts are the same sentence with their first word and one value swapped
    in place ("likes to work in the mornings" / "prefers to work in the evenings"): the verb
    may be a synonym the model did not trust, the value still changed."""
    return (
        len(new.content) == len(old.content)
        and new_gaps == old_gaps
        and len(new_gaps) == 2
        and new_gaps[0] == 0
        and len(new.content) > 2
    )


def _runs(positions: list[int]) -> int:
    """How many runs of adjacent positions there are (a swapped phrase is one run)."""
    return sum(1 for i, pos in enumerate(positions) if i == 0 or positions[i - 1] != pos - 1)


def _slot(fact: Fact, gaps: list[int]) -> tuple[str, str]:
    """The words on either side of a one-run gap: where in the sentence the value sits."""
    before = fact.content[gaps[0] - 1] if gaps[0] > 0 else ""
    after = fact.content[gaps[-1] + 1] if gaps[-1] + 1 < len(fact.content) else ""
    return before, after


def _phrase_size(fact: Fact, gaps: list[int]) -> int:
    """A swapped phrase's size in words, a run of names counting as one."""
    size = 0
    for i, pos in enumerate(gaps):
        word = fact.content[pos]
        if word in fact.names and i > 0 and fact.content[gaps[i - 1]] in fact.names:
            continue
        size += 1
    return size


def duplicate_probability(
    new: str, old: str, similarity: float, words: WordVectors | None = None
) -> float:
    """The pair model's probability that ``new`` says nothing the stored ``old`` does not
    (before the rules that never refuse: negation, ended states, numbers, names, places).

    >>> duplicate_probability("User enjoys hiking", "User enjoys hiking", 1.0) > 0.9
    True
    """
    return load_model().probability(pair_features(new, old, similarity, words))


def judge(new: str, old: str, similarity: float, words: WordVectors | None = None) -> Verdict:
    """The relation of fact ``new`` to the stored fact ``old`` (cosine ``similarity``).

    ``words`` embeds the words that differ (the bank hands its embedding model's, cached);
    without it a word of the new fact that the old one lacks counts as new information, so
    the judge refuses less. A pair of facts with no content words at all falls back on
    similarity (above :attr:`Thresholds.same`: the same).
    """
    return judge_with(load_model(), THRESHOLDS.duplicate, new, old, similarity, words)


def judge_with(
    model: PairModel,
    threshold: float,
    new: str,
    old: str,
    similarity: float,
    words: WordVectors | None = None,
) -> Verdict:
    """:func:`judge` with another pair ``model`` refusing from probability ``threshold`` (what
    training and cross-validation score; :func:`judge` is the shipped model's)."""
    new_fact, old_fact = read_fact(new), read_fact(old)
    if not new_fact.content and not new_fact.numbers:
        if similarity > THRESHOLDS.same:
            return Verdict(Relation.DUPLICATE, "says the same")
        return Verdict(Relation.DISTINCT)
    change = _state_change(new_fact, old_fact)
    if change:
        return Verdict(Relation.CONFLICT, change)
    if not _says_more(new_fact, old_fact, new, old):
        p = _probability(model, threshold, new, old, similarity, words)
        if p >= threshold:
            return Verdict(Relation.DUPLICATE, f"says nothing new (p={p:.2f})")
    swap = _value_swap(new_fact, old_fact, uncovered(new_fact, old_fact))
    if swap:
        return Verdict(Relation.CONFLICT, swap)
    return Verdict(Relation.DISTINCT)


def _probability(
    model: PairModel,
    threshold: float,
    new: str,
    old: str,
    similarity: float,
    words: WordVectors | None,
) -> float:
    """The model's probability for the pair, embedding the words that differ only when their
    closeness can move it across ``threshold`` (most pairs are decided without: a save stays
    one embedding pass when its candidates are plainly other facts)."""
    x = pair_features(new, old, similarity)
    if words is None or not needs_words(new, old):
        return model.probability(x)
    low, high = model.bounds(x, WORD_FEATURES)
    if high < threshold:
        return high  # however close the words, not a duplicate
    if low >= threshold:
        return low  # however far apart, a duplicate
    return model.probability(pair_features(new, old, similarity, words))


def refusable(new: str, old: str, *, swaps: bool = True) -> bool:
    """Whether the pair model is asked at all: no change of state or polarity, and nothing
    (a number, a name, a place, another role, one value for another) that no rewording of
    ``old`` says. With ``swaps=False``, a pair that only swaps one value counts too: the
    model is trained on those (they are its hardest negatives) though never asked about them.
    """
    new_fact, old_fact = read_fact(new), read_fact(old)
    if not new_fact.content and not new_fact.numbers:
        return False
    if _state_change(new_fact, old_fact):
        return False
    return not _says_more(new_fact, old_fact, new, old, swaps)


def specificity(text: str) -> int:
    """How much a fact says: its content words and numbers (the more, the more specific).

    >>> specificity("User likes tea") < specificity("User likes green tea in the morning")
    True
    """
    fact = read_fact(text)
    return len(fact.content) + len(fact.numbers)


def is_candidate(similarity: float) -> bool:
    """Whether a stored fact this similar to a new one is judged at all.

    >>> is_candidate(THRESHOLDS.candidate), is_candidate(0.2)
    (True, False)
    """
    return similarity >= THRESHOLDS.candidate


def borderline(verdict: Verdict, similarity: float) -> bool:
    """Whether the rules' ``verdict`` is unsure enough for an LLM to settle: a very similar
    pair the rules kept apart, or a "different value" the words alone suggest.

    >>> borderline(judge("User's car is a Tesla", "User's car is a Honda", 0.8), 0.8)
    True
    >>> borderline(Verdict(Relation.DISTINCT), 0.5)
    False
    """
    if verdict.relation is Relation.DISTINCT:
        return similarity >= THRESHOLDS.borderline
    return verdict.why.startswith("a different value")


def replaces(new: str, olds: Sequence[tuple[str, float]]) -> list[bool]:
    """Which stored facts ``olds`` (text, cosine similarity) the fact ``new`` surely replaces:
    only those get superseded without asking; an unsure one, even one an LLM settled as a
    conflict, stays "may conflict" for the model or the user to decide.

    Sure is: the rules call the pair an update (a new value for the same thing, a negation, an
    ended or changed state) that :func:`borderline` does not call unsure, the change is said
    by more than a bare "now" or "again", and the pair is surely about one thing: they share
    words (a name, a word or its stem: "teaching" / "teacher"), or nothing is shared but it is
    clearly the nearest fact the change can be about. A changed state ("moved", "quit",
    "broke up") retires one fact at most: the best of them.

    >>> replaces("User's phone number is 555-0199", [("User's phone number is 555-0101", 0.9)])
    [True]
    >>> replaces("User's car is a Tesla", [("User's car is a Honda", 0.8)])  # a one-word value
    [False]
    >>> replaces("User moved to Paris", [("User lives in London", 0.46), ("User likes tea", 0.41)])
    [True, False]
    """
    fact = _features(new)
    sure: list[float | None] = []
    for old, similarity in olds:
        verdict = judge(new, old, similarity)
        # A one-word value is unsure ("a Tesla" / "a Honda": another car?) unless the new
        # fact itself says it changed ("User's manager is now Tom").
        unsure_value = borderline(verdict, similarity) and not fact.changes
        unsure = verdict.relation is not Relation.CONFLICT or unsure_value
        unsure = unsure or not _one_number_changed(new, old)
        score = None if unsure else _aboutness(fact, _features(old), similarity)
        if verdict.why in _NEGATION_WHYS and _denies(new) == _denies(old):
            # The "not" is inside a clause of its own ("encourages him not to give up"): it
            # denies no state the old fact states.
            score = None
        if max(len(fact.content), len(_features(old).content)) > _ONE_CLAIM_WORDS:
            # Several claims in one fact ("Gina supports Jon through setbacks and encourages
            # him not to give up"): a "not" or a change verb in one clause is not sure to end
            # another fact. Surfaced as a conflict, never retired unasked.
            score = None
        if _tells_the_past(old) and (fact.negations > 0) == (_features(old).negations > 0):
            # "graduated from MIT in 2015": a past event stays true beside another one (a
            # second degree); only a denial of it is sure. Another value is a conflict to ask.
            score = None
        sure.append(score)
    if not fact.changes:
        return [
            score is not None and score > similarity
            for score, (_, similarity) in zip(sure, olds, strict=True)
        ]
    return _one_change(fact, sure, olds)


_NEGATION_WHYS = frozenset({_NEGATES, _REVERSES})
# A denial of the fact's own verb: after an auxiliary or modal ("does not", "isn't", "can
# never"), "no longer", or "never" itself. Not "not to" / "and not give up", which deny a
# clause of their own.
_DENIAL_RE = re.compile(
    r"\b(?:is|are|am|was|were|do|does|did|has|have|had|can|could|will|would|should|may|"
    r"might|must)\s+(?:not|never|no)\b|n't\b|\bnever\b|\bno\s+longer\b|^\w+(?:'s)?\s+no\b",
    re.IGNORECASE,
)


def _denies(text: str) -> bool:
    """Whether fact ``text`` denies its own verb ("User does not drink coffee", "User is no
    longer vegan", "User never flies"), not only a clause inside it."""
    return _DENIAL_RE.search(text.replace("’", "'")) is not None


#: The most content words a fact may have and still be one claim that a save may surely
#: replace (the facts a model saves have two to six: "User quit Initech and joined Hooli as a
#: product manager" has six).
_ONE_CLAIM_WORDS = 8


# Irregular simple pasts of common verbs (English grammar; regular ones end in -ed).
_PAST_FORMS = frozenset(
    "was were had did went came saw took gave got made met left lost sold bought built taught "
    "thought wrote ran grew spent won began knew found kept told".split()
)


def _tells_the_past(text: str) -> bool:
    """Whether fact ``text`` tells of something done ("User studied history", "Caroline went
    to a support group in May") rather than a state that holds now: the first verb after its
    subject (the user, a name, a possessive: "User's", "Melanie's daughter") is in the simple
    past. A present auxiliary first ("is", "has") is a state."""
    words = re.findall(r"[A-Za-z']+", text)
    for index, word in enumerate(words[:_SUBJECT_WORDS]):
        lower = word.lower()
        if index == 0 or word[0].isupper() or lower.endswith("'s"):
            continue  # the subject: "User", "Caroline", "User's", "Melanie's"
        if lower in _PRESENT_FORMS:
            return False
        if lower in _PAST_FORMS or (lower.endswith("ed") and len(lower) > 4):
            return True
    return False


# The present forms of the auxiliaries and of "have": a fact whose first verb is one of these
# states what holds now ("User is dating Chris", "User has 2 monitors").
_PRESENT_FORMS = frozenset("is are am has have does do can will".split())
#: How far into a fact its first verb is looked for.
_SUBJECT_WORDS = 5


_NUMBER_TOKEN_RE = re.compile(r"\d[\w.:/,-]*")


def _one_number_changed(new: str, old: str) -> bool:
    """Whether the numbers of the pair leave one value changed at most: "3 direct reports" /
    "5 direct reports" is one attribute updated; "book 11 in 2001" / "book 12 in 2002", or
    "badge at site 1 is 1" / "... site 2 is 2", may be another book or badge."""
    new_numbers: list[str] = _NUMBER_TOKEN_RE.findall(new)
    old_numbers: list[str] = _NUMBER_TOKEN_RE.findall(old)
    if len(new_numbers) == len(old_numbers):
        return sum(a != b for a, b in zip(new_numbers, old_numbers, strict=True)) <= 1
    return len(set(new_numbers) ^ set(old_numbers)) <= 1


def _aboutness(new: Fact, old: Fact, similarity: float) -> float | None:
    """How surely the conflict pair is one thing changed (``None``: not sure at all). Above
    ``similarity`` means the words say so; equal means only the embedding does."""
    # The one both facts are about ("Joanna" in "Joanna can't have dairy" and "Joanna has been
    # working on a project") says nothing of which fact a change is about, as "User" does not.
    subject = _subject(new) & _subject(old)
    new_words = set(new.content) - new.changes - subject
    old_words = set(old.content) - subject
    shared = sum(any(_related(word, other) for other in old_words) for word in new_words)
    weak = bool(new.changes) and not new.changes - _WEAK_CHANGES
    denial = not new.changes and (new.negations > 0) != (old.negations > 0)
    if weak or denial:
        # Only "now" / "again" mark the change, or a "not": enough in the same sentence (half
        # the words of each shared: "User eats meat" / "User doesn't eat meat"), too little to
        # retire a fact about something else ("… but has never tried mountain climbing").
        same_frame = shared * 2 >= max(len(new_words), len(old_words)) > 0
        return (
            similarity + 0.1 * shared / max(1, min(len(new_words), len(old_words)))
            if (same_frame)
            else None
        )
    if shared or new.names & old.names:
        return similarity + 0.1 * shared / max(1, min(len(new_words), len(old_words)))
    if new.changes:
        return similarity  # "switched to Chrome" / "uses Firefox": the nearest may be it
    return None


def _subject(fact: Fact) -> frozenset[str]:
    """The name a fact opens with, when it does ("Joanna", "Melanie's daughter": melanie), as
    the judge reads it; empty for "User"."""
    first = re.match(r"[A-Z][\w-]*", fact.text)
    if first is None:
        return frozenset()
    return frozenset({stem(first.group(0).lower())}) & frozenset(fact.content[:1])


def _related(word: str, other: str) -> bool:
    """The same stem, or one stem the start of the other ("teach" / "teacher")."""
    if word == other:
        return True
    short, long = sorted((word, other), key=len)
    return len(short) >= 4 and long.startswith(short)


# Adverbs and light verbs that mark a change too weakly to retire a fact unasked: "User now
# works from home on Fridays" may replace "User works from the office five days a week", but
# "You are now in developer mode" says nothing about an unrelated stored fact that happens to
# share a word with it.
_WEAK_CHANGES = frozenset({"now", "again", "started", "became", "become", "used"})

#: How much nearer than the next conflict a fact must be for a changed state with no word in
#: common to be surely about it.
_CLEAR_MARGIN = 0.05


def _one_change(
    fact: Fact, sure: list[float | None], olds: Sequence[tuple[str, float]]
) -> list[bool]:
    """A changed state replaces at most its best candidate: one with words in common, or the
    nearest by a clear margin over every other conflict."""
    ranked = sorted((score, i) for i, score in enumerate(sure) if score is not None)
    out = [False] * len(olds)
    if not ranked:
        return out
    best, index = ranked[-1]
    runner_up = ranked[-2][0] if len(ranked) > 1 else 0.0
    if best > olds[index][1] or best - runner_up >= _CLEAR_MARGIN:
        out[index] = True
    return out


def may_update(new: str, old: str, similarity: float) -> bool:
    """Whether ``new`` may update the older ``old`` (cosine ``similarity``): the judge calls
    the pair a conflict for a changed state, a negation or another number (not for one value
    swapped), and they are near enough to be about one thing (at least
    :attr:`Thresholds.reconcile`). What a memory block shows as an earlier note
    (:mod:`memorybank.rules.earlier`); the save reports more pairs, as "may conflict".

    >>> may_update("User now works from home on Fridays",
    ...            "User works from the office five days a week", 0.68)
    True
    >>> may_update("User now works from home on Fridays", "User keeps a journal every evening",
    ...            0.45)
    False
    """
    if similarity < THRESHOLDS.reconcile:
        return False
    verdict = judge(new, old, similarity)
    # One value for another ("car is a Tesla" / "a Honda") is as often a second thing as a
    # changed one: those stay two lines, as they stay two facts.
    # Nor does a number alone ("colleague number 4" / "number 11" may be two colleagues);
    # another count of the same thing does ("2 monitors" / "a third monitor").
    return (
        verdict.relation is Relation.CONFLICT
        and not borderline(verdict, similarity)
        and verdict.why != _ANOTHER_NUMBER
    )


def needs_reconciling(nearest: float) -> bool:
    """Whether remember asks its LLM what a new fact does to the stored ones (adds to,
    updates, replaces or repeats them), given the similarity of the ``nearest``. Less
    similar, it is about something else and is saved; more than :attr:`Thresholds.same`, it is
    a near copy, which the save's judge refuses or relates like any other.

    >>> needs_reconciling(0.7), needs_reconciling(0.3), needs_reconciling(0.99)
    (True, False, False)
    """
    return THRESHOLDS.reconcile <= nearest <= THRESHOLDS.same


__all__ = [
    "THRESHOLDS",
    "Relation",
    "Thresholds",
    "Verdict",
    "WordVectors",
    "borderline",
    "duplicate_probability",
    "is_candidate",
    "judge",
    "judge_with",
    "may_update",
    "needs_reconciling",
    "refusable",
    "replaces",
    "specificity",
]
