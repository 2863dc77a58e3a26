"""Auto-recall on LoCoMo: how often the memory block for a question holds its evidence, and
what it costs when the question is asked of the wrong user.

Every conversation is ingested as ``bench locomo`` does (one user per conversation). Each
scored question is then given to :func:`memorybank.core.prompt.auto_recall` with a token budget
(500 by default), once as the message of its own user and once as a message of the next
conversation's user. Reported per cut-off (``min_relevance``):

* evidence recall: the share of a question's evidence turns whose line is in the block,
  averaged; and the share of questions with all of their evidence in it;
* tokens of the block, for the right user and for the wrong one (LoCoMo users have no
  always-loaded facts, so whatever the wrong user's block holds was recalled in vain), and the
  share of wrong-user blocks that are not empty;
* the latency of ``auto_recall`` (query embedding included).

``memorybank bench recall --data ../shared/data/locomo/locomo_dev.json``
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import memorybank
from memorybank.core.prompt import auto_recall
from memorybank.model import Caller, MemoryFilter, ScopeSet, Source
from memorybank.rules.quoted import facts_then_quotes
from memorybank.rules.ranking import RECALL_MIN_RELEVANCE
from memorybank.rules.render import sanitize_memory_text
from memorybank.rules.tokens import count_tokens
from memorybank_bench.locomo import Conversation, ingest, load_conversations

DEFAULT_BUDGET = 500
#: More stored chunks than a LoCoMo conversation has turns (the longest has under 700).
_MAX_TURNS = 100_000


@dataclass(frozen=True)
class RecallResult:
    """Auto-recall at one cut-off."""

    min_relevance: float
    evidence_recall: float
    all_evidence: float
    own_tokens: float
    other_tokens: float
    other_not_empty: float
    p50_ms: float
    p95_ms: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class RecallReport:
    """Auto-recall on a LoCoMo file, at each cut-off asked for."""

    data: str
    budget: int
    questions: int
    results: list[RecallResult]
    seconds: float

    def table(self) -> Table:
        """The report as a rich table."""
        table = Table(
            title=f"auto-recall on LoCoMo ({self.questions} questions, {self.budget} tokens)"
        )
        for column in (
            "min_relevance",
            "evidence in block",
            "all evidence",
            "tokens (right user)",
            "tokens (wrong user)",
            "wrong user not empty",
            "p50 / p95 ms",
        ):
            table.add_column(column)
        for r in self.results:
            table.add_row(
                f"{r.min_relevance:.2f}",
                f"{r.evidence_recall:.3f}",
                f"{r.all_evidence:.3f}",
                f"{r.own_tokens:.0f}",
                f"{r.other_tokens:.1f}",
                f"{r.other_not_empty:.3f}",
                f"{r.p50_ms:.1f} / {r.p95_ms:.1f}",
            )
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "data": self.data,
            "budget": self.budget,
            "questions": self.questions,
            "results": [r.as_dict() for r in self.results],
            "seconds": self.seconds,
        }


def _lines(bank: memorybank.MemoryBank, conversation: Conversation) -> dict[str, list[str]]:
    """Each turn's lines (one per stored chunk) as a memory block shows them: a stored turn
    is quoted with the day it was said (:func:`memorybank.rules.quoted.facts_then_quotes`),
    so the lines are read from the stored turns, as the block reads them."""
    stored = bank.store.list_memories(
        ScopeSet(user_id=conversation.sample_id),
        MemoryFilter(source=(Source.CONVERSATION,)),
        limit=_MAX_TURNS,
    )
    lines: dict[str, list[str]] = {}
    for memory in stored:
        dia_id = memory.metadata.get("dia_id")
        for quote in facts_then_quotes([memory], said_by=conversation.sample_id):
            if isinstance(dia_id, str):
                lines.setdefault(dia_id, []).append(f"- {sanitize_memory_text(quote.content)}\n")
    return lines


def measure(
    bank: memorybank.MemoryBank,
    conversations: Sequence[Conversation],
    budget: int,
    min_relevance: float,
) -> RecallResult:
    """Every scored question, of its own user and of the next conversation's."""
    recalls, complete, own_tokens, other_tokens, not_empty, seconds = [], [], [], [], [], []
    for index, conversation in enumerate(conversations):
        lines = _lines(bank, conversation)
        other = Caller(user_id=conversations[(index + 1) % len(conversations)].sample_id)
        own = Caller(user_id=conversation.sample_id)
        for question in (q for q in conversation.questions if q.scored):
            started = time.perf_counter()
            block = auto_recall(bank, own, question.question, budget, min_relevance=min_relevance)
            seconds.append(time.perf_counter() - started)
            found = [
                any(line in block for line in lines[e]) for e in question.evidence if e in lines
            ]
            recalls.append(float(np.mean(found)) if found else 0.0)
            complete.append(float(bool(found) and all(found)))
            own_tokens.append(count_tokens(block))
            wrong = auto_recall(bank, other, question.question, budget, min_relevance=min_relevance)
            other_tokens.append(count_tokens(wrong))
            not_empty.append(float(bool(wrong)))
    ms = np.array(seconds) * 1000
    return RecallResult(
        min_relevance=min_relevance,
        evidence_recall=float(np.mean(recalls)),
        all_evidence=float(np.mean(complete)),
        own_tokens=float(np.mean(own_tokens)),
        other_tokens=float(np.mean(other_tokens)),
        other_not_empty=float(np.mean(not_empty)),
        p50_ms=float(np.percentile(ms, 50)),
        p95_ms=float(np.percentile(ms, 95)),
    )


def run_recall(
    data: Path,
    *,
    budget: int = DEFAULT_BUDGET,
    cutoffs: Sequence[float] = (0.0, RECALL_MIN_RELEVANCE),
    console: Console | None = None,
) -> RecallReport:
    """Ingest LoCoMo at ``data`` into a fresh bank and measure auto-recall at each cut-off
    (0 fills the budget with the best hits whatever their relevance)."""
    started = time.perf_counter()
    console = console or Console(stderr=True)
    conversations = load_conversations(data)
    with tempfile.TemporaryDirectory(prefix="recall-") as tmp:
        with memorybank.open(f"sqlite:///{Path(tmp) / 'locomo.db'}") as bank:
            ingest(bank, conversations, console)
            for conversation in conversations:  # untimed: load caches once per user
                auto_recall(bank, Caller(user_id=conversation.sample_id), "warm up", budget)
            results = [measure(bank, conversations, budget, c) for c in cutoffs]
    questions = sum(q.scored for c in conversations for q in c.questions)
    return RecallReport(str(data), budget, questions, results, time.perf_counter() - started)


__all__ = ["DEFAULT_BUDGET", "RecallReport", "RecallResult", "measure", "run_recall"]
