"""Train the duplicate judge's pair model and cross-validate it across data sources.

``memorybank bench train-pair-model --pairs …/pairs_dev.jsonl --sick …/sick [--out FILE]``

The model (:mod:`memorybank.rules.pair_model`) is a logistic regression over
:data:`~memorybank.rules.pair_features.FEATURES`, fitted by Newton's method (deterministic: no
random start, no shuffling) on the pairs the judge would ask it about: a candidate pair (cosine
≥ ``THRESHOLDS.candidate``) that no rule already keeps
(:func:`~memorybank.rules.verdicts.refusable`), and the one-value swaps that a rule keeps too
but which teach the model the most (a sibling value the word vectors find close: "sister" /
"brother"). Its sources are the development fact pairs and the pairs
:mod:`memorybank_bench.pair_gen` generates (seeded). SICK is never trained on: its licence
(CC BY-NC-SA, "for evaluation only", ``shared/data/sick/README.md``) keeps it out of weights
shipped in an Apache-2.0 package, so it only scores.

The refusal threshold is chosen on the training pairs, biased toward storing: the highest
probability any distinct or updating training pair gets (so none is refused) plus
:data:`MARGIN`, and never under :data:`MIN_THRESHOLD`.

Cross-validation trains on some sources and scores the others through the same decision as a
save (the judge, with the embedding model's word vectors); :func:`cross_validate` prints the
table docs/benchmarks.md shows.

>>> fit(np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1]), l2=1.0).shape
(2,)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console

from memorybank.providers.embedders.base import Embedder, Vectors
from memorybank.rules.pair_features import FEATURES, pair_features
from memorybank.rules.pair_model import PairModel
from memorybank.rules.verdicts import THRESHOLDS, Relation, judge_with, refusable
from memorybank_bench.pair_gen import generate

#: L2 penalty of the fit (on standardised features).
L2 = 3.0
#: Weight of a pair that must not be refused, against 1 for a duplicate.
KEEP_WEIGHT = 3.0
#: Added to the highest probability a kept training pair gets, to choose the threshold: a
#: sibling value the data did not have ("morning" / "evening", "uncle" / "cousin") can come
#: close, and refusing it would lose the fact.
MARGIN = 0.08
#: The threshold is never below this.
MIN_THRESHOLD = 0.5
#: The generated pairs the shipped model is trained on.
GENERATED_SEED, GENERATED_PER_FAMILY = 0, 60

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Example:
    """One pair: save ``old``, then ``new``; ``group`` is its label (``duplicate``, ``update``,
    ``distinct``) or its SICK judgment (``PARAPHRASE``, ``ENTAILMENT``, ``NEUTRAL``,
    ``CONTRADICTION``)."""

    old: str
    new: str
    group: str
    source: str

    @property
    def duplicate(self) -> bool:
        return self.group in ("duplicate", "PARAPHRASE")

    @property
    def keep(self) -> bool:
        """Whether refusing it loses information."""
        return self.group in ("update", "distinct", "NEUTRAL", "CONTRADICTION")


class Embeddings:
    """Sentence and word vectors of one embedder, each text embedded once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str, Vectors] = {}

    def vectors(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of ``texts`` (the missing ones embedded in one call)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, vector in zip(missing, self.embedder.embed(missing), strict=True):
                self._cache[text] = vector
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)

    def similarity(self, a: str, b: str) -> float:
        pair = self.vectors([a, b])
        return float(pair[0] @ pair[1])


def load_dev(path: Path) -> list[Example]:
    """The development fact pairs (``a`` saved first)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [Example(r["a"], r["b"], r["label"], "dev") for r in rows]


def load_sick(path: Path) -> list[Example]:
    """SICK pairs grouped as the integrity benchmark groups them."""
    from memorybank_bench.integrity import load_sick as read

    return [Example(p.a, p.b, p.group, path.stem) for p in read(path)]


def load_generated(seed: int = GENERATED_SEED, half: int | None = None) -> list[Example]:
    """Generated pairs (see :mod:`memorybank_bench.pair_gen`)."""
    name = "generated" if half is None else f"generated-{'AB'[half]}"
    return [
        Example(p.a, p.b, p.label, name)
        for p in generate(seed=seed, per_family=GENERATED_PER_FAMILY, half=half)
    ]


@dataclass
class Design:
    """The training rows: features of the pairs the model is asked about, and their labels."""

    x: list[list[float]] = field(default_factory=list)
    y: list[int] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)


def design(examples: Sequence[Example], emb: Embeddings) -> Design:
    """Feature rows of the candidate, refusable, labelled pairs of ``examples``."""
    rows = Design()
    for ex in examples:
        if not (ex.duplicate or ex.keep):
            continue  # ENTAILMENT that is no paraphrase: neither wanted nor forbidden
        similarity = emb.similarity(ex.new, ex.old)
        if similarity < THRESHOLDS.candidate or not refusable(ex.new, ex.old, swaps=False):
            continue
        rows.x.append(pair_features(ex.new, ex.old, similarity, emb.vectors))
        rows.y.append(int(ex.duplicate))
        rows.weight.append(1.0 if ex.duplicate else KEEP_WEIGHT)
    return rows


def fit(x: Floats, y: npt.NDArray[np.int_], weight: Floats | None = None, l2: float = L2) -> Floats:
    """Weights (bias last) of an L2-penalised logistic regression, by Newton's method."""
    rows = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(rows.shape[1])
    sample = np.ones(len(x)) if weight is None else weight
    penalty = np.full(rows.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(rows @ w, -40, 40)))
        gradient = rows.T @ (sample * (p - y)) + penalty * w
        hessian = (rows * (sample * p * (1 - p))[:, None]).T @ rows + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return w


def train(examples: Sequence[Example], emb: Embeddings) -> PairModel:
    """The pair model fitted on ``examples``, its threshold chosen on them."""
    rows = design(examples, emb)
    x = np.asarray(rows.x, dtype=np.float64)
    y = np.asarray(rows.y)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    w = fit((x - mean) / scale, y, np.asarray(rows.weight))
    model = PairModel(FEATURES, mean, scale, w[:-1], float(w[-1]), 1.0)
    kept = [model.probability(row) for row, label in zip(rows.x, rows.y, strict=True) if not label]
    threshold = min(max(max(kept, default=0.0) + MARGIN, MIN_THRESHOLD), 0.999)
    return PairModel(FEATURES, mean, scale, w[:-1], float(w[-1]), round(threshold, 6))


def as_dict(model: PairModel, trained_on: dict[str, int]) -> dict[str, Any]:
    """The JSON document of ``model`` (numbers rounded to 9 places)."""

    def numbers(a: Floats) -> list[float]:
        return [round(float(v), 9) for v in a]

    return {
        "features": list(model.features),
        "mean": numbers(model.mean),
        "scale": numbers(model.scale),
        "weights": numbers(model.weights),
        "bias": round(model.bias, 9),
        "threshold": model.threshold,
        "trained_on": trained_on,
        "note": "written by memorybank bench train-pair-model (benchmarks/memorybank_bench/"
        "train_pair_model.py); do not edit by hand",
    }


@dataclass
class Score:
    """Outcomes of one group of pairs scored with one model."""

    total: int = 0
    refused: int = 0
    surfaced: int = 0

    def cell(self, part: str) -> str:
        n = getattr(self, part)
        return f"{n}/{self.total}" if self.total else "–"


def score(model: PairModel, examples: Sequence[Example], emb: Embeddings) -> dict[str, Score]:
    """Each group's outcomes when ``new`` is saved after ``old`` and judged by ``model`` (a
    pair under the candidate floor is stored unread, as by a save)."""
    groups: dict[str, Score] = {}
    for ex in examples:
        tally = groups.setdefault(ex.group, Score())
        tally.total += 1
        similarity = emb.similarity(ex.new, ex.old)
        if similarity < THRESHOLDS.candidate:
            continue
        verdict = judge_with(model, model.threshold, ex.new, ex.old, similarity, emb.vectors)
        tally.refused += verdict.relation is Relation.DUPLICATE
        tally.surfaced += verdict.relation is Relation.CONFLICT
    return groups


def _row(name: str, groups: dict[str, Score]) -> list[str]:
    g = {k: groups.get(k, Score()) for k in ("duplicate", "update", "distinct")}
    s = {k: groups.get(k, Score()) for k in ("PARAPHRASE", "NEUTRAL", "CONTRADICTION")}
    return [
        name,
        g["duplicate"].cell("refused"),
        g["update"].cell("refused"),
        g["update"].cell("surfaced"),
        g["distinct"].cell("refused"),
        g["distinct"].cell("surfaced"),
        s["CONTRADICTION"].cell("refused"),
        s["NEUTRAL"].cell("refused"),
        s["PARAPHRASE"].cell("refused"),
    ]


COLUMNS = (
    "train → score",
    "dup caught",
    "upd lost",
    "upd surfaced",
    "dist lost",
    "dist surfaced",
    "SICK contra refused",
    "SICK neutral refused",
    "SICK paraphrase caught",
)


def cross_validate(
    dev: Sequence[Example], sick: Sequence[Example], emb: Embeddings
) -> list[list[str]]:
    """Rows of the cross-validation table: train on some sources, score the others."""
    gen_a, gen_b = load_generated(half=0), load_generated(half=1)
    folds = [
        ("generated → dev", [*gen_a, *gen_b], dev),
        ("generated → SICK", [*gen_a, *gen_b], sick),
        ("dev → generated", dev, [*gen_a, *gen_b]),
        ("dev → SICK", dev, sick),
        ("dev + generated A → generated B", [*dev, *gen_a], gen_b),
        ("dev + generated B → generated A", [*dev, *gen_b], gen_a),
        ("dev + generated (shipped) → SICK", [*dev, *load_generated()], sick),
        ("dev + generated (shipped) → dev (seen)", [*dev, *load_generated()], dev),
    ]
    return [_row(name, score(train(fit_on, emb), test, emb)) for name, fit_on, test in folds]


def run_training(
    pairs: Path,
    out: Path | None,
    *,
    sick: Path | None = None,
    embedder: Embedder | None = None,
    console: Console | None = None,
) -> dict[str, Any]:
    """Train the shipped model on ``pairs`` and the generated pairs; write it to ``out`` (if
    given); with ``sick`` (a folder of SICK_*.txt), print the cross-validation table."""
    console = console or Console(stderr=True)
    if embedder is None:
        from memorybank.providers.embedders.local import LocalEmbedder

        embedder = LocalEmbedder()
    emb = Embeddings(embedder)
    dev, generated = load_dev(pairs), load_generated()
    model = train([*dev, *generated], emb)
    document = as_dict(model, {"dev": len(dev), "generated": len(generated)})
    if out is not None:
        out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    if sick is not None:
        files = sorted(Path(sick).glob("SICK_*.txt")) if Path(sick).is_dir() else [Path(sick)]
        sick_pairs = [ex for f in files for ex in load_sick(f)]
        rows = cross_validate(dev, sick_pairs, emb)
        console.print(f"pair model cross-validation (SICK: {', '.join(f.name for f in files)})")
        for line in markdown(rows):
            console.print(line, soft_wrap=True, markup=False, highlight=False)
        document["cross_validation"] = {"columns": list(COLUMNS), "rows": rows}
    return document


def markdown(rows: Sequence[Sequence[str]]) -> list[str]:
    """The cross-validation table as Markdown lines (as docs/benchmarks.md shows it).

    >>> markdown([["a → b", *["1/2"] * 8]])[2].startswith("| a → b | 1/2 |")
    True
    """
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


__all__ = [
    "Embeddings",
    "Example",
    "cross_validate",
    "design",
    "fit",
    "load_dev",
    "load_generated",
    "markdown",
    "run_training",
    "score",
    "train",
]
