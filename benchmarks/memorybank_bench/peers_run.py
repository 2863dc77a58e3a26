"""One system's half of ``memorybank bench peers``, run in a process of its own so that its
peak RSS is its own: the same LoCoMo facts ingested one at a time, then the same questions
searched, timed and scored the same way for memorybank and for mem0.

The workload (the data folder's README, "Fact protocol", on both systems alike):

* every conversation is one scope (memorybank's user, mem0's ``user_id``); its observations
  of 10–500 characters are ingested one call each, in order, their dialogue ids in
  ``metadata["dia_ids"]``;
* every question of categories 1–4 whose evidence some observation covers is searched in its
  scope for 10 results, and scored by recall@10: the share of its gold ids covered by them;
* ``limit_questions`` keeps the first N such questions of each conversation.
* then each question is embedded again by the system's embedder alone: the share of a search
  both systems pay alike (the same model), which bounds how far apart their searches can be.

``python -m memorybank_bench.peers_run --system memorybank --data locomo_dev.json --out r.json``
writes one :func:`measure` result as JSON (the parent, :mod:`memorybank_bench.peers`, reads it).

>>> scopes = load_workload(Path("locomo_dev.json"), limit_conversations=1)  # doctest: +SKIP
>>> sorted(measure("memorybank", scopes, Path("/tmp/w")))[:3]  # doctest: +SKIP
['facts', 'ingest_per_s', 'ingest_seconds']
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import psutil

from memorybank.errors import ValidationError
from memorybank_bench.locomo import Latency, load_conversations
from memorybank_bench.locomo_facts import (
    MAX_CHARS,
    MIN_CHARS,
    fact_recall_at,
    fact_reciprocal_rank,
    gold_of,
    load_observations,
)

#: Results asked of each search, and the cut-off recall is scored at.
TOP_K = 10
SYSTEMS = ("memorybank", "mem0")
_MIB = 1024 * 1024


@dataclass(frozen=True)
class Fact:
    """One observation to ingest."""

    text: str
    dia_ids: tuple[str, ...]
    occurred_at: datetime | None


@dataclass(frozen=True)
class Probe:
    """One question to search, with the gold ids its results are scored on."""

    question: str
    gold: tuple[str, ...]


@dataclass(frozen=True)
class Scope:
    """One conversation: its facts and its questions."""

    user: str
    facts: tuple[Fact, ...]
    probes: tuple[Probe, ...]


def load_workload(
    data: Path,
    *,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
) -> list[Scope]:
    """The scopes both systems get: the first ``limit_conversations`` conversations, the first
    ``limit_questions`` scored questions of each."""
    observations = load_observations(data)
    scopes: list[Scope] = []
    for conversation in load_conversations(data)[:limit_conversations]:
        dates = {turn.session: turn.occurred_at for turn in conversation.turns}
        facts = tuple(
            Fact(o.text, o.dia_ids, dates.get(o.session))
            for o in observations.get(conversation.sample_id, [])
            if MIN_CHARS <= len(o.text) <= MAX_CHARS
        )
        covered = {dia for fact in facts for dia in fact.dia_ids}
        probes = [
            Probe(q.question, gold)
            for q in conversation.questions
            if q.scored and (gold := gold_of(q, covered))
        ]
        scopes.append(Scope(conversation.sample_id, facts, tuple(probes[:limit_questions])))
    if not any(scope.probes for scope in scopes):
        raise ValidationError(f"{data}: no question with covered evidence to search", field="data")
    return scopes


class Peer(Protocol):
    """What the benchmark asks of a memory system."""

    version: str

    def add(self, user: str, fact: Fact) -> bool:
        """Ingest one fact; whether it was stored (memorybank may refuse a duplicate)."""
        ...

    def search(self, user: str, question: str) -> list[frozenset[str]]:
        """The dialogue ids of each of the top :data:`TOP_K` results, in rank order."""
        ...

    def embed(self, text: str) -> None:
        """Embed ``text`` with the system's embedder alone (the query's share of a search)."""
        ...

    def close(self) -> None: ...


class MemoryBankPeer:
    """memorybank as a user takes it: ``memorybank.open`` on a SQLite file, default settings;
    facts through :meth:`~memorybank.MemoryBank.save` (its judge compares each to the similar
    stored ones), questions through :meth:`~memorybank.MemoryBank.search`."""

    def __init__(self, workdir: Path) -> None:
        import memorybank

        self.version = memorybank.__version__
        self._bank = memorybank.open(f"sqlite:///{workdir / 'memorybank.db'}")

    def add(self, user: str, fact: Fact) -> bool:
        try:
            result = self._bank.save(
                user,
                fact.text,
                occurred_at=fact.occurred_at,
                metadata={"dia_ids": list(fact.dia_ids)},
            )
        except ValidationError:
            return False
        return bool(result.success and not result.duplicate)

    def search(self, user: str, question: str) -> list[frozenset[str]]:
        seen: set[str] = set()
        ranked: list[frozenset[str]] = []
        for hit in self._bank.search(user, question, limit=TOP_K):
            if hit.memory.id not in seen:
                seen.add(hit.memory.id)
                ranked.append(frozenset(str(d) for d in hit.memory.metadata.get("dia_ids") or ()))
        return ranked

    def embed(self, text: str) -> None:
        self._bank.embedder.embed([text])

    def close(self) -> None:
        self._bank.close()


def open_peer(system: str, workdir: Path) -> Peer:
    """The system named ``system`` (one of :data:`SYSTEMS`), fresh, its files in ``workdir``."""
    if system == "memorybank":
        return MemoryBankPeer(workdir)
    if system == "mem0":
        from memorybank_bench.peers_mem0 import Mem0Peer

        return Mem0Peer(workdir)
    raise ValidationError(f"unknown system {system!r}: one of {', '.join(SYSTEMS)}", field="system")


def _ms(latency: Latency) -> dict[str, float | int]:
    return {"p50": latency.p50, "p95": latency.p95, "mean": latency.mean, "count": latency.count}


def measure(system: str, scopes: Sequence[Scope], workdir: Path) -> dict[str, Any]:
    """Open ``system``, ingest every scope's facts one call each, search every question, then
    embed every question alone: the timings, the counts and recall@10, JSON-ready."""
    load_at_start = os.getloadavg()[0]
    began = time.perf_counter()
    peer = open_peer(system, workdir)
    opened = time.perf_counter() - began
    try:
        adds: list[float] = []
        stored = 0
        for scope in scopes:
            for fact in scope.facts:
                began = time.perf_counter()
                stored += peer.add(scope.user, fact)
                adds.append(time.perf_counter() - began)
        rss_after_ingest = psutil.Process().memory_info().rss
        for scope in scopes:  # untimed: what a first query loads once per scope
            peer.search(scope.user, "warm up")
        searches: list[float] = []
        recalls: list[float] = []
        ranks: list[float] = []
        for scope in scopes:
            for probe in scope.probes:
                began = time.perf_counter()
                ranked = peer.search(scope.user, probe.question)
                searches.append(time.perf_counter() - began)
                recalls.append(fact_recall_at(ranked, probe.gold, TOP_K))
                ranks.append(fact_reciprocal_rank(ranked, probe.gold))
        embeds: list[float] = []
        for scope in scopes:
            for probe in scope.probes:
                began = time.perf_counter()
                peer.embed(probe.question)
                embeds.append(time.perf_counter() - began)
    finally:
        peer.close()
    ingest_seconds = sum(adds)
    return {
        "system": system,
        "version": peer.version,
        "open_seconds": opened,
        "facts": len(adds),
        "stored": stored,
        "ingest_seconds": ingest_seconds,
        "ingest_per_s": len(adds) / ingest_seconds if ingest_seconds > 0 else 0.0,
        "add_ms": _ms(Latency.of(adds)),
        "questions": len(searches),
        "search_ms": _ms(Latency.of(searches)),
        "query_embed_ms": _ms(Latency.of(embeds)),
        "recall_at_10": sum(recalls) / len(recalls) if recalls else 0.0,
        "mrr": sum(ranks) / len(ranks) if ranks else 0.0,
        "rss_after_ingest_mib": rss_after_ingest / _MIB,
        # Other work on the machine skews a system's times: how much there was during its run.
        "load_avg": [load_at_start, os.getloadavg()[0]],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure one system and write its result as JSON to ``--out``."""
    parser = argparse.ArgumentParser(prog="python -m memorybank_bench.peers_run")
    parser.add_argument("--system", choices=SYSTEMS, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--limit-questions", type=int, default=None)
    args = parser.parse_args(argv)
    scopes = load_workload(
        args.data,
        limit_conversations=args.limit_conversations,
        limit_questions=args.limit_questions,
    )
    result = measure(args.system, scopes, args.workdir)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
