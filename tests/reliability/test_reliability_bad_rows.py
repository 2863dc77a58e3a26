"""A row no check passed costs at most itself (issue 27's "done when"), on SQLite and
PostgreSQL.

Each kind of bad row is planted directly in the database, as an older version or a person
with the file could have left it: times out of range (and, where SQLite allows, not numbers),
metadata that is not JSON, not an object or nested far past any save's limit, tags that are
not a list of strings, names no enum knows, text that is not UTF-8 or holds a NUL, and history
events of an unknown kind or time. Then every read path — list, get, search, export, the system
prompt and auto-recall, events, history, stats — answers, through the library and over HTTP,
with each bad row repaired (and so still visible, to fix or delete) and every other row as it
was stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from client_helpers import served
from memorybank import MemoryBank
from memorybank.core.events import read_events
from memorybank.core.prompt import auto_recall
from memorybank.model import Caller, Category, Memory, new_id
from memorybank.services import transfer
from memorybank.stores.postgres import PostgresStore
from memorybank.tools import system_prompt

USER = "alice"
GOOD = "User keeps bees on the roof of the house"
#: One fact per bad row, on topics far apart (so none is a duplicate of another).
FACTS = [
    "User plays the cello in an amateur orchestra",
    "User's sister Marta is a pilot in Chile",
    "User is allergic to shellfish and peanuts",
    "User drives an old green Volvo estate",
    "User studied marine biology in Aberdeen",
    "User runs a marathon every October",
    "User prefers window seats on long flights",
    "User collects vintage fountain pens",
    "User works night shifts at a bakery",
    "User speaks Finnish with their grandmother",
    "User grows chillies on the balcony",
    "User is learning to sail on Lake Geneva",
    "User's dog Pixel is afraid of thunder",
    "User repairs mechanical watches as a hobby",
    "User avoids caffeine after noon",
    "User volunteers at the city library on Saturdays",
    "User's favourite film is Spirited Away",
    "User once climbed Mount Kenya",
]
YEAR_10000 = 253_402_351_199_000_000  # 9999-12-31T23:59:59-14:00 in UTC microseconds
YEAR_0 = -62_135_647_200_000_000  # 0001-01-01T00:00:00+14:00


def nested(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


@dataclass(frozen=True)
class Bad:
    """One kind of bad row: the memory's columns as planted, and what a read makes of it."""

    name: str
    columns: dict[str, Any]
    check: Callable[[Memory], bool]
    sqlite_only: bool = False


BAD_ROWS = [
    Bad("created in year 10000", {"created_us": YEAR_10000}, lambda m: m.created_at.year == 9999),
    Bad("created in year 0", {"created_us": YEAR_0}, lambda m: m.created_at.year == 1),
    Bad(
        "other times out of range",
        {"updated_us": 10**18, "occurred_us": -(10**18), "reinforced_us": 10**18},
        lambda m: (m.updated_at.year, m.occurred_at and m.occurred_at.year) == (9999, 1),
    ),
    Bad("a time that is text", {"created_us": "yesterday"}, lambda m: True, sqlite_only=True),
    Bad("metadata not JSON", {"metadata": '{"a": '}, lambda m: m.metadata == {}, sqlite_only=True),
    Bad("metadata not an object", {"metadata": "[1, 2]"}, lambda m: m.metadata == {}),
    Bad("metadata 300 deep", {"metadata": nested(300)}, lambda m: m.metadata == {}),
    Bad("metadata 2000 deep", {"metadata": nested(2000)}, lambda m: m.metadata == {}),
    Bad("tags not JSON", {"tags": '["a"'}, lambda m: m.tags == (), sqlite_only=True),
    Bad("tags not strings", {"tags": '[1, {"x": 2}]'}, lambda m: m.tags == ()),
    Bad(
        "names no enum knows",
        {"category": "bogus", "ring": "weird", "source": "alien", "domain": "nowhere"},
        lambda m: (m.category, m.domain) == (Category.CONTEXT, None),
    ),
    Bad("importance out of range", {"importance": 99}, lambda m: m.importance == 10),
    Bad("importance as text", {"importance": "high"}, lambda m: m.importance == 5, True),
    Bad("decision not JSON", {"decision": "{broken"}, lambda m: m.decision is None),
    Bad(
        "text not UTF-8",
        {"content": b"User \xff\xed\xa0\x80 likes tea"},  # a byte no UTF-8 has; a surrogate
        lambda m: "\ufffd" in m.content and m.content.startswith("User "),
        sqlite_only=True,
    ),
    Bad("text with a NUL", {"content": "User likes\x00 tea"}, lambda m: True, sqlite_only=True),
    Bad("text as a blob", {"content": b"User likes green tea"}, lambda m: True, sqlite_only=True),
]


class Database:
    """Direct SQL on the bank's own database (``?`` placeholders on both)."""

    def __init__(self, bank: MemoryBank) -> None:
        self.bank = bank
        self.postgres = isinstance(bank.store, PostgresStore)

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            import psycopg

            assert isinstance(self.bank.store, PostgresStore)
            with psycopg.connect(self.bank.store.url, autocommit=True) as conn:
                cursor = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
                return cursor.fetchall() if cursor.description else []
        import apsw

        conn = apsw.Connection(self.bank.store.path)  # type: ignore[attr-defined]
        conn.set_busy_timeout(30_000)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()

    def plant(self, memory_id: str, columns: dict[str, Any]) -> None:
        for column, value in columns.items():
            if isinstance(value, bytes) and not self.postgres and column == "content":
                text = "CAST(? AS TEXT)" if b"\xff" in value else "?"  # not UTF-8 / a blob
                self.run(f"UPDATE memories SET {column} = {text} WHERE id = ?", (value, memory_id))
                continue
            cast = "::jsonb" if self.postgres and column in ("tags", "metadata") else ""
            self.run(f"UPDATE memories SET {column} = ?{cast} WHERE id = ?", (value, memory_id))


@dataclass
class Planted:
    bank: MemoryBank
    good: Memory
    bad: dict[str, str]  # kind -> memory id
    said: dict[str, str]  # kind -> the fact saved before the row was spoilt
    events: int  # history rows of the user's scope


@pytest.fixture
def planted(any_bank: MemoryBank) -> Planted:
    bank, db = any_bank, Database(any_bank)
    saved = bank.save(USER, GOOD, "identity", tags=["bees"], metadata={"hive": 2})
    good = bank.get(str(saved.memory_id), USER)
    bad, said = {}, {}
    for fact, kind in zip(FACTS, BAD_ROWS, strict=False):
        if kind.sqlite_only and db.postgres:
            continue
        saved = bank.save(USER, fact, "preference")
        assert saved.memory_id is not None, saved
        bad[kind.name], said[kind.name] = saved.memory_id, fact
        db.plant(bad[kind.name], kind.columns)
    # History as an older version could have left it: an event out of range, an unknown kind,
    # and an unknown channel.
    victim = bad["created in year 10000"]
    for kind, channel, at in (("ADD", "ai", YEAR_10000), ("BOGUS", "ai", 0), ("ADD", "owl", 0)):
        db.run(
            "INSERT INTO history (id, memory_id, user_id, project_id, scope_key, kind, "
            "new_content, actor, created_us, channel) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)",
            (new_id("evt"), victim, USER, f"u:{USER}", kind, "old text", USER, at, channel),
        )
    [(events,)] = db.run("SELECT count(*) FROM history WHERE scope_key = ?", (f"u:{USER}",))
    return Planted(bank, good, bad, said, int(events))


def kinds(planted: Planted) -> list[Bad]:
    return [kind for kind in BAD_ROWS if kind.name in planted.bad]


def test_every_library_read_answers_with_bad_rows_repaired(planted: Planted) -> None:
    bank, good = planted.bank, planted.good
    listed = {m.id: m for m in bank.list(USER, limit=100)}
    assert listed[good.id] == good  # the others exactly as stored
    assert set(listed) == {good.id, *planted.bad.values()}  # no row skipped
    for kind in kinds(planted):
        memory = bank.get(planted.bad[kind.name], USER)
        assert kind.check(memory), (kind.name, memory)
        assert listed[memory.id] == memory
        memory.model_dump_json()  # and it serialises: deep metadata did not
        assert bank.history(memory.id, USER)
    hits = bank.search(USER, "bees on the roof", limit=50)
    assert hits[0].memory == good
    for kind in kinds(planted):  # each bad row found, as its search index still has it
        found = bank.search(USER, planted.said[kind.name], limit=5)
        assert planted.bad[kind.name] in [h.memory.id for h in found], kind.name
    exported = json.loads(transfer.export(bank, USER))
    assert len(exported["memories"]) == len(planted.bad) + 1
    assert GOOD in system_prompt(bank, Caller(user_id=USER), "default", 2000)
    assert GOOD in auto_recall(bank, Caller(user_id=USER), "Where are the bees kept?", 2000)
    events = read_events(bank.store, USER, limit=1000)
    assert len(events) == planted.events  # none skipped: readers page by their numbers
    assert "updated" in {e.type for e in events}  # the unknown kind, read as a change
    assert bank.store.stats()["memories"] == len(planted.bad) + 1
    # History leaves out only the event of a kind no version wrote.
    victim = planted.bad["created in year 10000"]
    assert [e.kind.value for e in bank.history(victim, USER)] == ["ADD", "ADD", "ADD"]


@pytest.fixture
def http(planted: Planted) -> Iterator[httpx.Client]:
    with served(planted.bank) as (url, _):  # local mode: the user is named by a header
        headers = {"X-Memorybank-User": USER}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            yield client


def test_every_http_read_answers_with_bad_rows_repaired(
    planted: Planted, http: httpx.Client
) -> None:
    reads = {
        "list": http.get("/api/memory/user"),
        "recent": http.get("/api/recent"),
        "search": http.get("/api/search", params={"q": "hobby or collection", "limit": 50}),
        "export": http.get("/api/export"),
        "prompt": http.get("/api/prompt", params={"budget": 2000}),
        "auto-recall": http.post(
            "/api/auto-recall", json={"message": "Where are the bees?", "budget": 2000}
        ),
        "events": http.get("/api/events/list", params={"limit": 1000}),
        "stats": http.get("/api/stats"),
    }
    for memory_id in [planted.good.id, *planted.bad.values()]:
        reads[f"get {memory_id}"] = http.get(f"/api/memories/{memory_id}")
        reads[f"history {memory_id}"] = http.get(f"/api/memories/{memory_id}/history")
    for name, response in reads.items():
        assert response.status_code == 200, (name, response.text[:300])
    shown = {m["id"]: m for m in reads["list"].json()["memories"]}
    assert set(shown) == {planted.good.id, *planted.bad.values()}
    assert shown[planted.good.id]["metadata"] == {"hive": 2}
    assert len(reads["events"].json()["events"]) == planted.events
    assert len(reads["export"].json()["memories"]) == len(planted.bad) + 1
