"""Issue 27: work one request can make the server do, performed for real over HTTP against a
real ``memorybank serve`` on 127.0.0.1.

* Finding 3: ``GET /api/consolidate`` judged every pair of similar facts: 2,000
  near-duplicates took 17 s and +490 MiB, and one 1 MiB import (~16,000 facts) would have
  exhausted the server. Now a call judges each fact against its few nearest kept facts, within
  a budget of facts, pairs and similarities, and says where to go on.
* Finding 5: the write limit counted requests, and imports not at all: 300 items in one
  request plus 12 imports stored 312 memories in seconds at a limit of 10 a minute. Now a
  write costs one unit per record it stores, a batch over the allowance is refused whole
  (429, ``Retry-After``, the limit and its setting named) and nothing is stored; forget
  previews cost a unit too.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memorybank.core.consolidate import MAX_PAIRS
from memorybank.rules.portability import FORMAT, VERSION
from memorybank.rules.verdicts import THRESHOLDS
from server_helpers import spawn_server

SETTING = "MEMORYBANK_AI_WRITE_RATE_PER_MINUTE"
TURN = {"ring": "episodic", "source": "conversation"}


def as_user(user: str) -> dict[str, str]:
    """Act as ``user`` on a local-mode server (the UI's user switch); bodies are JSON."""
    return {"X-Memorybank-User": user, "Content-Type": "application/json"}


def export_document(user: str, texts: list[str]) -> bytes:
    """An export document holding ``texts`` as facts: what ``POST /api/import`` loads as it
    is, without the duplicate check of a save."""
    memories = [{"user_id": user, "content": t, "category": "context"} for t in texts]
    return json.dumps({"format": FORMAT, "version": VERSION, "memories": memories}).encode()


def facts(count: int, start: int = 0) -> list[dict[str, str]]:
    return [{"content": f"User's badge number at site {n} is {n}"} for n in range(start, count)]


#: Ten facts about ten different things, each one stored by a save: the badge numbers above
#: differ only by their numbers, and the judge reads such a near copy with a new number as the
#: same slot changed (the newer retires the older), so they cannot show a count of stores.
TEN_FACTS = [
    {"content": f"User's favourite {thing} is {value}"}
    for thing, value in (
        ("colour", "teal"),
        ("fruit", "mango"),
        ("film", "Alien"),
        ("band", "Queen"),
        ("book", "Dune"),
        ("dish", "ramen"),
        ("sport", "rowing"),
        ("city", "Kyoto"),
        ("flower", "tulip"),
        ("season", "autumn"),
    )
]


def refused(response: httpx.Response) -> str:
    """The error of a 429 with its ``Retry-After`` (fails if ``response`` is anything else)."""
    assert response.status_code == 429, response.text
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    error: str = response.json()["error"]
    assert re.search(r"try again in \d+ s", error) and SETTING in error, error
    return error


def count(http: httpx.Client, user: str) -> int:
    listed = http.get("/api/memory/user", headers=as_user(user))
    assert listed.status_code == 200, listed.text
    total: int = listed.json()["count"]
    return total


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server whose write limit is 10 units a minute."""
    db = tmp_path_factory.mktemp("limited") / "limited.db"
    proc, url = spawn_server(f"sqlite:///{db}", env={SETTING: "10"})
    yield url
    _stop(proc)


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server with the write limit lifted (the attacker of finding 3 needs none)."""
    db = tmp_path_factory.mktemp("roomy") / "roomy.db"
    proc, url = spawn_server(f"sqlite:///{db}")
    yield url
    _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- finding 5: writes are charged by what they store ------------------------------------------


def test_a_big_batch_and_an_import_are_refused_once_the_allowance_is_spent(served: str) -> None:
    h = as_user("mallory")
    with httpx.Client(base_url=served, timeout=120) as http:
        # The attack's first step: 300 items in one request, at a limit of 10 a minute.
        batch = http.post("/api/memories", json={"items": facts(300)}, headers=h)
        error = refused(batch)
        assert "300 items" in error and "limit is 10" in error and batch.headers["Retry-After"]
        assert count(http, "mallory") == 0  # refused whole: nothing stored

        # A conversation turn is charged by its chunks: 2,760 characters are 6 of them.
        turn = {**TURN, "content": "The meeting went on and on about the budget. " * 60}
        saved = http.post("/api/memories", json={"items": [turn]}, headers=h)
        assert saved.status_code == 200 and len(saved.json()["results"]) == 6

        # 7 of 10 spent (the refused batch's request, the 6 chunks): 5 more do not fit.
        five = export_document("mallory", [f"User visited museum number {n}" for n in range(5)])
        error = refused(http.post("/api/import", content=five, headers=h))
        assert "stores 5" in error
        two = export_document("mallory", ["User owns a red kayak", "User owns a blue tent"])
        imported = http.post("/api/import", content=two, headers=h)
        assert imported.status_code == 200 and imported.json()["imported"] == 2
        assert count(http, "mallory") == 8

        # The allowance is spent: every kind of write is refused, and stores nothing.
        one = export_document("mallory", ["User owns a green canoe"])
        refused(http.post("/api/import", content=one, headers=h))
        refused(http.post("/api/memories", json={"items": facts(1)}, headers=h))
        refused(http.post("/api/memory/user", json={"fact": "I own a sled"}, headers=h))
        refused(http.post("/api/forget/preview", json={"query": "kayak"}, headers=h))
        said = [{"role": "user", "content": "I like tea"}]
        remember = {"name": "remember", "arguments": {"messages": said}}
        refused(http.post("/api/tools/hyperspark/call", json=remember, headers=h))
        assert count(http, "mallory") == 8

        # Reads go on, and another user has a budget of their own.
        assert http.get("/api/search", params={"q": "kayak"}, headers=h).status_code == 200
        other = http.post("/api/memories", json={"items": TEN_FACTS}, headers=as_user("ann"))
        assert other.status_code == 200 and count(http, "ann") == 10


def test_a_tool_call_is_charged_by_the_chunks_it_stores(served: str) -> None:
    """Two parallel ``remember`` calls of 310 chunks each went through at any limit."""
    h = as_user("gus")
    long = "The meeting went on and on about the budget and the roadmap. " * 50
    said = [{"role": "user", "content": long}] * 3  # 3 × 7 chunks
    with httpx.Client(base_url=served, timeout=120) as http:
        call = {"name": "remember", "arguments": {"messages": said}}
        error = refused(http.post("/api/tools/hyperspark/call", json=call, headers=h))
        assert "stores 21 items and the limit is 10" in error
        assert http.get("/api/memories/count", headers=h).json()["count"] == 0
        short = [{"role": "user", "content": f"The weather was grey on day {n}."} for n in range(3)]
        call = {"name": "remember", "arguments": {"messages": short}}
        answer = http.post("/api/tools/hyperspark/call", json=call, headers=h)
        assert answer.status_code == 200, answer.text
        # Stored: the 3 turns and the facts the learned model kept from them, each charged.
        found = re.search(r"Stored (\d+) memories", answer.json()["result"])
        assert found, answer.text
        stored = 3 + int(found.group(1))
        assert http.get("/api/memories/count", headers=h).json()["count"] == stored
        # The refused call's request and the records stored are all that was spent.
        left = 10 - 1 - stored
        assert left > 0
        fits = http.post("/api/memories", json={"items": TEN_FACTS[:left]}, headers=h)
        assert fits.status_code == 200, fits.text
        refused(http.post("/api/memories", json={"items": TEN_FACTS[left:][:1]}, headers=h))


def test_forget_previews_are_limited_like_writes(served: str) -> None:
    h = as_user("fran")
    with httpx.Client(base_url=served, timeout=120) as http:
        added = http.post("/api/memory/user", json={"fact": "I live at 12 Oak Street"}, headers=h)
        assert added.status_code == 201, added.text
        for _ in range(9):  # with the fact above, the tenth unit of the minute
            preview = http.post("/api/forget/preview", json={"query": "Oak Street"}, headers=h)
            assert preview.status_code == 200, preview.text
        refused(http.post("/api/forget/preview", json={"query": "Oak Street"}, headers=h))
        tool = {"name": "forget_preview", "arguments": {"query": "Oak Street"}}
        refused(http.post("/api/tools/hyperspark/call", json=tool, headers=h))
        # Looking is not limited.
        recall = {"name": "recall", "arguments": {"query": "where do I live"}}
        assert http.post("/api/tools/hyperspark/call", json=recall, headers=h).status_code == 200


# -- finding 3: consolidation does bounded work per call -----------------------------------------

#: The attack's facts: near-duplicates (four templates, a number apart), all alike enough to be
#: judged, none a duplicate; and two duplicates planted among them.
TEMPLATES = (
    "User's gym locker code is {n}",
    "User parked the car on level {n}",
    "User's badge number at work is {n}",
    "User ran {n} metres this morning",
)
NEAR = [TEMPLATES[n % 4].format(n=1000 + n) for n in range(2200)]
PLANTED = [
    "User lives in London",
    "User currently lives in London",
    "User likes tea",
    "User is fond of tea",
]


def consolidate(http: httpx.Client, h: dict[str, str], **params: Any) -> dict[str, Any]:
    answer = http.get("/api/consolidate", params=params, headers=h)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_consolidation_judges_a_bounded_number_of_pairs_per_call(roomy: str) -> None:
    h = as_user("eve")
    total = len(NEAR) + len(PLANTED)
    with httpx.Client(base_url=roomy, timeout=300) as http:
        document = export_document("eve", NEAR + PLANTED)
        imported = http.post("/api/import", content=document, headers=h)
        assert imported.status_code == 200 and imported.json()["imported"] == total

        # The largest page a caller may ask for stops at the cap on pairs judged.
        first = consolidate(http, h, limit=5000)
        assert first["stopped_by"] == "pairs" and first["truncated"] is True
        assert first["pairs_judged"] <= MAX_PAIRS
        assert first["examined"] + first["remaining"] == total and first["remaining"] > 0
        rest = consolidate(http, h, limit=5000, cursor=first["next_cursor"])
        assert rest["examined"] == first["remaining"] and rest["next_cursor"] is None
        assert rest["truncated"] is False and rest["pairs_judged"] <= MAX_PAIRS
        clusters = {
            frozenset([m["keep"]["content"], *(x["content"] for x in m["merged"])])
            for page in (first, rest)
            for m in page["merges"]
        }
        # The planted duplicates are found (the London pair has equal importance: the newer
        # is kept); the near-duplicates are all different values, never merged.
        assert clusters == {
            frozenset(["User lives in London", "User currently lives in London"]),
            frozenset(["User likes tea", "User is fond of tea"]),
        }

        # A small page: each fact judged against at most THRESHOLDS.candidates others.
        small = consolidate(http, h, limit=100)
        assert small["examined"] == 100 and small["stopped_by"] == "facts"
        assert small["pairs_judged"] <= 100 * THRESHOLDS.candidates

        # Applying each page a preview showed, from its cursor: the merges it found, no more.
        for page, cursor in ((first, None), (rest, first["next_cursor"])):
            keep = [m["keep"]["id"] for m in page["merges"]]
            body = {"keep_ids": keep, "cursor": cursor, "limit": 5000}
            done = http.post("/api/consolidate", json=body, headers=h)
            assert done.status_code == 200 and done.json()["applied"] is True
            assert done.json()["merged_count"] == len(keep)
        again = consolidate(http, h, limit=5000)
        after = consolidate(http, h, limit=5000, cursor=again["next_cursor"])
        # The merged facts left the current ones; nothing is left to merge.
        assert again["examined"] + after["examined"] == total - 2
        assert again["merges"] == after["merges"] == []

        for bad in ({"limit": 0}, {"limit": 5001}, {"cursor": "not-a-cursor"}):
            assert http.get("/api/consolidate", params=bad, headers=h).status_code == 422
