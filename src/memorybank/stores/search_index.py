"""The seam between :class:`~memorybank.stores.sql_store.SqlStore` and the search a backend
does: the :class:`SearchIndex` protocol.

:class:`~memorybank.stores.sql_store.SqlStore` writes everything that is plain SQL once (rows,
history, events, forget plans, accounts) and asks its ``index`` for the rest: where vectors
and full text live, how they are searched, and how they follow the rows. Two implementations
exist, :class:`~memorybank.stores.sqlite_index.SQLiteIndex` (vectors in a table, searched
in-process over cached matrices; an FTS5 table) and
:class:`~memorybank.stores.postgres_index.PostgresIndex` (a pgvector column with HNSW; a
generated ``tsvector`` column). A new vector or text engine is a new implementation of this
protocol (docs/backends.md says how to add one).

Every method runs inside a transaction the store opened (``txn``, the backend's own
:class:`~memorybank.stores.sql.Transaction`), so an index change commits or rolls back with
the rows it follows. Scope is the index's duty too: every read is confined to the scope keys
it is given (:attr:`memorybank.model.Scope.key`), inside the index, never by filtering
afterwards, so no other user's memory is ever read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from memorybank.model import Memory, MemoryFilter
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.stores.sql import Transaction

TxnT_contra = TypeVar("TxnT_contra", bound=Transaction, contravariant=True)


class SearchIndex(Protocol[TxnT_contra]):
    """Vector and full-text search over a SQL store's memories, in the store's transactions.

    ``keys`` are scope keys (never empty) and a method reads memories of those scopes only;
    ``filters`` is a :class:`~memorybank.model.MemoryFilter` whose SQL form
    :meth:`~memorybank.stores.sql.Dialect.filter_sql` gives on alias ``m``. Vectors are
    float32 and unit length, of the store's dimension, checked before they get here.
    Candidates are built with :class:`~memorybank.model.stored.Candidate` from memory rows as
    the dialect reads them (``Dialect.columns``).
    """

    #: What a delete reads of each memory row, row id, id, user_id and project_id first,
    #: before the row goes: :meth:`remove` receives those rows.
    delete_columns: str

    def bind(self, vector: Vectors) -> Any:
        """``vector`` in the form this index writes and compares it in, computed once per new
        memory and handed to :meth:`lookalikes` and :meth:`add` as ``bound``
        (the vector itself when there is nothing to convert)."""
        ...

    def lookalikes(
        self, txn: TxnT_contra, memory: Memory, vector: Vectors, bound: Any, floor: float, k: int
    ) -> list[tuple[Memory, float]]:
        """Up to ``k`` stored memories of ``memory``'s scope with cosine at least ``floor``,
        nearest first, for a judge to decide. Memories this transaction added count. Only
        memories that were themselves checked for duplicates count (:meth:`add`'s
        ``checked``): a fact is no duplicate of a chat turn."""
        ...

    def add(
        self, txn: TxnT_contra, memory: Memory, vector: Vectors, bound: Any, checked: bool
    ) -> None:
        """Store a new memory's row (:meth:`~memorybank.stores.sql.Dialect.insert_memory`,
        :func:`~memorybank.stores.sql.memory_values`) and its vector and text entries.
        ``checked``: its duplicate check ran, so later checks in this transaction see it."""
        ...

    def replaced(
        self, txn: TxnT_contra, row: Sequence[Any], memory: Memory, vector: Vectors | None
    ) -> None:
        """Follow a memory row the store has just overwritten with ``memory``: re-index its
        text, and store ``vector`` unless it is ``None`` (the text changed, not the vector).
        ``row`` is what it was before: row id, scope key, content, tags (JSON text)."""
        ...

    def remove(self, txn: TxnT_contra, rows: Sequence[Sequence[Any]]) -> None:
        """Delete memory rows (read with :attr:`delete_columns`) with their vector and text
        entries, leaving none of their text in the index."""
        ...

    def vector_candidates(
        self, txn: TxnT_contra, keys: Sequence[str], query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` memories of the scopes ``keys`` meeting ``filters`` nearest to
        ``query`` (1-d), nearest first, scored by cosine similarity (in [-1, 1])."""
        ...

    def text_candidates(
        self, txn: TxnT_contra, keys: Sequence[str], query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` memories of the scopes ``keys`` meeting ``filters`` that best match any
        content word of ``query`` (:func:`memorybank.rules.query.query_terms`), best first,
        scored ≥ 0 (higher is better: BM25 or alike). No content word: no candidates."""
        ...

    def both_candidates(
        self,
        txn: TxnT_contra,
        keys: Sequence[str],
        vector: Vectors,
        query: str,
        k: int,
        filters: MemoryFilter,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """:meth:`vector_candidates` and :meth:`text_candidates` in one transaction (an
        index may share the work of reading rows between them). By default the two searches
        one after the other, in the caller's snapshot (for an implementation that subclasses
        this protocol)."""
        by_vector = self.vector_candidates(txn, keys, vector, k, filters)
        return by_vector, self.text_candidates(txn, keys, query, k, filters)

    def set_vectors(
        self, txn: TxnT_contra, memory_ids: Sequence[str], vectors: Vectors, model_id: str
    ) -> None:
        """Replace the vectors of these memories (any scope; ids no longer stored are
        skipped) and record ``model_id`` as the model that made them (reindex)."""
        ...

    def vectors_of(self, txn: TxnT_contra, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories (any scope), by id, 1-d float32; any number
        of ids (for migration and checks)."""
        ...


__all__ = ["SearchIndex"]
