"""Concurrency: 2 processes x 8 threads mixing save / search / update / delete on one SQLite file.

Each thread owns a user and its memories; it updates them with a counter and remembers what
was acknowledged. Afterwards: no error reached a caller ("database is locked" included), every
memory's content is its last acknowledged update (no lost update), and every history reads ADD,
then the UPDATEs in the order they were acknowledged; a deleted memory keeps only its DELETE
tombstone (deletion is for real, the design's rule).

The run lasts ``MEMORYBANK_STRESS_SECONDS`` (default :data:`DEFAULT_SECONDS`, 60 as the issue
asks); CI sets 15.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memorybank

DEFAULT_SECONDS = 60.0
SECONDS = float(os.environ.get("MEMORYBANK_STRESS_SECONDS", DEFAULT_SECONDS))
PROCESSES = 2
THREADS = 8

WORKER = r"""
import json, random, sys, threading, time, traceback
import memorybank

url, proc, threads, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[5]
seconds = float(sys.argv[4])
WORDS = ("amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon "
         "meadow nectar orchid pebble quartz raven saffron tundra").split()
bank = memorybank.open(url)
results = {}

def work(t):
    rng = random.Random(proc * 100 + t)
    user = f"p{proc}t{t}"
    mine = {}  # id -> list of acknowledged contents (ADD first, then UPDATEs)
    deleted = set()
    errors = []
    ops = {"save": 0, "search": 0, "update": 0, "delete": 0, "shared_search": 0}
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        live = [m for m in mine if m not in deleted]
        r = rng.random()
        try:
            if r < 0.25 or not live:
                fact = f"User {user} stores " + " ".join(rng.sample(WORDS, 5)) + f" in box {n}"
                project = "shared" if rng.random() < 0.2 else None
                # Random words and box numbers: a later fact may read as an earlier one changed;
                # this test is about concurrent writes, so every fact is kept.
                res = bank.save(user, fact, "context", project_id=project, on_conflict="keep")
                if res.success:
                    mine[res.memory_id] = [res.content]
                    if project:
                        shared.add(res.memory_id)
                ops["save"] += 1
            elif r < 0.6:
                bank.search(user, rng.choice(WORDS) + " box", limit=5)
                ops["search"] += 1
            elif r < 0.7:
                bank.search(user, rng.choice(WORDS), project_id="shared", limit=5)
                ops["shared_search"] += 1
            elif r < 0.93:
                mid = rng.choice(live)
                count = len(mine[mid])
                project = "shared" if mid in shared else None
                changed = bank.update(mid, user, project_id=project,
                                      content=f"User {user} counter of {mid} is at {count}")
                mine[mid].append(changed.content)
                ops["update"] += 1
            else:
                mid = rng.choice(live)
                bank.delete(mid, user, project_id="shared" if mid in shared else None)
                deleted.add(mid)
                ops["delete"] += 1
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    results[user] = {"memories": mine, "deleted": sorted(deleted), "errors": errors, "ops": ops,
                     "shared": sorted(m for m in shared if m in mine)}

shared = set()
started = time.monotonic()
pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
for th in pool: th.start()
for th in pool: th.join()
elapsed = time.monotonic() - started
bank.close()
json.dump({"elapsed": elapsed, "threads": results}, open(out, "w"))
"""


@pytest.mark.slow
def test_two_processes_sixteen_threads(tmp_path: Path) -> None:
    db = tmp_path / "stress.db"
    url = f"sqlite:///{db}"
    memorybank.open(url).close()  # create the schema once, before the race
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                url,
                str(p),
                str(THREADS),
                str(SECONDS),
                str(tmp_path / f"out{p}.json"),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(PROCESSES)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=SECONDS + 120)
        assert proc.returncode == 0, err[-3000:]
    outs = [json.loads((tmp_path / f"out{p}.json").read_text()) for p in range(PROCESSES)]
    threads = {user: r for out in outs for user, r in out["threads"].items()}
    errors = [e for r in threads.values() for e in r["errors"]]
    assert not errors, errors[:10]
    assert not [e for e in errors if "locked" in e]

    totals: dict[str, int] = {}
    with memorybank.open(url) as bank:
        for user, r in threads.items():
            for op, n in r["ops"].items():
                totals[op] = totals.get(op, 0) + n
            shared = set(r["shared"])
            for mid, contents in r["memories"].items():
                project = "shared" if mid in shared else None
                events = bank.history(mid, user, project_id=project)
                kinds = [str(e.kind) for e in events]
                if mid in r["deleted"]:
                    with pytest.raises(memorybank.NotFound):
                        bank.get(mid, user, project_id=project)
                    # Deleted for real: history keeps only a tombstone, without the text.
                    assert kinds == ["DELETE"], kinds
                    assert not events[0].old_content and not events[0].new_content
                    continue
                assert bank.get(mid, user, project_id=project).content == contents[-1]
                assert kinds[0].endswith("ADD"), kinds
                assert all(k.endswith("UPDATE") for k in kinds[1:]), kinds
                updates = [e.new_content for e in events if str(e.kind).endswith("UPDATE")]
                assert updates == contents[1:], (mid, updates, contents)
    elapsed = max(out["elapsed"] for out in outs)
    ops = sum(totals.values())
    print(
        f"\nconcurrency: {PROCESSES}x{THREADS} threads, {elapsed:.1f} s, {ops} ops "
        f"({ops / elapsed:.0f}/s) {totals}, errors {len(errors)}"
    )
    assert totals["update"] > 0 and totals["delete"] > 0
