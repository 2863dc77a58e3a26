"""How the SQLite store's in-process vector matrices (:mod:`.vector_index`) follow writes.

Every write transaction bumps the revision of each scope it touches (``scope_revisions``) and
logs which rows' vectors it changed (``vector_changes``, migration 4). The writing process
applies its own changes to its cached matrices once the transaction commits; another process
whose cached matrix is a few revisions behind patches it from the log
(:meth:`VectorSync.changed_since`) instead of reading the whole scope again.
:class:`SQLiteTxn` is the SQLite store's transaction, which carries that book-keeping.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import apsw
import apsw.ext
import numpy as np

from memorybank.providers.embedders.base import Vectors
from memorybank.stores.sql import Transaction
from memorybank.stores.vector_index import ScopeMatrix, VectorCache

log = logging.getLogger("memorybank.stores")

#: How many of a scope's newest revisions keep their vector changes logged: a process whose
#: cached matrix is fewer revisions behind patches it, one further behind reads it again.
VECTOR_LOG_REVISIONS = 1000
# Logged row ids that are no row: a change the log does not itemise (a reindex; readers
# reload), and a revision that changed no vector (logged so every revision has an entry, and
# a reader can tell a complete log from one pruned past its matrix).
_WHOLE_SCOPE = -1
_NO_VECTOR = 0
# A transaction changing more vectors of a scope than this (a bulk import) logs _WHOLE_SCOPE:
# reading that many rows one by one is no cheaper than reading the scope.
_LOG_MAX_ROWS = 1000

#: A change to a cached matrix; ``None``: one that can't be patched (reload the scope).
Change = Callable[[ScopeMatrix], None] | None


class VectorSync:
    """Book-keeping of one write transaction: the scopes it touched and how, so the vector
    cache can follow once the transaction commits."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.scopes: dict[str, tuple[int, int, list[Change]]] = {}
        #: Rows this transaction added whose duplicate check ran, by scope (row id, vector).
        self.pending: dict[str, list[tuple[int, Vectors]]] = {}
        self.changed_rows: dict[str, set[int]] = {}

    def touch(self, key: str, change: Change, row_ids: Sequence[int]) -> None:
        """Bump the scope's revision once per transaction and queue ``change`` to the rows
        ``row_ids`` (``None``: the cached matrix can't be patched and must be reloaded)."""
        if key not in self.scopes:
            (new_rev,) = next(
                self.conn.execute(
                    "INSERT INTO scope_revisions VALUES (?, 1) ON CONFLICT (scope_key) "
                    "DO UPDATE SET rev = rev + 1 RETURNING rev",
                    (key,),
                )
            )
            self.scopes[key] = (int(new_rev) - 1, int(new_rev), [])
        self.scopes[key][2].append(change)
        rows = self.changed_rows.setdefault(key, set())
        rows.update([_WHOLE_SCOPE] if change is None else row_ids)

    def log_vector_changes(self, keep: int) -> None:
        """Record which rows' vectors this transaction changed in each scope, and forget
        what is older than the scope's newest ``keep`` revisions."""
        for key, rows in self.changed_rows.items():
            new_rev = self.scopes[key][1]
            if len(rows) > _LOG_MAX_ROWS:
                rows = {_WHOLE_SCOPE}
            self.conn.executemany(
                "INSERT OR IGNORE INTO vector_changes VALUES (?, ?, ?)",
                [(key, new_rev, row) for row in sorted(rows or {_NO_VECTOR})],
            )
            self.conn.execute(
                "DELETE FROM vector_changes WHERE scope_key = ? AND rev <= ?",
                (key, new_rev - keep),
            )

    def committed(self, cache: VectorCache) -> None:
        """Apply the committed changes to the cached matrices (or drop those they can't)."""
        for key, (old_rev, new_rev, changes) in self.scopes.items():
            if any(change is None for change in changes):
                cache.drop(key)
            else:
                cache.apply(key, old_rev, new_rev, _chain(changes))

    def rolled_back(self, cache: VectorCache) -> None:
        """Drop the touched scopes' matrices: one (re)loaded inside the rolled-back
        transaction may hold its rows."""
        for key in self.scopes:
            cache.drop(key)

    @staticmethod
    def revisions(conn: apsw.Connection, keys: Sequence[str]) -> dict[str, int]:
        """The current revision of each scope (0: never written)."""
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        revs = dict.fromkeys(keys, 0)
        for key, rev in conn.execute(
            f"SELECT scope_key, rev FROM scope_revisions WHERE scope_key IN ({marks})", keys
        ):
            revs[key] = rev
        return revs

    @staticmethod
    def changed_since(
        conn: apsw.Connection, key: str, old_rev: int, rev: int, keep: int
    ) -> list[int] | None:
        """The rows whose vectors changed in scope ``key`` after ``old_rev`` up to ``rev``,
        sorted; ``None`` when the log can't say (more than ``keep`` revisions apart, pruned,
        or a change it does not itemise)."""
        if rev - old_rev > keep:
            return None
        logged = list(
            conn.execute(
                "SELECT rev, row_id FROM vector_changes "
                "WHERE scope_key = ? AND rev > ? AND rev <= ?",
                (key, old_rev, rev),
            )
        )
        if len({r[0] for r in logged}) != rev - old_rev:
            return None  # pruned (or written by a version that kept no log)
        changed = sorted({int(r[1]) for r in logged} - {_NO_VECTOR})
        return None if _WHOLE_SCOPE in changed else changed


class SQLiteTxn(Transaction, VectorSync):
    """A transaction on one apsw connection (:attr:`conn`, for SQLite's own statements), with
    the book-keeping by which a write keeps the vector cache in step (:class:`VectorSync`)."""

    def __init__(self, conn: apsw.Connection) -> None:
        VectorSync.__init__(self, conn)

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return fetch_rows(self.conn, sql, params)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.conn.execute(sql, params)
        return int(self.conn.changes())

    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)


def fetch_rows(
    conn: apsw.Connection, sql: str, params: Sequence[Any] = ()
) -> list[tuple[Any, ...]]:
    """Every row of one query, even where a text column holds bytes that are not UTF-8 (a
    row written by hand): apsw cannot read those as text, which failed the whole query and
    with it every read of the row's scope. Such a query is read again with each text value
    as bytes, decoded with U+FFFD in place of what is not UTF-8."""
    try:
        return list(conn.execute(sql, params))
    except UnicodeDecodeError:
        if not sql.lstrip()[:6].upper().startswith(("SELECT", "WITH")):
            raise
    count = len(apsw.ext.query_info(conn, sql, params).description or ())
    names = [f"c{i}" for i in range(count)]
    pairs = ", ".join(
        f"typeof({n}) = 'text', CASE WHEN typeof({n}) = 'text' THEN CAST({n} AS BLOB) ELSE {n} END"
        for n in names
    )
    # The query's own ORDER BY holds: SQLite reads a single-use CTE in its order.
    wrapped = f"WITH q({', '.join(names)}) AS ({sql}) SELECT {pairs} FROM q"
    rows = [
        tuple(
            raw[2 * i + 1].decode("utf-8", "replace") if raw[2 * i] else raw[2 * i + 1]
            for i in range(count)
        )
        for raw in conn.execute(wrapped, params)
    ]
    log.warning("a query met stored text that is not UTF-8: read with U+FFFD in its place")
    return rows


def added(rowid: int, row: Vectors) -> Change:
    """The change that puts vector ``row`` (shape 1 × d) at ``rowid``."""
    ids = np.array([rowid], dtype=np.int64)
    return functools.partial(ScopeMatrix.add, row_ids=ids, vectors=row)


def removed(rowids: Sequence[int]) -> Change:
    """The change that drops ``rowids``."""
    return functools.partial(ScopeMatrix.remove, row_ids=np.array(rowids, dtype=np.int64))


def unchanged(matrix: ScopeMatrix) -> None:
    """The change of a write that kept the scope's vectors as they were."""


def _chain(changes: Sequence[Change]) -> Callable[[ScopeMatrix], None]:
    def apply(matrix: ScopeMatrix) -> None:
        for change in changes:
            if change is not None:
                change(matrix)

    return apply


__all__ = [
    "VECTOR_LOG_REVISIONS",
    "Change",
    "SQLiteTxn",
    "VectorSync",
    "added",
    "fetch_rows",
    "removed",
    "unchanged",
]
