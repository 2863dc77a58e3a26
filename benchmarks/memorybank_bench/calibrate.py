"""Fit :data:`memorybank.rules.ranking.CALIBRATION` and say how well it holds up.

Each query is asked of the user it belongs to and of another user who has none of its answer;
every candidate the search ranks is one row: what :class:`~memorybank.rules.ranking.Calibration`
reads (the candidate's ranking evidence, its share of the best candidate's, the query's best
cosine and best BM25) and whether it is relevant. Four kinds of memory, so that one
calibration holds for chat turns and for facts:

* ``turns``: LoCoMo conversations saved turn by turn with session and speaker (as
  ``bench locomo``); relevant = an evidence turn of the question;
* ``observations``: LoCoMo's per-session observations saved as facts (no speaker, no
  session); relevant = an observation drawn from an evidence turn;
* ``session observations``: the same observations, one user per session (a few facts
  each); a question is asked of the session holding its first evidence turn and of a session
  of the next conversation;
* ``fact pairs``: ``facts/pairs_dev.jsonl``, the first fact of each pair saved, the second
  asked (every pair is about one topic); half the pairs per user.

The other user is the next conversation's (the other half's, for fact pairs). A logistic
regression (Newton's method, small ridge penalty, numpy only) fits the chance a candidate is
relevant; fact pairs weigh as much as the other kinds together-ish (they are few).

Reported per kind, for leave-one-conversation-out fits (each LoCoMo conversation, in every
kind, left out of the fit that scores it; each half of the fact pairs likewise) and for the
fit on everything: AUROC of the top hit's relevance, own user vs other; recall@10 when ranked
by relevance; the share of top hits passing each cut-off, own and other.

Nothing here is read at run time: the constants are copied into ``memorybank/rules/ranking.py``.
``memorybank bench calibrate --data ../shared/data``.
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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
from memorybank.model import Memory, MemoryFilter, utcnow
from memorybank.rules.ranking import Calibration, Evidence
from memorybank_bench.locomo import Conversation, ingest, load_conversations

#: The cut-offs whose pass rates are reported.
CUTOFFS: tuple[float, ...] = (0.1, 0.15, 0.2, 0.3, 0.5)
RIDGE = 1.0
KINDS = ("turns", "observations", "session observations", "fact pairs")
#: Row weight of each kind: the fact pairs are 148 queries against about 1,500 per other kind.
#: (Turns saved without session or speaker are not a kind of their own: implicit sessions and
#: speakers, :mod:`memorybank.rules.sessions`, make them the same rows as ``turns``.)
WEIGHTS = {
    "turns": 1.0,
    "observations": 1.0,
    "session observations": 1.0,
    "fact pairs": 10.0,
}


@dataclass
class Query:
    """One query asked of one user: its candidates' features and relevance labels."""

    kind: str
    fold: int
    own: bool
    features: np.ndarray
    labels: np.ndarray
    relevant: int


def features(found: Sequence[Evidence]) -> np.ndarray:
    """What :class:`Calibration` reads, one row per candidate: total, share of the best
    total, the query's best cosine, log(1 + best BM25) and log(1 + vector candidates)."""
    total = np.array([f.total for f in found])
    best = total.max() if len(total) else 0.0
    cosine = max((f.cosine for f in found if f.vector is not None), default=0.0)
    bm25 = max((f.text_score for f in found), default=0.0)
    share = total / best if best > 0 else np.zeros_like(total)
    n = len(found)
    pool = math.log1p(sum(f.vector is not None for f in found))
    columns: np.ndarray = np.c_[
        total, share, np.full(n, cosine), np.full(n, math.log1p(max(bm25, 0.0))), np.full(n, pool)
    ]
    return columns


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
    bank: MemoryBank, kind: str, fold: int, query: str, users: tuple[str, str], hit: Relevant
) -> list[Query]:
    out, pool, now = [], search_pool(bank), utcnow()
    for user, own in ((users[0], True), (users[1], False)):
        found = pool.evidence(scope_set(user, None), query, MemoryFilter(superseded=False), now)
        labels = np.array([int(own and hit(f.found.memory)) for f in found])
        relevant = int(labels.sum())
        out.append(Query(kind, fold, own, features(found).reshape(-1, 5), labels, relevant))
    return out


def _dia_ids(memory: Memory) -> set[str]:
    return {part.strip() for part in str(memory.metadata.get("dia_id", "")).split(";")}


def _conversation_queries(
    bank: MemoryBank, kind: str, conversations: Sequence[Conversation]
) -> list[Query]:
    out: list[Query] = []
    for index, conversation in enumerate(conversations):
        other = conversations[(index + 1) % len(conversations)].sample_id
        for question in (q for q in conversation.questions if q.scored):
            evidence = set(question.evidence)
            out += _ask(
                bank,
                kind,
                index,
                question.question,
                (conversation.sample_id, other),
                lambda m, e=evidence: bool(_dia_ids(m) & e),  # type: ignore[misc]
            )
    return out


def _observations(sample: dict[str, Any]) -> list[Memory]:
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


def _session_of(dia_id: str) -> str:
    return dia_id.partition(":")[0]


def _session_queries(
    bank: MemoryBank, samples: Sequence[dict[str, Any]], conversations: Sequence[Conversation]
) -> list[Query]:
    for sample in samples:
        by_session: dict[str, list[Memory]] = {}
        for memory in _observations(sample):
            first = sorted(_dia_ids(memory))[0]
            user = f"{sample['sample_id']}/{_session_of(first)}"
            by_session.setdefault(user, []).append(memory.model_copy(update={"user_id": user}))
        for user, memories in by_session.items():
            save_records(bank, memories, actor=user)
    out: list[Query] = []
    for index, conversation in enumerate(conversations):
        other = conversations[(index + 1) % len(conversations)].sample_id
        for question in (q for q in conversation.questions if q.scored):
            session = _session_of(question.evidence[0])
            users = (f"{conversation.sample_id}/{session}", f"{other}/{session}")
            evidence = set(question.evidence)
            out += _ask(
                bank,
                "session observations",
                index,
                question.question,
                users,
                lambda m, e=evidence: bool(_dia_ids(m) & e),  # type: ignore[misc]
            )
    return out


def collect(locomo: Path, pairs: Path, console: Console) -> list[Query]:
    """Every query of every kind, asked of its own user and of another."""
    conversations = load_conversations(locomo)
    queries: list[Query] = []
    with tempfile.TemporaryDirectory(prefix="calibrate-") as tmp:
        for n, kind in enumerate(KINDS):
            with memorybank.open(f"sqlite:///{Path(tmp) / f'{n}.db'}") as bank:
                if kind == "turns":
                    ingest(bank, conversations, console)
                    queries += _conversation_queries(bank, kind, conversations)
                elif kind == "observations":
                    for sample in json.loads(locomo.read_text(encoding="utf-8")):
                        save_records(bank, _observations(sample), actor=sample["sample_id"])
                    queries += _conversation_queries(bank, kind, conversations)
                elif kind == "session observations":
                    samples = json.loads(locomo.read_text(encoding="utf-8"))
                    queries += _session_queries(bank, samples, conversations)
                else:
                    queries += _pair_queries(bank, pairs)
    return queries


def _pair_queries(bank: MemoryBank, path: Path) -> list[Query]:
    lines = path.read_text(encoding="utf-8").splitlines()
    pairs = [json.loads(line) for line in lines if line.strip()]
    halves = [pairs[0::2], pairs[1::2]]
    ids: dict[str, str] = {}
    for half, items in enumerate(halves):
        results = bank.save_many(f"half{half}", [{"content": p["a"]} for p in items])
        for pair, result in zip(items, results, strict=True):
            ids[pair["a"]] = str(result.memory_id or result.existing_id)
    out: list[Query] = []
    for half, items in enumerate(halves):
        for pair in items:
            wanted = ids[pair["a"]]
            users = (f"half{half}", f"half{1 - half}")
            out += _ask(bank, "fact pairs", half, pair["b"], users, lambda m, w=wanted: m.id == w)  # type: ignore[misc]
    return out


def fit(queries: Sequence[Query], ridge: float = RIDGE) -> Calibration:
    """Weighted logistic regression of relevance on the features, by Newton's method."""
    x = np.vstack([q.features for q in queries])
    y = np.concatenate([q.labels for q in queries]).astype(np.float64)
    weight = np.concatenate([np.full(len(q.labels), WEIGHTS[q.kind]) for q in queries])
    design = np.hstack([np.ones((len(x), 1)), x])
    penalty = ridge * np.diag(np.r_[0.0, np.ones(x.shape[1])])
    w = np.zeros(design.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        gradient = design.T @ (weight * (y - p)) - penalty @ w
        hessian = (design * (weight * p * (1 - p))[:, None]).T @ design + penalty
        step = np.linalg.solve(hessian, gradient)
        w += step
        if np.abs(step).max() < 1e-9:
            break
    b, e, s, c, t, n = (round(float(v), 2) for v in w)
    return Calibration(bias=b, evidence=e, share=s, cosine=c, bm25=t, pool=n)


def relevance(calibration: Calibration, query: Query) -> np.ndarray:
    """The calibrated relevance of each candidate of ``query``."""
    c = calibration
    weights = np.array([c.evidence, c.share, c.cosine, c.bm25, c.pool])
    out: np.ndarray = 1.0 / (1.0 + np.exp(-(calibration.bias + query.features @ weights)))
    return out


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The chance a random positive scores above a random negative (ties count half)."""
    if not len(positive) or not len(negative):
        return math.nan
    neg = np.sort(np.asarray(negative))
    pos = np.asarray(positive)
    below = np.searchsorted(neg, pos, side="left")
    ties = np.searchsorted(neg, pos, side="right") - below
    return float((below + 0.5 * ties).sum() / (len(pos) * len(neg)))


@dataclass(frozen=True)
class Scores:
    """How relevances do on one kind's queries."""

    kind: str
    auroc: float
    recall_10: float
    own_pass: dict[float, float]
    other_pass: dict[float, float]
    mean_top: float
    top_relevant: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "kind": self.kind,
            "auroc": self.auroc,
            "recall@10": self.recall_10,
            "own_top_passes": {str(c): v for c, v in self.own_pass.items()},
            "other_top_passes": {str(c): v for c, v in self.other_pass.items()},
            "mean_top_relevance": self.mean_top,
            "top_is_relevant": self.top_relevant,
        }


def score(kind: str, scored: Sequence[tuple[Query, np.ndarray]]) -> Scores:
    """AUROC of the top hit, recall@10 (of the candidates, ranked by relevance) and pass rates."""
    tops: dict[bool, list[float]] = {True: [], False: []}
    recalls, top_hits = [], []
    for query, rel in scored:
        if not len(rel):
            tops[query.own].append(0.0)
            continue
        order = np.argsort(-rel, kind="stable")
        tops[query.own].append(float(rel[order[0]]))
        if query.own and query.relevant:
            recalls.append(min(1.0, query.labels[order[:10]].sum() / query.relevant))
            top_hits.append(float(query.labels[order[0]]))
    own, other = np.array(tops[True]), np.array(tops[False])
    return Scores(
        kind=kind,
        auroc=auroc(list(own), list(other)),
        recall_10=float(np.mean(recalls)) if recalls else math.nan,
        own_pass={c: float((own >= c).mean()) for c in CUTOFFS},
        other_pass={c: float((other >= c).mean()) for c in CUTOFFS},
        mean_top=float(own.mean()),
        top_relevant=float(np.mean(top_hits)) if top_hits else math.nan,
    )


@dataclass(frozen=True)
class CalibrationReport:
    """The fit on everything, and per kind the held-out and in-sample scores."""

    calibration: Calibration
    held_out: list[Scores]
    in_sample: list[Scores]
    folds: list[Calibration]
    seconds: float

    def table(self) -> Table:
        """The report as a rich table."""
        table = Table(title=f"relevance calibration: {self.calibration}")
        for column in ("kind", "scored", "AUROC", "R@10", "top rel / relevant"):
            table.add_column(column)
        for c in CUTOFFS:
            table.add_column(f"top ≥ {c} own / other")
        for name, rows in (("held out", self.held_out), ("in sample", self.in_sample)):
            for s in rows:
                table.add_row(
                    s.kind,
                    name,
                    f"{s.auroc:.3f}",
                    f"{s.recall_10:.3f}",
                    f"{s.mean_top:.2f} / {s.top_relevant:.2f}",
                    *(f"{s.own_pass[c]:.2f} / {s.other_pass[c]:.3f}" for c in CUTOFFS),
                )
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "calibration": _constants(self.calibration),
            "held_out": [s.as_dict() for s in self.held_out],
            "in_sample": [s.as_dict() for s in self.in_sample],
            "folds": [_constants(c) for c in self.folds],
            "seconds": self.seconds,
        }


def _constants(c: Calibration) -> dict[str, float]:
    return {
        "bias": c.bias,
        "evidence": c.evidence,
        "share": c.share,
        "cosine": c.cosine,
        "bm25": c.bm25,
        "pool": c.pool,
    }


def evaluate(
    queries: Sequence[Query],
) -> tuple[Calibration, list[Scores], list[Scores], list[Calibration]]:
    """Fit on everything; and leave each fold out (a LoCoMo conversation from every kind at
    once, or a half of the fact pairs), scoring it with the fit on the rest."""
    calibration = fit(queries)
    held: dict[int, np.ndarray] = {}
    folds = []
    for key in sorted({(q.kind == "fact pairs", q.fold) for q in queries}):
        train = [q for q in queries if (q.kind == "fact pairs", q.fold) != key]
        fold = fit(train)
        folds.append(fold)
        for i, q in enumerate(queries):
            if (q.kind == "fact pairs", q.fold) == key:
                held[i] = relevance(fold, q)
    held_out = [
        score(kind, [(q, held[i]) for i, q in enumerate(queries) if q.kind == kind])
        for kind in KINDS
    ]
    in_sample = [
        score(kind, [(q, relevance(calibration, q)) for q in queries if q.kind == kind])
        for kind in KINDS
    ]
    return calibration, held_out, in_sample, folds


def run_calibration(data: Path, console: Console | None = None) -> CalibrationReport:
    """Collect the queries from the data folder ``data`` (``locomo/locomo_dev.json`` and
    ``facts/pairs_dev.jsonl`` in it), fit and score."""
    started = time.perf_counter()
    console = console or Console(stderr=True)
    queries = collect(
        data / "locomo" / "locomo_dev.json", data / "facts" / "pairs_dev.jsonl", console
    )
    calibration, held_out, in_sample, folds = evaluate(queries)
    return CalibrationReport(calibration, held_out, in_sample, folds, time.perf_counter() - started)


__all__ = [
    "CalibrationReport",
    "Query",
    "Scores",
    "auroc",
    "collect",
    "evaluate",
    "features",
    "fit",
    "run_calibration",
    "score",
]
