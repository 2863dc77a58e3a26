"""`memorybank migrate` between real SQLite files and a real PostgreSQL: everything copied with
its vectors, resumable after an interruption, verified by counts and checksums."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest
from typer.testing import CliRunner

from memorybank import MemoryBank
from memorybank.cli import app as cli_app
from memorybank.migrate import migrate
from memorybank.model import MemoryFilter, ScopeSet
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings
from memorybank.stores.postgres import PostgresStore
from memorybank.stores.sqlite import SQLiteStore
from server_helpers import MASTER

FACTS = [
    "User prefers TypeScript for all their projects",
    "User lives in Lisbon near the river",
    "User has two cats named Miso and Tofu",
    "User is allergic to peanuts and shellfish",
    "User works as a data engineer at a bank",
    "User runs every Sunday morning along the coast",
    "User drinks green tea instead of coffee",
    "User is learning Japanese with a tutor",
    "User's sister is called Ana and lives in Porto",
    "User plays the cello in a community orchestra",
    "User prefers dark mode in every editor",
    "User is planning a trip to Kyoto in April",
]
# Alice's facts, one of them deleted, plus one conversation turn; Bob's six in the project.
TOTAL = len(FACTS) - 1 + 1 + 6


@pytest.fixture
def source(tmp_path: Path, embedder: LocalEmbedder) -> dict[str, object]:
    """A SQLite database with memories in two scopes, updates, a deletion, conversation turns,
    users, an org, a project with members, keys (one revoked), a thread and a BYOK setting."""
    path = tmp_path / "source.db"
    with MemoryBank(SQLiteStore(path, dimension=embedder.dimension), embedder) as bank:
        accounts = Accounts.open(bank, Settings(url=f"sqlite:///{path}", master_key=MASTER))
        accounts.create_user("alice", name="Alice")
        accounts.create_user("bob")
        accounts.add_org_member("acme", "alice", "admin")
        accounts.create_project("apollo", owner="alice", name="Apollo", org_id="acme")
        accounts.add_member("apollo", "bob", "member")
        _, raw = accounts.create_key("alice", label="laptop")
        old, _ = accounts.create_key("bob")
        accounts.revoke_key(old.id)
        accounts.create_thread("alice", project_id="apollo", title="Plans", memory_enabled=False)
        accounts.set_provider(
            "alice", "llm", base_url="http://127.0.0.1:9/v1", model="m", api_key="sk-secret-1234"
        )
        saved = bank.save_many("alice", [{"content": f, "category": "context"} for f in FACTS])
        ids = [s.memory_id for s in saved]
        bank.save_many(
            "bob",
            [{"content": f, "category": "context", "tags": ["t"]} for f in FACTS[:6]],
            project_id="apollo",
        )
        bank.save(
            "alice", "so I told her we'd meet at 5", "context", ring="episodic",
            source="conversation", metadata={"z": 1, "a": [1, 2]},
        )  # fmt: skip
        bank.update(ids[0], "alice", content="User prefers Rust for all their projects")
        bank.delete(ids[1], "alice")
    return {"path": path, "url": f"sqlite:///{path}", "key": raw, "ids": ids}


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli_app, ["migrate", *args])
    return result.exit_code, result.output


def _pg_rows(url: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def test_migrate_sqlite_to_postgres_copies_everything(
    source: dict[str, object], postgres_db_url: str, embedder: LocalEmbedder
) -> None:
    code, out = _run("--from", str(source["url"]), "--to", postgres_db_url)
    assert code == 0, out
    assert "Verified" in out and "mismatch" not in out
    src = SQLiteStore(Path(str(source["path"])), dimension=embedder.dimension)
    with MemoryBank(PostgresStore(postgres_db_url, dimension=embedder.dimension), embedder) as pg:
        assert pg.count("alice") == len(FACTS)
        assert pg.count("bob", project_id="apollo", scopes="project") == 6
        hits = pg.search("alice", "does the user prefer Rust for projects?")
        assert hits[0].memory.content == "User prefers Rust for all their projects"
        ids = list(source["ids"])  # type: ignore[call-overload]
        kinds = [e.kind.value for e in pg.history(ids[0], "alice")]
        assert kinds == ["ADD", "UPDATE"]
        assert [e.kind.value for e in pg.history(ids[1], "alice")] == ["DELETE"]
        # vectors copied bit for bit, not re-embedded
        everyone = [m.id for batch in src.iter_memories() for m in batch]
        theirs, ours = src.vectors_of(everyone), pg.store.vectors_of(everyone)
        assert set(theirs) == set(ours) and len(ours) == TOTAL
        assert all(np.array_equal(theirs[i], ours[i]) for i in everyone)
        turn = pg.list("alice", ring="episodic")[0]
        assert turn.metadata == {"z": 1, "a": [1, 2]}
        accounts = Accounts.open(pg, Settings(url=postgres_db_url, master_key=MASTER))
        user = accounts.authenticate(str(source["key"]))
        assert user is not None and user.id == "alice"
        assert [k.revoked_at is not None for k in accounts.keys("bob")] == [True]
        assert accounts.role("apollo", "bob") == "member"
        assert accounts.orgs("alice") == [("acme", "admin")]
        assert accounts.project("apollo").org_id == "acme"  # type: ignore[union-attr]
        thread = accounts.threads("alice")[0]
        assert (thread.title, thread.project_id, thread.memory_enabled) == (
            "Plans",
            "apollo",
            False,
        )
        provider = accounts.provider("alice", "llm")
        assert provider is not None and accounts.provider_secret(provider) == "sk-secret-1234"
    src.close()
    # a second run copies nothing and verifies again
    code, out = _run("--from", str(source["url"]), "--to", postgres_db_url, "--json")
    assert code == 0, out
    assert '"ok": true' in out and '"copied": 1' not in out


def test_interrupted_migration_resumes_without_duplicates(
    source: dict[str, object], postgres_db_url: str
) -> None:
    class Stop(Exception):
        pass

    def interrupt(table: str, done: int, total: int) -> None:
        if table == "memories" and done >= 6:
            raise Stop

    with pytest.raises(Stop):
        migrate(str(source["url"]), postgres_db_url, batch_size=3, progress=interrupt)
    # whole batches landed: users and the first two batches of memories, no history yet
    assert _pg_rows(postgres_db_url, "SELECT count(*) FROM memories") == [(6,)]
    assert _pg_rows(postgres_db_url, "SELECT count(*) FROM history") == [(0,)]
    assert _pg_rows(postgres_db_url, "SELECT count(*) FROM users") == [(2,)]

    report = migrate(str(source["url"]), postgres_db_url, batch_size=3)
    assert report.ok
    by_name = {t.name: t for t in report.tables}
    assert by_name["memories"].copied == by_name["memories"].source_rows - 6
    assert by_name["users"].copied == 0
    assert _pg_rows(postgres_db_url, "SELECT count(*), count(DISTINCT id) FROM memories") == [
        (TOTAL, TOTAL)
    ]


def test_verification_catches_a_changed_copy(
    source: dict[str, object], postgres_db_url: str
) -> None:
    assert migrate(str(source["url"]), postgres_db_url).ok
    with psycopg.connect(postgres_db_url) as conn:
        conn.execute(
            "UPDATE memories SET content = 'User prefers Java' WHERE id = "
            "(SELECT min(id) FROM memories)"
        )
    code, out = _run("--from", str(source["url"]), "--to", postgres_db_url)
    assert code == 1
    assert "mismatch" in out and "Verification FAILED for memories" in out


def test_migration_refuses_another_embedding_model(
    source: dict[str, object], postgres_db_url: str, embedder: LocalEmbedder
) -> None:
    PostgresStore(postgres_db_url, dimension=embedder.dimension).close()
    with psycopg.connect(postgres_db_url) as conn:
        conn.execute("INSERT INTO meta VALUES ('embedding_model', 'other-model')")
    code, out = _run("--from", str(source["url"]), "--to", postgres_db_url)
    assert code == 1 and "other-model" in out
    assert _pg_rows(postgres_db_url, "SELECT count(*) FROM memories") == [(0,)]


def test_migrate_back_from_postgres_to_sqlite(
    source: dict[str, object], postgres_db_url: str, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    assert migrate(str(source["url"]), postgres_db_url).ok
    back = tmp_path / "back.db"
    code, out = _run("--from", postgres_db_url, "--to", f"sqlite:///{back}")
    assert code == 0, out
    with MemoryBank(SQLiteStore(back, dimension=embedder.dimension), embedder) as bank:
        # the full-text index was filled too: a word-only query finds the memory
        found = bank.store.text_search(
            ScopeSet(user_id="alice"), "cello orchestra", 3, MemoryFilter()
        )
        assert found and "cello" in found[0].memory.content
        assert bank.search("alice", "pets at home")[0].memory.content.startswith("User has two")


def test_migrate_bad_input(tmp_path: Path) -> None:
    code, out = _run("--from", f"sqlite:///{tmp_path / 'none.db'}", "--to", "sqlite:///x.db")
    assert code == 1 and "no SQLite database" in out
    code, out = _run("--from", "mysql://x", "--to", "sqlite:///x.db")
    assert code == 1 and "unsupported database URL" in out
