"""Nothing crosses between users or projects, and deleted text is gone from the files.

The isolation tests run on SQLite and PostgreSQL. Deletion on PostgreSQL is checked at the SQL
level: after a delete, no table holds the text any more (history keeps only tombstones). Dead
tuples stay in table and index pages until VACUUM (run here through ``PostgresStore.vacuum``),
and the WAL keeps old records until it is recycled, so the on-disk guarantee on PostgreSQL is
"gone from every table at once, from data pages after the next vacuum".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import MemoryBank, NotFound
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services import transfer
from memorybank.stores.sqlite import SQLiteStore

SECRETS = {
    ("alice", None): "User's bank PIN is Zorblax 8812",
    ("bob", None): "User's diary password is Quintrelle 5531",
    ("alice", "apollo"): "Apollo launch codes are Vexmoria 1177",
    ("bob", "zeus"): "Zeus staging key is Plorvanth 9043",
}

#: Tombstone kinds: deleted one by one, cleared with the scope, forgotten by a plan.
TOMBSTONES = ("DELETE", "CLEAR", "FORGET")


@pytest.fixture
def populated(any_bank: MemoryBank) -> MemoryBank:
    bank = any_bank
    for (user, project), text in SECRETS.items():
        assert bank.save(user, text, "context", project_id=project).success
    return bank


def _visible(bank: MemoryBank, user: str, project: str | None) -> set[str]:
    """Every text the caller can reach through every read path."""
    seen: set[str] = set()
    for query in ["PIN password codes key", "Zorblax Quintrelle Vexmoria Plorvanth", "secret"]:
        seen |= {h.memory.content for h in bank.search(user, query, project_id=project)}
    seen |= {m.content for m in bank.recent(user, project_id=project, limit=500)}
    seen |= {m.content for m in bank.list(user, project_id=project, limit=500)}
    seen |= {text for text in SECRETS.values() if text in transfer.export(bank, user)}
    if project:
        seen |= {
            t for t in SECRETS.values() if t in transfer.export(bank, user, project_id=project)
        }
    return seen


@pytest.mark.parametrize(
    ("user", "project", "allowed"),
    [
        ("alice", None, {("alice", None)}),
        ("bob", None, {("bob", None)}),
        ("alice", "apollo", {("alice", None), ("alice", "apollo")}),
        ("bob", "apollo", {("bob", None), ("alice", "apollo")}),  # a member of apollo
        ("carol", None, set()),
        ("carol", "zeus", {("bob", "zeus")}),
    ],
)
def test_reads_never_cross_scopes(
    populated: MemoryBank, user: str, project: str | None, allowed: set[tuple[str, str | None]]
) -> None:
    assert _visible(populated, user, project) == {SECRETS[key] for key in allowed}


def test_writes_never_cross_scopes(populated: MemoryBank) -> None:
    bobs = populated.list("bob", limit=10)[0]
    for attempt in (
        lambda: populated.get(bobs.id, "alice"),
        lambda: populated.update(bobs.id, "alice", content="User's diary password is gone"),
        lambda: populated.delete(bobs.id, "alice"),
        lambda: populated.history(bobs.id, "alice"),
        lambda: populated.delete(bobs.id, "alice", project_id="apollo"),
    ):
        with pytest.raises(NotFound):
            attempt()
    assert populated.clear("alice") == 1
    assert populated.get(bobs.id, "bob").content == SECRETS[("bob", None)]
    assert populated.count("alice", project_id="apollo") == 1


def _raw_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def test_deleted_text_leaves_every_table_and_file(tmp_path: Path, embedder: LocalEmbedder) -> None:
    folder = tmp_path / "db"
    store = SQLiteStore(folder / "m.db", dimension=embedder.dimension)
    bank = MemoryBank(store, embedder)
    kept = bank.save("alice", "User's favourite tea is Darjeeling", "preference")
    doomed = bank.save("alice", "User's safe combination is Xerothane 4471", "context")
    bank.update(doomed.memory_id, "alice", content="User's safe combination is Wubbleplex 4471")
    cleared = bank.save("alice", "Apollo vault phrase Krandlemoor", "project", project_id="apollo")
    assert b"Xerothane" in _raw_bytes(folder) or b"Wubbleplex" in _raw_bytes(folder)

    bank.delete(doomed.memory_id, "alice")
    assert bank.clear("alice", "apollo") == 1
    for word in ("Xerothane", "Wubbleplex", "Krandlemoor"):
        assert bank.search("alice", word, project_id="apollo")[0].memory.id == kept.memory_id
    for event in bank.history(doomed.memory_id, "alice") + bank.history(
        cleared.memory_id, "alice", project_id="apollo"
    ):
        assert event.kind in TOMBSTONES and event.old_content is None and event.new_content is None
    bank.close()

    raw = _raw_bytes(folder).lower()
    for word in (b"xerothane", b"wubbleplex", b"krandlemoor"):
        assert word not in raw, word
    assert b"darjeeling" in raw  # the check does see text that is still stored


def test_postgres_deleted_text_leaves_every_table(
    postgres_url: str, embedder: LocalEmbedder
) -> None:
    import psycopg

    from memorybank.stores.postgres import PostgresStore

    store = PostgresStore(postgres_url, dimension=embedder.dimension)
    bank = MemoryBank(store, embedder)
    kept = bank.save("alice", "User's favourite tea is Darjeeling", "preference")
    doomed = bank.save("alice", "User's safe combination is Xerothane 4471", "context")
    bank.update(doomed.memory_id, "alice", content="User's safe combination is Wubbleplex 4471")
    cleared = bank.save("alice", "Apollo vault phrase Krandlemoor", "project", project_id="apollo")

    bank.delete(doomed.memory_id, "alice")
    assert bank.clear("alice", "apollo") == 1
    for word in ("Xerothane", "Wubbleplex", "Krandlemoor"):
        assert bank.search("alice", word, project_id="apollo")[0].memory.id == kept.memory_id
    for event in bank.history(doomed.memory_id, "alice") + bank.history(
        cleared.memory_id, "alice", project_id="apollo"
    ):
        assert event.kind in TOMBSTONES and event.old_content is None and event.new_content is None
    store.vacuum()
    bank.close()

    with psycopg.connect(postgres_url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
        dump = "".join(
            str(row[0]) for t in tables for row in conn.execute(f'SELECT t::text FROM "{t}" t')
        ).lower()
    assert {"memories", "history", "meta"} <= set(tables)
    for word in ("xerothane", "wubbleplex", "krandlemoor"):
        assert word not in dump, word
    assert "darjeeling" in dump  # the check does see text that is still stored
