"""LangGraph's long-term memory store (``BaseStore``) backed by a :class:`~memorybank.MemoryBank`.

A graph that uses :class:`MemoryBankStore` as its store keeps its items as memories, so the
assistant's tools, the REST API and the web UI see what the graph saved, and the graph sees
what they saved.

**Namespaces are scopes.** The first labels of a namespace say whose memory an item is in:

=================================  ==========================================================
namespace                          memorybank scope
=================================  ==========================================================
``("users", user_id, *rest)``      ``user_id``'s private memory
``("projects", project_id, ...)``  project ``project_id``'s shared memory (written as
                                   ``app_user_id``)
any other (``("docs", ...)``)      the private memory of ``app_user_id`` (``"langgraph"`` by
                                   default): the application's own memory
=================================  ==========================================================

Within a scope the whole namespace and the key are kept in the memory's metadata
(``metadata["langgraph"]``, with the value), so ``get``, ``search`` and ``list_namespaces``
give back exactly what was put. An item's memory id is derived from its scope, namespace and
key (``mem_lg_…``), so a ``get`` is one lookup by id. That id is also what makes an item the
store's: metadata is anyone's to write (a project member's REST save, another user's own
memory), so a ``langgraph`` record is believed only in a memory whose id is the one derived
for the record's namespace and key, in the scope that namespace names. Memories that were
not written through the store (saved by the ``remember`` tool, the API or by hand) appear at
the scope's own namespace, ``("users", user_id)`` or ``("projects", project_id)``, with their
id as key and ``{"content", "category", "tags"}`` as value; a ``put`` or delete of that key
there replaces or deletes the memory.

**What is embedded.** The text of an item is what memorybank embeds, searches and shows: the
fields named by ``index={"fields": [...]}`` (LangGraph's JSON paths, ``"$"`` for the whole
value) or by a put's own ``index=[...]``; without either, the value's ``"content"`` or
``"text"`` string, else the value as JSON. An item put with ``index=False``, or with no text at
its fields, is kept (its JSON is its text) but left out of searches with a ``query``. A
``category`` field naming a memorybank category (``"identity"``, ``"preference"`` …) becomes
the memory's category, which decides what auto-recall pre-loads; others are ``"context"``.

**Searching.** ``search(prefix, query=…)`` is memorybank's hybrid retrieval in each scope under
the prefix (``score`` is its ranking score, best first); without a query, items come newest
first. ``filter`` matches value fields as LangGraph's stores do (equality, nested dicts, and
``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``). A query search ranks at most the best
1,000 hits of each scope before value filters apply; namespaces below the scope's own are
filtered in the database. A prefix shorter than a scope (``()``, ``("users",)``) reads every
scope the bank holds, and ``list_namespaces`` reads the memories of the scopes under its
prefix.

**A conversation is remembered.** A put into a user's namespace whose value is a
conversation, ``{"messages": [{"role": "user", "content": …}, …]}``, is also handed to
:func:`memorybank.services.conversations.remember_conversation` for that user, as the
``remember`` tool, the REST API, MCP and mem0's ``add`` hand one over: its turns and the facts
the user stated are the user's memories, and the store's query searches find those; the item
itself is kept as put, for ``get``, and left out of them (its JSON holds the assistant's words
too).

**The bank's upkeep applies.** Items are memories like any other: consolidation may mark a
near-duplicate superseded (it then leaves ``get`` and ``search``), a forget plan may delete one,
and recall reinforces what it finds.

**Not supported.** TTLs (``supports_ttl`` is false: ``put(..., ttl=…)`` raises
``NotImplementedError``; memorybank forgets through importance decay, ``forget`` and clear
instead), and an ``index`` config's ``embed``/``dims``: the bank embeds with its own model. A
``put`` replaces an item in two steps (delete, then insert), not atomically.

>>> store = MemoryBankStore(bank)
>>> store.put(("users", "alice", "prefs"), "drink", {"content": "Alice drinks green tea"})
>>> store.get(("users", "alice", "prefs"), "drink").value
{'content': 'Alice drinks green tea'}
>>> [hit.key for hit in store.search(("users", "alice"), query="what does she drink?")]
['drink']
>>> [hit.memory.content for hit in bank.search("alice", "tea")]
['Alice drinks green tea']
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memorybank.integrations.langgraph needs LangGraph: pip install 'memorybank[langgraph]'"
    ) from exc

from memorybank.core.bank import MemoryBank
from memorybank.core.records import save_records
from memorybank.errors import NotFound
from memorybank.model import Caller, Category, Memory, ScopeChoice, Source, utcnow
from memorybank.services.conversations import remember_conversation

__all__ = ["MemoryBankStore", "namespace_scope"]

#: The metadata key holding an item's namespace, key, value and whether it is indexed.
META = "langgraph"
#: The first labels of namespaces that name a user's or a project's scope.
USERS, PROJECTS = "users", "projects"
#: The most hits a query search ranks in one scope before value filters apply.
SEARCH_DEPTH = 1000
#: Memories read per page when listing a scope.
PAGE = 1000
_CATEGORIES = frozenset(c.value for c in Category)


@dataclass(frozen=True)
class _Scope:
    """Where a namespace's items live: ``user_id``'s private memory, or project
    ``project_id``'s (reached as ``user_id``). ``root`` is how many leading labels name it."""

    user_id: str
    project_id: str | None
    root: int

    @property
    def choice(self) -> ScopeChoice:
        return "user" if self.project_id is None else "project"

    @property
    def key(self) -> str:
        return f"p:{self.project_id}" if self.project_id is not None else f"u:{self.user_id}"


def namespace_scope(namespace: Sequence[str], app_user_id: str = "langgraph") -> dict[str, Any]:
    """Which memorybank scope ``namespace`` is in: ``{"user_id", "project_id"}``.

    >>> namespace_scope(("users", "alice", "prefs"))
    {'user_id': 'alice', 'project_id': None}
    >>> namespace_scope(("projects", "apollo"))
    {'user_id': 'langgraph', 'project_id': 'apollo'}
    >>> namespace_scope(("docs", "faq"))
    {'user_id': 'langgraph', 'project_id': None}
    """
    scope = _scope_of(tuple(namespace), app_user_id)
    return {"user_id": scope.user_id, "project_id": scope.project_id}


def _scope_of(namespace: tuple[str, ...], app_user_id: str) -> _Scope:
    if namespace and namespace[0] in (USERS, PROJECTS):
        if len(namespace) < 2:
            kind = "user_id" if namespace[0] == USERS else "project_id"
            raise InvalidNamespaceError(
                f"namespace {namespace} needs a second label, the {kind}: "
                f"({namespace[0]!r}, {kind}, ...)"
            )
        if namespace[0] == USERS:
            return _Scope(namespace[1], None, 2)
        return _Scope(app_user_id, namespace[1], 2)
    return _Scope(app_user_id, None, 0)


def _own_namespace(memory: Memory) -> tuple[str, ...]:
    """The namespace of a memory that was not written through the store."""
    if memory.project_id is not None:
        return (PROJECTS, memory.project_id)
    return (USERS, memory.user_id)


def _item_id(scope: _Scope, namespace: tuple[str, ...], key: str) -> str:
    """The memory id of the item (``namespace``, ``key``) in ``scope``: derived, so a ``get`` is
    one lookup, and only the store writes memories with such ids (saves get ids of their own)."""
    digest = hashlib.sha256(json.dumps([scope.key, list(namespace), key]).encode()).hexdigest()
    return f"mem_lg_{digest[:32]}"


def _record(memory: Memory, app_user_id: str) -> dict[str, Any] | None:
    """The store's record in a memory's metadata, if the store wrote it: metadata alone is
    anyone's to write (a member's REST save, another user's own memory), so the record is
    believed only when its namespace is in the memory's own scope and the memory's id is the
    one the store derives for that namespace and key. Otherwise the memory is an ordinary one
    of its scope, at the scope's own namespace."""
    record = memory.metadata.get(META)
    if not isinstance(record, dict) or not isinstance(record.get("value"), dict):
        return None
    labels, key = record.get("namespace"), record.get("key")
    if not isinstance(labels, list) or not all(isinstance(n, str) for n in labels):
        return None
    namespace = tuple(labels)
    try:
        scope = _scope_of(namespace, app_user_id)
    except InvalidNamespaceError:
        return None
    if not isinstance(key, str) or memory.project_id != scope.project_id:
        return None
    if scope.project_id is None and memory.user_id != scope.user_id:
        return None
    return record if memory.id == _item_id(scope, namespace, key) else None


def _located(memory: Memory, app_user_id: str) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of any memory."""
    record = _record(memory, app_user_id)
    if record is None:
        return _own_namespace(memory), memory.id
    return tuple(record["namespace"]), str(record["key"])


def _value(memory: Memory, app_user_id: str) -> dict[str, Any]:
    record = _record(memory, app_user_id)
    if record is None:
        return {
            "content": memory.content,
            "category": memory.category.value,
            "tags": list(memory.tags),
        }
    value: dict[str, Any] = record["value"]
    return value


def _indexed(memory: Memory, app_user_id: str) -> bool:
    record = _record(memory, app_user_id)
    return record is None or bool(record.get("indexed", True))


def _item(
    memory: Memory, app_user_id: str, score: float | None = None, *, ranked: bool = False
) -> SearchItem:
    namespace, key = _located(memory, app_user_id)
    return SearchItem(
        namespace=namespace,
        key=key,
        value=_value(memory, app_user_id),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        score=score if ranked else None,
    )


def _plain(item: SearchItem) -> Item:
    return Item(
        value=item.value,
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def _said(value: object) -> bool:
    """Whether a put's value is a conversation: ``{"messages": [{"role", "content"}, …]}``
    with the roles ``remember`` takes."""
    messages = value.get("messages") if isinstance(value, Mapping) else None
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(
            isinstance(m, Mapping)
            and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str)
            for m in messages
        )
    )


def _depth_key(depth: int) -> str:
    """The metadata key holding a namespace's first ``depth`` labels, joined by dots (which no
    label may contain): what the database filters prefixes below a scope's own on."""
    return f"{META}_ns{depth}"


def _prefix_filter(prefix: tuple[str, ...], scope: _Scope) -> dict[str, Any] | None:
    if len(prefix) <= scope.root:
        return None
    return {_depth_key(len(prefix)): ".".join(prefix)}


# -- value filters -------------------------------------------------------------------------------


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: operators, nested objects, lists and plain equality."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, dict) and all(
            _compare(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _operator(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if operator not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {operator!r}: use $eq, $ne, $gt, ...")
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or smaller than anything
    return {
        "$gt": left > right,
        "$gte": left >= right,
        "$lt": left < right,
        "$lte": left <= right,
    }[operator]


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    return not wanted or all(_compare(value.get(k), v) for k, v in wanted.items())


def _namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return not path or all(p in ("*", n) for p, n in zip(path, part, strict=True))


def _literal(path: Sequence[str]) -> tuple[str, ...]:
    """The labels of a match path before its first wildcard."""
    labels: list[str] = []
    for label in path:
        if label == "*":
            break
        labels.append(label)
    return tuple(labels)


# -- the store -----------------------------------------------------------------------------------


class MemoryBankStore(BaseStore):
    """A LangGraph store over ``bank`` (see the module's docstring for the namespace mapping).

    ``app_user_id`` owns the namespaces that name no user or project, and writes the items of
    project namespaces. ``index`` is LangGraph's index config; only ``fields`` applies (the
    JSON paths whose text is embedded): the bank embeds with its own model.
    """

    supports_ttl = False

    __slots__ = ("app_user_id", "bank", "fields")

    def __init__(
        self,
        bank: MemoryBank,
        *,
        app_user_id: str = "langgraph",
        index: IndexConfig | None = None,
    ) -> None:
        if not isinstance(app_user_id, str) or not app_user_id.strip():
            raise ValueError("app_user_id must be a non-empty user id")
        unsupported = sorted(set(index or {}) - {"fields"})
        if unsupported:
            raise ValueError(
                f"index {unsupported} is not supported: MemoryBankStore embeds with the bank's "
                "own model; pass index={'fields': [...]} to say what to embed"
            )
        self.bank = bank
        self.app_user_id = app_user_id
        fields = (index or {}).get("fields")
        self.fields: tuple[str, ...] | None = tuple(fields) if fields else None

    # -- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; consecutive puts are written together (the last put of a
        namespace and key wins), one embedding batch for all of them."""
        results: list[Result] = []
        puts: list[PutOp] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                puts.append(op)
                results.append(None)
                continue
            self._write(puts)
            puts = []
            results.append(self._read(op))
        self._write(puts)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread: the bank's calls block."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation: {type(op).__name__}")

    # -- finding one item -----------------------------------------------------------------------

    def _scope(self, namespace: tuple[str, ...]) -> _Scope:
        return _scope_of(namespace, self.app_user_id)

    def _find(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        """The memory holding (``namespace``, ``key``), superseded or not."""
        scope = self._scope(namespace)
        candidates = [_item_id(scope, namespace, key)]
        if scope.root and len(namespace) == scope.root:
            candidates.append(key)  # a memory saved some other way, by its id
        for memory_id in candidates:
            try:
                memory = self.bank.get(memory_id, scope.user_id, project_id=scope.project_id)
            except NotFound:
                continue
            if _located(memory, self.app_user_id) == (namespace, key):
                return memory
        return None

    def _get(self, op: GetOp) -> Item | None:
        memory = self._find(tuple(op.namespace), str(op.key))
        if memory is None or memory.superseded_by is not None:
            return None  # a memory replaced by a newer one has left search; it leaves get too
        return _plain(_item(memory, self.app_user_id))

    # -- writing --------------------------------------------------------------------------------

    def _write(self, puts: Sequence[PutOp]) -> None:
        latest = {(tuple(op.namespace), str(op.key)): op for op in puts}
        gone: dict[_Scope, list[str]] = {}
        new: list[Memory] = []
        chats: list[tuple[str, list[Any]]] = []
        for (namespace, key), op in latest.items():
            if op.ttl is not None:
                raise NotImplementedError(
                    "MemoryBankStore does not support TTLs: put with ttl=None (memorybank "
                    "forgets through importance decay, forget and clear instead)"
                )
            if not namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            existing = self._find(namespace, key)
            scope = self._scope(namespace)
            if existing is not None:
                gone.setdefault(scope, []).append(existing.id)
            if op.value is not None:
                new.append(self._memory(scope, namespace, key, op, existing))
                if _said(op.value) and scope.project_id is None:
                    chats.append((scope.user_id, op.value["messages"]))
        for scope, ids in gone.items():
            self.bank.delete_many(ids, scope.user_id, project_id=scope.project_id)
        if new:
            save_records(self.bank, new, actor=self.app_user_id)
        for user_id, messages in chats:
            remember_conversation(self.bank, Caller(user_id=user_id), messages)

    def _memory(
        self,
        scope: _Scope,
        namespace: tuple[str, ...],
        key: str,
        op: PutOp,
        existing: Memory | None,
    ) -> Memory:
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a store value is a dict, not {type(op.value).__name__}")
        # Through JSON and back: what get returns is what the database gives back.
        value = json.loads(json.dumps(dict(op.value), ensure_ascii=False))
        # A conversation is searched as remember keeps it (its turns, the user's facts), not
        # as one JSON text holding the assistant's words too.
        text, indexed = self._text(value, False if _said(value) else op.index)
        metadata: dict[str, Any] = {
            META: {"namespace": list(namespace), "key": key, "value": value, "indexed": indexed}
        }
        for depth in range(scope.root + 1, len(namespace) + 1):
            metadata[_depth_key(depth)] = ".".join(namespace[:depth])
        category = value.get("category")
        if not (isinstance(category, str) and category in _CATEGORIES):
            category = Category.CONTEXT
        now = utcnow()
        return Memory(
            id=existing.id if existing is not None else _item_id(scope, namespace, key),
            user_id=scope.user_id,
            project_id=scope.project_id,
            content=text,
            category=category,
            metadata=metadata,
            source=Source.AI,
            created_by=self.app_user_id,
            created_at=existing.created_at if existing is not None else now,
            updated_at=now,
        )

    def _text(self, value: dict[str, Any], index: Any) -> tuple[str, bool]:
        """The text to embed and show, and whether query searches may find the item."""
        fields = self.fields if index is None else index
        whole = json.dumps(value, ensure_ascii=False, sort_keys=True)
        if fields is False or not fields:
            default = next(
                (value[f] for f in ("content", "text") if isinstance(value.get(f), str)), ""
            )
            return (default.strip() or whole), fields is not False
        texts = [text for path in fields for text in get_text_at_path(value, path)]
        text = "\n".join(t for t in texts if t.strip())
        return (text, True) if text else (whole, False)

    # -- searching ------------------------------------------------------------------------------

    def _scopes_under(self, prefix: tuple[str, ...]) -> list[_Scope]:
        """The scopes that can hold namespaces starting with ``prefix`` (no wildcards)."""
        if prefix and (prefix[0] not in (USERS, PROJECTS) or len(prefix) >= 2):
            return [self._scope(prefix)]
        found: list[_Scope] = []
        for scope in self.bank.store.scopes():
            if scope.project_id is None and prefix in ((), (USERS,)):
                found.append(_Scope(scope.user_id, None, 2))
            elif scope.project_id is not None and prefix in ((), (PROJECTS,)):
                found.append(_Scope(self.app_user_id, scope.project_id, 2))
        return found

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit <= 0 or op.offset < 0:
            return []
        wanted = op.offset + op.limit
        query = op.query.strip() if isinstance(op.query, str) else ""
        found: list[SearchItem] = []
        for scope in self._scopes_under(prefix):
            if query:
                found += self._ranked(scope, prefix, query, op.filter, wanted)
            else:
                found += self._listed(scope, prefix, op.filter, wanted)
        if query:
            found.sort(key=lambda item: item.score or 0.0, reverse=True)
        else:
            found.sort(key=lambda item: item.created_at, reverse=True)
        return found[op.offset : wanted]

    def _under(self, memory: Memory, prefix: tuple[str, ...]) -> bool:
        return _located(memory, self.app_user_id)[0][: len(prefix)] == prefix

    def _ranked(
        self,
        scope: _Scope,
        prefix: tuple[str, ...],
        query: str,
        wanted_value: Mapping[str, Any] | None,
        wanted: int,
    ) -> list[SearchItem]:
        hits = self.bank.search(
            scope.user_id,
            query,
            project_id=scope.project_id,
            scopes=scope.choice,
            limit=min(SEARCH_DEPTH, max(50, 4 * wanted)),
            metadata=_prefix_filter(prefix, scope),
        )
        items = [
            _item(hit.memory, self.app_user_id, hit.score, ranked=True)
            for hit in hits
            if _indexed(hit.memory, self.app_user_id) and self._under(hit.memory, prefix)
        ]
        return [item for item in items if _matches(item.value, wanted_value)][:wanted]

    def _memories(self, scope: _Scope, metadata: dict[str, Any] | None) -> Iterator[Memory]:
        """Every current memory of ``scope`` (meeting ``metadata``), newest first."""
        offset = 0
        while True:
            page = self.bank.list(
                scope.user_id,
                project_id=scope.project_id,
                scopes=scope.choice,
                limit=PAGE,
                offset=offset,
                metadata=metadata,
                superseded=False,
            )
            yield from page
            if len(page) < PAGE:
                return
            offset += PAGE

    def _listed(
        self,
        scope: _Scope,
        prefix: tuple[str, ...],
        wanted_value: Mapping[str, Any] | None,
        wanted: int,
    ) -> list[SearchItem]:
        found: list[SearchItem] = []
        for memory in self._memories(scope, _prefix_filter(prefix, scope)):
            if self._under(memory, prefix):
                item = _item(memory, self.app_user_id)
                if _matches(item.value, wanted_value):
                    found.append(item)
                    if len(found) >= wanted:
                        break
        return found

    # -- namespaces -----------------------------------------------------------------------------

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        prefixes = [_literal(c.path) for c in conditions if c.match_type == "prefix"]
        prefix = max(prefixes, key=len, default=())
        namespaces: set[tuple[str, ...]] = set()
        for scope in self._scopes_under(prefix):
            for memory in self._memories(scope, _prefix_filter(prefix, scope)):
                namespace = _located(memory, self.app_user_id)[0]
                if all(_namespace_matches(namespace, c) for c in conditions):
                    depth = len(namespace) if op.max_depth is None else op.max_depth
                    namespaces.add(namespace[:depth])
        return sorted(namespaces)[op.offset : op.offset + op.limit]
