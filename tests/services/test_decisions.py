"""Decision memories, their recall filters, and the store changes they rest on (migration 2,
the decision and superseded_by columns, org members)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from memorybank import MemoryBank
from memorybank.errors import ValidationError
from memorybank.model import (
    Caller,
    Decision,
    DecisionOutcome,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Ring,
    ScopeSet,
    Source,
    utcnow,
)
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services.accounts import join_org, leave_org, org_users
from memorybank.services.decisions import (
    DECISION_METADATA,
    DecisionFilter,
    filtered_recent,
    filtered_search,
    log_decision,
)
from memorybank.stores.sqlite import SQLiteStore
from memorybank.stores.sqlite_schema import MIGRATIONS

CTX = Caller(user_id="ana", thread_id="t1")


def decide(bank: MemoryBank, action: str, outcome: str = "successful", **more: Any) -> Memory:
    rationale = more.pop("rationale", f"Rationale for {action} following the usual checks")
    return log_decision(bank, CTX, action, outcome, rationale, **more)


def backdated_decision(bank: MemoryBank, action: str, days: int) -> Memory:
    """A decision logged ``days`` ago (written through the store, as an import would)."""
    when = utcnow() - timedelta(days=days)
    memory = Memory(
        user_id="ana",
        content=f"Decision {action} (successful): logged {days} days ago",
        category="context",
        ring=Ring.EPISODIC,
        metadata=dict(DECISION_METADATA),
        created_at=when,
        updated_at=when,
        decision=Decision(action=action, outcome="successful", rationale="An old one"),
    )
    vectors = bank.embedder.embed([memory.content])
    bank.store.insert([memory], vectors, dedup=[False], actor="ana")
    return memory


# -- log_decision ---------------------------------------------------------------------------


def test_log_decision_stores_the_decision(bank: MemoryBank) -> None:
    considered = bank.save("ana", "Customer Acme has been a client for five years", "context")
    assert considered.memory_id is not None
    memory = log_decision(
        bank,
        CTX,
        "approved_discount",
        "successful",
        "Loyal customer; within the 15% limit",
        policy_applied="discount_policy_v2",
        precedent=True,
        memories_considered=[considered.memory_id],
    )
    assert memory.decision == Decision(
        action="approved_discount",
        outcome=DecisionOutcome.SUCCESSFUL,
        rationale="Loyal customer; within the 15% limit",
        policy_applied="discount_policy_v2",
        precedent=True,
        memories_considered=(considered.memory_id,),
    )
    stored = bank.get(memory.id, "ana")
    assert stored == memory
    assert stored.content == (
        "Decision approved_discount (successful): Loyal customer; within the 15% limit "
        "[policy discount_policy_v2]"
    )
    assert (stored.ring, stored.source, stored.importance) == (Ring.EPISODIC, Source.AI, 8)
    assert stored.metadata == {**DECISION_METADATA, "thread_id": "t1"}
    assert stored.session_id is None  # not spliced into the conversation's turns
    assert [e.kind for e in bank.history(memory.id, "ana")] == [EventKind.ADD]


def test_importance_follows_precedent_and_exception(bank: MemoryBank) -> None:
    assert decide(bank, "a").importance == 6
    assert decide(bank, "b", exception=True).importance == 7
    assert decide(bank, "c", precedent=True, exception=True).importance == 9


def test_alike_decisions_are_all_kept(bank: MemoryBank) -> None:
    first = decide(bank, "denied_refund", rationale="Outside the 30-day window")
    second = decide(bank, "denied_refund", rationale="Outside the 30-day window")
    assert first.id != second.id
    assert bank.count("ana") == 2


def test_decisions_go_to_the_project_when_there_is_one(bank: MemoryBank) -> None:
    caller = Caller(user_id="ana", project_id="support")
    memory = log_decision(bank, caller, "escalated", "pending", "Customer threatened to churn")
    assert memory.project_id == "support"
    assert bank.get(memory.id, "ben", project_id="support").decision is not None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"outcome": "great"}, "outcome"),
        ({"action": "   "}, "action"),
        ({"rationale": ""}, "rationale"),
        ({"rationale": "x" * 600}, "rationale"),
        ({"memories_considered": ["mem_nope"]}, "memoriesConsidered"),
        ({"domain": "space"}, "domain"),
    ],
)
def test_bad_decisions_are_refused(bank: MemoryBank, kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {
        "action": "approved_discount",
        "outcome": "pending",
        "rationale": "Because the customer asked nicely",
        **kwargs,
    }
    with pytest.raises(ValidationError) as info:
        log_decision(bank, CTX, **args)
    assert info.value.field == field


def test_another_users_memory_cannot_be_cited(bank: MemoryBank) -> None:
    theirs = bank.save("ben", "Ben's private note about pricing", "context").memory_id
    assert theirs is not None
    with pytest.raises(ValidationError, match="not one of your memories"):
        decide(bank, "approved_discount", memories_considered=[theirs])


# -- filters --------------------------------------------------------------------------------


def test_since_times() -> None:
    now = datetime(2025, 5, 17, 10, 30, tzinfo=UTC)
    assert DecisionFilter(since="quarter").since_time(now) == datetime(2025, 4, 1, tzinfo=UTC)
    assert DecisionFilter(since="year").since_time(now) == datetime(2025, 1, 1, tzinfo=UTC)
    assert DecisionFilter(since="7d").since_time(now) == now - timedelta(days=7)
    assert DecisionFilter().since_time(now) is None
    assert DecisionFilter(since="quarter").since_time(datetime(2025, 12, 31, tzinfo=UTC)) == (
        datetime(2025, 10, 1, tzinfo=UTC)
    )


@pytest.fixture
def decisions(bank: MemoryBank) -> dict[str, Memory]:
    bank.save("ana", "User prefers refunds to be handled by email", "preference")
    return {
        "ok": decide(bank, "approved_refund", "successful", policy_applied="refund_policy_v2"),
        "failed": decide(bank, "approved_refund", "failed", rationale="Refund bounced twice"),
        "precedent": decide(bank, "approved_discount", precedent=True),
        "exception": decide(
            bank, "denied_refund", "pending", exception=True, policy_applied="Refund_Policy_V2"
        ),
        "old": backdated_decision(bank, "approved_refund", days=40),
    }


def search_ids(bank: MemoryBank, **conditions: Any) -> set[str]:
    hits = filtered_search(bank, "ana", "refund decision", DecisionFilter(**conditions), limit=50)
    return {h.memory.id for h in hits}


def recent_ids(bank: MemoryBank, **conditions: Any) -> list[str]:
    return [m.id for m in filtered_recent(bank, "ana", DecisionFilter(**conditions), limit=50)]


def test_decision_filters_on_search(bank: MemoryBank, decisions: dict[str, Memory]) -> None:
    ids = {key: m.id for key, m in decisions.items()}
    everything = search_ids(bank)
    assert set(ids.values()) < everything  # the preference is found too without filters
    assert search_ids(bank, decisions_only=True) == set(ids.values())
    assert search_ids(bank, outcome="failed") == {ids["failed"]}
    assert search_ids(bank, precedents_only=True) == {ids["precedent"]}
    assert search_ids(bank, exceptions_only=True) == {ids["exception"]}
    assert search_ids(bank, action="APPROVED_REFUND") == {ids["ok"], ids["failed"], ids["old"]}
    assert search_ids(bank, policy_applied="refund_policy_v2") == {ids["ok"], ids["exception"]}
    assert ids["old"] not in search_ids(bank, since="30d")
    assert ids["old"] in search_ids(bank, since="90d")
    assert search_ids(bank, action="approved_refund", since="7d") == {ids["ok"], ids["failed"]}


def test_decision_filters_on_recent(bank: MemoryBank, decisions: dict[str, Memory]) -> None:
    ids = {key: m.id for key, m in decisions.items()}
    newest_first = [ids["exception"], ids["precedent"], ids["failed"], ids["ok"], ids["old"]]
    assert recent_ids(bank, decisions_only=True) == newest_first
    assert recent_ids(bank, outcome="successful") == [ids["precedent"], ids["ok"], ids["old"]]
    assert recent_ids(bank, since="7d", decisions_only=True) == newest_first[:4]
    assert len(recent_ids(bank)) == 6  # no filter: the preference as well
    narrowed = filtered_recent(bank, "ana", DecisionFilter(decisions_only=True), limit=2)
    assert [m.id for m in narrowed] == newest_first[:2]


def test_filters_match_only_decisions() -> None:
    plain = Memory(user_id="u", content="User prefers tea", category="preference")
    assert DecisionFilter().matches(plain)
    assert not DecisionFilter(decisions_only=True).matches(plain)
    assert DecisionFilter(decisions_only=True).active and not DecisionFilter().active


# -- store: migration 2, new columns, superseded filter, orgs -------------------------------


def test_a_version_1_database_is_migrated(tmp_path: Path, embedder: LocalEmbedder) -> None:
    path = tmp_path / "v1.db"
    conn = apsw.Connection(str(path))
    version, name, sql = MIGRATIONS[0]
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_us INTEGER NOT NULL)"
    )
    conn.execute(sql)
    conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 0)", (version, name))
    conn.execute(
        "INSERT INTO memories (id, user_id, scope_key, content, category, ring, importance, "
        "source, created_us, updated_us) VALUES ('mem_v1', 'ana', 'u:ana', 'User likes tea', "
        "'preference', 'semantic', 9, 'ai', 1, 1)"
    )
    conn.close()
    with SQLiteStore(path, dimension=embedder.dimension) as store:
        old = store.get("mem_v1", ScopeSet(user_id="ana"))
        assert old is not None
        assert (old.decision, old.superseded_by) == (None, None)
        store.add_org_member("acme", "ana")  # the new tables exist
        assert store.org_users("acme") == ["ana"]
    conn = apsw.Connection(str(path))
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    conn.close()
    assert versions == [m[0] for m in MIGRATIONS]


def test_update_keeps_the_decision(bank: MemoryBank) -> None:
    memory = decide(bank, "approved_discount")
    changed = bank.update(memory.id, "ana", importance=10)
    assert bank.get(memory.id, "ana").decision == memory.decision == changed.decision


def test_superseded_filter(bank: MemoryBank) -> None:
    old = bank.save("ana", "User lives in Berlin", "identity").memory
    new = bank.save("ana", "User lives in Munich", "identity").memory
    assert old is not None and new is not None
    bank.store.replace(
        old.model_copy(update={"superseded_by": new.id}),
        None,
        HistoryEvent(memory_id=old.id, user_id="ana", kind=EventKind.SUPERSEDE),
    )
    scopes = ScopeSet(user_id="ana")

    def listed(**flags: Any) -> list[str]:
        found = bank.store.list_memories(scopes, MemoryFilter(**flags), limit=10)
        return sorted(m.content for m in found)

    assert listed() == ["User lives in Berlin", "User lives in Munich"]
    assert listed(superseded=False) == ["User lives in Munich"]
    assert listed(superseded=True) == ["User lives in Berlin"]
    vector = bank.embedder.embed(["Where does the user live? Berlin"])[0]
    for flags in ({"superseded": False}, {"superseded": False, "ring": ("semantic",)}):
        hits = bank.store.vector_search(scopes, vector, 10, MemoryFilter(**flags))
        assert [h.memory.id for h in hits] == [new.id]
    assert len(bank.store.vector_search(scopes, vector, 10, MemoryFilter())) == 2
    assert MemoryFilter(superseded=False).matches(new)
    assert not MemoryFilter(superseded=False).matches(bank.get(old.id, "ana"))


def test_org_members(bank: MemoryBank) -> None:
    join_org(bank, "acme", "ben")
    join_org(bank, "acme", "ana")
    join_org(bank, "acme", "ana")
    join_org(bank, "other", "cy")
    assert org_users(bank, "acme") == ["ana", "ben"]
    assert leave_org(bank, "acme", "ben") is True
    assert leave_org(bank, "acme", "ben") is False
    assert org_users(bank, "acme") == ["ana"]
    with pytest.raises(ValidationError):
        join_org(bank, " ", "ana")
