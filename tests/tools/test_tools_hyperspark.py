"""Seed 003 (HyperSpark): tool contracts, the seed's text formats, decision filters, orgWide."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from memorybank import MemoryBank
from memorybank.model import EventKind, HistoryEvent, SaveInput
from memorybank.services.accounts import join_org
from memorybank.tools import Caller, SafetyTier, call, profile, to_anthropic

HS = profile("hyperspark")
ANA = Caller(user_id="ana", thread_id="t1", org_id="acme")
ADMIN = Caller(user_id="boss", org_id="acme", org_admin=True)


def run(bank: MemoryBank, tool: str, args: dict[str, Any], caller: Caller = ANA) -> Any:
    return call(bank, HS, tool, args, caller)


def text(bank: MemoryBank, tool: str, args: dict[str, Any], caller: Caller = ANA) -> str:
    out = run(bank, tool, args, caller)
    assert isinstance(out, str), out
    return out


def test_tool_contracts_match_the_seed() -> None:
    schemas = {t["name"]: t["input_schema"] for t in to_anthropic(HS)}
    assert list(schemas) == [
        "remember",
        "recall",
        "recall_recent",
        "get_context",
        "forget_preview",
        "forget_confirm",
        "log_decision",
    ]
    assert schemas["remember"]["required"] == ["messages"]
    assert list(schemas["remember"]["properties"]) == ["messages", "context"]
    turn = schemas["remember"]["properties"]["messages"]["items"]
    assert turn["properties"]["role"]["enum"] == ["user", "assistant"]
    recall = schemas["recall"]["properties"]
    assert list(recall) == ["query", "topK", "filters", "orgWide"]
    assert (recall["topK"]["default"], recall["topK"]["maximum"]) == (30, 100)
    assert list(recall["filters"]["properties"]) == [
        "rings",
        "domains",
        "minImportance",
        "decisionsOnly",
        "decisionOutcome",
        "precedentsOnly",
        "exceptionsOnly",
        "decisionSince",
        "decisionAction",
        "policyApplied",
    ]
    assert recall["filters"]["properties"]["decisionSince"]["enum"] == [
        "7d",
        "30d",
        "90d",
        "quarter",
        "year",
    ]
    recent = schemas["recall_recent"]["properties"]
    assert (recent["limit"]["default"], recent["limit"]["maximum"]) == (30, 500)
    assert recent["since"]["enum"] == ["24h", "7d", "30d", "90d"]
    assert schemas["get_context"]["properties"]["maxTokens"]["default"] == 2000
    assert schemas["forget_preview"]["properties"]["topK"]["default"] == 50
    assert schemas["forget_confirm"]["required"] == ["planId"]
    assert schemas["log_decision"]["required"] == ["action", "rationale"]
    tiers = {t.name: t.tier for t in HS.tools}
    assert tiers["recall"] == tiers["get_context"] == SafetyTier.READ_ONLY
    assert tiers["remember"] == tiers["forget_confirm"] == SafetyTier.SIDE_EFFECTING


def test_remember_seed_example(bank: MemoryBank) -> None:
    out = text(
        bank,
        "remember",
        {
            "messages": [
                {"role": "user", "content": "I prefer to work in the mornings"},
                {
                    "role": "assistant",
                    "content": "Got it! I'll remember you prefer morning work sessions.",
                },
            ],
            "context": "Discussing work schedule preferences",
        },
    )
    assert re.fullmatch(r"Stored 1 memories\nIDs: mem_\w+", out), out
    assert bank.count("ana") == 3  # the fact and both turns


def test_recall_seed_format(bank: MemoryBank) -> None:
    job = bank.save("ana", "User works as a Senior Engineer at TechCorp", "identity", domain="work")
    bank.save("ana", "User enjoys hiking in the mountains", "preference", domain="lifestyle")
    out = text(
        bank,
        "recall",
        # Not the seed's "user's job, …": "user" is in every memory, and the bank's min-max
        # scaling of its near-zero BM25 scores currently ranks the shortest memory first.
        {"query": "job, company, and responsibilities", "topK": 10},
    )
    lines = out.split("\n")
    assert re.fullmatch(r"Found 2 memories \(\d+ms\):", lines[0])
    assert lines[1] == f"1. [{job.memory_id}] [semantic/work] {job.content}"
    assert job.memory is not None
    created = job.memory.created_at
    assert re.fullmatch(
        rf"Score: \d+% \| Created: {created.month}/{created.day}/{created.year}", lines[2]
    )
    assert lines[3].endswith("[semantic/lifestyle] User enjoys hiking in the mountains")


def test_recall_filters(bank: MemoryBank) -> None:
    bank.save("ana", "User works as a Senior Engineer at TechCorp", "identity", domain="work")
    bank.save("ana", "User might try pottery someday", "preference", domain="interests")
    out = text(
        bank,
        "recall",
        {"query": "what the user does", "filters": {"domains": ["work"], "minImportance": 5}},
    )
    assert out.startswith("Found 1 memories") and "TechCorp" in out
    none = text(bank, "recall", {"query": "what the user does", "filters": {"rings": ["episodic"]}})
    assert re.fullmatch(r"Found 0 memories \(\d+ms\)\.", none)
    # null means "not given", for the filters object and inside it.
    nulls = {"query": "user", "topK": None, "filters": {"domains": None}, "orgWide": None}
    assert text(bank, "recall", nulls).startswith("Found 2 memories")


def test_recall_hides_superseded_memories(bank: MemoryBank) -> None:
    old = bank.save("ana", "User lives in Berlin", "identity").memory
    new = bank.save("ana", "User lives in Munich", "identity").memory
    assert old is not None and new is not None
    bank.store.replace(
        old.model_copy(update={"superseded_by": new.id}),
        None,
        HistoryEvent(memory_id=old.id, user_id="ana", kind=EventKind.SUPERSEDE),
    )
    out = text(bank, "recall", {"query": "where does the user live"})
    assert "Munich" in out and "Berlin" not in out
    assert "Berlin" not in text(bank, "recall_recent", {})


def test_recall_recent_seed_format(bank: MemoryBank) -> None:
    bank.save_many(
        "ana",
        [
            SaveInput(
                content="User completed the code review for the auth module",
                category="project",
                domain="work",
                ring="episodic",
                importance=7,
                created_at=datetime(2024, 12, 31, 14, 30, tzinfo=UTC),
            ),
            SaveInput(
                content="User started a new feature branch for payments",
                category="project",
                domain="projects",
                ring="episodic",
                importance=6,
                created_at=datetime(2024, 12, 31, 10, 15, tzinfo=UTC),
            ),
        ],
    )
    out = text(bank, "recall_recent", {"limit": 10})
    lines = out.split("\n")
    assert re.fullmatch(r"2 recent memories \(\d+ms\):", lines[0])
    assert re.fullmatch(
        r"1\. \[mem_\w+\] \[episodic/work\] User completed the code review for the auth module",
        lines[1],
    )
    assert lines[2] == "Created: 12/31/2024, 2:30 PM | Importance: 7/10"
    assert lines[4] == "Created: 12/31/2024, 10:15 AM | Importance: 6/10"
    assert text(bank, "recall_recent", {"since": "7d"}).startswith("0 recent memories")
    filtered = text(bank, "recall_recent", {"filters": {"domains": ["projects"]}})
    assert filtered.startswith("1 recent memories") and "payments" in filtered


def test_decisions_through_the_tools(bank: MemoryBank) -> None:
    fact = bank.save("ana", "Customer Acme has been a client for five years", "context")
    logged = text(
        bank,
        "log_decision",
        {
            "action": "approved_discount",
            "outcome": "successful",
            "rationale": "Long-standing customer; within the 15% limit",
            "policyApplied": "discount_policy_v2",
            "precedent": True,
            "memoriesConsidered": [fact.memory_id],
        },
    )
    assert re.fullmatch(r"Logged decision approved_discount \(successful\)\nID: mem_\w+", logged)
    text(
        bank,
        "log_decision",
        {"action": "denied_refund", "outcome": "failed", "rationale": "Outside the window"},
    )
    only = text(bank, "recall", {"query": "discount", "filters": {"decisionsOnly": True}})
    assert only.startswith("Found 2 memories")
    line = "Decision: approved_discount | Outcome: successful | Policy: discount_policy_v2"
    assert f"{line} | Precedent\n" in only
    precedents = text(bank, "recall", {"query": "customer", "filters": {"precedentsOnly": True}})
    assert precedents.startswith("Found 1 memories") and "approved_discount" in precedents
    failed = text(bank, "recall_recent", {"filters": {"decisionOutcome": "failed"}})
    assert failed.startswith("1 recent memories") and "denied_refund" in failed
    by_policy = {"query": "x", "filters": {"policyApplied": "discount_policy_v2"}}
    assert text(bank, "recall", by_policy).startswith("Found 1 memories")
    recent = {"filters": {"decisionAction": "denied_refund", "decisionSince": "quarter"}}
    assert text(bank, "recall_recent", recent).startswith("1 recent memories")
    bad = run(
        bank,
        "log_decision",
        {"action": "x", "rationale": "Because", "memoriesConsidered": ["mem_nope"]},
    )
    assert bad["success"] is False and "not one of your memories" in bad["error"]


def test_get_context(bank: MemoryBank) -> None:
    bank.save("ana", "User is a Senior Software Engineer at TechCorp", "identity", domain="work")
    out = text(bank, "get_context", {"maxTokens": 1500, "focus": ["work", "projects"]})
    assert out.startswith("## User Context")
    assert "Senior Software Engineer" in out


def test_forget_preview_and_confirm(bank: MemoryBank) -> None:
    for content in (
        "User's home address is 123 Oak Street, Apt 4B",
        "User lived on Oak Street for 3 years",
        "User prefers async communication",
    ):
        bank.save("ana", content, "context")
    preview = text(bank, "forget_preview", {"query": "my old home address on Oak Street"})
    assert preview.startswith("## Forget Preview\n\n**Summary:** Will delete 2 memories")
    assert "### Will FORGET (2)" in preview
    plan_id = re.search(r"\*\*Plan ID:\*\* (fp_\w+)\n", preview)
    assert plan_id is not None
    assert preview.endswith("Use `forget_confirm` with this plan ID to execute.")
    done = text(bank, "forget_confirm", {"planId": plan_id.group(1)})
    assert done == "## Forget Plan Executed\n- Forgotten: 2\n- Rewritten: 0\n- Kept: 1"
    again = run(bank, "forget_confirm", {"planId": plan_id.group(1)})
    assert again["success"] is False and "already executed" in again["error"]
    theirs = run(bank, "forget_confirm", {"planId": plan_id.group(1)}, ADMIN)
    assert theirs["success"] is False and "no forget plan" in theirs["error"]


def test_forget_preview_of_an_old_job_keeps_other_peoples(bank: MemoryBank) -> None:
    """Issue 28: the user's own facts about Globex go, their sister's and friend's stay."""
    job = [
        "User used to work at Globex as a backend developer",
        "User's manager at Globex was Priya",
        "User left Globex in 2023",
    ]
    others = [
        "User's sister works at Globex",
        "User's friend Dana joined Globex",
        "User bought a Globex laptop",
        "User prefers async communication",
    ]
    for content in [*job, *others]:
        bank.save("ana", content, "context")
    query = "forget everything about my old job at Globex"
    preview = text(bank, "forget_preview", {"query": query})
    assert "### Will FORGET (3)" in preview
    assert "_mentions 'globex' and is about 'old job'_" in preview
    assert all(fact in preview for fact in job)
    assert not any(fact in preview for fact in others)
    plan_id = re.search(r"\*\*Plan ID:\*\* (fp_\w+)\n", preview)
    assert plan_id is not None
    done = text(bank, "forget_confirm", {"planId": plan_id.group(1)})
    assert done == "## Forget Plan Executed\n- Forgotten: 3\n- Rewritten: 0\n- Kept: 4"
    assert sorted(m.content for m in bank.list("ana")) == sorted(others)


def test_org_wide_is_for_admins_only(bank: MemoryBank) -> None:
    bank.save("ana", "User works on the billing service", "project")
    for tool, args in (
        ("recall", {"query": "billing", "orgWide": True}),
        ("recall_recent", {"orgWide": True}),
    ):
        denied = run(bank, tool, args, ANA)
        assert denied == {
            "success": False,
            "error": "orgWide is only for org admins; search without orgWide",
        }
    no_org = run(
        bank, "recall", {"query": "x", "orgWide": True}, Caller(user_id="b", org_admin=True)
    )
    assert no_org["success"] is False and "needs an org" in no_org["error"]


def test_org_wide_searches_the_members(bank: MemoryBank) -> None:
    join_org(bank, "acme", "ana")
    join_org(bank, "acme", "ben")
    join_org(bank, "globex", "cy")
    bank.save("ana", "User works on the billing service", "project")
    bank.save("ben", "User maintains the billing database", "project")
    bank.save("cy", "User rewrote the billing engine at Globex", "project")
    out = text(bank, "recall", {"query": "billing", "orgWide": True}, ADMIN)
    assert out.startswith("Found 2 memories")
    assert "[user ana] User works on the billing service" in out
    assert "[user ben] User maintains the billing database" in out
    assert "Globex" not in out
    recent = text(bank, "recall_recent", {"orgWide": True}, ADMIN)
    assert recent.startswith("2 recent memories") and "[user ben]" in recent
    # Without orgWide the admin sees only their own memories.
    assert text(bank, "recall", {"query": "billing"}, ADMIN).startswith("Found 0 memories")


def test_user_id_cannot_be_chosen_by_the_model(bank: MemoryBank) -> None:
    out = run(bank, "recall", {"query": "x", "userId": "ben"})
    assert out["success"] is False and "unknown argument 'userId'" in out["error"]
