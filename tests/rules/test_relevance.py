"""Calibrated relevance: a cut-off that means something, and a ranking that `limit` does not
change."""

from __future__ import annotations

import pytest

from memorybank import MemoryBank, ValidationError
from memorybank.rules.ranking import RECALL_MIN_RELEVANCE

FACTS = [
    ("User's sister Maria works as a nurse in Porto", "relationship"),
    ("User prefers TypeScript over JavaScript", "preference"),
    ("User is allergic to peanuts", "identity"),
    ("User runs the billing service migration to FastAPI", "project"),
]


def _facts(bank: MemoryBank, user: str = "alice") -> None:
    for text, category in FACTS:
        assert bank.save(user, text, category).success


def test_a_cut_off_keeps_what_answers_and_drops_what_does_not(bank: MemoryBank) -> None:
    _facts(bank)
    cut = RECALL_MIN_RELEVANCE
    for query, expected in [
        ("what does my sister do for a living?", "User's sister Maria"),
        ("FastAPI", "User runs the billing"),
        ("food allergy", "User is allergic"),
    ]:
        hits = bank.search("alice", query, min_relevance=cut)
        assert [h.memory.content[: len(expected)] for h in hits] == [expected]
    for unrelated in ("stock market crash 2008", "quantum physics", "asdkjh qwe zzv"):
        assert bank.search("alice", unrelated, min_relevance=cut) == []
        # Without a cut-off every memory is still a hit, each with a low relevance.
        hits = bank.search("alice", unrelated)
        assert len(hits) == len(FACTS) and max(h.relevance for h in hits) < cut


def test_one_memory_and_an_unrelated_query_is_not_relevant(bank: MemoryBank) -> None:
    bank.save("bob", "User likes hiking in the Alps", "preference")
    [hit] = bank.search("bob", "stock market crash 2008")
    assert hit.relevance < 0.1  # per-query min-max used to make this 1.0


def test_min_relevance_is_checked(bank: MemoryBank) -> None:
    for bad in (-0.1, 1.5):
        with pytest.raises(ValidationError, match="min_relevance"):
            bank.search("alice", "anything", min_relevance=bad)


def test_the_ranking_does_not_depend_on_limit(bank: MemoryBank) -> None:
    topics = ["tea", "hiking", "jazz", "chess", "sailing", "pottery", "Rust", "cycling"]
    items = [
        {"content": f"User mentioned {topic} on day {day} while talking about week {day % 7}"}
        for day in range(20)
        for topic in topics
    ]
    bank.save_many("carol", items, on_conflict="keep")  # numbered alike, all kept
    for query in ("which music does the user like?", "sailing week 3", "day 12", "board games"):
        top50 = [h.memory.id for h in bank.search("carol", query, limit=50)]
        assert [h.memory.id for h in bank.search("carol", query, limit=5)] == top50[:5]
        top160 = [h.memory.id for h in bank.search("carol", query, limit=160)]
        assert top160[:50] == top50
        assert len(set(top160)) == len(top160) == 160
