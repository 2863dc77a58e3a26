"""MemoryBank: the one service object. Every interface (tools, REST, MCP, CLI) calls it.

>>> import memorybank
>>> with memorybank.open("sqlite:////tmp/demo.db") as bank:  # doctest: +SKIP
...     bank.save("alice", "I prefer TypeScript", "preference").content
...     [hit.memory.content for hit in bank.search("alice", "favourite language")]
'User prefers TypeScript'
['User prefers TypeScript']
"""

from __future__ import annotations

import builtins
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError as PydanticValidationError

from memorybank.embedders.base import Embedder, Vectors
from memorybank.embedders.query_cache import DEFAULT_QUERY_CACHE_SIZE, QueryVectorCache
from memorybank.errors import EmbeddingModelMismatch, NotFound, ValidationError
from memorybank.model import (
    Category,
    Domain,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Ring,
    SaveInput,
    SaveResult,
    Scope,
    ScopeChoice,
    ScopeSet,
    SearchHit,
    Source,
    new_id,
    utcnow,
)
from memorybank.policy import (
    PolicySettings,
    parse_category,
    score_importance,
    to_third_person,
    validate_memory,
)
from memorybank.portability import export_json, export_markdown, parse_export
from memorybank.retrieval import RetrievalSettings, fuse, neutral_query, speakers_named
from memorybank.stores.base import Candidate, Order, Store
from memorybank.tools.base import ToolContext

_SINCE = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
}
ProgressFn = Callable[[int, int], None]
CONVERSATION_IMPORTANCE = 5


def parse_since(since: str | datetime | timedelta | None) -> datetime | None:
    """``"24h"``/``"7d"``/``"30d"``/``"90d"`` (or ``"12h"``, ``"3d"``), a timedelta or a
    datetime → the datetime it means; ``None`` → ``None``."""
    if since is None or isinstance(since, datetime):
        return since
    if isinstance(since, timedelta):
        return utcnow() - since
    if since in _SINCE:
        return utcnow() - _SINCE[since]
    match = re.fullmatch(r"(\d+)([hdw])", since.strip())
    if not match:
        raise ValidationError(
            f"since {since!r} is not understood: use 24h, 7d, 30d, 90d, a number with h/d/w, "
            "or an ISO datetime",
            field="since",
        )
    unit = {"h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
    return utcnow() - timedelta(**{unit: int(match.group(1))})


def _tuple(value: Any, kind: Callable[[Any], Any], field: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    try:
        return tuple(kind(v) for v in values)
    except ValueError as exc:
        raise ValidationError(f"{field}: {exc}", field=field) from exc


def chunk_text(text: str, limit: int) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, at sentence or word
    boundaries where possible."""
    text = text.strip()
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = max(window.rfind(". "), window.rfind("! "), window.rfind("? "), window.rfind("\n"))
        if cut < limit // 2:
            cut = window.rfind(" ")
        cut = cut + 1 if cut >= limit // 4 else limit
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return pieces


class MemoryBank:
    """Long-term memory for one application: save, search, update and forget facts.

    Takes its parts: a :class:`~memorybank.stores.base.Store`, an
    :class:`~memorybank.embedders.base.Embedder`, and optionally an LLM client. Use
    :func:`memorybank.open` to build the default stack. The vectors of the last
    ``query_cache_size`` distinct search queries are kept (``bank.query_cache``), so a repeated
    query skips the embedding model; 0 turns that off.

    >>> bank = MemoryBank(store=store, embedder=embedder)  # doctest: +SKIP
    >>> bank.save("u1", "User prefers dark mode", "preference").success  # doctest: +SKIP
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
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self.policy = policy or PolicySettings()
        self.retrieval = retrieval or RetrievalSettings()
        self.query_cache = QueryVectorCache(query_cache_size)
        self._probes: ThreadPoolExecutor | None = None
        self._probe_lock = threading.Lock()
        if check_model:
            self._check_model()

    def _check_model(self) -> None:
        stored = self.store.get_meta("embedding_model")
        if stored is None:
            self.store.set_meta("embedding_model", self.embedder.model_id)
            self.store.set_meta("embedding_dimension", str(self.embedder.dimension))
        elif stored != self.embedder.model_id:
            raise EmbeddingModelMismatch(stored, self.embedder.model_id)

    def _probe_pool(self) -> ThreadPoolExecutor:
        with self._probe_lock:
            if self._probes is None:
                self._probes = ThreadPoolExecutor(4, thread_name_prefix="memorybank-probe")
            return self._probes

    def close(self) -> None:
        """Release the store's files and the embedder's session."""
        with self._probe_lock:
            probes, self._probes = self._probes, None
        if probes is not None:
            probes.shutdown(wait=True)
        self.store.close()
        self.embedder.close()

    def __enter__(self) -> MemoryBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scopes -----------------------------------------------------------------------------

    @staticmethod
    def scope_set(user_id: str, project_id: str | None, scopes: ScopeChoice = "all") -> ScopeSet:
        """The scopes a call may touch: the user's private memory and/or one project's."""
        if not user_id or not isinstance(user_id, str):
            raise ValidationError("user_id is required", field="user_id")
        if scopes not in ("all", "user", "project"):
            raise ValidationError(
                f"scopes {scopes!r} is not one of all, user, project", field="scopes"
            )
        if scopes == "project" and project_id is None:
            raise ValidationError("scopes='project' needs a project_id", field="project_id")
        projects = (project_id,) if project_id is not None and scopes != "user" else ()
        return ScopeSet(user_id=user_id, include_private=scopes != "project", project_ids=projects)

    @staticmethod
    def _filters(
        *,
        category: Any = None,
        tags: Sequence[str] | None = None,
        ring: Any = None,
        domain: Any = None,
        min_importance: int | None = None,
        since: str | datetime | timedelta | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        source: Any = None,
        superseded: bool | None = None,
    ) -> MemoryFilter:
        return MemoryFilter(
            category=_tuple(category, Category, "category"),
            tags=None if tags is None else tuple(tags),
            ring=_tuple(ring, Ring, "ring"),
            domain=_tuple(domain, Domain, "domain"),
            min_importance=min_importance,
            since=parse_since(since),
            until=until,
            metadata=None if metadata is None else dict(metadata),
            session_id=session_id,
            source=_tuple(source, Source, "source"),
            superseded=superseded,
        )

    # -- saving -----------------------------------------------------------------------------

    def save(
        self,
        user_id: str,
        content: str,
        category: Category | str,
        *,
        project_id: str | None = None,
        reasoning: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        importance: int | None = None,
        source: Source | str = Source.AI,
        ring: Ring | str = Ring.SEMANTIC,
        domain: Domain | str | None = None,
        occurred_at: datetime | None = None,
        session_id: str | None = None,
        created_by: str | None = None,
    ) -> SaveResult:
        """Validate, rephrase to the third person, embed, check for duplicates, score
        importance and store one fact.

        >>> bank.save("u1", "I prefer TypeScript", "preference").content  # doctest: +SKIP
        'User prefers TypeScript'
        """
        item = {
            "content": content,
            "category": category,
            "reasoning": reasoning,
            "tags": tags,
            "metadata": metadata,
            "importance": importance,
            "source": source,
            "ring": ring,
            "domain": domain,
            "occurred_at": occurred_at,
            "session_id": session_id,
            "created_by": created_by,
        }
        return self.save_many(user_id, [item], project_id=project_id)[0]

    def save_many(
        self,
        user_id: str,
        items: Iterable[SaveInput | Mapping[str, Any]],
        *,
        project_id: str | None = None,
        progress: ProgressFn | None = None,
    ) -> list[SaveResult]:
        """Save a batch: one embedding batch, one transaction. Any invalid item raises a
        :class:`ValidationError` naming its index, and nothing is stored.

        Conversation items (``ring="episodic"``, ``source="conversation"``) are stored as said:
        no third-person rule, no minimum length, no duplicate rejection; longer text is split
        into chunks that keep the item's metadata and time.
        """
        scope = self.scope_set(user_id, project_id)
        del scope  # validates user_id; the memory's own scope is what the store uses
        batch = builtins.list(items)
        prepared: list[tuple[Memory, bool, bool]] = []
        for index, raw in enumerate(batch):
            where = f"item {index}: " if len(batch) > 1 else ""
            try:
                item = raw if isinstance(raw, SaveInput) else SaveInput.model_validate(raw)
                prepared += self._prepare(user_id, project_id, item)
            except ValidationError as exc:
                raise ValidationError(f"{where}{exc}", field=exc.field) from exc
            except PydanticValidationError as exc:
                raise ValidationError(where + _pydantic_message(exc)) from exc
        if not prepared:
            return []
        vectors = self._embed([m.content for m, _, _ in prepared], progress)
        outcomes = self.store.insert(
            [m for m, _, _ in prepared],
            vectors,
            dedup_threshold=self.policy.duplicate_threshold,
            dedup=[check for _, check, _ in prepared],
            actor=user_id,
        )
        return [
            _save_result(outcome.memory, outcome, rephrased)
            for outcome, (_, _, rephrased) in zip(outcomes, prepared, strict=True)
        ]

    def _prepare(
        self, user_id: str, project_id: str | None, item: SaveInput
    ) -> list[tuple[Memory, bool, bool]]:
        """Validated memories for one input, with (memory, dedup?, rephrased?)."""
        conversation = item.ring == Ring.EPISODIC and item.source == Source.CONVERSATION
        if conversation:
            text = item.content.strip()
            if not text:
                raise ValidationError("content is empty: nothing to remember", field="content")
            chunks, rephrased = chunk_text(text, self.policy.content_max), False
            category = parse_category(item.category)
        else:
            text, category = validate_memory(
                item.content,
                item.category,
                reasoning=item.reasoning,
                tags=item.tags,
                metadata=dict(item.metadata or {}),
                importance=item.importance,
                settings=self.policy,
            )
            third = to_third_person(text)
            text, category = validate_memory(third.text, category, settings=self.policy)
            chunks, rephrased = [text], third.rephrased
        if item.importance is not None:
            importance = item.importance
        elif conversation:
            # Seed 000's rules score facts; on raw chat turns they only add noise to ranking,
            # so a message is of middling importance unless the caller says otherwise.
            importance = CONVERSATION_IMPORTANCE
        else:
            importance = score_importance(item.content, category)
        now = utcnow()
        out = []
        for index, chunk in enumerate(chunks):
            metadata = dict(item.metadata or {})
            if len(chunks) > 1:
                metadata.update(chunk=index, chunks=len(chunks))
            out.append(
                (
                    Memory(
                        user_id=user_id,
                        project_id=project_id,
                        content=chunk,
                        category=category,
                        ring=item.ring,
                        domain=item.domain,
                        tags=tuple(item.tags),
                        metadata=metadata,
                        importance=importance,
                        source=item.source,
                        created_by=item.created_by or user_id,
                        reasoning=item.reasoning,
                        session_id=item.session_id,
                        created_at=item.created_at or now,
                        updated_at=now,
                        occurred_at=item.occurred_at,
                        embedding_model=self.embedder.model_id,
                    ),
                    not conversation,
                    rephrased,
                )
            )
        return out

    def _embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> Vectors:
        if progress is None or len(texts) <= 256:
            vectors = self.embedder.embed(texts)
        else:
            parts = []
            for start in range(0, len(texts), 256):
                parts.append(self.embedder.embed(texts[start : start + 256]))
                progress(min(start + 256, len(texts)), len(texts))
            vectors = np.concatenate(parts)
        return vectors

    # -- reading ----------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 10,
        category: Category | str | Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        ring: Ring | str | Sequence[str] | None = None,
        domain: Domain | str | Sequence[str] | None = None,
        min_importance: int | None = None,
        since: str | datetime | timedelta | None = None,
        until: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        source: Source | str | Sequence[str] | None = None,
        include_superseded: bool = False,
    ) -> list[SearchHit]:
        """Hybrid search (vectors + BM25, weighted by importance and recency), best first.

        >>> [h.memory.content for h in bank.search("u1", "programming language")]  # doctest: +SKIP
        ['User prefers TypeScript']
        """
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query is empty: say what to look for", field="query")
        if not 1 <= limit <= 1000:
            raise ValidationError(f"limit {limit} must be between 1 and 1000", field="limit")
        scope_set = self.scope_set(user_id, project_id, scopes)
        filters = self._filters(
            category=category,
            tags=tags,
            ring=ring,
            domain=domain,
            min_importance=min_importance,
            since=since,
            until=until,
            metadata=metadata,
            session_id=session_id,
            source=source,
            superseded=None if include_superseded else False,
        )
        k = max(self.retrieval.candidates, limit * 3)
        vector_hits, text_hits = self._candidates(scope_set, query, k, filters)
        neighbours = self._neighbours(scope_set, filters, [*vector_hits, *text_hits])
        return fuse(
            vector_hits,
            text_hits,
            self.retrieval,
            utcnow(),
            limit,
            query=query,
            neighbours=neighbours,
        )

    def _candidates(
        self, scope_set: ScopeSet, query: str, k: int, filters: MemoryFilter
    ) -> tuple[builtins.list[Candidate], builtins.list[Candidate]]:
        """Vector and text candidates for ``query`` with the speakers it names left out.

        Which speakers those are is learnt from a text search of the query as asked: a
        speaker's memories contain their name, so some of them are among its matches. The
        speaker boost in :func:`~memorybank.retrieval.fuse` still reads the original query.
        """
        if not self.retrieval.speaker_weight:
            vector = self.query_cache.vector(self.embedder, query)
            return self.store.hybrid_candidates(scope_set, vector, query, k, filters)
        if self.store.remote_reads:
            # The probe runs beside the query's embedding and vector search, which the common
            # case (no speaker named) needs as they are: on PostgreSQL each is a round trip of
            # several milliseconds, so a search waits for the longer, not their sum. (In-process
            # SQLite reads take about a millisecond; there the thread handoff costs more.)
            job = self._probe_pool().submit(self.store.text_search, scope_set, query, k, filters)
            try:
                vector = self.query_cache.vector(self.embedder, query)
                vector_hits = self.store.vector_search(scope_set, vector, k, filters)
            except BaseException:
                job.cancel()
                raise
            probe: builtins.list[Candidate] = job.result()
        else:
            probe, vector_hits = self.store.text_search(scope_set, query, k, filters), None
        names = speakers_named(query, (c.speaker for c in probe))
        if not names:
            # The probe is the text search of the query as asked: keep it rather than run
            # it twice (most memories have no speaker, so this is the common case).
            if vector_hits is None:
                vector = self.query_cache.vector(self.embedder, query)
                vector_hits = self.store.vector_search(scope_set, vector, k, filters)
            return vector_hits, probe
        asked = neutral_query(query, names)
        vector = self.query_cache.vector(self.embedder, asked)
        return self.store.hybrid_candidates(scope_set, vector, asked, k, filters)

    def _neighbours(
        self, scope_set: ScopeSet, filters: MemoryFilter, hits: Sequence[Candidate]
    ) -> dict[str, builtins.list[tuple[Memory, int]]]:
        """Session neighbours of the conversation candidates, kept only if they meet the
        filters too (a neighbour joins the results)."""
        settings = self.retrieval
        if not settings.context_weight or not settings.context_window:
            return {}
        ids = sorted({h.id for h in hits if h.session_id is not None})
        found = self.store.neighbours(ids, scope_set, settings.context_window)
        return {
            key: [(m, off) for m, off in around if filters.matches(m)]
            for key, around in found.items()
        }

    def recent(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 30,
        since: str | datetime | timedelta | None = None,
        include_superseded: bool = False,
        **filters: Any,
    ) -> list[Memory]:
        """Newest memories first, optionally only those since ``24h``/``7d``/``30d``/``90d``.
        Memories replaced by newer ones are left out unless ``include_superseded``."""
        if not 1 <= limit <= 500:
            raise ValidationError(f"limit {limit} must be between 1 and 500", field="limit")
        superseded = None if include_superseded else False
        return self.store.list_memories(
            self.scope_set(user_id, project_id, scopes),
            self._filters(since=since, superseded=superseded, **filters),
            limit=limit,
        )

    def get(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> Memory:
        """One memory by id. Raises :class:`NotFound` if it is not in the caller's scopes."""
        memory = self.store.get(memory_id, self.scope_set(user_id, project_id))
        if memory is None:
            raise NotFound(f"no memory {memory_id!r} for this user")
        return memory

    def list(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 50,
        offset: int = 0,
        order: Order = "created_desc",
        **filters: Any,
    ) -> builtins.list[Memory]:
        """Memories in the caller's scopes, newest first by default, a page at a time."""
        # The stores bind offset as a 64-bit integer: a larger one is the caller's mistake.
        if not 1 <= limit <= 10_000 or not 0 <= offset < 2**63:
            raise ValidationError("limit must be 1–10000 and offset 0 to 2^63-1", field="limit")
        if order not in ("created_desc", "created_asc", "importance_desc"):
            raise ValidationError(f"unknown order {order!r}", field="order")
        return self.store.list_memories(
            self.scope_set(user_id, project_id, scopes),
            self._filters(**filters),
            limit=limit,
            offset=offset,
            order=order,
        )

    def count(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        **filters: Any,
    ) -> int:
        """How many memories the caller has (in the chosen scopes, meeting the filters)."""
        return self.store.count(
            self.scope_set(user_id, project_id, scopes), self._filters(**filters)
        )

    def history(
        self, memory_id: str, user_id: str, *, project_id: str | None = None
    ) -> builtins.list[HistoryEvent]:
        """ADD / UPDATE (old → new) / DELETE events of one memory, oldest first."""
        events = self.store.history(memory_id, self.scope_set(user_id, project_id))
        if not events:
            raise NotFound(f"no history for memory {memory_id!r} for this user")
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
    ) -> Memory:
        """Change a memory in place: same id; re-validated, re-embedded, recorded in history.

        >>> bank.update(mid, "u1", content="User prefers to be called SG").content  # doctest: +SKIP
        'User prefers to be called SG'
        """
        old = self.get(memory_id, user_id, project_id=project_id)
        conversation = old.ring == Ring.EPISODIC and old.source == Source.CONVERSATION
        new_content = old.content if content is None else content
        new_category = old.category if category is None else category
        if conversation:
            new_content = new_content.strip()
            if not new_content or len(new_content) > self.policy.content_max:
                raise ValidationError(
                    f"content must be 1–{self.policy.content_max} characters", field="content"
                )
            new_category = Category(new_category)
        else:
            new_content, new_category = validate_memory(
                new_content,
                new_category,
                tags=tags or (),
                metadata=None if metadata is None else dict(metadata),
                importance=importance,
                settings=self.policy,
            )
            if content is not None:
                new_content = to_third_person(new_content).text
        changed = old.model_copy(
            update={
                "content": new_content,
                "category": new_category,
                "tags": old.tags if tags is None else tuple(tags),
                "metadata": old.metadata if metadata is None else dict(metadata),
                "importance": old.importance if importance is None else importance,
                "updated_at": utcnow(),
                "embedding_model": self.embedder.model_id,
            }
        )
        vector = self.embedder.embed([new_content])[0] if new_content != old.content else None
        self.store.replace(
            changed,
            vector,
            HistoryEvent.about(
                old,
                EventKind.UPDATE,
                actor or user_id,
                old_content=old.content,
                new_content=new_content,
            ),
        )
        return changed

    def delete(
        self,
        memory_id: str,
        user_id: str,
        *,
        project_id: str | None = None,
        actor: str | None = None,
    ) -> None:
        """Delete for real: text, vector and index entries are gone; history keeps a
        tombstone. Raises :class:`NotFound` if the memory is not in the caller's scopes."""
        deleted = self.store.delete(
            [memory_id], self.scope_set(user_id, project_id), actor or user_id
        )
        if not deleted:
            raise NotFound(f"no memory {memory_id!r} for this user")

    def delete_many(
        self,
        memory_ids: Sequence[str],
        user_id: str,
        *,
        project_id: str | None = None,
        actor: str | None = None,
    ) -> builtins.list[str]:
        """Delete several memories in one transaction; returns the ids actually deleted."""
        return self.store.delete(
            list(memory_ids), self.scope_set(user_id, project_id), actor or user_id
        )

    def clear(
        self, user_id: str, project_id: str | None = None, *, actor: str | None = None
    ) -> int:
        """Delete every memory of the user's private scope (or of ``project_id``)."""
        self.scope_set(user_id, project_id)
        return self.store.clear(Scope(user_id=user_id, project_id=project_id), actor or user_id)

    # -- moving data ------------------------------------------------------------------------

    def export(
        self,
        user_id: str,
        format: Literal["json", "markdown"] = "json",
        *,
        project_id: str | None = None,
    ) -> str:
        """Every memory of one scope as JSON (lossless) or Markdown (for people)."""
        scope_set = self.scope_set(user_id, project_id, "project" if project_id else "user")
        memories = self.store.list_memories(
            scope_set, MemoryFilter(), limit=1_000_000_000, order="created_asc"
        )
        if format == "json":
            return export_json(user_id, project_id, memories)
        if format == "markdown":
            return export_markdown(user_id, project_id, memories)
        raise ValidationError(
            f"unknown export format {format!r}: use json or markdown", field="format"
        )

    def import_(
        self,
        user_id: str,
        data: str | bytes | Mapping[str, Any],
        *,
        project_id: str | None = None,
        progress: ProgressFn | None = None,
    ) -> builtins.list[SaveResult]:
        """Load a JSON export into ``user_id`` (and ``project_id``): ids, times, categories
        and metadata are kept, vectors are made anew; ids already stored are skipped."""
        self.scope_set(user_id, project_id)
        target = ScopeSet(
            user_id=user_id,
            include_private=project_id is None,
            project_ids=() if project_id is None else (project_id,),
        )
        memories = parse_export(data)
        taken = self.store.existing_ids([m.id for m in memories])
        # What the target scope holds already, so importing the same file twice (even into
        # another user, where ids had to change) adds nothing the second time.
        present = {
            (m.content, m.created_at)
            for m in self.store.list_memories(target, MemoryFilter(), limit=1_000_000_000)
        }
        results: builtins.list[SaveResult] = []
        fresh: builtins.list[Memory] = []
        for memory in memories:
            if (memory.content, memory.created_at) in present:
                results.append(_skipped(memory))  # imported before
                continue
            update: dict[str, Any] = {
                "user_id": user_id,
                "project_id": project_id,
                "embedding_model": self.embedder.model_id,
            }
            if memory.id in taken:  # the id belongs to someone else's copy: give a new one
                update["id"] = new_id("mem")
            fresh.append(memory.model_copy(update=update))
        if fresh:
            vectors = self._embed([m.content for m in fresh], progress)
            outcomes = self.store.insert(
                fresh, vectors, dedup_threshold=None, dedup=[False] * len(fresh), actor=user_id
            )
            results += [_save_result(o.memory, o, False) for o in outcomes]
        return results

    def reindex(self, progress: ProgressFn | None = None, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured embedder and record its model id."""
        total = int(self.store.stats().get("memories", 0))
        done = 0
        for batch in self.store.iter_memories(batch_size):
            vectors = self.embedder.embed([m.content for m in batch])
            self.store.set_vectors([m.id for m in batch], vectors, self.embedder.model_id)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        self.store.set_meta("embedding_model", self.embedder.model_id)
        self.store.set_meta("embedding_dimension", str(self.embedder.dimension))
        return done

    def system_prompt(
        self, ctx: ToolContext, profile: str = "default", budget_tokens: int = 500
    ) -> str:
        """The profile's guidance plus the user's pre-loaded memories (identity, preference
        and relationship first, then the project's), never over ``budget_tokens`` o200k tokens.

        >>> bank.system_prompt(ToolContext(user_id="u1"), "default", 300)  # doctest: +SKIP
        'Use remember … <memories> … - User prefers dark mode … </memories>'
        """
        from memorybank.context import system_prompt
        from memorybank.tools import profile as find_profile

        return system_prompt(self, ctx, find_profile(profile).guidance, budget_tokens)

    def stats(self) -> dict[str, int | str]:
        """Store counts plus the embedding model."""
        return {**self.store.stats(), "embedding_model": self.embedder.model_id}


def _pydantic_message(exc: PydanticValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "input"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _save_result(memory: Memory, outcome: Any, rephrased: bool) -> SaveResult:
    if outcome.inserted:
        return SaveResult(
            success=True,
            memory_id=memory.id,
            content=memory.content,
            category=memory.category,
            importance=memory.importance,
            rephrased=rephrased,
            memory=memory,
        )
    existing = outcome.duplicate_of
    return SaveResult(
        success=False,
        duplicate=True,
        content=memory.content,
        category=memory.category,
        existing_id=None if existing is None else existing.id,
        existing_content=None if existing is None else existing.content,
        similarity=outcome.similarity,
        rephrased=rephrased,
    )


def _skipped(memory: Memory) -> SaveResult:
    return SaveResult(
        success=False,
        duplicate=True,
        content=memory.content,
        category=memory.category,
        existing_id=memory.id,
        existing_content=memory.content,
    )
