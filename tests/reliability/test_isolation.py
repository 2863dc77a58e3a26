"""No user sees or changes another's memories, through any path, and deleted text is gone.

One suite, three parts:

* **Examples on both backends** (SQLite and PostgreSQL): fixed secrets in four scopes, read
  back through every library read path (search, recent, list, export) by members, outsiders
  and strangers; writes by another user are ``NotFound``; clearing a scope touches no other.
* **Deletion on disk**: after a delete, an edit's old text and a cleared scope are gone from
  every byte of the SQLite files, and from every PostgreSQL table (history keeps only
  tombstones). Dead tuples stay in table and index pages until VACUUM (run here through
  ``PostgresStore.vacuum``), and the WAL keeps old records until it is recycled, so the
  on-disk guarantee on PostgreSQL is "gone from every table at once, from data pages after
  the next vacuum".
* **A state machine through every path**: random operations by users of two orgs, with
  projects, roles and an outsider, sent as real HTTP requests with API keys to the REST API,
  the tool-call endpoint (the tool dispatcher) and MCP over streamable HTTP (``/mcp``), and as
  library calls on the same bank (which trusts its caller: a plain member may write a
  project's memory there; the server's roles are checked on the HTTP paths). Nothing ever
  shows or changes a memory outside the caller's reach, and deleted text never comes back.

The machine's app runs in auth mode over a real SQLite file and the bundled embedder
(FastAPI's TestClient, nothing of ours mocked). Each example starts from a copy of one
database holding the accounts, so building the world costs a file copy. Facts carry tokens
(``isolation_helpers``): every response body and library answer is checked for tokens the
caller may not see, and after every step the store, read directly, must hold exactly the
facts of the ledger, so a write that lands in the wrong scope or touches another tenant's
fact fails the run even when no response shows it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
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

from isolation_helpers import (
    LIBRARY_CALLERS,
    ORGS,
    PROJECTS,
    TOPICS,
    USERS,
    WHERE,
    Fact,
    Ledger,
    Plan,
    Template,
    make_template,
    manage_status,
    org_admin_of,
    reaches,
    role,
    server_settings,
    sse_result,
    view_status,
)
from memorybank import MemoryBank, NotFound
from memorybank.model import Memory
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.portability import export_json
from memorybank.server.app import create_app
from memorybank.services import transfer
from memorybank.services.accounts import Accounts
from memorybank.services.forget import forget_confirm, forget_preview
from memorybank.stores.sqlite import SQLiteStore
from memorybank.tools import Caller, system_prompt
from server_helpers import MCP_HEADERS, MCP_INIT

SECRETS = {
    ("alice", None): "User's bank PIN is Zorblax 8812",
    ("bob", None): "User's diary password is Quintrelle 5531",
    ("alice", "apollo"): "Apollo launch codes are Vexmoria 1177",
    ("bob", "zeus"): "Zeus staging key is Plorvanth 9043",
}

#: Tombstone kinds: deleted one by one, cleared with the scope, forgotten by a plan.
TOMBSTONES = ("DELETE", "CLEAR", "FORGET")


@pytest.fixture
def populated(any_bank: MemoryBank) -> MemoryBank:
    bank = any_bank
    for (user, project), text in SECRETS.items():
        assert bank.save(user, text, "context", project_id=project).success
    return bank


def _visible(bank: MemoryBank, user: str, project: str | None) -> set[str]:
    """Every text the caller can reach through every read path."""
    seen: set[str] = set()
    for query in ["PIN password codes key", "Zorblax Quintrelle Vexmoria Plorvanth", "secret"]:
        seen |= {h.memory.content for h in bank.search(user, query, project_id=project)}
    seen |= {m.content for m in bank.list(user, project_id=project, limit=500, superseded=False)}
    seen |= {m.content for m in bank.list(user, project_id=project, limit=500)}
    seen |= {text for text in SECRETS.values() if text in transfer.export(bank, user)}
    if project:
        seen |= {
            t for t in SECRETS.values() if t in transfer.export(bank, user, project_id=project)
        }
    return seen


@pytest.mark.parametrize(
    ("user", "project", "allowed"),
    [
        ("alice", None, {("alice", None)}),
        ("bob", None, {("bob", None)}),
        ("alice", "apollo", {("alice", None), ("alice", "apollo")}),
        ("bob", "apollo", {("bob", None), ("alice", "apollo")}),  # a member of apollo
        ("carol", None, set()),
        ("carol", "zeus", {("bob", "zeus")}),
    ],
)
def test_reads_never_cross_scopes(
    populated: MemoryBank, user: str, project: str | None, allowed: set[tuple[str, str | None]]
) -> None:
    assert _visible(populated, user, project) == {SECRETS[key] for key in allowed}


def test_writes_never_cross_scopes(populated: MemoryBank) -> None:
    bobs = populated.list("bob", limit=10)[0]
    for attempt in (
        lambda: populated.get(bobs.id, "alice"),
        lambda: populated.update(bobs.id, "alice", content="User's diary password is gone"),
        lambda: populated.delete(bobs.id, "alice"),
        lambda: populated.history(bobs.id, "alice"),
        lambda: populated.delete(bobs.id, "alice", project_id="apollo"),
    ):
        with pytest.raises(NotFound):
            attempt()
    assert populated.clear("alice") == 1
    assert populated.get(bobs.id, "bob").content == SECRETS[("bob", None)]
    assert populated.count("alice", project_id="apollo") == 1


def save_and_edit(bank: MemoryBank) -> tuple[str, str, str]:
    """A kept fact, an edited fact and a project fact: their ids."""
    kept = bank.save("alice", "User's favourite tea is Darjeeling", "preference")
    doomed = bank.save("alice", "User's safe combination is Xerothane 4471", "context")
    bank.update(doomed.memory_id, "alice", content="User's safe combination is Wubbleplex 4471")
    cleared = bank.save("alice", "Apollo vault phrase Krandlemoor", "project", project_id="apollo")
    return kept.memory_id or "", doomed.memory_id or "", cleared.memory_id or ""


def delete_and_clear(bank: MemoryBank, kept: str, doomed: str, cleared: str) -> None:
    """Delete the edited fact and clear the project; the bank shows none of the removed text
    and keeps only tombstones of it (what both backends must do before their storage is
    read)."""
    bank.delete(doomed, "alice")
    assert bank.clear("alice", "apollo") == 1
    for word in ("Xerothane", "Wubbleplex", "Krandlemoor"):
        assert bank.search("alice", word, project_id="apollo")[0].memory.id == kept
    for event in bank.history(doomed, "alice") + bank.history(
        cleared, "alice", project_id="apollo"
    ):
        assert event.kind in TOMBSTONES and event.old_content is None and event.new_content is None


def _raw_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def test_deleted_text_leaves_every_table_and_file(tmp_path: Path, embedder: LocalEmbedder) -> None:
    folder = tmp_path / "db"
    store = SQLiteStore(folder / "m.db", dimension=embedder.dimension)
    bank = MemoryBank(store, embedder)
    ids = save_and_edit(bank)
    assert b"Xerothane" in _raw_bytes(folder) or b"Wubbleplex" in _raw_bytes(folder)
    delete_and_clear(bank, *ids)
    bank.close()

    raw = _raw_bytes(folder).lower()
    for word in (b"xerothane", b"wubbleplex", b"krandlemoor"):
        assert word not in raw, word
    assert b"darjeeling" in raw  # the check does see text that is still stored


def test_postgres_deleted_text_leaves_every_table(
    postgres_url: str, embedder: LocalEmbedder
) -> None:
    import psycopg

    from memorybank.stores.postgres import PostgresStore

    store = PostgresStore(postgres_url, dimension=embedder.dimension)
    bank = MemoryBank(store, embedder)
    delete_and_clear(bank, *save_and_edit(bank))
    store.vacuum()
    bank.close()

    with psycopg.connect(postgres_url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        ]
        dump = "".join(
            str(row[0]) for t in tables for row in conn.execute(f'SELECT t::text FROM "{t}" t')
        ).lower()
    assert {"memories", "history", "meta"} <= set(tables)
    for word in ("xerothane", "wubbleplex", "krandlemoor"):
        assert word not in dump, word
    assert "darjeeling" in dump  # the check does see text that is still stored


# -- the state machine ----------------------------------------------------------------------

users = st.sampled_from(USERS)
# "owner": whoever owns the fact (its project's owner for project facts), so that allowed
# changes are as frequent as refused ones.
actors = st.sampled_from(("owner", *USERS))
places = st.sampled_from(WHERE)
topics = st.sampled_from(TOPICS)
library_callers = st.sampled_from(LIBRARY_CALLERS)

TEMPLATE: list[Template] = []
EMBEDDER: list[LocalEmbedder] = []


class Isolation(RuleBasedStateMachine):
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
        settings_ = server_settings(path)
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
        it reaches comes from the key of each request, never from the session, and another
        principal's session is refused outright (404, issue 34 finding 10: ``...``)."""
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
            expect=200 if session_of == user else 404,
            headers=headers,
            json=call,
        )
        if response.status_code == 404:
            return ...
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

    # -- the library, on the same bank (trusting its caller) ---------------------------------

    def library_check(self, user: str, where: str | None, text: str, what: str) -> None:
        self.ledger.check(text, self.visible(user, where), f"library {what} as {user}/{where}")

    @rule(target=memories, who=library_callers, topic=topics)
    def library_save(self, who: tuple[str, str | None], topic: str) -> Any:
        """``MemoryBank.save`` naming a scope: the fact lands there (or in the private one)."""
        user, where = who
        result = self.bank.save(user, self.ledger.fact(topic)[1], "preference", project_id=where)
        if not result.success:
            return multiple()
        memory = self.bank.get(result.memory_id or "", user, project_id=where)
        assert memory.user_id == user and memory.project_id in (None, where)
        return self.record(user, memory.project_id, memory.id, result.content)

    @rule(
        who=library_callers,
        topic=topics,
        what=st.sampled_from(
            ["search_all", "search_user", "recent", "list", "export", "export_md", "prompt"]
        ),
    )
    def library_read(self, who: tuple[str, str | None], topic: str, what: str) -> None:
        """Search (all scopes, private only), recent, list, export (JSON, Markdown), and the
        system-prompt block of the default profile."""
        user, where = who
        self.library_check(user, where, self.library_text(user, where, what, topic), what)

    def library_text(self, user: str, where: str | None, what: str, topic: str) -> str:
        if what.startswith("search_"):
            scopes: Any = what.removeprefix("search_")
            hits = self.bank.search(user, topic, project_id=where, scopes=scopes, limit=50)
            for hit in hits:
                assert hit.memory.project_id in (None, where)
                assert hit.memory.project_id is not None or hit.memory.user_id == user
            return str([hit.memory.content for hit in hits])
        if what in ("recent", "list"):
            # The newest current facts are a list of those no newer one replaced.
            current: Any = {"superseded": False} if what == "recent" else {}
            listed = self.bank.list(user, project_id=where, limit=500, **current)
            return str([m.content for m in listed])
        if what == "prompt":
            ctx = Caller(user_id=user, project_id=where)
            return system_prompt(self.bank, ctx, "default", 2000)
        form = "markdown" if what == "export_md" else "json"
        return transfer.export(self.bank, user, form, project_id=where)

    @rule(who=library_callers, token=memories, topic=topics)
    def library_update(self, who: tuple[str, str | None], token: str, topic: str) -> None:
        """``MemoryBank.update`` reaches the caller's own facts and the named project's only;
        anything else is ``NotFound``."""
        user, where = who
        memory_id = self.ledger.ever[token].memory_id
        fact, live = self.current(token), self.ledger.token_of(memory_id)
        text = (
            f"User now likes {topic} even more, remembered as {live or self.ledger.fact(topic)[0]}"
        )
        if fact is None or not reaches(user, where, fact):
            with pytest.raises(NotFound):
                self.bank.update(memory_id, user, project_id=where, content=text)
            return
        fact.content = self.bank.update(memory_id, user, project_id=where, content=text).content
        assert fact.content == text
        events = self.bank.history(memory_id, user, project_id=where)
        self.library_check(user, where, str([e.model_dump() for e in events]), "history")

    @rule(who=library_callers, token=memories)
    def library_delete(self, who: tuple[str, str | None], token: str) -> None:
        """``MemoryBank.delete`` likewise; the history left behind shows no deleted text."""
        user, where = who
        memory_id = self.ledger.ever[token].memory_id
        fact = self.current(token)
        if fact is None or not reaches(user, where, fact):
            with pytest.raises(NotFound):
                self.bank.delete(memory_id, user, project_id=where)
            return
        self.bank.delete(memory_id, user, project_id=where)
        self.ledger.drop(self.ledger.token_of(memory_id) or "")
        events = self.bank.history(memory_id, user, project_id=where)
        self.library_check(user, where, str([e.model_dump() for e in events]), "history")

    @rule(who=library_callers, topic=topics)
    def library_forget(self, who: tuple[str, str | None], topic: str) -> None:
        """``forget_preview`` then ``forget_confirm``: the plan shows and forgets only what
        the caller reaches."""
        user, where = who
        ctx = Caller(user_id=user, project_id=where)
        preview = forget_preview(self.bank, ctx, topic)
        for item in preview.items:
            self.library_check(user, where, item.memory.content, "forget preview")
        planned = [item.memory.id for item in preview.items]
        forgotten = forget_confirm(self.bank, ctx, preview.plan.id).forgotten
        assert set(forgotten) <= set(planned), (forgotten, planned)
        for memory_id in forgotten:  # gone for good, deleted text never comes back
            fact = self.ledger.live[self.ledger.token_of(memory_id) or ""]
            with pytest.raises(NotFound):
                self.bank.get(memory_id, fact.owner, project_id=fact.project)
        self.reconcile(planned)

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
def test_isolation_through_every_path(embedder: LocalEmbedder, tmp_path: Path) -> None:
    EMBEDDER[:] = [embedder]
    TEMPLATE[:] = [make_template(tmp_path, embedder)]
    run_state_machine_as_test(
        Isolation,
        settings=settings(
            max_examples=50,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
