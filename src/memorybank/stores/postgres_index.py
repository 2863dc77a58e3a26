"""The PostgreSQL store's :class:`~memorybank.stores.search_index.SearchIndex`: each memory's
``vector(dim)`` column (HNSW index, ``vector_cosine_ops``) and its generated ``tsvector``
column ``body`` (english configuration, GIN index), both on the ``memories`` row, so the
database keeps them with the row and every search is one scoped query.

Vector search compares every row of scopes holding at most :data:`EXACT_SCAN_MAX` memories
(exact, through the scope index) and walks the HNSW index for larger ones, with
``hnsw.iterative_scan = strict_order`` (set on each connection by the store) so scope and
filter conditions do not starve it of rows. Text search ORs the query's content words
(:func:`memorybank.rules.query.query_terms`) into a ``to_tsquery`` and ranks with
``ts_rank_cd`` (≥ 0), as the SQLite index ORs them into an FTS5 query ranked by BM25.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from memorybank.model import Memory, MemoryFilter
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.query import query_terms
from memorybank.stores.postgres_txn import PostgresTxn
from memorybank.stores.search_index import SearchIndex
from memorybank.stores.sql import POSTGRES, memory_values

_INSERT_MEMORY = POSTGRES.insert_memory(embedding="?::vector")
_row_to_memory = POSTGRES.memory

#: Vector searches over scopes holding at most this many memories compare every row exactly
#: instead of walking the HNSW index (see :meth:`PostgresIndex.vector_candidates`).
EXACT_SCAN_MAX = 20_000
#: Seconds a scope's size class (small or not) is trusted before it is counted again.
SCOPE_SIZE_TTL = 60.0

_TERM_UNSAFE = re.compile(r"[\\'\s]")


def vector_literal(vector: Vectors) -> str:
    """A vector as pgvector's text form, ``[0.1,0.2,…]``."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector).reshape(-1)) + "]"


def _tsquery(terms: Sequence[str]) -> str:
    """``'w1' | 'w2' | …`` for ``to_tsquery``: each word quoted, so no operator gets through."""
    quoted = ["'" + _TERM_UNSAFE.sub("", term) + "'" for term in terms]
    return " | ".join(q for q in quoted if q != "''")


class PostgresIndex(SearchIndex[PostgresTxn]):
    """Vectors and full text of a PostgreSQL store (see the module documentation).
    Scopes of at most ``exact_scan_max`` memories are searched exactly."""

    # The text index follows the row by itself (a generated column): no text to read first.
    delete_columns = "rid, id, user_id, project_id"

    def __init__(self, exact_scan_max: int = EXACT_SCAN_MAX) -> None:
        self.exact_scan_max = exact_scan_max
        self._scope_sizes: dict[tuple[str, ...], tuple[bool, float]] = {}

    # -- writes -----------------------------------------------------------------------------

    def bind(self, vector: Vectors) -> str:
        """The vector's pgvector literal (made once per new memory)."""
        return vector_literal(vector)

    def lookalikes(
        self, txn: PostgresTxn, memory: Memory, vector: Vectors, bound: Any, floor: float, k: int
    ) -> list[tuple[Memory, float]]:
        """Up to ``k`` checked memories of the scope at least ``floor`` similar, nearest first."""
        near = self._near(txn, memory.scope.key, bound, k)
        return [(found, sim) for found, sim in near if sim >= floor]

    def _near(self, txn: PostgresTxn, key: str, literal: str, k: int) -> list[tuple[Memory, float]]:
        """The ``k`` stored memories of scope ``key`` nearest to the vector: only memories
        that were themselves checked for duplicates count (a fact is no duplicate of a chat
        turn). Rows this insert stored count as they were checked or not, whatever their kind."""
        rows = txn.fetch(
            f"SELECT {POSTGRES.m_columns}, 1 - (m.embedding <=> ?::vector) FROM memories m "
            "WHERE m.scope_key = ? AND m.id <> ALL(?::text[]) "
            "AND (NOT (m.ring = 'episodic' AND m.source = 'conversation') "
            "     OR m.id = ANY(?::text[])) "
            "ORDER BY m.embedding <=> ?::vector LIMIT ?",
            (literal, key, txn.unchecked, txn.checked, literal, k),
        )
        return [(_row_to_memory(row), float(row[22])) for row in rows]

    def add(
        self, txn: PostgresTxn, memory: Memory, vector: Vectors, bound: Any, checked: bool
    ) -> None:
        """Insert the memory's row with its vector (the text column is generated)."""
        txn.execute(_INSERT_MEMORY, [*memory_values(memory), bound])
        (txn.checked if checked else txn.unchecked).append(memory.id)

    def replaced(
        self, txn: PostgresTxn, row: Sequence[Any], memory: Memory, vector: Vectors | None
    ) -> None:
        """Store the new vector, if any (the text column followed the row by itself)."""
        if vector is not None:
            txn.execute(
                "UPDATE memories SET embedding = ?::vector WHERE rid = ?",
                (vector_literal(vector), int(row[0])),
            )

    def remove(self, txn: PostgresTxn, rows: Sequence[Sequence[Any]]) -> None:
        """Delete the rows; their vectors and text go with them."""
        txn.execute("DELETE FROM memories WHERE rid = ANY(?)", ([int(r[0]) for r in rows],))

    def set_vectors(
        self, txn: PostgresTxn, memory_ids: Sequence[str], vectors: Vectors, model_id: str
    ) -> None:
        """Replace stored vectors (reindex)."""
        for memory_id, vector in zip(memory_ids, vectors, strict=True):
            txn.execute(
                "UPDATE memories SET embedding = ?::vector, embedding_model = ? WHERE id = ?",
                (vector_literal(vector), model_id, memory_id),
            )

    # -- reads ------------------------------------------------------------------------------

    def vectors_of(self, txn: PostgresTxn, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories, by id."""
        rows = txn.fetch(
            "SELECT id, embedding::text FROM memories WHERE id = ANY(?::text[])",
            (list(memory_ids),),
        )
        return {str(r[0]): np.array(json.loads(r[1]), dtype=np.float32).reshape(-1) for r in rows}

    def _scope_is_small(self, txn: PostgresTxn, keys: Sequence[str]) -> bool:
        """Whether the scopes hold at most :attr:`exact_scan_max` memories, counted at most
        once a minute per process: scope sizes move slowly, and a scope just past the limit
        is served well enough either way for that long."""
        now = time.monotonic()
        cache_key = tuple(keys)
        cached = self._scope_sizes.get(cache_key)
        if cached is not None and now - cached[1] < SCOPE_SIZE_TTL:
            return cached[0]
        limit = self.exact_scan_max + 1
        counted = txn.one(
            "SELECT count(*) FROM (SELECT 1 FROM memories WHERE scope_key = ANY(?::text[]) "
            "LIMIT ?) AS s",
            [list(keys), limit],
        )
        small = counted is not None and int(counted[0]) < limit
        if len(self._scope_sizes) >= 10_000:  # bounded: forget them all now and then
            self._scope_sizes.clear()
        self._scope_sizes[cache_key] = (small, now)
        return small

    def vector_candidates(
        self, txn: PostgresTxn, keys: Sequence[str], query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` nearest memories of the scopes: exact in small scopes, HNSW in large."""
        literal = vector_literal(query)
        where, params = POSTGRES.filter_sql(filters)
        # Scopes are small next to the table (a user's 10,000 memories among 1,000,000), and
        # an HNSW graph of the whole table filtered to 1 % of it finds 0.74 of the exact top 10
        # in 70 ms; reading the scope's rows through the scope index and comparing them all
        # finds every one in 15 ms. So small scopes are searched exactly ("+ 0" keeps the
        # planner off the HNSW index) and the index serves scopes too large to read whole.
        if self._scope_is_small(txn, keys):
            # Rank by (rid, distance) alone, each distance computed once, then read the k
            # winners' rows: sorting whole rows of the scope took twice as long.
            sql = (
                "WITH best AS ("
                "  SELECT m.rid, (m.embedding <=> ?::vector) + 0 AS distance FROM memories m"
                f"  WHERE m.scope_key = ANY(?::text[]) AND {where}"
                "  ORDER BY distance, m.rid LIMIT ?"
                f") SELECT {POSTGRES.m_columns}, 1 - best.distance FROM best "
                "JOIN memories m ON m.rid = best.rid ORDER BY best.distance, m.rid"
            )
            args = [literal, list(keys), *params, k]
        else:
            sql = (
                f"SELECT {POSTGRES.m_columns}, 1 - (m.embedding <=> ?::vector) FROM memories m "
                f"WHERE m.scope_key = ANY(?::text[]) AND {where} "
                "ORDER BY m.embedding <=> ?::vector, m.rid LIMIT ?"
            )
            args = [literal, list(keys), *params, literal, k]
        return _candidates(txn.fetch(sql, args))

    def text_candidates(
        self, txn: PostgresTxn, keys: Sequence[str], query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best ``ts_rank_cd`` matches of ``query`` (any of its content words)."""
        tsquery = _tsquery(query_terms(query))
        if not tsquery:
            return []
        where, params = POSTGRES.filter_sql(filters)
        # One equality per scope (not "= ANY"): only equalities reach the (scope_key, body) GIN
        # index as conditions, so other scopes' matches never leave the index.
        scoped = " OR ".join("m.scope_key = ?" for _ in keys)
        rows = txn.fetch(
            f"SELECT {POSTGRES.m_columns}, ts_rank_cd(m.body, q.q) AS score "
            "FROM memories m, to_tsquery('english', ?) AS q(q) "
            f"WHERE ({scoped}) AND m.body @@ q.q AND {where} "
            "ORDER BY score DESC, m.rid LIMIT ?",
            [tsquery, *keys, *params, k],
        )
        return _candidates(rows)


def _candidates(rows: Sequence[tuple[Any, ...]]) -> list[Candidate]:
    """Candidates of memory rows read with their score after the columns."""
    return [Candidate(r, float(r[22]), _row_to_memory, POSTGRES.speaker(r[9])) for r in rows]


__all__ = ["EXACT_SCAN_MAX", "SCOPE_SIZE_TTL", "PostgresIndex", "vector_literal"]
