"""What the SQLite and PostgreSQL stores share: every :class:`~memorybank.stores.base.Store`
method whose SQL is the same in both, written once over a
:class:`~memorybank.stores.sql.Dialect`, and the public transaction API. The forget-plan
methods (seed 003) are in its base :class:`~memorybank.stores.sql_forget.SqlForgetPlans`, the
org members' in :class:`~memorybank.stores.sql_orgs.SqlOrgMembers`, the pairs a save asked
about (and the answers) in :class:`~memorybank.stores.sql_pairs.SqlPairs`.

A backend (:class:`~memorybank.stores.sqlite.SQLiteStore`,
:class:`~memorybank.stores.postgres.PostgresStore`) subclasses :class:`SqlStore` and supplies
what is not a matter of spelling: its connections and transactions (:meth:`SqlStore.reading`,
:meth:`SqlStore.writing`), its migrations, and its :attr:`SqlStore.index`, the
:class:`~memorybank.stores.search_index.SearchIndex` that keeps and searches vectors and full
text (docs/backends.md).

Transactions are public so that code keeping other tables in the same database runs in the
store's own transactions (the accounts, :mod:`memorybank.stores.accounts_sql`, through which
:mod:`memorybank.migrate` also copies tables), with statements in the shared dialect (``?``
placeholders):

>>> from memorybank.stores.sqlite import SQLiteStore
>>> store = SQLiteStore(":memory:", dimension=3)
>>> with store.writing() as txn:
...     txn.execute("INSERT INTO users (id, name, created_us) VALUES (?, ?, ?)", ("bo", "Bo", 0))
1
>>> with store.reading() as txn:
...     txn.fetch("SELECT id, name FROM users")
[('bo', 'Bo')]
>>> store.close()
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Self

import numpy as np

from memorybank.errors import ConfigurationError, NotFound, StoreError, ValidationError
from memorybank.model import (
    Channel,
    Event,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Scope,
    ScopeSet,
    Source,
    current_channel,
    utcnow,
)
from memorybank.model.stored import Candidate, InsertOutcome, Related, to_us
from memorybank.providers.embedders.base import Vectors
from memorybank.rules.intake import restatement
from memorybank.stores.base import Judge, Order, Replaces
from memorybank.stores.rows import event_of, history_event_of
from memorybank.stores.search_index import SearchIndex
from memorybank.stores.sql import (
    Dialect,
    TxnT,
    changed_values,
    chunks,
    scope_keys,
    upsert,
)
from memorybank.stores.sql_forget import SqlForgetPlans
from memorybank.stores.sql_orgs import SqlOrgMembers
from memorybank.stores.sql_pairs import SqlPairs

#: A migration: version, name, SQL (as the backend's ``_run_migration`` runs it).
Migration = tuple[int, str, str]

_HISTORY_COLUMNS = (
    "id, memory_id, user_id, project_id, scope_key, kind, old_content, new_content, actor, "
    "created_us, channel, memory_created_us"
)
# A new memory's channel when the context names none: the one its source implies.
_CHANNEL_OF_SOURCE = {
    Source.AI: Channel.AI,
    Source.CONVERSATION: Channel.AI,
    Source.USER: Channel.USER,
    Source.IMPORT: Channel.IMPORT,
}
#: One history row (an event), in the order of ``_HISTORY_COLUMNS``.
INSERT_HISTORY = (
    f"INSERT INTO history ({_HISTORY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SET_META = upsert("meta", "key, value", "key")


class SqlStore(SqlForgetPlans[TxnT], SqlOrgMembers[TxnT], SqlPairs[TxnT]):
    """A :class:`~memorybank.stores.base.Store` over SQL tables; see the module documentation.

    ``TxnT`` is the backend's transaction, which its hooks receive.
    """

    dialect: ClassVar[Dialect]
    #: The backend's schema migrations, oldest first.
    migrations: ClassVar[Sequence[Migration]]
    remote_reads: bool
    dimension: int
    #: Where vectors and full text live and how they are searched: the backend's seam.
    index: SearchIndex[TxnT]

    # -- transactions (backend) -------------------------------------------------------------

    # reading() and writing() are declared once, in SqlTransactions (stores/sql.py).

    @abstractmethod
    def close(self) -> None:
        """Release files and connections."""

    @property
    def sql(self) -> Self:
        """This store: its database holds the other services' tables too."""
        return self

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- migrations -------------------------------------------------------------------------

    @abstractmethod
    def _migrating(self) -> AbstractContextManager[TxnT]:
        """The transaction migrations run in, exclusive of other processes' migrations."""

    @abstractmethod
    def _run_migration(self, txn: TxnT, version: int, sql: str) -> None:
        """Apply one migration's SQL."""

    def _migrated(self, txn: TxnT) -> None:
        """Checks once every migration is applied (none by default)."""

    def _migrate(self) -> None:
        known = self.migrations[-1][0]
        with self._migrating() as txn:
            txn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                f"name TEXT NOT NULL, applied_us {self.dialect.microseconds} NOT NULL)"
            )
            done = {row[0] for row in txn.fetch("SELECT version FROM schema_migrations")}
            newest = max(done, default=0)
            if newest > known:
                raise ConfigurationError(
                    f"this database has schema version {newest}, newer than this memorybank "
                    f"knows ({known}): upgrade memorybank"
                )
            for version, name, sql in self.migrations:
                if version in done:
                    continue
                self._run_migration(txn, version, sql)
                txn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                    (version, name, to_us(datetime.now(UTC))),
                )
            self._migrated(txn)

    # -- meta -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A value from the settings table."""
        with self.reading() as txn:
            row = txn.one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the settings table."""
        with self.writing() as txn:
            txn.execute(_SET_META, (key, value))

    # -- writes (hooks) ---------------------------------------------------------------------

    def _check_vectors(self, vectors: Vectors, count: int) -> Vectors:
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape != (count, self.dimension):
            raise ValidationError(
                f"expected {count} vectors of dimension {self.dimension}, got shape {arr.shape}",
                field="vectors",
            )
        return arr

    def _lock_scopes(self, txn: TxnT, keys: Sequence[str]) -> None:
        """Serialise this insert's duplicate checks with other writers of the scopes ``keys``
        (sorted); nothing by default, where a write transaction excludes every other."""

    def _judged(
        self,
        txn: TxnT,
        memory: Memory,
        vector: Vectors,
        bound: Any,
        floor: float,
        k: int,
        judge: Judge,
    ) -> InsertOutcome | tuple[Related, ...]:
        """The judge's decision on ``memory``: a refusal (the duplicate), a restatement (the
        stored fact it probably repeats, rewritten to its wording), else its conflicts."""
        conflicts: list[Related] = []
        candidates = [
            (other, similarity)
            for other, similarity in self.index.lookalikes(txn, memory, vector, bound, floor, k)
            # an outdated fact: saying it again is no duplicate, no conflict
            if other.superseded_by is None
        ]
        verdicts = judge(memory, candidates) if candidates else []
        restates: tuple[Memory, float, float] | None = None
        for (other, similarity), verdict in zip(candidates, verdicts, strict=True):
            if verdict.relation == "duplicate":
                return InsertOutcome(memory, False, other, similarity)
            p = verdict.probabilities
            if verdict.relation == "restated" and p is not None:
                if restates is None or p[0] > restates[2]:
                    restates = (other, similarity, p[0])
            if verdict.relation == "conflict":
                conflicts.append(
                    Related(other, similarity, verdict.why, verdict.probabilities, verdict.judge)
                )
        if restates is not None:
            return self._restate(txn, memory, vector, restates[0], restates[1])
        return tuple(conflicts)

    def _restate(
        self, txn: TxnT, memory: Memory, vector: Vectors, other: Memory, similarity: float
    ) -> InsertOutcome:
        """``other`` rewritten to ``memory``'s wording (an UPDATE event keeps the earlier
        one), reinforced as a fact said again."""
        restated, event = restatement(other, memory)
        self._replace_row(txn, restated, vector, event)
        self._reinforced(txn, restated, restated.updated_at)
        return InsertOutcome(memory, False, other, similarity, restated=restated)

    def _supersede(
        self,
        txn: TxnT,
        memory: Memory,
        conflicts: tuple[Related, ...],
        replaces: Replaces | None,
        actor: str | None,
    ) -> InsertOutcome:
        """The outcome of inserting ``memory``: the conflicts ``replaces`` says it replaces are
        marked superseded by it here, in the insert's transaction; the rest are kept."""
        kept: list[Related] = []
        superseded: list[Related] = []
        pairs = [(related.memory, related.similarity) for related in conflicts]
        chosen = replaces(memory, pairs) if replaces is not None and pairs else [False] * len(pairs)
        for related, replaced in zip(conflicts, chosen, strict=True):
            old = related.memory
            if not replaced:
                kept.append(related)
                continue
            marked = old.model_copy(update={"superseded_by": memory.id, "updated_at": utcnow()})
            event = HistoryEvent.about(old, EventKind.SUPERSEDE, actor or memory.user_id)
            self._replace_row(txn, marked, None, event)
            superseded.append(replace(related, memory=marked))
        return InsertOutcome(memory, True, conflicts=tuple(kept), superseded=tuple(superseded))

    def _after_delete(self) -> None:
        """Runs after a committed delete (nothing by default)."""

    # -- writes -----------------------------------------------------------------------------

    def insert(
        self,
        memories: Sequence[Memory],
        vectors: Vectors,
        *,
        dedup: Sequence[bool],
        actor: str | None,
        record: bool = True,
        judge: Judge | None = None,
        candidate_floor: float | None = None,
        candidates: int = 5,
        replaces: Replaces | None = None,
    ) -> list[InsertOutcome]:
        """Insert memories with their vectors in one transaction (see :class:`Store`)."""
        vecs = self._check_vectors(vectors, len(memories))
        if len(dedup) != len(memories):
            raise ValidationError("dedup flags must match memories one to one", field="dedup")
        if judge is None and any(dedup):
            raise ValidationError("memories to check for duplicates need a judge", field="judge")
        outcomes: list[InsertOutcome] = []
        if not memories:
            return outcomes
        floor = -1.0 if candidate_floor is None else candidate_floor
        with self.writing() as txn:
            self._lock_scopes(txn, sorted({m.scope.key for m in memories}))
            for memory, vector, check in zip(memories, vecs, dedup, strict=True):
                bound = self.index.bind(vector)
                conflicts: tuple[Related, ...] = ()
                if check and judge is not None:
                    decided = self._judged(txn, memory, vector, bound, floor, candidates, judge)
                    if isinstance(decided, InsertOutcome):
                        outcomes.append(decided)
                        self._reinforced(txn, decided.duplicate_of, memory.created_at)
                        continue
                    conflicts = decided
                self.index.add(txn, memory, vector, bound, check)
                outcome = self._supersede(txn, memory, conflicts, replaces, actor)
                # A replaced fact keeps its relation too: restored, it is shown as earlier.
                self._ask_pairs(txn, memory, (*outcome.conflicts, *outcome.superseded))
                outcomes.append(outcome)
            for outcome in outcomes if record else ():
                if outcome.inserted:
                    self._record(txn, _added(outcome.memory, actor))
        return outcomes

    def set_vectors(self, memory_ids: Sequence[str], vectors: Vectors, model_id: str) -> None:
        """Replace the stored vectors of existing memories (reindex)."""
        vecs = self._check_vectors(vectors, len(memory_ids))
        with self.writing() as txn:
            self.index.set_vectors(txn, memory_ids, vecs, model_id)

    def _reinforced(self, txn: TxnT, memory: Memory | None, at: datetime) -> None:
        """Saying a stored fact again reinforces it (its importance decays from now)."""
        if memory is not None:
            txn.execute(
                "UPDATE memories SET reinforced_us = ? WHERE id = ?", (to_us(at), memory.id)
            )

    def reinforce(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Mark these memories reinforced at ``at`` (recalled); ids that are gone are
        skipped, and no history event is written (nothing about the memory changed)."""
        ids = sorted(set(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            with self.writing() as txn:
                txn.execute(
                    f"UPDATE memories SET reinforced_us = ? WHERE id IN ({marks}) "
                    "AND (reinforced_us IS NULL OR reinforced_us < ?)",
                    (to_us(at), *chunk, to_us(at)),
                )

    def record(self, txn: TxnT, event: HistoryEvent) -> None:
        """Record ``event`` in transaction ``txn``: the one way every change is logged,
        for a service that changes memory in the store's transactions (consolidation)."""
        self._record(txn, event)

    def _record(self, txn: TxnT, event: HistoryEvent, memory_created_us: int | None = None) -> None:
        scope = Scope(user_id=event.user_id, project_id=event.project_id)
        channel = event.channel or Channel.USER
        row = (
            event.id,
            event.memory_id,
            event.user_id,
            event.project_id,
            scope.key,
            str(event.kind),
            event.old_content,
            event.new_content,
            event.actor,
            to_us(event.created_at),
            str(channel),
            memory_created_us,
        )
        self._write_event(txn, row)

    def _write_event(self, txn: TxnT, row: Sequence[Any]) -> None:
        """Insert one history row. A backend whose concurrent writers could commit events
        out of their ids' order defers this to its commit, where it serialises them (a
        reader resuming after event N must never miss one numbered below N)."""
        txn.execute(INSERT_HISTORY, row)

    def replace(
        self,
        memory: Memory,
        vector: Vectors | None,
        event: HistoryEvent,
        *,
        expected: datetime | None = None,
    ) -> bool:
        """Overwrite a stored memory (same id, same scope) and record ``event``; with
        ``expected``, only if the row is still as last changed then (else False, nothing
        written). Raises :class:`NotFound` when the memory is gone."""
        vec = None if vector is None else self._check_vectors(vector.reshape(1, -1), 1)[0]
        with self.writing() as txn:
            return self._replace_row(txn, memory, vec, event, expected)

    def _replace_row(
        self,
        txn: TxnT,
        memory: Memory,
        vec: Vectors | None,
        event: HistoryEvent,
        expected: datetime | None = None,
    ) -> bool:
        d = self.dialect
        row = txn.one(
            f"SELECT {d.rowid}, scope_key, content, tags, updated_us FROM memories WHERE id = ?"
            + d.for_update,
            (memory.id,),
        )
        if row is None:  # deleted meanwhile: the same answer as for an id never stored
            raise NotFound(f"no memory {memory.id!r}")
        if row[1] != memory.scope.key:
            raise StoreError(f"memory {memory.id} is not stored in that scope")
        if expected is not None and int(row[4]) != to_us(expected):
            return False
        txn.execute(d.update_memory(), [*changed_values(memory), row[0]])
        self.index.replaced(txn, row, memory, vec)
        self._record(txn, event)
        return True

    def delete(self, memory_ids: Sequence[str], scopes: ScopeSet, actor: str | None) -> list[str]:
        """Delete memories for real; returns the ids that were deleted."""
        keys = scope_keys(scopes)
        if not memory_ids or not keys:
            return []
        by_id = self.dialect.any_of("id", list(memory_ids))
        by_scope = self.dialect.any_of("scope_key", keys)
        where = f"{by_id[0]} AND {by_scope[0]}"
        rows = self._delete_where(where, [*by_id[1], *by_scope[1]], actor)
        return [str(r[1]) for r in rows]

    def clear(self, scope: Scope, actor: str | None) -> int:
        """Delete every memory of one scope."""
        return len(self._delete_where("scope_key = ?", [scope.key], actor, EventKind.CLEAR))

    def _delete_where(
        self,
        where: str,
        params: Sequence[Any],
        actor: str | None,
        kind: EventKind = EventKind.DELETE,
    ) -> list[tuple[Any, ...]]:
        with self.writing() as txn:
            rows = txn.fetch(
                f"SELECT {self.index.delete_columns} FROM memories WHERE {where}"
                + self.dialect.lock_rows,
                params,
            )
            self._delete_rows(txn, rows, actor, kind)
        if rows:
            self._after_delete()
        return rows

    def _delete_rows(
        self,
        txn: TxnT,
        rows: Sequence[Sequence[Any]],
        actor: str | None,
        kind: EventKind = EventKind.DELETE,
    ) -> None:
        if not rows:
            return
        born = self._created_us(txn, [str(r[1]) for r in rows])
        self.index.remove(txn, rows)
        self._drop_pairs(txn, [str(r[1]) for r in rows])
        # History keeps a tombstone only: earlier events carried the text.
        for ids in chunks([str(r[1]) for r in rows], self.dialect.list_max):
            condition, params = self.dialect.any_of("memory_id", ids)
            txn.execute(f"DELETE FROM history WHERE {condition}", params)
        for row in rows:
            tombstone = HistoryEvent(
                memory_id=row[1],
                user_id=row[2],
                project_id=row[3],
                kind=kind,
                actor=actor,
            )
            self._record(txn, tombstone, born.get(str(row[1])))

    def _created_us(self, txn: TxnT, memory_ids: Sequence[str]) -> dict[str, int]:
        """When each of these memories was created (for their tombstones: how long the
        memory lived, which the success metrics count)."""
        born: dict[str, int] = {}
        for ids in chunks(list(memory_ids), self.dialect.list_max):
            condition, params = self.dialect.any_of("id", ids)
            for memory_id, created in txn.fetch(
                f"SELECT id, created_us FROM memories WHERE {condition}", params
            ):
                born[str(memory_id)] = int(created)
        return born

    # -- reads (hooks) ----------------------------------------------------------------------

    @abstractmethod
    def _describe(self) -> dict[str, int | str]:
        """The head of :meth:`stats`: ``backend`` and where the database is."""

    @abstractmethod
    def _sizes(self, txn: TxnT) -> dict[str, int | str]:
        """The tail of :meth:`stats`: sizes on disk and in memory."""

    # -- reads ------------------------------------------------------------------------------

    def get(self, memory_id: str, scopes: ScopeSet) -> Memory | None:
        """The memory with this id, if visible through ``scopes``."""
        keys = scope_keys(scopes)
        if not keys:
            return None
        d = self.dialect
        by_scope, params = d.any_of("scope_key", keys)
        with self.reading() as txn:
            row = txn.one(
                f"SELECT {d.columns} FROM memories WHERE id = ? AND {by_scope}",
                [memory_id, *params],
            )
        return None if row is None else d.memory(row)

    def _select_m(
        self, what: str, scopes: ScopeSet, filters: MemoryFilter
    ) -> tuple[str, list[Any]] | None:
        """``SELECT what FROM memories m`` of the visible memories meeting ``filters``."""
        keys = scope_keys(scopes)
        if not keys:
            return None
        by_scope, params = self.dialect.any_of("m.scope_key", keys)
        where, more = self.dialect.filter_sql(filters)
        return f"SELECT {what} FROM memories m WHERE {by_scope} AND {where}", [*params, *more]

    def list_memories(
        self,
        scopes: ScopeSet,
        filters: MemoryFilter,
        *,
        limit: int,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> list[Memory]:
        """Memories visible through ``scopes`` meeting ``filters``, in ``order``."""
        d = self.dialect
        select = self._select_m(f"m.{d.rowid}", scopes, filters)
        if select is None:
            return []
        # The page's row ids are chosen first, sorting only the ordering columns: sorting whole
        # rows took most of a prompt's time in a scope of 10,000 memories.
        by = d.orders[order]
        sql = (
            f"SELECT {d.m_columns} FROM memories m WHERE m.{d.rowid} IN "
            f"({select[0]} ORDER BY {by} LIMIT ? OFFSET ?) ORDER BY {by}"
        )
        with self.reading() as txn:
            rows = txn.fetch(sql, [*select[1], limit, offset])
        return [d.memory(r) for r in rows]

    def count(self, scopes: ScopeSet, filters: MemoryFilter) -> int:
        """How many memories match."""
        select = self._select_m("count(*)", scopes, filters)
        if select is None:
            return 0
        with self.reading() as txn:
            row = txn.one(*select)
        return 0 if row is None else int(row[0])

    def vector_search(
        self, scopes: ScopeSet, query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` nearest memories by cosine similarity."""
        keys = scope_keys(scopes)
        if not keys or k <= 0:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self.reading() as txn:
            return self.index.vector_candidates(txn, keys, q, k, filters)

    def text_search(
        self, scopes: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best full-text matches of ``query`` (any of its content words)."""
        keys = scope_keys(scopes)
        if not keys or k <= 0:
            return []
        with self.reading() as txn:
            return self.index.text_candidates(txn, keys, query, k, filters)

    def hybrid_candidates(
        self, scopes: ScopeSet, vector: Vectors, query: str, k: int, filters: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Both candidate lists of a hybrid search from one snapshot."""
        keys = scope_keys(scopes)
        if not keys or k <= 0:
            return [], []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self.reading() as txn:
            return self.index.both_candidates(txn, keys, q, query, k, filters)

    def vectors_of(self, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories, by id (for migration and checks)."""
        if not memory_ids:
            return {}
        with self.reading() as txn:
            return self.index.vectors_of(txn, memory_ids)

    def _rows_by_rowid(
        self, txn: TxnT, rowids: Sequence[int], filters: MemoryFilter | None = None
    ) -> list[tuple[Any, ...]]:
        """Memory rows by row id (those that meet ``filters``), in no particular order."""
        d = self.dialect
        where, more = d.filter_sql(filters or MemoryFilter())
        rows: list[tuple[Any, ...]] = []
        for chunk in chunks(rowids, d.list_max):
            condition, params = d.any_of(f"m.{d.rowid}", chunk, "bigint")
            rows += txn.fetch(
                f"SELECT {d.m_columns} FROM memories m WHERE {condition} AND {where}",
                [*params, *more],
            )
        return rows

    def neighbours(
        self,
        memory_ids: Sequence[str],
        scopes: ScopeSet,
        window: int,
        filters: MemoryFilter | None = None,
    ) -> dict[str, list[tuple[Candidate, int]]]:
        """Memories of the same session within ``window`` places of each given one (those
        that meet ``filters``), as candidates whose memory is built only when read."""
        keys = scope_keys(scopes)
        if not memory_ids or not keys or window <= 0:
            return {}
        d, ids = self.dialect, list(memory_ids)
        (by_id, id_params), (by_scope, key_params) = (
            d.any_of("id", ids),
            d.any_of("scope_key", keys),
        )
        given, given_params = d.any_of("a.mid", ids)
        # Number every memory of the sessions involved, then pair each given memory with those
        # a few places away. Sessions are conversations: tens to hundreds of rows each.
        sql = f"""
            WITH wanted AS (
                SELECT scope_key, session_id FROM memories
                WHERE {by_id} AND {by_scope} AND session_id IS NOT NULL
                GROUP BY scope_key, session_id
            ), numbered AS (
                SELECT m.{d.rowid} AS rid, m.id AS mid, m.scope_key, m.session_id,
                       ROW_NUMBER() OVER (
                           PARTITION BY m.scope_key, m.session_id ORDER BY m.{d.rowid}
                       ) AS pos
                FROM memories m JOIN wanted w
                  ON m.scope_key = w.scope_key AND m.session_id = w.session_id
            )
            SELECT a.mid, b.rid, b.pos - a.pos FROM numbered a JOIN numbered b
              ON a.scope_key = b.scope_key AND a.session_id = b.session_id
             AND b.pos BETWEEN a.pos - ? AND a.pos + ? AND b.pos <> a.pos
            WHERE {given}
        """
        params = [*id_params, *key_params, window, window, *given_params]
        with self.reading() as txn:
            pairs = [(str(r[0]), int(r[1]), int(r[2])) for r in txn.fetch(sql, params)]
            rows = self._rows_by_rowid(txn, sorted({rid for _, rid, _ in pairs}), filters)
        found = {int(r[0]): Candidate(r, 0.0, d.memory, d.speaker(r[9])) for r in rows}
        out: dict[str, list[tuple[Candidate, int]]] = {}
        for mid, rid, offset in pairs:
            if (candidate := found.get(rid)) is not None:
                out.setdefault(mid, []).append((candidate, offset))
        return out

    def existing_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids are taken, in any scope."""
        found: set[str] = set()
        if not memory_ids:
            return found
        with self.reading() as txn:
            for chunk in chunks(list(memory_ids), self.dialect.list_max):
                condition, params = self.dialect.any_of("id", chunk)
                found.update(
                    str(r[0])
                    for r in txn.fetch(f"SELECT id FROM memories WHERE {condition}", params)
                )
        return found

    def history(self, memory_id: str, scopes: ScopeSet) -> list[HistoryEvent]:
        """Events of one memory, oldest first."""
        keys = scope_keys(scopes)
        if not keys:
            return []
        d = self.dialect
        by_scope, params = d.any_of("scope_key", keys)
        with self.reading() as txn:
            rows = txn.fetch(
                "SELECT id, memory_id, user_id, project_id, kind, old_content, new_content, "
                f"actor, created_us, channel FROM history WHERE memory_id = ? AND {by_scope} "
                f"ORDER BY created_us, {d.history_seq}",
                [memory_id, *params],
            )
        return [event for r in rows if (event := history_event_of(r)) is not None]

    def events(self, scope_keys: Sequence[str], after: int, limit: int) -> list[Event]:
        """Events of the scopes ``scope_keys`` numbered above ``after``, oldest first."""
        if not scope_keys:
            return []
        by_scope, params = self.dialect.any_of("scope_key", list(scope_keys))
        seq = self.dialect.history_seq
        with self.reading() as txn:
            rows = txn.fetch(
                f"SELECT {seq}, kind, memory_id, user_id, project_id, actor, channel, "
                f"new_content, created_us FROM history WHERE {seq} > ? AND {by_scope} "
                f"ORDER BY {seq} LIMIT ?",
                [after, *params, limit],
            )
        return [event_of(r) for r in rows]

    def last_event_id(self) -> int:
        """The number of the newest event recorded (0: none yet)."""
        seq = self.dialect.history_seq
        with self.reading() as txn:
            row = txn.one(f"SELECT max({seq}) FROM history")
        return int(row[0]) if row and row[0] is not None else 0

    def last_event_of(self, scopes: ScopeSet) -> int:
        """The number of the newest event of ``scopes`` (0: none): one index lookup per scope
        (``history_scope`` is ``(scope_key, seq)``)."""
        seq = self.dialect.history_seq
        newest = 0
        with self.reading() as txn:
            for key in scope_keys(scopes):
                row = txn.one(f"SELECT max({seq}) FROM history WHERE scope_key = ?", (key,))
                if row and row[0] is not None:
                    newest = max(newest, int(row[0]))
        return newest

    def iter_memories(
        self, batch_size: int = 500, after: str | None = None
    ) -> Iterator[list[Memory]]:
        """Every memory, in batches, by insertion order (stable under concurrent inserts); with
        ``after``, those inserted after that memory (from the start if it is gone)."""
        d = self.dialect
        sql = f"SELECT {d.columns} FROM memories WHERE {d.rowid} > ? ORDER BY {d.rowid} LIMIT ?"
        last = 0
        if after is not None:
            with self.reading() as txn:
                row = txn.one(f"SELECT {d.rowid} FROM memories WHERE id = ?", (after,))
            last = 0 if row is None else int(row[0])
        while True:
            with self.reading() as txn:
                rows = txn.fetch(sql, (last, batch_size))
            if not rows:
                return
            last = int(rows[-1][0])
            yield [d.memory(r) for r in rows]

    def scopes(self) -> list[Scope]:
        """Every scope holding current memories: one per user's private memory, one per
        project (named with one of its users); private scopes first."""
        with self.reading() as txn:
            rows = txn.fetch(
                "SELECT project_id, min(user_id) FROM memories WHERE superseded_by IS NULL "
                "GROUP BY project_id, CASE WHEN project_id IS NULL THEN user_id END "
                "ORDER BY CASE WHEN project_id IS NULL THEN 0 ELSE 1 END, 1, 2"
            )
        return [Scope(user_id=str(r[1]), project_id=r[0]) for r in rows]

    def project_ids(self) -> list[str]:
        """Every project holding memories (current or superseded), by id, sorted: one index
        seek per project (``p:…`` scope keys sort together, before the users' ``u:…``)."""
        found: list[str] = []
        with self.reading() as txn:
            row = txn.one("SELECT min(scope_key) FROM memories WHERE scope_key >= ?", ("p:",))
            while row is not None and isinstance(row[0], str) and row[0].startswith("p:"):
                found.append(row[0][2:])
                row = txn.one("SELECT min(scope_key) FROM memories WHERE scope_key > ?", row)
        return found

    def stats(self) -> dict[str, int | str]:
        """Counts and sizes."""
        counts = {
            "memories": "SELECT count(*) FROM memories",
            "users": "SELECT count(DISTINCT user_id) FROM memories",
            "scopes": "SELECT count(DISTINCT scope_key) FROM memories",
            "history_events": "SELECT count(*) FROM history",
        }
        out = self._describe()
        with self.reading() as txn:
            for name, sql in counts.items():
                row = txn.one(sql)
                out[name] = 0 if row is None else int(row[0])
            out.update(self._sizes(txn))
        return out


__all__ = ["INSERT_HISTORY", "Migration", "SqlStore"]


def _added(memory: Memory, actor: str | None) -> HistoryEvent:
    """The ADD event of a new memory: through the context's channel, else its source's."""
    channel = current_channel() or _CHANNEL_OF_SOURCE.get(memory.source, Channel.USER)
    return HistoryEvent.about(
        memory,
        EventKind.ADD,
        actor,
        new_content=memory.content,
        created_at=memory.created_at,
        channel=channel,
    )
