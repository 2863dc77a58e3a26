"""Train the model that picks the facts a user states in passing, and cross-validate it.

``memorybank bench train-extractor --chats benchmarks/data/conversations_own.jsonl
[--score …/conversations_dev.jsonl] [--out FILE] [--seed 0]``

The model (:mod:`memorybank.rules.keep_model`) is a logistic regression over the bundled
embedder's vector of a piece of a message (read in its message, as ``remember`` reads it:
:func:`memorybank.services.in_passing.cut`) plus its surface cues, fitted by Newton's method
on standardised features with an L2 penalty, each class weighed to count as much as the
other. Its examples are the pieces (:func:`memorybank.rules.said.pieces`) of the user messages
of chats in the benchmark's shape (``{"messages", "facts": [{"expect", …}], "lasting": […]}``):
a piece that holds a fact's expected words, or words the chat lists as ``lasting`` (other
lasting facts it states, which no question asks about), is worth keeping; every other piece
is not. The project's own
chats only: LoCoMo's licence (CC BY-NC) allows it for evaluation, not for training.

The L2 penalty and the threshold are chosen on out-of-fold probabilities (five folds of whole
chats, shuffled with ``seed``, so that a chat's topic is never both trained on and scored):
the penalty with the best AUC, and the highest threshold that keeps :data:`RECALL` of the
pieces worth keeping.

Cross-validation trains on each source alone and scores every other one, and the shared
development chats (``--score``) are only ever scored, never trained on.

>>> x = np.array([[0.0], [1.0], [2.0], [3.0]])
>>> model = fit(x, np.array([0, 0, 1, 1]), "m", 0, l2=1.0)
>>> bool(model.weights[0] > 0)
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console

from memorybank.providers.embedders.base import Embedder
from memorybank.rules.keep_model import SURFACE, KeepModel, feature_matrix
from memorybank.services.in_passing import cut

#: L2 penalty of the fit (on standardised features), the default of :func:`fit`.
L2 = 30.0
#: The penalties :func:`train` chooses from by cross-validation over whole chats.
PENALTIES = (10.0, 30.0, 100.0, 300.0, 1000.0)
#: The share of the pieces worth keeping that the threshold keeps, out of fold (issue 46's
#: goal for facts kept); the rules after the model (no question, no reaction, a verb, a named
#: subject) take out what it lets through that is no fact.
RECALL = 0.9
FOLDS = 5

Floats = npt.NDArray[np.float64]
Labels = npt.NDArray[np.int64]


@dataclass
class Examples:
    """Labelled pieces of one source, with their feature rows."""

    name: str
    texts: list[str]
    labels: Labels
    features: Floats
    chats: Labels  # which chat each piece is from: folds keep a chat whole

    def __len__(self) -> int:
        return len(self.texts)


def chat_examples(path: Path, embedder: Embedder) -> Examples:
    """Pieces of the user messages of a chats file, labelled by the facts' expected words,
    with the vectors ``remember`` reads them with (:func:`memorybank.services.in_passing.cut`:
    each piece read in its message)."""
    texts: list[str] = []
    labels: list[int] = []
    chats: list[int] = []
    rows: list[Floats] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        chat = json.loads(line)
        expected = [f["expect"].lower() for f in chat["facts"]]
        expected += [said.lower() for said in chat.get("lasting", [])]
        said = [m["content"] for m in chat["messages"] if m["role"] == "user"]
        found, vectors = cut(embedder, said)
        chats += [len(rows)] * len(found)
        texts += [piece for _, piece in found]
        labels += [int(any(e in piece.lower() for e in expected)) for _, piece in found]
        rows.append(vectors)
    vectors = np.vstack(rows) if rows else np.zeros((0, embedder.dimension))
    return Examples(
        path.stem,
        texts,
        np.asarray(labels, dtype=np.int64),
        feature_matrix(vectors, texts),
        np.asarray(chats, dtype=np.int64),
    )


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


def recall_threshold(probabilities: Floats, labels: Labels, recall: float = RECALL) -> float:
    """The highest threshold that keeps ``recall`` of the pieces worth keeping."""
    positives = np.sort(probabilities[labels == 1])
    if not len(positives):
        return 0.5
    # Keep the top ``recall`` share of positives: the threshold is the probability of the
    # last one kept, rounded down to the grid the model file records.
    at = positives[max(int(np.floor(len(positives) * (1 - recall))), 0)]
    return float(np.floor(at * 100) / 100)


def out_of_fold(
    data: Examples, embedding_model: str, dimension: int, seed: int, l2: float
) -> Floats:
    """Each piece's probability from a model fitted without its chat (:data:`FOLDS` folds
    of whole chats, shuffled with ``seed``): a new chat's topics are unseen, as they will be.
    With fewer chats than folds, the folds are of pieces."""
    # One chat alone is cut into folds of pieces: there is no other chat to hold out.
    groups = data.chats if len(np.unique(data.chats)) >= FOLDS else np.arange(len(data))
    order = np.random.default_rng(seed).permutation(np.unique(groups))
    probabilities = np.zeros(len(data))
    for fold_groups in np.array_split(order, FOLDS):
        fold = np.isin(groups, fold_groups)
        model = fit(data.features[~fold], data.labels[~fold], embedding_model, dimension, l2=l2)
        probabilities[fold] = model.probabilities(data.features[fold])
    return probabilities


def train(data: Examples, embedding_model: str, dimension: int, seed: int) -> KeepModel:
    """The model fitted on all of ``data`` with the L2 penalty of :data:`PENALTIES` whose
    out-of-fold AUC is best, its threshold chosen on those out-of-fold probabilities."""
    tried = {l2: out_of_fold(data, embedding_model, dimension, seed, l2) for l2 in PENALTIES}
    l2 = max(PENALTIES, key=lambda k: (_auc(tried[k], data.labels), -k))
    model = fit(data.features, data.labels, embedding_model, dimension, l2=l2)
    threshold = recall_threshold(tried[l2], data.labels)
    return KeepModel(**{**model.__dict__, "threshold": threshold})


def _auc(probabilities: Floats, labels: Labels) -> float:
    positives = labels == 1
    n_pos, n_neg = float(positives.sum()), float((~positives).sum())
    ranks = np.argsort(np.argsort(probabilities)) + 1
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / max(n_pos * n_neg, 1.0))


def scores(model: KeepModel, data: Examples) -> dict[str, float]:
    """Precision, recall and AUC of ``model`` on ``data``."""
    p = model.probabilities(data.features)
    kept = p >= model.threshold
    positives = data.labels == 1
    tp = float((kept & positives).sum())
    n_pos = float(positives.sum())
    auc = _auc(p, data.labels)
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
        np.concatenate([part.chats + 10_000 * i for i, part in enumerate(parts)]),
    )


def run_training(
    chats: Sequence[Path],
    out: Path | None,
    *,
    score: Sequence[Path] = (),
    seed: int = 0,
    embedder: Embedder | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Train on ``chats``, cross-validate, write the model to ``out``."""
    if embedder is None:
        from memorybank.providers.embedders import LocalEmbedder

        embedder = LocalEmbedder()
    sources = [chat_examples(p, embedder) for p in chats]
    scored = [chat_examples(p, embedder) for p in score]
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


__all__ = ["chat_examples", "fit", "recall_threshold", "run_training", "scores", "train"]
