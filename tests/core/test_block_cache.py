"""The memory block's cache (issue 36): what the next message's block reads again (the
always-loaded facts, "Recently Changed", the size of the caller's memory) is kept until one of
the caller's scopes is written, and every kind of write drops it, from this bank or another
one on the same database. Time alone never does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memorybank import MemoryBank
from memorybank.core.prompt import auto_recall, system_prompt
from memorybank.model import Caller, ScopeSet
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore

ZOE = Caller(user_id="zoe")


def block(bank: MemoryBank, caller: Caller = ZOE) -> str:
    return system_prompt(bank, caller, "")


def bullets(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]


def test_the_next_block_reads_what_it_cached(bank: MemoryBank) -> None:
    bank.save("zoe", "User's name is Zoe Park", "identity")
    first = bank.block_cache.reads(ScopeSet(user_id="zoe"))
    block(bank)
    again = bank.block_cache.reads(ScopeSet(user_id="zoe"))
    assert again is first  # nothing written: the reads the first block made are reused
    assert "about" in again._values
    assert auto_recall(bank, ZOE, "What is my name?").count("Zoe Park") == 1


def _saved(bank: MemoryBank) -> str:
    return bank.save("zoe", "User prefers tea over coffee", "preference").memory_id or ""


@pytest.mark.parametrize(
    ("write", "shown"),
    [
        # each write to the scope, and the always-loaded facts the next block shows after it
        (lambda bank, mid: bank.save("zoe", "User is allergic to cats", "identity"), True),
        (
            lambda bank, mid: bank.update(mid, "zoe", content="User prefers green tea"),
            True,
        ),
        (lambda bank, mid: bank.delete(mid, "zoe"), False),
        (lambda bank, mid: bank.delete_many([mid], "zoe"), False),
        (lambda bank, mid: bank.clear("zoe"), False),
    ],
    ids=["save", "update", "delete", "delete_many", "clear"],
)
def test_a_write_to_the_scope_drops_the_cached_reads(
    bank: MemoryBank, write: Callable[[MemoryBank, str], object], shown: bool
) -> None:
    bank.save("zoe", "User's name is Zoe Park", "identity")
    mid = _saved(bank)
    before = block(bank)
    assert "User prefers tea over coffee" in bullets(before)
    write(bank, mid)
    after = block(bank)
    assert after != before  # the block read the scope again
    with fresh_bank(bank) as fresh:  # what a bank that never cached anything shows
        assert bullets(after) == bullets(system_prompt(fresh, ZOE, ""))
    assert ("User is allergic to cats" in after or "green tea" in after) is shown


def fresh_bank(bank: MemoryBank) -> MemoryBank:
    """A second bank on the same database, with nothing cached."""
    store = bank.store
    assert isinstance(store, SQLiteStore)
    return MemoryBank(SQLiteStore(store.path, dimension=bank.embedder.dimension), bank.embedder)


def test_supersede_and_restore_change_the_block(bank: MemoryBank) -> None:
    old = bank.save("zoe", "User lives in Leeds", "identity").memory_id or ""
    new = bank.save("zoe", "User moved to York", "identity", on_conflict="keep").memory_id or ""
    assert "User lives in Leeds" in block(bank)
    bank.supersede(old, new, "zoe")
    superseded = block(bank)
    assert "User lives in Leeds" not in superseded
    assert "User moved to York" in superseded
    bank.restore(old, "zoe")
    assert "User lives in Leeds" in block(bank)


def test_a_write_by_another_bank_on_the_database_drops_them(
    bank: MemoryBank, db_path: Path, embedder: LocalEmbedder
) -> None:
    bank.save("zoe", "User's name is Zoe Park", "identity")
    assert "Seoul" not in block(bank)
    with MemoryBank(SQLiteStore(db_path, dimension=embedder.dimension), embedder) as other:
        other.save("zoe", "User was born in Seoul", "identity")
    assert "User was born in Seoul" in block(bank)


def test_a_write_to_another_scope_keeps_them(bank: MemoryBank) -> None:
    bank.save("zoe", "User's name is Zoe Park", "identity")
    block(bank)
    cached = bank.block_cache.reads(ScopeSet(user_id="zoe"))
    bank.save("yuki", "User's name is Yuki Sato", "identity")
    assert bank.block_cache.reads(ScopeSet(user_id="zoe")) is cached


def test_a_project_write_reaches_a_member_block(bank: MemoryBank) -> None:
    member = Caller(user_id="zoe", project_id="apollo")
    bank.save("zoe", "Project Apollo ships on Fridays", "project", project_id="apollo")
    assert "Project Apollo ships on Fridays" in block(bank, member)
    bank.save("kai", "Project Apollo uses PostgreSQL 18", "project", project_id="apollo")
    assert "Project Apollo uses PostgreSQL 18" in block(bank, member)
