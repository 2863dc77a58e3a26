"""What a new fact is to a stored one that resembles it: the same fact (a duplicate, refused),
a change of it (a conflict, surfaced: it may update the stored one), or another fact (distinct,
stored quietly). This module is the one place that decides it, and :data:`THRESHOLDS` is the
one set of similarities the decision uses: saving (the store's judge, through
:func:`memorybank.rules.intake.judge_pair`), an LLM settling the unsure pairs
(:mod:`memorybank.core.settle`), remembering a conversation
(:mod:`memorybank.services.conversations`) and consolidation (:mod:`memorybank.core.consolidate`)
all ask it; ``tests/rules/test_verdicts.py``
checks that no other module of src/ holds a similarity threshold.

Why this module and not a new one: the relation, the word rules that decide it and the
thresholds that choose which pairs reach those rules are one definition, measured together
(docs/benchmarks.md); kept apart, a threshold could drift from the rules it was tuned with.
The word lists are today's mechanism behind :func:`judge`; replacing them changes this module
only.

Similarity only finds the candidates (:attr:`Thresholds.candidate`); :func:`judge` decides,
with cheap rules and no model (microseconds a pair):

* the new fact is a **duplicate** only if it says nothing the stored one does not: every
  content word of the new fact (stemmed, stop words out, a few synonyms folded together:
  "likes"/"prefers", "lives in"/"is based in") is covered by the stored one, with the same
  numbers, the same polarity (negation), no ended or changed state, no opposite value and,
  for the words both share, the same order of roles (unless one of them is passive);
* it is a **conflict** (may update or contradict) when its polarity differs ("not",
  "no longer"), it names an ended or changed state ("quit", "moved to", "cancelled"), it holds
  an opposite or exclusive value ("dark"/"light", "single"/"married"), or it is the same
  attribute with one different value (a number, a name, one short phrase swapped);
* otherwise it is **distinct**: both can be true at once.

The pairs the rules are least sure of are :func:`borderline`: with an LLM configured, the
model settles those and only those (:mod:`memorybank.core.settle`).

>>> judge("User likes tea", "User likes tea", 1.0).relation
<Relation.DUPLICATE: 'duplicate'>
>>> judge("User is not allergic to nuts", "User is allergic to nuts", 0.97).relation
<Relation.CONFLICT: 'conflict'>
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

import Stemmer

from memorybank.rules.query import STOPWORDS


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
    duplicates (and, :attr:`topic`, what a forget request is about), and how many stored facts
    a new one is compared with. Where a fact has words, similarity never decides alone: it
    chooses the pairs the word rules read, the pairs an LLM settles, whether remember asks its
    LLM at all, and whether a memory that shares a name with a forget request shares its topic.

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
    """A pair at least this similar that the word rules call distinct is borderline
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


#: The thresholds of every duplicate decision (and of a forget request's topic).
THRESHOLDS = Thresholds()

# --------------------------------------------------------------------------------------------
# Word lists (general English, not tied to any data set)
# --------------------------------------------------------------------------------------------

_NEGATIONS = frozenset(
    "not no never nobody none nothing nowhere neither nor without cannot n't isn't aren't "
    "wasn't weren't don't doesn't didn't won't can't hasn't haven't hadn't shouldn't "
    "wouldn't couldn't".split()
)
# Words saying a state ended or changed (compared as stems).
_CHANGE_WORDS = frozenset(
    "quit stop stopped ceased cease quitting stopping former formerly ex anymore longer "
    "moved move relocated relocate switched switch changed change cancelled canceled cancel "
    "postponed postpone rescheduled reschedule delayed ended left leaving retired resigned "
    "divorced dropped gave again resumed started became become now died passed sold "
    "finished completed fired separated broke replaced upgraded downgraded migrated renamed "
    "uninstalled removed deleted closed graduated used".split()
)
# Groups of mutually exclusive values: two different members of one group conflict.
_EXCLUSIVE_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"dark", "light"}),
    frozenset({"single", "married", "engaged", "divorced", "widowed"}),
    frozenset({"active", "inactive", "expired", "suspended", "paused"}),
    frozenset({"on", "off"}),
    frozenset({"enabled", "disabled"}),
    frozenset({"like", "dislike", "hate"}),
    frozenset({"love", "hate"}),
    frozenset({"early", "late"}),
    frozenset({"open", "closed"}),
    frozenset({"true", "false"}),
    frozenset({"always", "never", "sometimes", "rarely", "often"}),
    frozenset({"big", "small"}),
    frozenset({"tall", "short"}),
    frozenset({"young", "old"}),
    frozenset({"hot", "cold"}),
    frozenset({"up", "down"}),
    frozenset({"in", "into", "out"}),
    frozenset({"inside", "outside"}),
    frozenset({"full", "empty"}),
    frozenset({"fast", "slow"}),
    frozenset({"happy", "sad"}),
    frozenset({"alive", "dead"}),
    frozenset({"remote", "onsite", "office"}),
    frozenset({"vegetarian", "vegan", "pescatarian", "carnivore"}),
    frozenset({"man", "boy", "girl"}),
    frozenset({"sitting", "standing", "lying", "running", "walking"}),
)
_OPPOSITE: dict[str, frozenset[str]] = {
    word: group - {word} for group in _EXCLUSIVE_GROUPS for word in group
}
# Irregular past participles, so a passive sentence matches its active form.
_IRREGULAR: dict[str, str] = {
    participle: verb
    for verb, participle in (
        pair.split("/")
        for pair in """ride/ridden eat/eaten wear/worn hold/held feed/fed write/written
        drive/driven give/given take/taken see/seen do/done throw/thrown draw/drawn
        choose/chosen break/broken beat/beaten bite/bitten catch/caught buy/bought
        bring/brought shoot/shot lead/led sing/sung swim/swum dig/dug hang/hung
        steal/stolen shake/shaken blow/blown grow/grown know/known fly/flown sell/sold
        tell/told build/built send/sent spend/spent make/made pay/paid lay/laid find/found
        win/won begin/begun keep/kept sweep/swept teach/taught fight/fought hide/hidden
        forget/forgotten freeze/frozen weave/woven sew/sewn mow/mown spin/spun sting/stung
        strike/struck swing/swung tear/torn wake/woken bend/bent lend/lent feel/felt
        leave/left lose/lost meet/met read/read hear/heard say/said sit/sat stand/stood
        understand/understood light/lit slide/slid""".split()
    )
}
# Light normalisation: words that say the same thing in a fact, folded onto one.
_SYNONYMS: dict[str, str] = {
    **dict.fromkeys(
        "likes liked prefers preferred prefer loves love loved enjoys enjoy "
        "favors favor favours favour fond favorite favourite".split(),
        "like",
    ),
    **dict.fromkeys("lives live living based resides reside located stays".split(), "live"),
    **dict.fromkeys("called named name names".split(), "name"),
    **dict.fromkeys("chose chosen choose picked pick selected select opted".split(), "choose"),
    **dict.fromkeys(
        "building build built developing develop developed creating create making make".split(),
        "build",
    ),
    **dict.fromkeys("application applications app apps".split(), "app"),
    **dict.fromkeys("short brief concise succinct terse".split(), "concise"),
    **dict.fromkeys("answers answer responses response replies reply".split(), "response"),
    **dict.fromkeys("rather instead".split(), "over"),
    **dict.fromkeys("every each all".split(), "every"),
    **dict.fromkeys("wants want wishes would_like needs need".split(), "want"),
    **dict.fromkeys("owns own has have having had".split(), "have"),
    **dict.fromkeys("asynchronous async".split(), "async"),
    **dict.fromkeys("synchronous sync".split(), "sync"),
    **dict.fromkeys("spouse wife husband married".split(), "spouse"),
    **dict.fromkeys("colleague colleagues coworker coworkers co-worker teammate".split(), "work"),
    **dict.fromkeys("guy man".split(), "man"),
    **dict.fromkeys("kid kids child children".split(), "child"),
    **dict.fromkeys("lady woman".split(), "woman"),
    **dict.fromkeys("big large huge".split(), "big"),
    **dict.fromkeys("little small tiny".split(), "small"),
    **dict.fromkeys("automobile car".split(), "car"),
    **dict.fromkeys("dad daddy father".split(), "father"),
    **dict.fromkeys("mom mum mommy mother".split(), "mother"),
    **dict.fromkeys("phone telephone cellphone".split(), "phone"),
    **dict.fromkeys("motorbike motorcycle".split(), "motorcycle"),
    **dict.fromkeys(
        "talk talks talking talked speak speaks speaking spoke spoken chat chats chatting".split(),
        "talk",
    ),
    **dict.fromkeys("outdoors outside".split(), "outside"),
    **dict.fromkeys("photo photograph picture pic".split(), "photo"),
    **dict.fromkeys("put puts putting placing place places placed".split(), "put"),
    **dict.fromkeys("stop stops stopping stopped pause pauses pausing paused".split(), "stop"),
    **dict.fromkeys("road roads street streets".split(), "road"),
    **dict.fromkeys("begin begins beginning start starts starting".split(), "start"),
}
# A general word and the specific ones it covers: a new fact that says "a person" where the
# stored one says "a man" says nothing new (the reverse adds something).
_GENERAL: dict[str, str] = {
    "person": "man woman boy girl lady guy child kid baby player men women people",
    "people": "men women persons boys girls children kids players",
    "animal": "dog cat horse bird cow sheep goat pig puppy kitten monkey",
    "instrument": "guitar piano violin flute drum drums trumpet cello saxophone",
    "vehicle": "car truck bus van motorcycle bike bicycle jeep",
    "cut": "slice slices slicing sliced chop chops chopping chopped dice dicing",
    "cook": "fry fries frying boil boiling bake baking grill grilling roast roasting",
    "food": "meal meals",
}
# Words that add no information of their own to a fact (beyond the stop words).
_LIGHT = frozenset(
    "have get got take takes taking go goes going do does make keep keeps also really "
    "named called "
    "actually currently usually generally typically being been is are was were one".split()
)
_STEMMER = Stemmer.Stemmer("english")
_SYNONYM_STEMS = {
    str(_STEMMER.stemWord(_IRREGULAR.get(word, word))): str(_STEMMER.stemWord(canon))
    for word, canon in _SYNONYMS.items()
}
_KINDS: dict[str, frozenset[str]] = {
    str(_STEMMER.stemWord(general)): frozenset(
        _SYNONYM_STEMS.get(stem, stem)
        for stem in (str(_STEMMER.stemWord(w)) for w in specific.split())
    )
    for general, specific in _GENERAL.items()
}
_LIGHT_STEMS = frozenset(str(_STEMMER.stemWord(w)) for w in _LIGHT)
_STOP = (STOPWORDS - _NEGATIONS - {"over", "again", "few", "more"}) | {
    "user's",
    "s",
}
_NUMBER_WORDS = frozenset(
    "zero two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty hundred thousand "
    "million billion first second third fourth fifth several many few dozen".split()
)  # not "one": "one man" is "a man"
_PASSIVE = frozenset({"by", "being"})
_PLACE_NOUNS = frozenset("front top middle back side bottom edge center centre".split())
_RELATIVE = frozenset({"which", "who", "that", "whose"})
# Where and which way: a new one of these says something the old fact did not.
_PLACES = frozenset(
    "on in into onto under over from off near behind above below through across around "
    "about against inside outside toward towards up down out beside".split()
)
_COPULA_RE = re.compile(r"\s(?:is|are)\s", re.IGNORECASE)
#: Share of the shared words' pairs that may come in the other order (an adjective moved
#: into a relative clause) before the roles count as different.
_MAX_INVERSIONS = 0.25
#: Longest value (in words, a run of names counting as one) swapped for another that makes
#: a conflict; a longer difference is another fact.
_MAX_VALUE_WORDS = 1
_DIGITS_RE = re.compile(r"\d+(?:[.:/]\d+)*")
# A code of letters and digits (an id, a plate, a flat): compared whole, not by its digits.
_IDENTIFIER_RE = re.compile(r"(?=[a-z0-9_]*[a-z])(?=[a-z0-9_]*\d)[a-z0-9_]+")
# A number with its unit or ordinal ending ("3rd", "10am", "5kg"): the digits say it.
_UNIT_RE = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm|k|m|g|h|kg|km|mb|gb|ms|px|yo)")
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:[.'’,:/-][A-Za-z0-9]+)*")


@dataclass(frozen=True, slots=True)
class _Fact:
    """One fact's features for judging."""

    content: tuple[str, ...]  # content stems in order (names kept whole, lower case)
    numbers: frozenset[str]
    negations: int
    changes: frozenset[str]
    values: frozenset[str]  # words that belong to an exclusive group
    passive: bool
    names: frozenset[str]  # capitalised words inside the sentence
    relative: bool = False  # has a relative clause ("a dog, which is black")
    places: frozenset[str] = frozenset()  # prepositions of place and direction
    before_names: frozenset[str] = frozenset()  # those of them right before a name
    doing: frozenset[str] = frozenset()  # stems written as "-ing" (an action under way)
    naming: frozenset[str] = frozenset()  # stems written as a plain noun or verb form


def _number(word: str) -> bool:
    return any(ch.isdigit() for ch in word) or word in _NUMBER_WORDS


def _canon(word: str) -> str:
    """A word's normal form: synonyms folded, then stemmed."""
    stem = str(_STEMMER.stemWord(_IRREGULAR.get(word, word)))
    return _SYNONYM_STEMS.get(stem, stem)


@lru_cache(maxsize=4096)
def _features(text: str) -> _Fact:
    """Tokenise ``text`` once into what the rules compare (cached: saves judge many pairs)."""
    raw = _TOKEN_RE.findall(text.replace("’", "'"))
    content: list[str] = []
    numbers: set[str] = set()
    names: set[str] = set()
    negations = changes = 0
    change_words: set[str] = set()
    values: set[str] = set()
    passive = False
    previous = ""
    doing: set[str] = set()
    places: set[str] = set()
    before_names: set[str] = set()
    naming: set[str] = set()
    for index, token in enumerate(raw):
        word = token.lower()
        if word.endswith("'s"):
            word = word[:-2]
        if word in _NEGATIONS or word.endswith("n't"):
            negations += 1
        elif word == "longer" and previous == "no":
            negations -= 1  # "no longer" is an ended state, counted below, not a negation
            change_words.add("no longer")
        if word in _CHANGE_WORDS and word != "longer":
            change_words.add(word)
        value = _SYNONYMS.get(word, word)  # "large" is the value "big"
        if value in _OPPOSITE or word in _OPPOSITE:
            values.add(value if value in _OPPOSITE else word)
        passive = passive or word in _PASSIVE
        if word in _PLACES:
            places.add(word)
            following = raw[index + 1] if index + 1 < len(raw) else ""
            if following[:1].isupper():
                before_names.add(word)  # "fluent in Spanish", "a degree from MIT"
        elif word in _PLACE_NOUNS and previous in _PLACES:
            places.discard(previous)  # "in front of" is another place than "in"
            places.add(f"{previous} {word}")
        previous = word
        if _number(word):
            # "7-year-old" states the number 7, as "7 years old" does.
            numbers.update(_DIGITS_RE.findall(word.replace(",", "")) or [word])
            if _IDENTIFIER_RE.fullmatch(word) and not _UNIT_RE.fullmatch(word):
                numbers.add(word)  # "AB12CDE" / "XY12ZZE", "4B" / "4C": the whole code counts
            continue
        if index > 0 and token[0].isupper() and word not in _STOP and word != "user":
            names.add(word)
            content.append(word)
            continue
        if word in _STOP or word in _NEGATIONS or word in _LIGHT:
            continue
        stem = _canon(word)
        if stem in _LIGHT_STEMS or (content and content[-1] == stem):
            continue  # light, or a synonym of the word before ("short, concise")
        content.append(stem)
        if word.endswith("ing") and len(word) > 5:
            doing.add(stem)
        elif not word.endswith(("ed", "en")) and raw[index - 1].lower() != "to":
            naming.add(stem)
    del changes
    return _Fact(
        content=tuple(content),
        numbers=frozenset(numbers),
        negations=negations,
        changes=frozenset(change_words),
        values=frozenset(values),
        passive=passive,
        names=frozenset(names),
        places=frozenset(places),
        before_names=frozenset(before_names),
        relative=any(token.lower() in _RELATIVE for token in raw),
        doing=frozenset(doing),
        naming=frozenset(naming - doing),
    )


def _covered(word: str, others: frozenset[str]) -> bool:
    """Whether ``word`` is among ``others``, allowing one stem to extend the other
    ("allerg"/"allergi", "async"/"asynchron")."""
    if word in others or others & _KINDS.get(word, frozenset()):
        return True  # the same word, or a more general one ("person" for "man")
    if len(word) < 4:
        return False
    return any(
        len(other) >= 4 and (other.startswith(word) or word.startswith(other)) for other in others
    )


def _uncovered(new: _Fact, old: _Fact) -> list[int]:
    """Positions of the new fact's content words the old fact does not have."""
    words = frozenset(old.content)
    # "is slicing an onion" is not covered by "onion slices": the same stem, another role.
    # "two dogs and a dog" is not covered by "two cats and a dog": one more of a word.
    shifted = new.doing & old.naming if old.doing or old.passive else frozenset()
    extra = {w for w in words if new.content.count(w) > old.content.count(w)}
    return [
        i
        for i, word in enumerate(new.content)
        if word in shifted or word in extra or not _covered(word, words)
    ]


def _runs(positions: list[int]) -> int:
    """How many runs of adjacent positions there are (a swapped phrase is one run)."""
    return sum(1 for i, pos in enumerate(positions) if i == 0 or positions[i - 1] != pos - 1)


def _order_differs(new: _Fact, old: _Fact) -> bool:
    """Whether the words both share come in another order while neither or both are passive
    ("a dog chases a cat" / "a cat chases a dog": other roles)."""
    if new.passive != old.passive:
        return False
    shared = set(new.content) & set(old.content)
    first = [w for w in dict.fromkeys(new.content) if w in shared]
    rank = {w: i for i, w in enumerate(w for w in dict.fromkeys(old.content) if w in shared)}
    pairs = len(first) * (len(first) - 1) // 2
    if pairs == 0:
        return False
    inverted = sum(1 for i, a in enumerate(first) for b in first[i + 1 :] if rank[a] > rank[b])
    return inverted / pairs > _MAX_INVERSIONS


def _state_change(new: _Fact, old: _Fact) -> str:
    """Why the new fact changes the old one's state or polarity ("" when it does not)."""
    if (new.negations > 0) != (old.negations > 0):
        return "negates it" if new.negations > 0 else "reverses a negation"
    ended = new.changes - old.changes
    if ended:
        return f"ended or changed state ({sorted(ended)[0]})"
    for value in new.values - old.values:
        clash = (_OPPOSITE[value] & old.values) - new.values
        if clash:
            return f"opposite value ({value} / {sorted(clash)[0]})"
    return ""


def _value_swap(new: _Fact, old: _Fact, new_gaps: list[int]) -> str:
    """Why the new fact is the same attribute with another value ("" when it is not)."""
    old_gaps = _uncovered(old, new)
    if new.numbers != old.numbers and new.numbers and old.numbers:
        if not new_gaps:
            return "a different number"
    if not new_gaps or not old_gaps:
        return ""
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


def _slot(fact: _Fact, gaps: list[int]) -> tuple[str, str]:
    """The words on either side of a one-run gap: where in the sentence the value sits."""
    before = fact.content[gaps[0] - 1] if gaps[0] > 0 else ""
    after = fact.content[gaps[-1] + 1] if gaps[-1] + 1 < len(fact.content) else ""
    return before, after


def _neighbours(words: list[str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for i, word in enumerate(words):
        near = found.setdefault(word, set())
        near.update(words[max(i - 1, 0) : i] + words[i + 1 : i + 2])
    return found


def _moved(new: _Fact, old: _Fact) -> bool:
    """Whether a shared word sits beside none of its old neighbours ("the dim room" / "the
    dim people"), counting only the words both facts have (a word dropped is not a move)."""
    if new.passive != old.passive or new.relative or old.relative:
        return False  # voice and relative clauses move words and keep the meaning
    shared = set(new.content) & set(old.content)
    new_near = _neighbours([w for w in new.content if w in shared])
    old_near = _neighbours([w for w in old.content if w in shared])
    return any(near and old_near[w] and not near & old_near[w] for w, near in new_near.items())


def _copula_swap(new: str, old: str) -> bool:
    """Whether ``new`` is ``old`` with the two sides of "is"/"are" swapped ("X is Y" /
    "Y is X"): the same statement, unlike "X chases Y" / "Y chases X"."""
    new_sides, old_sides = _COPULA_RE.split(new, 1), _COPULA_RE.split(old, 1)
    if len(new_sides) != 2 or len(old_sides) != 2:
        return False
    sides = [frozenset(_features(side.strip()).content) for side in (*new_sides, *old_sides)]
    return sides[0] == sides[3] and sides[1] == sides[2] and bool(sides[0]) and bool(sides[1])


def _phrase_size(fact: _Fact, gaps: list[int]) -> int:
    """A swapped phrase's size in words, a run of names counting as one."""
    size = 0
    for i, pos in enumerate(gaps):
        word = fact.content[pos]
        if word in fact.names and i > 0 and fact.content[gaps[i - 1]] in fact.names:
            continue
        size += 1
    return size


def _rules(new: _Fact, old: _Fact) -> Verdict:
    change = _state_change(new, old)
    if change:
        return Verdict(Relation.CONFLICT, change)
    gaps = _uncovered(new, old)
    numbers_kept = new.numbers <= old.numbers
    # A new preposition of place says something new ("on the mat" / "under the mat"), unless
    # the old fact has none and it only joins a name both have ("speaks fluent Spanish" / "is
    # fluent in Spanish").
    new_places = new.places - old.places
    places_kept = not new_places or (not old.places and new_places <= new.before_names)
    if not gaps and numbers_kept and places_kept:
        return Verdict(Relation.DUPLICATE, "says nothing new")
    swap = _value_swap(new, old, gaps)
    if swap:
        return Verdict(Relation.CONFLICT, swap)
    return Verdict(Relation.DISTINCT)


def judge(new: str, old: str, similarity: float) -> Verdict:
    """The relation of fact ``new`` to the stored fact ``old`` (cosine ``similarity``).

    ``similarity`` only chose the pair; the rules read the words. A pair of facts with no
    content words at all falls back on similarity (above :attr:`Thresholds.same`: the same).
    """
    new_fact, old_fact = _features(new), _features(old)
    if not new_fact.content and not new_fact.numbers:
        if similarity > THRESHOLDS.same:
            return Verdict(Relation.DUPLICATE, "says the same")
        return Verdict(Relation.DISTINCT)
    verdict = _rules(new_fact, old_fact)
    if verdict.relation is Relation.DUPLICATE:
        if _order_differs(new_fact, old_fact) and not _copula_swap(new, old):
            return Verdict(Relation.DISTINCT, "same words, other roles")
        if _moved(new_fact, old_fact) and not _copula_swap(new, old):
            return Verdict(Relation.DISTINCT, "a word describes something else")
    return verdict


def specificity(text: str) -> int:
    """How much a fact says: its content words and numbers (the more, the more specific).

    >>> specificity("User likes tea") < specificity("User likes green tea in the morning")
    True
    """
    fact = _features(text)
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
        if score == similarity and _tells_the_past(old):
            score = None  # "studied history": a past event no change of state retires
        sure.append(score)
    if not fact.changes:
        return [
            score is not None and score > similarity
            for score, (_, similarity) in zip(sure, olds, strict=True)
        ]
    return _one_change(fact, sure, olds)


# Irregular simple pasts of common verbs (English grammar; regular ones end in -ed).
_PAST_FORMS = frozenset(
    "was were had did went came saw took gave got made met left lost sold bought built taught "
    "thought wrote ran grew spent won began knew found kept told".split()
)


def _tells_the_past(text: str) -> bool:
    """Whether fact ``text`` tells of something done ("User studied history", "User met Ana
    in 2019") rather than a state that holds now: its subject's verb is in the simple past."""
    words = re.findall(r"[A-Za-z']+", text)
    if len(words) < 2 or words[0].lower() not in ("user", "user's"):
        return False
    verb = words[1].lower()
    return verb in _PAST_FORMS or (verb.endswith("ed") and len(verb) > 4)


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


def _aboutness(new: _Fact, old: _Fact, similarity: float) -> float | None:
    """How surely the conflict pair is one thing changed (``None``: not sure at all). Above
    ``similarity`` means the words say so; equal means only the embedding does."""
    new_words, old_words = set(new.content) - new.changes, set(old.content)
    shared = sum(any(_related(word, other) for other in old_words) for word in new_words)
    if new.changes and not new.changes - _WEAK_CHANGES:
        # Only "now" / "again" mark the change: enough in the same sentence with a new value
        # (half the words of each shared), too little to retire a fact about something else.
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
    if (new.negations > 0) != (old.negations > 0):
        return similarity + 0.1
    if any(_OPPOSITE[value] & old.values for value in new.values - old.values):
        return similarity + 0.1
    return None


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
    fact: _Fact, sure: list[float | None], olds: Sequence[tuple[str, float]]
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
    "borderline",
    "is_candidate",
    "judge",
    "needs_reconciling",
    "replaces",
    "specificity",
]
