"""Issues 18 and 26: a saved fact supersedes the stored facts it surely replaces (kept in
history, restorable) and reports those it only may update or contradict; ``on_conflict``
"keep" keeps both, "supersede" retires every conflict (bank, tools and REST)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.core.prompt import system_prompt
from memorybank.errors import PermissionDenied
from memorybank.model import Caller, EventKind
from memorybank.services.conversations import remember_conversation, render_remembered
from memorybank.tools import call, profile
from server_helpers import LOOPBACK_PEER, make_world


def test_a_new_phone_number_is_reported_as_a_change_and_kept(memories: Any) -> None:
    # Without an LLM nothing is retired unasked: the calling model settles it (``supersede``,
    # or remember with the id), and the block shows the newer first (tests/core/test_newest_wins).
    old = memories.save("alice", "User's phone number is 555-0101", "identity")
    new = memories.save("alice", "User's phone number is 555-0199", "identity")
    assert new.success and not new.duplicate and new.replaced == []
    assert [(c.memory_id, c.content) for c in new.conflicts] == [
        (old.memory_id, "User's phone number is 555-0101")
    ]
    assert new.conflicts[0].why and new.conflicts[0].similarity is not None
    assert {m.id for m in memories.list("alice", superseded=False)} == {
        old.memory_id,
        new.memory_id,
    }


def test_keep_stores_both_and_names_the_conflict(memories: Any) -> None:
    old = memories.save("alice", "User's phone number is 555-0101", "identity")
    new = memories.save("alice", "User's phone number is 555-0199", "identity", on_conflict="keep")
    assert [c.memory_id for c in new.conflicts] == [old.memory_id] and new.replaced == []
    assert memories.count("alice") == 2


def test_restore_brings_a_replaced_fact_back(memories: Any) -> None:
    old = memories.save("alice", "User lives in Oslo", "identity")
    new = memories.save("alice", "User moved to Bergen", "identity", on_conflict="supersede")
    assert [c.memory_id for c in new.replaced] == [old.memory_id]
    back = memories.restore(old.memory_id, "alice")
    assert back.superseded_by is None and back.content == "User lives in Oslo"
    assert {m.id for m in memories.list("alice", superseded=False)} == {
        old.memory_id,
        new.memory_id,
    }
    assert [e.kind for e in memories.history(old.memory_id, "alice")] == [
        EventKind.ADD,
        EventKind.SUPERSEDE,
        EventKind.UPDATE,
    ]


def test_a_change_is_a_conflict_and_never_retired_unasked(bank: MemoryBank) -> None:
    for n, (first, second) in enumerate(
        [
            ("User's car is a Honda", "User's car is a Tesla"),
            ("User works at Acme", "User now works at Globex"),
            (
                "User is a teacher at Lincoln High",
                "User left teaching and now works as a UX researcher",
            ),
        ]
    ):
        old = bank.save(f"u{n}", first, "identity")
        new = bank.save(f"u{n}", second, "identity")
        assert new.replaced == [] and old.memory_id in [c.memory_id for c in new.conflicts]
        assert bank.count(f"u{n}", superseded=False) == 2


def test_a_change_names_one_fact_and_leaves_the_others(bank: MemoryBank) -> None:
    teacher = bank.save("alice", "User is a teacher at Lincoln High", "identity")
    cat = bank.save("alice", "User has a cat named Miso", "relationship")
    alex = bank.save("alice", "User's partner is named Alex", "relationship")
    left = bank.save("alice", "User left teaching and now works as a UX researcher", "identity")
    named = [c.memory_id for c in left.conflicts]
    assert teacher.memory_id in named
    assert cat.memory_id not in named and alex.memory_id not in named
    assert len(bank.list("alice", superseded=False)) == 4


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # Two degrees, which the model reads as one degree changed (p 0.99): reported only.
        ("User graduated from MIT in 2015", "User graduated from Stanford Business School in 2019"),
        # A career change the model reads as changing what the user studied too.
        (
            "User studied history at university",
            "User left teaching and now works as a UX researcher",
        ),
    ],
)
def test_the_models_misreadings_retire_nothing(bank: MemoryBank, first: str, second: str) -> None:
    bank.save("alice", first, "context")
    assert bank.save("alice", second, "context").replaced == []


def test_conflicts_and_duplicates_follow_the_judge(bank: MemoryBank) -> None:
    tea = bank.save("alice", "User drinks green tea", "preference")
    other = bank.save("alice", "User drinks black tea", "preference")
    assert [c.memory_id for c in other.conflicts] == [tea.memory_id]
    assert other.conflicts[0].why.startswith("may update it (p=")
    again = bank.save("alice", "User drinks black tea", "preference")
    assert not again.success and again.existing_id == other.memory_id
    # Another user's facts are never candidates.
    assert bank.save("bob", "User drinks white tea", "preference").conflicts == []


def test_supersede_retires_the_old_fact_with_history(memories: Any) -> None:
    old = memories.save("alice", "User lives near the old harbour", "identity")
    assert old.memory_id is not None
    new = memories.save(
        "alice", "User moved to a flat by the new harbour", "identity", on_conflict="supersede"
    )
    assert new.memory_id is not None
    assert [c.memory_id for c in new.replaced] == [old.memory_id] and new.conflicts == []
    assert memories.get(old.memory_id, "alice").superseded_by == new.memory_id
    found = [h.memory.id for h in memories.search("alice", "harbour")]
    assert found == [new.memory_id]
    everything = memories.search("alice", "harbour", include_superseded=True)
    assert {h.memory.id for h in everything} == {old.memory_id, new.memory_id}
    assert [e.kind for e in memories.history(old.memory_id, "alice")] == [
        EventKind.ADD,
        EventKind.SUPERSEDE,
    ]
    assert [e.kind for e in memories.history(new.memory_id, "alice")] == [EventKind.ADD]


def test_a_superseded_fact_leaves_the_prompt(bank: MemoryBank) -> None:
    bank.save("alice", "User lives near the old harbour", "identity")
    bank.save(
        "alice", "User moved to a flat by the new harbour", "identity", on_conflict="supersede"
    )
    prompt = system_prompt(bank, Caller(user_id="alice"), "Guide.")
    assert "new harbour" in prompt and "old harbour" not in prompt


def test_supersede_needs_the_right_to_change(bank: MemoryBank) -> None:
    bank.save("alice", "Project ships on Friday", "context", project_id="p1")
    with pytest.raises(PermissionDenied):
        bank.save(
            "alice",
            "Project ships on Monday",
            "context",
            project_id="p1",
            role="member",
            on_conflict="supersede",
        )
    assert bank.count("alice", project_id="p1") == 1
    kept = bank.save("alice", "Project ships on Monday", "context", project_id="p1", role="member")
    assert kept.success and len(kept.conflicts) == 1


def test_every_saving_tool_profile_answers_the_conflicts(bank: MemoryBank) -> None:
    calls = {
        "default": ("remember", {"fact": "User's favourite colour is blue"}, "id"),
        "blah": (
            "saveMemory",
            {
                "content": "User's favourite colour is yellow",
                "category": "context",
                "reasoning": "Said it in passing today",
            },
            "memoryId",
        ),
        "oxydra": ("memory_save", {"content": "User's favourite colour is black"}, "note_id"),
        "pagespace": (
            "save_memory",
            {"scope": "user", "fact": "User's favourite colour is blue"},
            "factId",
        ),
    }
    for name, (tool, args, id_key) in calls.items():
        # Each profile's user starts from the same fact, which the new one may contradict.
        caller = Caller(user_id=f"alice-{name}", thread_id="t1")
        old = bank.save(caller.user_id, "User's favourite colour is red", "context")
        answer = call(bank, profile(name), tool, args, caller)
        assert answer.get("success") is not False, (name, answer)
        # A sure change retires the old fact ("replaced"), a likely one names it ("conflicts").
        named = answer.get("conflicts", []) + answer.get("replaced", [])
        assert old.memory_id in [c[id_key] for c in named], (name, answer)
        assert "fact" in named[0] and all("why" in c for c in answer.get("conflicts", [])), name
        assert "conflict" in profile(name).tool(tool).description.lower() or "contradict" in (
            profile(name).tool(tool).description  # type: ignore[union-attr]
        )
    # Supermemory names only memories of the caller's own pool (its tagged memories).
    add, sam = profile("supermemory"), Caller(user_id="sam", thread_id="t2")
    first = call(bank, add, "add_memory", {"content": "User's favourite colour is pink"}, sam)
    second = call(bank, add, "add_memory", {"content": "User's favourite colour is brown"}, sam)
    named = second.get("conflicts", []) + second.get("replaced", [])
    assert [c["memoryId"] for c in named] == [first["memoryId"]], (
        first,
        second,
    )
    # Without a conflict the answers keep their seed's shape.
    quiet = call(bank, profile("default"), "remember", {"fact": "User owns a grey bicycle"}, caller)
    assert "conflicts" not in quiet


def test_rest_save_answers_the_conflicts(bank: MemoryBank) -> None:
    world = make_world(bank)
    with TestClient(world.app, client=LOOPBACK_PEER) as client:
        h = world.auth("owner")
        first = client.post(
            "/api/memory/user", json={"fact": "User sails a wooden boat"}, headers=h
        )
        assert first.status_code == 201 and first.json()["conflicts"] == []
        second = client.post(
            "/api/memory/user", json={"fact": "User sails a plastic boat"}, headers=h
        )
        assert second.status_code == 201
        [conflict] = second.json()["conflicts"]
        assert conflict["memory_id"] == first.json()["memory"]["id"]
        assert conflict["content"] == "User sails a wooden boat" and conflict["why"]
        drive = "/api/memory/drive/apollo"
        client.post(drive, json={"fact": "Team ships the app on Friday"}, headers=h)
        later = client.post(drive, json={"fact": "Team ships the app on Monday"}, headers=h)
        assert later.status_code == 201
        assert [c["content"] for c in later.json()["conflicts"]] == ["Team ships the app on Friday"]


def test_hyperspark_remember_names_what_a_new_fact_may_contradict(bank: MemoryBank) -> None:
    caller = Caller(user_id="ana", thread_id="thread-1")
    old = bank.save("ana", "User likes to work in the mornings", "preference")
    said = [{"role": "user", "content": "I prefer to work at night"}]
    result = remember_conversation(bank, caller, said)
    assert [c.memory_id for c in result.conflicts] == [old.memory_id]
    text = render_remembered(result)
    assert text.endswith(f"May conflict with {old.memory_id}: User likes to work in the mornings")
