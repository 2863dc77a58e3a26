"""Which sentences of a user's message are worth keeping as lasting facts: a learned model.

"we moved to Leeds last year" and "my husband Emeka does the books" are kept; "can you help
me price a cake?", "what if we skipped Sunday?", "thanks, this helps a lot" are not. No list
of phrases decides: a logistic regression reads the sentence's vector from the bank's
embedder plus a few surface cues (:func:`surface_features`: a question mark, a request to the
assistant, a condition, a greeting, who the sentence is about, whether it has a verb, whether
it ends pointing back at what was said, whether it opens on the user or theirs) and says how
likely the sentence states something lasting. Its weights ship as ``keep_model.json`` beside
this module, written by ``memorybank bench train-extractor`` (``benchmarks/memorybank_bench/
train_extractor.py``) from labelled sentences; the file names the embedding model whose
vectors it was trained on, and :meth:`KeepModel.fits` tells whether a bank's embedder is that
one (another embedder's vectors mean nothing to these weights).

Pure functions and numpy, no I/O beyond reading the shipped file once.

>>> model = load_keep_model()
>>> model.surface == SURFACE
True
>>> surface_features("can you help me plan dinner?")[SURFACE.index("question_mark")]
1.0
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from memorybank.errors import ConfigurationError
from memorybank.rules.third_person import has_verb

#: The shipped weights' file name, beside this module.
MODEL_FILE = "keep_model.json"

Floats = npt.NDArray[np.float64]

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'’]*")
#: How a question opens (its first word); also read by :func:`memorybank.rules.said.is_question`.
QUESTION_HEAD_RE = re.compile(
    r"(?:what|whats|what's|which|who|whom|whose|where|when|why|how|is|are|am|was|were|do|does"
    r"|did|can|could|would|will|should|shall|may|might|have|has|any)\b",
    re.IGNORECASE,
)
_REQUEST_RE = re.compile(
    r"\b(?:can|could|would|will)\s+(?:you|u)\b|\bplease\b|\bhelp\s+me\b|\bi\s+need\s+(?:help|advice|"
    r"some|a\s+hand|ideas|tips)\b|\btell\s+me\b|\bgive\s+me\b|\bshow\s+me\b|\bremind\s+me\b"
    r"|\blet['’]?s\b|\bsuggest\b|\brecommend\b|\bany\s+(?:ideas|tips|advice)\b",
    re.IGNORECASE,
)
_CONDITION_RE = re.compile(
    r"\b(?:if|suppose|supposing|imagine|maybe|might|would|could|whether|unless|hypothetically"
    r"|wonder|wondering)\b",
    re.IGNORECASE,
)
_SMALL_TALK_RE = re.compile(
    r"^(?:hi|hey|hello|thanks|thank|cheers|ok|okay|great|nice|cool|awesome|perfect|lol|haha"
    r"|yes|yeah|yep|no|nope|sure|sorry|good|morning|evening|bye|wow|oh|hmm|right|true|fine)\b",
    re.IGNORECASE,
)
_FIRST_SINGULAR_RE = re.compile(r"(?<![\w'’])(?:i|me|my|mine|myself)(?![\w])", re.IGNORECASE)
_FIRST_PLURAL_RE = re.compile(r"(?<![\w'’])(?:we|us|our|ours|ourselves)(?![\w])", re.IGNORECASE)
_YOU_RE = re.compile(r"(?<![\w'’])(?:you|your|yours)(?![\w'’])", re.IGNORECASE)
_NAME_RE = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+")
_DIGIT_RE = re.compile(r"\d")
# Opens on the user or theirs as its subject ("I set up …", "we're a …", "my son …").
_OPENS_ON_SELF_RE = re.compile(r"(?:i|we|my|our)(?:['’](?:m|re|ve|d|ll))?\b", re.IGNORECASE)
# Ends on a word that points back at what was said before ("I haven't bought it"): the
# sentence means little out of its chat.
_REFERS_BACK_RE = re.compile(r"\b(?:it|this|that|them|there|these|those)\W*$", re.IGNORECASE)

#: The surface cues, in the order :func:`surface_features` returns them.
SURFACE: tuple[str, ...] = (
    "question_mark",
    "question_head",
    "request",
    "condition",
    "small_talk",
    "first_singular",
    "first_plural",
    "you",
    "name",
    "digit",
    "verb",
    "refers_back",
    "opens_on_self",
    "log_words",
)


def surface_features(sentence: str) -> list[float]:
    """The sentence's surface cues (see :data:`SURFACE`), each 0 or 1 but the last, the log
    of its word count.

    >>> dict(zip(SURFACE, surface_features("We moved to Leeds last year")))["first_plural"]
    1.0
    """
    text = sentence.strip()
    words = _WORD_RE.findall(text)
    cues = (
        "?" in text,
        QUESTION_HEAD_RE.match(text) is not None,
        _REQUEST_RE.search(text) is not None,
        _CONDITION_RE.search(text) is not None,
        _SMALL_TALK_RE.match(text) is not None,
        _FIRST_SINGULAR_RE.search(text) is not None,
        _FIRST_PLURAL_RE.search(text) is not None,
        _YOU_RE.search(text) is not None,
        _NAME_RE.search(text) is not None,
        _DIGIT_RE.search(text) is not None,
        has_verb(text),
        _REFERS_BACK_RE.search(text) is not None,
        _OPENS_ON_SELF_RE.match(text) is not None,
    )
    return [float(c) for c in cues] + [math.log1p(len(words))]


def feature_matrix(vectors: npt.NDArray[np.floating], sentences: Sequence[str]) -> Floats:
    """One row per sentence: its embedding, then its surface cues."""
    if len(vectors) != len(sentences):
        raise ValueError(f"{len(vectors)} vectors for {len(sentences)} sentences")
    surface = np.array([surface_features(s) for s in sentences], dtype=np.float64)
    surface = surface.reshape(len(sentences), len(SURFACE))
    return np.hstack([np.asarray(vectors, dtype=np.float64).reshape(len(sentences), -1), surface])


def _significant(values: Floats) -> list[float]:
    # Six significant digits, not six decimals: an embedding dimension can vary very little.
    return [float(f"{float(v):.6g}") for v in values]


@dataclass(frozen=True)
class KeepModel:
    """Standardise the features, weigh them, squash: P(the sentence is worth keeping)."""

    embedding_model: str
    dimension: int
    surface: tuple[str, ...]
    mean: Floats
    scale: Floats
    weights: Floats
    bias: float
    threshold: float

    def fits(self, model_id: str, dimension: int) -> bool:
        """Whether vectors of the embedder ``model_id`` (of ``dimension``) suit these weights."""
        return model_id == self.embedding_model and dimension == self.dimension

    def probabilities(self, features: Floats) -> Floats:
        """P(worth keeping) for each row of :func:`feature_matrix`."""
        z = ((features - self.mean) / self.scale) @ self.weights + self.bias
        out: Floats = 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))
        return out

    def to_dict(self, **extra: Any) -> dict[str, Any]:
        """The ``keep_model.json`` document (``extra``: what it was trained on, how well)."""
        return {
            "embedding_model": self.embedding_model,
            "dimension": self.dimension,
            "surface": list(self.surface),
            "threshold": round(self.threshold, 4),
            "bias": round(self.bias, 6),
            "mean": _significant(self.mean),
            "scale": _significant(self.scale),
            "weights": _significant(self.weights),
            **extra,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeepModel:
        """The model a ``keep_model.json`` document describes (checked against SURFACE)."""
        surface = tuple(data["surface"])
        if surface != SURFACE:
            raise ConfigurationError(
                "keep model surface features do not match memorybank.rules.keep_model.SURFACE: "
                "retrain it (memorybank bench train-extractor)"
            )
        width = int(data["dimension"]) + len(surface)
        mean, scale, weights = (
            np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")
        )
        if any(a.shape != (width,) for a in (mean, scale, weights)):
            raise ConfigurationError("keep model: mean, scale and weights need one per feature")
        if not bool((scale > 0).all()):
            raise ConfigurationError("keep model: every scale must be positive")
        return cls(
            str(data["embedding_model"]),
            int(data["dimension"]),
            surface,
            mean,
            scale,
            weights,
            float(data["bias"]),
            float(data["threshold"]),
        )


@cache
def load_keep_model() -> KeepModel:
    """The shipped model (read once)."""
    text = resources.files("memorybank.rules").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return KeepModel.from_dict(json.loads(text))


__all__ = [
    "MODEL_FILE",
    "QUESTION_HEAD_RE",
    "SURFACE",
    "KeepModel",
    "feature_matrix",
    "load_keep_model",
    "surface_features",
]
