"""The verifier behind the duplicate decision: one group of cases per rule, written for this
file (other people, values and verbs than the benchmark's pairs)."""

from __future__ import annotations

import pytest

from memorybank.rules.verdicts import (
    CANDIDATE_SIMILARITY,
    CANDIDATES,
    Relation,
    Verdict,
    _features,  # its cache counts the texts tokenised
    borderline,
    judge,
)

DUPLICATE, CONFLICT, DISTINCT = Relation.DUPLICATE, Relation.CONFLICT, Relation.DISTINCT


def relation(new: str, old: str, similarity: float = 0.9) -> Relation:
    return judge(new, old, similarity).relation


def test_interface() -> None:
    assert 0.0 < CANDIDATE_SIMILARITY < 0.95
    assert CANDIDATES >= 1
    verdict = judge("User enjoys hiking", "User enjoys hiking", 1.0)
    assert verdict == Verdict(DUPLICATE, verdict.why)
    assert verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User enjoys hiking in the Alps", "User enjoys hiking in the Alps"),
        # a part of the old fact
        ("User keeps bees and grows tomatoes", "User keeps bees"),
        ("User loves Italian food, especially risotto", "User loves Italian food"),
        # light normalisation: likes / prefers / loves, lives in / is based in, named / called
        ("User prefers Kotlin for Android apps", "User likes Kotlin"),
        ("User resides in Lisbon", "User lives in Lisbon"),
        ("User's brother is named Omar", "User's brother is called Omar"),
        # inflections
        ("User owns three bicycles", "User has three bicycles"),
        ("User plays chess every weekend", "User is playing chess every weekend"),
        # passive voice keeps the roles
        ("A mechanic is repairing the truck", "The truck is being repaired by a mechanic"),
        # "X is Y" / "Y is X"
        ("User's favourite band is Radiohead", "Radiohead is User's favourite band"),
    ],
)
def test_covered_facts_are_duplicates(old: str, new: str) -> None:
    assert relation(new, old) is DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User's locker code is 4417", "User's locker code is 4471"),
        ("User runs 10 km on Sundays", "User runs 21 km on Sundays"),
        ("User's dentist appointment is on June 9", "User's dentist appointment is on June 16"),
        ("User has two sisters", "User has three sisters"),
    ],
)
def test_different_numbers_conflict(old: str, new: str) -> None:
    verdict = judge(new, old, 0.97)
    assert verdict.relation is CONFLICT
    assert "number" in verdict.why


def test_a_number_added_is_not_a_duplicate() -> None:
    assert relation("User has 4 grandchildren", "User has grandchildren") is not DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User eats gluten", "User does not eat gluten"),
        ("User owns a car", "User doesn't own a car"),
        ("User has never been to Japan", "User has been to Japan"),
        ("A boy is climbing a tree", "Nobody is climbing a tree"),
    ],
)
def test_negation_conflicts(old: str, new: str) -> None:
    verdict = judge(new, old, 0.97)
    assert verdict.relation is CONFLICT
    assert "negat" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User teaches at Riverside High", "User no longer teaches at Riverside High"),
        ("User smokes", "User quit smoking"),
        ("User lives in Oslo", "User moved to Bergen"),
        ("User's yoga class is on Thursdays", "User cancelled the yoga class"),
        ("User plays bass in a band", "User stopped playing bass"),
        ("User is vegan", "User started eating fish again"),
        ("User uses Jira for tickets", "User switched to Linear for tickets"),
        ("User has a parrot called Kiwi", "User's parrot Kiwi died"),
    ],
)
def test_ended_or_changed_state_conflicts(old: str, new: str) -> None:
    verdict = judge(new, old, 0.8)
    assert verdict.relation is CONFLICT, verdict
    assert "state" in verdict.why or "negat" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User wants the light theme", "User wants the dark theme"),
        ("User is single", "User is married"),
        ("User's subscription is active", "User's subscription is expired"),
    ],
)
def test_opposite_values_conflict(old: str, new: str) -> None:
    verdict = judge(new, old, 0.9)
    assert verdict.relation is CONFLICT
    assert "opposite" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User's doctor is Dr. Alvarez", "User's doctor is Dr. Okafor"),
        ("User's car is a Honda Civic", "User's car is a Tesla"),
        ("User writes backend code in Java", "User writes backend code in Elixir"),
    ],
)
def test_one_value_swapped_conflicts(old: str, new: str) -> None:
    verdict = judge(new, old, 0.85)
    assert verdict.relation is CONFLICT
    assert "different value" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # another person, another verb, more detail: both can be true
        ("User's nephew Tariq studies law", "User's niece Lena plays violin in an orchestra"),
        ("User bakes bread on Sundays", "User cycles to the office on Mondays"),
        ("User likes jazz", "User likes jazz and plays saxophone in a quartet"),
        # proper nouns are not covered by other proper nouns
        ("User visited Kyoto with Hana", "User visited Kyoto with Hana and Mark"),
    ],
)
def test_other_facts_are_kept(old: str, new: str) -> None:
    assert relation(new, old) is not DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("A cat is chasing a mouse", "A mouse is chasing a cat"),
        ("A man is slicing a potato", "A man is eating potato slices"),
        ("A girl is jumping into the pool", "A girl is jumping out of the pool"),
        ("The woman is sitting on the bench", "The woman is sitting under the bench"),
        ("A van is parked in front of the bakery", "A van is parked in the bakery"),
        # an adjective moved to another noun
        ("A tall man is holding a red umbrella", "A red man is holding a tall umbrella"),
    ],
)
def test_other_roles_or_places_are_not_duplicates(old: str, new: str) -> None:
    assert relation(new, old) is not DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "A kite, which is yellow, is flying over the beach",
            "A yellow kite is flying over the beach",
        ),
        ("A nurse is helping an old man", "An old man is being helped by a nurse"),
        ("A chef is frying some onions", "One chef is frying onions"),
    ],
)
def test_voice_and_relative_clauses_keep_the_meaning(old: str, new: str) -> None:
    assert relation(new, old) is DUPLICATE


def test_a_longer_difference_is_another_fact_not_a_conflict() -> None:
    verdict = judge("User's cousin teaches maths in Leeds", "User's cousin plays golf", 0.6)
    assert verdict.relation is DISTINCT


def test_pairs_without_content_words_fall_back_on_similarity() -> None:
    assert relation("It is what it is", "It is what it is", 0.99) is DUPLICATE
    assert relation("It is what it is", "That is that", 0.6) is DISTINCT


def test_a_settler_is_asked_about_borderline_pairs_only() -> None:
    asked: list[tuple[str, str]] = []

    def settle(new: str, old: str, verdict: Verdict) -> Verdict:
        asked.append((new, old))
        return Verdict(DUPLICATE, "settled")

    assert judge("User likes tea", "User likes tea", 1.0, settle=settle).why != "settled"
    swapped = judge("User's car is a Tesla", "User's car is a Honda", 0.8, settle=settle)
    assert swapped.why == "settled"
    assert borderline(Verdict(DISTINCT), 0.9) and not borderline(Verdict(DISTINCT), 0.5)
    assert len(asked) == 1


def test_each_text_is_read_once_however_many_pairs_it_is_in() -> None:
    """Judging is cheap in work done: no settler, no model, and every text tokenised once (the
    speed per pair is a figure of ``memorybank bench integrity``, not a timed test)."""
    olds = [f"User's gate code is {n + 1} and it changed on May {n}" for n in range(1000)]
    news = [f"User's gate code is {n}" for n in range(1000)]
    _features.cache_clear()
    verdicts = [judge(new, old, 0.9) for new in news for old in olds[:2]]
    verdicts += [judge(news[0], old, 0.9) for old in olds]
    assert len(verdicts) == 3000 and all(isinstance(v, Verdict) for v in verdicts)
    assert _features.cache_info().misses == len(set(olds) | set(news))  # 2000 texts, once each
