"""LoCoMo retrieval benchmark: how well ``search`` finds the turns that answer a question.

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", Maharana et al.,
ACL 2024) holds long conversations between two people, with questions whose answers are
grounded in annotated turns (``evidence``: dialogue ids such as ``D3:12``). The protocol
(see the data folder's README):

* every conversation is one user; each turn is saved as an episodic conversation memory
  (``"<speaker>: <text>"`` plus the shared image's caption), dated with its session's date and
  keeping its ``dia_id`` in metadata, in one :meth:`~memorybank.MemoryBank.save_many` call;
* every question of categories 1–4 with evidence is searched with its own text;
  recall@k is the share of its evidence turns among the top k distinct turns found, MRR the
  mean reciprocal rank of the first evidence turn.

Only the public API is used: :func:`memorybank.open`, ``save_many`` and ``search``.

>>> report = run_locomo(Path("locomo_dev.json"), ablate=True)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import json
import math
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

import memorybank
from memorybank.core.bank import MemoryBank
from memorybank.errors import ConfigurationError, ValidationError
from memorybank.model import SearchHit
from memorybank.rules.ranking import RetrievalSettings

#: LoCoMo question categories scored by the benchmark (5, adversarial, is left out).
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
ADVERSARIAL = 5
DEFAULT_KS: tuple[int, ...] = (1, 5, 10)

_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")
_SESSION_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})",
    re.IGNORECASE,
)
_MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
}

# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation."""

    dia_id: str
    speaker: str
    text: str
    session: int
    occurred_at: datetime | None
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The memory text: ``"<speaker>: <text>"`` plus the shared image's caption."""
        caption = f" [shares an image: {self.blip_caption}]" if self.blip_caption else ""
        return f"{self.speaker}: {self.text}{caption}"

    def as_item(self, bare: bool = False) -> dict[str, Any]:
        """The ``save_many`` item for this turn: an episodic conversation memory. ``bare``
        leaves out the session and speaker (an app that keeps no threads)."""
        if bare:
            return {
                "content": self.content,
                "ring": "episodic",
                "source": "conversation",
                "category": "context",
                "occurred_at": self.occurred_at,
                "metadata": {"dia_id": self.dia_id},
            }
        return {
            "content": self.content,
            "ring": "episodic",
            "source": "conversation",
            "category": "context",
            "occurred_at": self.occurred_at,
            "metadata": {"dia_id": self.dia_id, "session": self.session, "speaker": self.speaker},
            "session_id": f"session_{self.session}",
        }


@dataclass(frozen=True)
class Question:
    """One LoCoMo question with its canonical evidence dialogue ids."""

    question: str
    category: int
    evidence: tuple[str, ...]

    @property
    def scored(self) -> bool:
        """Whether the benchmark scores it: categories 1–4 with some evidence."""
        return self.category in CATEGORY_NAMES and bool(self.evidence)


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: its turns in order and its questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def parse_evidence(entry: str) -> list[str]:
    """Every ``D<n>:<m>`` in one evidence string, canonical (no leading zeros).

    >>> parse_evidence("D8:6; D9:17"), parse_evidence("D:11:26"), parse_evidence("D30:05")
    (['D8:6', 'D9:17'], ['D11:26'], ['D30:5'])
    """
    return [f"D{int(n)}:{int(m)}" for n, m in _EVIDENCE.findall(entry)]


def _evidence_of(entries: Sequence[Any]) -> tuple[str, ...]:
    """The distinct canonical dialogue ids of a question's evidence list, in order."""
    found = [dia for entry in entries if isinstance(entry, str) for dia in parse_evidence(entry)]
    return tuple(dict.fromkeys(found))


def parse_session_date(text: str) -> datetime:
    """A LoCoMo session date such as ``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime.

    >>> parse_session_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    """
    match = _SESSION_DATE.search(text)
    month = _MONTHS.get(match.group(5).lower()) if match else None
    if match is None or month is None:
        raise ValidationError(f"session date {text!r} is not understood", field="data")
    hour = int(match.group(1)) % 12 + (12 if match.group(3).lower().startswith("p") else 0)
    return datetime(
        int(match.group(6)), month, int(match.group(4)), hour, int(match.group(2)), tzinfo=UTC
    )


def _sessions(conversation: Mapping[str, Any]) -> list[int]:
    """The session numbers of a ``conversation`` object, in order."""
    numbers = []
    for key, value in conversation.items():
        match = _SESSION_KEY.fullmatch(key)
        if match and isinstance(value, list):
            numbers.append(int(match.group(1)))
    return sorted(numbers)


def _turns(conversation: Mapping[str, Any]) -> tuple[Turn, ...]:
    """Every turn of every session, sessions in order."""
    turns: list[Turn] = []
    for number in _sessions(conversation):
        date = conversation.get(f"session_{number}_date_time")
        occurred = parse_session_date(date) if isinstance(date, str) else None
        for raw in conversation[f"session_{number}"]:
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    speaker=str(raw["speaker"]),
                    text=str(raw.get("text", "")),
                    session=number,
                    occurred_at=occurred,
                    blip_caption=raw.get("blip_caption") or None,
                )
            )
    return tuple(turns)


def _conversation(sample: Mapping[str, Any]) -> Conversation:
    """One sample of a LoCoMo file as a :class:`Conversation`."""
    try:
        questions = tuple(
            Question(str(q["question"]), int(q["category"]), _evidence_of(q.get("evidence") or ()))
            for q in sample.get("qa", ())
        )
        return Conversation(str(sample["sample_id"]), _turns(sample["conversation"]), questions)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            raise
        raise ValidationError(f"not a LoCoMo sample: {exc!r}", field="data") from exc


def _files(path: Path) -> list[Path]:
    """``path`` itself, or the ``*.json`` files of the folder ``path``, sorted."""
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise ValidationError(f"no *.json LoCoMo files in {path}", field="data")
        return files
    if not path.is_file():
        raise ValidationError(f"no LoCoMo data at {path}", field="data")
    return [path]


def load_conversations(path: Path | str) -> list[Conversation]:
    """The conversations of a LoCoMo JSON file, or of every ``*.json`` file in a folder."""
    conversations: list[Conversation] = []
    for file in _files(Path(path)):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{file} is not valid JSON: {exc}", field="data") from exc
        samples = data if isinstance(data, list) else [data]
        conversations += [_conversation(sample) for sample in samples]
    return conversations


# --------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------


def distinct_dia_ids(hits: Sequence[SearchHit]) -> list[str]:
    """The dialogue ids of ``hits`` in rank order, each once (chunks of a turn count once)."""
    ids = (hit.memory.metadata.get("dia_id") for hit in hits)
    return list(dict.fromkeys(str(dia) for dia in ids if dia is not None))


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """Share of ``evidence`` among the first ``k`` of ``ranked``."""
    if not evidence:
        return 0.0
    top = set(ranked[:k])
    return sum(dia in top for dia in evidence) / len(evidence)


def reciprocal_rank(ranked: Sequence[str], evidence: Sequence[str]) -> float:
    """1/rank of the first evidence id in ``ranked``; 0 when none is there."""
    wanted = set(evidence)
    for rank, dia in enumerate(ranked, start=1):
        if dia in wanted:
            return 1.0 / rank
    return 0.0


@dataclass(frozen=True)
class Latency:
    """p50/p95/mean of a latency sample, in milliseconds."""

    p50: float
    p95: float
    mean: float
    count: int

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        """Percentiles of durations given in seconds."""
        if not seconds:
            return cls(math.nan, math.nan, math.nan, 0)
        ms = np.asarray(seconds, dtype=np.float64) * 1000.0
        p50, p95 = (float(v) for v in np.percentile(ms, [50, 95]))
        return cls(p50, p95, float(ms.mean()), len(ms))


@dataclass
class VariantResult:
    """Scores of one retrieval configuration over the question set."""

    name: str
    vector_weight: float
    text_weight: float
    recall: dict[int, float]
    mrr: float
    per_category: dict[str, float]
    category_counts: dict[str, int]
    search: Latency

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "name": self.name,
            "vector_weight": self.vector_weight,
            "text_weight": self.text_weight,
            "recall": {str(k): v for k, v in self.recall.items()},
            "mrr": self.mrr,
            "per_category_recall": self.per_category,
            "per_category_questions": self.category_counts,
            "search_ms": {
                "p50": self.search.p50,
                "p95": self.search.p95,
                "mean": self.search.mean,
                "count": self.search.count,
            },
        }


@dataclass
class _Tally:
    """Running sums of one variant's scores."""

    ks: tuple[int, ...]
    recall: dict[int, float] = field(default_factory=dict)
    rr: float = 0.0
    count: int = 0
    by_category: dict[int, list[float]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, question: Question, ranked: Sequence[str], seconds: float) -> None:
        """Score one question's ranking."""
        for k in self.ks:
            self.recall[k] = self.recall.get(k, 0.0) + recall_at(ranked, question.evidence, k)
        self.rr += reciprocal_rank(ranked, question.evidence)
        self.count += 1
        at_max = recall_at(ranked, question.evidence, max(self.ks))
        self.by_category.setdefault(question.category, []).append(at_max)
        self.seconds.append(seconds)

    def result(self, name: str, settings: RetrievalSettings) -> VariantResult:
        """The averaged scores."""
        n = max(self.count, 1)
        categories = sorted(self.by_category)
        return VariantResult(
            name=name,
            vector_weight=settings.vector_weight,
            text_weight=settings.text_weight,
            recall={k: self.recall.get(k, 0.0) / n for k in self.ks},
            mrr=self.rr / n,
            per_category={
                CATEGORY_NAMES[c]: sum(self.by_category[c]) / len(self.by_category[c])
                for c in categories
            },
            category_counts={CATEGORY_NAMES[c]: len(self.by_category[c]) for c in categories},
            search=Latency.of(self.seconds),
        )


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


@dataclass
class LocomoReport:
    """Counts, ingest rate and the scores of each retrieval variant."""

    data: str
    ks: tuple[int, ...]
    conversations: int
    turns: int
    memories: int
    questions: int
    scored: int
    skipped_adversarial: int
    skipped_no_evidence: int
    ingest_seconds: float
    variants: list[VariantResult]
    settings: dict[str, Any]
    seconds: float = 0.0

    @property
    def ingest_turns_per_s(self) -> float:
        """Turns saved per second, embedding included."""
        return self.turns / self.ingest_seconds if self.ingest_seconds > 0 else 0.0

    def variant(self, name: str) -> VariantResult:
        """The result of the variant called ``name``."""
        for result in self.variants:
            if result.name == name:
                return result
        raise KeyError(name)

    def table(self) -> Table:
        """The scores as a rich table, one row per variant."""
        top = max(self.ks)
        table = Table(
            title="memorybank on LoCoMo (retrieval)",
            caption=(
                f"{self.conversations} conversations, {self.turns:,} turns "
                f"({self.memories:,} memories), {self.scored:,} questions scored "
                f"of {self.questions:,} in categories 1–4; ingest "
                f"{self.ingest_turns_per_s:,.0f} turns/s; per-category columns are R@{top}"
            ),
        )
        table.add_column("variant")
        for k in self.ks:
            table.add_column(f"R@{k}", justify="right")
        table.add_column("MRR", justify="right")
        for name in CATEGORY_NAMES.values():
            table.add_column(name, justify="right")
        table.add_column("search p50 ms", justify="right")
        table.add_column("search p95 ms", justify="right")
        for result in self.variants:
            table.add_row(*_row(result, self.ks))
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""
        return {
            "data": self.data,
            "ks": list(self.ks),
            "counts": {
                "conversations": self.conversations,
                "turns": self.turns,
                "memories": self.memories,
                "questions": self.questions,
                "scored": self.scored,
                "skipped_adversarial": self.skipped_adversarial,
                "skipped_no_evidence": self.skipped_no_evidence,
            },
            "ingest": {
                "seconds": self.ingest_seconds,
                "turns_per_s": self.ingest_turns_per_s,
            },
            "variants": [result.as_dict() for result in self.variants],
            "settings": self.settings,
            "seconds": self.seconds,
        }

    def chart(self, path: Path | str) -> Path:
        """Write a PNG bar chart of R@k (and MRR) per variant; needs matplotlib."""
        plt = _pyplot()
        labels = [f"R@{k}" for k in self.ks] + ["MRR"]
        width = 0.8 / max(len(self.variants), 1)
        middle = (len(self.variants) - 1) / 2
        figure, axes = plt.subplots(figsize=(2 + 1.6 * len(labels), 4.5))
        try:
            for index, result in enumerate(self.variants):
                values = [result.recall[k] for k in self.ks] + [result.mrr]
                xs = [i + (index - middle) * width for i in range(len(labels))]
                bars = axes.bar(xs, values, width, label=result.name)
                axes.bar_label(bars, fmt="%.2f", fontsize=8)
            axes.set_xticks(range(len(labels)), labels)
            axes.set_ylim(0, 1)
            axes.set_ylabel("score")
            axes.set_title(f"LoCoMo retrieval ({self.scored} questions)")
            axes.legend()
            figure.tight_layout()
            figure.savefig(Path(path), dpi=120)
        finally:
            plt.close(figure)
        return Path(path)


def _row(result: VariantResult, ks: Sequence[int]) -> list[str]:
    """One table row: recall@k, MRR, per-category recall and search latency."""
    cells = [result.name] + [f"{result.recall[k]:.3f}" for k in ks] + [f"{result.mrr:.3f}"]
    cells += [
        f"{result.per_category[name]:.3f}" if name in result.per_category else "–"
        for name in CATEGORY_NAMES.values()
    ]
    return cells + [f"{result.search.p50:.1f}", f"{result.search.p95:.1f}"]


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend, or a clear error."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:
        raise ConfigurationError("install matplotlib for --chart") from exc


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def ingest(
    bank: MemoryBank, conversations: Sequence[Conversation], console: Console, bare: bool = False
) -> float:
    """Save every turn, one ``save_many`` per conversation (each conversation is one user);
    ``bare``: without session and speaker (see :meth:`Turn.as_item`).

    Returns the wall time spent in those calls, embedding included, in seconds.
    """
    seconds = 0.0
    with _progress(console) as progress:
        task = progress.add_task("ingesting turns", total=sum(len(c.turns) for c in conversations))
        for conversation in conversations:
            items = [turn.as_item(bare) for turn in conversation.turns]
            started = time.perf_counter()
            bank.save_many(conversation.sample_id, items)
            seconds += time.perf_counter() - started
            progress.update(task, advance=len(items))
    return seconds


def _scored(conversations: Sequence[Conversation]) -> list[tuple[str, Question]]:
    """Every scored question with the user it belongs to."""
    return [(c.sample_id, q) for c in conversations for q in c.questions if q.scored]


def evaluate(
    bank: MemoryBank,
    questions: Sequence[tuple[str, Question]],
    ks: tuple[int, ...],
    name: str,
    console: Console,
) -> VariantResult:
    """Search every question with the bank's current retrieval settings and score it."""
    tally = _Tally(ks)
    with _progress(console) as progress:
        task = progress.add_task(f"searching ({name})", total=len(questions))
        for user_id, question in questions:
            started = time.perf_counter()
            hits = bank.search(user_id, question.question, limit=max(ks))
            tally.add(question, distinct_dia_ids(hits), time.perf_counter() - started)
            progress.update(task, advance=1)
    return tally.result(name, bank.retrieval)


def variants(base: RetrievalSettings, ablate: bool) -> list[tuple[str, RetrievalSettings]]:
    """The retrieval settings to score: the base one; or vector-only, BM25-only, plain (both
    signals without the neighbour, speaker and time steps) and base."""
    if not ablate:
        return [("fused", base)]
    plain = {"neighbour_weight": 0.0, "speaker_weight": 0.0, "time_weight": 0.0}
    return [
        ("vector-only", base.model_copy(update={"text_weight": 0.0})),
        ("bm25-only", base.model_copy(update={"vector_weight": 0.0})),
        ("plain", base.model_copy(update=plain)),
        ("fused", base),
    ]


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    clean = tuple(sorted({int(k) for k in ks}))
    if not clean or clean[0] < 1 or clean[-1] > 1000:
        raise ValidationError(f"k values {list(ks)} must be between 1 and 1000", field="k")
    return clean


@contextmanager
def _workdir(workdir: Path | None) -> Iterator[Path]:
    """``workdir`` (created if needed), or a temporary directory removed afterwards."""
    if workdir is not None:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        yield Path(tmp)


def _fresh_database(workdir: Path) -> Path:
    """``workdir/locomo.db``, with any copy left by an earlier run removed."""
    path = workdir / "locomo.db"
    for leftover in (path, path.with_name("locomo.db-wal"), path.with_name("locomo.db-shm")):
        leftover.unlink(missing_ok=True)
    return path


def _warm_up(bank: MemoryBank, conversations: Sequence[Conversation]) -> None:
    """One untimed search per user, so the first variant does not pay for loading caches."""
    for conversation in conversations:
        bank.search(conversation.sample_id, "warm up", limit=1)


def run_locomo(
    data: Path,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    ablate: bool = False,
    workdir: Path | None = None,
    retrieval: RetrievalSettings | None = None,
    console: Console | None = None,
    bare: bool = False,
) -> LocomoReport:
    """Ingest the LoCoMo conversations at ``data`` (a file or a folder of ``*.json``) into a
    fresh bank and score retrieval for every question of categories 1–4 with evidence.

    With ``ablate``, the same questions are also scored with vector-only and BM25-only
    relevance. The bank lives in ``workdir/locomo.db`` (default: a temporary directory).
    With ``bare``, turns are saved without session and speaker (:meth:`Turn.as_item`).
    """
    started = time.perf_counter()
    ks = _check_ks(ks)
    console = console or Console(stderr=True)
    conversations = load_conversations(data)
    extra: dict[str, Any] = {} if retrieval is None else {"retrieval": retrieval}
    with _workdir(workdir) as folder:
        url = f"sqlite:///{_fresh_database(folder)}"
        with memorybank.open(url, **extra) as bank:
            ingest_seconds = ingest(bank, conversations, console, bare)
            memories = sum(bank.count(c.sample_id) for c in conversations)
            base = bank.retrieval
            questions = _scored(conversations)
            _warm_up(bank, conversations)
            results = []
            try:
                for name, settings in variants(base, ablate):
                    bank.retrieval = settings
                    results.append(evaluate(bank, questions, ks, name, console))
            finally:
                bank.retrieval = base
    return _report(data, ks, conversations, memories, ingest_seconds, results, base, started)


def _report(
    data: Path,
    ks: tuple[int, ...],
    conversations: Sequence[Conversation],
    memories: int,
    ingest_seconds: float,
    results: list[VariantResult],
    base: RetrievalSettings,
    started: float,
) -> LocomoReport:
    """Assemble the report with the question counts."""
    everything = [q for c in conversations for q in c.questions]
    in_scope = [q for q in everything if q.category in CATEGORY_NAMES]
    return LocomoReport(
        data=str(data),
        ks=ks,
        conversations=len(conversations),
        turns=sum(len(c.turns) for c in conversations),
        memories=memories,
        questions=len(in_scope),
        scored=sum(q.scored for q in in_scope),
        skipped_adversarial=sum(q.category == ADVERSARIAL for q in everything),
        skipped_no_evidence=sum(not q.evidence for q in in_scope),
        ingest_seconds=ingest_seconds,
        variants=results,
        settings=base.model_dump(),
        seconds=time.perf_counter() - started,
    )


__all__ = [
    "CATEGORY_NAMES",
    "Conversation",
    "Latency",
    "LocomoReport",
    "Question",
    "Turn",
    "VariantResult",
    "distinct_dia_ids",
    "evaluate",
    "ingest",
    "load_conversations",
    "parse_evidence",
    "parse_session_date",
    "reciprocal_rank",
    "recall_at",
    "run_locomo",
    "variants",
]
