"""The SQLite store's :class:`~memorybank.stores.search_index.SearchIndex`: vectors in the
``memory_vectors`` table, searched in-process over cached per-scope matrices
(:mod:`.vector_index`, kept in step with other processes' writes by :mod:`.sqlite_vectors`),
and full text in the contentless FTS5 table ``memories_fts`` ranked by BM25.

Scope in the full-text index is one token per scope (:func:`_scope_token`) that every match
must carry, and in the vector cache one matrix per scope, so neither reads another scope.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

import apsw
import numpy as np

from memorybank.model import Memory, MemoryFilter, Scope
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.query import query_terms
from memorybank.stores.rows import tags_of
from memorybank.stores.search_index import SearchIndex
from memorybank.stores.sql import SQLITE, chunks, memory_values
from memorybank.stores.sqlite_vectors import (
    VECTOR_LOG_REVISIONS,
    SQLiteTxn,
    VectorSync,
    added,
    fetch_rows,
    removed,
    unchanged,
)
from memorybank.stores.vector_index import RowIds, ScopeMatrix, VectorCache

# How many nearest vectors a duplicate check looks at; more than this many near-copies that
# are all chat turns is not a case worth a slower query.
_DEDUP_PROBE = 32
_INSERT_MEMORY = SQLITE.insert_memory()
_row_to_memory = SQLITE.memory


def _scope_token(scope_key: str) -> str:
    """A single alphanumeric FTS token standing for a scope (keys contain ':' and ids)."""
    return "s" + hashlib.blake2b(scope_key.encode(), digest_size=10).hexdigest()


def _marks(values: Sequence[Any]) -> str:
    """``?,?,…``: one placeholder per value."""
    return ",".join("?" * len(values))


class SQLiteIndex(SearchIndex[SQLiteTxn]):
    """Vectors and full text of a SQLite store (see the module documentation).

    ``vectors`` is the process's cache of scope matrices, at most ``cache_bytes`` large;
    ``vector_log_revisions`` how many revisions of each scope keep their vector changes logged.
    """

    # Deleting a row takes its text out of the contentless FTS index, which needs that text.
    delete_columns = SQLITE.columns

    def __init__(self, dimension: int, cache_bytes: int) -> None:
        self.dimension = dimension
        self.vectors = VectorCache(cache_bytes)
        self.vector_log_revisions = VECTOR_LOG_REVISIONS

    # -- the vector cache -------------------------------------------------------------------

    def _load_scope(self, conn: apsw.Connection, key: str, rev: int) -> ScopeMatrix:
        rows = list(
            conn.execute(
                "SELECT v.rowid, v.embedding FROM memories m JOIN memory_vectors v "
                "ON v.rowid = m.rowid WHERE m.scope_key = ?",
                (key,),
            )
        )
        return ScopeMatrix.loaded(self.dimension, rev, *self._decode_vectors(rows))

    def _decode_vectors(self, rows: Sequence[tuple[int, bytes]]) -> tuple[RowIds, Vectors]:
        """Row ids and the matrix of their stored vectors, from ``(rowid, embedding)`` rows."""
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return ids, vecs.reshape(len(rows), self.dimension)

    def _patch_scope(self, conn: apsw.Connection, key: str, matrix: ScopeMatrix, rev: int) -> bool:
        """Bring ``matrix`` (stale: another process wrote) to revision ``rev`` with the vector
        changes logged in between; False when the log can't (too far behind, or a change it
        does not itemise). Reads the whole scope's vectors only in that case: a user with
        10,000 memories is 15 MB, read again after every save made by another worker."""
        changed = VectorSync.changed_since(conn, key, matrix.rev, rev, self.vector_log_revisions)
        if changed is None:
            return False
        present: list[tuple[int, bytes]] = []
        for chunk in chunks(changed, 500):
            present += conn.execute(
                "SELECT v.rowid, v.embedding FROM memory_vectors v JOIN memories m "
                f"ON m.rowid = v.rowid WHERE m.scope_key = ? AND v.rowid IN ({_marks(chunk)})",
                [key, *chunk],
            )
        kept = {rowid for rowid, _ in present}
        matrix.remove(np.array([r for r in changed if r not in kept], dtype=np.int64))
        if present:
            matrix.add(*self._decode_vectors(present))
        return True

    def _fresh_matrix(self, conn: apsw.Connection, key: str, rev: int) -> ScopeMatrix:
        return self.vectors.fresh(
            key,
            rev,
            functools.partial(self._load_scope, conn, key, rev),
            functools.partial(self._patch_scope, conn, key),
        )

    def _matrices(self, conn: apsw.Connection, keys: Sequence[str]) -> list[ScopeMatrix]:
        revs = VectorSync.revisions(conn, keys)
        return [self._fresh_matrix(conn, key, rev) for key, rev in revs.items()]

    # -- writes -----------------------------------------------------------------------------

    def bind(self, vector: Vectors) -> Vectors:
        """The vector itself: the cache compares float32 arrays."""
        return vector

    def lookalikes(
        self, txn: SQLiteTxn, memory: Memory, vector: Vectors, bound: Any, floor: float, k: int
    ) -> list[tuple[Memory, float]]:
        """Up to ``k`` checked memories of the scope at least ``floor`` similar, nearest first."""
        near = self._near_in_txn(txn, memory.scope.key, vector, floor)[:k]
        if not near:
            return []
        rows = {
            int(r[-1]): _row_to_memory(r[:-1])
            for r in txn.fetch(
                f"SELECT {SQLITE.columns}, rowid FROM memories WHERE rowid IN ({_marks(near)})",
                [i for i, _ in near],
            )
        }
        return [(rows[i], sim) for i, sim in near if i in rows]

    def _near_in_txn(
        self, txn: SQLiteTxn, key: str, vector: Vectors, floor: float
    ) -> list[tuple[int, float]]:
        """Row ids and similarities of scope ``key``'s checked memories (this transaction's
        rows included) at least ``floor`` similar to ``vector``, nearest first."""
        # Within the transaction the cache stays at the revision the scope had before it;
        # rows this transaction added are in ``txn.pending``.
        if key in txn.scopes:
            rev = txn.scopes[key][0]
        else:
            rev = VectorSync.revisions(txn.conn, [key])[key]
        matrix = self._fresh_matrix(txn.conn, key, rev)
        ids, sims = matrix.search(vector, _DEDUP_PROBE)
        close = [(int(i), float(sim)) for i, sim in zip(ids, sims, strict=True) if sim >= floor]
        found: list[tuple[int, float]] = []
        if close:
            facts = {
                int(r[0])
                for r in txn.conn.execute(
                    f"SELECT rowid FROM memories WHERE rowid IN ({_marks(close)}) "
                    "AND NOT (ring = 'episodic' AND source = 'conversation')",
                    [i for i, _ in close],
                )
            }
            found = [(i, sim) for i, sim in close if i in facts]
        for rowid, pending in txn.pending.get(key, []):
            sim = float(pending @ vector)
            if sim >= floor:
                found.append((rowid, sim))
        return sorted(found, key=lambda pair: -pair[1])

    def add(
        self, txn: SQLiteTxn, memory: Memory, vector: Vectors, bound: Any, checked: bool
    ) -> None:
        """Insert the memory's row, its vector and its text entry."""
        conn, key = txn.conn, memory.scope.key
        conn.execute(_INSERT_MEMORY, memory_values(memory))
        rowid = int(conn.last_insert_rowid())
        conn.execute(
            "INSERT INTO memory_vectors (rowid, embedding) VALUES (?, ?)",
            (rowid, np.ascontiguousarray(vector, dtype=np.float32).tobytes()),
        )
        _fts_insert(conn, rowid, key, memory)
        row = vector.reshape(1, -1).copy()
        txn.touch(key, added(rowid, row), [rowid])
        if checked:
            txn.pending.setdefault(key, []).append((rowid, row[0]))

    def replaced(
        self, txn: SQLiteTxn, row: Sequence[Any], memory: Memory, vector: Vectors | None
    ) -> None:
        """Re-index the overwritten row's text, and its vector when one is given."""
        conn, rowid, key = txn.conn, int(row[0]), str(row[1])
        _fts_delete(conn, rowid, key, _body(row[2], tags_of(row[3], row[0])))
        _fts_insert(conn, rowid, key, memory)
        if vector is None:
            txn.touch(key, unchanged, [])
            return
        conn.execute(
            "UPDATE memory_vectors SET embedding = ? WHERE rowid = ?", (vector.tobytes(), rowid)
        )
        txn.touch(key, added(rowid, vector.reshape(1, -1).copy()), [rowid])

    def remove(self, txn: SQLiteTxn, rows: Sequence[Sequence[Any]]) -> None:
        """Delete the rows with their vectors and text entries."""
        conn = txn.conn
        by_scope: dict[str, list[int]] = {}
        for row in rows:
            rowid = int(row[0])
            key = Scope(user_id=row[2], project_id=row[3]).key
            _fts_delete(conn, rowid, key, _body(row[4], tags_of(row[8], row[1])))
            conn.execute("DELETE FROM memory_vectors WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
            by_scope.setdefault(key, []).append(rowid)
        for key, rowids in by_scope.items():
            txn.touch(key, removed(rowids), rowids)

    def set_vectors(
        self, txn: SQLiteTxn, memory_ids: Sequence[str], vectors: Vectors, model_id: str
    ) -> None:
        """Replace stored vectors (reindex); the touched scopes' matrices are reloaded."""
        touched: set[str] = set()
        for memory_id, vector in zip(memory_ids, vectors, strict=True):
            row = txn.one("SELECT rowid, scope_key FROM memories WHERE id = ?", (memory_id,))
            if row is None:
                continue
            txn.execute(
                "UPDATE memory_vectors SET embedding = ? WHERE rowid = ?",
                (vector.tobytes(), row[0]),
            )
            txn.execute(
                "UPDATE memories SET embedding_model = ? WHERE rowid = ?", (model_id, row[0])
            )
            touched.add(str(row[1]))
        for key in touched:
            txn.touch(key, None, [])

    # -- reads ------------------------------------------------------------------------------

    def vectors_of(self, txn: SQLiteTxn, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories, by id."""
        found: dict[str, Vectors] = {}
        for chunk in chunks(list(memory_ids), 500):
            rows = txn.fetch(
                "SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v "
                f"ON v.rowid = m.rowid WHERE m.id IN ({_marks(chunk)})",
                chunk,
            )
            found.update((str(r[0]), np.frombuffer(r[1], dtype=np.float32)) for r in rows)
        return found

    def vector_candidates(
        self, txn: SQLiteTxn, keys: Sequence[str], query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` nearest memories of the scopes, exactly (every cached row compared)."""
        return _candidates(txn.conn, self._vector_scored(txn.conn, keys, query, k, filters))

    def _vector_scored(
        self,
        conn: apsw.Connection,
        keys: Sequence[str],
        q: Vectors,
        k: int,
        filters: MemoryFilter,
    ) -> list[tuple[int, float]]:
        allowed, skipped = _vector_filter(conn, keys, filters)
        found: list[tuple[int, float]] = []
        for matrix in self._matrices(conn, keys):
            ids, sims = matrix.search(q, k + len(skipped), allowed)
            pairs = zip(ids.tolist(), sims.tolist(), strict=True)
            found += [(i, sim) for i, sim in pairs if i not in skipped]
        found.sort(key=lambda pair: -pair[1])
        return found[:k]

    def text_candidates(
        self, txn: SQLiteTxn, keys: Sequence[str], query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best BM25 matches of ``query`` (any of its content words)."""
        return _candidates(txn.conn, _text_scored(txn.conn, keys, query, k, filters))

    def both_candidates(
        self,
        txn: SQLiteTxn,
        keys: Sequence[str],
        vector: Vectors,
        query: str,
        k: int,
        filters: MemoryFilter,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both candidate lists from one snapshot, each row read and built once."""
        by_vector = self._vector_scored(txn.conn, keys, vector, k, filters)
        by_text = _text_scored(txn.conn, keys, query, k, filters)
        both = _candidates(txn.conn, [*by_vector, *by_text])
        return both[: len(by_vector)], both[len(by_vector) :]


def _vector_filter(
    conn: apsw.Connection, keys: Sequence[str], filters: MemoryFilter
) -> tuple[RowIds | None, set[int]]:
    """Rows a vector search may return, as an allow-list (``None``: all) and rows to skip.

    "Not superseded" alone is the common case (searches hide replaced memories) and
    superseded rows are few, so those are skipped instead of listing every current row.
    """
    if _only_current(filters):
        rows = conn.execute(
            "SELECT rowid FROM memories INDEXED BY memories_superseded "
            f"WHERE superseded_by IS NOT NULL AND scope_key IN ({_marks(keys)})",
            keys,
        )
        return None, {int(r[0]) for r in rows}
    return _allowed_rowids(conn, keys, filters), set()


def _allowed_rowids(
    conn: apsw.Connection, keys: Sequence[str], filters: MemoryFilter
) -> RowIds | None:
    if filters == MemoryFilter():
        return None
    where, params = SQLITE.filter_sql(filters)
    rows = conn.execute(
        f"SELECT m.rowid FROM memories m WHERE m.scope_key IN ({_marks(keys)}) AND {where}",
        [*keys, *params],
    )
    return np.fromiter((r[0] for r in rows), dtype=np.int64)


def _candidates(conn: apsw.Connection, scored: Sequence[tuple[int, float]]) -> list[Candidate]:
    if not scored:
        return []
    rowids = sorted({rowid for rowid, _ in scored})
    rows = fetch_rows(
        conn, f"SELECT {SQLITE.columns} FROM memories WHERE rowid IN ({_marks(rowids)})", rowids
    )
    by_rowid = {r[0]: r for r in rows}
    return [
        Candidate(row, score, _row_to_memory, SQLITE.speaker(row[9]))
        for rowid, score in scored
        if (row := by_rowid.get(rowid)) is not None
    ]


def _text_scored(
    conn: apsw.Connection,
    keys: Sequence[str],
    query: str,
    k: int,
    filters: MemoryFilter,
) -> list[tuple[int, float]]:
    terms = query_terms(query)
    if not terms:
        return []
    scope_expr = " OR ".join(f'scope : "{_scope_token(key)}"' for key in keys)
    body_expr = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
    match = f"({scope_expr}) AND body : ({body_expr})"
    # "Not superseded" alone (every default search) skips the few superseded rows after
    # ranking rather than joining every match with its row.
    only_current = _only_current(filters)
    where, params = SQLITE.filter_sql(MemoryFilter() if only_current else filters)
    join = "" if where == SQLITE.true else "JOIN memories m ON m.rowid = f.rowid"
    sql = (
        f"SELECT f.rowid, -bm25(memories_fts, 0.0, 1.0) AS score FROM memories_fts f {join} "
        f"WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC LIMIT ?"
    )
    skip = _vector_filter(conn, keys, filters)[1] if only_current else set()
    rows = conn.execute(sql, [match, *params, k + len(skip)])
    scored = [(int(r[0]), float(r[1])) for r in rows if int(r[0]) not in skip]
    return scored[:k]


def _only_current(filters: MemoryFilter) -> bool:
    """Whether ``filters`` asks for "not superseded" and nothing else."""
    return filters.superseded is False and (
        filters.model_copy(update={"superseded": None}) == MemoryFilter()
    )


def _body(content: str, tags: Sequence[str]) -> str:
    """The text a memory is indexed under: its content and tags."""
    return " ".join([content, *tags])


def _fts_insert(conn: apsw.Connection, rowid: int, scope_key: str, memory: Memory) -> None:
    conn.execute(
        "INSERT INTO memories_fts (rowid, scope, body) VALUES (?, ?, ?)",
        (rowid, _scope_token(scope_key), _body(memory.content, memory.tags)),
    )


def _fts_delete(conn: apsw.Connection, rowid: int, scope_key: str, body: str) -> None:
    """Remove a row from the contentless index; it needs the exact text that was indexed."""
    conn.execute(
        "INSERT INTO memories_fts (memories_fts, rowid, scope, body) VALUES ('delete', ?, ?, ?)",
        (rowid, _scope_token(scope_key), body),
    )


__all__ = ["SQLiteIndex"]
