"""Relations between facts, decided when a fact is written: a newer fact that may update an
older one (a save's conflicts), and the person's answer "both are true". The pair methods of
:class:`~memorybank.stores.base.Store` over the ``memory_pairs`` table, shared by both SQL
stores.

A save records each conflict it reports as an *asked* pair, with the judge's probabilities
and the similarity it read, in the insert's own transaction; every read (search, the prompt
block, the UI's open pairs) reads these rows and never asks a model again. An answer "both
are true" turns the pair *distinct*: it is never shown as a pair again, and no read puts the
older under the newer as "earlier, may be outdated". "Replace" needs no row of its own: the
older fact is superseded, which closes the pair (and a restore opens it again). A deleted
memory takes its pairs with it; an edited one is judged again (:meth:`SqlPairs.relate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import ClassVar

from memorybank.model import Memory, ScopeSet
from memorybank.model.stored import KeptPair, Related, from_us, to_us
from memorybank.stores.sql import (
    MEMORY_FIELDS,
    Dialect,
    SqlTransactions,
    TxnT,
    chunks,
    scope_keys,
)

ASKED = "asked"
DISTINCT = "distinct"


def pairs_table(microseconds: str) -> str:
    """The ``memory_pairs`` DDL, with the backend's integer type for microseconds."""
    return f"""
        -- memory_id: the newer fact; other_id: the stored fact it may update.
        CREATE TABLE memory_pairs (
            memory_id TEXT NOT NULL,
            other_id TEXT NOT NULL,
            scope_key TEXT NOT NULL,
            verdict TEXT NOT NULL,
            actor TEXT,
            decided_us {microseconds} NOT NULL,
            PRIMARY KEY (memory_id, other_id)
        );
        CREATE INDEX memory_pairs_other ON memory_pairs (other_id);
        CREATE INDEX memory_pairs_scope ON memory_pairs (scope_key, verdict);
        """


#: What the judge read, kept with each relation it decided (a later migration).
READINGS = """
    ALTER TABLE memory_pairs ADD COLUMN p_duplicate REAL;
    ALTER TABLE memory_pairs ADD COLUMN p_update REAL;
    ALTER TABLE memory_pairs ADD COLUMN p_distinct REAL;
    ALTER TABLE memory_pairs ADD COLUMN similarity REAL;
    ALTER TABLE memory_pairs ADD COLUMN judge TEXT;
    """

_ASK = (
    "INSERT INTO memory_pairs (memory_id, other_id, scope_key, verdict, actor, decided_us, "
    "p_duplicate, p_update, p_distinct, similarity, judge) "
    # Typed: PostgreSQL reads an untyped parameter in a SELECT list as text.
    "SELECT ?, ?, ?, ?, NULL, ?, CAST(? AS REAL), CAST(? AS REAL), CAST(? AS REAL), "
    "CAST(? AS REAL), CAST(? AS TEXT) WHERE NOT EXISTS (SELECT 1 FROM memory_pairs "
    "WHERE memory_id = ? AND other_id = ? AND verdict = ?) "
    "ON CONFLICT (memory_id, other_id) DO UPDATE SET p_duplicate = excluded.p_duplicate, "
    "p_update = excluded.p_update, p_distinct = excluded.p_distinct, "
    "similarity = excluded.similarity, judge = excluded.judge, decided_us = excluded.decided_us "
    "WHERE memory_pairs.verdict = ?"
)


class SqlPairs(SqlTransactions[TxnT]):
    """The pair methods of a SQL store (its transactions are the store's own)."""

    dialect: ClassVar[Dialect]

    def _ask_pairs(self, txn: TxnT, memory: Memory, related: Sequence[Related]) -> None:
        """Record that ``memory`` may update each of ``related``, with what the judge read (an
        answer already given for a pair, in either order, is kept)."""
        now = to_us(datetime.now(UTC))
        for other in related:
            p = other.scores or (None, None, None)
            txn.execute(
                _ASK,
                (
                    memory.id,
                    other.memory.id,
                    memory.scope.key,
                    ASKED,
                    now,
                    *p,
                    other.similarity,
                    other.judge,
                    other.memory.id,
                    memory.id,
                    DISTINCT,
                    ASKED,
                ),
            )

    def relate(self, judged: Sequence[tuple[Memory, Sequence[Related]]], *, restated: bool) -> None:
        """For each (memory, related) of ``judged``, in one transaction: replace what the
        judge said of the memory as the newer fact by ``related`` (the facts it may update, as
        judged now: a new judge, an edit, an import); with ``restated`` (its text changed)
        also drop what was said of it as the older fact, as an edited fact is said now.
        Answers "both are true" are kept."""
        with self.writing() as txn:
            for memory, related in judged:
                txn.execute(
                    "DELETE FROM memory_pairs WHERE memory_id = ? AND verdict = ?",
                    (memory.id, ASKED),
                )
                if restated:
                    txn.execute(
                        "DELETE FROM memory_pairs WHERE other_id = ? AND verdict = ?",
                        (memory.id, ASKED),
                    )
                self._ask_pairs(txn, memory, related)

    def updates_among(self, memory_ids: Sequence[str]) -> set[tuple[str, str]]:
        """The (newer, older) pairs among ``memory_ids`` whose newer fact may update the older
        (judged when it was written, not answered "both are true"): one indexed read."""
        wanted = set(memory_ids)
        if len(wanted) < 2:
            return set()
        found: set[tuple[str, str]] = set()
        with self.reading() as txn:
            for ids in chunks(sorted(wanted), self.dialect.list_max):
                newer, params = self.dialect.any_of("memory_id", ids)
                rows = txn.fetch(
                    f"SELECT memory_id, other_id FROM memory_pairs WHERE {newer} AND verdict = ?",
                    [*params, ASKED],
                )
                found |= {(str(a), str(b)) for a, b in rows if str(b) in wanted}
        return found

    def _drop_pairs(self, txn: TxnT, memory_ids: Sequence[str]) -> None:
        """Delete the pairs of deleted memories (either side)."""
        for ids in chunks(list(memory_ids), self.dialect.list_max):
            newer, p1 = self.dialect.any_of("memory_id", ids)
            older, p2 = self.dialect.any_of("other_id", ids)
            txn.execute(f"DELETE FROM memory_pairs WHERE {newer} OR {older}", [*p1, *p2])

    def keep_both(self, memory: Memory, other: Memory, actor: str | None) -> None:
        """Record the answer "both are true" for ``memory`` and ``other`` (either order),
        whether or not a save asked about them."""
        with self.writing() as txn:
            txn.execute(
                "DELETE FROM memory_pairs WHERE memory_id = ? AND other_id = ?",
                (other.id, memory.id),
            )
            txn.execute(
                "INSERT INTO memory_pairs (memory_id, other_id, scope_key, verdict, actor, "
                "decided_us) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (memory_id, other_id) "
                "DO UPDATE SET verdict = excluded.verdict, actor = excluded.actor, "
                "decided_us = excluded.decided_us",
                (memory.id, other.id, memory.scope.key, DISTINCT, actor, to_us(datetime.now(UTC))),
            )

    def open_pairs(self, scope_keys: Sequence[str], limit: int) -> list[tuple[Memory, Memory]]:
        """The asked pairs (newer, older) of these scopes whose facts are both current,
        oldest question first, at most ``limit``: both facts read in the same query (issue
        44: two reads per pair made a page of 1,000 pairs 2,001 queries)."""
        if not scope_keys:
            return []
        d = self.dialect
        in_scope, params = d.any_of("p.scope_key", list(scope_keys))
        both = ", ".join(f"{a}.{c}" for a in "no" for c in (d.rowid, *MEMORY_FIELDS))
        with self.reading() as txn:
            rows = txn.fetch(
                f"SELECT {both} FROM memory_pairs p "
                "JOIN memories n ON n.id = p.memory_id AND n.scope_key = p.scope_key "
                "JOIN memories o ON o.id = p.other_id AND o.scope_key = p.scope_key "
                f"WHERE {in_scope} AND p.verdict = ? AND n.superseded_by IS NULL "
                "AND o.superseded_by IS NULL ORDER BY p.decided_us, p.memory_id, p.other_id "
                "LIMIT ?",
                [*params, ASKED, limit],
            )
        half = 1 + len(MEMORY_FIELDS)
        return [(d.memory(r[:half]), d.memory(r[half:])) for r in rows]

    def updaters_of(self, memory_ids: Sequence[str], scopes: ScopeSet) -> list[tuple[str, Memory]]:
        """(older id, newer memory) for each current fact visible through ``scopes`` that may
        update one of ``memory_ids`` (judged when it was written, not answered "both are
        true"): two indexed reads, the pairs by their older fact, then the newer rows."""
        keys = scope_keys(scopes)
        if not memory_ids or not keys:
            return []
        d = self.dialect
        # Two reads, each on its own index: joined in one statement, a planner may walk the
        # whole scope's memories and probe the pairs of each (milliseconds at 1,000 facts).
        with self.reading() as txn:
            pairs: list[tuple[str, str]] = []
            for ids in chunks(sorted(set(memory_ids)), d.list_max):
                older, params = d.any_of("other_id", ids)
                rows = txn.fetch(
                    f"SELECT other_id, memory_id FROM memory_pairs WHERE {older} AND verdict = ?",
                    [*params, ASKED],
                )
                pairs += [(str(r[0]), str(r[1])) for r in rows]
            newer: dict[str, Memory] = {}
            in_scope, scoped = d.any_of("scope_key", keys)
            for ids in chunks(sorted({n for _, n in pairs}), d.list_max):
                by_id, params = d.any_of("id", ids)
                rows = txn.fetch(
                    f"SELECT {d.columns} FROM memories WHERE {by_id} "
                    f"AND superseded_by IS NULL AND {in_scope}",
                    [*params, *scoped],
                )
                newer.update((m.id, m) for m in map(d.memory, rows))
        return [(old, newer[new]) for old, new in pairs if new in newer]

    def kept_pairs(self, memory_ids: Sequence[str]) -> list[KeptPair]:
        """The pairs answered "both are true" whose two facts are both among ``memory_ids``,
        with who answered and when, oldest answer first."""
        wanted = set(memory_ids)
        found: list[KeptPair] = []
        with self.reading() as txn:
            for ids in chunks(sorted(wanted), self.dialect.list_max):
                newer, params = self.dialect.any_of("memory_id", ids)
                rows = txn.fetch(
                    "SELECT memory_id, other_id, actor, decided_us FROM memory_pairs "
                    f"WHERE {newer} AND verdict = ?",
                    [*params, DISTINCT],
                )
                found += [
                    KeptPair(str(a), str(b), None if who is None else str(who), from_us(int(at)))
                    for a, b, who, at in rows
                    if str(b) in wanted
                ]
        return sorted(found, key=lambda p: (p.decided_at, p.memory_id, p.other_id))

    def keep_pairs(self, pairs: Sequence[KeptPair]) -> None:
        """Record each answer "both are true" as it was given (its actor and time), in one
        transaction, as :meth:`keep_both` records one: either order, an earlier row of the
        pair replaced. A pair whose facts are not both stored in one scope is left out."""
        if not pairs:
            return
        with self.writing() as txn:
            for pair in pairs:
                txn.execute(
                    "DELETE FROM memory_pairs WHERE memory_id = ? AND other_id = ?",
                    (pair.other_id, pair.memory_id),
                )
                # The scope comes from the stored rows, so a pair can only join two facts
                # of one scope (the check keep_both's caller makes on the memories).
                txn.execute(
                    "INSERT INTO memory_pairs (memory_id, other_id, scope_key, verdict, actor, "
                    "decided_us) SELECT n.id, o.id, n.scope_key, ?, ?, ? FROM memories n "
                    "JOIN memories o ON o.id = ? AND o.scope_key = n.scope_key WHERE n.id = ? "
                    "ON CONFLICT (memory_id, other_id) DO UPDATE SET verdict = excluded.verdict, "
                    "actor = excluded.actor, decided_us = excluded.decided_us",
                    (
                        DISTINCT,
                        pair.actor,
                        to_us(pair.decided_at),
                        pair.other_id,
                        pair.memory_id,
                    ),
                )


__all__ = ["ASKED", "DISTINCT", "SqlPairs", "pairs_table"]
