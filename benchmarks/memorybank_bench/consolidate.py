"""Consolidation benchmark (issue 27, finding 3): time and peak memory of one consolidation
call and of a whole pass over a scope of near-duplicate facts, beside the all-pairs approach
it replaced, at a size that approach can manage.

The facts are the attack's shape: four templates a number apart ("User's gym locker code is
1042" …), all alike enough to be judged and none a duplicate of another (a different number is
a different value), with 1 % planted exact copies, which every approach must merge. They are
embedded for real once, at the largest size, and each size's database holds the first N.

One call is measured on the first page and on the last (the dearest: each fact is compared
with every fact before it). Each measurement runs in a fresh process (so memory freed by one
never flatters the next), on the store alone (no embedder loaded): wall time, the CPU time of
the process (which another process's load inflates far less), and the growth of resident
memory over what the process held before the run, sampled every 5 ms. Compare the rows of one
run with each other, not with another machine's.

>>> report = run_consolidate_bench([1000, 20000], old_max=2000)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import psutil
from rich.console import Console
from rich.table import Table

from memorybank.core import consolidate as consolidation
from memorybank.core.consolidate import MAX_PAGE_FACTS, PAGE_FACTS
from memorybank.model import Category, Memory, MemoryFilter, Scope, ScopeSet
from memorybank.providers.embedders.base import Vectors
from memorybank.providers.judges.local import default_judge
from memorybank.rules.intake import is_conversation
from memorybank.rules.verdicts import THRESHOLDS, Relation, specificity, verdict
from memorybank.stores.sqlite import SQLiteStore

__all__ = ["ConsolidateReport", "Measurement", "near_duplicates", "run_consolidate_bench"]

USER = "bench"
TEMPLATES = (
    "User's gym locker code is {n}",
    "User parked the car on level {n}",
    "User's badge number at work is {n}",
    "User ran {n} metres this morning",
)
#: Goals of issue 27 for one call over 20,000 facts.
TARGET_MIB = 300.0
TARGET_SECONDS = 5.0

Approach = Literal["first page", "last page", "whole pass", "all pairs (before)"]


def near_duplicates(count: int) -> list[str]:
    """``count`` facts: near-duplicates a number apart, and every 100th an exact copy of an
    earlier one (``count // 100`` copies, each to be merged). A prefix is the same mix.

    >>> near_duplicates(3)
    ["User's gym locker code is 1000", 'User parked the car on level 1001', "User's badge number at work is 1002"]
    >>> texts = near_duplicates(200)
    >>> len(texts) - len(set(texts))
    2
    """  # noqa: E501
    texts: list[str] = []
    for n in range(count):
        copy = n % 100 == 99
        texts.append(texts[(n * 37) % n] if copy else TEMPLATES[n % 4].format(n=1000 + n))
    return texts


@dataclass(frozen=True)
class Measurement:
    """One approach at one size."""

    facts: int
    approach: Approach
    examined: int
    pairs: int
    merged: int
    seconds: float  # wall time
    cpu_seconds: float  # CPU time of the process (all its threads): less sensitive to load
    peak_mib: float  # growth of resident memory during the run

    def as_dict(self) -> dict[str, Any]:
        return {
            "facts": self.facts,
            "approach": self.approach,
            "examined": self.examined,
            "pairs_judged": self.pairs,
            "merged": self.merged,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "peak_rss_growth_mib": round(self.peak_mib, 1),
        }


@dataclass
class ConsolidateReport:
    """Every measurement of a run, smallest size first."""

    rows: list[Measurement] = field(default_factory=list)

    def row(self, facts: int, approach: Approach) -> Measurement | None:
        return next((r for r in self.rows if r.facts == facts and r.approach == approach), None)

    def ratios(self) -> tuple[int, float, float] | None:
        """At the largest size both ran: (size, before ÷ one call in CPU time, in memory);
        the call is the last page, the dearest."""
        both = [
            (old, new)
            for old in self.rows
            if old.approach == "all pairs (before)"
            and (new := self.row(old.facts, "last page")) is not None
        ]
        if not both:
            return None
        old, new = max(both, key=lambda pair: pair[0].facts)
        time_ratio = old.cpu_seconds / max(new.cpu_seconds, 1e-9)
        return old.facts, time_ratio, old.peak_mib / max(new.peak_mib, 1)

    def table(self) -> Table:
        table = Table(title="Consolidation: near-duplicate facts in one scope")
        names = ("facts", "approach", "examined", "pairs judged", "merged", "s", "CPU s", "MiB")
        for name in names:
            table.add_column(name, justify="left" if name == "approach" else "right")
        for r in self.rows:
            table.add_row(
                f"{r.facts:,}",
                r.approach,
                f"{r.examined:,}",
                f"{r.pairs:,}",
                f"{r.merged:,}",
                f"{r.seconds:.2f}",
                f"{r.cpu_seconds:.2f}",
                f"{r.peak_mib:.0f}",
            )
        return table

    def notes(self) -> list[str]:
        out = []
        found = self.ratios()
        if found is not None:
            size, time_ratio, memory_ratio = found
            out.append(
                f"At {size:,} facts the all-pairs approach took {time_ratio:.0f}× the CPU time and "
                f"{memory_ratio:.0f}× the memory of one call."
            )
        largest = max((r.facts for r in self.rows), default=0)
        one = self.row(largest, "last page")
        if one is not None:
            ok = one.peak_mib <= TARGET_MIB and one.cpu_seconds <= TARGET_SECONDS
            out.append(
                f"One call (the last page) at {largest:,} facts: {one.cpu_seconds:.2f} s of CPU "
                f"({one.seconds:.2f} s wall), +{one.peak_mib:.0f} MiB "
                f"(goal: under {TARGET_MIB:.0f} MiB and {TARGET_SECONDS:.0f} s) "
                + ("✔" if ok else "✘")
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        found = self.ratios()
        return {
            "rows": [r.as_dict() for r in self.rows],
            "before_over_one_call": None
            if found is None
            else {"facts": found[0], "time": round(found[1], 1), "memory": round(found[2], 1)},
        }


# -- the approach before issue 27 (all similar pairs), kept as the reference ---------------------


def all_pairs(store: SQLiteStore, scope: Scope) -> tuple[int, int, int]:
    """What ``memorybank.core.consolidate`` did before issue 27, as it was: every current fact
    loaded, every similar pair found from the full similarity matrix (kept as Python lists) and
    judged by each keeper in turn. (examined, pairs judged, merged)."""
    scopes = ScopeSet.of(scope)
    memories: list[Memory] = []
    offset = 0
    while True:
        page = store.list_memories(
            scopes, MemoryFilter(superseded=False), limit=1000, offset=offset, order="created_asc"
        )
        memories += [m for m in page if not is_conversation(m.ring, m.source)]
        if len(page) < 1000:
            break
        offset += 1000
    vectors = store.vectors_of([m.id for m in memories])
    memories = [m for m in memories if m.id in vectors]
    matrix = np.stack([vectors[m.id] for m in memories]).astype(np.float32)
    order = sorted(
        range(len(memories)),
        key=lambda i: (
            -specificity(memories[i].content),
            -memories[i].importance,
            -memories[i].updated_at.timestamp(),
        ),
    )
    similar = _similar(matrix)
    placed: set[int] = set()
    pairs = merged = 0
    for keeper in order:
        if keeper in placed:
            continue
        placed.add(keeper)
        for other, similarity in similar[keeper]:
            if other in placed:
                continue
            pairs += 1
            new, old = memories[other].content, memories[keeper].content
            score = default_judge().score([(old, new)])[0]
            if verdict(score, new, old, similarity).relation is Relation.DUPLICATE:
                placed.add(other)
                merged += 1
    return len(memories), pairs, merged


def _similar(matrix: Vectors) -> list[list[tuple[int, float]]]:
    out: list[list[tuple[int, float]]] = []
    for start in range(0, len(matrix), 512):
        block = matrix[start : start + 512] @ matrix.T
        for row_index, row in enumerate(block):
            me = start + row_index
            hits = np.nonzero(row >= THRESHOLDS.candidate)[0]
            out.append([(int(j), float(row[j])) for j in hits if j != me])
    return out


# -- measuring -----------------------------------------------------------------------------------


def _run(path: str, dimension: int, approach: Approach, cursor: str | None) -> tuple[int, int, int]:
    store = SQLiteStore(path, dimension=dimension)
    try:
        if approach == "all pairs (before)":
            return all_pairs(store, Scope(user_id=USER))
        if approach == "whole pass":
            found = consolidation.run_all(store, USER)
        else:
            found = consolidation.run(store, USER, cursor=cursor)
        return found.examined, found.pairs_judged, found.merged_count
    finally:
        store.close()


def last_page_cursor(path: Path, dimension: int) -> str | None:
    """Where the last page of the scope starts (the dearest call: its facts are compared with
    every fact before them), found by paging through the rest with previews."""
    store = SQLiteStore(path, dimension=dimension)
    try:
        skip = store.count(ScopeSet.of(Scope(user_id=USER)), MemoryFilter()) - PAGE_FACTS
        cursor = None
        while skip > 0:
            budget = consolidation.Budget(facts=min(skip, MAX_PAGE_FACTS))
            found = consolidation.run(store, USER, cursor=cursor, budget=budget)
            skip, cursor = skip - found.examined, found.next_cursor
        return cursor
    finally:
        store.close()


def _measured(path: str, dimension: int, approach: Approach, cursor: str | None, out: Any) -> None:
    """In a fresh process: run ``approach`` and put (counts, seconds, peak MiB) on ``out``."""
    me = psutil.Process()
    SQLiteStore(path, dimension=dimension).close()  # imports and first open, before measuring
    before = me.memory_info().rss
    peak = [before]
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start, cpu = time.perf_counter(), time.process_time()
    counts = _run(path, dimension, approach, cursor)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    running.clear()
    sampler.join()
    peak[0] = max(peak[0], me.memory_info().rss)
    out.put((counts, seconds, cpu, (peak[0] - before) / 2**20))


def measure(
    path: Path, dimension: int, facts: int, approach: Approach, cursor: str | None = None
) -> Measurement:
    """``approach`` over the database at ``path`` (one call: from ``cursor``), in a process of
    its own."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    args = (str(path), dimension, approach, cursor, out)
    process = context.Process(target=_measured, args=args)
    process.start()
    (examined, pairs, merged), seconds, cpu, peak = out.get()
    process.join()
    return Measurement(facts, approach, examined, pairs, merged, seconds, cpu, peak)


def build(path: Path, texts: Sequence[str], vectors: Vectors, dimension: int) -> None:
    """A database of ``texts`` as facts of one scope, stored as an import would (no check)."""
    store = SQLiteStore(path, dimension=dimension)
    try:
        for start in range(0, len(texts), 5000):
            part = texts[start : start + 5000]
            memories = [Memory(user_id=USER, content=t, category=Category.CONTEXT) for t in part]
            store.insert(
                memories,
                vectors[start : start + len(part)],
                dedup=[False] * len(part),
                actor=USER,
            )
    finally:
        store.close()


def run_consolidate_bench(
    sizes: Sequence[int],
    *,
    old_max: int = 2000,
    workdir: Path | None = None,
    console: Console | None = None,
) -> ConsolidateReport:
    """Measure one call (the first and the last page), a whole pass and (up to ``old_max``
    facts) the all-pairs approach at each size."""
    from memorybank.providers.embedders.local import LocalEmbedder

    def say(line: str) -> None:
        if console is not None:
            console.print(line)

    texts = near_duplicates(max(sizes))
    with tempfile.TemporaryDirectory(prefix="memorybank-consolidate-") as scratch:
        folder = workdir or Path(scratch)
        say(f"Embedding {len(texts):,} facts…")
        embedder = LocalEmbedder()
        try:
            vectors = np.concatenate(
                [embedder.embed(texts[s : s + 256]) for s in range(0, len(texts), 256)]
            )
            dimension = embedder.dimension
        finally:
            embedder.close()
        report = ConsolidateReport()
        for size in sorted(set(sizes)):
            path = folder / f"consolidate-{size}.db"
            path.unlink(missing_ok=True)
            build(path, texts[:size], vectors[:size], dimension)
            last = last_page_cursor(path, dimension)
            approaches: list[Approach] = ["first page", "last page", "whole pass"]
            if size <= old_max:
                approaches.append("all pairs (before)")
            for approach in approaches:
                say(f"{size:,} facts: {approach}…")
                cursor = last if approach == "last page" else None
                report.rows.append(measure(path, dimension, size, approach, cursor))
    return report
