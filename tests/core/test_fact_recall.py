"""Issue 25: the facts a user saved reach the model when the user asks, in the user's own
voice, among many facts that do not answer; and facts that both answer are both found.

The facts here are this test's own (not a benchmark's): a user with thirty facts about
everything else, then the one that answers."""

from __future__ import annotations

import json

from memorybank import Caller, MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.tools import call, profile

ELSEWHERE = [
    "User plays the cello in a community orchestra",
    "User's favourite film is Spirited Away",
    "User is saving up for a trip to Patagonia",
    "User prefers emails to phone calls",
    "User's brother Tomas is a firefighter",
    "User grows chillies on the balcony",
    "User runs five kilometres before work",
    "User is allergic to cats",
    "User reads detective novels on the train",
    "User's team ships a release every second Tuesday",
    "User likes their coffee black",
    "User is learning Portuguese with an app",
    "User's daughter Ines starts school in September",
    "User volunteers at an animal shelter on Saturdays",
    "User prefers dark mode in every editor",
    "User's car is a blue hatchback",
    "User supports a basketball team from Chicago",
    "User keeps bees with a neighbour",
    "User prefers aisle seats on long flights",
    "User's manager is called Priya",
    "User is afraid of deep water",
    "User collects vinyl records from the seventies",
    "User writes code mostly in Go",
    "User's best friend lives in Toronto",
    "User meditates for ten minutes every morning",
    "User dislikes meetings before ten",
    "User bakes bread on Sunday mornings",
    "User is colour blind",
    "User's partner works as a nurse",
    "User plans to run a marathon next year",
]


def _remember(bank: MemoryBank, caller: Caller, fact: str) -> None:
    answer = call(bank, profile("default"), "remember", json.dumps({"fact": fact}), caller)
    assert answer["success"], answer


def test_a_question_in_the_users_voice_finds_the_fact_that_answers(bank: MemoryBank) -> None:
    """What the user sees: the fact that answers is among the first two hits (beside the one
    about where a friend lives, which is a near call that int8 kernels order differently on
    different CPUs), ranked well above every fact that does not answer, and in the block the
    model reads."""
    ana = Caller(user_id="ana")
    for fact in ELSEWHERE:
        bank.save("ana", fact)
    home = "User lives in Rotterdam near the harbour"
    _remember(bank, ana, home)
    for question in ("Where do I live?", "where do i live these days", "Which city am I in?"):
        hits = bank.search("ana", question, limit=10)
        first_two = {h.memory.content: h.score for h in hits[:2]}
        assert home in first_two, question
        # At least twice the best fact about anything else in the evidence that orders them
        # (today fifty times and more). Not in the relevance the judge's read lifts: its read
        # of a fact about something else varies by CPU (0.83 on one AMD EPYC for "User is
        # saving up for a trip to Patagonia", where another CPU read it as unrelated).
        assert first_two[home] > 2 * hits[2].score, question
        recalled = call(bank, profile("default"), "recall", json.dumps({"query": question}), ana)
        assert any("Rotterdam" in f["fact"] for f in recalled["facts"][:2]), question
        assert "Rotterdam" in auto_recall(bank, ana, question, 500)


def test_facts_that_both_answer_both_score_high(bank: MemoryBank) -> None:
    """Relevance is absolute: the second of two facts that answer is not scaled down to
    nothing because the first is a little closer (with two facts stored, or thirty)."""
    for fact in ("User drinks oolong tea", "User drinks jasmine tea"):
        bank.save("bo", fact, "preference", on_conflict="keep")
    both = bank.search("bo", "what tea does the user drink", limit=2)
    assert min(h.relevance for h in both) > 0.3
    for fact in ELSEWHERE:
        bank.save("bo", fact)
    crowded = bank.search("bo", "what tea does the user drink", limit=3)
    assert {h.memory.content for h in crowded[:2]} == {
        "User drinks oolong tea",
        "User drinks jasmine tea",
    }
    # The third (black coffee: another drink) is read as bearing on it, less than both teas.
    assert crowded[1].relevance > 0.3 and crowded[2].relevance < crowded[1].relevance
