"""MemoryBank: the one service object. Every interface (tools, REST, MCP, CLI) calls it.

>>> import memorybank
>>> with memorybank.open("sqlite:///demo.db") as bank:
...     bank.save("alice", "I prefer TypeScript", "preference").content
...     [hit.memory.content for hit in bank.search("alice", "favourite language")]
'User prefers TypeScript'
['User prefers TypeScript']
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Unpack

from memorybank.core.block_cache import BlockCache
from memorybank.core.reinforcement import Reinforcements
from memorybank.core.relations import rejudge_restated
from memorybank.core.rewrite import (
    Changes,
    apply_changes,
    check_link,
    compare_and_set,
    mark_superseded,
    unsupersede,
)
from memorybank.core.scopes import scope_set
from memorybank.core.search import Pool, Probes
from memorybank.core.settle import save_judge
from memorybank.core.usage import Usage
from memorybank.core.writes import WriteBudget, embedded
from memorybank.errors import EmbeddingModelMismatch, NotFound, ValidationError
from memorybank.model import (
    Category,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Role,
    SaveFields,
    SaveInput,
    SaveResult,
    Scope,
    ScopeChoice,
    SearchHit,
    utcnow,
)
from memorybank.providers.embedders.base import Embedder, ProgressFn
from memorybank.providers.embedders.query_cache import DEFAULT_QUERY_CACHE_SIZE, QueryVectorCache
from memorybank.providers.judges import judge_for
from memorybank.rules.filtering import FilterArgs, where
from memorybank.rules.inputs import check_query
from memorybank.rules.intake import prepare_batch, replaces_any, save_result
from memorybank.rules.permissions import Action, adding, allowed, require
from memorybank.rules.policy import PolicySettings
from memorybank.rules.ranking import RetrievalSettings
from memorybank.rules.sessions import assign_sessions
from memorybank.rules.verdicts import THRESHOLDS, Judge
from memorybank.stores.base import Order, Replaces, Store
from memorybank.stores.insights_sql import usage_sink

#: What a save does with stored facts the new one may update or contradict.
OnConflict = Literal["auto", "keep", "supersede"]


class MemoryBank:
    """Long-term memory for one application: save, search, update and forget facts.

    Takes its parts: a :class:`~memorybank.stores.base.Store`, an
    :class:`~memorybank.providers.embedders.base.Embedder`, and optionally an LLM client. Use
    :func:`memorybank.open` to build the default stack. The vectors of the last
    ``query_cache_size`` distinct search queries are kept (``bank.query_cache``), so a repeated
    query skips the embedding model; 0 turns that off. ``write_rate_per_minute`` is the
    per-user limit of writes the adapters start (``bank.writes``, a
    :class:`~memorybank.core.writes.WriteBudget`); ``None``, the default, is no limit.

    >>> from memorybank.providers.embedders import LocalEmbedder
    >>> from memorybank.stores.sqlite import SQLiteStore
    >>> embedder = LocalEmbedder()
    >>> store = SQLiteStore("parts.db", dimension=embedder.dimension)
    >>> with MemoryBank(store=store, embedder=embedder) as own:
    ...     own.save("u1", "User prefers dark mode", "preference").success
    True
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        llm: Any = None,
        *,
        policy: PolicySettings | None = None,
        retrieval: RetrievalSettings | None = None,
        check_model: bool = True,
        query_cache_size: int = DEFAULT_QUERY_CACHE_SIZE,
        write_rate_per_minute: int | None = None,
        judge: Judge | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self._judge = judge
        self.policy = policy or PolicySettings()
        self.retrieval = retrieval or RetrievalSettings()
        self.query_cache = QueryVectorCache(query_cache_size)
        # What the memory block reads again for the next message, until a write to the scope.
        self.block_cache = BlockCache(store)
        # What searches return is reinforced (importance decay); usage feeds seed 002's metrics.
        self.reinforcements = Reinforcements(store)
        self.usage = Usage(usage_sink(store))
        self._probes = Probes()
        # The limits of what adapters start, one place: writes, and reads the server limits.
        self.writes = WriteBudget(write_rate_per_minute)
        if check_model:
            self._check_model()

    @property
    def judge(self) -> Judge:
        """What decides duplicates, updates and distinct facts on every path, and reads
        relevance: the one given, else the shipped model (loaded on first use), with the
        bank's LLM settling the pairs it is unsure of when there is one."""
        if self._judge is None:
            self._judge = judge_for(self.llm)
        return self._judge

    def _check_model(self) -> None:
        stored = self.store.get_meta("embedding_model")
        if stored is None:
            self.store.set_meta("embedding_model", self.embedder.model_id)
            self.store.set_meta("embedding_dimension", str(self.embedder.dimension))
        elif stored != self.embedder.model_id:
            raise EmbeddingModelMismatch(stored, self.embedder.model_id)

    def close(self) -> None:
        """Release the store's files, the embedder's session and the LLM client's
        connections (as the store and embedder, a bank closes what it was given)."""
        self._probes.close()
        self.reinforcements.close()
        self.usage.close()
        self.store.close()
        self.embedder.close()
        closing = getattr(self.llm, "close", None)
        if callable(closing):
            closing()

    def __enter__(self) -> MemoryBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- saving -----------------------------------------------------------------------------

    def save(
        self,
        user_id: str,
        content: str | SaveInput,
        category: Category | str | None = None,
        *,
        project_id: str | None = None,
        role: Role | None = None,
        on_conflict: OnConflict = "auto",
        **fields: Unpack[SaveFields],
    ) -> SaveResult:
        """Validate, rephrase to the third person, embed, check for duplicates, score
        importance and store one fact: ``content`` as a :class:`SaveInput`, or its text with
        the item's other fields as keywords (``tags=``, ``importance=`` …
        :class:`~memorybank.model.SaveFields`). ``role`` is the caller's role in
        ``project_id`` (see :mod:`memorybank.rules.permissions`; ``None``: the host
        application). The stored facts it surely replaces are superseded by it and listed in
        ``replaced``; those it only may update or contradict are kept and listed in
        ``conflicts`` (``on_conflict``: see :meth:`save_many`).

        >>> bank.save("u1", "I prefer TypeScript", "preference").content
        'User prefers TypeScript'
        >>> bank.save("u1", "I prefer dark mode").category  # None: inferred from the text
        <Category.PREFERENCE: 'preference'>
        >>> bank.save("u1", SaveInput(content="I like tea", importance=7)).importance
        7
        """
        if isinstance(content, SaveInput):
            if category is not None or fields:
                raise ValidationError("pass a SaveInput or its fields as keywords, not both")
            item: SaveInput | dict[str, Any] = content
        else:
            item = {"content": content, "category": category, **fields}
        return self.save_many(
            user_id, [item], project_id=project_id, role=role, on_conflict=on_conflict
        )[0]

    def save_many(
        self,
        user_id: str,
        items: Iterable[SaveInput | Mapping[str, Any]],
        *,
        project_id: str | None = None,
        progress: ProgressFn | None = None,
        role: Role | None = None,
        on_conflict: OnConflict = "auto",
    ) -> list[SaveResult]:
        """Save a batch: one embedding batch, one transaction. Any invalid item raises a
        :class:`ValidationError` naming its index, and nothing is stored. A stored fact lists
        the stored facts of its scope it may update or contradict (``conflicts``, as
        :attr:`judge` finds them, :func:`memorybank.rules.verdicts.verdict` decides; a duplicate
        is refused).
        ``on_conflict`` says which the new fact supersedes in the same transaction (kept in
        history, out of search and the prompt, :meth:`restore`-able; ``replaced``, the rest
        ``conflicts``): ``"auto"`` those it surely replaces (``verdicts.surely_replaces``; none if
        ``role`` may not change facts), ``"supersede"`` all, ``"keep"`` none.

        Conversation items (``ring="episodic"``, ``source="conversation"``) are stored as said:
        no third-person rule, no minimum length, no duplicate rejection; longer text is split
        into chunks that keep the item's metadata and time.
        """
        scope_set(user_id, project_id)  # validates user_id; the store uses each memory's scope
        prepared = prepare_batch(items, user_id, project_id, self.policy, self.embedder.model_id)
        turns = assign_sessions(
            [m for m, _, _ in prepared], lambda: self._latest_turn(user_id, project_id)
        )
        prepared = [(m, c, r) for m, (_, c, r) in zip(turns, prepared, strict=True)]
        for action in {adding(memory.source) for memory, _, _ in prepared}:
            require(role, action, project_id)
        if on_conflict == "supersede":
            require(role, Action.CHANGE, project_id)
        if not prepared:
            return []
        vectors = embedded(
            self.writes, self.embedder, [m.content for m, _, _ in prepared], progress
        )
        memories, checks = [m for m, _, _ in prepared], [check for _, check, _ in prepared]
        may_change = project_id is None or allowed(role, Action.CHANGE)
        restate = on_conflict != "keep" and may_change
        judge, sure = save_judge(self.store, self.judge, memories, vectors, checks, restate=restate)
        replaces: Replaces | None = None
        if on_conflict == "supersede":
            replaces = replaces_any
        elif on_conflict == "auto" and may_change:
            replaces = sure
        outcomes = self.store.insert(
            memories,
            vectors,
            dedup=checks,
            actor=user_id,
            judge=judge,
            candidate_floor=THRESHOLDS.candidate,
            candidates=THRESHOLDS.candidates,
            replaces=replaces,
        )
        rejudge_restated(self.store, self.judge, outcomes, vectors)
        results = [
            save_result(outcome.memory, outcome, rephrased)
            for outcome, (_, _, rephrased) in zip(outcomes, prepared, strict=True)
        ]
        self.usage.saves_decided(user_id, results)
        return results

    # -- reading ----------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        filters: MemoryFilter | None = None,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 10,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        **conditions: Unpack[FilterArgs],
    ) -> list[SearchHit]:
        """Hybrid search (vectors + BM25, weighted by importance and recency), best first;
        only hits whose calibrated ``relevance`` is at least ``min_relevance``. The memories
        searched meet ``filters`` (a :class:`MemoryFilter`) or the keyword ``conditions``
        (``category=``, ``since="7d"`` … :class:`~memorybank.rules.filtering.FilterArgs`).

        >>> _ = bank.save("u1", "User prefers TypeScript", "preference")
        >>> [h.memory.content for h in bank.search("u1", "programming language")]
        ['User prefers TypeScript']
        >>> bank.search("u1", "programming language", category="identity")
        []
        """
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query is empty: say what to look for", field="query")
        check_query(query)
        if not 1 <= limit <= 1000:
            raise ValidationError(f"limit {limit} must be between 1 and 1000", field="limit")
        scopes_searched = scope_set(user_id, project_id, scopes)
        chosen = where(filters, conditions, superseded=None if include_superseded else False)
        found = self._pool().ranked(scopes_searched, query, limit, chosen, utcnow(), min_relevance)
        self.reinforcements.note(found)
        self.usage.searched(user_id, hits=len(found))  # search hit rate: searches that found any
        return found

    def _latest_turn(self, user_id: str, project_id: str | None) -> Memory | None:
        """The newest conversation turn of one scope (where an implicit session continues)."""
        scope: ScopeChoice = "user" if project_id is None else "project"
        turns = self.list(
            user_id, project_id=project_id, scopes=scope, limit=1, source="conversation"
        )
        return turns[0] if turns else None

    def _pool(self) -> Pool:
        """Where :meth:`search` looks: its candidates and their evidence."""
        vector_of = functools.partial(self.query_cache.vector, self.embedder)
        return Pool(self.store, vector_of, self.retrieval, self._probes)

    def get(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> Memory:
        """One memory by id. Raises :class:`NotFound` if it is not in the caller's scopes."""
        memory = self.store.get(memory_id, scope_set(user_id, project_id))
        if memory is None:
            raise NotFound(f"no memory {memory_id!r}")
        return memory

    def list(
        self,
        user_id: str,
        filters: MemoryFilter | None = None,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 50,
        offset: int = 0,
        order: Order = "created_desc",
        **conditions: Unpack[FilterArgs],
    ) -> builtins.list[Memory]:
        """Memories in the caller's scopes meeting ``filters`` or ``conditions`` (as
        :meth:`search` takes them), newest first by default, a page at a time. Superseded
        memories are listed too unless the filter says ``superseded=False``: the newest
        current facts of the last week are ``list(user, since="7d", superseded=False)``.

        >>> _ = bank.save("u1", "User prefers green tea", "preference")
        >>> [m.content for m in bank.list("u1", since="7d", superseded=False, limit=5)]
        ['User prefers green tea']
        """
        # The stores bind offset as a 64-bit integer: a larger one is the caller's mistake.
        if not 1 <= limit <= 10_000 or not 0 <= offset < 2**63:
            raise ValidationError("limit must be 1–10000 and offset 0 to 2^63-1", field="limit")
        if order not in ("created_desc", "created_asc", "importance_desc"):
            raise ValidationError(f"unknown order {order!r}", field="order")
        return self.store.list_memories(
            scope_set(user_id, project_id, scopes),
            where(filters, conditions),
            limit=limit,
            offset=offset,
            order=order,
        )

    def count(
        self,
        user_id: str,
        filters: MemoryFilter | None = None,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        **conditions: Unpack[FilterArgs],
    ) -> int:
        """How many memories the caller has (in the chosen scopes, meeting the filters)."""
        return self.store.count(scope_set(user_id, project_id, scopes), where(filters, conditions))

    def history(
        self, memory_id: str, user_id: str, *, project_id: str | None = None
    ) -> builtins.list[HistoryEvent]:
        """ADD / UPDATE (old → new) / DELETE events of one memory, oldest first."""
        events = self.store.history(memory_id, scope_set(user_id, project_id))
        if not events:
            raise NotFound(f"no memory {memory_id!r}")
        return events

    # -- changing ---------------------------------------------------------------------------

    def update(
        self,
        memory_id: str,
        user_id: str,
        *,
        project_id: str | None = None,
        content: str | None = None,
        category: Category | str | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        importance: int | None = None,
        actor: str | None = None,
        role: Role | None = None,
    ) -> Memory:
        """Change a memory in place: same id; re-validated, re-embedded, recorded in history.
        In a project's context (``project_id``) only its admins and owners may change memory.
        Text another current fact already says merges into that one, which is returned instead
        (:mod:`memorybank.core.rewrite`).

        >>> mid = bank.save("u1", "User prefers to be called Sam", "identity").memory_id
        >>> bank.update(mid, "u1", content="User prefers to be called SG").content
        'User prefers to be called SG'
        """
        require(role, Action.CHANGE, project_id)
        changes = Changes(content, category, tags, metadata, importance)
        parts = (self.store, self.judge, self.embedder, self.policy)
        attempt = functools.partial(apply_changes, *parts, changes, actor or user_id)
        return compare_and_set(
            self.store, self.get(memory_id, user_id, project_id=project_id), attempt
        )

    def delete(
        self,
        memory_id: str,
        user_id: str,
        *,
        project_id: str | None = None,
        actor: str | None = None,
        role: Role | None = None,
    ) -> None:
        """Delete for real: text, vector and index entries are gone; history keeps a
        tombstone. Raises :class:`NotFound` if the memory is not in the caller's scopes."""
        require(role, Action.CHANGE, project_id)
        deleted = self.store.delete([memory_id], scope_set(user_id, project_id), actor or user_id)
        if not deleted:
            raise NotFound(f"no memory {memory_id!r}")

    def delete_many(
        self,
        memory_ids: Sequence[str],
        user_id: str,
        *,
        project_id: str | None = None,
        actor: str | None = None,
        role: Role | None = None,
    ) -> builtins.list[str]:
        """Delete several memories in one transaction; returns the ids actually deleted."""
        require(role, Action.CHANGE, project_id)
        return self.store.delete(list(memory_ids), scope_set(user_id, project_id), actor or user_id)

    def clear(
        self,
        user_id: str,
        project_id: str | None = None,
        *,
        actor: str | None = None,
        role: Role | None = None,
    ) -> int:
        """Delete every memory of the user's private scope (or of ``project_id``)."""
        scope_set(user_id, project_id)
        require(role, Action.CHANGE, project_id)
        return self.store.clear(Scope(user_id=user_id, project_id=project_id), actor or user_id)

    def supersede(
        self,
        memory_id: str,
        newer_id: str,
        user_id: str,
        *,
        project_id: str | None = None,
        actor: str | None = None,
        role: Role | None = None,
    ) -> Memory:
        """Mark memory ``memory_id`` replaced by the newer memory ``newer_id``: it stays
        stored (and in history) but leaves search and the prompt unless asked for.

        >>> old = bank.save("u1", "User lives in Leeds", "identity").memory_id
        >>> new = bank.save("u1", "User moved to York", "identity").memory_id
        >>> bank.supersede(old, new, "u1").superseded_by == new
        True
        """
        require(role, Action.CHANGE, project_id)
        old = self.get(memory_id, user_id, project_id=project_id)
        newer = self.get(newer_id, user_id, project_id=project_id)
        check_link(self.store, old, newer, scope_set(user_id, project_id))
        return mark_superseded(self.store, old, newer_id, actor or user_id)

    def restore(
        self,
        memory_id: str,
        user_id: str,
        *,
        project_id: str | None = None,
        actor: str | None = None,
        role: Role | None = None,
    ) -> Memory:
        """Bring a superseded memory back: ``superseded_by`` cleared (an UPDATE history event,
        its text unchanged), in search and the prompt again; the newer memory stays.

        >>> old = bank.save("u1", "User lives in Boston", "identity").memory_id
        >>> moved = bank.save("u1", "User moved to Chicago", "identity", on_conflict="supersede")
        >>> moved.replaced[0].memory_id == old
        True
        >>> bank.restore(old, "u1").superseded_by is None
        True
        """
        require(role, Action.CHANGE, project_id)
        old = self.get(memory_id, user_id, project_id=project_id)
        if old.superseded_by is None:
            return old
        return unsupersede(self.store, old, actor or user_id)


__all__ = ["MemoryBank", "OnConflict"]
