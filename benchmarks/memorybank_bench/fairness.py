"""Fairness benchmark (issue 34): how much one tenant's flood slows another tenant's requests.

A ``memorybank serve`` is started on 127.0.0.1 in auth mode with two users, alice and bob,
each with an API key; bob's private memory is seeded with ``bob_facts`` facts (so that a
consolidation preview of his has real work to do) and alice's with a few. Then, in one run,
phase after phase of ``seconds`` each, alice's client alternates a search and a save, alone
(``alone 1``), then while bob floods the server with ``loops`` loops of

* ``search flood``: 1,000-character searches, each a new question (nothing cached);
* ``preview flood``: consolidation previews of his whole memory;
* ``write flood``: saves;
* ``pairs flood``: pages of up to 1,000 of his open pairs (``GET /api/memory-pairs``, issue
  44's F2: 285 pairs took another tenant's search p50 from 5 to 118–133 ms);
* ``tool flood``: recalls through the REST tool route (``POST /api/tools/default/call``,
  F3: 5.6–6.2×);
* ``list flood``: pages of 1,000 of his memories and exports of all of them, in turn
  (``GET /api/memories?limit=1000``, ``GET /api/export``, F4: 22–23×);

with an alone phase between two floods and after the last (:func:`_schedule`). Each flood's
p50 and p95 are reported as ratios to alice's figures in the alone phases just before and
after it, so that the host's drift weighs on them the least, with every 5xx answer (anyone's)
and, at the end, a check that nothing stored was lost: every memory alice and bob were told
was stored is still there, with the same text.

The read and write limits are lifted for the run (``MEMORYBANK_*_RATE_PER_MINUTE``): with
them, bob's flood would mostly be answered 429, which protects alice but measures the limit,
not the scheduling. Lifted, it measures the worst case: a tenant whose limit is high enough.

>>> report = run_fairness(seconds=8)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httptools
from rich.console import Console
from rich.table import Table

from memorybank.core.records import save_records
from memorybank_bench.load import UNLIMITED, _fact, _Http, _percentile, _question, _seed, _server

__all__ = ["FLOODS", "GOAL_RATIO", "FairnessReport", "Phase", "run_fairness"]

#: The most a flood may multiply alice's search p50 and save p50 by (issue 34's goal).
GOAL_RATIO = 2.0
#: Bob's floods, in the order they run; "alone" before and "alone again" after them.
FLOODS = (
    "search flood",
    "preview flood",
    "write flood",
    "pairs flood",
    "tool flood",
    "list flood",
)
#: Alice's pause between two of her requests: an assistant's pace, not a flood of her own.
ALICE_PAUSE_S = 0.02
#: How long bob's client waits for an answer; alice's waits the usual 30 s.
BOB_TIMEOUT_S = 600.0
#: The longest unrecorded first phase (alice alone) before the measured ones.
WARM_UP_S = 3.0
_LONG_QUESTION = " ".join(f"what did the user say about the {w} and the weather" for w in "ab" * 10)
_PAGE = 500
#: Facts of bob's that may each update the others (his open pairs, for the pairs flood):
#: one batch, so each is judged against those before it.
_JOBS = 60
_COMPANIES = "Globex Initech Umbrella Hooli Vandelay Stark Wayne Wonka Acme Cyberdyne".split()


@dataclass
class Phase:
    """Alice's latencies (ms) in one phase, what bob got done, and what went wrong."""

    name: str
    seconds: float
    searches: int
    search_p50_ms: float
    search_p95_ms: float
    saves: int
    save_p50_ms: float
    save_p95_ms: float
    bob_answered: int
    bob_refused: int
    server_errors: int
    alice_errors: int
    search_p50_ratio: float = 1.0
    search_p95_ratio: float = 1.0
    save_p50_ratio: float = 1.0
    save_p95_ratio: float = 1.0


@dataclass
class FairnessReport:
    """What a fairness run measured: one :class:`Phase` per row, and the stored check."""

    url: str
    loops: int
    bob_facts: int
    workers: int
    phases: list[Phase]
    stored: int
    lost: int
    error_samples: list[str] = field(default_factory=list)

    def phase(self, name: str) -> Phase:
        """The phase called ``name``."""
        return next(p for p in self.phases if p.name == name)

    @property
    def server_errors(self) -> int:
        """5xx answers (and broken connections) over the whole run, anyone's."""
        return sum(p.server_errors for p in self.phases)

    def goals(self) -> dict[str, bool]:
        """Each of issue 34's goals, met or not."""
        floods = [self.phase(name) for name in FLOODS]
        searches = all(p.search_p50_ratio <= GOAL_RATIO for p in floods)
        saves = all(p.save_p50_ratio <= GOAL_RATIO for p in floods)
        return {
            f"search p50 ≤ {GOAL_RATIO:g}× alone": searches,
            f"save p50 ≤ {GOAL_RATIO:g}× alone": saves,
            "0 5xx": self.server_errors == 0,
            "nothing lost": self.lost == 0,
        }

    @property
    def met(self) -> bool:
        """Whether every goal was met."""
        return all(self.goals().values())

    def table(self) -> Table:
        """The results as a rich table."""
        goals = [f"goal {goal}: {'met' if ok else 'MISSED'}" for goal, ok in self.goals().items()]
        table = Table(
            title=(
                f"memorybank fairness: alice's latency while bob floods ({self.loops} loops, "
                f"{self.bob_facts:,} facts of his), {self.url}"
            ),
            caption="\n".join(
                [
                    "ms; × = alice's p50 over her p50 alone just before and after (an alone "
                    "phase: over all alone phases); "
                    f"bob's = his requests answered; {self.workers} server worker(s); read "
                    "and write limits lifted",
                    f"stored: {self.stored:,} memories told stored, {self.lost} lost",
                    *goals,
                ]
            ),
        )
        table.add_column("phase", no_wrap=True)
        for name in ("search p50", "p95", "× p50", "save p50", "p95", "× p50", "bob's", "5xx"):
            table.add_column(name, justify="right")
        for p in self.phases:
            table.add_row(
                p.name,
                f"{p.search_p50_ms:.1f}",
                f"{p.search_p95_ms:.1f}",
                f"{p.search_p50_ratio:.2f}",
                f"{p.save_p50_ms:.1f}",
                f"{p.save_p95_ms:.1f}",
                f"{p.save_p50_ratio:.2f}",
                f"{p.bob_answered:,}",
                str(p.server_errors),
            )
        return table

    def notes(self) -> list[str]:
        """How many requests each figure rests on."""
        return [
            f"{p.name}: alice {p.searches:,} searches, {p.saves:,} saves in {p.seconds:g} s; "
            f"bob {p.bob_answered:,} answered, {p.bob_refused:,} refused (429)"
            for p in self.phases
        ]

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "url": self.url,
            "loops": self.loops,
            "bob_facts": self.bob_facts,
            "workers": self.workers,
            "goal_ratio": GOAL_RATIO,
            "phases": [asdict(p) for p in self.phases],
            "server_errors": self.server_errors,
            "stored": self.stored,
            "lost": self.lost,
            "goals": self.goals(),
            "met": self.met,
            "error_samples": self.error_samples,
        }


class _Tally:
    """What the threads of one phase record, under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.search_ms: list[float] = []
        self.save_ms: list[float] = []
        self.bob_answered = 0
        self.bob_refused = 0
        self.server_errors = 0
        self.alice_errors = 0
        self.samples: list[str] = []
        self.saved: dict[str, dict[str, str]] = {"alice": {}, "bob": {}}

    def answer(self, who: str, what: str, status: int, body: bytes) -> None:
        """Count one answer; a save's new memory is remembered to be checked at the end."""
        with self.lock:
            if status >= 500:
                self.server_errors += 1
            if status == 201:
                memory = json.loads(body)["memory"]
                self.saved[who][memory["id"]] = memory["content"]
            if who == "bob":
                self.bob_answered += status < 400
                self.bob_refused += status == 429
            elif status >= 400 and status != 409:  # 409: a near-duplicate, answered
                self.alice_errors += 1
            if (status >= 500 or (who == "alice" and status >= 400 and status != 409)) and len(
                self.samples
            ) < 10:
                self.samples.append(f"{who} {what}: {status} {body[:200]!r}")

    def broken(self, who: str, what: str, exc: Exception) -> None:
        """A request that got no answer at all: counted with the 5xx."""
        with self.lock:
            self.server_errors += 1
            if len(self.samples) < 10:
                self.samples.append(f"{who} {what}: {type(exc).__name__}: {exc}")


def _request(
    tally: _Tally, who: str, what: str, conn: _Http, method: str, path: str, **kw: Any
) -> None:
    try:
        status, body = conn.request(method, path, **kw)
    except (OSError, httptools.HttpParserError) as exc:
        tally.broken(who, what, exc)
        return
    tally.answer(who, what, status, body)


def _alice(base: str, key: str, tally: _Tally, stop: threading.Event, seed: str) -> None:
    """Alice's client: a search, a pause, a save, a pause, until ``stop``; timed. ``seed``
    differs per phase: a phase that asked and saved what an earlier one did would be served
    from the query cache and refused as duplicates, faster than anything new."""
    rng = random.Random(seed)
    conn = _Http(base, {"Authorization": f"Bearer {key}"})
    try:
        while not stop.is_set():
            for kind in ("search", "save"):
                start = time.perf_counter()
                if kind == "search":
                    params = {"q": _question(rng), "limit": 10}
                    _request(tally, "alice", kind, conn, "GET", "/api/search", params=params)
                else:
                    fact = {"fact": _fact(rng)}
                    _request(tally, "alice", kind, conn, "POST", "/api/memory/user", body=fact)
                elapsed = (time.perf_counter() - start) * 1000
                with tally.lock:
                    (tally.search_ms if kind == "search" else tally.save_ms).append(elapsed)
                stop.wait(ALICE_PAUSE_S)
    finally:
        conn.close()


def _bob(flood: str, index: int) -> Callable[[_Http, _Tally, int], None]:
    """One request of one of bob's loops in ``flood``, given its connection and a counter."""
    rng = random.Random(100 + index)

    def search(conn: _Http, tally: _Tally, n: int) -> None:
        params = {"q": f"{_LONG_QUESTION} {index}-{n}", "limit": 10}  # never cached
        _request(tally, "bob", flood, conn, "GET", "/api/search", params=params)

    def preview(conn: _Http, tally: _Tally, n: int) -> None:
        _request(tally, "bob", flood, conn, "GET", "/api/consolidate")

    def write(conn: _Http, tally: _Tally, n: int) -> None:
        fact = {"fact": _fact(rng)}
        _request(tally, "bob", flood, conn, "POST", "/api/memory/user", body=fact)

    def pairs(conn: _Http, tally: _Tally, n: int) -> None:
        _request(tally, "bob", flood, conn, "GET", "/api/memory-pairs", params={"limit": 1000})

    def tool(conn: _Http, tally: _Tally, n: int) -> None:
        # The tool's query takes at most 1,000 characters (tools.profiles.default.QUERY_MAX).
        recall = {"name": "recall", "arguments": {"query": f"{_LONG_QUESTION[:900]} {index}-{n}"}}
        _request(tally, "bob", flood, conn, "POST", "/api/tools/default/call", body=recall)

    def listing(conn: _Http, tally: _Tally, n: int) -> None:
        if n % 2:
            _request(tally, "bob", flood, conn, "GET", "/api/export")
        else:
            _request(tally, "bob", flood, conn, "GET", "/api/memories", params={"limit": 1000})

    return {
        "search flood": search,
        "preview flood": preview,
        "write flood": write,
        "pairs flood": pairs,
        "tool flood": tool,
        "list flood": listing,
    }[flood]


def _bob_loop(
    base: str, key: str, flood: str, index: int, tally: _Tally, stop: threading.Event
) -> None:
    one = _bob(flood, index)
    # Bob's requests wait behind his own (one of a user's calls at a time): a phase ends
    # when his last one is answered, so that none of his work is left to the next phase.
    conn = _Http(base, {"Authorization": f"Bearer {key}"}, timeout=BOB_TIMEOUT_S)
    n = 0
    try:
        while not stop.is_set():
            one(conn, tally, n)
            n += 1
    finally:
        conn.close()


def _phase(name: str, base: str, keys: dict[str, str], loops: int, seconds: float) -> _Tally:
    """Run one phase: alice's client, and bob's ``loops`` unless ``name`` is an alone one."""
    tally, stop = _Tally(), threading.Event()
    alice = (base, keys["alice"], tally, stop, name)
    threads = [threading.Thread(target=_alice, args=alice)]
    if name in FLOODS:
        threads += [
            threading.Thread(target=_bob_loop, args=(base, keys["bob"], name, i, tally, stop))
            for i in range(loops)
        ]
    for thread in threads:
        thread.start()
    stop.wait(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return tally


def _as_phase(name: str, seconds: float, tally: _Tally) -> Phase:
    search, save = sorted(tally.search_ms), sorted(tally.save_ms)
    return Phase(
        name=name,
        seconds=seconds,
        searches=len(search),
        search_p50_ms=_percentile(search, 50),
        search_p95_ms=_percentile(search, 95),
        saves=len(save),
        save_p50_ms=_percentile(save, 50),
        save_p95_ms=_percentile(save, 95),
        bob_answered=tally.bob_answered,
        bob_refused=tally.bob_refused,
        server_errors=tally.server_errors,
        alice_errors=tally.alice_errors,
    )


def _pooled(name: str, seconds: float, *tallies: _Tally) -> Phase:
    """Alice's requests of several phases together, as one."""
    both = _Tally()
    for tally in tallies:
        both.search_ms += tally.search_ms
        both.save_ms += tally.save_ms
    return _as_phase(name, seconds * len(tallies), both)


def _measured(tallies: dict[str, _Tally], seconds: float) -> list[Phase]:
    """Each phase with its ratios: a flood's over the alone phases just before and after it
    (so that the host's drift over the run, other work on the machine, weighs on it the
    least), an alone phase's over all alone phases together (which shows that drift)."""
    names = list(tallies)
    alone = _pooled("alone", seconds, *(tallies[n] for n in names if n not in FLOODS))
    phases = []
    for i, name in enumerate(names):
        phase = _as_phase(name, seconds, tallies[name])
        base = alone
        if name in FLOODS:
            base = _pooled("around", seconds, tallies[names[i - 1]], tallies[names[i + 1]])
        phases.append(_with_ratios(phase, base))
    return phases


def _with_ratios(phase: Phase, alone: Phase) -> Phase:
    """``phase`` with its p50 and p95 over ``alone``'s."""

    def ratio(value: float, base: float) -> float:
        return round(value / base, 3) if base else 0.0

    phase.search_p50_ratio = ratio(phase.search_p50_ms, alone.search_p50_ms)
    phase.search_p95_ratio = ratio(phase.search_p95_ms, alone.search_p95_ms)
    phase.save_p50_ratio = ratio(phase.save_p50_ms, alone.save_p50_ms)
    phase.save_p95_ratio = ratio(phase.save_p95_ms, alone.save_p95_ms)
    return phase


def _stored(conn: _Http) -> dict[str, str]:
    """Every private memory of the connection's user, superseded ones included: id → text."""
    found: dict[str, str] = {}
    offset = 0
    while True:
        params = {"limit": _PAGE, "offset": offset, "include_superseded": "true"}
        status, body = conn.request("GET", "/api/memory/user", params=params)
        if status != 200:
            raise RuntimeError(f"listing the stored memories failed: {status} {body[:200]!r}")
        page = json.loads(body)["memories"]
        found.update({m["id"]: m["content"] for m in page})
        if len(page) < _PAGE:
            return found
        offset += _PAGE


def _lost(base: str, keys: dict[str, str], told: dict[str, dict[str, str]]) -> tuple[int, int]:
    """How many memories the users were told were stored, and how many of them are gone or
    changed."""
    stored = lost = 0
    for who, memories in told.items():
        conn = _Http(base, {"Authorization": f"Bearer {keys[who]}"})
        try:
            there = _stored(conn)
        finally:
            conn.close()
        stored += len(memories)
        lost += sum(1 for id_, text in memories.items() if there.get(id_) != text)
    return stored, lost


def _accounts_and_bob(
    bob_facts: int, keys: dict[str, str], seeded: dict[str, str]
) -> Callable[[str], None]:
    """The preparation of the server's empty database: alice and bob, their keys (into
    ``keys``), and bob's facts (into ``seeded``: id → text), stored as an import stores them
    (embedded in one batch), then his jobs (:func:`_jobs`), saved as a save judges them, so
    that he has pairs open."""

    def prepare(db_url: str) -> None:
        import memorybank
        from memorybank.model import Category, Memory
        from memorybank.services.accounts import Accounts
        from memorybank.stores.accounts_sql import sql_accounts

        with memorybank.open(db_url) as bank:
            accounts = Accounts(sql_accounts(bank.store))  # keys only: no provider keys here
            for user in ("alice", "bob"):
                accounts.create_user(user, name=user.title())
                keys[user] = accounts.create_key(user, label="bench fairness")[1]
            rng = random.Random(3)
            facts = [
                Memory(user_id="bob", content=_fact(rng), category=Category.CONTEXT)
                for _ in range(bob_facts)
            ]
            seeded.update({m.id: m.content for m in save_records(bank, facts, actor="bob")})
            jobs = bank.save_many("bob", _jobs(), on_conflict="keep")
            seeded.update({r.memory_id: r.content for r in jobs if r.memory_id})

    return prepare


def _jobs() -> list[dict[str, str]]:
    """Bob's facts that may each update another (where he works, as what): a save asks about
    each such pair until someone answers, so his ``GET /api/memory-pairs`` has pages to read."""
    roles = ("an engineer", "a manager", "a designer", "an analyst", "a consultant", "a tester")
    return [
        {
            "content": f"User works at {_COMPANIES[n % 10]} as {roles[n // 10 % 6]}",
            "category": "identity",
        }
        for n in range(_JOBS)
    ]


def _open_pairs(base: str, key: str) -> int:
    """How many pairs the user of ``key`` has open (at most 1,000)."""
    conn = _Http(base, {"Authorization": f"Bearer {key}"})
    try:
        status, body = conn.request("GET", "/api/memory-pairs", params={"limit": 1000})
    finally:
        conn.close()
    return len(json.loads(body)["pairs"]) if status == 200 else 0


def _schedule() -> list[str]:
    """The phases in order: alice alone before and after each flood."""
    names = ["alone 1"]
    for n, flood in enumerate(FLOODS, start=2):
        names += [flood, f"alone {n}"]
    return names


def run_fairness(
    *,
    seconds: float = 8.0,
    loops: int = 4,
    bob_facts: int = 1000,
    alice_facts: int = 20,
    workers: int = 1,
    console: Console | None = None,
) -> FairnessReport:
    """Alice's search and save latency alone, and while bob floods searches, previews and
    writes (``loops`` loops each, ``seconds`` per phase), on a server started here."""
    if seconds <= 0 or loops < 1 or bob_facts < 0 or alice_facts < 0 or workers < 1:
        raise ValueError(
            "seconds must be above 0, loops and workers at least 1, and the fact counts 0 or more"
        )
    console = console or Console(stderr=True)
    keys: dict[str, str] = {}
    told: dict[str, dict[str, str]] = {"alice": {}, "bob": {}}
    prepare = _accounts_and_bob(bob_facts, keys, told["bob"])
    limits = {"MEMORYBANK_READ_RATE_PER_MINUTE": UNLIMITED}
    with _server(None, workers, prepare=prepare, env=limits) as (base, _):
        pairs = _open_pairs(base, keys["bob"])
        console.print(
            f"Fairness on {base}: {bob_facts:,} facts of bob's seeded, {pairs:,} pairs open."
        )
        alice = _Http(base, {"Authorization": f"Bearer {keys['alice']}"})
        try:
            ids = set(_seed(alice, alice_facts, random.Random(2)))
            told["alice"] = {i: text for i, text in _stored(alice).items() if i in ids}
        finally:
            alice.close()
        # Unrecorded: the first searches and saves of a process load what they need.
        warm = _phase("warm-up", base, keys, loops, min(seconds, WARM_UP_S))
        tallies: dict[str, _Tally] = {}
        for name in _schedule():
            console.print(f"  {name} ({seconds:g} s)")
            tallies[name] = _phase(name, base, keys, loops, seconds)
        for tally in (warm, *tallies.values()):
            for who, saved in tally.saved.items():
                told[who].update(saved)
        stored, lost = _lost(base, keys, told)
    return FairnessReport(
        url=base,
        loops=loops,
        bob_facts=bob_facts,
        workers=workers,
        phases=_measured(tallies, seconds),
        stored=stored,
        lost=lost,
        error_samples=[s for t in (warm, *tallies.values()) for s in t.samples][:10],
    )
