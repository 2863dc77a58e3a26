"""Issue 34, findings 7, 8 and 13, performed for real: a server on 127.0.0.1 driven over HTTP
from several threads at once, and the library's ``supersede``.

7. A concurrent edit silently undid a supersession: ``PATCH`` read the row outside the write
   transaction and wrote every column back, ``superseded_by`` included. A change is now a
   compare-and-set on the row as read (``Store.replace(expected=…)``), tried again on what is
   stored now.
8. An edit racing a delete answered 503 (which clients retry) in 10 of 12 races; now 404.
9. Export → import kept ``superseded_by`` pointing at the exported ids, which the import had
   replaced: the replacement was lost ("Recently Changed" empty) and the link led nowhere.
13. ``supersede`` accepted a self-link and a cycle (A→B→A): both facts left search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest

from client_helpers import served
from memorybank import MemoryBank, ValidationError
from memorybank.model import EventKind, HistoryEvent
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore

ROUNDS = 8
KEYS: dict[str, str] = {}

#: A move that retires what it may update (a save is never sure enough on its own).
CHICAGO = {
    "items": [{"content": "User moved to Chicago", "category": "identity"}],
    "on_conflict": "supersede",
}


@pytest.fixture
def site(tmp_path: Path, embedder: LocalEmbedder) -> Iterator[tuple[httpx.Client, MemoryBank]]:
    db = tmp_path / "edits.db"
    with MemoryBank(SQLiteStore(db, dimension=embedder.dimension), embedder) as bank:
        with served(bank) as (url, accounts):
            for user in ("alice", "bob"):
                accounts.create_user(user, name=user.title())
                KEYS[user] = accounts.create_key(user)[1]
            headers = {"Authorization": f"Bearer {KEYS['alice']}"}
            with httpx.Client(base_url=url, timeout=60, headers=headers) as http:
                yield http, bank


def together(*calls: Callable[[], httpx.Response]) -> list[httpx.Response]:
    """Run ``calls`` on threads released at the same moment; their answers in order."""
    start = threading.Barrier(len(calls))
    answers: list[httpx.Response | None] = [None] * len(calls)

    def run(index: int) -> None:
        start.wait()
        answers[index] = calls[index]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(a is not None for a in answers)
    return [a for a in answers if a is not None]


def add(http: httpx.Client, fact: str) -> str:
    r = http.post("/api/memory/user", json={"fact": fact, "category": "identity"})
    assert r.status_code == 201, r.text
    return str(r.json()["memory"]["id"])


def test_an_edit_racing_a_supersession_never_undoes_it(
    site: tuple[httpx.Client, MemoryBank],
) -> None:
    http, bank = site
    for n in range(ROUNDS):
        bank.clear("alice")
        old = add(http, "User lives in Boston")
        patch, save = together(
            partial(http.patch, f"/api/memories/{old}", json={"importance": 3, "tags": ["home"]}),
            partial(http.post, "/api/memories", json=CHICAGO),
        )
        assert patch.status_code == 200, patch.text
        assert save.is_success, save.text
        [saved] = save.json()["results"]
        assert [m["memory_id"] for m in saved["replaced"]] == [old], save.text
        stored = bank.get(old, "alice")
        assert stored.superseded_by == saved["memory_id"], f"round {n}: undone"
        assert stored.importance == 3 and stored.tags == ("home",), f"round {n}: edit lost"


def test_a_stale_write_changes_nothing(bank: MemoryBank) -> None:
    """The store's side: a replace that expects the row as it was read before another change
    writes nothing and says so."""
    read = bank.get(bank.save("u1", "User lives in Leeds", "identity").memory_id, "u1")
    bank.update(read.id, "u1", importance=4)
    stale = read.model_copy(update={"importance": 9})
    event = HistoryEvent.about(read, EventKind.UPDATE, "u1")
    assert bank.store.replace(stale, None, event, expected=read.updated_at) is False
    assert bank.get(read.id, "u1").importance == 4


def test_an_edit_racing_a_delete_is_404_never_503(
    site: tuple[httpx.Client, MemoryBank],
) -> None:
    http, _ = site
    statuses = []
    for n in range(ROUNDS):
        memory_id = add(http, f"User keeps {n} bicycles in the shed")
        patch, delete = together(
            partial(
                http.patch,
                f"/api/memories/{memory_id}",
                json={"content": f"User keeps {n + 1} bicycles"},
            ),
            partial(http.delete, f"/api/memory/user/{memory_id}"),
        )
        assert delete.status_code in (200, 204), delete.text
        statuses.append(patch.status_code)
    assert set(statuses) <= {200, 404}, statuses


def test_supersede_refuses_a_self_link_and_a_cycle(bank: MemoryBank) -> None:
    a = bank.save("u1", "User lives in Leeds", "identity", on_conflict="keep").memory_id
    b = bank.save("u1", "User works at the Leeds library", "context").memory_id
    with pytest.raises(ValidationError, match="cannot supersede itself"):
        bank.supersede(a, a, "u1")
    bank.supersede(a, b, "u1")
    with pytest.raises(ValidationError, match="cycle"):
        bank.supersede(b, a, "u1")
    assert bank.get(b, "u1").superseded_by is None  # the newer fact stays current
    hits = [h.memory.id for h in bank.search("u1", "where does the user work")]
    assert b in hits


def test_an_import_links_each_replaced_fact_to_its_replacement_anew(
    site: tuple[httpx.Client, MemoryBank],
) -> None:
    http, bank = site
    old = add(http, "User lives in Boston")
    new = http.post("/api/memories", json=CHICAGO)
    assert [m["memory_id"] for m in new.json()["results"][0]["replaced"]] == [old]
    document = http.get("/api/export").json()
    bob = {"Authorization": f"Bearer {KEYS['bob']}"}
    r = http.post("/api/import", json=document, headers=bob)
    assert r.status_code == 200 and r.json()["imported"] == 2, r.text
    mine = {m.content: m for m in bank.list("bob", superseded=None, limit=10)}
    boston, chicago = mine["User lives in Boston"], mine["User moved to Chicago"]
    assert boston.id != old and boston.superseded_by == chicago.id
    assert chicago.superseded_by is None
    again = http.post("/api/import", json=document, headers=bob)  # held already: skipped
    assert again.json()["imported"] == 0
    assert bank.get(boston.id, "bob").superseded_by == chicago.id
