""":class:`Client`: :class:`~memorybank.MemoryBank` over HTTP, for a server started with
``memorybank serve``.

The same methods, arguments, return types and exceptions as the bank, so code written against
one runs against the other. What differs is who decides: with accounts, the server acts for
the user its API key belongs to, with that user's role in each project, so a ``user_id`` other
than the key's is a :class:`~memorybank.PermissionDenied`; in local mode (no accounts, no key)
it acts for the ``user_id`` each call names, as the bank does. The bank's
``role``/``created_by``/``actor`` arguments are not taken: the server decides them.

Connection failures and answers 429 and 503 are tried again (``retries`` times, waiting what
``Retry-After`` asks, up to ``max_wait`` seconds); a POST is only retried when the request
never reached the server, so nothing is saved twice.

    >>> with Client("http://127.0.0.1:8000", api_key="mb_…") as memory:  # doctest: +SKIP
    ...     memory.save("alice", "I prefer dark mode", "preference").content
    ...     [hit.memory.content for hit in memory.search("alice", "UI theme")]
    'User prefers dark mode'
    ['User prefers dark mode']

A new endpoint becomes a method in a few lines: call :meth:`Client.request` with the method,
path, parameters and body, and build the core record from the JSON it returns.
"""

from __future__ import annotations

import builtins
import json
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal
from urllib.parse import quote

import httpx

from memorybank.errors import (
    ConfigurationError,
    MemoryBankError,
    NotFound,
    PermissionDenied,
    ProviderError,
    RateLimited,
    StoreError,
    ValidationError,
)
from memorybank.model import (
    Caller,
    Category,
    Domain,
    HistoryEvent,
    Memory,
    Ring,
    SaveInput,
    SaveResult,
    ScopeChoice,
    SearchHit,
    Source,
)

#: The header naming the user a request acts for, in local mode
#: (:data:`memorybank.server.principals.USER_HEADER`).
USER_HEADER = "X-Memorybank-User"

#: Statuses worth another try: the server asked to slow down, or could not write just now.
RETRY_STATUSES = frozenset({429, 503})

Params = Mapping[str, Any]


def _error(response: httpx.Response) -> MemoryBankError:
    """The :class:`~memorybank.MemoryBankError` of an error answer (``{"error": …}``)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    message = str(body.get("error") or response.text[:300] or response.reason_phrase)
    status = response.status_code
    if status in (400, 413, 415, 422):
        field = body.get("field")
        return ValidationError(message, field=field if isinstance(field, str) else None)
    if status in (401, 403):
        return PermissionDenied(message)
    if status == 404:
        return NotFound(message)
    if status == 421:
        return ConfigurationError(f"{message} (the server does not answer to this host name)")
    if status == 429:
        wait = response.headers.get("Retry-After", "1")
        return RateLimited(message, retry_after=int(wait) if wait.isdigit() else 1)
    if status == 502:
        return ProviderError(message)
    if status in (503, 507):
        return StoreError(message)
    return MemoryBankError(f"HTTP {status}: {message}")


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


def _memory(shown: dict[str, Any]) -> Memory:
    """The stored record of a memory the API shows: its ``effective_importance`` (the
    importance it ranks with now) is the server's view, not a field of :class:`Memory`."""
    return Memory.model_validate({k: v for k, v in shown.items() if k != "effective_importance"})


class Client:
    """:class:`~memorybank.MemoryBank`'s interface over HTTP (see the module)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        max_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.max_wait = max_wait
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )
        self._user: str | None = None
        self._local = False  # local mode: any user of the server's database, by header

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        user_id: str | None = None,
    ) -> httpx.Response:
        """Send one request (as ``user_id``, in local mode), trying again on a refused
        connection and on 429/503; the error answer raised as the
        :class:`~memorybank.MemoryBankError` it stands for."""
        headers = {"Content-Type": "application/json"} if content is not None else {}
        if user_id is not None and self._local:
            headers[USER_HEADER] = quote(user_id, safe="")
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._http.request(
                    method, path, params=params, json=json_body, content=content, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if last:
                    raise StoreError(
                        f"cannot reach the memorybank server at {self.base_url}: {exc}; "
                        "is `memorybank serve` running there?"
                    ) from None
                time.sleep(min(self.max_wait, 0.2 * 2**attempt))
                continue
            except httpx.TransportError as exc:  # it may have arrived: never sent twice
                raise StoreError(
                    f"the memorybank server at {self.base_url} failed: {exc}"
                ) from None
            if response.status_code in RETRY_STATUSES and not last:
                time.sleep(self._wait(response, attempt))
                continue
            if response.is_error:
                raise _error(response)
            return response
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _wait(self, response: httpx.Response, attempt: int) -> float:
        """Seconds before the next try: ``Retry-After`` when the server says, else backoff."""
        value = response.headers.get("Retry-After", "")
        try:
            seconds = float(value)
        except ValueError:
            seconds = 0.2 * 2**attempt
        return max(0.0, min(self.max_wait, seconds))

    def _json(self, user_id: str | None, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, user_id=user_id, **kwargs).json()

    # -- who is calling -------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        """Who the API key belongs to, the mode, and their projects (``GET /api/me``)."""
        me: dict[str, Any] = self._json(None, "GET", "/api/me")
        self._user = str(me["user_id"])
        self._local = me.get("mode") == "local"
        return me

    @property
    def user_id(self) -> str:
        """The user the API key belongs to (``local`` in local mode)."""
        if self._user is None:
            self.me()
        assert self._user is not None
        return self._user

    def _as(self, user_id: str) -> None:
        """:class:`~memorybank.PermissionDenied` unless ``user_id`` is this client's user
        (in local mode every user is: the server acts for the one each request names)."""
        if not isinstance(user_id, str) or not user_id.strip():
            raise ValidationError("user_id is required", field="user_id")
        if user_id != self.user_id and not self._local:
            raise PermissionDenied(
                f"this client acts for {self.user_id!r} (the user of its API key), not "
                f"{user_id!r}: use that user's key"
            )

    # -- saving ---------------------------------------------------------------------------

    def save(
        self,
        user_id: str,
        content: str,
        category: Category | str | None = None,
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
        on_conflict: Literal["auto", "keep", "supersede"] = "auto",
    ) -> SaveResult:
        """Save one fact, as :meth:`MemoryBank.save <memorybank.MemoryBank.save>`."""
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
        }
        return self.save_many(user_id, [item], project_id=project_id, on_conflict=on_conflict)[0]

    def save_many(
        self,
        user_id: str,
        items: Iterable[SaveInput | Mapping[str, Any]],
        *,
        project_id: str | None = None,
        on_conflict: Literal["auto", "keep", "supersede"] = "auto",
    ) -> builtins.list[SaveResult]:
        """Save a batch in one request, all or nothing (``POST /api/memories``)."""
        self._as(user_id)
        batch = []
        for raw in items:
            item = raw if isinstance(raw, SaveInput) else SaveInput.model_validate(raw)
            batch.append(item.model_dump(mode="json", exclude={"created_by"}, exclude_none=True))
        body = {"items": batch, "project_id": project_id, "on_conflict": on_conflict}
        results = self._json(user_id, "POST", "/api/memories", json_body=body)["results"]
        return [SaveResult.model_validate(r) for r in results]

    # -- reading --------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 10,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        **filters: Any,
    ) -> builtins.list[SearchHit]:
        """Hybrid search, best first (``GET /api/search``), only hits at least
        ``min_relevance`` relevant; ``filters`` as the bank's (category, tags, ring, domain,
        min_importance, since, until, metadata, session_id, source)."""
        self._as(user_id)
        if not isinstance(query, str) or not query.strip():
            raise ValidationError("query is empty: say what to look for", field="query")
        params = _params(
            q=query,
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            include_superseded=include_superseded or None,
            min_relevance=min_relevance or None,
            **filters,
        )
        hits = self._json(user_id, "GET", "/api/search", params=params)["hits"]
        return [SearchHit.model_validate(h) for h in hits]

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
    ) -> builtins.list[Memory]:
        """Newest memories first (``GET /api/recent``)."""
        self._as(user_id)
        params = _params(
            project_id=project_id,
            scopes=scopes,
            limit=limit,
            since=since,
            include_superseded=include_superseded or None,
            **filters,
        )
        memories = self._json(user_id, "GET", "/api/recent", params=params)["memories"]
        return [_memory(m) for m in memories]

    def get(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> Memory:
        """One memory by id; :class:`~memorybank.NotFound` if the caller may not see it."""
        self._as(user_id)
        path = f"/api/memories/{_segment(memory_id)}"
        return _memory(self._json(user_id, "GET", path, params=_params(project_id=project_id)))

    def list(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        limit: int = 50,
        offset: int = 0,
        order: Literal["created_desc", "created_asc", "importance_desc"] = "created_desc",
        **filters: Any,
    ) -> builtins.list[Memory]:
        """A page of memories, newest first by default (``GET /api/memories``)."""
        self._as(user_id)
        params = _params(
            project_id=project_id, scopes=scopes, limit=limit, offset=offset, order=order, **filters
        )
        memories = self._json(user_id, "GET", "/api/memories", params=params)["memories"]
        return [_memory(m) for m in memories]

    def count(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        scopes: ScopeChoice = "all",
        **filters: Any,
    ) -> int:
        """How many memories meet the filters (``GET /api/memories/count``)."""
        self._as(user_id)
        params = _params(project_id=project_id, scopes=scopes, **filters)
        return int(self._json(user_id, "GET", "/api/memories/count", params=params)["count"])

    def history(
        self, memory_id: str, user_id: str, *, project_id: str | None = None
    ) -> builtins.list[HistoryEvent]:
        """ADD / UPDATE / DELETE events of one memory, oldest first."""
        self._as(user_id)
        path = f"/api/memories/{_segment(memory_id)}/history"
        events = self._json(user_id, "GET", path, params=_params(project_id=project_id))["events"]
        return [HistoryEvent.model_validate(e) for e in events]

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
    ) -> Memory:
        """Change a memory in place: same id, recorded in history (``PATCH``)."""
        self._as(user_id)
        body = {
            "content": content,
            "category": None if category is None else str(category),
            "tags": None if tags is None else builtins.list(tags),
            "metadata": None if metadata is None else dict(metadata),
            "importance": importance,
        }
        path = f"/api/memories/{_segment(memory_id)}"
        answer = self._json(
            user_id,
            "PATCH",
            path,
            params=_params(project_id=project_id),
            json_body={k: v for k, v in body.items() if v is not None},
        )
        return _memory(answer)

    def restore(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> Memory:
        """Bring a superseded memory back into search and the prompt (``POST …/restore``)."""
        self._as(user_id)
        path = f"/api/memories/{_segment(memory_id)}/restore"
        return _memory(self._json(user_id, "POST", path, params=_params(project_id=project_id)))

    def delete(self, memory_id: str, user_id: str, *, project_id: str | None = None) -> None:
        """Delete for real (a private memory, or with ``project_id`` a project's)."""
        self._as(user_id)
        where = "drive" if project_id is not None else "user"
        self.request("DELETE", f"/api/memory/{where}/{_segment(memory_id)}", user_id=user_id)

    def clear(self, user_id: str, project_id: str | None = None) -> int:
        """Delete every memory of the private scope (or of ``project_id``): both steps of
        the server's confirmation at once. How many were deleted."""
        self._as(user_id)
        path = "/api/memories/clear"
        if project_id is not None:
            path = f"/api/memories/projects/{_segment(project_id)}/clear"
        token = self._json(user_id, "POST", path)["confirm_token"]
        return int(self._json(user_id, "POST", path, json_body={"confirm_token": token})["deleted"])

    # -- moving data ----------------------------------------------------------------------

    def export(
        self,
        user_id: str,
        format: Literal["json", "markdown"] = "json",
        *,
        project_id: str | None = None,
    ) -> str:
        """Every memory of one scope as JSON (lossless) or Markdown."""
        self._as(user_id)
        params = _params(format=format, project_id=project_id)
        return self.request("GET", "/api/export", params=params, user_id=user_id).text

    def import_(
        self,
        user_id: str,
        data: str | bytes | Mapping[str, Any],
        *,
        project_id: str | None = None,
    ) -> builtins.list[SaveResult]:
        """Load a JSON export; ids already stored are skipped (``POST /api/import``)."""
        self._as(user_id)
        if isinstance(data, Mapping):
            content = json.dumps(dict(data)).encode()
        else:
            content = data.encode() if isinstance(data, str) else data
        answer = self._json(
            user_id, "POST", "/api/import", params=_params(project_id=project_id), content=content
        )
        return [SaveResult.model_validate(r) for r in answer["results"]]

    # -- the AI's side --------------------------------------------------------------------

    def system_prompt(
        self,
        user_id: str,
        profile: str = "default",
        budget_tokens: int = 500,
        *,
        thread_id: str | None = None,
    ) -> str:
        """A profile's guidance and the pre-loaded memories, within ``budget_tokens``, as
        :func:`memorybank.tools.system_prompt` gives it (``GET /api/prompt``)."""
        self._as(user_id)
        params = _params(profile=profile, budget=budget_tokens, thread_id=thread_id)
        return str(self._json(user_id, "GET", "/api/prompt", params=params)["prompt"])

    def auto_recall(self, caller: Caller, message: str, budget_tokens: int = 500) -> str:
        """Auto-recall, as :func:`memorybank.core.prompt.auto_recall` (``POST
        /api/auto-recall``): the always-loaded memories and those relevant to ``message``,
        within ``budget_tokens``; the project is ``caller.thread_id``'s."""
        self._as(caller.user_id)
        body = {"message": message, "budget": budget_tokens, "thread_id": caller.thread_id}
        answer = self._json(caller.user_id, "POST", "/api/auto-recall", json_body=body)
        return str(answer["prompt"])

    def context_for(self, caller: Caller, message: str, budget_tokens: int = 500) -> str:
        """Deprecated (removed in the next release): :meth:`auto_recall`."""
        warnings.warn(
            "Client.context_for is deprecated: use Client.auto_recall",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.auto_recall(caller, message, budget_tokens)

    def tool_definitions(
        self,
        user_id: str,
        profile: str = "default",
        format: Literal["openai", "anthropic", "mcp"] = "openai",
        *,
        thread_id: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """A profile's tools in a chat API's format (what :func:`memorybank.tools.to_openai`
        and its siblings give); for ``thread_id``, those offered in that thread."""
        self._as(user_id)
        params = _params(format=format, thread_id=thread_id)
        tools: builtins.list[dict[str, Any]] = self._json(
            user_id, "GET", f"/api/tools/{_segment(profile)}", params=params
        )["tools"]
        return tools

    def call_tool(
        self,
        user_id: str,
        profile: str,
        name: str,
        arguments: str | Mapping[str, Any],
        *,
        thread_id: str | None = None,
    ) -> Any:
        """Run a model's tool call as :func:`memorybank.tools.call` does: failures come back
        as ``{"success": false, "error": …}`` for the model to read."""
        self._as(user_id)
        body = {
            "name": name,
            "arguments": arguments if isinstance(arguments, str) else dict(arguments),
            "thread_id": thread_id,
        }
        path = f"/api/tools/{_segment(profile)}/call"
        return self._json(user_id, "POST", path, json_body=body)["result"]


def _segment(value: str) -> str:
    """``value`` as one path segment (an id may hold any character)."""
    return quote(value, safe="")


__all__ = ["RETRY_STATUSES", "USER_HEADER", "Client"]
