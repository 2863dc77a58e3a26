"""mem0's ``Memory`` and ``AsyncMemory`` over a :class:`~memorybank.MemoryBank`: switching is
``from memorybank.compat.mem0 import Memory`` instead of ``from mem0 import Memory``.

The methods, arguments and answers are mem0's (2.x): ``add`` answers ``{"results": [{"id",
"memory", "event", …}]}``, ``search`` and ``get_all`` ``{"results": [{"id", "memory", "hash",
"metadata", "score", "created_at", "updated_at", "user_id", …}]}``, ``update``/``delete``
``{"message": …}``, ``history`` mem0's rows. How mem0's ids map onto the bank:

* ``user_id`` is the bank's user: the memories live in that user's private scope;
* ``agent_id`` and ``run_id`` are kept in each memory's metadata (and answered as mem0
  answers them, beside ``user_id``); a filter on them filters on that metadata;
* a memory added with an ``agent_id`` or ``run_id`` but no ``user_id`` belongs to the bank user
  ``agent:<agent_id>`` (or ``run:<run_id>``), and is found by the same ids;
* ``add(..., infer=False)`` keeps each message as it was said (a conversation memory, as mem0
  keeps raw messages), and ``search`` and ``get_all`` answer it; ``infer=True`` (the default)
  is the bank's :func:`~memorybank.services.conversations.remember_conversation`: the facts
  the messages state are saved (with the bank's LLM if it has one, else the lasting
  statements of the user's messages), each checked for duplicates and for what it replaces,
  and those facts are what ``search`` and ``get_all`` answer, as mem0's do. The turns are kept
  too, as ``remember`` keeps them (the bank's memory block quotes them), but left out here.
  A stored fact a new one replaces is answered as ``"event": "DELETE"``: it leaves search and
  ``get_all`` but stays in the bank's history, restorable.
* ``search`` answers the best first, ``score`` descending: ``score`` is the bank's ranking
  score (the calibrated relevance weighed by importance and recency), and ``threshold`` gates
  the relevance before that weighing, as mem0's gates its semantic score before combining.

``get``, ``update``, ``delete`` and ``history`` take a memory id alone, as in mem0; the memory
is looked up among the bank's users (those this object has seen first). The bank's errors are
raised as they are: :class:`~memorybank.ValidationError` is a ``ValueError``; ``get`` of an
unknown id answers ``None`` as mem0's does, ``history`` of a deleted one its events up to the
``DELETE``, and ``update`` and ``delete`` of an unknown one raise
:class:`~memorybank.NotFound` (a ``LookupError``) where mem0 raises ``ValueError``.
``docs/coming-from-mem0.md`` lists every difference.

>>> m = Memory(bank)
>>> added = m.add("I prefer green tea", user_id="alice", infer=False)
>>> [(r["memory"], r["event"]) for r in added["results"]]
[('I prefer green tea', 'ADD')]
>>> hit = m.search("what does alice drink?", filters={"user_id": "alice"})["results"][0]
>>> hit["memory"], hit["user_id"]
('I prefer green tea', 'alice')
>>> m.update(hit["id"], text="User prefers jasmine tea")
{'message': 'Memory updated successfully!'}
>>> [row["event"] for row in m.history(hit["id"])]
['ADD', 'UPDATE']
"""

from __future__ import annotations

import asyncio
import hashlib
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from memorybank.core.bank import MemoryBank
from memorybank.core.scopes import scope_set
from memorybank.errors import NotFound, ValidationError
from memorybank.model import (
    Caller,
    Category,
    HistoryEvent,
    MemoryFilter,
    Ring,
    SaveInput,
    SearchHit,
    Source,
)
from memorybank.model import Memory as Stored
from memorybank.rules.quoted import without_marks
from memorybank.rules.render import FACT_SOURCES
from memorybank.services.conversations import RememberResult, remember_conversation

#: The ids mem0 scopes memories by; ``agent_id`` and ``run_id`` are kept in metadata.
ENTITY_IDS = ("user_id", "agent_id", "run_id")
# What mem0 answers beside the memory's own fields rather than inside its metadata.
_PROMOTED = ("agent_id", "run_id", "actor_id", "role")
# How many memories one listing reads at most (the bank's own limit per page).
_PAGE = 10_000

Messages = str | Mapping[str, Any] | Sequence[Mapping[str, Any]]

#: mem0's default ``threshold`` of ``search``: here a calibrated relevance (0–1), not a cosine.
MEM0_MIN_SCORE = 0.1
# The metadata that marks a message kept with ``infer=False``: mem0 answers such messages in
# search and get_all, while the turns ``remember`` keeps beside its facts are left out.
_KEPT_AS_SAID = "mem0_infer"


class Memory:
    """mem0's ``Memory`` over ``bank`` (default: :func:`memorybank.open`, closed with this
    object; a bank passed in stays the caller's to close)."""

    def __init__(self, bank: MemoryBank | None = None) -> None:
        if bank is None:
            import memorybank

            bank, self._owns = memorybank.open(), True
        else:
            self._owns = False
        self.bank = bank
        self._owners: dict[str, str] = {}  # memory id → the bank user it belongs to

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> Memory:
        """A ``Memory`` over ``memorybank.open(**config_dict)``: memorybank's settings
        (``url``, ``embedder`` …, see :class:`~memorybank.Settings`), not mem0's."""
        mem0_keys = {"vector_store", "llm", "graph_store", "history_db_path", "reranker"}
        given = sorted(mem0_keys & set(config_dict))
        if given:
            raise ValidationError(
                f"{', '.join(given)} are mem0 settings: memorybank keeps its store, models and "
                "history itself; pass memorybank settings such as "
                "{'url': 'sqlite:///memories.db'} (docs/coming-from-mem0.md)",
                field=given[0],
            )
        import memorybank

        memory = cls(memorybank.open(**config_dict))
        memory._owns = True
        return memory

    def close(self) -> None:
        """Close the bank if this object opened it."""
        if self._owns:
            self.bank.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- adding -------------------------------------------------------------------------

    def add(
        self,
        messages: Messages,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        **unsupported: Any,
    ) -> dict[str, Any]:
        """Remember ``messages`` (a string, one ``{"role", "content"}`` message or a list)
        for the ids given (at least one). See the module's docstring for ``infer``."""
        _refuse(unsupported, "add", "timestamp, expiration_date, memory_type and prompt")
        owner = _owner({"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, "add")
        meta = _entity_metadata(metadata, agent_id, run_id)
        turns = _messages(messages)
        if not infer:
            return {"results": self._add_raw(owner, turns, meta, run_id)}
        said = [
            {"role": t["role"], "content": t["content"], "metadata": _turn_meta(t, meta)}
            for t in turns
        ]
        caller = Caller(user_id=owner, thread_id=run_id)
        # The facts carry the mem0 ids like the turns, so filters find them.
        result = remember_conversation(self.bank, caller, said, metadata=meta)
        return {"results": self._inferred(owner, result)}

    def _add_raw(
        self,
        owner: str,
        turns: Sequence[Mapping[str, Any]],
        meta: dict[str, Any],
        run_id: str | None,
    ) -> list[dict[str, Any]]:
        items = [
            SaveInput(
                content=t["content"],
                category=Category.CONTEXT,
                ring=Ring.EPISODIC,
                source=Source.CONVERSATION,
                session_id=run_id,
                metadata={**_turn_meta(t, meta), _KEPT_AS_SAID: False},
                created_by=owner,
            )
            for t in turns
        ]
        saved = self.bank.save_many(owner, items) if items else []
        out = []
        for turn, result in zip(turns, saved, strict=True):
            if result.memory_id is None:
                continue
            self._owners[result.memory_id] = owner
            out.append(
                {
                    "id": result.memory_id,
                    "memory": result.content,
                    "event": "ADD",
                    "actor_id": turn.get("name"),
                    "role": turn["role"],
                }
            )
        return out

    def _inferred(self, owner: str, result: RememberResult) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for fact in result.stored:
            self._owners[fact.id] = owner
            out.append({"id": fact.id, "memory": fact.content, "event": "ADD"})
        for u in result.updated:
            self._owners[u.memory_id] = owner
            out.append(
                {
                    "id": u.memory_id,
                    "memory": u.new_content,
                    "event": "UPDATE",
                    "previous_memory": u.old_content,
                }
            )
        for s in result.superseded:
            out.append({"id": s.old_id, "memory": s.old_content, "event": "DELETE"})
        return out

    # -- reading ------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory, as mem0 shows it; ``None`` for an id no user of the bank has."""
        try:
            return self._item(self._find(memory_id))
        except (NotFound, ValidationError):
            return None

    def get_all(
        self,
        *,
        filters: Mapping[str, Any] | None = None,
        top_k: int = 20,
        **ids: Any,
    ) -> dict[str, Any]:
        """The current memories of the ids in ``filters`` (mem0 2.x; the 1.x keywords
        ``user_id=``, ``agent_id=``, ``run_id=`` and ``limit=`` work too), newest first."""
        owner, conditions, top_k = _query(filters, ids, top_k, "get_all")
        limit = min(top_k, _PAGE)
        found = [
            m
            for kind in self._answered(owner, conditions)
            for m in self.bank.list(owner, kind, scopes="user", limit=limit)
        ]
        found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
        items = [self._item(m, remember=True) for m in found[:limit]]
        return {"results": [{k: v for k, v in i.items() if k != "score"} for i in items]}

    def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        **ids: Any,
    ) -> dict[str, Any]:
        """The best matches for ``query`` among the memories of the ids in ``filters``, best
        first: ``score`` (0–1) is the bank's ranking score, descending; each hit's calibrated
        relevance is at least ``threshold``."""
        rerank = ids.pop("rerank", False)
        if rerank:
            raise ValidationError("rerank: memorybank ranks once; drop rerank", field="rerank")
        owner, conditions, top_k = _query(filters, ids, top_k, "search")
        threshold = MEM0_MIN_SCORE if threshold is None else threshold
        if not 0 <= threshold <= 1:
            raise ValidationError(f"threshold {threshold} must be 0–1", field="threshold")
        hits: list[SearchHit] = []
        for kind in self._answered(owner, conditions):
            hits += self.bank.search(
                owner, query, kind, scopes="user", limit=top_k, min_relevance=threshold
            )
        hits.sort(key=lambda h: h.score, reverse=True)
        return {
            "results": [
                {**self._item(h.memory, remember=True), "score": h.score} for h in hits[:top_k]
            ]
        }

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The changes of one memory, oldest first, as mem0's history rows; a deleted
        memory's end with its ``DELETE``."""
        owner = self._owner_of(memory_id, deleted_too=True)
        return [_history_row(e) for e in self.bank.history(memory_id, owner)]

    # -- changing -----------------------------------------------------------------------

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        data: str | None = None,
    ) -> dict[str, str]:
        """Change a memory's text (``data`` is mem0's older name for it) and/or add to its
        metadata (its ``agent_id`` and ``run_id`` stay, as in mem0)."""
        text = text if text is not None else data
        if text is None and metadata is None:
            raise ValidationError("give text or metadata to update", field="text")
        memory = self._find(memory_id)
        kept: dict[str, Any] = {
            k: memory.metadata[k] for k in ("agent_id", "run_id") if k in memory.metadata
        }
        merged: dict[str, Any] | None = None
        if metadata is not None:
            merged = {**memory.metadata, **metadata, **kept}
        self.bank.update(memory_id, memory.user_id, content=text, metadata=merged)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        """Delete one memory for good (its history keeps a tombstone)."""
        self.bank.delete(memory_id, self._owner_of(memory_id))
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        """Delete every memory of the ids given (at least one)."""
        ids = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        owner = _owner(ids, "delete_all")
        conditions = {k: v for k, v in ids.items() if k != "user_id" and v is not None}
        if not conditions and user_id is not None:
            self.bank.clear(owner)
        else:
            while found := self.bank.list(owner, scopes="user", limit=_PAGE, metadata=conditions):
                if not self.bank.delete_many([m.id for m in found], owner):
                    break  # nothing more this caller may delete
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Delete every memory of every user's private scope in the bank (as mem0's reset
        empties its store): for a bank of this application's alone."""
        for scope in self.bank.store.scopes():
            if scope.project_id is None:
                self.bank.clear(scope.user_id)
        self._owners.clear()

    # -- helpers ------------------------------------------------------------------------

    def _find(self, memory_id: str) -> Stored:
        return self.bank.get(memory_id, self._owner_of(memory_id))

    def _answered(self, owner: str, conditions: Mapping[str, Any]) -> list[MemoryFilter]:
        """The filters of what ``search`` and ``get_all`` answer, each only if ``owner`` has
        such memories: the current facts, and the messages added with ``infer=False``."""
        kinds = [
            # Facts (a conversation's turn is never one) …
            MemoryFilter(source=FACT_SOURCES, metadata=dict(conditions) or None),
            MemoryFilter(
                source=(Source.CONVERSATION,), metadata={**conditions, _KEPT_AS_SAID: False}
            ),
        ]
        chosen = [k.model_copy(update={"superseded": False}) for k in kinds]
        return [k for k in chosen if self.bank.count(owner, k, scopes="user")]

    def _owner_of(self, memory_id: str, *, deleted_too: bool = False) -> str:
        """The bank user whose memory ``memory_id`` is (or was, ``deleted_too``): those seen
        first, then every user."""
        if not isinstance(memory_id, str) or not memory_id.startswith("mem_"):
            raise ValidationError(f"{memory_id!r} is not a memory id (mem_…)", field="memory_id")
        seen = self._owners.get(memory_id)
        candidates = [seen] if seen else []
        candidates += [s.user_id for s in self.bank.store.scopes() if s.project_id is None]
        for user in dict.fromkeys(candidates):
            scopes = scope_set(user, None, "user")
            if self.bank.store.get(memory_id, scopes) or (
                deleted_too and self.bank.store.history(memory_id, scopes)
            ):
                self._owners[memory_id] = user
                return user
        raise NotFound(f"no memory {memory_id!r}")

    def _item(self, memory: Stored, *, remember: bool = False) -> dict[str, Any]:
        if remember:
            self._owners[memory.id] = memory.user_id
        extra = {
            k: v for k, v in memory.metadata.items() if k not in _PROMOTED and k != _KEPT_AS_SAID
        }
        item: dict[str, Any] = {
            "id": memory.id,
            "memory": memory.content,
            "hash": hashlib.md5(memory.content.encode(), usedforsecurity=False).hexdigest(),
            "metadata": extra or None,
            "score": None,
            "created_at": memory.created_at.isoformat(),
            "updated_at": memory.updated_at.isoformat(),
            "user_id": memory.user_id,
        }
        item.update({k: memory.metadata[k] for k in _PROMOTED if k in memory.metadata})
        return item


class AsyncMemory:
    """mem0's ``AsyncMemory``: :class:`Memory`'s methods, awaited (each runs on a worker
    thread, so the event loop never waits on the database or the embedder)."""

    def __init__(self, bank: MemoryBank | None = None) -> None:
        self.sync = Memory(bank)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> AsyncMemory:
        """Like :meth:`Memory.from_config`."""
        memory = cls.__new__(cls)
        memory.sync = Memory.from_config(config_dict)
        return memory

    async def add(
        self,
        messages: Messages,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        **unsupported: Any,
    ) -> dict[str, Any]:
        """:meth:`Memory.add`."""
        return await asyncio.to_thread(
            self.sync.add,
            messages,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            infer=infer,
            **unsupported,
        )

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        """:meth:`Memory.get`."""
        return await asyncio.to_thread(self.sync.get, memory_id)

    async def get_all(
        self, *, filters: Mapping[str, Any] | None = None, top_k: int = 20, **ids: Any
    ) -> dict[str, Any]:
        """:meth:`Memory.get_all`."""
        return await asyncio.to_thread(self.sync.get_all, filters=filters, top_k=top_k, **ids)

    async def search(
        self,
        query: str,
        *,
        top_k: int = 20,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        **ids: Any,
    ) -> dict[str, Any]:
        """:meth:`Memory.search`."""
        return await asyncio.to_thread(
            self.sync.search, query, top_k=top_k, filters=filters, threshold=threshold, **ids
        )

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """:meth:`Memory.history`."""
        return await asyncio.to_thread(self.sync.history, memory_id)

    async def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        data: str | None = None,
    ) -> dict[str, str]:
        """:meth:`Memory.update`."""
        return await asyncio.to_thread(self.sync.update, memory_id, text, metadata, data)

    async def delete(self, memory_id: str) -> dict[str, str]:
        """:meth:`Memory.delete`."""
        return await asyncio.to_thread(self.sync.delete, memory_id)

    async def delete_all(
        self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> dict[str, str]:
        """:meth:`Memory.delete_all`."""
        return await asyncio.to_thread(self.sync.delete_all, user_id, agent_id, run_id)

    async def reset(self) -> None:
        """:meth:`Memory.reset`."""
        await asyncio.to_thread(self.sync.reset)

    def close(self) -> None:
        """:meth:`Memory.close`."""
        self.sync.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


# -- translating mem0's arguments ---------------------------------------------------------


def _refuse(unsupported: Mapping[str, Any], method: str, names: str) -> None:
    given = sorted(k for k, v in unsupported.items() if v is not None)
    if given:
        raise ValidationError(
            f"{method}() does not take {', '.join(given)} in memorybank.compat.mem0 "
            f"({names} are not mapped; docs/coming-from-mem0.md)",
            field=given[0],
        )


def _owner(ids: Mapping[str, Any], method: str) -> str:
    """The bank user of mem0's ids: ``user_id``, else ``agent:<agent_id>``, else
    ``run:<run_id>``. Every id given is used exactly as given (:func:`_exact_id`), and no
    ``user_id`` may name an agent's or a run's memory (issue 44: ``user_id="alice\\xa0"``
    erased alice's memories, ``user_id="agent:support"`` read the agent's)."""
    given = {n: _exact_id(n, ids[n]) for n in ENTITY_IDS if ids.get(n) is not None}
    if not given:
        raise ValidationError(
            f"{method}() needs one of user_id, agent_id or run_id, e.g. "
            "filters={'user_id': 'u1'}",
            field="user_id",
        )
    name, value = next(iter(given.items()))
    if name != "user_id":
        return f"{name[:-3]}:{value}"
    if value.startswith(_OWNER_PREFIXES):
        kind, _, rest = value.partition(":")
        raise ValidationError(
            f"user_id {value!r} names the memory of {kind} {rest!r}: pass {kind}_id={rest!r} "
            f"for it, or a user id that does not start with "
            f"{' or '.join(repr(p) for p in _OWNER_PREFIXES)}",
            field="user_id",
        )
    return value


#: How the bank users of agents and runs start: a namespace no ``user_id`` may name.
_OWNER_PREFIXES = ("agent:", "run:")


def _exact_id(name: str, value: object) -> str:
    """One of mem0's ids, used exactly as given: a non-empty string with no whitespace at
    either end and no control, format or separator characters anywhere, else a
    :class:`~memorybank.ValidationError` saying what to send (never stripped: an id with a
    stray space or an invisible character is another id, not the same one).

    >>> _exact_id("user_id", "alice")
    'alice'
    >>> _exact_id("user_id", " alice")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: user_id ' alice' has whitespace at its start or end: ids are used exactly as given; send 'alice'
    """  # noqa: E501
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{name} must be a non-empty string", field=name)
    if value != value.strip():
        raise ValidationError(
            f"{name} {value!r} has whitespace at its start or end: ids are used exactly as "
            f"given; send {value.strip()!r}",
            field=name,
        )
    hidden = next((c for c in value if unicodedata.category(c) in _HIDDEN), None)
    if hidden is not None:
        raise ValidationError(
            f"{name} {value!r} holds the invisible character U+{ord(hidden):04X}: ids are "
            "used exactly as given; send one without control or format characters",
            field=name,
        )
    return value


#: Unicode categories an id may not hold: control, format (zero-width, bidi), line and
#: paragraph separators, surrogates, unassigned.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})


def _query(
    filters: Mapping[str, Any] | None, ids: dict[str, Any], top_k: int, method: str
) -> tuple[str, dict[str, Any], int]:
    """The owner, the metadata conditions and the limit of a search or listing: mem0 2.x's
    ``filters``, or 1.x's keywords (``user_id=`` …, ``limit=``)."""
    limit = ids.pop("limit", None)
    wanted = {**(filters or {}), **{k: v for k, v in ids.items() if v is not None}}
    unknown = sorted(k for k in ids if k not in ENTITY_IDS)
    _refuse({k: ids[k] for k in unknown}, method, "only filters, top_k and the entity ids")
    owner = _owner(wanted, method)
    conditions = {k: v for k, v in wanted.items() if k != "user_id"}
    for key, value in conditions.items():
        if isinstance(value, Mapping) or key in ("AND", "OR", "NOT") or value == "*":
            raise ValidationError(
                f"filter {key!r}: memorybank.compat.mem0 filters on equal values only",
                field="filters",
            )
    top_k = top_k if limit is None else limit
    if not isinstance(top_k, int) or top_k < 1:
        raise ValidationError(f"top_k {top_k!r} must be a positive integer", field="top_k")
    return owner, conditions, top_k


def _messages(messages: Messages) -> list[Mapping[str, Any]]:
    """mem0's message forms as a list of ``{"role", "content"}``, system messages left out."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    listed = [messages] if isinstance(messages, Mapping) else list(messages)
    for n, m in enumerate(listed):
        if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
            raise ValidationError(
                f"messages[{n}] must be a {{'role', 'content'}} object with text content",
                field="messages",
            )
        if m.get("role") not in ("user", "assistant", "system"):
            raise ValidationError(
                f"messages[{n}].role must be user, assistant or system", field="messages"
            )
    return [m for m in listed if m["role"] != "system" and m["content"].strip()]


def _entity_metadata(
    metadata: Mapping[str, Any] | None, agent_id: str | None, run_id: str | None
) -> dict[str, Any]:
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ValidationError("metadata must be a dict", field="metadata")
    meta = dict(metadata or {})
    meta.update({k: v for k, v in (("agent_id", agent_id), ("run_id", run_id)) if v})
    return meta


def _turn_meta(turn: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    out = {**without_marks(meta), "role": turn["role"]}  # the marks are remember's to write
    if turn.get("name"):
        out["actor_id"] = turn["name"]
    return out


def _history_row(event: HistoryEvent) -> dict[str, Any]:
    """One event as mem0's row (a deleted memory's history is its tombstone alone: the bank
    erases a deleted memory's text, its history's included)."""
    at = event.created_at.isoformat()
    removed = event.kind.value in ("DELETE", "CLEAR", "FORGET")
    return {
        "id": event.id,
        "memory_id": event.memory_id,
        "old_memory": event.old_content,
        "new_memory": event.new_content,
        "event": event.kind.value,
        "created_at": at,
        "updated_at": at,
        "is_deleted": removed,
        "actor_id": event.actor,
        "role": None,
    }


__all__ = ["ENTITY_IDS", "AsyncMemory", "Memory"]
