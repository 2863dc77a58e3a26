"""Fit :data:`memorybank.rules.ranking.RANKING`, the one function that orders a search and
says how sure each hit is to be relevant, and say how well it holds up where it was not fitted.

Each question is asked of the user it belongs to and of another user who has none of its
answer; every candidate the search ranks is one row: what :class:`~memorybank.rules.ranking.Ranking`
weighs (:func:`~memorybank.rules.ranking.features`) and whether it is relevant. Sources:

* fitted on, the project's own data (``benchmarks/data``): ``profiles`` (44 imaginary users,
  ``profiles_b.jsonl`` and ``profiles_c.jsonl``: their facts saved, their questions asked;
  relevant = the question's own fact) and ``own chats`` (``conversations_own.jsonl``: the
  lifecycle benchmark's background facts, then the chat through ``remember``; relevant = a
  memory holding the answer);
* scored only: ``dev chats`` (``facts/conversations_dev.jsonl``, the same way), ``fact
  pairs`` (``facts/pairs_dev.jsonl``: the first fact of each pair saved, the second asked),
  and LoCoMo's development half (CC BY-NC: evaluation only) as ``turns`` (saved turn by turn
  with session and speaker; relevant = an evidence turn) and ``observations`` (its
  per-session observations as facts; relevant = one drawn from an evidence turn).

A logistic regression (Newton's method, small ridge penalty, numpy only) fits the chance a
candidate is relevant. The weight of the conversation around a turn is the one weight the
project's own data cannot fit (the profiles have no turns, and the own chats' turns almost
none around them): it is chosen on the shared ``dev chats`` among :data:`CONTEXT_GRID`, each
refitting the rest, as the one a memory block gains most from: MRR (the answer first) plus
the cut-off's separation (the share of top hits passing it for the own user less that for
another user: a larger weight lifts every turn of a conversation, another user's too). The
dev chats are therefore not unseen for that one weight; ``fact pairs`` and LoCoMo stay
scored only. Reported per source, for the candidates in the order a search gives
them (the score: :func:`~memorybank.rules.ranking.blend` of the relevance with importance and
recency) beside cosine alone (what a plain vector store ranks by), over the questions whose
answer was stored: top-1, MRR and recall@10; and the share of top hits passing the cut-off
(:data:`~memorybank.rules.ranking.RECALL_MIN_RELEVANCE`) for the own user and for the other.
The profiles are also scored across files: fitted on one file, scored on the other.

Nothing here is read at run time: the constants are copied into ``memorybank/rules/ranking.py``.
``memorybank bench calibrate --data ../shared/data``.
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import memorybank
from memorybank.core.bank import MemoryBank
from memorybank.core.records import save_records
from memorybank.core.scopes import scope_set
from memorybank.core.search import Pool
from memorybank.model import Caller, Memory, MemoryFilter, utcnow
from memorybank.model.stored import to_us
from memorybank.rules.ranking import (
    FEATURES,
    RECALL_MIN_RELEVANCE,
    Ranking,
    RetrievalSettings,
    blend,
    effective_importance,
    features,
)
from memorybank.services.conversations import remember_conversation
from memorybank_bench.lifecycle import BACKGROUND
from memorybank_bench.locomo import Conversation, ingest, load_conversations

RIDGE = 1.0
#: The context weights tried (see the module docstring), and the source that chooses one.
CONTEXT_GRID = (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0)
CHOOSES_CONTEXT = "dev chats"
#: The sources the shipped weights are fitted on (the project's own data) ...
FITTED = ("profiles", "own chats")
#: ... and those only scored.
SCORED = ("dev chats", "fact pairs", "turns", "observations")
#: Row weight per source in the fit (each question counts once, whatever its source).
WEIGHTS = {"profiles": 1.0, "own chats": 1.0}
OWN = Path(__file__).resolve().parents[1] / "data"


@dataclass
class Query:
    """One question asked of one user: its candidates' features, relevance labels, and what
    the score blends in (importance / 10 and recency, as the search reads them)."""

    source: str
    fold: str
    own: bool
    answered: bool  # the answer is stored for this user (always False for the other user)
    features: np.ndarray
    labels: np.ndarray
    importance: np.ndarray
    recency: np.ndarray
    question: str = ""
    texts: tuple[str, ...] = ()  # the candidates' texts, for reading a miss


Relevant = Callable[[Memory], bool]


def search_pool(bank: MemoryBank) -> Pool:
    """Where ``bank.search`` looks, built from the bank's parts as the bank builds it, for the
    evidence of every candidate (a search returns only the ranked hits)."""
    vector_of = functools.partial(bank.query_cache.vector, bank.embedder)
    return Pool(bank.store, vector_of, bank.retrieval, _one_probe_thread)


@functools.cache
def _one_probe_thread() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="calibrate-probe")


def _ask(
    bank: MemoryBank,
    where: tuple[str, str],
    question: str,
    users: tuple[str, str],
    relevant: Relevant,
    answered: bool = True,
) -> list[Query]:
    """``question`` asked of its own user and of another (``where``: source and fold)."""
    out, pool, now = [], search_pool(bank), utcnow()
    settings = bank.retrieval
    for user, own in ((users[0], True), (users[1], False)):
        found = pool.evidence(scope_set(user, None), question, MemoryFilter(superseded=False), now)
        rows = np.array(features(found), dtype=np.float64)
        out.append(
            Query(
                where[0],
                where[1],
                own,
                own and answered,
                rows.reshape(-1, len(FEATURES)),
                np.array([int(own and relevant(f.found.memory)) for f in found]),
                np.array([_importance(f.found, now, settings) for f in found]),
                np.array([_fresh(f.found.created_us, now, settings) for f in found]),
                question,
                tuple(f.found.content for f in found),
            )
        )
    return out


def _importance(found: Any, now: datetime, settings: RetrievalSettings) -> float:
    decay = settings.importance_half_life_days
    return effective_importance(found.importance, found.touched_us, to_us(now), decay) / 10.0


def _fresh(created_us: int, now: datetime, settings: RetrievalSettings) -> float:
    days = max(to_us(now) - created_us, 0) / 86_400_000_000
    return math.exp(-math.log(2) * days / settings.recency_half_life_days)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def profile_queries(bank: MemoryBank, path: Path) -> list[Query]:
    """A written profile's facts saved for one user, its questions asked of that user and of
    the next profile's."""
    profiles = _jsonl(path)
    users = [f"{path.stem}:{n}" for n in range(len(profiles))]
    answers: list[list[tuple[str, list[str]]]] = []
    for user, profile in zip(users, profiles, strict=True):
        results = bank.save_many(user, [{"content": f["fact"]} for f in profile["facts"]])
        answers.append(
            [
                (str(r.memory_id or r.existing_id), list(f["questions"]))
                for r, f in zip(results, profile["facts"], strict=True)
            ]
        )
    out: list[Query] = []
    for n, facts in enumerate(answers):
        pair = (users[n], users[(n + 1) % len(users)])
        for wanted, questions in facts:
            for question in questions:
                is_it = functools.partial(_is, wanted)
                out += _ask(bank, ("profiles", path.stem), question, pair, is_it)
    return out


def chat_queries(bank: MemoryBank, path: Path, source: str) -> list[Query]:
    """Each chat through ``remember`` (after the lifecycle benchmark's background facts) for
    a user of its own; each fact's question asked of that user and of the next chat's, a
    memory holding its expected value relevant."""
    chats = _jsonl(path)
    users = [f"{source}:{n}" for n in range(len(chats))]
    for user, chat in zip(users, chats, strict=True):
        for fact in BACKGROUND:
            bank.save(user, fact)
        remember_conversation(bank, Caller(user_id=user), chat["messages"])
    out: list[Query] = []
    for n, chat in enumerate(chats):
        pair = (users[n], users[(n + 1) % len(users)])
        held = [m.content.lower() for m in bank.list(pair[0], limit=1000, superseded=False)]
        for fact in chat["facts"]:
            expect = fact["expect"].lower()
            holds = functools.partial(_holds, expect)
            stored = any(expect in text for text in held)
            out += _ask(bank, (source, str(n)), fact["question"], pair, holds, stored)
    return out


def pair_queries(bank: MemoryBank, path: Path) -> list[Query]:
    """The first fact of each pair saved (half the pairs a user), the second asked."""
    pairs = _jsonl(path)
    halves = [pairs[0::2], pairs[1::2]]
    ids: dict[str, str] = {}
    for half, items in enumerate(halves):
        results = bank.save_many(f"half{half}", [{"content": p["a"]} for p in items])
        for pair, result in zip(items, results, strict=True):
            ids[pair["a"]] = str(result.memory_id or result.existing_id)
    out: list[Query] = []
    for half, items in enumerate(halves):
        users = (f"half{half}", f"half{1 - half}")
        for pair in items:
            is_it = functools.partial(_is, ids[pair["a"]])
            out += _ask(bank, ("fact pairs", str(half)), pair["b"], users, is_it)
    return out


def _dia_ids(memory: Memory) -> set[str]:
    return {part.strip() for part in str(memory.metadata.get("dia_id", "")).split(";")}


def _is(wanted: str, memory: Memory) -> bool:
    return memory.id == wanted


def _holds(expect: str, memory: Memory) -> bool:
    return expect in memory.content.lower()


def _from_turns(evidence: set[str], memory: Memory) -> bool:
    return bool(_dia_ids(memory) & evidence)


def locomo_queries(
    bank: MemoryBank, source: str, conversations: Sequence[Conversation]
) -> list[Query]:
    """Each scored LoCoMo question asked of its conversation and of the next one."""
    out: list[Query] = []
    for n, conversation in enumerate(conversations):
        other = conversations[(n + 1) % len(conversations)].sample_id
        for question in (q for q in conversation.questions if q.scored):
            evidence = set(question.evidence)
            hit = functools.partial(_from_turns, evidence)
            users = (conversation.sample_id, other)
            out += _ask(bank, (source, str(n)), question.question, users, hit)
    return out


def observations(sample: dict[str, Any]) -> list[Memory]:
    """A LoCoMo sample's per-session observations as facts, with the turns they came from."""
    memories = []
    for session in sample.get("observation", {}).values():
        for facts in session.values():
            for fact in facts:
                ids = fact[1] if len(fact) > 1 else ""
                ids = ids if isinstance(ids, str) else ";".join(ids)
                memories.append(
                    Memory(
                        user_id=sample["sample_id"],
                        content=fact[0],
                        category="context",
                        metadata={"dia_id": ids},
                    )
                )
    return memories


@contextmanager
def _bank(folder: Path, name: str) -> Iterator[MemoryBank]:
    with memorybank.open(f"sqlite:///{folder / name}.db") as bank:
        yield bank


def collect(data: Path, console: Console, sources: Sequence[str], own: Path = OWN) -> list[Query]:
    """Every question of ``sources`` (see the module docstring), asked of its own user and
    of another; ``data`` is the shared data folder (``facts/``, ``locomo/``), ``own`` the
    project's (``benchmarks/data``)."""
    queries: list[Query] = []
    locomo = data / "locomo" / "locomo_dev.json"
    with tempfile.TemporaryDirectory(prefix="calibrate-") as tmp:
        folder = Path(tmp)
        for source in sources:
            console.print(f"[dim]collecting {source}[/dim]")
            with _bank(folder, source.replace(" ", "_")) as bank:
                if source == "profiles":
                    for name in ("profiles_b.jsonl", "profiles_c.jsonl"):
                        queries += profile_queries(bank, own / name)
                elif source == "own chats":
                    queries += chat_queries(bank, own / "conversations_own.jsonl", source)
                elif source == "dev chats":
                    path = data / "facts" / "conversations_dev.jsonl"
                    queries += chat_queries(bank, path, source)
                elif source == "fact pairs":
                    queries += pair_queries(bank, data / "facts" / "pairs_dev.jsonl")
                elif source == "turns":
                    conversations = load_conversations(locomo)
                    ingest(bank, conversations, console)
                    queries += locomo_queries(bank, source, conversations)
                elif source == "observations":
                    for sample in json.loads(locomo.read_text(encoding="utf-8")):
                        save_records(bank, observations(sample), actor=sample["sample_id"])
                    queries += locomo_queries(bank, source, load_conversations(locomo))
                else:
                    raise ValueError(f"unknown source {source!r}")
    return queries


def fit(queries: Sequence[Query], ridge: float = RIDGE, context: float | None = None) -> Ranking:
    """Weighted logistic regression of relevance on the features, by Newton's method;
    ``context``: that weight held fixed (an offset), the others fitted."""
    x = np.vstack([q.features for q in queries])
    y = np.concatenate([q.labels for q in queries]).astype(np.float64)
    weight = np.concatenate([np.full(len(q.labels), WEIGHTS.get(q.source, 1.0)) for q in queries])
    at = FEATURES.index("context")
    offset = np.zeros(len(x))
    if context is not None:
        offset = context * x[:, at]
        x = np.delete(x, at, axis=1)
    design = np.hstack([np.ones((len(x), 1)), x])
    penalty = ridge * np.diag(np.r_[0.0, np.ones(x.shape[1])])
    w = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ w + offset)))
        gradient = design.T @ (weight * (y - p)) - penalty @ w
        hessian = (design * (weight * p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        w += step
        if np.abs(step).max() < 1e-9:
            break
    if context is not None:
        w = np.insert(w, at + 1, context)
    bias, *rest = (round(float(v), 3) for v in w)
    return Ranking(bias, *rest)


def choose_context(fitted: Sequence[Query], chooser: Sequence[Query]) -> Ranking:
    """The ranking fitted on ``fitted`` with the context weight of :data:`CONTEXT_GRID` that
    does best on ``chooser``'s questions by MRR plus the cut-off's separation (own pass less
    other pass; the smaller weight on a tie); fitted freely when there is nothing to choose
    on."""
    if not chooser:
        return fit(fitted)
    settings = RetrievalSettings()
    best: tuple[float, Ranking] | None = None
    for context in CONTEXT_GRID:
        ranking = fit(fitted, context=context)
        ranked = [(q, scores(ranking, q, settings), relevance(ranking, q)) for q in chooser]
        done = measure(CHOOSES_CONTEXT, "ranking", ranked)
        gain = done.mrr + done.own_pass - done.other_pass
        if best is None or gain > best[0] + 1e-12:
            best = (gain, ranking)
    assert best is not None
    return best[1]


def relevance(ranking: Ranking, query: Query) -> np.ndarray:
    """The relevance of each candidate of ``query``."""
    z = ranking.bias + query.features @ np.array(ranking.weights())
    out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return out


def scores(ranking: Ranking, query: Query, settings: RetrievalSettings) -> np.ndarray:
    """Each candidate's score, as a search orders them."""
    rel = relevance(ranking, query)
    out: np.ndarray = np.array(
        [
            blend(float(r), float(i), float(f), settings)
            for r, i, f in zip(rel, query.importance, query.recency, strict=True)
        ]
    )
    return out


@dataclass(frozen=True)
class Scores:
    """How one order does on one source's questions."""

    source: str
    order: str
    questions: int
    top1: float
    mrr: float
    recall_10: float
    own_pass: float
    other_pass: float

    def row(self) -> list[str]:
        """The table's cells."""
        return [
            self.source,
            self.order,
            str(self.questions),
            f"{self.top1:.3f}",
            f"{self.mrr:.3f}",
            f"{self.recall_10:.3f}",
            "—" if math.isnan(self.own_pass) else f"{self.own_pass:.2f} / {self.other_pass:.3f}",
        ]


def measure(
    source: str, order: str, scored: Sequence[tuple[Query, np.ndarray, np.ndarray]]
) -> Scores:
    """Top-1, MRR and recall@10 over the own questions whose answer is stored (ordered by
    the second array), and how often the top hit's relevance (the third) passes the cut-off
    for the own user and for the other."""
    firsts: list[bool] = []
    ranks: list[float] = []
    recalls: list[float] = []
    own: list[bool] = []
    other: list[bool] = []
    for query, key, rel in scored:
        top = float(rel.max()) if len(rel) else 0.0
        (own if query.own else other).append(top >= RECALL_MIN_RELEVANCE)
        if not query.answered:
            continue
        labels = query.labels[np.argsort(-key, kind="stable")]
        hits = np.flatnonzero(labels)
        firsts.append(bool(len(labels)) and bool(labels[0]))
        ranks.append(1.0 / (hits[0] + 1) if len(hits) else 0.0)
        total = max(int(query.labels.sum()), 1)
        recalls.append(min(1.0, labels[:10].sum() / total) if len(hits) else 0.0)
    return Scores(
        source,
        order,
        len(firsts),
        _mean(firsts),
        _mean(ranks),
        _mean(recalls),
        _mean(own),
        _mean(other),
    )


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def compare(
    source: str, queries: Sequence[Query], ranking: Ranking, settings: RetrievalSettings
) -> list[Scores]:
    """The search's order under ``ranking`` beside cosine alone, on one source."""
    mine = [q for q in queries if q.source == source]
    cosine = [(q, q.features[:, 0], q.features[:, 0]) for q in mine]
    ranked = [(q, scores(ranking, q, settings), relevance(ranking, q)) for q in mine]
    # A cosine is no relevance: its rows have no cut-off to pass.
    alone = replace(measure(source, "cosine alone", cosine), own_pass=math.nan)
    return [alone, measure(source, "ranking", ranked)]


@dataclass(frozen=True)
class CalibrationReport:
    """The fitted ranking, its scores per source, and the profiles fitted across files."""

    ranking: Ranking
    rows: list[Scores]
    across: list[Scores]
    seconds: float

    def table(self) -> Table:
        """The report as a rich table."""
        table = Table(title=f"ranking: {self.ranking}")
        for column in ("source", "order", "questions", "top-1", "MRR", "R@10"):
            table.add_column(column)
        table.add_column(f"top ≥ {RECALL_MIN_RELEVANCE} own / other")
        for s in [*self.rows, *self.across]:
            table.add_row(*s.row())
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "ranking": dict(
                zip(("bias", *FEATURES), (self.ranking.bias, *self.ranking.weights()), strict=True)
            ),
            "rows": [s.__dict__ for s in self.rows],
            "across": [s.__dict__ for s in self.across],
            "seconds": self.seconds,
        }


def evaluate(queries: Sequence[Query]) -> tuple[Ranking, list[Scores], list[Scores]]:
    """Fit on the project's own sources; score every source; and the profiles across
    files (fitted on one file and the own chats, scored on the other file)."""
    settings = RetrievalSettings()
    fitted = [q for q in queries if q.source in FITTED]
    chooser = [q for q in queries if q.source == CHOOSES_CONTEXT]
    ranking = choose_context(fitted, chooser)
    sources = [s for s in (*FITTED, *SCORED) if any(q.source == s for q in queries)]
    rows = [row for source in sources for row in compare(source, queries, ranking, settings)]
    across: list[Scores] = []
    for held in ("profiles_b", "profiles_c"):
        train = [q for q in fitted if not (q.source == "profiles" and q.fold == held)]
        part = fit(train, context=ranking.context)
        mine = [q for q in queries if q.source == "profiles" and q.fold == held]
        name = f"{held} held out"
        cosine = [(q, q.features[:, 0], q.features[:, 0]) for q in mine]
        across.append(replace(measure(name, "cosine alone", cosine), own_pass=math.nan))
        ranked = [(q, scores(part, q, settings), relevance(part, q)) for q in mine]
        across.append(measure(name, "ranking", ranked))
    return ranking, rows, across


def run_calibration(
    data: Path,
    console: Console | None = None,
    sources: Sequence[str] = (*FITTED, *SCORED),
    own: Path = OWN,
) -> CalibrationReport:
    """Collect the questions of ``sources`` (``data``: the shared data folder, ``own`` the
    project's), fit on the project's own and score every one."""
    started = time.perf_counter()
    console = console or Console(stderr=True)
    queries = collect(data, console, sources, own)
    ranking, rows, across = evaluate(queries)
    return CalibrationReport(ranking, rows, across, time.perf_counter() - started)


__all__ = [
    "CalibrationReport",
    "Query",
    "Scores",
    "choose_context",
    "collect",
    "evaluate",
    "fit",
    "measure",
    "run_calibration",
]
