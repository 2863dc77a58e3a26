"""The duplicate judge's pair model: a logistic regression over
:data:`~memorybank.rules.pair_features.FEATURES`, its weights shipped as ``pair_model.json``
beside this module and run with plain numpy.

``benchmarks/memorybank_bench/train_pair_model.py`` (``memorybank bench train-pair-model``)
writes the file from the development pairs and generated pairs, deterministically; the
threshold in it is the probability from which a pair is refused as a duplicate, chosen there
to refuse no distinct or updating pair of the training data (a refusal loses information,
keeping a duplicate only repeats it).

>>> model = load_model()
>>> model.features == FEATURES
True
>>> 0.0 < model.threshold < 1.0
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from memorybank.errors import ConfigurationError
from memorybank.rules.pair_features import FEATURES

#: The shipped weights' file name, beside this module.
MODEL_FILE = "pair_model.json"

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PairModel:
    """Standardise the features, weigh them, squash: the probability that a pair is a
    duplicate."""

    features: tuple[str, ...]
    mean: Floats
    scale: Floats
    weights: Floats
    bias: float
    threshold: float

    def probability(self, x: Sequence[float] | Floats) -> float:
        """P(duplicate) of one pair's feature vector ``x``."""
        z = float(((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.weights)
        z += self.bias
        return 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))

    def bounds(self, x: Sequence[float], free: Sequence[int]) -> tuple[float, float]:
        """The lowest and highest probability ``x`` can have when the features at ``free``
        (each measured in [0, 1]) may take any value: whether measuring them can change the
        verdict at all."""
        row = np.asarray(x, dtype=np.float64).copy()
        index = np.asarray(free, dtype=np.intp)
        rises = self.weights[index] > 0
        row[index] = np.where(rises, 0.0, 1.0)
        low = self.probability(row)
        row[index] = np.where(rises, 1.0, 0.0)
        return low, self.probability(row)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PairModel:
        """The model a ``pair_model.json`` document describes (checked against FEATURES)."""
        features = tuple(data["features"])
        if features != FEATURES:
            raise ConfigurationError(
                "pair model features do not match memorybank.rules.pair_features.FEATURES: "
                "retrain it (memorybank bench train-pair-model)"
            )
        mean, scale, weights = (
            np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")
        )
        if any(a.shape != (len(features),) for a in (mean, scale, weights)):
            raise ConfigurationError("pair model: mean, scale and weights need one per feature")
        return cls(features, mean, scale, weights, float(data["bias"]), float(data["threshold"]))


@cache
def load_model() -> PairModel:
    """The shipped model (read once)."""
    text = resources.files("memorybank.rules").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return PairModel.from_dict(json.loads(text))


__all__ = ["MODEL_FILE", "PairModel", "load_model"]
