"""The Embedder protocol: text in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    ``model_id`` names the model (recorded with every stored vector); ``dimension`` is the
    vector length. ``embed`` returns an array of shape ``(len(texts), dimension)``.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...

    def close(self) -> None: ...


def normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (arr / norms).astype(np.float32, copy=False)
    return out
