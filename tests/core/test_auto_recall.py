"""Auto-recall: the memory block for the message at hand, through the library, the tool
profiles' system prompt, REST (``POST /api/auto-recall``) and the MCP prompt."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from memorybank import MemoryBank, ValidationError
from memorybank.core.prompt import _standing_out, auto_recall
from memorybank.mcp import RECALL_PROMPT, build_server, recall_prompt
from memorybank.model import Caller, Memory, SearchHit
from memorybank.rules.ranking import RECALL_MIN_RELEVANCE
from memorybank.rules.tokens import count_tokens
from memorybank.tools import system_prompt
from server_helpers import LOOPBACK_PEER, make_world

ALWAYS = "User's name is Kim"
MARATHON = "User is training for the Berlin marathon in September"
ALLERGY = "User is allergic to peanuts and carries an epinephrine pen"
WORK = "User runs the billing service migration to FastAPI"


def _kim(bank: MemoryBank, user: str = "kim") -> Caller:
    bank.save(user, ALWAYS, "identity")
    bank.save(user, MARATHON, "context")
    bank.save(user, ALLERGY, "context")
    bank.save(user, WORK, "project")
    return Caller(user_id=user)


def test_relevant_memories_join_the_always_loaded_ones(bank: MemoryBank) -> None:
    kim = _kim(bank)
    block = auto_recall(bank, kim, "Any tips for my marathon training this week?")
    assert ALWAYS in block and MARATHON in block
    assert "## Relevant To This Message" in block
    assert ALLERGY not in block and WORK not in block
    food = auto_recall(bank, kim, "peanut allergy: what should I avoid?")
    assert ALLERGY in food and MARATHON not in food


def test_the_relevant_fact_joins_the_always_loaded_ones(bank: MemoryBank) -> None:
    kim = _kim(bank)
    block = auto_recall(bank, kim, "Any tips for my marathon training this week?")
    assert ALWAYS in block and MARATHON in block
    assert block.index(MARATHON) < block.index("## About This User")
    food = auto_recall(bank, kim, "peanut allergy: what should I avoid?")
    assert ALLERGY in food


def test_nothing_extra_when_nothing_is_relevant(bank: MemoryBank) -> None:
    kim = _kim(bank)
    block = auto_recall(bank, kim, "What is the capital of Peru?")
    assert ALWAYS in block
    assert "Relevant To This Message" not in block
    assert MARATHON not in block and ALLERGY not in block and WORK not in block
    # A user with nothing always-loaded gets nothing at all.
    bank.save("lee", "User is learning the cello", "context")
    assert auto_recall(bank, Caller(user_id="lee"), "What is the capital of Peru?") == ""
    assert "cello" in auto_recall(bank, Caller(user_id="lee"), "how is my cello practice going?")


def test_never_over_budget_and_off_when_memory_is(bank: MemoryBank) -> None:
    kim = _kim(bank)
    for budget in (0, 20, 45, 60, 120, 500):
        block = auto_recall(bank, kim, "marathon training and peanut allergy", budget)
        assert count_tokens(block) <= budget
    assert auto_recall(bank, Caller(user_id="kim", memory_enabled=False), "marathon") == ""
    with pytest.raises(ValidationError, match="budget_tokens"):
        auto_recall(bank, kim, "marathon", -1)


def test_other_users_memories_are_never_recalled(bank: MemoryBank) -> None:
    _kim(bank)
    bank.save("zoe", "User's name is Zoe", "identity")
    block = auto_recall(bank, Caller(user_id="zoe"), "tips for my marathon training?")
    assert "Zoe" in block and MARATHON not in block


def test_system_prompt_with_message(bank: MemoryBank) -> None:
    _kim(bank)
    caller = Caller(user_id="kim")
    prompt = system_prompt(bank, caller, "default", 500, message="peanut allergy: what to avoid?")
    assert prompt.startswith("You have a long-term memory")
    assert ALLERGY in prompt and MARATHON not in prompt
    assert ALLERGY not in system_prompt(bank, caller, "default", 500)


def test_rest_auto_recall(bank: MemoryBank) -> None:
    world = make_world(bank)
    _kim(bank, "member")
    h = world.auth("member")
    with TestClient(world.app, client=LOOPBACK_PEER) as client:
        r = client.post("/api/auto-recall", json={"message": "marathon training tips?"}, headers=h)
        assert r.status_code == 200, r.text
        body = r.json()
        assert MARATHON in body["prompt"] and body["tokens"] == count_tokens(body["prompt"])
        none = client.post(
            "/api/auto-recall", json={"message": "marathon", "min_relevance": 1.0}, headers=h
        ).json()
        assert MARATHON not in none["prompt"] and ALWAYS in none["prompt"]
        guided = client.post(
            "/api/auto-recall", json={"message": "marathon", "profile": "default"}, headers=h
        ).json()
        assert guided["prompt"].startswith("You have a long-term memory")
        assert MARATHON in guided["prompt"]
        other = client.post(
            "/api/auto-recall", json={"message": "marathon training"}, headers=world.auth("owner")
        ).json()
        assert MARATHON not in other["prompt"]
        for bad in ({"message": "x", "budget": 10}, {"message": "x", "min_relevance": 2}, {}):
            assert client.post("/api/auto-recall", json=bad, headers=h).status_code == 422
        assert client.post("/api/auto-recall", json={"message": "x"}).status_code == 401


def test_mcp_prompt(bank: MemoryBank) -> None:
    _kim(bank)
    caller = Caller(user_id="kim")
    result = recall_prompt(
        bank, caller, "recall_context", {"message": "Is this dish safe for me? It has peanuts"}
    )
    text = result.messages[0].content.text  # type: ignore[union-attr]
    assert ALLERGY in text and MARATHON not in text
    small = recall_prompt(bank, caller, "recall_context", {"message": "x", "budget_tokens": "30"})
    assert count_tokens(small.messages[0].content.text) <= 30  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="no prompt"):
        recall_prompt(bank, caller, "other", {"message": "x"})
    with pytest.raises(ValidationError, match="message"):
        recall_prompt(bank, caller, "recall_context", {})
    with pytest.raises(ValidationError, match="budget_tokens"):
        recall_prompt(bank, caller, "recall_context", {"message": "x", "budget_tokens": "lots"})
    assert [a.name for a in RECALL_PROMPT.arguments or []] == ["message", "budget_tokens"]
    assert build_server(bank, "default", caller) is not None


def test_rest_search_min_relevance(bank: MemoryBank) -> None:
    world = make_world(bank)
    _kim(bank, "member")
    h = world.auth("member")
    with TestClient(world.app, client=LOOPBACK_PEER) as client:
        every = client.get("/api/search", params={"q": "quantum physics"}, headers=h).json()
        assert len(every["hits"]) == 4 and all(0 <= x["relevance"] < 0.15 for x in every["hits"])
        cut = {"q": "quantum physics", "min_relevance": 0.15}
        assert client.get("/api/search", params=cut, headers=h).json()["hits"] == []
        kept = {"q": "marathon training tips", "min_relevance": 0.15}
        hits = client.get("/api/search", params=kept, headers=h).json()["hits"]
        assert [x["memory"]["content"] for x in hits] == [MARATHON]
        bad = {"q": "x", "min_relevance": 1.5}
        assert client.get("/api/search", params=bad, headers=h).status_code == 422


def test_a_match_far_above_the_rest_answers_below_the_cut_off(bank: MemoryBank) -> None:
    background = [
        "User collects vintage postage stamps",
        "User is a volunteer at the local food bank",
        "User enjoys solving cryptic crosswords",
        "User prefers window seats on flights",
        "User listens to jazz while working",
        "User bakes sourdough bread on weekends",
        "User is afraid of heights",
        "User studied history at university",
        "User likes hiking in the mountains",
        "User keeps a journal every evening",
    ]
    for fact in background:
        bank.save("lee", fact)
    bank.save("lee", "User switched to Chrome for work")
    caller = Caller(user_id="lee")
    hits = bank.search("lee", "Which browser does User use?", limit=2)
    assert hits[0].memory.content == "User switched to Chrome for work"
    block = auto_recall(bank, caller, "Which browser do I use?")
    assert "## Relevant To This Message\n- User switched to Chrome for work" in block
    # A stricter cut-off asked for is kept.
    strict = auto_recall(bank, caller, "Which browser do I use?", min_relevance=0.95)
    assert "## Relevant To This Message" not in strict


def test_matches_under_the_cut_off_answer_only_when_they_stand_out_together() -> None:
    def hit(text: str, relevance: float) -> SearchHit:
        memory = Memory(user_id="u", content=text, category="context")
        return SearchHit(
            memory=memory, score=relevance, relevance=relevance, importance=0.5, recency=1.0
        )

    metformin = hit("User takes metformin with breakfast", 0.14)
    statin = hit("User takes atorvastatin at bedtime", 0.075)
    garden = hit("User keeps a vegetable garden", 0.008)
    # Two medicines, both under the cut-off, far above everything else: both answer.
    assert _standing_out([metformin, statin, garden], RECALL_MIN_RELEVANCE) == [metformin, statin]
    # No step in the relevances: nothing stands out.
    near = hit("User's wrist aches after rehearsals", 0.03)
    assert _standing_out([metformin, statin, near, garden], RECALL_MIN_RELEVANCE) == []
    # Too weak to answer at all, however far ahead; a stricter cut-off is the caller's.
    faint = hit("User's physio is in Leeds", 0.01)
    assert _standing_out([faint, garden], RECALL_MIN_RELEVANCE) == []
    assert _standing_out([metformin, garden], 0.5) == []
