"""Load benchmark: concurrent clients drive a running server over loopback for a fixed time.

The mix is 80% search, 15% save, 5% other (recent, get by id, history). Without ``url`` a
``memorybank serve`` subprocess is started on a free loopback port over a temporary database
(local mode, write rate limit lifted, one worker process per core) and seeded first; with
``url`` the given server is used as it is (in auth mode pass ``api_key``; its write rate limit
applies to the saves).

Each client is a conversation: most of its searches are new questions, and a share
(``repeat``, default 0.3) asks again one of its own last few questions, as assistants do when
a topic comes back over several turns. The report says how many searches were distinct, so a
result is never read as raw embedding throughput when it leaned on repeats. Clients keep
their connections alive and parse responses with ``httptools``: the load generator shares
the machine with the server and must spend as little CPU as it can.

>>> report = run_load(seconds=30, clients=16)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httptools
import psutil
from rich.console import Console
from rich.table import Table

__all__ = ["LoadReport", "OpStats", "run_load"]

TARGET_SEARCH_PER_S = 300.0
TARGET_SEARCH_P95_MS = 100.0
MIX = (("search", 0.80), ("save", 0.15), ("other", 0.05))
#: Share of a client's searches that repeat one of its own recent questions.
DEFAULT_REPEAT = 0.3
_RECENT_QUESTIONS = 8
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
_QUESTIONS = (
    "what does the user drink with {a}",
    "where is the user travelling, {a} or {b}",
    "which {a} project is the user working on with {c}",
    "tell me about the user's pet and {a}",
    "what editor theme like {a} does the user like",
    "food allergies to {a} or {b}",
    "{a} {b} {c}",
    "{a} and {b}",
)


def _fact(rng: random.Random) -> str:
    a, b = rng.sample(_WORDS, 2)
    return f"User {rng.choice(_TOPICS).format(a=a, b=b)} (note {rng.randrange(10**9)})"


def _question(rng: random.Random) -> str:
    a, b, c = rng.sample(_WORDS, 3)
    return rng.choice(_QUESTIONS).format(a=a, b=b, c=c)


class _Asker:
    """One client's questions: new ones, and with probability ``repeat`` a recent one again."""

    def __init__(self, rng: random.Random, repeat: float) -> None:
        self.rng = rng
        self.repeat = repeat
        self.recent: deque[str] = deque(maxlen=_RECENT_QUESTIONS)

    def next(self) -> str:
        if self.recent and self.rng.random() < self.repeat:
            return self.rng.choice(self.recent)
        question = _question(self.rng)
        self.recent.append(question)
        return question


class _ServerClosed(ConnectionError):
    """The server closed a keep-alive connection before answering."""


class _Http:
    """A keep-alive HTTP/1.1 connection over a plain socket; responses are parsed by
    ``httptools`` (C, already the server's parser). It reconnects once when the server closed
    the connection.

    Not ``http.client``: its header parsing (the ``email`` package) made it cost 0.31 ms of
    CPU per request, on the machine whose CPU the server is being measured with.
    """

    def __init__(self, base: str, headers: dict[str, str], timeout: float = 30.0) -> None:
        self.timeout = timeout
        parsed = urllib.parse.urlsplit(base)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 80
        authority = f"[{self.host}]" if ":" in self.host else self.host
        self._head = f"Host: {authority}:{self.port}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        self._sock: socket.socket | None = None
        self._parts: list[bytes] = []
        self._done = False
        self._parser: httptools.HttpResponseParser | None = None
        self._keep_alive = True

    # httptools callbacks
    def on_body(self, body: bytes) -> None:
        self._parts.append(body)

    def on_message_complete(self) -> None:
        # Asked here: once the message is complete the parser has moved on to the next one.
        assert self._parser is not None
        self._keep_alive = bool(self._parser.should_keep_alive())
        self._done = True

    def request(
        self, method: str, path: str, params: dict[str, Any] | None = None, body: Any = None
    ) -> tuple[int, bytes]:
        if params:
            path = f"{path}?{urllib.parse.urlencode(params)}"
        data = b"" if body is None else json.dumps(body).encode()
        kind = "Content-Type: application/json\r\n" if body is not None else ""
        message = (
            f"{method} {path} HTTP/1.1\r\n{self._head}{kind}Content-Length: {len(data)}\r\n\r\n"
        ).encode() + data
        for attempt in (0, 1):
            if self._sock is None:
                self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self._sock.sendall(message)
                return self._response(self._sock)
            except (_ServerClosed, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _response(self, sock: socket.socket) -> tuple[int, bytes]:
        parser = self._parser = httptools.HttpResponseParser(self)
        self._parts, self._done = [], False
        received = False
        while not self._done:
            chunk = sock.recv(65536)
            if not chunk:
                if received:
                    raise ConnectionError("the server closed the connection mid-response")
                raise _ServerClosed("the server closed the connection")
            received = True
            parser.feed_data(chunk)
        status = int(parser.get_status_code())
        if not self._keep_alive:
            self.close()
        return status, b"".join(self._parts)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


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
    workers: int | None = None
    repeat: float = DEFAULT_REPEAT
    distinct_searches: int = 0
    server_cpu_ms_per_request: float | None = None
    client_cpu_ms_per_request: float | None = None
    host_reference_ms: tuple[float, float] | None = None

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
            caption="\n".join(
                self.notes()
                + [
                    f"target: ≥ {TARGET_SEARCH_PER_S:g} searches/s at p95 ≤ "
                    f"{TARGET_SEARCH_P95_MS:g} ms, 0 errors: {verdict}"
                ]
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

    def notes(self) -> list[str]:
        """What the numbers rest on: distinct queries, workers, server CPU per request."""
        searches = self.op("search").count
        lines = [
            f"{self.distinct_searches:,} of {searches:,} searches were distinct questions "
            f"(repeat share {self.repeat:.0%})"
        ]
        if self.workers is not None:
            lines.append(f"server: {self.workers} worker process(es) started here")
        if self.server_cpu_ms_per_request is not None:
            lines.append(f"server CPU per request: {self.server_cpu_ms_per_request:.2f} ms")
        if self.client_cpu_ms_per_request is not None:
            lines.append(
                f"load generator CPU per request: {self.client_cpu_ms_per_request:.2f} ms "
                "(on the same machine)"
            )
        if self.host_reference_ms is not None:
            before, after = self.host_reference_ms
            lines.append(
                f"host speed: a query embedding took {before:.2f} ms before the run and "
                f"{after:.2f} ms after it (one thread, load generator idle)"
            )
        return lines

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "url": self.url,
            "seconds": self.seconds,
            "clients": self.clients,
            "workers": self.workers,
            "repeat": self.repeat,
            "distinct_searches": self.distinct_searches,
            "server_cpu_ms_per_request": self.server_cpu_ms_per_request,
            "client_cpu_ms_per_request": self.client_cpu_ms_per_request,
            "host_reference_ms": (
                None
                if self.host_reference_ms is None
                else dict(zip(("before", "after"), self.host_reference_ms, strict=True))
            ),
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


class _HostReference:
    """How fast this machine is right now, on work like the server's: the bundled model
    embedding the same 20 questions on one thread, in ms per question (median of three
    passes). Measured before and after a run with nothing else running, so that a run can be
    told apart from the host's slow phases, which change the cost of the same request by
    half within minutes. ``before`` is measured when it is made."""

    _QUESTIONS = [_question(random.Random(7000 + i)) for i in range(20)]

    def __init__(self) -> None:
        from memorybank.providers.embedders.local import LocalEmbedder

        self._embedder = LocalEmbedder(intra_op_num_threads=1)
        for question in self._QUESTIONS[:5]:  # first runs allocate
            self._embedder.embed([question])
        self.before = self.measure()

    def measure(self) -> float:
        passes = []
        for _ in range(3):
            start = time.process_time()
            for question in self._QUESTIONS:
                self._embedder.embed([question])
            passes.append((time.process_time() - start) * 1000 / len(self._QUESTIONS))
        return sorted(passes)[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[bytes] | None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} while starting")
        probe = _Http(url, {})
        try:
            if probe.request("GET", "/healthz")[0] == 200:
                return
        except OSError:
            pass
        finally:
            probe.close()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server at {url} did not answer /healthz")
        time.sleep(0.1)


#: A limit no benchmark client reaches: the server's rate limits lifted for a run.
UNLIMITED = "100000000"


@contextmanager
def _server(
    url: str | None,
    workers: int,
    *,
    prepare: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[tuple[str, psutil.Process | None]]:
    """``(url, process)``: the given server (no process), or a fresh local one for the
    duration, with its process to account its CPU. For a fresh one, ``prepare(db_url)`` runs
    first on its empty database (users and keys for auth mode, seeded memories), and ``env``
    adds to its environment."""
    if url is not None:
        _wait_healthy(url.rstrip("/"), None, timeout=10)
        yield url.rstrip("/"), None
        return
    with tempfile.TemporaryDirectory(prefix="memorybank-load-") as tmp:
        port = _free_port()
        db_url = f"sqlite:///{Path(tmp) / 'load.db'}"
        if prepare is not None:
            prepare(db_url)
        env = {
            **os.environ,
            "MEMORYBANK_AI_WRITE_RATE_PER_MINUTE": UNLIMITED,
            "MEMORYBANK_HOME": tmp,
            **(env or {}),
        }
        command = [
            sys.executable,
            "-c",
            "from memorybank.cli import main; main()",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--db",
            db_url,
        ]
        proc = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            base = f"http://127.0.0.1:{port}"
            _wait_healthy(base, proc)
            yield base, psutil.Process(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _cpu_seconds(process: psutil.Process | None) -> float | None:
    """User + system CPU of the server and its worker processes so far."""
    if process is None:
        return None
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _seed(client: _Http, count: int, rng: random.Random) -> list[str]:
    ids: list[str] = []
    for _ in range(count):
        status, body = client.request("POST", "/api/memory/user", body={"fact": _fact(rng)})
        if status == 201:
            ids.append(json.loads(body)["memory"]["id"])
    return ids


class _Run:
    """What the client threads of one run share: the server, what they record, and when to
    start and stop."""

    def __init__(
        self, base: str, headers: dict[str, str], ids: list[str], repeat: float, clients: int
    ) -> None:
        self.base = base
        self.headers = headers
        self.repeat = repeat
        self.samples: dict[str, list[float]] = {name: [] for name, _ in MIX}
        self.errors: dict[str, int] = {name: 0 for name, _ in MIX}
        self.error_samples: list[str] = []
        self.questions: set[str] = set()
        self.known = list(ids)
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(clients + 1)
        self.stop_at = 0.0

    def one(self, kind: str, conn: _Http, rng: random.Random, asker: _Asker) -> tuple[int, bytes]:
        """One request of ``kind``: its status and body."""
        if kind == "search":
            question = asker.next()
            with self.lock:
                self.questions.add(question)
            return conn.request("GET", "/api/search", {"q": question, "limit": 10})
        if kind == "save":
            status, body = conn.request("POST", "/api/memory/user", body={"fact": _fact(rng)})
            if status == 201:
                with self.lock:
                    self.known.append(json.loads(body)["memory"]["id"])
            return status, body
        pick = rng.random()
        if pick < 0.5 or not self.known:
            return conn.request("GET", "/api/recent", {"limit": 20})
        with self.lock:
            memory_id = rng.choice(self.known)
        if pick < 0.8:
            return conn.request("GET", f"/api/memories/{memory_id}")
        return conn.request("GET", f"/api/memories/{memory_id}/history")

    def client(self, index: int) -> None:
        """One client's loop, from the barrier to ``stop_at``; recorded at the end."""
        rng = random.Random(1000 + index)
        asker = _Asker(random.Random(5000 + index), self.repeat)
        names = [name for name, _ in MIX]
        weights = [w for _, w in MIX]
        mine: dict[str, list[float]] = {name: [] for name in names}
        bad: dict[str, int] = dict.fromkeys(names, 0)
        conn = _Http(self.base, self.headers)
        try:
            self.barrier.wait()
            while time.perf_counter() < self.stop_at:
                kind = rng.choices(names, weights)[0]
                start = time.perf_counter()
                problem = self._attempt(kind, conn, rng, asker)
                mine[kind].append((time.perf_counter() - start) * 1000)
                if problem is not None:
                    bad[kind] += 1
                    with self.lock:
                        if len(self.error_samples) < 10:
                            self.error_samples.append(problem[:300])
        finally:
            conn.close()
        with self.lock:
            for name in names:
                self.samples[name].extend(mine[name])
                self.errors[name] += bad[name]

    def _attempt(self, kind: str, conn: _Http, rng: random.Random, asker: _Asker) -> str | None:
        """One request; None when it went well, else what went wrong."""
        try:
            status, body = self.one(kind, conn, rng, asker)
        except (OSError, httptools.HttpParserError) as exc:
            return f"{kind}: {type(exc).__name__}: {exc}"
        ok = status < 400 or (kind == "save" and status == 409)  # near-duplicate
        return None if ok else f"{kind}: {status} {body[:200]!r}"


@dataclass
class _Timing:
    """How long a run took, and the CPU it cost on each side."""

    elapsed: float
    client_cpu: float
    server_cpu: float | None
    host_reference: tuple[float, float] | None


def _drive(
    run: _Run,
    clients: int,
    seconds: float,
    process: psutil.Process | None,
    reference: _HostReference | None,
) -> _Timing:
    """Start ``clients`` threads, release them together for ``seconds``, wait for them."""
    threads = [threading.Thread(target=run.client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    run.stop_at = time.perf_counter() + seconds
    cpu_before = _cpu_seconds(process)
    client_before = time.process_time()
    began = time.perf_counter()
    run.barrier.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    client_cpu = time.process_time() - client_before
    cpu_after = _cpu_seconds(process)
    host_reference = (reference.before, reference.measure()) if reference else None
    server_cpu = None
    if cpu_before is not None and cpu_after is not None:
        server_cpu = cpu_after - cpu_before
    return _Timing(elapsed, client_cpu, server_cpu, host_reference)


def _op_stats(
    samples: dict[str, list[float]], errors: dict[str, int], elapsed: float
) -> list[OpStats]:
    """Counts and percentiles per kind of request, then of all of them together."""
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
    return ops


def run_load(
    *,
    url: str | None = None,
    seconds: float = 30.0,
    clients: int = 16,
    seed: int = 200,
    api_key: str | None = None,
    workers: int | None = None,
    repeat: float = DEFAULT_REPEAT,
    console: Console | None = None,
) -> LoadReport:
    """Drive a server with ``clients`` concurrent clients for ``seconds``; the report.

    ``workers`` is the number of server processes started here (default: one per core);
    ``repeat`` the share of a client's searches that ask one of its recent questions again.
    """
    if not 0.0 <= repeat <= 1.0:
        raise ValueError(f"repeat must be between 0 and 1, got {repeat}")
    console = console or Console(stderr=True)
    workers = workers or max(1, os.cpu_count() or 1)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with _server(url, workers) as (base, process):
        console.print(f"Load on {base} ({'started here' if process else 'given'}).")
        client = _Http(base, headers)
        try:
            ids = _seed(client, seed if process else min(seed, 20), random.Random(1))
        finally:
            client.close()
        # Only for a server started here: another machine's speed is not this one's.
        reference = _HostReference() if process else None
        run = _Run(base, headers, ids, repeat, clients)
        timing = _drive(run, clients, seconds, process, reference)
    ops = _op_stats(run.samples, run.errors, timing.elapsed)
    requests = ops[-1].count
    cpu_ms = None
    if timing.server_cpu is not None and requests:
        cpu_ms = timing.server_cpu * 1000 / requests
    return LoadReport(
        url=base,
        seconds=timing.elapsed,
        clients=clients,
        seeded=len(ids),
        ops=ops,
        errors=sum(run.errors.values()),
        error_samples=run.error_samples,
        workers=workers if process else None,
        repeat=repeat,
        distinct_searches=len(run.questions),
        server_cpu_ms_per_request=cpu_ms,
        client_cpu_ms_per_request=timing.client_cpu * 1000 / requests if requests else None,
        host_reference_ms=timing.host_reference,
    )
