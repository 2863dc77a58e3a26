"""Copy a whole memorybank database to another backend (``memorybank migrate``).

Copied: every memory with its stored vector (nothing is re-embedded, so the two databases must
use the same embedding model), every history event (tombstones included), forget plans, and
the accounts: users, orgs, projects, members, API keys (hashes), threads and provider settings
(keys still encrypted under the same master key).

Resumable: memories are read in insertion order and a memory whose id is already in the
destination is skipped; every other table is copied with ``ON CONFLICT DO NOTHING`` on its
key. Each batch is one transaction in the destination, so an interrupted run leaves whole
batches behind and running it again continues without duplicates.

Verified: at the end each table's row count and an order-independent checksum of its content
(every column; for memories also the vector's float32 bytes) are compared between source and
destination. The source should not change while it is copied (stop the writers first).

>>> report = migrate("sqlite:///old.db", "postgresql://db/memorybank")  # doctest: +SKIP
>>> report.ok  # doctest: +SKIP
True
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memorybank.errors import ConfigurationError, EmbeddingModelMismatch, StoreError
from memorybank.model import Memory
from memorybank.settings import Settings
from memorybank.stores.accounts_sql import SqlAccountStore, sql_accounts
from memorybank.stores.base import Store

#: ``progress(table, rows done, rows in the source)``, called after every batch.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class _Table:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    bools: frozenset[str] = frozenset()
    blobs: frozenset[str] = frozenset()


def _table(name: str, columns: str, key: str, **kinds: frozenset[str]) -> _Table:
    cols = tuple(c.strip() for c in columns.split(","))
    return _Table(name, cols, tuple(k.strip() for k in key.split(",")), **kinds)


# In foreign-key order; memories are copied between the two groups.
_ACCOUNT_TABLES = (
    _table("users", "id, name, created_us", "id"),
    _table("projects", "id, name, org_id, created_us", "id"),
    _table("project_members", "project_id, user_id, role, added_us", "project_id, user_id"),
    _table("api_keys", "id, user_id, key_hash, label, created_us, revoked_us, last_used_us", "id"),
    _table("org_members", "org_id, user_id, added_us, role", "org_id, user_id"),
    _table(
        "threads",
        "id, user_id, project_id, title, memory_enabled, created_us, updated_us",
        "id",
        bools=frozenset({"memory_enabled"}),
    ),
    _table(
        "provider_settings",
        "user_id, kind, base_url, model, key_ciphertext, key_hint, enabled, updated_us",
        "user_id, kind",
        bools=frozenset({"enabled"}),
        blobs=frozenset({"key_ciphertext"}),
    ),
)
_MEMORY_TABLES = (
    _table(
        "history",
        "id, memory_id, user_id, project_id, scope_key, kind, old_content, new_content, actor, "
        "created_us, channel, memory_created_us",
        "id",
    ),
    _table(
        "forget_plans",
        "id, user_id, project_id, steps, status, created_us, expires_us, finished_us",
        "id",
    ),
    # Pending deliveries carry on in the new database; its events are numbered anew, so its
    # webhook worker starts from its newest event (no cursor is copied).
    _table(
        "webhooks",
        "id, org_id, project_id, created_by, url, secret, event_types, active, created_us",
        "id",
        bools=frozenset({"active"}),
    ),
    _table(
        "webhook_deliveries",
        "id, webhook_id, event_id, event_type, body, status, attempts, next_attempt_us, "
        "last_status, last_error, created_us, done_us",
        "id",
    ),
)
# Not usage_counters: the new database counts its own use from the first search in it, which
# a second run's verification would otherwise see as a difference.
_META_KEYS = ("embedding_model", "embedding_dimension")


@dataclass
class TableReport:
    """One table's outcome: rows in each database, rows this run copied, checksums."""

    name: str
    source_rows: int = 0
    copied: int = 0
    destination_rows: int = 0
    source_checksum: str = ""
    destination_checksum: str = ""

    @property
    def ok(self) -> bool:
        """Whether the destination holds exactly the source's rows."""
        return (
            self.source_rows == self.destination_rows
            and self.source_checksum == self.destination_checksum
        )


@dataclass
class MigrationReport:
    """What :func:`migrate` did, table by table, and whether the copy verified."""

    source: str
    destination: str
    tables: list[TableReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every table's count and checksum match."""
        return all(t.ok for t in self.tables)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "tables": [{**t.__dict__, "ok": t.ok} for t in self.tables],
        }


class _Checksum:
    """Sum of SHA-256 digests modulo 2**256: equal for equal multisets of rows, whatever the
    order they are read in."""

    def __init__(self) -> None:
        self.total = 0

    def add(self, data: bytes) -> None:
        digest = hashlib.sha256(data).digest()
        self.total = (self.total + int.from_bytes(digest, "big")) % (1 << 256)

    def hex(self) -> str:
        return f"{self.total:064x}"[:32]


# -- plain tables -------------------------------------------------------------------------------


def _canonical(table: _Table, row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row as both backends bind it: booleans as bool (SQLite reads 0/1), blobs as bytes."""
    out: list[Any] = []
    for column, value in zip(table.columns, row, strict=True):
        if value is not None and column in table.bools:
            value = bool(value)
        elif value is not None and column in table.blobs:
            value = bytes(value)
        out.append(value)
    return tuple(out)


def _pages(db: SqlAccountStore, table: _Table, batch: int) -> Iterator[list[tuple[Any, ...]]]:
    """The table's rows in key order, a page at a time (keyset pagination)."""
    cols = ", ".join(table.columns)
    keys = ", ".join(table.key)
    positions = [table.columns.index(k) for k in table.key]
    after: tuple[Any, ...] | None = None
    while True:
        where = ""
        params: tuple[Any, ...] = (batch,)
        if after is not None:
            where = f"WHERE ({keys}) > ({', '.join('?' for _ in table.key)}) "
            params = (*after, batch)
        rows = db.fetch(f"SELECT {cols} FROM {table.name} {where}ORDER BY {keys} LIMIT ?", params)
        if not rows:
            return
        yield [_canonical(table, r) for r in rows]
        after = tuple(rows[-1][i] for i in positions)


def _count(db: SqlAccountStore, name: str) -> int:
    return int(db.fetch(f"SELECT count(*) FROM {name}")[0][0])


def _table_checksum(db: SqlAccountStore, table: _Table, batch: int) -> str:
    checksum = _Checksum()
    for rows in _pages(db, table, batch):
        for row in rows:
            values = [v.hex() if isinstance(v, bytes) else v for v in row]
            checksum.add(json.dumps(values, ensure_ascii=False).encode())
    return checksum.hex()


def _copy_table(
    src: SqlAccountStore, dst: SqlAccountStore, table: _Table, batch: int, progress: Progress
) -> TableReport:
    report = TableReport(table.name, source_rows=_count(src, table.name))
    before = _count(dst, table.name)
    sql = (
        f"INSERT INTO {table.name} ({', '.join(table.columns)}) "
        f"VALUES ({', '.join('?' for _ in table.columns)}) "
        f"ON CONFLICT ({', '.join(table.key)}) DO NOTHING"
    )
    done = 0
    progress(table.name, 0, report.source_rows)
    for rows in _pages(src, table, batch):
        dst.execute_many(sql, rows)
        done += len(rows)
        progress(table.name, done, report.source_rows)
    report.destination_rows = _count(dst, table.name)
    report.copied = report.destination_rows - before
    report.source_checksum = _table_checksum(src, table, batch)
    report.destination_checksum = _table_checksum(dst, table, batch)
    return report


# -- memories -----------------------------------------------------------------------------------


def _with_vectors(store: Store, memories: list[Memory]) -> np.ndarray[Any, np.dtype[np.float32]]:
    vectors = store.vectors_of([m.id for m in memories])
    missing = [m.id for m in memories if m.id not in vectors]
    if missing:
        raise StoreError(
            f"memory {missing[0]} changed while it was copied: stop every writer of the source "
            "and run the migration again (it continues where it stopped)"
        )
    return np.stack([np.asarray(vectors[m.id], dtype=np.float32) for m in memories])


def _memory_checksum(store: Store, batch: int) -> str:
    checksum = _Checksum()
    for memories in store.iter_memories(batch):
        matrix = _with_vectors(store, memories)
        for memory, vector in zip(memories, matrix, strict=True):
            # When it was last recalled is a ranking signal a search on either side may move
            # (memorybank.core.reinforcement), not content the copy must keep equal.
            shown = memory.model_dump(mode="json", exclude={"reinforced_at"})
            text = json.dumps(shown, sort_keys=True, ensure_ascii=False)
            checksum.add(text.encode() + b"\0" + vector.tobytes())
    return checksum.hex()


def _copy_memories(
    src: Store,
    dst: Store,
    counts: tuple[SqlAccountStore, SqlAccountStore],
    batch: int,
    progress: Progress,
) -> TableReport:
    report = TableReport("memories", source_rows=_count(counts[0], "memories"))
    before = _count(counts[1], "memories")
    done = 0
    progress("memories", 0, report.source_rows)
    for memories in src.iter_memories(batch):
        present = dst.existing_ids([m.id for m in memories])
        todo = [m for m in memories if m.id not in present]
        if todo:
            dst.insert(
                todo,
                _with_vectors(src, todo),
                dedup=[False] * len(todo),
                actor=None,
                record=False,
            )
        done += len(memories)
        progress("memories", done, report.source_rows)
    report.destination_rows = _count(counts[1], "memories")
    report.copied = report.destination_rows - before
    report.source_checksum = _memory_checksum(src, batch)
    report.destination_checksum = _memory_checksum(dst, batch)
    return report


# -- the whole database -------------------------------------------------------------------------


def stored_dimension(url: str) -> int:
    """The vector length a database was made for, read without opening it as a store."""
    settings = Settings(url=url)
    target = settings.database_url()
    if target.startswith("sqlite:///"):
        import apsw

        path = settings.sqlite_path()
        if not path.is_file():
            raise ConfigurationError(f"no SQLite database at {path}: check the sqlite:/// URL")
        try:
            conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
            rows = list(conn.execute("SELECT value FROM meta WHERE key = 'embedding_dimension'"))
            conn.close()
        except apsw.Error as exc:
            raise ConfigurationError(f"{path} is not a memorybank database: {exc}") from exc
        value = rows[0][0] if rows else None
    elif target.startswith(("postgresql://", "postgres://")):
        import psycopg

        try:
            with psycopg.connect(target, connect_timeout=30) as pg:
                row = pg.execute("SELECT value FROM meta WHERE key = 'vector_dimension'").fetchone()
        except psycopg.errors.UndefinedTable:
            row = None
        except psycopg.Error as exc:
            raise StoreError(f"cannot read the source database: {exc}") from exc
        value = None if row is None else row[0]
    else:
        raise ConfigurationError(
            f"unsupported database URL {target!r}: use sqlite:///path/to/file.db "
            "or postgresql://user:password@host/dbname"
        )
    if value is None:
        raise ConfigurationError(f"{url} is not a memorybank database (it records no vectors)")
    return int(value)


def _check_models(src: Store, dst: Store) -> None:
    stored = src.get_meta("embedding_model")
    existing = dst.get_meta("embedding_model")
    if stored is not None and existing is not None and stored != existing:
        # Vectors are copied, not recomputed: a destination of another model cannot take them.
        raise EmbeddingModelMismatch(existing, stored)
    for key in _META_KEYS:
        value = src.get_meta(key)
        if value is not None:
            dst.set_meta(key, value)


def migrate(
    source: str,
    destination: str,
    *,
    batch_size: int = 500,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy everything from the database at ``source`` to the one at ``destination`` (URLs),
    resuming a previous run, and verify the result; see the module documentation."""
    from memorybank.factory import build_store

    if batch_size < 1:
        raise ConfigurationError("batch size must be at least 1")
    if Settings(url=source).database_url() == Settings(url=destination).database_url():
        raise ConfigurationError("the source and the destination are the same database")
    dimension = stored_dimension(source)
    report = MigrationReport(source, destination)
    started = time.perf_counter()
    src = build_store(Settings(url=source), dimension)
    try:
        dst = build_store(Settings(url=destination), dimension)
        try:
            _check_models(src, dst)
            _copy_all(src, dst, report, batch_size, progress or (lambda *_: None))
        finally:
            dst.close()
    finally:
        src.close()
    report.seconds = time.perf_counter() - started
    return report


def _copy_all(
    src: Store, dst: Store, report: MigrationReport, batch: int, progress: Progress
) -> None:
    src_sql, dst_sql = sql_accounts(src), sql_accounts(dst)
    for table in _ACCOUNT_TABLES:
        report.tables.append(_copy_table(src_sql, dst_sql, table, batch, progress))
    report.tables.append(_copy_memories(src, dst, (src_sql, dst_sql), batch, progress))
    for table in _MEMORY_TABLES:
        report.tables.append(_copy_table(src_sql, dst_sql, table, batch, progress))


__all__ = ["MigrationReport", "Progress", "TableReport", "migrate", "stored_dimension"]
