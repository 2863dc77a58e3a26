"""Load benchmark: concurrent clients drive a running server over loopback for a fixed time.

The mix is 80% search, 15% save, 5% other (recent, get by id, history). Without ``url`` a
``memorybank serve`` subprocess is started on a free loopback port over a temporary database
(local mode, write rate limit lifted) and seeded first; with ``url`` the given server is used
as it is (in auth mode pass ``api_key``; its write rate limit applies to the saves).

>>> report = run_load(seconds=30, clients=16)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

__all__ = ["LoadReport", "OpStats", "run_load"]

TARGET_SEARCH_PER_S = 300.0
TARGET_SEARCH_P95_MS = 100.0
MIX = (("search", 0.80), ("save", 0.15), ("other", 0.05))
_WORDS = (
    "amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon meadow "
    "nectar orchid pebble quartz raven saffron tundra umber violet willow yarrow zephyr acorn "
    "bramble cobalt dune falcon glacier hazel iris jasper kelp lotus maple nutmeg olive"
).split()
_TOPICS = (
    "prefers {a} tea with {b} in the morning",
    "is planning a trip to {a} {b} next spring",
    "works on the {a} {b} project at the office",
    "has a dog called {a} who likes {b}",
    "uses the {a} editor with the {b} theme",
    "is allergic to {a} and avoids {b}",
)
_QUERIES = (
    "what does the user drink",
    "where is the user travelling",
    "which project is the user working on",
    "tell me about the user's pet",
    "what editor does the user like",
    "food allergies",
    "{a}",
    "{a} {b}",
)


def _fact(rng: random.Random) -> str:
    a, b = rng.sample(_WORDS, 2)
    return f"User {rng.choice(_TOPICS).format(a=a, b=b)} (note {rng.randrange(10**9)})"


def _query(rng: random.Random) -> str:
    a, b = rng.sample(_WORDS, 2)
    return rng.choice(_QUERIES).format(a=a, b=b)


def _percentile(sorted_ms: list[float], q: float) -> float:
    if not sorted_ms:
        return 0.0
    index = min(len(sorted_ms) - 1, max(0, round(q / 100 * len(sorted_ms) + 0.5) - 1))
    return sorted_ms[index]


@dataclass
class OpStats:
    """Counts and latencies (ms) of one kind of request."""

    name: str
    count: int
    errors: int
    per_s: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


@dataclass
class LoadReport:
    """What a load run measured."""

    url: str
    seconds: float
    clients: int
    seeded: int
    ops: list[OpStats]
    errors: int
    error_samples: list[str] = field(default_factory=list)

    def op(self, name: str) -> OpStats:
        return next(o for o in self.ops if o.name == name)

    @property
    def meets_target(self) -> bool:
        search = self.op("search")
        return (
            self.errors == 0
            and search.per_s >= TARGET_SEARCH_PER_S
            and search.p95_ms <= TARGET_SEARCH_P95_MS
        )

    def table(self) -> Table:
        """The results as a rich table."""
        verdict = "met" if self.meets_target else "MISSED"
        table = Table(
            title=f"memorybank load: {self.clients} clients, {self.seconds:.1f} s, {self.url}",
            caption=(
                f"target: ≥ {TARGET_SEARCH_PER_S:g} searches/s at p95 ≤ "
                f"{TARGET_SEARCH_P95_MS:g} ms, 0 errors: {verdict}"
            ),
        )
        for name in ("op", "count", "per s", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"):
            table.add_column(name, justify="left" if name == "op" else "right")
        for o in self.ops:
            table.add_row(
                o.name,
                f"{o.count:,}",
                f"{o.per_s:,.1f}",
                f"{o.p50_ms:.1f}",
                f"{o.p95_ms:.1f}",
                f"{o.p99_ms:.1f}",
                f"{o.max_ms:.1f}",
                str(o.errors),
            )
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "url": self.url,
            "seconds": self.seconds,
            "clients": self.clients,
            "seeded": self.seeded,
            "errors": self.errors,
            "error_samples": self.error_samples,
            "targets": {
                "search_per_s": TARGET_SEARCH_PER_S,
                "search_p95_ms": TARGET_SEARCH_P95_MS,
                "met": self.meets_target,
            },
            "ops": [o.__dict__ for o in self.ops],
        }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes] | None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} while starting")
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server at {url} did not answer /healthz")
        time.sleep(0.1)


@contextmanager
def _server(url: str | None) -> Iterator[tuple[str, bool]]:
    """``(url, started)``: the given server, or a fresh local one for the duration."""
    if url is not None:
        _wait_healthy(url.rstrip("/"), None, timeout=10)
        yield url.rstrip("/"), False
        return
    with tempfile.TemporaryDirectory(prefix="memorybank-load-") as tmp:
        port = _free_port()
        env = {
            **os.environ,
            "MEMORYBANK_AI_WRITE_RATE_PER_MINUTE": "100000000",
            "MEMORYBANK_HOME": tmp,
        }
        command = [
            sys.executable,
            "-c",
            "from memorybank.cli import main; main()",
            "serve",
            "--port",
            str(port),
            "--db",
            f"sqlite:///{Path(tmp) / 'load.db'}",
        ]
        proc = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_healthy(base, proc)
            yield base, True
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _seed(client: httpx.Client, count: int, rng: random.Random) -> list[str]:
    ids: list[str] = []
    for _ in range(count):
        response = client.post("/api/memory/user", json={"fact": _fact(rng)})
        if response.status_code == 201:
            ids.append(response.json()["memory"]["id"])
    return ids


def run_load(
    *,
    url: str | None = None,
    seconds: float = 30.0,
    clients: int = 16,
    seed: int = 200,
    api_key: str | None = None,
    console: Console | None = None,
) -> LoadReport:
    """Drive a server with ``clients`` concurrent clients for ``seconds``; the report."""
    console = console or Console(stderr=True)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    samples: dict[str, list[float]] = {name: [] for name, _ in MIX}
    errors: dict[str, int] = {name: 0 for name, _ in MIX}
    error_samples: list[str] = []
    lock = threading.Lock()
    with _server(url) as (base, started):
        console.print(f"Load on {base} ({'started here' if started else 'given'}).")
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            ids = _seed(client, seed if started else min(seed, 20), random.Random(1))
        known = list(ids)
        barrier = threading.Barrier(clients + 1)
        stop_at = [0.0]

        def one(kind: str, http: httpx.Client, rng: random.Random) -> httpx.Response:
            if kind == "search":
                return http.get("/api/search", params={"q": _query(rng), "limit": 10})
            if kind == "save":
                response = http.post("/api/memory/user", json={"fact": _fact(rng)})
                if response.status_code == 201:
                    with lock:
                        known.append(response.json()["memory"]["id"])
                return response
            pick = rng.random()
            if pick < 0.5 or not known:
                return http.get("/api/recent", params={"limit": 20})
            with lock:
                memory_id = rng.choice(known)
            if pick < 0.8:
                return http.get(f"/api/memories/{memory_id}")
            return http.get(f"/api/memories/{memory_id}/history")

        def worker(index: int) -> None:
            rng = random.Random(1000 + index)
            names = [name for name, _ in MIX]
            weights = [w for _, w in MIX]
            mine: dict[str, list[float]] = {name: [] for name in names}
            bad: dict[str, int] = dict.fromkeys(names, 0)
            with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
                barrier.wait()
                while time.perf_counter() < stop_at[0]:
                    kind = rng.choices(names, weights)[0]
                    start = time.perf_counter()
                    try:
                        response = one(kind, http, rng)
                        ok = response.status_code < 400 or (
                            kind == "save" and response.status_code == 409  # near-duplicate
                        )
                        problem = "" if ok else f"{kind}: {response.status_code} {response.text}"
                    except httpx.HTTPError as exc:
                        ok, problem = False, f"{kind}: {type(exc).__name__}: {exc}"
                    mine[kind].append((time.perf_counter() - start) * 1000)
                    if not ok:
                        bad[kind] += 1
                        with lock:
                            if len(error_samples) < 10:
                                error_samples.append(problem[:300])
            with lock:
                for name in names:
                    samples[name].extend(mine[name])
                    errors[name] += bad[name]

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
        for thread in threads:
            thread.start()
        stop_at[0] = time.perf_counter() + seconds
        began = time.perf_counter()
        barrier.wait()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - began

    ops = []
    for name in [*samples, "all"]:
        values = sorted(v for n, vs in samples.items() if name in (n, "all") for v in vs)
        count_errors = sum(errors.values()) if name == "all" else errors[name]
        ops.append(
            OpStats(
                name=name,
                count=len(values),
                errors=count_errors,
                per_s=len(values) / elapsed if elapsed else 0.0,
                p50_ms=_percentile(values, 50),
                p95_ms=_percentile(values, 95),
                p99_ms=_percentile(values, 99),
                max_ms=values[-1] if values else 0.0,
            )
        )
    return LoadReport(
        url=base,
        seconds=elapsed,
        clients=clients,
        seeded=len(ids),
        ops=ops,
        errors=sum(errors.values()),
        error_samples=error_samples,
    )
