"""Every method of the clients once, as the HTTP calls it makes: :class:`Calls`.

A method here is a generator (a :data:`Plan`): it checks its arguments, ``yield``\\ s each
:class:`Call` it needs (receiving the server's answer back) and returns the records the answer
stands for. It does no I/O: :class:`~memorybank.client.sync.Client` runs a plan with blocking
httpx, :class:`~memorybank.client.asynchronous.AsyncClient` with ``await``, so the two clients
cannot drift apart (one definition of each method's arguments, paths and parsing; two drivers).
:class:`Calls` also remembers who the client acts for, once the server has said.

``self`` is positional-only in the methods that take ``**filters``, so that the clients'
typed wrappers (``Concatenate[Calls, P]``) accept them.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar, Unpack
from urllib.parse import quote

import httpx

from memorybank.errors import ConfigurationError, PermissionDenied, ValidationError
from memorybank.model import (
    Caller,
    Category,
    Event,
    EventType,
    HistoryEvent,
    Memory,
    MemoryFilter,
    SaveFields,
    SaveInput,
    SaveResult,
    ScopeChoice,
    SearchHit,
)
from memorybank.rules.filtering import FilterArgs, where
from memorybank.rules.limits import PAGE_MAX

T = TypeVar("T")
Params = Mapping[str, Any]


@dataclass(frozen=True)
class Call:
    """One HTTP request of a method: what :meth:`Client.request
    <memorybank.client.sync.Client.request>` takes."""

    method: str
    path: str
    params: Params | None = None
    json_body: Any = None
    content: bytes | None = None
    #: The user the request acts for: sent as ``X-Memorybank-User`` in local mode.
    user_id: str | None = None


#: A method as the calls it makes: yields :class:`Call`\\ s, is sent each answer, returns the
#: method's result.
Plan = Generator[Call, httpx.Response, T]


def _values(value: Any) -> Any:
    """A filter value as query parameters: one value, or a list of them."""
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return f"{max(1, round(value.total_seconds() / 3600))}h"
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, Iterable):
        return [_values(v) for v in value]
    return str(value)


def _params(**given: Any) -> dict[str, Any]:
    """Query parameters of the arguments given (``None`` ones left out)."""
    return {key: _values(value) for key, value in given.items() if value is not None}


def _where(
    filters: MemoryFilter | None, conditions: FilterArgs, *, superseded: bool = True
) -> dict[str, Any]:
    """The query parameters of a :class:`MemoryFilter` or of the keyword filters that build
    it (the bank's rule: one or the other), checked here as the bank checks them; without
    ``superseded`` the call's own ``include_superseded`` decides that condition."""
    shown = where(filters, conditions).model_dump(mode="json", exclude_none=True)
    if not superseded:
        shown.pop("superseded", None)
    return shown


def _json(answer: httpx.Response) -> Any:
    """The JSON body of a successful answer; a :class:`~memorybank.ConfigurationError` when
    it holds none (issue 44: a bare ``JSONDecodeError``): what answered is not the memorybank
    server (a proxy's or another server's page), or the answer was cut off.

    >>> _json(httpx.Response(200, text="<html>hello</html>"))
    Traceback (most recent call last):
    ...
    memorybank.errors.ConfigurationError: the server answered 200 with 18 bytes that are not JSON ('<html>hello</html>'): is base_url the address of the memorybank server itself?
    """  # noqa: E501
    try:
        return answer.json()
    except ValueError:  # JSONDecodeError, or bytes that are not UTF-8
        head = answer.content[:80].decode("utf-8", "replace")
        raise ConfigurationError(
            f"the server answered {answer.status_code} with {len(answer.content)} bytes that "
            f"are not JSON ({head!r}): is base_url the address of the memorybank server itself?"
        ) from None


def _memory(shown: dict[str, Any]) -> Memory:
    """The stored record of a memory the API shows: its ``effective_importance`` (the
    importance it ranks with now) is the server's view, not a field of :class:`Memory`."""
    return Memory.model_validate({k: v for k, v in shown.items() if k != "effective_importance"})


def _segment(value: str) -> str:
    """``value`` as one path segment (an id may hold any character). ``.`` and ``..`` are
    refused: percent-encoding leaves them as they are, and a URL resolves them as "this" and
    "the parent" segment (``clear("alice", project_id="..")`` cleared alice's private memory).

    >>> _segment("mem_1/x")
    'mem_1%2Fx'
    >>> _segment("..")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: '..' is not an id: name the memory, project or profile
    """
    if value in ("", ".", ".."):
        raise ValidationError(
            f"{value!r} is not an id: name the memory, project or profile", field="id"
        )
    return quote(value, safe="")


class Calls:
    """The clients' methods as plans, and who the client acts for (see the module)."""

    def __init__(self) -> None:
        #: The user of the API key (``local`` in local mode), once ``GET /api/me`` said.
        self.user: str | None = None
        #: Local mode: the server acts for any user a request names, by header.
        self.local = False

    # -- who is calling -------------------------------------------------------------------

    def me(self) -> Plan[dict[str, Any]]:
        """Who the API key belongs to, the mode, and their projects (``GET /api/me``)."""
        me: dict[str, Any] = _json((yield Call("GET", "/api/me")))
        self.user = str(me["user_id"])
        self.local = me.get("mode") == "local"
        return me

    def acting_as(self, user_id: str) -> Plan[None]:
        """:class:`~memorybank.PermissionDenied` unless ``user_id`` is this client's user
        (in local mode every user is: the server acts for the one each request names)."""
        if not isinstance(user_id, str) or not user_id.strip():
            raise ValidationError("user_id is required", field="user_id")
        if self.user is None:
            yield from self.me()
        if user_id != self.user and not self.local:
            raise PermissionDenied(
                f"this client acts for {self.user!r} (the user of its API key), not "
                f"{user_id!r}: use that user's key"
            )

    # -- saving ---------------------------------------------------------------------------

    def save(
        self,
        /,
        user_id: str,
        content: str | SaveInput,
        category: Category | str | None = None,
        *,
        project_id: str | None = None,
        on_conflict: Literal["auto", "keep", "supersede"] = "auto",
        **fields: Unpack[SaveFields],
    ) -> Plan[SaveResult]:
        """Save one fact, as :meth:`MemoryBank.save <memorybank.MemoryBank.save>`: a
        :class:`SaveInput`, or its text and fields (the server decides ``created_by``)."""
        if isinstance(content, SaveInput):
            if category is not None or fields:
                raise ValidationError("pass a SaveInput or its fields as keywords, not both")
            item: SaveInput | dict[str, Any] = content
        else:
            item = {"content": content, "category": category, **fields}
        saved = yield from self.save_many(
            user_id, [item], project_id=project_id, on_conflict=on_conflict
        )
        return saved[0]

    def save_many(
        self,
        user_id: str,
        items: Iterable[SaveInput | Mapping[str, Any]],
        *,
        project_id: str | None = None,
        on_conflict: Literal["auto", "keep", "supersede"] = "auto",
    ) -> Plan[builtins.list[SaveResult]]:
        """Save a batch in one request, all or nothing (``POST /api/memories``)."""
        yield from self.acting_as(user_id)
        batch = []
        for raw in items:
            item = raw if isinstance(raw, SaveInput) else SaveInput.model_validate(raw)
            batch.append(item.model_dump(mode="json", exclude={"created_by"}, exclude_none=True))
        body = {"items": batch, "project_id": project_id, "on_conflict": on_conflict}
        answer = yield Call("POST", "/api/memories", json_body=body, user_id=user_id)
        return [SaveResult.model_validate(r) for r in _json(answer)["results"]]

    # -- reading --------------------------------------------------------------------------

    def search(
        self,
        /,
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
    ) -> Plan[builtins.list[SearchHit]]:
        """Hybrid search, best first (``GET /api/search``), only hits at least
        ``min_relevance`` relevant; ``filters`` or ``conditions`` as the bank's."""
        yield from self.acting_as(user_id)
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query is empty: say what to look for", field="query")
        params = _params(
            q=query,
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            include_superseded=include_superseded or None,
            min_relevance=min_relevance or None,
            **_where(filters, conditions, superseded=False),
        )
        answer = yield Call("GET", "/api/search", params=params, user_id=user_id)
        return [SearchHit.model_validate(h) for h in _json(answer)["hits"]]

    def get(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> Plan[Memory]:
        """One memory by id; :class:`~memorybank.NotFound` if the caller may not see it."""
        yield from self.acting_as(user_id)
        path = f"/api/memories/{_segment(memory_id)}"
        answer = yield Call("GET", path, params=_params(project_id=project_id), user_id=user_id)
        return _memory(_json(answer))

    def list(
        self,
        /,
        user_id: str,
        filters: MemoryFilter | None = None,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 50,
        offset: int = 0,
        order: Literal["created_desc", "created_asc", "importance_desc"] = "created_desc",
        **conditions: Unpack[FilterArgs],
    ) -> Plan[builtins.list[Memory]]:
        """A page of memories, newest first by default (``GET /api/memories``, in pages of
        at most :data:`~memorybank.rules.limits.PAGE_MAX`, the server's, when ``limit`` asks
        for more)."""
        yield from self.acting_as(user_id)
        wanted = _where(filters, conditions)
        found: builtins.list[Memory] = []
        while True:
            take = min(PAGE_MAX, limit - len(found))
            params = _params(
                project_id=project_id,
                scopes=scopes,
                limit=take,
                offset=offset + len(found),
                order=order,
                **wanted,
            )
            answer = yield Call("GET", "/api/memories", params=params, user_id=user_id)
            page = [_memory(m) for m in _json(answer)["memories"]]
            found += page
            if len(page) < take or len(found) >= limit:
                return found

    def count(
        self,
        /,
        user_id: str,
        filters: MemoryFilter | None = None,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        **conditions: Unpack[FilterArgs],
    ) -> Plan[int]:
        """How many memories meet the filters (``GET /api/memories/count``)."""
        yield from self.acting_as(user_id)
        params = _params(project_id=project_id, scopes=scopes, **_where(filters, conditions))
        answer = yield Call("GET", "/api/memories/count", params=params, user_id=user_id)
        return int(_json(answer)["count"])

    def history(
        self, memory_id: str, user_id: str, *, project_id: str | None = None
    ) -> Plan[builtins.list[HistoryEvent]]:
        """ADD / UPDATE / DELETE events of one memory, oldest first."""
        yield from self.acting_as(user_id)
        path = f"/api/memories/{_segment(memory_id)}/history"
        answer = yield Call("GET", path, params=_params(project_id=project_id), user_id=user_id)
        return [HistoryEvent.model_validate(e) for e in _json(answer)["events"]]

    def events(
        self,
        user_id: str,
        *,
        after: int = 0,
        limit: int = 100,
        types: Collection[EventType] | None = None,
    ) -> Plan[builtins.list[Event]]:
        """Changes the caller may see (their private memory and the projects they are a
        member of), numbered above ``after``, oldest first, at most ``limit``; only those of
        ``types`` when given (``GET /api/events/list``; the live stream is
        ``GET /api/events``)."""
        yield from self.acting_as(user_id)
        answer = yield Call(
            "GET", "/api/events/list", params=_params(after=after, limit=limit), user_id=user_id
        )
        found = [Event.model_validate(e) for e in _json(answer)["events"]]
        return found if types is None else [e for e in found if e.type in types]

    # -- changing -------------------------------------------------------------------------

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
    ) -> Plan[Memory]:
        """Change a memory in place: same id, recorded in history (``PATCH``)."""
        yield from self.acting_as(user_id)
        body = {
            "content": content,
            "category": None if category is None else str(category),
            "tags": None if tags is None else builtins.list(tags),
            "metadata": None if metadata is None else dict(metadata),
            "importance": importance,
        }
        answer = yield Call(
            "PATCH",
            f"/api/memories/{_segment(memory_id)}",
            params=_params(project_id=project_id),
            json_body={k: v for k, v in body.items() if v is not None},
            user_id=user_id,
        )
        return _memory(_json(answer))

    def restore(
        self, memory_id: str, user_id: str, *, project_id: str | None = None
    ) -> Plan[Memory]:
        """Bring a superseded memory back into search and the prompt (``POST …/restore``)."""
        yield from self.acting_as(user_id)
        answer = yield Call(
            "POST",
            f"/api/memories/{_segment(memory_id)}/restore",
            params=_params(project_id=project_id),
            user_id=user_id,
        )
        return _memory(_json(answer))

    def supersede(
        self, memory_id: str, newer_id: str, user_id: str, *, project_id: str | None = None
    ) -> Plan[Memory]:
        """Mark ``memory_id`` replaced by the newer memory ``newer_id`` (``POST
        …/supersede``): kept in history, out of search and the prompt until :meth:`restore`.
        The server finds the memory's project itself (``project_id`` is checked as the
        bank's)."""
        yield from self.acting_as(user_id)
        answer = yield Call(
            "POST",
            f"/api/memories/{_segment(memory_id)}/supersede",
            params=_params(project_id=project_id),
            json_body={"by": newer_id},
            user_id=user_id,
        )
        return _memory(_json(answer))

    def keep_both(
        self, memory_id: str, other_id: str, user_id: str, *, project_id: str | None = None
    ) -> Plan[None]:
        """Answer "both are true" for a fact and one it may update (``POST …/keep-both``):
        the pair is not asked about again, nor shown as an earlier note in a memory block."""
        yield from self.acting_as(user_id)
        yield Call(
            "POST",
            f"/api/memories/{_segment(memory_id)}/keep-both",
            params=_params(project_id=project_id),
            json_body={"other": other_id},
            user_id=user_id,
        )

    def open_pairs(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        scopes: Literal["all", "user", "project"] = "all",
        limit: int = 100,
    ) -> Plan[builtins.list[tuple[Memory, Memory]]]:
        """The (newer, older) facts a save said may be an update, not yet answered
        (``GET /api/memory-pairs``), oldest first."""
        yield from self.acting_as(user_id)
        answer = yield Call(
            "GET",
            "/api/memory-pairs",
            params=_params(project_id=project_id, scopes=scopes, limit=limit),
            user_id=user_id,
        )
        return [(_memory(p["memory"]), _memory(p["other"])) for p in _json(answer)["pairs"]]

    def delete(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> Plan[None]:
        """Delete for real (a private memory, or with ``project_id`` a project's)."""
        yield from self.acting_as(user_id)
        where = "drive" if project_id is not None else "user"
        yield Call("DELETE", f"/api/memory/{where}/{_segment(memory_id)}", user_id=user_id)

    def delete_many(
        self, memory_ids: Sequence[str], user_id: str, *, project_id: str | None = None
    ) -> Plan[builtins.list[str]]:
        """Delete several memories in one transaction (``POST /api/memories/delete``); the
        ids actually deleted (one not in the caller's scopes is left out)."""
        yield from self.acting_as(user_id)
        if isinstance(memory_ids, str):
            raise ValidationError("memory_ids: pass a list of ids, not one id", field="ids")
        body = {"ids": builtins.list(memory_ids), "project_id": project_id}
        if not body["ids"]:
            return []
        answer = yield Call("POST", "/api/memories/delete", json_body=body, user_id=user_id)
        return [str(i) for i in _json(answer)["deleted"]]

    def clear(self, user_id: str, project_id: str | None = None) -> Plan[int]:
        """Delete every memory of the private scope (or of ``project_id``): both steps of
        the server's confirmation at once. How many were deleted."""
        yield from self.acting_as(user_id)
        path = "/api/memories/clear"
        if project_id is not None:
            path = f"/api/memories/projects/{_segment(project_id)}/clear"
        token = _json((yield Call("POST", path, user_id=user_id)))["confirm_token"]
        done = yield Call("POST", path, json_body={"confirm_token": token}, user_id=user_id)
        return int(_json(done)["deleted"])

    # -- moving data ----------------------------------------------------------------------

    def export(
        self,
        user_id: str,
        format: Literal["json", "markdown"] = "json",
        *,
        project_id: str | None = None,
    ) -> Plan[str]:
        """Every memory of one scope as JSON (lossless) or Markdown."""
        yield from self.acting_as(user_id)
        params = _params(format=format, project_id=project_id)
        return (yield Call("GET", "/api/export", params=params, user_id=user_id)).text

    def import_(
        self,
        user_id: str,
        data: str | bytes | Mapping[str, Any],
        *,
        project_id: str | None = None,
    ) -> Plan[builtins.list[SaveResult]]:
        """Load a JSON export; ids already stored are skipped (``POST /api/import``)."""
        yield from self.acting_as(user_id)
        if isinstance(data, Mapping):
            content = json.dumps(dict(data)).encode()
        else:
            content = data.encode() if isinstance(data, str) else data
        params = _params(project_id=project_id)
        answer = yield Call("POST", "/api/import", params=params, content=content, user_id=user_id)
        return [SaveResult.model_validate(r) for r in _json(answer)["results"]]

    # -- the AI's side --------------------------------------------------------------------

    def system_prompt(
        self,
        user_id: str,
        profile: str = "default",
        budget_tokens: int = 500,
        *,
        thread_id: str | None = None,
    ) -> Plan[str]:
        """A profile's guidance and the pre-loaded memories, within ``budget_tokens``, as
        :func:`memorybank.tools.system_prompt` gives it (``GET /api/prompt``)."""
        yield from self.acting_as(user_id)
        params = _params(profile=profile, budget=budget_tokens, thread_id=thread_id)
        answer = yield Call("GET", "/api/prompt", params=params, user_id=user_id)
        return str(_json(answer)["prompt"])

    def auto_recall(self, caller: Caller, message: str, budget_tokens: int = 500) -> Plan[str]:
        """Auto-recall, as :func:`memorybank.core.prompt.auto_recall` (``POST
        /api/auto-recall``): the always-loaded memories and those relevant to ``message``,
        within ``budget_tokens``; the project is ``caller.thread_id``'s."""
        yield from self.acting_as(caller.user_id)
        body = {"message": message, "budget": budget_tokens, "thread_id": caller.thread_id}
        answer = yield Call("POST", "/api/auto-recall", json_body=body, user_id=caller.user_id)
        return str(_json(answer)["prompt"])

    def tool_definitions(
        self,
        user_id: str,
        profile: str = "default",
        format: Literal["openai", "anthropic", "mcp"] = "openai",
        *,
        thread_id: str | None = None,
    ) -> Plan[builtins.list[dict[str, Any]]]:
        """A profile's tools in a chat API's format (what :func:`memorybank.tools.to_openai`
        and its siblings give); for ``thread_id``, those offered in that thread."""
        yield from self.acting_as(user_id)
        params = _params(format=format, thread_id=thread_id)
        path = f"/api/tools/{_segment(profile)}"
        answer = yield Call("GET", path, params=params, user_id=user_id)
        tools: builtins.list[dict[str, Any]] = _json(answer)["tools"]
        return tools

    def call_tool(
        self,
        user_id: str,
        profile: str,
        name: str,
        arguments: str | Mapping[str, Any],
        *,
        thread_id: str | None = None,
    ) -> Plan[Any]:
        """Run a model's tool call as :func:`memorybank.tools.call` does: failures come back
        as ``{"success": false, "error": …}`` for the model to read."""
        yield from self.acting_as(user_id)
        body = {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else dict(arguments),
            "thread_id": thread_id,
        }
        path = f"/api/tools/{_segment(profile)}/call"
        return _json((yield Call("POST", path, json_body=body, user_id=user_id)))["result"]


__all__ = ["Call", "Calls", "Params", "Plan"]
