"""The Store protocol every backend implements, and the values it exchanges.

A store persists memories, their vectors, a full-text index and history, and answers the two
candidate queries hybrid retrieval fuses (vector and full text). Every read and write is
filtered by owner and scope inside the store itself: a :class:`ScopeSet` comes with each call.
Scoring (fusion, importance, recency) lives in :mod:`memorybank.rules.ranking`, not here.

Services that keep tables of their own beside the memories (accounts, usage counters,
webhooks) need a SQL database; a store declares whether it has one (:attr:`Store.sql`) and
:func:`require_sql` turns a store without one into a clear configuration error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Literal, Protocol

from memorybank.errors import ConfigurationError
from memorybank.model import (
    Event,
    ForgetPlan,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Scope,
    ScopeSet,
)
from memorybank.model.stored import Candidate, InsertOutcome, KeptPair, PlanOutcome, Related
from memorybank.providers.embedders.base import Vectors
from memorybank.stores.sql import SqlDatabase

Order = Literal["created_desc", "created_asc", "importance_desc"]


class Judgement(Protocol):
    """What a judge answers about a (new, stored) pair: ``relation`` is ``"duplicate"``
    (the new one is refused), ``"conflict"`` (stored, reported, and kept as a relation every
    read shows: the new one may update the stored one) or anything else; ``probabilities``
    (duplicate, update, distinct) and ``judge`` say what it read, kept with the relation."""

    @property
    def relation(self) -> str: ...

    @property
    def why(self) -> str: ...

    @property
    def probabilities(self) -> tuple[float, float, float] | None: ...

    @property
    def judge(self) -> str | None: ...


#: Decides how a new memory relates to each stored candidate (with its cosine similarity),
#: in one call: a judge reads the candidates of one memory as one batch.
Judge = Callable[[Memory, Sequence[tuple[Memory, float]]], Sequence[Judgement]]

#: Which of the stored memories the judge called conflicts (each with its cosine similarity)
#: a new memory replaces: those are superseded by it in the insert's transaction.
Replaces = Callable[[Memory, Sequence[tuple[Memory, float]]], Sequence[bool]]


class Store(Protocol):
    """Persistence for memories. See :mod:`memorybank.stores.sqlite` for the default."""

    #: Whether reads are round trips to a database server, so that a search gains by running
    #: its text and vector reads side by side (in-process SQLite would only pay the threads).
    remote_reads: bool

    @property
    def sql(self) -> SqlDatabase | None:
        """The SQL database this store keeps its tables in, which accounts, usage counters
        and webhooks keep theirs in too; ``None`` for a store without one (those services
        then refuse it, see :func:`require_sql`)."""
        ...

    def get_meta(self, key: str) -> str | None:
        """A value from the store's own settings table (e.g. the embedding model id)."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the store's settings table."""
        ...

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
        """Insert memories with their vectors in one transaction.

        The items whose ``dedup`` flag is set are judged (they need a ``judge``): up to
        ``candidates`` stored facts of the scope with cosine similarity at least
        ``candidate_floor`` (``None``: any), nearest first, earlier items of this batch
        included, are shown to the judge; any ``"duplicate"`` keeps the item out
        (``duplicate_of``), else it is stored with the ``"conflict"`` ones in ``conflicts``,
        but for those ``replaces`` says it replaces: in the same transaction they are marked
        superseded by it (``superseded_by``, a SUPERSEDE history event) and listed in
        ``superseded`` instead.
        What is a duplicate is the judge's to say; the store only finds the candidates. The
        check and the insert are serialised per scope so concurrent writers cannot both insert.
        Each inserted memory gets an ADD history event unless ``record`` is false (a migration,
        which copies the history as it was).
        """
        ...

    def get(self, memory_id: str, scopes: ScopeSet) -> Memory | None:
        """The memory with this id if it is visible through ``scopes``."""
        ...

    def replace(
        self,
        memory: Memory,
        vector: Vectors | None,
        event: HistoryEvent,
        *,
        expected: datetime | None = None,
    ) -> bool:
        """Overwrite a memory (same id, same scope) and record ``event``, in one transaction.
        With ``expected`` (the ``updated_at`` the caller read) it is a compare-and-set: a row
        changed since is left as it is and the answer is False, so a read-modify-write never
        undoes a concurrent change (re-read and try again). A memory that is gone raises
        :class:`~memorybank.errors.NotFound`."""
        ...

    def delete(self, memory_ids: Sequence[str], scopes: ScopeSet, actor: str | None) -> list[str]:
        """Delete memories for real; history keeps only tombstones. Returns the ids deleted."""
        ...

    def clear(self, scope: Scope, actor: str | None) -> int:
        """Delete every memory of one scope. Returns how many."""
        ...

    def list_memories(
        self,
        scopes: ScopeSet,
        filters: MemoryFilter,
        *,
        limit: int,
        offset: int = 0,
        order: Order = "created_desc",
    ) -> list[Memory]:
        """Memories visible through ``scopes`` that meet ``filters``, in ``order``."""
        ...

    def count(self, scopes: ScopeSet, filters: MemoryFilter) -> int:
        """How many memories :meth:`list` would return without a limit."""
        ...

    def vector_search(
        self, scopes: ScopeSet, query: Vectors, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` nearest memories by cosine similarity (score in [-1, 1])."""
        ...

    def text_search(
        self, scopes: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> list[Candidate]:
        """The ``k`` best full-text matches by BM25 (score ≥ 0, higher is better)."""
        ...

    def neighbours(
        self,
        memory_ids: Sequence[str],
        scopes: ScopeSet,
        window: int,
        filters: MemoryFilter | None = None,
    ) -> dict[str, list[tuple[Candidate, int]]]:
        """For each given memory that has a ``session_id``: the memories of the same session
        and scope at most ``window`` places before or after it (in the order they were
        stored; places are counted over all of them), with their offset (-2, -1, 1, 2 …),
        keeping those that meet ``filters``. Memories without a session get none."""
        ...

    def existing_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids are taken, in any scope (for imports that keep ids)."""
        ...

    def hybrid_candidates(
        self, scopes: ScopeSet, vector: Vectors, query: str, k: int, filters: MemoryFilter
    ) -> tuple[list[Candidate], list[Candidate]]:
        """:meth:`vector_search` and :meth:`text_search` together, from one snapshot."""
        ...

    def events(self, scope_keys: Sequence[str], after: int, limit: int) -> list[Event]:
        """Changes to the memories of the scopes ``scope_keys`` (:attr:`Scope.key`) numbered
        above ``after``, oldest first, at most ``limit``. Every change recorded in history
        is an event, numbered in one sequence that increases in commit order and is never
        reused; a deleted memory's earlier events go with it (its tombstone stays)."""
        ...

    def last_event_id(self) -> int:
        """The number of the newest event (0 when there is none)."""
        ...

    def last_event_of(self, scopes: ScopeSet) -> int:
        """The number of the newest event of the scopes in ``scopes`` (0 when there is none):
        it changes with every write to them, so what was read of them is current while it
        stays the same (the memory block's cache)."""
        ...

    def history(self, memory_id: str, scopes: ScopeSet) -> list[HistoryEvent]:
        """Events of one memory, oldest first (tombstones included for deleted ones)."""
        ...

    def earlier_texts(
        self, scopes: ScopeSet, terms: Sequence[str], min_terms: int, limit: int
    ) -> list[tuple[Memory, list[str]]]:
        """Memories visible through ``scopes`` whose history holds an earlier text (the old
        text of an UPDATE event) containing at least ``min_terms`` of ``terms``, each with all
        its earlier texts: every text of its history other than its current content, distinct,
        oldest first. At most ``limit`` memories, the most recently changed first.

        A term matches as a substring of the text lower-cased (ASCII letters at least) with
        its apostrophes removed; give terms in lower case. Seed 003's forget finds old
        versions with it (:mod:`memorybank.services.forget`), which then judges each text itself.
        """
        ...

    def iter_memories(
        self, batch_size: int = 500, after: str | None = None
    ) -> Iterator[list[Memory]]:
        """Every memory of every user, in batches, in the order they were stored (for
        reindex, rejudge and migration); with ``after``, those stored after that memory
        (where an interrupted pass resumes)."""
        ...

    def vectors_of(self, memory_ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of these memories, by id (for migration and checks)."""
        ...

    def set_vectors(self, memory_ids: Sequence[str], vectors: Vectors, model_id: str) -> None:
        """Replace the stored vectors of existing memories (reindex)."""
        ...

    def reinforce(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Mark memories reinforced at ``at`` (recalled; a refused duplicate reinforces the
        stored fact inside :meth:`insert`): no history event, ids already gone skipped, a
        later time never moved back."""
        ...

    def scopes(self) -> list[Scope]:
        """Every scope holding current memories, each once: a user's private memory, or a
        project's (named with one of its users), sorted (for jobs over all scopes)."""
        ...

    def project_ids(self) -> list[str]:
        """The id of every project holding memories, sorted (local mode's projects: its one
        user owns every project)."""
        ...

    def stats(self) -> dict[str, int | str]:
        """Counts and sizes for ``memorybank stats``."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...

    def save_forget_plan(self, plan: ForgetPlan) -> None:
        """Store a new forget plan (and drop plans that ended long ago)."""
        ...

    def get_forget_plan(self, plan_id: str) -> ForgetPlan | None:
        """The plan with this id, whoever owns it; callers check the owner."""
        ...

    def cancel_forget_plan(
        self, plan_id: str, user_id: str, project_id: str | None, now: datetime
    ) -> ForgetPlan:
        """Cancel a pending plan of this user. Raises :class:`NotFound` for a missing or
        foreign plan and :class:`ValidationError` for an expired, cancelled or used one."""
        ...

    def execute_forget_plan(
        self,
        plan_id: str,
        user_id: str,
        project_id: str | None,
        rewrites: Mapping[str, tuple[Memory, Vectors]],
        now: datetime,
        actor: str | None,
    ) -> PlanOutcome:
        """Apply a pending plan in one transaction (deletes, rewrites and redactions
        together, or nothing), checking it as :meth:`cancel_forget_plan` does and refusing
        when a memory changed since the plan was made. The plan is then marked executed.

        FORGET deletes as :meth:`delete` does; REWRITE stores ``rewrites[memory_id]`` and
        leaves one UPDATE event without the old text; REDACT keeps the memory and its events
        and nulls every event text other than its current content. No step's old text is
        left in the database's files (as after :meth:`delete`)."""
        ...

    def add_org_member(self, org_id: str, user_id: str) -> None:
        """Record that a user belongs to an org."""
        ...

    def remove_org_member(self, org_id: str, user_id: str) -> bool:
        """Remove a user from an org; whether they were a member."""
        ...

    def org_users(self, org_id: str) -> list[str]:
        """The users of an org, sorted."""
        ...

    def keep_both(self, memory: Memory, other: Memory, actor: str | None) -> None:
        """Record the answer "both are true" for two facts a save may have said one updates
        (either order): no longer an open pair, nor an earlier note in a prompt block."""
        ...

    def open_pairs(self, scope_keys: Sequence[str], limit: int) -> list[tuple[Memory, Memory]]:
        """The (newer, older) facts of the pairs a save reported as conflicts in these scopes,
        not yet answered, both current; oldest first, at most ``limit``, in one read."""
        ...

    def updates_among(self, memory_ids: Sequence[str]) -> set[tuple[str, str]]:
        """The (newer id, older id) pairs among ``memory_ids`` where the newer fact may update
        the older, as judged when it was written, less those answered "both are true": what
        every read shows newest first (one indexed read; reads never ask the judge)."""
        ...

    def updaters_of(self, memory_ids: Sequence[str], scopes: ScopeSet) -> list[tuple[str, Memory]]:
        """(older id, newer memory) for each current fact visible through ``scopes`` that may
        update one of ``memory_ids``, as judged when it was written, less those answered "both
        are true": how a read brings the current value beside an outdated hit (one read)."""
        ...

    def relate(self, judged: Sequence[tuple[Memory, Sequence[Related]]], *, restated: bool) -> None:
        """For each (memory, related) of ``judged``, in one transaction: replace the relations
        judged with the memory as the newer fact by ``related`` (an edit, an import, a new
        judge); ``restated`` (its text changed) also drops those with it as the older fact.
        Answers "both are true" stay."""
        ...

    def kept_pairs(self, memory_ids: Sequence[str]) -> list[KeptPair]:
        """The pairs answered "both are true" whose two facts are both among ``memory_ids``,
        with who answered and when (what an export keeps), oldest answer first."""
        ...

    def keep_pairs(self, pairs: Sequence[KeptPair]) -> None:
        """Record answers "both are true" with their own actor and time (an import), in one
        transaction; a pair whose facts are not both stored in one scope is left out."""
        ...


def require_sql(store: Store, needs: str) -> SqlDatabase:
    """The SQL database of ``store``, which ``needs`` (e.g. ``"accounts"``) keep their
    tables in; a :class:`~memorybank.errors.ConfigurationError` saying what to configure
    when the store has none.

    >>> require_sql(bank.store, "accounts") is bank.store
    True
    """
    database = store.sql
    if database is None:
        raise ConfigurationError(
            f"{needs} keep their tables in the store's SQL database, and "
            f"{type(store).__name__} has none: set MEMORYBANK_URL to sqlite:///… or "
            "postgresql://…"
        )
    return database
