"""Durability under SIGKILL: every acknowledged save survives, nothing half-written shows.

A real ``memorybank serve`` subprocess (local mode, tmp ``--db``) is killed with SIGKILL while
clients save in a loop, once it has acknowledged a random number of saves (work done, not time
spent: on a busy machine the kill waits for the saves instead of landing before any); after
each kill the file is checked: every save the server acknowledged (201) is there, every memory
row has its vector and its full-text entry, and ``PRAGMA integrity_check`` is ok. The same for
the library: a child process saving through ``memorybank.open`` and printing acknowledged ids.
And the server on PostgreSQL: after each kill every acknowledged save is in the database with
its vector, its generated tsvector matches its content, and it has its ADD event.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import apsw
import httpx
import pytest

from server_helpers import spawn_server

#: Kills per run: ``MEMORYBANK_CRASH_KILLS`` for the server (10 unless set; ``make test``
#: sets 4 to keep CI's suite short: every kill restarts a server), half as many (at least 2)
#: for the library.
SERVER_KILLS = int(os.environ.get("MEMORYBANK_CRASH_KILLS", "10"))
LIBRARY_KILLS = max(2, SERVER_KILLS // 2)
#: Acknowledged saves to wait for before each kill (drawn in this range), and how long the
#: count may stand still before the test gives up: a guard against a hang, not a speed goal.
SAVES_BEFORE_KILL = (6, 20)
STALL_SECONDS = 120
WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon meadow "
    "nectar orchid pebble quartz raven saffron tundra umber violet willow xenon yarrow zephyr "
    "acorn bramble cobalt dune falcon glacier hazel iris jasper kelp lotus maple nutmeg olive"
).split()
BIN = Path(sys.executable).parent / "memorybank"
LIBRARY_CHILD = r"""
import random, sys, memorybank
words = sys.argv[2].split()
rng = random.Random(int(sys.argv[3]))
with memorybank.open(sys.argv[1]) as bank:
    print("ready", flush=True)
    while True:
        fact = "User keeps " + " ".join(rng.sample(words, 6)) + f" in drawer {rng.randrange(10**9)}"
        result = bank.save("lib", fact, "context")
        if result.success:
            print(result.memory_id, result.content, sep="\t", flush=True)
"""


def _fact(rng: random.Random) -> str:
    return "User keeps " + " ".join(rng.sample(WORDS, 6)) + f" in drawer {rng.randrange(10**9)}"


def wait_for_saves(saved: Callable[[], int], target: int) -> None:
    """Return once ``saved()`` reaches ``target``; fail only if it stops growing for
    ``STALL_SECONDS`` (however slowly the machine saves, progress is all it takes)."""
    last, moved = saved(), time.monotonic()
    while (now := saved()) < target:
        if now != last:
            last, moved = now, time.monotonic()
        assert time.monotonic() - moved < STALL_SECONDS, f"no save for {STALL_SECONDS} s ({now})"
        time.sleep(0.01)


def kill_after_saves(
    proc: subprocess.Popen[str], saved: Callable[[], int], rng: random.Random
) -> None:
    """SIGKILL ``proc`` after a random number of acknowledged saves, a random moment into
    the next ones (the saves keep going: the kill lands in the middle of a write)."""
    wait_for_saves(saved, rng.randint(*SAVES_BEFORE_KILL))
    time.sleep(rng.uniform(0, 0.05))
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def check_file(db: Path, acked: dict[str, str]) -> int:
    """Assert the file is whole and holds every acknowledged save; the number of memories."""
    conn = apsw.Connection(str(db))
    try:
        assert [r[0] for r in conn.execute("PRAGMA integrity_check")] == ["ok"]
        rows = list(conn.execute("SELECT rowid, id, content FROM memories"))
        vectors = {r[0] for r in conn.execute("SELECT rowid FROM memory_vectors")}
        assert {r[0] for r in rows} == vectors, "a memory without its vector (or the reverse)"
        stored = {mid: content for _, mid, content in rows}
        missing = {mid for mid in acked if mid not in stored}
        assert not missing, f"{len(missing)} acknowledged saves lost: {sorted(missing)[:5]}"
        for mid, content in acked.items():
            assert stored[mid] == content
        for rowid, _, content in rows:  # every row findable by its exact text
            phrase = '"' + content.replace('"', '""') + '"'
            found = {
                r[0]
                for r in conn.execute(
                    "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (phrase,)
                )
            }
            assert rowid in found, f"memory {rowid} has no full-text entry"
        fts_rows = next(conn.execute("SELECT count(*) FROM memories_fts"))[0]
        assert fts_rows == len(rows)
        history_adds = next(
            conn.execute("SELECT count(DISTINCT memory_id) FROM history WHERE kind = 'ADD'")
        )[0]
        assert history_adds == len(rows)
        return len(rows)
    finally:
        conn.close()


def _kill_server_repeatedly(db_url: str, check: Callable[[dict[str, str]], int]) -> list[int]:
    """Start, load and SIGKILL the server ``SERVER_KILLS`` times, running ``check`` on the
    acknowledged saves after each kill; the acknowledged saves per run."""
    rng = random.Random(20240601)
    acked: dict[str, str] = {}
    lock = threading.Lock()
    per_run: list[int] = []
    for _ in range(SERVER_KILLS):
        proc, url = spawn_server(db_url)
        stop = threading.Event()
        counts = [0]

        def client(
            seed: int, stop: threading.Event = stop, counts: list[int] = counts, url: str = url
        ) -> None:
            local = random.Random(seed)
            with httpx.Client(base_url=url, timeout=5) as http:
                while not stop.is_set():
                    fact = _fact(local)
                    try:
                        response = http.post("/api/memory/user", json={"fact": fact})
                    except httpx.TransportError:
                        return  # killed mid-request: not acknowledged
                    if response.status_code == 201:
                        memory = response.json()["memory"]
                        with lock:
                            acked[memory["id"]] = memory["content"]
                            counts[0] += 1
                    else:
                        assert response.status_code == 409, response.text  # a near-duplicate

        threads = [threading.Thread(target=client, args=(rng.randrange(10**9),)) for _ in range(3)]
        for t in threads:
            t.start()
        kill_after_saves(proc, lambda counts=counts: counts[0], rng)
        stop.set()
        for t in threads:
            t.join(10)
        per_run.append(counts[0])
        assert check(acked) >= len(acked)
    assert min(per_run) >= SAVES_BEFORE_KILL[0], per_run  # every kill came after real work
    return per_run


@pytest.mark.slow
def test_server_survives_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    per_run = _kill_server_repeatedly(f"sqlite:///{db}", lambda acked: check_file(db, acked))
    print(f"\nserver: {SERVER_KILLS} kills, {sum(per_run)} acknowledged saves, per run {per_run}")


def check_postgres(url: str, acked: dict[str, str]) -> int:
    """Assert every acknowledged save is stored whole in PostgreSQL; the number of memories."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, content, vector_dims(embedding), "
            "body = to_tsvector('english'::regconfig, content || ' ' || tags_text(tags)), "
            "body @@ plainto_tsquery('english', content) FROM memories"
        ).fetchall()
        stored = {r[0]: r[1] for r in rows}
        missing = {mid for mid in acked if mid not in stored}
        assert not missing, f"{len(missing)} acknowledged saves lost: {sorted(missing)[:5]}"
        for mid, content in acked.items():
            assert stored[mid] == content
        for mid, _, dims, body_ok, found in rows:
            assert dims == 384 and body_ok and found, f"memory {mid} is half-written"
        adds = conn.execute(
            "SELECT count(DISTINCT memory_id) FROM history WHERE kind = 'ADD'"
        ).fetchone()
        assert adds is not None and adds[0] == len(rows)
        for mid in stored:  # the HNSW index finds every row by its own vector
            nearest = conn.execute(
                "SELECT id FROM memories ORDER BY embedding <=> "
                "(SELECT embedding FROM memories WHERE id = %s) LIMIT 1",
                (mid,),
            ).fetchone()
            assert nearest == (mid,), f"memory {mid} is missing from the vector index"
    return len(rows)


@pytest.mark.slow
def test_server_on_postgres_survives_sigkill(postgres_db_url: str) -> None:
    per_run = _kill_server_repeatedly(
        postgres_db_url, lambda acked: check_postgres(postgres_db_url, acked)
    )
    print(f"\npostgres: {SERVER_KILLS} kills, {sum(per_run)} acknowledged saves, per run {per_run}")


def read_lines(stream: Iterable[str], lines: list[str]) -> None:
    """Append each line of ``stream`` as it arrives (a whole line ends with a newline)."""
    for line in stream:
        lines.append(line)


@pytest.mark.slow
def test_library_survives_sigkill(tmp_path: Path) -> None:
    db = tmp_path / "lib.db"
    rng = random.Random(7)
    acked: dict[str, str] = {}
    for run in range(LIBRARY_KILLS):
        proc = subprocess.Popen(
            [sys.executable, "-c", LIBRARY_CHILD, f"sqlite:///{db}", " ".join(WORDS), str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        lines: list[str] = []
        reader = threading.Thread(target=read_lines, args=(proc.stdout, lines))
        reader.start()
        kill_after_saves(proc, lambda lines=lines: sum(line.endswith("\n") for line in lines), rng)
        reader.join(10)
        for line in lines:
            if line.endswith("\n") and "\t" in line:  # a whole line: acknowledged
                mid, content = line.rstrip("\n").split("\t", 1)
                acked[mid] = content
        proc.stdout.close()
        check_file(db, acked)
    assert len(acked) >= LIBRARY_KILLS * SAVES_BEFORE_KILL[0]  # every kill came after real work
    print(f"\nlibrary: {LIBRARY_KILLS} kills, {len(acked)} acknowledged saves")
