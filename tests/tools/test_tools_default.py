"""The default profile: remember / recall / forget, the cheapest complete tool set."""

from __future__ import annotations

from typing import Any

from memorybank import MemoryBank
from memorybank.tools import Caller, call, profile, to_anthropic, to_openai
from memorybank.tools.profiles.default import RECALL_LIMIT

DEFAULT = profile("default")
CTX = Caller(user_id="uma", project_id="atlas", thread_id="t1")


def run(bank: MemoryBank, name: str, caller: Caller = CTX, **args: Any) -> Any:
    return call(bank, DEFAULT, name, args, caller)


def test_schemas() -> None:
    schemas = {t["name"]: t["input_schema"] for t in to_anthropic(DEFAULT)}
    assert schemas["remember"]["required"] == ["fact"]
    assert list(schemas["remember"]["properties"]) == ["fact", "category", "id"]
    assert schemas["remember"]["properties"]["category"]["enum"] == [
        "identity",
        "preference",
        "relationship",
        "project",
        "context",
    ]
    assert schemas["recall"]["required"] == ["query"]
    assert schemas["forget"]["required"] == ["id"]
    strict = to_openai(DEFAULT)[0]["function"]["parameters"]
    assert strict["required"] == ["fact", "category", "id"]


def test_lifecycle(bank: MemoryBank) -> None:
    saved = run(bank, "remember", fact="I use Neovim for everything", category="preference")
    assert saved == {"success": True, "id": saved["id"], "fact": "User uses Neovim for everything"}
    assert bank.get(saved["id"], "uma").category.value == "preference"

    recalled = run(bank, "recall", query="which editor")
    assert recalled["facts"][0] == {"id": saved["id"], "fact": "User uses Neovim for everything"}

    replaced = run(bank, "remember", fact="User switched to Helix", id=saved["id"])
    assert replaced == {"success": True, "id": saved["id"], "fact": "User switched to Helix"}
    memory = bank.get(saved["id"], "uma")
    assert memory.category.value == "preference"  # kept: the model did not name a category
    facts = run(bank, "recall", query="which editor")["facts"]
    assert [f["fact"] for f in facts] == ["User switched to Helix"]

    assert run(bank, "forget", id=saved["id"]) == {"success": True, "id": saved["id"]}
    assert run(bank, "recall", query="which editor")["facts"] == []
    again = run(bank, "forget", id=saved["id"])
    assert again["success"] is False and saved["id"] in again["error"]


def test_strict_mode_nulls(bank: MemoryBank) -> None:
    out = run(bank, "remember", fact="User's sister is Ada", category=None, id=None)
    assert out["success"] is True
    assert bank.get(out["id"], "uma").category.value == "relationship"  # inferred


def test_duplicate_names_the_existing_fact(bank: MemoryBank) -> None:
    first = run(bank, "remember", fact="User lives in Oslo", category="identity")
    again = run(bank, "remember", fact="User lives in Oslo", category="identity")
    assert again["success"] is False
    assert first["id"] in again["error"] and "User lives in Oslo" in again["error"]


def test_recall_reads_private_and_project_memory(bank: MemoryBank) -> None:
    run(bank, "remember", fact="User prefers short answers")
    bank.save("uma", "Atlas uses short release cycles", "project", project_id="atlas")
    bank.save("uma", "Zephyr uses short sprints", "project", project_id="zephyr")
    facts = [f["fact"] for f in run(bank, "recall", query="short")["facts"]]
    assert sorted(facts) == ["Atlas uses short release cycles", "User prefers short answers"]
    # New facts are the user's own, never written into the shared project.
    assert bank.count("uma", scopes="user") == 1


#: Thirteen facts about sailing, each its own: the judge retires none of them when they are
#: saved one after another. (Thirteen near copies, "User read book number 1 about sailing in
#: 1991", "… number 2 … 1992", read to it as one fact changing: a save retired 6 of 13.)
SAILING = [
    "User sails a small dinghy on weekends",
    "User's favourite sailing book is about ocean crossings",
    "User learned to tie a bowline knot",
    "User keeps a logbook of every sailing trip",
    "User's sailing club meets on Thursdays",
    "User wants to buy a book on celestial navigation",
    "User crewed in a regatta last summer",
    "User's brother gave them a sailing atlas",
    "User reads sailing magazines on the train",
    "User is saving up for a sailboat",
    "User took a coastal skipper course",
    "User collects old nautical charts",
    "User's daughter is learning to sail",
]


def test_recall_returns_at_most_the_fixed_limit(bank: MemoryBank) -> None:
    assert len(SAILING) == RECALL_LIMIT + 3
    for fact in SAILING:
        assert bank.save("uma", fact, "context").replaced == []
    assert bank.count("uma", superseded=False) == len(SAILING)
    assert len(run(bank, "recall", query="sailing books")["facts"]) == RECALL_LIMIT


def test_other_users_ids_are_not_reachable(bank: MemoryBank) -> None:
    theirs = bank.save("zed", "User collects vinyl records", "preference").memory_id
    eve = Caller(user_id="uma")
    assert run(bank, "forget", eve, id=theirs)["success"] is False
    assert run(bank, "remember", eve, fact="User hates vinyl", id=theirs)["success"] is False
    assert bank.get(theirs, "zed").content == "User collects vinyl records"


def test_category_left_out_is_inferred_and_an_explicit_one_wins(bank: MemoryBank) -> None:
    category = to_anthropic(DEFAULT)[0]["input_schema"]["properties"]["category"]
    assert "default" not in category and "inferred" in category["description"].lower()
    for caller in (CTX, Caller(user_id="uma")):  # with and without a project (scope)
        name = run(bank, "remember", caller, fact="User's name is Kim")
        tea = run(bank, "remember", caller, fact="User prefers tea")
        told = run(bank, "remember", caller, fact="User's name is Kim Lee", category="context")
        assert bank.get(name["id"], "uma").category.value == "identity"
        assert bank.get(name["id"], "uma").importance == 10
        assert bank.get(tea["id"], "uma").category.value == "preference"
        assert bank.get(told["id"], "uma").category.value == "context"
        for out in (name, tea, told):
            run(bank, "forget", caller, id=out["id"])
    shared = run(bank, "remember", fact="User's name is Kim", scope="project")
    assert bank.get(shared["id"], "uma", project_id="atlas").category.value == "identity"


def test_remember_answers_replaced_and_replacing_a_replaced_fact_is_a_no_op(
    bank: MemoryBank,
) -> None:
    me = Caller(user_id="ula")
    old = run(bank, "remember", me, fact="User lives in Boston")
    said = run(bank, "remember", me, fact="User moved to Chicago")
    assert old["id"] in [c["id"] for c in said["conflicts"]]
    # The model settles it as the tool says: remember with the old id, which replaces it.
    new = run(bank, "remember", me, fact="User moved to Chicago", id=old["id"])
    assert new["success"] and new["fact"] == "User moved to Chicago"
    assert [m.content for m in bank.list("ula", superseded=False)] == ["User moved to Chicago"]
    # Doing it again is a no-op.
    again = run(bank, "remember", me, fact="User moved to Chicago", id=old["id"])
    assert again["success"] and again["id"] == new["id"] and again["fact"] == new["fact"]
    assert "already replaced" in again["note"]
    assert [m.content for m in bank.list("ula", superseded=False)] == ["User moved to Chicago"]
    # A rewrite to what another fact already says merges the two: one fact is left.
    tea = run(bank, "remember", me, fact="User drinks black tea every morning")
    merged = run(bank, "remember", me, fact="User moved to Chicago", id=tea["id"])
    assert merged["id"] == new["id"] and merged["replaced"][0]["id"] == tea["id"]
    assert [m.content for m in bank.list("ula", superseded=False)] == ["User moved to Chicago"]
