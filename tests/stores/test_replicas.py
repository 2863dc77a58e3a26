"""Two stateless replicas on one PostgreSQL: two real `memorybank serve` processes on different
loopback ports share everything through the database, and the per-scope advisory lock makes
concurrent saves of one fact through both store it once."""

from __future__ import annotations

import threading

import httpx
import pytest

from server_helpers import spawn_server

FACTS = [
    "User prefers window seats on long flights",
    "User is training for the Berlin marathon",
    "User keeps a sourdough starter named Bubbles",
    "User's favourite composer is Arvo Pärt",
    "User switched from Vim to Helix last spring",
]


@pytest.mark.slow
def test_two_replicas_share_one_database(postgres_db_url: str) -> None:
    first, url_a = spawn_server(postgres_db_url)
    try:
        second, url_b = spawn_server(postgres_db_url)
    except BaseException:
        first.kill()
        raise
    try:
        with (
            httpx.Client(base_url=url_a, timeout=30) as a,
            httpx.Client(base_url=url_b, timeout=30) as b,
        ):
            saved = a.post("/api/memory/user", json={"fact": "I drink my coffee black"})
            assert saved.status_code == 201, saved.text
            memory_id = saved.json()["memory"]["id"]
            # written through A, read through B: by id and by search
            got = b.get(f"/api/memories/{memory_id}")
            assert (
                got.status_code == 200 and got.json()["content"] == "User drinks their coffee black"
            )
            hits = b.get("/api/search", params={"q": "how does the user take coffee?"}).json()
            assert hits["hits"][0]["memory"]["id"] == memory_id

            # the same fact through both at once: one memory, the other call is a duplicate
            for fact in FACTS:
                codes: list[int] = []
                barrier = threading.Barrier(2)

                def post(
                    client: httpx.Client,
                    fact: str = fact,
                    barrier: threading.Barrier = barrier,
                    codes: list[int] = codes,
                ) -> None:
                    barrier.wait()
                    codes.append(client.post("/api/memory/user", json={"fact": fact}).status_code)

                threads = [threading.Thread(target=post, args=(c,)) for c in (a, b)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(30)
                assert sorted(codes) == [201, 409], (fact, codes)
            listed_a = a.get("/api/memory/user", params={"limit": 50}).json()
            listed_b = b.get("/api/memory/user", params={"limit": 50}).json()
            assert listed_a["count"] == listed_b["count"] == len(FACTS) + 1
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait()
