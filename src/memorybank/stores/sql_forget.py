"""Seed 003's forget plans in SQL, shared by both stores: storing, cancelling and executing a
plan, and finding the memories whose history holds an earlier text a forget request names.

:class:`SqlForgetPlans` is a base of :class:`~memorybank.stores.sql_store.SqlStore`: it runs in
the store's transactions and uses its delete and replace steps, so one plan's deletes, rewrites
and redactions commit together and are followed by the store's after-delete step (SQLite's WAL
checkpoint into its secure-deleted file).

Where a memory's text is kept, and what each step of a plan removes:

* the memory row, its full-text entry and its vector hold the current text only (a superseded
  memory is a row of its own, so a plan reaches it as any other memory);
* history holds every version: an ADD event's new text, each UPDATE event's old and new text
  (DELETE and SUPERSEDE events carry none).

FORGET deletes the row, its index entries and every history event of the memory, and records a
DELETE tombstone. REWRITE replaces the text (new vector, new index entry), deletes the earlier
events and records one UPDATE event with the new text only. REDACT keeps the memory as it is
and every event of its history, with each text that is not the current one set to null (kind,
actor and time stay): the old text is gone, the record that the memory changed is not.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar

from memorybank.errors import NotFound, ValidationError
from memorybank.model import (
    EventKind,
    ForgetAction,
    ForgetPlan,
    ForgetStep,
    HistoryEvent,
    Memory,
    PlanStatus,
    Scope,
    ScopeSet,
)
from memorybank.model.stored import PlanOutcome, from_us, to_us
from memorybank.providers.embedders.base import Vectors
from memorybank.stores.sql import Dialect, SqlTransactions, Transaction, TxnT, chunks, scope_keys

# Ended plans are dropped this long after they expire; confirming one then says "no plan".
_PLAN_RETENTION = timedelta(days=7)
_PLAN_COLUMNS = "id, user_id, project_id, steps, status, created_us, expires_us, finished_us"
# An earlier text as earlier_texts matches it: lower case, apostrophes dropped (as
# memorybank.rules.query.query_terms drops them from words).
_BARE_OLD = "lower(replace(replace(old_content, '''', ''), '’', ''))"
# REDACT: every text of the memory's events other than its current one becomes null.
_REDACT = (
    "UPDATE history SET old_content = CASE WHEN old_content = ? THEN old_content END, "
    "new_content = CASE WHEN new_content = ? THEN new_content END "
    "WHERE memory_id = ? AND (old_content <> ? OR new_content <> ?)"
)


class SqlForgetPlans(SqlTransactions[TxnT]):
    """The forget-plan methods of :class:`~memorybank.stores.base.Store` over SQL tables; see
    the module documentation. The abstract methods are the store's own."""

    dialect: ClassVar[Dialect]

    @abstractmethod
    def _check_vectors(self, vectors: Vectors, count: int) -> Vectors:
        """``vectors`` as float32 of the store's dimension, or ValidationError."""

    @abstractmethod
    def _delete_rows(
        self,
        txn: TxnT,
        rows: Sequence[Sequence[Any]],
        actor: str | None,
        kind: EventKind = EventKind.DELETE,
    ) -> None:
        """Delete memory rows, their index entries and history, leaving tombstones of
        ``kind``."""

    @abstractmethod
    def _replace_row(
        self,
        txn: TxnT,
        memory: Memory,
        vec: Vectors | None,
        event: HistoryEvent,
        expected: datetime | None = None,
    ) -> bool:
        """Overwrite a stored memory and record ``event`` (unless changed since ``expected``)."""

    @abstractmethod
    def _after_delete(self) -> None:
        """Runs after a committed delete."""

    # -- finding earlier texts --------------------------------------------------------------

    def earlier_texts(
        self, scopes: ScopeSet, terms: Sequence[str], min_terms: int, limit: int
    ) -> list[tuple[Memory, list[str]]]:
        """Memories whose history holds an earlier text with ``min_terms`` of ``terms``.

        One statement over the UPDATE events of the scopes (every earlier version of a
        memory is the old text of the UPDATE that replaced it), through the history's scope
        index, counting the terms each old text contains; then the memories found and their
        events, all in one snapshot.
        """
        keys = scope_keys(scopes)
        if not keys or not terms or limit <= 0:
            return []
        d = self.dialect
        by_scope, scope_params = d.any_of("scope_key", keys)
        count = " + ".join([f"CASE WHEN {_BARE_OLD} LIKE ? THEN 1 ELSE 0 END"] * len(terms))
        find = (
            "SELECT memory_id FROM history WHERE kind = 'UPDATE' AND old_content IS NOT NULL "
            f"AND {by_scope} AND ({count}) >= ? "
            "GROUP BY memory_id ORDER BY max(created_us) DESC, memory_id LIMIT ?"
        )
        likes = [f"%{term.lower()}%" for term in terms]
        params = [*scope_params, *likes, max(min_terms, 1), limit]
        with self.reading() as txn:
            ids = [str(r[0]) for r in txn.fetch(find, params)]
            memories, events = self._memories_and_events(txn, ids, keys)
        earlier: dict[str, dict[str, None]] = {}
        for memory_id, old, new in events:
            current = memories[memory_id].content if memory_id in memories else None
            for text in (old, new):
                if text is not None and text != current:
                    earlier.setdefault(memory_id, {})[text] = None
        return [(memories[i], list(earlier[i])) for i in ids if i in memories and i in earlier]

    def _memories_and_events(
        self, txn: TxnT, ids: Sequence[str], keys: Sequence[str]
    ) -> tuple[dict[str, Memory], list[tuple[str, str | None, str | None]]]:
        """The memories ``ids`` of the scopes ``keys``, and their events' texts, oldest first."""
        d = self.dialect
        memories: dict[str, Memory] = {}
        events: list[tuple[str, str | None, str | None]] = []
        by_scope, scope_params = d.any_of("scope_key", keys)
        for chunk in chunks(list(ids), d.list_max):
            by_id, id_params = d.any_of("id", chunk)
            for row in txn.fetch(
                f"SELECT {d.columns} FROM memories WHERE {by_id} AND {by_scope}",
                [*id_params, *scope_params],
            ):
                memory = d.memory(row)
                memories[memory.id] = memory
            by_memory, params = d.any_of("memory_id", chunk)
            events += txn.fetch(
                f"SELECT memory_id, old_content, new_content FROM history WHERE {by_memory} "
                f"ORDER BY created_us, {d.history_seq}",
                params,
            )
        return memories, events

    # -- plans ------------------------------------------------------------------------------

    def save_forget_plan(self, plan: ForgetPlan) -> None:
        """Store a new forget plan; plans that ended over a week ago are dropped meanwhile."""
        steps = [step.model_dump(mode="json") for step in plan.steps]
        with self.writing() as txn:
            txn.execute(
                "DELETE FROM forget_plans WHERE expires_us < ?",
                (to_us(plan.created_at - _PLAN_RETENTION),),
            )
            txn.execute(
                f"INSERT INTO forget_plans ({_PLAN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    plan.id,
                    plan.user_id,
                    plan.project_id,
                    json.dumps(steps),
                    str(plan.status),
                    to_us(plan.created_at),
                    to_us(plan.expires_at),
                    to_us(plan.finished_at),
                ),
            )

    def get_forget_plan(self, plan_id: str) -> ForgetPlan | None:
        """The plan with this id, whoever it belongs to (callers check the owner)."""
        with self.reading() as txn:
            return self._plan(txn, plan_id, lock=False)

    def cancel_forget_plan(
        self, plan_id: str, user_id: str, project_id: str | None, now: datetime
    ) -> ForgetPlan:
        """Mark a pending plan of this user cancelled (see :meth:`ForgetPlan.check_usable`)."""
        with self.writing() as txn:
            plan = self._usable_plan(txn, plan_id, user_id, project_id, now)
            _finish_plan(txn, plan.id, PlanStatus.CANCELLED, now)
        return plan.model_copy(update={"status": PlanStatus.CANCELLED, "finished_at": now})

    def execute_forget_plan(
        self,
        plan_id: str,
        user_id: str,
        project_id: str | None,
        rewrites: Mapping[str, tuple[Memory, Vectors]],
        now: datetime,
        actor: str | None,
    ) -> PlanOutcome:
        """Apply a plan in one transaction: FORGET steps delete, REWRITE steps replace the
        text with ``rewrites[memory_id]`` (new memory, new vector) and drop the old text from
        history, REDACT steps null the earlier texts in history. A memory changed since the
        preview fails the whole plan (nothing applied); one already deleted is reported as
        missing."""
        vectors = {
            mid: self._check_vectors(vec.reshape(1, -1), 1)[0] for mid, (_, vec) in rewrites.items()
        }
        outcome = PlanOutcome([], [], 0, [])
        with self.writing() as txn:
            plan = self._usable_plan(txn, plan_id, user_id, project_id, now)
            keys = [Scope(user_id=user_id).key]
            if project_id is not None:
                keys.append(Scope(user_id=user_id, project_id=project_id).key)
            for step in plan.steps:
                if step.action != ForgetAction.KEEP:
                    self._run_step(txn, step, keys, rewrites, vectors, actor, outcome)
            _finish_plan(txn, plan.id, PlanStatus.EXECUTED, now)
        if outcome.forgotten or outcome.rewritten or outcome.redacted:
            self._after_delete()
        kept = sum(step.action == ForgetAction.KEEP for step in plan.steps)
        return PlanOutcome(
            outcome.forgotten, outcome.rewritten, kept, outcome.missing, outcome.redacted
        )

    def _run_step(
        self,
        txn: TxnT,
        step: ForgetStep,
        keys: Sequence[str],
        rewrites: Mapping[str, tuple[Memory, Vectors]],
        vectors: Mapping[str, Vectors],
        actor: str | None,
        outcome: PlanOutcome,
    ) -> None:
        """One FORGET, REWRITE or REDACT step of a plan, its memory id added to ``outcome``."""
        row = self._step_row(txn, step, keys)
        if row is None:
            outcome.missing.append(step.memory_id)
        elif step.action == ForgetAction.FORGET:
            self._delete_rows(txn, [row], actor, EventKind.FORGET)
            outcome.forgotten.append(step.memory_id)
        elif step.action == ForgetAction.REDACT:
            current = self.dialect.memory(row).content
            txn.execute(_REDACT, (current, current, step.memory_id, current, current))
            outcome.redacted.append(step.memory_id)
        else:
            if step.memory_id not in rewrites:
                raise ValidationError(
                    f"no rewritten memory given for {step.memory_id}", field="rewrites"
                )
            memory = rewrites[step.memory_id][0]
            # The old text must leave history too: earlier events go and one UPDATE event
            # without the old text stays.
            txn.execute("DELETE FROM history WHERE memory_id = ?", (memory.id,))
            event = HistoryEvent.about(memory, EventKind.UPDATE, actor, new_content=memory.content)
            self._replace_row(txn, memory, vectors[step.memory_id], event)
            outcome.rewritten.append(step.memory_id)

    def _plan(self, txn: TxnT, plan_id: str, *, lock: bool) -> ForgetPlan | None:
        lock_sql = self.dialect.for_update if lock else ""
        r = txn.one(f"SELECT {_PLAN_COLUMNS} FROM forget_plans WHERE id = ?{lock_sql}", (plan_id,))
        if r is None:
            return None
        return ForgetPlan.model_validate(
            {
                "id": r[0],
                "user_id": r[1],
                "project_id": r[2],
                "steps": json.loads(r[3]),
                "status": r[4],
                "created_at": from_us(r[5]),
                "expires_at": from_us(r[6]),
                "finished_at": from_us(r[7]),
            }
        )

    def _usable_plan(
        self, txn: TxnT, plan_id: str, user_id: str, project_id: str | None, now: datetime
    ) -> ForgetPlan:
        """The plan, checked (and locked) inside the write transaction so two confirms
        cannot both run it."""
        plan = self._plan(txn, plan_id, lock=True)
        if plan is None:
            raise NotFound(f"no forget plan {plan_id!r} for this user")
        plan.check_usable(user_id, project_id, now)
        return plan

    def _step_row(self, txn: TxnT, step: ForgetStep, keys: Sequence[str]) -> tuple[Any, ...] | None:
        """The memory row of one plan step, if still there; raises if it changed since the plan."""
        d = self.dialect
        by_scope, params = d.any_of("scope_key", keys)
        row = txn.one(
            f"SELECT {d.columns} FROM memories WHERE id = ? AND {by_scope}{d.for_update}",
            [step.memory_id, *params],
        )
        if row is not None and d.memory(row).updated_at != step.updated_at:
            raise ValidationError(
                f"memory {step.memory_id} changed after the forget preview, so nothing was "
                "applied; run forget_preview again",
                field="planId",
            )
        return row


def _finish_plan(txn: Transaction, plan_id: str, status: PlanStatus, now: datetime) -> None:
    # The steps (ids and rewritten text) are not needed once the plan has ended.
    txn.execute(
        "UPDATE forget_plans SET status = ?, finished_us = ?, steps = '[]' WHERE id = ?",
        (str(status), to_us(now), plan_id),
    )


__all__ = ["SqlForgetPlans"]
