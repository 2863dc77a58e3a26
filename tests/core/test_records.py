"""``core.records.save_records``: ready-made records stored as they are, embedded with the
bank's model, charged like any write started through an adapter, and checked against the
permission table for the project each names."""

from __future__ import annotations

import pytest

from memorybank import MemoryBank
from memorybank.core.records import save_records
from memorybank.core.writes import writing
from memorybank.errors import RateLimited, RoleRequired
from memorybank.model import Memory, Source


def record(content: str, **fields: object) -> Memory:
    return Memory.model_validate(
        {"user_id": "ann", "content": content, "category": "context", **fields}
    )


def test_records_are_stored_as_they_are_and_found(bank: MemoryBank) -> None:
    # No third-person rewrite and no duplicate check: the record already says what to keep.
    stored = save_records(
        bank,
        [record("I keep my bike in the shed"), record("I keep my bike in the shed")],
        actor="ann",
    )
    assert [m.content for m in stored] == ["I keep my bike in the shed"] * 2
    assert {m.embedding_model for m in stored} == {bank.embedder.model_id}
    assert bank.count("ann") == 2
    hits = bank.search("ann", "where is the bicycle kept")
    assert {h.memory.id for h in hits} == {m.id for m in stored}
    assert save_records(bank, [], actor="ann") == []


def test_a_member_may_not_store_what_the_user_typed_into_a_project(bank: MemoryBank) -> None:
    typed = record("Apollo ships every Friday", project_id="apollo", source=Source.USER)
    with pytest.raises(RoleRequired):
        save_records(bank, [typed], actor="ann", role="member")
    assert bank.count("ann", project_id="apollo", scopes="project") == 0
    said = record("Apollo ships every Friday", project_id="apollo", source=Source.AI)
    assert len(save_records(bank, [said], actor="ann", role="member")) == 1


def test_records_are_charged_to_the_write_in_progress(bank: MemoryBank) -> None:
    bank.writes.set_limit(3)
    batch = [record(f"User's locker at gym {n} is number {n}") for n in range(4)]
    with pytest.raises(RateLimited), writing(bank, "ann"):
        save_records(bank, batch, actor="ann")
    assert bank.count("ann") == 0  # refused whole, before anything was embedded
    with writing(bank, "ann"):
        assert len(save_records(bank, batch[:2], actor="ann")) == 2
