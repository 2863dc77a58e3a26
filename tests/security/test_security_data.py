"""Issue 27, performed for real: a server on 127.0.0.1 (uvicorn, its webhook worker running) in
accounts mode, driven over HTTP. Project apollo has owner, admin and member; zed owns project
zeus, another tenant with a webhook of its own.

1. A member saved an item with ``created_at`` ``9999-12-31T23:59:59-14:00`` (year 10000 in
   UTC): 200, then every read of the project was a 500 for every member, the events list and
   stream failed, and the webhook worker failed every pass, so no webhook of any tenant was
   delivered. Every write path now refuses a time the store cannot keep (422), and a row
   left by an older version is read with its time repaired, costing nothing else.
2. Conversation items skipped the metadata limits (300 levels stored, then reads failed).
9. Import skipped the validation of a save (empty, 100,000 characters, NUL and bidi text).
10. A metadata filter named ``a\\`` was a 503 quoting SQLite's "bad JSON path".
11. A lone surrogate in a conversation item, an import or a query was a 500.
12. Importing another user's memory id answered differently from an unknown id.
And a ``created_at`` in the future (which ranking would never let decay) is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest

from client_helpers import served
from memorybank import MemoryBank
from memorybank.model import new_id
from memorybank.model.times import to_us
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore
from memorybank.tools import Caller, profile
from memorybank.tools import call as tool_call
from server_helpers import MCP_HEADERS, MCP_INIT
from webhook_receiver import receiver

#: Times that are valid ISO but leave the calendar in UTC: year 10000 and year 0.
EDGE_TIMES = ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"]
JSON = {"Content-Type": "application/json"}
FACT = "The team ships Apollo on Fridays"


@dataclass
class Site:
    http: httpx.Client
    bank: MemoryBank
    db: Path
    keys: dict[str, str]

    def auth(self, user: str, **more: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}", **more}

    def count(self, user: str, project: str | None = "apollo") -> int:
        params = {"scopes": "project", "project_id": project} if project else {"scopes": "user"}
        r = self.http.get("/api/memories/count", params=params, headers=self.auth(user))
        assert r.status_code == 200, r.text
        return int(r.json()["count"])

    def save(self, user: str, item: dict[str, Any], project: str | None = "apollo") -> Any:
        body: dict[str, Any] = {"items": [item]}
        if project:
            body["project_id"] = project
        return self.http.post("/api/memories", json=body, headers=self.auth(user))

    def post_raw(self, user: str, url: str, body: bytes) -> httpx.Response:
        """A JSON body as bytes: how a lone surrogate (``\\ud800`` in JSON) is sent."""
        return self.http.post(url, content=body, headers=self.auth(user, **JSON))

    def plant(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Write to the database directly, as an older version (or a person) could have."""
        conn = apsw.Connection(str(self.db))
        conn.set_busy_timeout(30_000)  # the server's worker writes too
        try:
            conn.execute(sql, params)
        finally:
            conn.close()


@pytest.fixture
def site(tmp_path: Path, embedder: LocalEmbedder) -> Iterator[Site]:
    db = tmp_path / "data.db"
    with MemoryBank(SQLiteStore(db, dimension=embedder.dimension), embedder) as bank:
        # Webhooks to the receivers on loopback: the operator allows private addresses here.
        settings = {"provider_allow_private": True, "webhook_poll_seconds": 0.05}
        with served(bank, **settings) as (url, accounts):
            keys = {}
            for user in ("owner", "admin", "member", "zed"):
                accounts.create_user(user, name=user.title())
                keys[user] = accounts.create_key(user)[1]
            accounts.create_project("apollo", owner="owner", name="Apollo")
            accounts.add_member("apollo", "admin", "admin")
            accounts.add_member("apollo", "member", "member")
            accounts.create_project("zeus", owner="zed", name="Zeus")
            with httpx.Client(base_url=url, timeout=60) as http:
                yield Site(http, bank, db, keys)


def project_reads(site: Site, user: str, thread_id: str) -> dict[str, httpx.Response]:
    """Every read of project apollo a member makes: list, search, export, the system prompt,
    auto-recall, the events list and the first message of the events stream."""
    h = site.auth(user)
    reads = {
        "list": site.http.get("/api/memory/drive/apollo", headers=h),
        "search": site.http.get(
            "/api/search",
            params={"q": "when does the team ship", "project_id": "apollo", "scopes": "project"},
            headers=h,
        ),
        "export": site.http.get("/api/export", params={"project_id": "apollo"}, headers=h),
        "prompt": site.http.get("/api/prompt", params={"thread_id": thread_id}, headers=h),
        "auto-recall": site.http.post(
            "/api/auto-recall",
            json={"message": "When does the team ship Apollo?", "thread_id": thread_id},
            headers=h,
        ),
        "events": site.http.get("/api/events/list", headers=h),
    }
    listed = reads["events"].json().get("events", []) if reads["events"].is_success else []
    if listed:  # the stream replays the same events, then waits for more
        with site.http.stream("GET", "/api/events", params={"after": 0}, headers=h) as stream:
            lines = (line for line in stream.iter_lines() if line.startswith("data:"))
            sent = [json.loads(next(lines)[5:]) for _ in listed]
            reads["stream"] = httpx.Response(stream.status_code, json=sent)
        assert [e["id"] for e in sent] == [e["id"] for e in listed]
    return reads


def thread_in_apollo(site: Site, user: str) -> str:
    r = site.http.post("/api/threads", json={"project_id": "apollo"}, headers=site.auth(user))
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def assert_reads_answer(site: Site) -> None:
    for user in ("owner", "admin", "member"):
        thread = thread_in_apollo(site, user)
        for name, response in project_reads(site, user, thread).items():
            assert response.status_code == 200, (user, name, response.text[:300])


# -- 1: times the store cannot keep -------------------------------------------------------------


def document(**fields: Any) -> bytes:
    """An export document of one fact, with ``fields`` set."""
    item = {"user_id": "someone", "content": "User ships Apollo on Fridays", "category": "project"}
    return json.dumps({"memories": [{**item, **fields}]}).encode()


@pytest.mark.parametrize("moment", EDGE_TIMES)
@pytest.mark.parametrize("field", ["created_at", "occurred_at"])
def test_a_member_cannot_save_a_time_the_store_cannot_keep(
    site: Site, field: str, moment: str
) -> None:
    assert site.save("member", {"content": FACT, "category": "project"}).status_code == 200
    r = site.save("member", {"content": "Apollo ships with a new logo", field: moment})
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(
        f"items.0.{field}: {moment} is not a time the store can keep: in UTC it falls outside "
        "the years 1-9999; send a time within them (with its UTC offset, or in UTC)"
    )
    assert site.count("member") == 1
    assert_reads_answer(site)


@pytest.mark.parametrize("moment", EDGE_TIMES)
@pytest.mark.parametrize("field", ["created_at", "updated_at", "occurred_at", "reinforced_at"])
def test_an_import_cannot_carry_a_time_the_store_cannot_keep(
    site: Site, field: str, moment: str
) -> None:
    r = site.post_raw("admin", "/api/import?project_id=apollo", document(**{field: moment}))
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(f"import item 0: {field}: {moment} is not a time")
    assert site.count("admin") == 0
    assert_reads_answer(site)


def test_a_bad_time_already_stored_costs_only_its_row(site: Site) -> None:
    """A row an older version stored (year 10000 in UTC, in the memory and its event) is read
    with the nearest time there is, and every other tenant's webhook is still delivered."""
    with receiver() as apollo_rx, receiver() as zeus_rx:
        for user, project, rx in (("owner", "apollo", apollo_rx), ("zed", "zeus", zeus_rx)):
            hook = {"url": rx.url, "project_id": project}
            made = site.http.post("/api/webhooks", json=hook, headers=site.auth(user))
            assert made.status_code == 201, made.text
        saved = site.save("member", {"content": FACT, "category": "project"})
        assert saved.status_code == 200, saved.text
        mid = saved.json()["results"][0]["memory_id"]
        apollo_rx.wait_for(1)
        bad = to_us(datetime.fromisoformat(EDGE_TIMES[0]))
        site.plant("UPDATE memories SET created_us = ? WHERE id = ?", (bad, mid))
        # And an event of it as the old version wrote it, after the worker's cursor.
        site.plant(
            "INSERT INTO history (id, memory_id, user_id, project_id, scope_key, kind, "
            "new_content, actor, created_us, channel) VALUES (?, ?, 'member', 'apollo', "
            "'p:apollo', 'ADD', ?, 'member', ?, 'ai')",
            (new_id("evt"), mid, FACT, bad),
        )
        other = site.save("zed", {"content": "Zeus launches in the spring"}, project="zeus")
        assert other.status_code == 200, other.text
        # No pass fails: zeus's own event is delivered, and apollo's (repaired) one too.
        [zeus_event] = [json.loads(r.body) for r in zeus_rx.wait_for(1)]
        assert zeus_event["event"]["content"] == "Zeus launches in the spring"
        apollo_rx.wait_for(2)
    assert_reads_answer(site)
    got = site.http.get(f"/api/memories/{mid}", headers=site.auth("member"))
    assert got.status_code == 200, got.text
    assert got.json()["created_at"].startswith("9999-12-31T23:59:59")
    listed = site.http.get("/api/memory/drive/apollo", headers=site.auth("admin")).json()
    assert [m["id"] for m in listed["memories"]] == [mid]


def test_a_time_in_the_future_is_refused(site: Site) -> None:
    """A memory "learnt" next year would rank as brand new, undecayed, until then."""
    now = datetime.now(UTC)
    later = (now + timedelta(hours=1)).isoformat()
    r = site.save("member", {"content": FACT, "created_at": later})
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(f"created_at {later} is in the future")
    # Within the clocks' skew (5 minutes), and any time in the past, is accepted.
    soon = (now + timedelta(minutes=1)).isoformat()
    assert site.save("member", {"content": FACT, "created_at": soon}).status_code == 200
    for field in ("created_at", "updated_at", "reinforced_at"):
        r = site.post_raw("admin", "/api/import?project_id=apollo", document(**{field: later}))
        assert r.status_code == 422, r.text
        assert r.json()["error"].startswith(f"import item 0: {field} {later} is in the future")
    assert site.count("member") == 1


# -- 2: conversation items meet the metadata limits ---------------------------------------------


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("metadata", "says"),
    [
        (nested(300), "metadata nested too deeply at metadata.a.a.a"),
        ({"note": "x" * 17_000}, "metadata too large"),
    ],
)
def test_conversation_items_meet_the_metadata_limits(
    site: Site, metadata: dict[str, Any], says: str
) -> None:
    turn = {"content": "hello there", "ring": "episodic", "source": "conversation"}
    r = site.save("member", {**turn, "metadata": metadata})
    assert r.status_code == 422, r.text
    assert says in r.json()["error"] and r.json()["field"] == "metadata"
    assert site.count("member") == 0
    # Within the limits it is stored; a change past them is refused the same way.
    stored = site.save("owner", {**turn, "metadata": nested(64)})
    assert stored.status_code == 200, stored.text
    mid = stored.json()["results"][0]["memory_id"]
    patched = site.http.patch(
        f"/api/memories/{mid}",
        params={"project_id": "apollo"},
        json={"metadata": metadata},
        headers=site.auth("owner"),
    )
    assert patched.status_code == 422, patched.text
    assert_reads_answer(site)


# -- 9: import validates as a save does ---------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("", "content too short: 0 characters, minimum 10"),
        ("x" * 100_000, "content too long: 100000 characters, maximum 500"),
        ("a\u0000b\u202e and more text", "content contains a control character U+0000"),
    ],
)
def test_import_validates_each_item_as_a_save_does(site: Site, content: str, says: str) -> None:
    good = {"user_id": "x", "content": "User keeps bees on the roof", "category": "context"}
    bad = {**good, "content": content}
    body = json.dumps({"memories": [good, bad]}).encode()
    r = site.post_raw("member", "/api/import", body)
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith(f"import item 1: {says}")
    assert site.count("member", project=None) == 0  # all or nothing: the good one too


def test_an_imported_conversation_turn_is_checked_as_a_turn(site: Site) -> None:
    turn = {"user_id": "x", "content": "ok", "category": "context", "ring": "episodic"}
    turn["source"] = "conversation"
    r = site.post_raw("member", "/api/import", json.dumps([turn]).encode())
    assert r.status_code == 200 and r.json()["imported"] == 1, r.text  # short, as said
    deep = {**turn, "content": "fine", "metadata": nested(65)}
    r = site.post_raw("member", "/api/import", json.dumps([deep]).encode())
    assert r.status_code == 422 and r.json()["error"].startswith("import item 0: metadata")


# -- 10: a metadata filter SQL cannot take ------------------------------------------------------


@pytest.mark.parametrize("name", ["a\\", "a\u0000", 'a"b'])
def test_a_metadata_filter_name_sql_cannot_take_is_a_422(site: Site, name: str) -> None:
    assert site.save("admin", {"content": FACT, "metadata": {"a": 1}}, project=None).is_success
    r = site.http.get(
        "/api/memories", params={"metadata": json.dumps({name: 1})}, headers=site.auth("admin")
    )
    assert r.status_code == 422, r.text
    assert r.json()["error"].startswith("metadata filter name")
    assert "SQL" not in r.text and "JSON path" not in r.text


def test_a_store_error_never_quotes_the_database(bank: MemoryBank) -> None:
    """Whatever the database says (it can quote the statement and its values) goes to the
    log; the error a caller sees names only its kind."""
    from memorybank.errors import StoreError

    with pytest.raises(StoreError) as info, bank.store.reading() as txn:  # type: ignore[attr-defined]
        txn.fetch("SELECT json_extract('{}', ?)", ['$."secret\\'])
    assert str(info.value) == "database error (SQLError); the server log has the details"


# -- 11: lone surrogates ------------------------------------------------------------------------

SURROGATE = b"hi \\ud800 there"


def test_a_lone_surrogate_is_a_422_wherever_it_comes(site: Site) -> None:
    turn = b'{"content": "%s", "ring": "episodic", "source": "conversation"}' % SURROGATE
    sends = {
        "conversation item": ("/api/memories", b'{"items": [%s]}' % turn),
        "import": (
            "/api/import",
            b'[{"user_id": "x", "content": "%s", "category": "context"}]' % SURROGATE,
        ),
        "auto-recall": ("/api/auto-recall", b'{"message": "%s"}' % SURROGATE),
        "thread title": ("/api/threads", b'{"title": "%s"}' % SURROGATE),
        "fact by hand": ("/api/memory/user", b'{"fact": "%s"}' % SURROGATE),
    }
    for what, (url, body) in sends.items():
        r = site.post_raw("member", url, body)
        assert r.status_code == 422, (what, r.text)
        assert "unpaired surrogate U+D800 at position 3" in r.json()["error"], (what, r.text)
    assert site.count("member", project=None) == 0


def test_a_lone_surrogate_in_a_tool_call_is_a_clear_tool_error(site: Site) -> None:
    # Over REST the body is refused before the tool runs, as every body is.
    call = b'{"name": "recall", "arguments": {"query": "%s"}}' % SURROGATE
    r = site.post_raw("member", "/api/tools/default/call", call)
    assert r.status_code == 422, r.text
    assert "arguments.query: unpaired surrogate U+D800 at position 3" in r.json()["error"]
    # The tools themselves refuse it with an error the model can act on, for any adapter.
    said = [{"role": "user", "content": "hi \ud800 there"}]
    answers = {
        "recall": tool_call(
            site.bank,
            profile("default"),
            "recall",
            {"query": said[0]["content"]},
            Caller(user_id="member"),
        ),
        "remember": tool_call(
            site.bank,
            profile("hyperspark"),
            "remember",
            {"messages": said},
            Caller(user_id="member"),
        ),
    }
    assert answers["recall"] == {
        "success": False,
        "error": "recall: argument query: unpaired surrogate U+D800 at position 3: remove it",
    }
    assert "messages[0].content: unpaired surrogate U+D800" in answers["remember"]["error"]
    # Over MCP the SDK's JSON parser refuses it first: a JSON-RPC parse error, not a 500.
    headers = site.auth("member", **MCP_HEADERS)
    opened = site.http.post("/mcp", json=MCP_INIT, headers=headers)
    assert opened.status_code == 200, opened.text
    headers["mcp-session-id"] = opened.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert site.http.post("/mcp", json=done, headers=headers).status_code == 202
    request = (
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall", '
        b'"arguments": {"query": "%s"}}}' % SURROGATE
    )
    r = site.http.post("/mcp", content=request, headers=headers)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == -32700  # JSON-RPC's parse error
    assert site.count("member", project=None) == 0


# -- 12: an import answers every foreign id alike -----------------------------------------------


def test_an_import_answers_a_foreign_id_and_an_unknown_one_alike(site: Site) -> None:
    private = site.save("owner", {"content": "User's locker code is 4471"}, project=None)
    foreign = private.json()["results"][0]["memory_id"]
    unknown = new_id("mem")
    answers = {}
    for name, claimed in (("foreign", foreign), ("unknown", unknown)):
        body = document(id=claimed, content=f"User imported the {name} one")
        r = site.post_raw("member", "/api/import", body)
        assert r.status_code == 200, r.text
        [result] = r.json()["results"]
        assert result["memory_id"] != claimed  # a new id, whether the claimed one exists or not
        answers[name] = (r.json()["imported"], result["success"], sorted(result))
    assert answers["foreign"] == answers["unknown"]
    owner = site.http.get(f"/api/memories/{foreign}", headers=site.auth("owner"))
    assert owner.json()["content"] == "User's locker code is 4471"
