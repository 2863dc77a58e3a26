"""Train the model that picks the facts a user states in passing, and cross-validate it.

``memorybank bench train-extractor --chats benchmarks/data/conversations_own.jsonl
[--locomo …/locomo_dev.json] [--score …/conversations_dev.jsonl] [--out FILE] [--seed 0]``

The model (:mod:`memorybank.rules.keep_model`) is a logistic regression over the bundled
embedder's vector of a piece of a message plus its surface cues, fitted by Newton's method on
standardised features with an L2 penalty, each class weighed to count as much as the other.
Its examples are pieces of messages (:func:`memorybank.rules.said.pieces`) labelled from two
kinds of source:

* chats in the benchmark's shape (``{"messages", "facts": [{"expect", …}]}``): a piece of a
  user message that holds a fact's expected words is worth keeping, every other piece of a
  user message is not;
* LoCoMo (``--locomo``): its observations name the turns they were read from; of such a turn,
  the piece closest to the observation (cosine of their vectors) is worth keeping, and every
  piece of a turn no observation names is not. The other pieces of a named turn are left out:
  the data does not say.

The threshold is chosen on out-of-fold probabilities (five folds, shuffled with ``seed``):
the one with the best F1 score (a fact lost costs about as much as a remark kept: the save's
judge still refuses duplicates, and a kept remark is the user's own words).

Cross-validation trains on each source alone and scores every other one, and the shared
development chats (``--score``) are only ever scored, never trained on.

>>> x = np.array([[0.0], [1.0], [2.0], [3.0]])
>>> model = fit(x, np.array([0, 0, 1, 1]), "m", 0, l2=1.0)
>>> bool(model.weights[0] > 0)
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console

from memorybank.providers.embedders.base import Embedder
from memorybank.rules.keep_model import SURFACE, KeepModel, feature_matrix
from memorybank.rules.said import pieces

#: L2 penalty of the fit (on standardised features).
L2 = 30.0
#: F-beta's beta for the threshold: recall counts this many times as much as precision.
BETA = 1.0
FOLDS = 5

Floats = npt.NDArray[np.float64]
Labels = npt.NDArray[np.int64]
_DIA_RE = re.compile(r"D(\d+):0*(\d+)")


@dataclass
class Examples:
    """Labelled pieces of one source, with their feature rows."""

    name: str
    texts: list[str]
    labels: Labels
    features: Floats

    def __len__(self) -> int:
        return len(self.texts)


def chat_examples(path: Path) -> tuple[list[str], list[int]]:
    """Pieces of the user messages of a chats file, labelled by the facts' expected words."""
    texts: list[str] = []
    labels: list[int] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        chat = json.loads(line)
        expected = [f["expect"].lower() for f in chat["facts"]]
        for message in chat["messages"]:
            if message["role"] != "user":
                continue
            for piece in pieces(message["content"]):
                texts.append(piece)
                labels.append(int(any(e in piece.lower() for e in expected)))
    return texts, labels


def _dia_ids(raw: str) -> list[str]:
    return [f"D{a}:{b}" for a, b in _DIA_RE.findall(raw)]


def locomo_examples(path: Path, embedder: Embedder) -> tuple[list[str], list[int]]:
    """Pieces of LoCoMo's turns, labelled by the observations that name them (module docs)."""
    texts: list[str] = []
    labels: list[int] = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        turns: dict[str, str] = {}
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.update({t["dia_id"]: t["text"] for t in value})
        observed: dict[str, list[str]] = {}
        for per_session in sample["observation"].values():
            for facts in per_session.values():
                for text, raw in facts:
                    for dia in _dia_ids(str(raw)):
                        observed.setdefault(dia, []).append(text)
        for dia, text in turns.items():
            cut = pieces(text)
            if not cut:
                continue
            if dia not in observed:
                texts += cut
                labels += [0] * len(cut)
                continue
            vectors = embedder.embed([*cut, *observed[dia]])
            closeness = vectors[: len(cut)] @ vectors[len(cut) :].T
            best = {int(i) for i in np.argmax(closeness, axis=0)}
            texts += [cut[i] for i in sorted(best)]
            labels += [1] * len(best)
    return texts, labels


def examples(name: str, texts: list[str], labels: list[int], embedder: Embedder) -> Examples:
    """``texts`` with their feature rows (embedded in one batch)."""
    vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dimension))
    rows = feature_matrix(vectors, texts)
    return Examples(name, texts, np.asarray(labels, dtype=np.int64), rows)


def fit(x: Floats, y: Labels, embedding_model: str, dimension: int, *, l2: float = L2) -> KeepModel:
    """A logistic regression on standardised ``x`` (threshold 0.5; see :func:`train`)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    positives = max(int(y.sum()), 1)
    negatives = max(len(y) - positives, 1)
    weight = np.where(y == 1, len(y) / (2 * positives), len(y) / (2 * negatives))
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    beta = np.zeros(z.shape[1])
    for _ in range(25):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ beta, -40, 40)))
        gradient = z.T @ (weight * (p - y)) + penalty * beta
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.abs(step).max()) < 1e-6:
            break
    return KeepModel(
        embedding_model, dimension, SURFACE, mean, scale, beta[:-1], float(beta[-1]), 0.5
    )


def best_threshold(probabilities: Floats, labels: Labels, beta: float = BETA) -> float:
    """The threshold with the best F-beta on these probabilities."""
    best, chosen = -1.0, 0.5
    for t in np.linspace(0.05, 0.95, 91):
        kept = probabilities >= t
        tp = float((kept & (labels == 1)).sum())
        precision = tp / max(float(kept.sum()), 1.0)
        recall = tp / max(float((labels == 1).sum()), 1.0)
        score = (1 + beta**2) * precision * recall / max(beta**2 * precision + recall, 1e-9)
        if score > best:
            best, chosen = score, float(t)
    return round(chosen, 3)


def train(data: Examples, embedding_model: str, dimension: int, seed: int) -> KeepModel:
    """The model fitted on all of ``data``, its threshold chosen out of fold."""
    order = np.random.default_rng(seed).permutation(len(data))
    out_of_fold = np.zeros(len(data))
    for fold in np.array_split(order, FOLDS):
        rest = np.setdiff1d(order, fold)
        model = fit(data.features[rest], data.labels[rest], embedding_model, dimension)
        out_of_fold[fold] = model.probabilities(data.features[fold])
    model = fit(data.features, data.labels, embedding_model, dimension)
    threshold = best_threshold(out_of_fold, data.labels)
    return KeepModel(**{**model.__dict__, "threshold": threshold})


def scores(model: KeepModel, data: Examples) -> dict[str, float]:
    """Precision, recall and AUC of ``model`` on ``data``."""
    p = model.probabilities(data.features)
    kept = p >= model.threshold
    positives = data.labels == 1
    tp = float((kept & positives).sum())
    ranks = np.argsort(np.argsort(p)) + 1
    n_pos, n_neg = float(positives.sum()), float((~positives).sum())
    auc = (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1.0)
    return {
        "precision": round(tp / max(float(kept.sum()), 1.0), 3),
        "recall": round(tp / max(n_pos, 1.0), 3),
        "auc": round(float(auc), 3),
        "pieces": len(data),
        "worth_keeping": int(n_pos),
    }


def combine(name: str, parts: Sequence[Examples]) -> Examples:
    """The examples of ``parts`` as one source."""
    return Examples(
        name,
        [t for part in parts for t in part.texts],
        np.concatenate([part.labels for part in parts]),
        np.vstack([part.features for part in parts]),
    )


def run_training(
    chats: Sequence[Path],
    out: Path | None,
    *,
    locomo: Path | None = None,
    score: Sequence[Path] = (),
    seed: int = 0,
    embedder: Embedder | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Train on ``chats`` (and ``locomo``), cross-validate, write the model to ``out``."""
    if embedder is None:
        from memorybank.providers.embedders import LocalEmbedder

        embedder = LocalEmbedder()
    sources = [examples(p.stem, *chat_examples(p), embedder) for p in chats]
    if locomo is not None:
        sources.append(examples("locomo", *locomo_examples(locomo, embedder), embedder))
    scored = [examples(p.stem, *chat_examples(p), embedder) for p in score]
    everything = combine("+".join(s.name for s in sources), sources)
    model = train(everything, embedder.model_id, embedder.dimension, seed)
    table: dict[str, dict[str, dict[str, float]]] = {}
    for source in sources if len(sources) > 1 else []:
        alone = train(source, embedder.model_id, embedder.dimension, seed)
        table[source.name] = {
            other.name: scores(alone, other) for other in [*sources, *scored] if other is not source
        }
    table[everything.name] = {other.name: scores(model, other) for other in scored}
    document = model.to_dict(
        trained_on={
            s.name: {"pieces": len(s), "worth_keeping": int(s.labels.sum())} for s in sources
        },
        seed=seed,
        cross_validation=table,
    )
    if console is not None:
        for trained, row in table.items():
            for other, s in row.items():
                console.print(
                    f"trained on {trained:<28} scored on {other:<24} precision {s['precision']:.3f}"
                    f"  recall {s['recall']:.3f}  AUC {s['auc']:.3f}  ({s['pieces']} pieces)"
                )
    if out is not None:
        out.write_text(json.dumps(document) + "\n", encoding="utf-8")
        if console is not None:
            console.print(f"Wrote {out}.")
    return document


__all__ = ["chat_examples", "fit", "locomo_examples", "run_training", "scores", "train"]
