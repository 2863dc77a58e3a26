"""What the duplicate judge measures about a pair of facts: the numbers its pair model reads.

:mod:`memorybank.rules.verdicts` decides; this module only reads. A fact is tokenised once
(:func:`read_fact`, cached) into its content words (stemmed, stop words out), numbers,
capitalised names, negations, words of an ended or changed state, places and its subject; a
pair of facts becomes a vector of :data:`FEATURES` (:func:`pair_features`): how similar the
whole facts are (the embedding cosine the store found), how much of each the other covers, how
close the words that differ are (the embedding cosine of the difference, when the caller hands
word vectors), whether the shared words come in another order or change role, and how long
each is.

The only word lists here are English grammar: negation, auxiliaries, prepositions of place,
the words that say a state ended or changed, irregular past participles (so a passive sentence
matches its active form) and light verbs that carry no content ("have", "get", "take"). Which
words mean the same is measured by the embedding model, never listed.

>>> fact = read_fact("User's daughter is 7 and no longer plays the violin")
>>> fact.numbers, fact.negations, sorted(fact.changes)
(frozenset({'7'}), 0, ['no longer'])
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
import Stemmer

from memorybank.rules.query import STOPWORDS

#: Unit vectors for short texts (words), one row per text in order: the embedding model, handed
#: in by the layer that owns it (the rules never load a model).
WordVectors = Callable[[Sequence[str]], npt.NDArray[np.float32]]

NEGATIONS = frozenset(
    "not no never nobody none nothing nowhere neither nor without cannot n't isn't aren't "
    "wasn't weren't don't doesn't didn't won't can't hasn't haven't hadn't shouldn't "
    "wouldn't couldn't".split()
)
# Words saying a state ended or changed: English aspect and change verbs, not a topic's words.
CHANGE_WORDS = frozenset(
    "quit quits stop stops stopped ceased cease quitting stopping former formerly ex anymore "
    "moved move relocated relocate switched switch changed change cancelled canceled cancel "
    "postponed postpone rescheduled reschedule delayed ended left leaving retired resigned "
    "divorced dropped gave again resumed started became become now died passed sold finished "
    "completed fired separated broke replaced upgraded downgraded migrated renamed uninstalled "
    "removed deleted closed graduated used".split()
)
_AUXILIARIES = frozenset(
    "is are was were am be been being has have had does do did will would can could may might "
    "must shall should 's".split()
)
_PLACES = frozenset(
    "on in into onto under over from off near behind above below through across around "
    "against inside outside toward towards up down out beside".split()
)
_PLACE_NOUNS = frozenset("front top middle back side bottom edge center centre".split())
_RELATIVE = frozenset({"which", "who", "that", "whose"})
_DETERMINERS = frozenset(
    "a an the some his her their its my our your this that these those".split()
)
_LIGHT = frozenset(
    "have has had having get gets got take takes taking go goes going do does make makes "
    "also really actually currently usually generally typically being been is are was "
    "were one named called".split()
)
_PASSIVE = frozenset({"by", "being"})
_NUMBER_WORDS = frozenset(
    "zero two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred thousand "
    "million billion first second third fourth fifth several many few dozen".split()
)  # not "one": "one friend" is "a friend"
#: The value of a number word, so "a third monitor" and "3 monitors" count the same way (not
#: "first" and "second": "at first", "a second opinion").
_NUMBER_VALUES: dict[str, str] = {
    word: str(value)
    for value, words in enumerate(
        (
            "",
            "",
            "two",
            "three third",
            "four fourth",
            "five fifth",
            "six sixth",
            "seven seventh",
            "eight eighth",
            "nine ninth",
            "ten tenth",
            "eleven eleventh",
            "twelve twelfth",
        )
    )
    for word in words.split()
}
# Irregular past participles (English grammar), so "was written by" matches "wrote".
_IRREGULAR: dict[str, str] = {
    participle: verb
    for verb, participle in (
        pair.split("/")
        for pair in """eat/eaten wear/worn hold/held feed/fed write/written drive/driven
        give/given take/taken see/seen do/done throw/thrown draw/drawn choose/chosen
        break/broken catch/caught buy/bought bring/brought lead/led sing/sung dig/dug
        steal/stolen shake/shaken grow/grown know/known fly/flown sell/sold tell/told
        build/built send/sent spend/spent make/made pay/paid find/found win/won begin/begun
        keep/kept teach/taught hide/hidden forget/forgotten lend/lent feel/felt leave/left
        lose/lost meet/met hear/heard say/said understand/understood""".split()
    )
}
_STOP = (STOPWORDS - NEGATIONS - {"over", "again", "few", "more"}) | {"user's", "s"}
_STEMMER = Stemmer.Stemmer("english")
_DIGITS_RE = re.compile(r"\d+(?:[.:/]\d+)*")
# A code of letters and digits (an id, a plate, a flat): compared whole, not by its digits.
_IDENTIFIER_RE = re.compile(r"(?=[a-z0-9_]*[a-z])(?=[a-z0-9_]*\d)[a-z0-9_]+")
# A number with its unit or ordinal ending ("3rd", "10am", "5kg"): the digits say it.
_UNIT_RE = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm|k|m|g|h|kg|km|mb|gb|ms|px|yo)")
_DIGIT_RE = re.compile(r"\d")
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:[.'’,:/-][A-Za-z0-9]+)*")
_COPULA_RE = re.compile(r"\s(?:is|are)\s", re.IGNORECASE)

#: The features of a pair, in the order of :func:`pair_features`' vector.
#: (The three measured with word vectors, each in [0, 1], are :data:`WORD_FEATURES`.)
FEATURES = (
    "cosine",  # embedding cosine of the whole facts
    "jaccard",  # shared content words over all (order-insensitive)
    "new_covered",  # share of the new fact's content words the old one has
    "old_covered",  # share of the old fact's content words the new one has
    "adds_nothing",  # 1 when every content word of the new fact is in the old one
    "new_only",  # how many content words only the new fact has (capped at 4, over 4)
    "old_only",  # how many only the old fact has (capped, over 4)
    "align_min",  # the least close new word's best cosine to the old fact's other words
    "novelty",  # the sum of (1 - best cosine) over those words (capped at 2, over 2)
    "difference_cosine",  # cosine of the two difference sets (mean word vectors)
    "order",  # share of the shared words' pairs that swap across another shared word
    "roles",  # a shared word moved across the verb (subject / object swap)
    "moved",  # a shared word sits beside none of its old neighbours
    "split",  # most old words between two words the new fact says side by side (capped, / 3)
    "places",  # a preposition of place the old fact does not have
    "voice",  # one is passive and the other is not
    "length",  # log of the new fact's content words over the old one's
)


#: Positions in :data:`FEATURES` of the features the word vectors measure.
WORD_FEATURES = tuple(
    FEATURES.index(name) for name in ("align_min", "novelty", "difference_cosine")
)


def needs_words(new_text: str, old_text: str) -> bool:
    """Whether the pair's features depend on word vectors: both facts have words the other
    lacks."""
    diff = difference(read_fact(new_text), read_fact(old_text))
    return bool(diff.new) and bool(diff.old)


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact as the judge reads it."""

    text: str  # as read (the key of the pair caches)
    content: tuple[str, ...]  # content stems in order (names kept whole, lower case)
    surface: tuple[str, ...]  # the word as written, for each content stem
    light: tuple[str, ...]  # light words as written (what a content word may be said as)
    numbers: frozenset[str]
    names: frozenset[str]  # capitalised words inside the sentence
    negations: int
    changes: frozenset[str]
    passive: bool
    relative: bool
    places: frozenset[str]
    before_names: frozenset[str]  # prepositions right before a name ("fluent in Spanish")
    subject: frozenset[str]  # content stems before the first auxiliary (empty: none found)
    doing: frozenset[str]  # stems written as "-ing" (an action under way)
    naming: frozenset[str]  # stems written as a plain noun or verb form
    nouns: frozenset[str] = frozenset()  # stems right after a determiner ("a drawing")
    counted: frozenset[str] = frozenset()  # stems right after a number ("2 monitors": monitor)


def _number(word: str) -> bool:
    return word in _NUMBER_WORDS or _DIGIT_RE.search(word) is not None


def stem(word: str) -> str:
    """A word's normal form: irregular participles to their verb, then stemmed."""
    return str(_STEMMER.stemWord(_IRREGULAR.get(word, word)))


@lru_cache(maxsize=8192)
def read_fact(text: str) -> Fact:
    """Tokenise ``text`` into what the judge compares (cached: a save judges many pairs)."""
    return _read(text)


def _mark_place(
    word: str, previous: str, following: str, places: set[str], before_names: set[str]
) -> None:
    """Note a preposition of place ("in front of" is another place than "in"), and whether it
    comes right before a name."""
    if word in _PLACES:
        places.add(word)
        if following[:1].isupper():
            before_names.add(word)
    elif word in _PLACE_NOUNS and previous in _PLACES:
        places.discard(previous)
        places.add(f"{previous} {word}")


def _mark_form(
    word: str, stemmed: str, before: str, nouns: set[str], doing: set[str], naming: set[str]
) -> None:
    """Note how a content word is used: a noun after a determiner ("a drawing"), an action
    under way ("-ing"), or a plain noun or verb form."""
    if before in _DETERMINERS:
        nouns.add(stemmed)
        naming.add(stemmed)
    elif word.endswith("ing") and len(word) > 5:
        doing.add(stemmed)
    elif not word.endswith(("ed", "en")) and before != "to":
        naming.add(stemmed)


def _values(word: str) -> list[str]:
    """What a number word says: its digits ("3rd": 3, "1,350": 1350), its value ("third": 3),
    and a code of letters and digits whole ("AB12CDE" / "XY12ZZE", "4B" / "4C")."""
    values = _DIGITS_RE.findall(word.replace(",", "")) or [_NUMBER_VALUES.get(word, word)]
    if _IDENTIFIER_RE.fullmatch(word) and not _UNIT_RE.fullmatch(word):
        values.append(word)
    return values


def _read(text: str) -> Fact:
    """One pass over the tokens of ``text`` (see :func:`read_fact`)."""
    raw = _TOKEN_RE.findall(text.replace("’", "'"))
    content: list[str] = []
    surface: list[str] = []
    light: list[str] = []
    numbers: set[str] = set()
    names: set[str] = set()
    changes: set[str] = set()
    places: set[str] = set()
    before_names: set[str] = set()
    doing: set[str] = set()
    naming: set[str] = set()
    nouns: set[str] = set()
    counted: set[str] = set()
    counting = False  # the last word read was a number
    negations = 0
    boundary = -1
    previous = ""
    for index, token in enumerate(raw):
        word = token.lower()
        if word.endswith("'s"):
            word = word[:-2]
        if word in NEGATIONS or word.endswith("n't"):
            negations += 1
        elif word == "longer" and previous == "no":
            negations -= 1  # "no longer" is an ended state, not a negation
            changes.add("no longer")
        if word in CHANGE_WORDS:
            changes.add(word)
        if boundary < 0 and index > 0 and word in _AUXILIARIES:
            boundary = len(content)
        following = raw[index + 1] if index + 1 < len(raw) else ""
        _mark_place(word, previous, following, places, before_names)
        previous = word
        if _number(word):
            counting = True
            numbers.update(_values(word))
            continue
        if index > 0 and token[0].isupper() and word not in _STOP and word != "user":
            names.add(word)
            content.append(word)
            surface.append(token)
            counting = False
            continue
        if word in _LIGHT:
            light.append(word)  # "has": what "owns" may be said as
            continue
        if word in _STOP or word in NEGATIONS:
            continue
        stemmed = stem(word)
        if content and content[-1] == stemmed:
            continue
        content.append(stemmed)
        surface.append(word)
        if counting:
            counted.add(stemmed)
        counting = False
        before = raw[index - 1].lower() if index > 0 else ""
        _mark_form(word, stemmed, before, nouns, doing, naming)
    lowered = {t.lower() for t in raw}
    return Fact(
        text=text,
        content=tuple(content),
        surface=tuple(surface),
        light=tuple(light),
        numbers=frozenset(numbers),
        names=frozenset(names),
        negations=negations,
        changes=frozenset(changes),
        passive=not lowered.isdisjoint(_PASSIVE),
        relative=not lowered.isdisjoint(_RELATIVE),
        places=frozenset(places),
        before_names=frozenset(before_names),
        subject=frozenset(content[:boundary]) if boundary > 0 else frozenset(),
        doing=frozenset(doing),
        naming=frozenset(naming - doing),
        nouns=frozenset(nouns),
        counted=frozenset(counted),
    )


def clear_caches() -> None:
    """Forget every fact read and pair compared (to time the judge on texts not seen before)."""
    read_fact.cache_clear()
    _uncovered.cache_clear()


def covered(word: str, others: frozenset[str]) -> bool:
    """Whether ``word`` is among ``others``, one stem allowed to extend the other by a letter
    or two ("allerg"/"allergi"), no more: "veget" (vegetable) is not "vegetarian"."""
    if word in others:
        return True
    if len(word) < 4:
        return False
    return any(
        len(other) >= 4
        and abs(len(other) - len(word)) <= _STEM_EXTENSION
        and (other.startswith(word) or word.startswith(other))
        for other in others
    )


#: How many letters one stem may add to another and still be the same word (:func:`covered`).
_STEM_EXTENSION = 2


def uncovered(new: Fact, old: Fact) -> list[int]:
    """Positions of the new fact's content words the old fact does not have."""
    return list(_uncovered(new.text, old.text))


@lru_cache(maxsize=1024)
def _uncovered(new_text: str, old_text: str) -> tuple[int, ...]:
    """:func:`uncovered` of two texts, read and compared once (a judge asks it several times
    of each pair)."""
    new, old = read_fact(new_text), read_fact(old_text)
    words = frozenset(old.content)
    # "is slicing an onion" is not covered by "onion slices": the same stem, another role;
    # "two hats and a hat" is not covered by "two coats and a hat": one more of a word.
    shifted = new.doing & old.nouns  # "is drawing" is not "a drawing"
    if old.doing or old.passive:
        shifted |= new.doing & old.naming
    extra = {w for w in words if new.content.count(w) > old.content.count(w)}
    return tuple(
        i
        for i, word in enumerate(new.content)
        if word in shifted or word in extra or not covered(word, words)
    )


def inversions(new: Fact, old: Fact) -> float:
    """Share of the shared words' pairs that come in the other order with another shared word
    between them in either fact ("a cat chases a mouse" / "a mouse chases a cat": the verb
    stays between the two that swapped), 0 when the voice differs (it moves the words and keeps
    the roles). Two words that swap side by side ("works remotely from home" / "works from home
    remotely", "morning meetings" / "meetings in the morning") do not count."""
    if new.passive != old.passive:
        return 0.0
    shared = set(new.content) & set(old.content)
    first = [w for w in dict.fromkeys(new.content) if w in shared]
    second = [w for w in dict.fromkeys(old.content) if w in shared]
    rank = {w: i for i, w in enumerate(second)}
    pairs = len(first) * (len(first) - 1) // 2
    if pairs == 0:
        return 0.0
    crossed = sum(
        1
        for i, a in enumerate(first)
        for j in range(i + 1, len(first))
        if rank[a] > rank[first[j]] and (j - i > 1 or rank[a] - rank[first[j]] > 1)
    )
    return crossed / pairs


def roles_swapped(new: Fact, old: Fact) -> bool:
    """Whether a word both facts share is before the verb in one and after it in the other
    ("Ana mentors Ben" / "Ben is mentored by Ana" keep the roles through the passive)."""
    if not new.subject or not old.subject or new.passive != old.passive:
        return False
    shared = set(new.content) & set(old.content)
    return bool(shared) and (new.subject & shared) != (old.subject & shared)


def _neighbours(words: list[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for i, word in enumerate(words):
        near = found.setdefault(word, set())
        near.update(words[max(i - 1, 0) : i] + words[i + 1 : i + 2])
    return found


def moved(new: Fact, old: Fact) -> bool:
    """Whether a shared word sits beside none of its old neighbours ("the tall lamp and the red
    chair" / "the red lamp and the tall chair"), counting only the words both facts have."""
    if new.passive != old.passive or new.relative or old.relative:
        return False
    shared = set(new.content) & set(old.content)
    new_near = _neighbours([w for w in new.content if w in shared])
    old_near = _neighbours([w for w in old.content if w in shared])
    return any(near and old_near[w] and not near & old_near[w] for w, near in new_near.items())


def split(new: Fact, old: Fact) -> float:
    """How far apart, in the old fact, two words are that the new one says one after the other
    (0: the new fact is a run of the old one; 1: three or more words apart, as when it joins
    the subject of one clause to the verb of another)."""
    where: dict[str, list[int]] = {}
    for i, word in enumerate(old.content):
        where.setdefault(word, []).append(i)
    found: list[int] = []
    for word in new.content:
        if word in where:  # a word the old fact says twice: the place nearest the last one
            last = found[-1] if found else -1
            found.append(min(where[word], key=lambda i: (abs(i - last - 1), i)))
    gaps = [abs(b - a) - 1 for a, b in zip(found, found[1:], strict=False)]
    return min(max(gaps, default=0), 3) / 3


def copula_swap(new: str, old: str) -> bool:
    """Whether ``new`` is ``old`` with the two sides of "is"/"are" swapped ("X is Y" /
    "Y is X"): the same statement, unlike "X chases Y" / "Y chases X"."""
    new_sides, old_sides = _COPULA_RE.split(new, 1), _COPULA_RE.split(old, 1)
    if len(new_sides) != 2 or len(old_sides) != 2:
        return False
    sides = [frozenset(_read(side.strip()).content) for side in (*new_sides, *old_sides)]
    return sides[0] == sides[3] and sides[1] == sides[2] and bool(sides[0]) and bool(sides[1])


def place_added(new: Fact, old: Fact) -> bool:
    """Whether the new fact has a preposition of place the old one does not ("on the mat" /
    "under the mat"), unless it only joins a name the old fact has without one ("speaks fluent
    Spanish" / "is fluent in Spanish")."""
    added = new.places - old.places
    return bool(added) and not (not old.places and added <= new.before_names)


def place_changed(new: Fact, old: Fact) -> bool:
    """Whether the new fact puts a thing in another place: a preposition of place instead of
    one of the old fact's ("on the mat" / "under the mat"); one where the old fact has none
    ("morning meetings" / "meetings in the morning") is left to the model."""
    return bool(old.places) and place_added(new, old) and not new.places >= old.places


@dataclass(frozen=True, slots=True)
class Difference:
    """The words that differ: the new fact's uncovered ones and the old fact's."""

    new: tuple[str, ...]  # as written
    old: tuple[str, ...]  # as written, the old fact's light words included


def difference(new: Fact, old: Fact) -> Difference:
    """The words each fact has that the other lacks (what the word vectors compare)."""
    gaps = uncovered(new, old)
    old_gaps = uncovered(old, new)
    return Difference(
        new=tuple(new.surface[i] for i in gaps),
        old=tuple(dict.fromkeys([*(old.surface[i] for i in old_gaps), *old.light])),
    )


def _alignment(diff: Difference, words: WordVectors | None) -> tuple[float, float, float]:
    """(least best cosine, novelty, cosine of the mean vectors) of the new words that differ
    against the old ones: 1.0, 0.0, 1.0 when the new fact adds no word; as far apart as can be
    when the old one has none to match or there are no vectors."""
    if not diff.new:
        return 1.0, 0.0, 1.0
    if not diff.old or words is None:
        return 0.0, min(len(diff.new), 2) / 2, 0.0
    vectors = np.asarray(words([*diff.new, *diff.old]), dtype=np.float32)
    new, old = vectors[: len(diff.new)], vectors[len(diff.new) :]
    best = (new @ old.T).max(axis=1)
    new_mean, old_mean = new.mean(axis=0), old.mean(axis=0)
    norm = float(np.linalg.norm(new_mean) * np.linalg.norm(old_mean)) or 1.0
    novelty = min(float((1.0 - best).clip(0.0, None).sum()), 2.0) / 2
    together = min(max(float(new_mean @ old_mean) / norm, 0.0), 1.0)
    return min(max(float(best.min()), 0.0), 1.0), novelty, together


def pair_features(
    new_text: str, old_text: str, similarity: float, words: WordVectors | None = None
) -> list[float]:
    """The :data:`FEATURES` of (``new_text``, ``old_text``) at cosine ``similarity``;
    ``words`` gives the vectors of the words that differ (without it they count as far apart).

    >>> [round(x, 2) for x in pair_features("User owns a boat", "User owns a boat", 1.0)][:4]
    [1.0, 1.0, 1.0, 1.0]
    """
    new, old = read_fact(new_text), read_fact(old_text)
    diff = difference(new, old)
    new_gaps = len(uncovered(new, old))
    old_gaps = len(uncovered(old, new))
    new_size, old_size = max(len(new.content), 1), max(len(old.content), 1)
    shared = len(new.content) - new_gaps
    union = shared + new_gaps + old_gaps or 1
    least, novelty, together = _alignment(diff, words)
    return [
        similarity,
        shared / union,
        1.0 - new_gaps / new_size,
        1.0 - old_gaps / old_size,
        float(new_gaps == 0),
        min(new_gaps, 4) / 4,
        min(old_gaps, 4) / 4,
        least,
        novelty,
        together,
        inversions(new, old),
        float(roles_swapped(new, old) and not copula_swap(new_text, old_text)),
        float(moved(new, old)),
        split(new, old),
        float(place_added(new, old)),
        float(new.passive != old.passive),
        math.log(new_size / old_size),
    ]


__all__ = [
    "CHANGE_WORDS",
    "FEATURES",
    "NEGATIONS",
    "Difference",
    "Fact",
    "WORD_FEATURES",
    "WordVectors",
    "clear_caches",
    "copula_swap",
    "covered",
    "difference",
    "inversions",
    "moved",
    "needs_words",
    "pair_features",
    "place_added",
    "place_changed",
    "read_fact",
    "roles_swapped",
    "split",
    "stem",
    "uncovered",
]
