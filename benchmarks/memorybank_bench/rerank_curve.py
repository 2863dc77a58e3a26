"""How many of a search's best hits the judge should re-read: the curve of re-read depth
(``RetrievalSettings.rerank``) against recall on LoCoMo facts and the time of a search.

The facts are saved once, as ``bench facts`` saves them (:mod:`memorybank_bench.locomo_facts`:
the same protocol, the same scores); then every question is searched at each depth, from cold
caches each time (the query vectors and the judge's answers forgotten, so a depth pays for
every pair it reads, as a new message does).

``memorybank bench rerank --data ../shared/data/locomo/locomo_dev.json [--depths 0,2,4,8]
[--limit-conversations N] [--json OUT]``

>>> report = run_rerank_curve(Path("locomo_dev.json"), depths=[0, 8])  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import memorybank
from memorybank.core.bank import MemoryBank
from memorybank_bench.latency import from_cold
from memorybank_bench.latency_report import Percentiles, machine_info, machine_line
from memorybank_bench.locomo import Conversation, load_conversations
from memorybank_bench.locomo_facts import (
    SEARCH_LIMIT,
    _dates,
    fact_recall_at,
    fact_reciprocal_rank,
    gold_of,
    load_observations,
    ranked_facts,
    save_observations,
)

#: The depths measured unless told otherwise (the shipped default is 8).
DEPTHS = (0, 2, 4, 8, 12, 16)


@dataclass(frozen=True)
class DepthRow:
    """One depth's scores over every question, and the time of its searches."""

    rerank: int
    questions: int
    recall_at_5: float
    recall_at_10: float
    mrr: float
    search: Percentiles
    load_avg: float


@dataclass
class RerankReport:
    """The curve: one row per depth."""

    data: str
    conversations: int
    facts_saved: int
    rows: list[DepthRow]
    machine: dict[str, Any] = field(default_factory=machine_info)
    seconds: float = 0.0

    def table(self) -> Table:
        """Depth, recall, MRR and search latency, with the machine line in the caption."""
        load = {"load_avg": max((r.load_avg for r in self.rows), default=0.0)}
        table = Table(
            title="search re-read by the judge: depth vs recall vs time (LoCoMo facts)",
            caption=(
                f"{self.conversations} conversations, {self.facts_saved:,} facts saved, "
                f"{self.rows[0].questions if self.rows else 0} questions; searches from cold "
                f"caches. Machine: {machine_line({**self.machine, **load})}"
            ),
        )
        for column in ("rerank", "R@5", "R@10", "MRR", "search p50 / p95 ms", "load"):
            table.add_column(column, justify="right")
        for row in self.rows:
            table.add_row(
                str(row.rerank),
                f"{row.recall_at_5:.3f}",
                f"{row.recall_at_10:.3f}",
                f"{row.mrr:.3f}",
                f"{row.search.p50:.1f} / {row.search.p95:.1f}",
                f"{row.load_avg:.1f}",
            )
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "data": self.data,
            "conversations": self.conversations,
            "facts_saved": self.facts_saved,
            "rows": [asdict(r) for r in self.rows],
            "machine": self.machine,
            "seconds": self.seconds,
        }


def _depth(
    bank: MemoryBank,
    conversations: Sequence[Conversation],
    covered: dict[str, set[str]],
    rerank: int,
) -> DepthRow:
    """Every question searched with the judge re-reading the best ``rerank`` hits."""
    bank.retrieval = bank.retrieval.model_copy(update={"rerank": rerank})
    from_cold(bank)
    for conversation in conversations:  # untimed: open each user's scope once
        bank.search(conversation.sample_id, "warm up", limit=1)
    rows: list[tuple[float, float, float]] = []
    seconds: list[float] = []
    for conversation in conversations:
        user = conversation.sample_id
        for question in conversation.questions:
            gold = gold_of(question, covered[user]) if question.scored else ()
            if not gold:
                continue
            began = time.perf_counter()
            hits = bank.search(user, question.question, limit=SEARCH_LIMIT)
            seconds.append(time.perf_counter() - began)
            ranked = ranked_facts(hits)
            rows.append(
                (
                    fact_recall_at(ranked, gold, 5),
                    fact_recall_at(ranked, gold, 10),
                    fact_reciprocal_rank(ranked, gold),
                )
            )
    n = max(len(rows), 1)
    r5, r10, mrr = (sum(column) / n for column in zip(*rows, strict=True)) if rows else (0, 0, 0)
    return DepthRow(rerank, len(rows), r5, r10, mrr, Percentiles.of(seconds), os.getloadavg()[0])


def run_rerank_curve(
    data: Path,
    *,
    depths: Sequence[int] = DEPTHS,
    limit_conversations: int | None = None,
    console: Console | None = None,
) -> RerankReport:
    """Save the observations of the LoCoMo conversations at ``data`` once, then score search
    at each re-read depth in ``depths`` (each 0–50); ``limit_conversations`` keeps the first N."""
    if not depths or any(not 0 <= d <= 50 for d in depths):
        raise ValueError(
            f"depths must be between 0 and 50 (RetrievalSettings.rerank), got {depths}"
        )
    started = time.perf_counter()
    console = console or Console(stderr=True)
    conversations = load_conversations(data)[:limit_conversations]
    observations = load_observations(data)
    covered: dict[str, set[str]] = {}
    saved = 0
    with tempfile.TemporaryDirectory(prefix="rerank-") as tmp:
        with memorybank.open(f"sqlite:///{Path(tmp) / 'facts.db'}") as bank:
            for conversation in conversations:
                user = conversation.sample_id
                console.print(f"saving the facts of {user} …")
                done = save_observations(
                    bank, user, observations.get(user, []), _dates(conversation)
                )
                covered[user] = done.covered
                saved += done.saved
            rows = []
            for rerank in depths:
                console.print(f"searching with rerank={rerank} …")
                rows.append(_depth(bank, conversations, covered, rerank))
    return RerankReport(
        data=str(data),
        conversations=len(conversations),
        facts_saved=saved,
        rows=rows,
        seconds=time.perf_counter() - started,
    )


__all__ = ["DEPTHS", "DepthRow", "RerankReport", "run_rerank_curve"]
