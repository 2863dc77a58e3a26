"""Generated facts about people for training the judge: slots (where someone lives, works,
what they eat, drive, own, do on weekends …), each with several wordings, many values, the
questions a user asks about it, and whether a person holds one value at a time (a city, an
employer, an age) or many (hobbies, pets, allergies).

Pairs come from combining them: two wordings of one value are the same fact; another value
of a one-value slot, a denial, or an ended habit is an update; the same slot of *another
person* ("User's brother lives in …"), another slot, another value of a many-value slot, or
the same value under another qualifier ("on Mondays" / "on Saturdays") are distinct facts.
The vocabulary is written here in general English about everyday lives around the world;
none of it is taken from an evaluation set.

>>> pairs = slot_pairs(seed=3, count=200)
>>> sorted({p.label for p in pairs})
['distinct', 'duplicate', 'update']
>>> slot_pairs(seed=3, count=200) == pairs
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from memorybank_bench.judge_vocab import (
    COMPANIES,
    EQUIVALENTS,
    NAMES,
    PLACES,
    RELATIVES,
    SLOTS,
    Slot,
)


@dataclass(frozen=True)
class TrainingPair:
    """One training example: save ``a``, then ``b``; ``label`` is what ``b`` is to ``a``
    (``duplicate``, ``update``, ``distinct``), or for a relevance example (``task`` is
    ``"relevance"``) ``a`` is a question and ``label`` ``relevant`` / ``irrelevant``."""

    a: str
    b: str
    label: str
    source: str
    task: str = "pair"


@dataclass
class _Subject:
    """Who a fact is about: the user, or a relative (maybe named), as the fact opens."""

    name: str  # "User", "User's brother Marco", "Marco"
    possessive: str  # "User's", "User's brother Marco's"
    pronoun: str = "their"
    me: bool = True
    aliases: list[str] = field(default_factory=list)


def _user() -> _Subject:
    return _Subject("User", "User's")


def _other(rng: random.Random) -> _Subject:
    relative = rng.choice(RELATIVES)
    if rng.random() < 0.55:
        name = rng.choice(NAMES)
        return _Subject(f"User's {relative} {name}", f"User's {relative} {name}'s", me=False)
    return _Subject(f"User's {relative}", f"User's {relative}'s", me=False)


def _fill(template: str, subject: _Subject, value: str, qualifier: str = "") -> str:
    text = template.format(s=subject.name, p=subject.possessive, v=value, q=qualifier)
    text = " ".join(text.split())
    return text[0].upper() + text[1:]


def _values(rng: random.Random, slot: Slot, k: int) -> list[str]:
    pool = slot.pool()
    if len(pool) >= k:
        return rng.sample(pool, k)
    return [slot.value(rng) for _ in range(k)]


def _value(rng: random.Random, slot: Slot) -> str:
    return slot.value(rng)


def _two_wordings(rng: random.Random, slot: Slot) -> tuple[str, str]:
    if len(slot.wordings) < 2:
        return slot.wordings[0], slot.wordings[0]
    first, second = rng.sample(slot.wordings, 2)
    return first, second


def _duplicate(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    value = _value(rng, slot)
    qualifier = rng.choice(slot.qualifiers) if slot.qualifiers else ""
    first, second = _two_wordings(rng, slot)
    roll = rng.random()
    if roll < 0.12:  # said again word for word, a change as much as a state
        first = second = rng.choice(slot.wordings + slot.changes + slot.denials)
    elif roll < 0.25 and slot.changes:  # "moved to X", then "lives in X": nothing new
        first, second = rng.choice(slot.changes), rng.choice(slot.wordings)
        if rng.random() < 0.5:
            first, second = second, first
    a = _fill(first, subject, value, qualifier)
    b = _fill(second, subject, value, qualifier)
    if rng.random() < 0.25 and slot.details:
        a = f"{a} {rng.choice(slot.details)}"  # b says less than a: still nothing new
    return TrainingPair(a, b, "duplicate", f"slot:{slot.name}:duplicate")


def _changed(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    old, new = _values(rng, slot, 2)
    qualifier = rng.choice(slot.qualifiers) if slot.qualifiers else ""
    first, second = _two_wordings(rng, slot) if rng.random() < 0.6 else (slot.wordings[0],) * 2
    a = _fill(first, subject, old, qualifier)
    if slot.details and rng.random() < 0.3:
        a = f"{a} {rng.choice(slot.details)}"  # the old fact said more; the value changed
    marked = slot.changes if rng.random() < 0.6 and slot.changes else [second]
    b = _fill(rng.choice(marked), subject, new, qualifier)
    if slot.details and rng.random() < 0.3:
        b = f"{b} {rng.choice(slot.details)}"  # a new value said with more around it
    return TrainingPair(a, b, "update", f"slot:{slot.name}:update")


def _denied(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    value = _value(rng, slot)
    a = _fill(rng.choice(slot.wordings), subject, value)
    b = _fill(rng.choice(slot.denials), subject, value)
    if rng.random() < 0.3:
        a, b = b, a  # a denial taken back is a change too ("started … again")
        b = _fill(rng.choice(slot.resumes or slot.wordings), subject, value)
    return TrainingPair(a, b, "update", f"slot:{slot.name}:denial")


def _other_person(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    other = _other(rng)
    while other.name == subject.name:
        other = _other(rng)
    old, new = _values(rng, slot, 2)
    if rng.random() < 0.2:
        new = old  # the same city for two people is two facts
    first, second = _two_wordings(rng, slot)
    pair = [_fill(first, other, old), _fill(rng.choice([second, *slot.changes]), subject, new)]
    if rng.random() < 0.4:
        pair.reverse()
    return TrainingPair(pair[0], pair[1], "distinct", f"slot:{slot.name}:other-person")


def _many(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    one, two = _values(rng, slot, 2)
    first, second = _two_wordings(rng, slot)
    a, b = _fill(first, subject, one), _fill(second, subject, two)
    return TrainingPair(a, b, "distinct", f"slot:{slot.name}:another-value")


def _qualified(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    one, two = rng.sample(slot.qualifiers, 2)
    v1, v2 = _values(rng, slot, 2)
    a = _fill(rng.choice(slot.wordings), subject, v1, one)
    b = _fill(rng.choice(slot.wordings), subject, v2, two)
    return TrainingPair(a, b, "distinct", f"slot:{slot.name}:another-qualifier")


def _other_slot(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    other = rng.choice([s for s in SLOTS if s.name != slot.name])
    a = _fill(rng.choice(slot.wordings), subject, _value(rng, slot))
    b = _fill(rng.choice(other.wordings + other.changes), subject, _value(rng, other))
    return TrainingPair(a, b, "distinct", f"slot:{slot.name}:another-slot")


def _more_said(rng: random.Random, slot: Slot, subject: _Subject) -> TrainingPair:
    value = _value(rng, slot)
    a = _fill(rng.choice(slot.wordings), subject, value)
    b = f"{_fill(rng.choice(slot.wordings), subject, value)} {rng.choice(slot.details)}"
    return TrainingPair(a, b, "distinct", f"slot:{slot.name}:adds-detail")


def _equivalent(rng: random.Random) -> TrainingPair:
    """Two wordings of one fact that share few words (one may be a denial: "is vegan" /
    "eats no animal products"), or one of them against another fact of the same topic."""
    group = rng.choice(EQUIVALENTS)
    subject = _user() if rng.random() < 0.8 else _other(rng)
    if rng.random() < 0.7:
        a, b = rng.sample(group, 2)
        return TrainingPair(_fill(a, subject, ""), _fill(b, subject, ""), "duplicate", "equivalent")
    other = rng.choice([g for g in EQUIVALENTS if g is not group])
    a, b = rng.choice(group), rng.choice(other)
    return TrainingPair(_fill(a, subject, ""), _fill(b, subject, ""), "distinct", "equivalent")


def _pair(rng: random.Random, slot: Slot) -> TrainingPair:
    subject = _user() if rng.random() < 0.8 else _other(rng)
    kinds = [(_duplicate, 3.0), (_other_person, 1.5), (_other_slot, 1.0)]
    if slot.single:
        kinds.append((_changed, 4.0))
    else:
        kinds.append((_many, 2.0))
    if slot.denials:
        kinds.append((_denied, 1.2))
    if len(slot.qualifiers) >= 2:
        kinds.append((_qualified, 1.2))
    if slot.details:
        kinds.append((_more_said, 0.6))
    make = rng.choices([k for k, _ in kinds], weights=[w for _, w in kinds])[0]
    return make(rng, slot, subject)


def slot_pairs(seed: int, count: int) -> list[TrainingPair]:
    """``count`` fact pairs drawn from the slots (deterministic for a ``seed``)."""
    rng = random.Random(seed)
    return [
        _equivalent(rng) if rng.random() < 0.12 else _pair(rng, rng.choice(SLOTS))
        for _ in range(count)
    ]


__all__ = ["COMPANIES", "PLACES", "TrainingPair", "slot_pairs"]
