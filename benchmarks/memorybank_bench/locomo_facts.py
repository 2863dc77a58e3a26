"""The product path on LoCoMo: its observations saved as facts, one by one, as a memory tool
saves them; then every question searched, and its prompt block built, as the model gets it.

The fact protocol (the data folder's README, "Fact protocol"):

* every conversation is one user; every observation of 10–500 characters
  (``session_N_observation``: a fact and the dialogue id(s) it comes from) is saved through
  :meth:`~memorybank.MemoryBank.save` one at a time, as a tool would: no category (the bank
  infers it), importance scored, duplicates judged; dated with its session's date, its
  dialogue ids in ``metadata["dia_ids"]``. Facts refused as duplicates, or as invalid, are
  counted (their ids are then missing);
* every question of categories 1–4 is scored on its *gold* ids: its evidence ids that some
  observation covers (questions with none are left out);
* search recall@k: the share of gold ids covered by the top k facts of
  ``search(user, question, limit=10)``; MRR: 1/rank of the first fact covering a gold id;
* prompt-block recall: the share of gold ids whose fact line (the stored text, sanitised as
  the block shows it) is in ``auto_recall(bank, Caller(user_id=user), question, 500)``;
* latency p50/p95 of the save, the search and the block.

``memorybank bench facts --data ../shared/data/locomo/locomo_dev.json [--json facts.json]``

>>> report = run_facts(Path("locomo_dev.json"), limit_conversations=1)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import memorybank
from memorybank.core.bank import MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.errors import ValidationError
from memorybank.model import Caller, SearchHit
from memorybank.rules.render import sanitize_memory_text
from memorybank_bench.locomo import (
    _SESSION_KEY,
    CATEGORY_NAMES,
    Conversation,
    Latency,
    Question,
    _files,
    _progress,
    load_conversations,
    parse_evidence,
)

#: Token budget of the prompt block, as the README's protocol sets it.
DEFAULT_BUDGET = 500
#: How many facts ``search`` returns per question.
SEARCH_LIMIT = 10
#: The shortest and the longest observation saved, in characters.
MIN_CHARS, MAX_CHARS = 10, 500


@dataclass(frozen=True)
class Observation:
    """One LoCoMo observation: a fact a reader takes from a session, and its turns."""

    text: str
    dia_ids: tuple[str, ...]
    session: int
    speaker: str


def _ids_of(raw: Any) -> tuple[str, ...]:
    """The canonical dialogue ids of an observation's id field (a string or a list)."""
    entries = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    found = [dia for entry in entries if isinstance(entry, str) for dia in parse_evidence(entry)]
    return tuple(dict.fromkeys(found))


def _observations_of(sample: Mapping[str, Any]) -> list[Observation]:
    """A sample's observations, sessions in order, speakers in file order."""
    sessions: list[tuple[int, Any]] = []
    for key, value in (sample.get("observation") or {}).items():
        match = _SESSION_KEY.match(key)
        if match and isinstance(value, dict):
            sessions.append((int(match.group(1)), value))
    found: list[Observation] = []
    for number, by_speaker in sorted(sessions, key=lambda item: item[0]):
        for speaker, entries in by_speaker.items():
            for entry in entries or ():
                if isinstance(entry, list) and entry and isinstance(entry[0], str):
                    ids = _ids_of(entry[1] if len(entry) > 1 else None)
                    found.append(Observation(entry[0], ids, number, str(speaker)))
    return found


def load_observations(path: Path | str) -> dict[str, list[Observation]]:
    """The observations of each conversation (by ``sample_id``) of a LoCoMo file or folder."""
    observations: dict[str, list[Observation]] = {}
    for file in _files(Path(path)):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{file} is not valid JSON: {exc}", field="data") from exc
        for sample in data if isinstance(data, list) else [data]:
            if not isinstance(sample, dict) or "sample_id" not in sample:
                raise ValidationError("not a LoCoMo sample: no sample_id", field="data")
            observations[str(sample["sample_id"])] = _observations_of(sample)
    return observations


def gold_of(question: Question, covered: set[str]) -> tuple[str, ...]:
    """The question's evidence ids that some observation covers."""
    return tuple(dia for dia in question.evidence if dia in covered)


def fact_recall_at(ranked: Sequence[frozenset[str]], gold: Sequence[str], k: int) -> float:
    """Share of ``gold`` ids covered by the first ``k`` facts (each a set of dialogue ids).

    >>> fact_recall_at([frozenset({"D1:1", "D1:2"}), frozenset({"D2:1"})], ["D1:2", "D2:1"], 1)
    0.5
    """
    if not gold:
        return 0.0
    top = set().union(*ranked[:k]) if ranked[:k] else set()
    return sum(dia in top for dia in gold) / len(gold)


def fact_reciprocal_rank(ranked: Sequence[frozenset[str]], gold: Sequence[str]) -> float:
    """1/rank of the first fact covering a gold id; 0 when none does.

    >>> fact_reciprocal_rank([frozenset({"D1:1"}), frozenset({"D2:1"})], ["D2:1"])
    0.5
    """
    wanted = set(gold)
    for rank, ids in enumerate(ranked, start=1):
        if ids & wanted:
            return 1.0 / rank
    return 0.0


def ranked_facts(hits: Sequence[SearchHit]) -> list[frozenset[str]]:
    """The dialogue ids of each distinct fact among ``hits``, in rank order."""
    seen: set[str] = set()
    ranked: list[frozenset[str]] = []
    for hit in hits:
        if hit.memory.id in seen:
            continue
        seen.add(hit.memory.id)
        ids = hit.memory.metadata.get("dia_ids") or ()
        ranked.append(frozenset(str(dia) for dia in ids))
    return ranked


@dataclass(frozen=True)
class FactScores:
    """Mean scores over one group of questions."""

    questions: int
    recall_at_5: float
    recall_at_10: float
    mrr: float
    block_recall: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class _Tally:
    rows: list[tuple[float, float, float, float]] = field(default_factory=list)

    def scores(self) -> FactScores:
        n = len(self.rows)
        if not n:
            return FactScores(0, 0.0, 0.0, 0.0, 0.0)
        sums = [sum(column) / n for column in zip(*self.rows, strict=True)]
        return FactScores(n, *sums)


def _ms(latency: Latency) -> dict[str, float | int]:
    return {"p50": latency.p50, "p95": latency.p95, "mean": latency.mean, "count": latency.count}


@dataclass
class FactsReport:
    """What the product path makes of LoCoMo's observations: facts kept, found, shown."""

    data: str
    budget: int
    conversations: int
    observations: int
    saved: int
    refused_duplicate: int
    refused_invalid: int
    skipped_length: int
    questions: int
    overall: FactScores
    per_category: dict[str, FactScores]
    save: Latency
    search: Latency
    block: Latency
    refusals: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def table(self) -> Table:
        """Scores per category and overall, with the counts and latencies in the caption."""
        table = Table(
            title="memorybank on LoCoMo observations saved as facts (the product path)",
            caption=(
                f"{self.conversations} conversations, {self.observations:,} observations: "
                f"{self.saved:,} saved, {self.refused_duplicate} refused as duplicates, "
                f"{self.refused_invalid} as invalid, {self.skipped_length} outside "
                f"{MIN_CHARS}–{MAX_CHARS} characters; {self.questions} questions with covered "
                f"gold; block = auto_recall at {self.budget} tokens. Latency p50/p95 ms: save "
                f"{self.save.p50:.1f}/{self.save.p95:.1f}, search {self.search.p50:.1f}/"
                f"{self.search.p95:.1f}, block {self.block.p50:.1f}/{self.block.p95:.1f}"
            ),
        )
        for column in ("category", "questions", "R@5", "R@10", "MRR", "block recall"):
            table.add_column(column, justify="left" if column == "category" else "right")
        rows = [(name, s) for name, s in self.per_category.items() if s.questions]
        for name, scores in [*rows, ("overall", self.overall)]:
            table.add_row(
                name,
                str(scores.questions),
                f"{scores.recall_at_5:.3f}",
                f"{scores.recall_at_10:.3f}",
                f"{scores.mrr:.3f}",
                f"{scores.block_recall:.3f}",
            )
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""
        return {
            "data": self.data,
            "budget": self.budget,
            "counts": {
                "conversations": self.conversations,
                "observations": self.observations,
                "saved": self.saved,
                "refused_duplicate": self.refused_duplicate,
                "refused_invalid": self.refused_invalid,
                "skipped_length": self.skipped_length,
                "questions": self.questions,
            },
            "overall": self.overall.as_dict(),
            "per_category": {name: s.as_dict() for name, s in self.per_category.items()},
            "latency_ms": {
                "save": _ms(self.save),
                "search": _ms(self.search),
                "block": _ms(self.block),
            },
            "refused": self.refusals,
            "seconds": self.seconds,
        }


@dataclass
class _Saved:
    """What saving one conversation's observations left in the bank."""

    lines: dict[str, list[str]] = field(default_factory=dict)  # dia_id -> block lines
    covered: set[str] = field(default_factory=set)  # ids of every observation in scope
    saved: int = 0
    duplicate: int = 0
    invalid: int = 0
    skipped: int = 0
    seconds: list[float] = field(default_factory=list)
    refusals: list[dict[str, str]] = field(default_factory=list)  # kind, fact, why


def save_observations(
    bank: MemoryBank,
    user_id: str,
    observations: Sequence[Observation],
    dates: Mapping[int, datetime | None],
) -> _Saved:
    """Save each observation of 10–500 characters as a tool would, one call each."""
    out = _Saved()
    for obs in observations:
        if not MIN_CHARS <= len(obs.text) <= MAX_CHARS:
            out.skipped += 1
            continue
        out.covered.update(obs.dia_ids)
        started = time.perf_counter()
        try:
            result = bank.save(
                user_id,
                obs.text,
                occurred_at=dates.get(obs.session),
                metadata={"dia_ids": list(obs.dia_ids)},
            )
        except ValidationError as exc:
            out.invalid += 1
            out.refusals.append({"kind": "invalid", "fact": obs.text, "why": str(exc)})
            continue
        finally:
            out.seconds.append(time.perf_counter() - started)
        if result.duplicate or not result.success:
            out.duplicate += 1
            why = f"duplicate of {result.existing_content!r}"
            out.refusals.append({"kind": "duplicate", "fact": obs.text, "why": why})
            continue
        out.saved += 1
        # Its text, not its whole line: a fact a newer one may update is shown on that one's
        # line ("(may update an earlier note: …)"), and that line carries the note.
        line = sanitize_memory_text(result.content)
        for dia in obs.dia_ids:
            out.lines.setdefault(dia, []).append(line)
    return out


def run_facts(
    data: Path,
    *,
    limit_conversations: int | None = None,
    max_sessions: int | None = None,
    budget: int = DEFAULT_BUDGET,
    console: Console | None = None,
) -> FactsReport:
    """Save the observations of the LoCoMo conversations at ``data`` into a fresh bank and
    score search and the prompt block for every question with covered gold.

    ``limit_conversations`` keeps the first N conversations; ``max_sessions`` keeps the
    observations of each conversation's first N sessions (gold shrinks with them).
    """
    started = time.perf_counter()
    console = console or Console(stderr=True)
    conversations = load_conversations(data)[:limit_conversations]
    observations = load_observations(data)
    kept = {
        c.sample_id: [
            o
            for o in observations.get(c.sample_id, [])
            if max_sessions is None or o.session <= max_sessions
        ]
        for c in conversations
    }
    overall, by_category = _Tally(), {c: _Tally() for c in CATEGORY_NAMES}
    saves: list[float] = []
    searches: list[float] = []
    blocks: list[float] = []
    totals = _Saved()
    with tempfile.TemporaryDirectory(prefix="facts-") as tmp:
        with memorybank.open(f"sqlite:///{Path(tmp) / 'facts.db'}") as bank:
            with _progress(console) as progress:
                task = progress.add_task("saving facts", total=sum(map(len, kept.values())))
                saved: dict[str, _Saved] = {}
                for conversation in conversations:
                    mine = kept[conversation.sample_id]
                    saved[conversation.sample_id] = result = save_observations(
                        bank, conversation.sample_id, mine, _dates(conversation)
                    )
                    progress.update(task, advance=len(mine))
                    saves += result.seconds
                    totals.saved += result.saved
                    totals.duplicate += result.duplicate
                    totals.invalid += result.invalid
                    totals.skipped += result.skipped
                    totals.refusals += result.refusals
            for conversation in conversations:  # untimed: load caches once per user
                caller = Caller(user_id=conversation.sample_id)
                bank.search(conversation.sample_id, "warm up", limit=1)
                auto_recall(bank, caller, "warm up", budget)
            for conversation in conversations:
                user = conversation.sample_id
                state = saved[user]
                for question in conversation.questions:
                    gold = gold_of(question, state.covered) if question.scored else ()
                    if not gold:
                        continue
                    began = time.perf_counter()
                    hits = bank.search(user, question.question, limit=SEARCH_LIMIT)
                    searches.append(time.perf_counter() - began)
                    began = time.perf_counter()
                    block = auto_recall(bank, Caller(user_id=user), question.question, budget)
                    blocks.append(time.perf_counter() - began)
                    ranked = ranked_facts(hits)
                    shown = [any(line in block for line in state.lines.get(g, ())) for g in gold]
                    row = (
                        fact_recall_at(ranked, gold, 5),
                        fact_recall_at(ranked, gold, 10),
                        fact_reciprocal_rank(ranked, gold),
                        sum(shown) / len(gold),
                    )
                    overall.rows.append(row)
                    by_category[question.category].rows.append(row)
    return FactsReport(
        data=str(data),
        budget=budget,
        conversations=len(conversations),
        observations=sum(map(len, kept.values())),
        saved=totals.saved,
        refused_duplicate=totals.duplicate,
        refused_invalid=totals.invalid,
        skipped_length=totals.skipped,
        questions=len(overall.rows),
        overall=overall.scores(),
        per_category={CATEGORY_NAMES[c]: t.scores() for c, t in by_category.items()},
        save=Latency.of(saves),
        search=Latency.of(searches),
        block=Latency.of(blocks),
        refusals=totals.refusals,
        seconds=time.perf_counter() - started,
    )


def _dates(conversation: Conversation) -> dict[int, datetime | None]:
    """Each session's date, from the loaded turns."""
    return {turn.session: turn.occurred_at for turn in conversation.turns}


__all__ = [
    "DEFAULT_BUDGET",
    "FactScores",
    "FactsReport",
    "Observation",
    "fact_reciprocal_rank",
    "fact_recall_at",
    "gold_of",
    "load_observations",
    "ranked_facts",
    "run_facts",
    "save_observations",
]
