"""Isolation as a property, through the server: random operations by users of two orgs, with
projects, roles and outsiders, sent as real HTTP requests with API keys to the REST API, the
tool-call endpoint and MCP over streamable HTTP (``/mcp``), never show or change a memory
outside the caller's reach, and deleted text never comes back.

The app runs in auth mode over a real SQLite file and the bundled embedder (FastAPI's
TestClient, nothing of ours mocked). Each example starts from a copy of one database holding
the accounts, so building the world costs a file copy. Facts carry tokens (``isolation_helpers``):
every response body is checked for tokens the caller may not see, and after every step the
store, read directly, must hold exactly the facts of the ledger, so a write that lands in the
wrong scope or touches another tenant's fact fails the run even when no response shows it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from isolation_helpers import TOPICS, Fact, Ledger
from memorybank import MemoryBank, NotFound
from memorybank.model import Memory
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.portability import export_json
from memorybank.server.app import create_app
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings
from memorybank.stores.sqlite import SQLiteStore
from server_helpers import MCP_HEADERS, MCP_INIT

MASTER = "test-master-key-not-a-secret"
ORGS = {"acme": {"ann": "admin", "bob": "member", "cy": "member"}, "globex": {"dee": "admin"}}
ORGS["globex"]["eve"] = "member"
PROJECTS = {  # apollo in acme, zeus in globex; cy belongs to both, frank to nothing
    "apollo": {"ann": "owner", "bob": "admin", "cy": "member"},
    "zeus": {"dee": "owner", "cy": "admin", "eve": "member"},
}
USERS = ("ann", "bob", "cy", "dee", "eve", "frank")
WHERE = (None, "apollo", "zeus")

users = st.sampled_from(USERS)
# "owner": whoever owns the fact (its project's owner for project facts), so that allowed
# changes are as frequent as refused ones.
actors = st.sampled_from(("owner", *USERS))
places = st.sampled_from(WHERE)
topics = st.sampled_from(TOPICS)


@dataclass
class Template:
    """A database holding the accounts, copied for each example, and the users' API keys."""

    path: Path
    keys: dict[str, str]


TEMPLATE: list[Template] = []
EMBEDDER: list[LocalEmbedder] = []


def _settings(path: Path) -> Settings:
    return Settings(  # type: ignore[call-arg]
        url=f"sqlite:///{path}", master_key=MASTER, ai_write_rate_per_minute=1_000_000
    )


def make_template(folder: Path, embedder: LocalEmbedder) -> Template:
    path = folder / "template.db"
    keys: dict[str, str] = {}
    with MemoryBank(SQLiteStore(path, dimension=embedder.dimension), embedder) as bank:
        accounts = Accounts.open(bank, _settings(path))
        for user in USERS:
            accounts.create_user(user, name=user.title())
            keys[user] = accounts.create_key(user)[1]
        for org, members in ORGS.items():
            for user, org_role in members.items():
                accounts.add_org_member(org, user, org_role)
        for project, roles in PROJECTS.items():
            owner = next(u for u, r in roles.items() if r == "owner")
            org = next(o for o, members in ORGS.items() if owner in members)
            accounts.create_project(project, owner=owner, org_id=org)
            for user, role in roles.items():
                if role != "owner":
                    accounts.add_member(project, user, role)
    return Template(path, keys)


def role(user: str, project: str | None) -> str | None:
    return "owner" if project is None else PROJECTS[project].get(user)


def org_admin_of(user: str) -> str | None:
    return next((org for org, members in ORGS.items() if members.get(user) == "admin"), None)


def manage_status(user: str, project: str | None, ok: int = 200) -> int:
    """The status of a manual add / edit / delete / clear: non-members 404, members 403."""
    found = role(user, project)
    return 404 if found is None else 403 if found == "member" else ok


def view_status(user: str, project: str | None, ok: int = 200) -> int:
    return 404 if role(user, project) is None else ok


def sse_result(text: str) -> dict[str, Any]:
    """The JSON-RPC ``result`` of a streamable-HTTP answer (one SSE ``message`` event)."""
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    assert len(data) == 1, text[:300]
    message = json.loads(data[0])
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


@dataclass
class Plan:
    """A forget plan as previewed."""

    plan_id: str
    user: str
    project: str | None
    memory_ids: list[str]
    done: bool = False


class RestIsolation(RuleBasedStateMachine):
    memories = Bundle("memories")
    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        template, embedder = TEMPLATE[0], EMBEDDER[0]
        self.tmp = tempfile.TemporaryDirectory()
        path = Path(self.tmp.name) / "iso.db"
        shutil.copyfile(template.path, path)
        self.keys = template.keys
        # Durability is not what this machine tests: skip the fsyncs.
        store = SQLiteStore(path, dimension=embedder.dimension, synchronous="OFF")
        self.bank = MemoryBank(store, embedder)
        settings_ = _settings(path)
        app = create_app(self.bank, Accounts.open(self.bank, settings_), settings_)
        # Loopback as base URL: the MCP transport refuses other Host headers.
        self.client = TestClient(app, base_url="http://127.0.0.1:8000")
        self.client.__enter__()
        self.ledger = Ledger()
        self.threads: dict[tuple[str, str | None], str] = {}
        self.sessions: dict[str, str] = {}
        self.rpc_ids = iter(range(10, 10**9))

    def teardown(self) -> None:
        self.client.__exit__(None, None, None)
        self.bank.store.close()  # type: ignore[attr-defined]
        self.tmp.cleanup()

    # -- what a caller may see --------------------------------------------------------------

    def sees(self, user: str, fact: Fact) -> bool:
        if fact.project is None:
            return fact.owner == user
        return role(user, fact.project) is not None

    def visible(self, user: str, project: str | None) -> set[str]:
        """Private facts of ``user``, and those of ``project`` if they belong to it."""
        member = role(user, project) is not None
        return self.ledger.where(
            lambda f: (
                (f.project is None and f.owner == user)
                or (member and f.project is not None and f.project == project)
            )
        )

    def org_visible(self, user: str) -> set[str]:
        """What an org-wide search of ``user`` may return: nothing unless an org admin."""
        org = org_admin_of(user)
        if org is None:
            return set()
        people = {*ORGS[org], user}
        return self.ledger.where(lambda f: f.project is None and f.owner in people)

    def current(self, token: str) -> Fact | None:
        """The live fact now holding the id that ``token``'s memory had (an import may reuse
        the id of a deleted memory)."""
        found = self.ledger.token_of(self.ledger.ever[token].memory_id)
        return None if found is None else self.ledger.live[found]

    # -- requests ---------------------------------------------------------------------------

    def api(
        self,
        user: str,
        method: str,
        url: str,
        *,
        allowed: Iterable[str],
        expect: int | Iterable[int],
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx2.Response:
        """Send a request as ``user``; assert its status and that its body shows no token
        outside ``allowed`` (nor a deleted one)."""
        auth = {"Authorization": f"Bearer {self.keys[user]}", **(headers or {})}
        response = self.client.request(method, url, headers=auth, **kwargs)
        codes = {expect} if isinstance(expect, int) else set(expect)
        where = f"{method} {url} {kwargs.get('params') or ''} as {user}"
        assert response.status_code in codes, (where, response.status_code, response.text[:400])
        self.ledger.check(response.text, allowed, where)
        return response

    def thread(self, user: str, project: str | None) -> str | None:
        """The user's conversation in ``project`` (None, after a checked 404, for outsiders)."""
        if (user, project) not in self.threads:
            created = self.api(
                user,
                "POST",
                "/api/threads",
                allowed=(),
                expect=view_status(user, project, 201),
                json={"project_id": project},
            )
            if created.status_code != 201:
                return None
            self.threads[user, project] = created.json()["id"]
        return self.threads[user, project]

    def tool(
        self,
        user: str,
        project: str | None,
        name: str,
        arguments: dict[str, Any],
        *,
        profile: str = "default",
        expect: int | Iterable[int] = 200,
        also: Iterable[str] = (),
    ) -> Any:
        """A tool call as the model of ``user``'s conversation in ``project`` would send it
        (``...`` when the conversation cannot exist or the call was refused); ``also``: tokens
        it may show beyond the conversation's scope."""
        thread_id = self.thread(user, project)
        if project is not None and thread_id is None:
            return ...
        response = self.api(
            user,
            "POST",
            f"/api/tools/{profile}/call",
            allowed=self.visible(user, project) | set(also),
            expect=expect,
            json={"name": name, "arguments": arguments, "thread_id": thread_id},
        )
        return response.json()["result"] if response.status_code == 200 else ...

    def mcp_session(self, user: str) -> str:
        if user not in self.sessions:
            opened = self.api(
                user, "POST", "/mcp", allowed=(), expect=200, headers=MCP_HEADERS, json=MCP_INIT
            )
            session = opened.headers["mcp-session-id"]
            headers = {**MCP_HEADERS, "mcp-session-id": session}
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            self.api(user, "POST", "/mcp", allowed=(), expect=202, headers=headers, json=done)
            self.sessions[user] = session
        return self.sessions[user]

    def mcp(
        self,
        user: str,
        session_of: str,
        name: str,
        arguments: dict[str, Any],
        also: Iterable[str] = (),
    ) -> Any:
        """An MCP ``tools/call`` with ``user``'s key on ``session_of``'s session: whose memory
        it reaches comes from the key of each request, never from the session."""
        headers = {**MCP_HEADERS, "mcp-session-id": self.mcp_session(session_of)}
        call = {
            "jsonrpc": "2.0",
            "id": next(self.rpc_ids),
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        response = self.api(
            user,
            "POST",
            "/mcp",
            allowed=self.visible(user, None) | set(also),
            expect=200,
            headers=headers,
            json=call,
        )
        result = sse_result(response.text)
        value = json.loads(result["content"][0]["text"])
        assert result["isError"] == (value.get("success") is False), result
        return value

    def actor(self, who: str, token: str) -> str:
        if who != "owner":
            return who
        fact = self.ledger.ever[token]
        if fact.project is None:
            return fact.owner
        return next(u for u, r in PROJECTS[fact.project].items() if r == "owner")

    def record(self, owner: str, project: str | None, memory_id: str, content: str) -> str:
        stored = self.bank.get(memory_id, owner, project_id=project)
        assert stored.content == content and stored.project_id == project
        return self.ledger.add(owner, project, memory_id, content)

    # -- adding -----------------------------------------------------------------------------

    @initialize(target=memories)
    def seed(self) -> Any:
        """A private fact for every user and a fact in every project, so that reads and
        changes have something to find from the first step."""
        tokens = [self.add(user, None, TOPICS[i % len(TOPICS)]) for i, user in enumerate(USERS)]
        for i, (project, roles) in enumerate(PROJECTS.items()):
            tokens.append(self.add(next(iter(roles)), project, TOPICS[-1 - i]))
        return multiple(*(t for t in tokens if isinstance(t, str)))

    @rule(target=memories, user=users, where=places, topic=topics)
    def add(self, user: str, where: str | None, topic: str) -> Any:
        """``POST /api/memory/user`` or ``/api/memory/drive/{id}`` (admins and owners)."""
        token, text = self.ledger.fact(topic)
        url = "/api/memory/user" if where is None else f"/api/memory/drive/{where}"
        status = manage_status(user, where, 201)
        expect = {201, 409} if status == 201 else status
        allowed = self.visible(user, where) | {token}
        response = self.api(user, "POST", url, allowed=allowed, expect=expect, json={"fact": text})
        if response.status_code != 201:
            return multiple()
        memory = response.json()["memory"]
        assert memory["user_id"] == user and memory["project_id"] == where
        return self.record(user, where, memory["id"], memory["content"])

    @rule(target=memories, user=users, where=places, topic=topics, mcp_session_of=st.none() | users)
    def remember(self, user: str, where: str | None, topic: str, mcp_session_of: str | None) -> Any:
        """The ``remember`` tool through ``/api/tools/default/call`` in a conversation, or
        over MCP (private scope): it saves to the caller's private memory."""
        token, text = self.ledger.fact(topic, "enjoys")
        if mcp_session_of is not None:
            result = self.mcp(user, mcp_session_of, "remember", {"fact": text}, also={token})
        else:
            result = self.tool(user, where, "remember", {"fact": text}, also={token})
        if result is ... or not result["success"]:
            return multiple()
        return self.record(user, None, result["id"], result["fact"])

    @rule(
        target=memories,
        user=users,
        where=places,
        borrowed=st.none() | memories,
        topic=topics,
    )
    def import_(self, user: str, where: str | None, borrowed: str | None, topic: str) -> Any:
        """``POST /api/import`` of a document whose memory claims the id of another fact."""
        token, text = self.ledger.fact(topic, "imported")
        memory = Memory(user_id="someone-else", content=text, category="preference")
        taken = None
        if borrowed is not None and (fact := self.current(borrowed)) is not None:
            taken = fact.memory_id
            memory = memory.model_copy(update={"id": taken})
        params = {} if where is None else {"project_id": where}
        response = self.api(
            user,
            "POST",
            "/api/import",
            allowed=(token,),  # the answer lists what was sent: the caller's own text
            expect=manage_status(user, where),
            params=params,
            content=export_json("someone-else", None, [memory]),
        )
        if response.status_code != 200:
            return multiple()
        assert response.json().items() >= {"imported": 1, "skipped": 0}.items()
        scopes = "user" if where is None else "project"
        found = [
            m
            for m in self.bank.list(user, project_id=where, scopes=scopes, limit=10_000)
            if token in m.content
        ]
        assert len(found) == 1 and found[0].id != taken, found
        return self.record(user, where, found[0].id, text)

    # -- reading ----------------------------------------------------------------------------

    @rule(
        user=users,
        where=places,
        topic=topics,
        scopes=st.sampled_from(["all", "user", "project"]),
    )
    def search(self, user: str, where: str | None, topic: str, scopes: str) -> None:
        params: dict[str, Any] = {"q": topic, "scopes": scopes, "limit": 100}
        if where is not None:
            params["project_id"] = where
        expect = view_status(user, where) if where or scopes != "project" else {200, 422}
        response = self.api(
            user,
            "GET",
            "/api/search",
            allowed=self.visible(user, where),
            expect=expect,
            params=params,
        )
        for hit in response.json().get("hits", []):
            memory = hit["memory"]
            assert memory["project_id"] in (None, where)
            assert memory["project_id"] is not None or memory["user_id"] == user

    @rule(user=users, topic=topics)
    def org_wide_search(self, user: str, topic: str) -> None:
        """Org admins read their org's private memories; anyone else gets 403."""
        expect = 200 if org_admin_of(user) else 403
        response = self.api(
            user,
            "GET",
            "/api/search",
            allowed=self.org_visible(user),
            expect=expect,
            params={"q": topic, "org_wide": True, "limit": 100},
        )
        if expect == 200:
            org = org_admin_of(user) or ""
            for hit in response.json()["hits"]:
                assert hit["memory"]["project_id"] is None
                assert hit["memory"]["user_id"] in {*ORGS[org], user}

    @rule(
        user=users,
        where=places,
        what=st.sampled_from(["recent", "list", "list_q", "export", "export_md", "prompt"]),
        topic=topics,
    )
    def read(self, user: str, where: str | None, what: str, topic: str) -> None:
        """Recent, list (and its ``q`` search), export (JSON, Markdown), the prompt block."""
        allowed = self.visible(user, where)
        scope: dict[str, Any] = {} if where is None else {"project_id": where}
        expect = view_status(user, where)
        if what == "prompt":
            thread_id = self.thread(user, where)
            if thread_id is not None:
                params = {"thread_id": thread_id, "budget": 4000}
                self.api(user, "GET", "/api/prompt", allowed=allowed, expect=200, params=params)
            return
        if what == "recent":
            url, params = "/api/recent", {**scope, "limit": 500}
        elif what.startswith("list"):
            url = "/api/memory/user" if where is None else f"/api/memory/drive/{where}"
            params = {"limit": 500, **({"q": topic} if what == "list_q" else {})}
        else:
            url, params = (
                "/api/export",
                {**scope, "format": "markdown" if what == "export_md" else "json"},
            )
        response = self.api(user, "GET", url, allowed=allowed, expect=expect, params=params)
        if response.status_code == 200 and what in ("list", "export"):
            # Complete listings: exactly the scope's facts (the user's own, or the project's).
            own = self.ledger.where(
                lambda f: f.project == where and (where is not None or f.owner == user)
            )
            if what == "export":
                assert {m["id"] for m in response.json()["memories"]} == {
                    self.ledger.live[t].memory_id for t in own
                }
            else:
                assert response.json()["count"] == len(own)

    @rule(user=users)
    def stats(self, user: str) -> None:
        """Counts are the caller's own: their private facts and their projects'."""
        body = self.api(user, "GET", "/api/stats", allowed=(), expect=200).json()
        assert body["memories"] == len(
            self.ledger.where(lambda f: f.project is None and f.owner == user)
        )
        counts = {p["id"]: p["memories"] for p in body["projects"]}
        assert set(counts) == {p for p in PROJECTS if role(user, p)}
        for project, count in counts.items():
            assert count == len(self.ledger.where(lambda f, p=project: f.project == p))

    @rule(who=actors, token=memories)
    def get_and_history(self, who: str, token: str) -> None:
        """``GET /api/memories/{id}`` and its history: 200 for those who see it, else 404."""
        user = self.actor(who, token)
        memory_id = self.ledger.ever[token].memory_id
        fact = self.current(token)
        if fact is None or not self.sees(user, fact):
            self.api(user, "GET", f"/api/memories/{memory_id}", allowed=(), expect=404)
            history = self.api(
                user,
                "GET",
                f"/api/memories/{memory_id}/history",
                allowed=(),
                expect=(200, 404) if fact is None else 404,
            )
            return
        mine = {self.ledger.token_of(memory_id) or ""}
        got = self.api(user, "GET", f"/api/memories/{memory_id}", allowed=mine, expect=200)
        assert got.json()["content"] == fact.content
        history = self.api(
            user, "GET", f"/api/memories/{memory_id}/history", allowed=mine, expect=200
        )
        assert history.json()["events"][0]["kind"] == "ADD"

    # -- changing ---------------------------------------------------------------------------

    @rule(who=actors, token=memories, topic=topics)
    def patch(self, who: str, token: str, topic: str) -> None:
        """``PATCH /api/memories/{id}``: owners of private facts, project admins and owners."""
        user = self.actor(who, token)
        memory_id = self.ledger.ever[token].memory_id
        fact = self.current(token)
        if fact is None or not self.sees(user, fact):
            expect = 404
        else:
            expect = manage_status(user, fact.project)
        live = self.ledger.token_of(memory_id)
        text = (
            f"User now likes {topic} even more, remembered as {live or self.ledger.fact(topic)[0]}"
        )
        allowed = set() if live is None or fact is None or not self.sees(user, fact) else {live}
        response = self.api(
            user,
            "PATCH",
            f"/api/memories/{memory_id}",
            allowed=allowed,
            expect=expect,
            json={"content": text},
        )
        if response.status_code == 200 and fact is not None:
            fact.content = response.json()["content"]
            assert fact.content == text

    @rule(who=actors, token=memories, route=st.sampled_from(["user", "drive"]))
    def delete(self, who: str, token: str, route: str) -> None:
        """``DELETE /api/memory/user/{id}`` (own private facts) and ``/api/memory/drive/{id}``
        (project facts, admins and owners); anything else is 404 or 403."""
        user = self.actor(who, token)
        memory_id = self.ledger.ever[token].memory_id
        fact = self.current(token)
        if fact is None or (fact.project is None) != (route == "user") or not self.sees(user, fact):
            expect = 404
        else:
            expect = manage_status(user, fact.project, 204)
        self.api(user, "DELETE", f"/api/memory/{route}/{memory_id}", allowed=(), expect=expect)
        if expect == 204:
            self.ledger.drop(self.ledger.token_of(memory_id) or "")

    @rule(
        who=actors,
        where=places,
        token=memories,
        how=st.sampled_from(["forget", "replace", "mcp_forget", "mcp_replace"]),
        topic=topics,
    )
    def change_by_tool(self, who: str, where: str | None, token: str, how: str, topic: str) -> None:
        """``forget`` / ``remember`` with an id, by the model of a conversation (project
        members may not change shared memory) or over MCP (private scope only)."""
        user = self.actor(who, token)
        over_mcp = how.startswith("mcp_")
        if over_mcp:
            where = None
        memory_id = self.ledger.ever[token].memory_id
        fact = self.current(token)
        live = self.ledger.token_of(memory_id)
        reachable = fact is not None and (
            (fact.project is None and fact.owner == user)
            or (fact.project is not None and fact.project == where)
        )
        text = f"User now enjoys {topic} daily, remembered as {live or self.ledger.fact(topic)[0]}"
        forgetting = how.endswith("forget")
        name, arguments = (
            ("forget", {"id": memory_id})
            if forgetting
            else ("remember", {"fact": text, "id": memory_id})
        )
        if over_mcp:
            result = self.mcp(user, user, name, arguments)
        else:
            refused = where is not None and role(user, where) == "member"
            result = self.tool(user, where, name, arguments, expect=403 if refused else 200)
            if result is ...:
                return
        assert result["success"] is reachable, (how, user, where, fact, result)
        if not reachable or fact is None:
            return
        if forgetting:
            self.ledger.drop(live or "")
        else:
            assert result["fact"] == text
            fact.content = text

    @rule(user=users, where=places, topic=topics, org_wide=st.booleans())
    def recall(self, user: str, where: str | None, topic: str, org_wide: bool) -> None:
        """``recall`` of the default profile in a conversation, and hyperspark's with
        ``orgWide`` (org admins only)."""
        if org_wide:
            arguments = {"query": topic, "orgWide": True}
            also = self.org_visible(user)
            result = self.tool(user, None, "recall", arguments, profile="hyperspark", also=also)
            admin = org_admin_of(user) is not None
            assert isinstance(result, str) == admin, result
            return
        result = self.tool(user, where, "recall", {"query": topic})
        if result is not ...:
            assert result["success"], result

    @rule(user=users, owner_of_thread=users)
    def foreign_thread(self, user: str, owner_of_thread: str) -> None:
        """Naming someone else's conversation is 404, for prompts and tool calls alike."""
        thread_id = self.thread(owner_of_thread, None)
        expect = 200 if user == owner_of_thread else 404
        self.api(
            user,
            "GET",
            "/api/prompt",
            allowed=self.visible(user, None),
            expect=expect,
            params={"thread_id": thread_id},
        )
        call = {"name": "recall", "arguments": {"query": "tea"}, "thread_id": thread_id}
        self.api(
            user,
            "POST",
            "/api/tools/default/call",
            allowed=self.visible(user, None),
            expect=expect,
            json=call,
        )

    # -- forgetting and clearing ------------------------------------------------------------

    @rule(target=plans, user=users, where=places, topic=topics)
    def forget_preview(self, user: str, where: str | None, topic: str) -> Any:
        """``POST /api/forget/preview``: its steps show only the caller's reach."""
        response = self.api(
            user,
            "POST",
            "/api/forget/preview",
            allowed=self.visible(user, where),
            expect=manage_status(user, where),
            json={"query": topic, "project_id": where},
        )
        if response.status_code != 200:
            return multiple()
        body = response.json()
        ids = [step["memory_id"] for step in body["steps"]]
        return Plan(body["plan_id"], user, where, ids)

    @rule(
        plan=plans,
        who=actors,
        how=st.sampled_from(["confirm", "cancel", "tool_confirm"]),
    )
    def forget_finish(self, plan: Plan, who: str, how: str) -> None:
        """Confirm or cancel a plan: someone else's plan id is 404 (a failed tool call over
        hyperspark's ``forget_confirm``) and changes nothing."""
        user = plan.user if who == "owner" else who
        mine = user == plan.user
        if how == "tool_confirm":
            result = self.tool(
                user, None, "forget_confirm", {"planId": plan.plan_id}, profile="hyperspark"
            )
            ok = isinstance(result, str)
            assert not ok or (mine and not plan.done), result
        else:
            expect = ({422} if plan.done else {200, 422}) if mine else {404}
            response = self.api(
                user,
                "POST",
                f"/api/forget/{plan.plan_id}/{how}",
                allowed=(),
                expect=expect,
            )
            ok = response.status_code == 200
        if ok:
            plan.done = True
            self.reconcile(plan.memory_ids)

    def reconcile(self, memory_ids: list[str]) -> None:
        """Follow the planned facts a confirmed plan deleted or rewrote."""
        for memory_id in memory_ids:
            token = self.ledger.token_of(memory_id)
            if token is None:
                continue
            fact = self.ledger.live[token]
            try:
                fact.content = self.bank.get(memory_id, fact.owner, project_id=fact.project).content
            except NotFound:
                self.ledger.drop(token)

    @rule(user=users, where=places, thief=users, finish=st.booleans())
    def clear(self, user: str, where: str | None, thief: str, finish: bool) -> None:
        """Clearing a scope takes a confirm token; another user's token is refused."""
        url = "/api/memories/clear" if where is None else f"/api/memories/projects/{where}/clear"
        asked = self.api(user, "POST", url, allowed=(), expect=manage_status(user, where))
        if asked.status_code != 200:
            return
        scope = self.ledger.where(
            lambda f: f.project == where and (where is not None or f.owner == user)
        )
        assert asked.json()["count"] == len(scope)
        token = {"confirm_token": asked.json()["confirm_token"]}
        if thief != user:
            stolen = manage_status(thief, where, 422)
            self.api(thief, "POST", url, allowed=(), expect=stolen, json=token)
        if finish:
            done = self.api(user, "POST", url, allowed=(), expect=200, json=token)
            assert done.json() == {"deleted": len(scope)}
            for gone in scope:
                self.ledger.drop(gone)

    # -- the store itself -------------------------------------------------------------------

    @invariant()
    def store_holds_exactly_the_ledger(self) -> None:
        """Read directly: every scope holds exactly its live facts, unchanged by others."""
        stored: dict[str, Memory] = {}
        for user in USERS:
            for memory in self.bank.list(user, scopes="user", limit=10_000):
                assert memory.user_id == user
                stored[memory.id] = memory
        for project, roles in PROJECTS.items():
            member = next(iter(roles))
            for memory in self.bank.list(
                member, project_id=project, scopes="project", limit=10_000
            ):
                assert memory.project_id == project
                stored[memory.id] = memory
        expected = {f.memory_id: f for f in self.ledger.live.values()}
        assert set(stored) == set(expected)
        for memory_id, fact in expected.items():
            memory = stored[memory_id]
            assert (memory.content, memory.project_id) == (fact.content, fact.project)
            assert fact.project is not None or memory.user_id == fact.owner


@pytest.mark.slow
def test_isolation_through_rest_and_mcp(embedder: LocalEmbedder, tmp_path: Path) -> None:
    EMBEDDER[:] = [embedder]
    TEMPLATE[:] = [make_template(tmp_path, embedder)]
    run_state_machine_as_test(
        RestIsolation,
        settings=settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
