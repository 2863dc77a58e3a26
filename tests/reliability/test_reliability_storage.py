"""Storage that refuses writes: a read-only database and a full disk.

Tests run as root here, where ``chmod 0444`` does not stop writes, so read-only is simulated by
opening the file through a ``mode=ro`` URI (SQLite then refuses every write exactly as for a
write-protected file) and a full disk by ``PRAGMA max_page_count`` (SQLite answers SQLITE_FULL
as it does when the disk runs out). Either way the caller gets a :class:`StoreError` saying
what happened (REST: a 503/507 JSON error) and reads keep working.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from fastapi.testclient import TestClient

import memorybank
from memorybank import MemoryBank, StoreError
from memorybank.model import MemoryFilter, ScopeSet
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.server.app import create_app
from memorybank.services import transfer
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings
from memorybank.stores.sqlite import SQLiteStore
from memorybank.tools import Caller, profile
from memorybank.tools import call as tool_call

MASTER = "test-master-key-not-a-secret"
FACTS = ["User prefers green tea in the morning", "User lives in Lisbon near the river"]


def _seed(path: Path, embedder: LocalEmbedder) -> None:
    with MemoryBank(SQLiteStore(path, dimension=embedder.dimension), embedder) as bank:
        Accounts.open(bank, Settings(url=f"sqlite:///{path}", master_key=MASTER))  # type: ignore[arg-type]
        for fact in FACTS:
            assert bank.save("local", fact, "preference").success


@pytest.fixture
def readonly_bank(
    tmp_path: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MemoryBank]:
    db = tmp_path / "ro.db"
    _seed(db, embedder)
    monkeypatch.chdir(tmp_path)  # where a URI taken for a path would leave a "file:" folder
    store = SQLiteStore(f"file:{db}?mode=ro", dimension=embedder.dimension)
    with MemoryBank(store, embedder) as bank:
        yield bank


@pytest.fixture
def full_bank(
    tmp_path: Path, embedder: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MemoryBank]:
    db = tmp_path / "full.db"
    _seed(db, embedder)
    original = SQLiteStore._connect

    def capped(self: SQLiteStore) -> apsw.Connection:
        conn = original(self)
        pages = next(conn.execute("PRAGMA page_count"))[0]
        conn.execute(f"PRAGMA max_page_count={pages}")  # not one page more: the disk is full
        return conn

    store = SQLiteStore(db, dimension=embedder.dimension)
    monkeypatch.setattr(SQLiteStore, "_connect", capped)
    store._local.conn = capped(store)  # this thread's connection too
    with MemoryBank(store, embedder) as bank:
        yield bank


def _big_fact(i: int) -> str:
    return f"User keeps a long note number {i}: " + " ".join(f"word{i}x{j}" for j in range(60))


def _fill(bank: MemoryBank) -> StoreError:
    """Save until the store refuses; the error it raised."""
    for i in range(2000):
        try:
            bank.save("local", _big_fact(i)[:480], "context")
        except StoreError as exc:
            return exc
    raise AssertionError("the store never ran out of room")


def _reads_work(bank: MemoryBank) -> None:
    hits = bank.search("local", "what tea does the user drink")
    assert any("green tea" in h.memory.content for h in hits)
    assert bank.count("local") >= len(FACTS)
    assert bank.list("local", superseded=False)
    assert "green tea" in transfer.export(bank, "local")


def test_readonly_database_refuses_writes_clearly(
    readonly_bank: MemoryBank, tmp_path: Path
) -> None:
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == []  # no stray "file:"
    with pytest.raises(StoreError, match="read-only"):
        readonly_bank.save("local", "User drinks coffee after lunch", "preference")
    memory = readonly_bank.list("local")[0]
    with pytest.raises(StoreError, match="read-only"):
        readonly_bank.update(memory.id, "local", content="User drinks coffee at night")
    with pytest.raises(StoreError, match="read-only"):
        readonly_bank.delete(memory.id, "local")
    _reads_work(readonly_bank)
    result = tool_call(
        readonly_bank,
        profile("default"),
        "remember",
        {"fact": "User drinks coffee after lunch"},
        Caller(user_id="local"),
    )
    assert result["success"] is False and "could not complete" in result["error"]


def test_full_disk_refuses_writes_clearly_and_keeps_reading(full_bank: MemoryBank) -> None:
    before = full_bank.count("local")
    exc = _fill(full_bank)
    assert "disk is full" in str(exc)
    after = full_bank.count("local")
    with pytest.raises(StoreError, match="disk is full"):
        full_bank.save("local", _big_fact(99_999)[:480], "context")
    assert full_bank.count("local") == after >= before  # nothing half-written
    _reads_work(full_bank)


def _app(bank: MemoryBank) -> TestClient:
    path = str(bank.store.path)  # type: ignore[attr-defined]
    settings = Settings(url=f"sqlite:///{path}", master_key=MASTER)  # type: ignore[arg-type]
    accounts = Accounts.open(bank, settings)
    app = create_app(bank, accounts, settings)
    # A loopback Host: local mode answers to no other.
    return TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False)


@pytest.mark.parametrize("which", ["readonly_bank", "full_bank"])
def test_rest_answers_503_or_507_and_keeps_serving_reads(
    which: str, request: pytest.FixtureRequest
) -> None:
    bank: MemoryBank = request.getfixturevalue(which)
    with _app(bank) as client:
        status: Any = None
        for i in range(2000):
            response = client.post("/api/memory/user", json={"fact": _big_fact(i)[:480]})
            if response.status_code != 201:
                status = response.status_code
                break
        assert status in (503, 507), (status, response.text)
        error = response.json()["error"]
        assert "read-only" in error or "disk is full" in error
        hits = client.get("/api/search", params={"q": "green tea"})
        assert hits.status_code == 200 and hits.json()["hits"]
        assert client.get("/api/memory/user").status_code == 200
        assert client.get("/healthz").json()["status"] == "ok"


def test_memorybank_open_on_missing_directory_permissions(tmp_path: Path) -> None:
    """A path that cannot be a database (a directory) is a clear StoreError, not a crash."""
    with pytest.raises(memorybank.MemoryBankError):
        memorybank.open(f"sqlite:///{tmp_path}")


def test_in_memory_store_is_one_database_for_every_thread(embedder: LocalEmbedder) -> None:
    """``:memory:`` is shared by the store's threads (memdb VFS) and private to the store."""
    with MemoryBank(SQLiteStore(":memory:", dimension=embedder.dimension), embedder) as bank:
        other = SQLiteStore(":memory:", dimension=embedder.dimension)
        assert bank.save("local", FACTS[0], "preference").success
        seen: list[Any] = []

        def worker() -> None:
            seen.append([m.content for m in bank.list("local")])
            seen.append(bank.save("local", FACTS[1], "preference").success)

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert seen == [[FACTS[0]], True]
        assert {m.content for m in bank.list("local")} == set(FACTS)
        assert other.count(ScopeSet(user_id="local"), MemoryFilter()) == 0
        other.close()
