"""The Embedder protocol: text in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memorybank.errors import ValidationError

Vectors = npt.NDArray[np.float32]
#: Called with (done, total) as a long embedding job (a big batch, a reindex) advances.
ProgressFn = Callable[[int, int], None]


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


@runtime_checkable
class SpanEmbedder(Embedder, Protocol):
    """An embedder that also reads parts of a text in its context: ``embed_spans(texts,
    spans)`` returns each text's vector and, per text, one vector for each ``(start, end)``
    character span of it (the bundled :class:`~memorybank.providers.embedders.LocalEmbedder`)."""

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[Vectors, list[Vectors]]: ...


def text_list(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list, checked: a :class:`~memorybank.errors.ValidationError` for one
    string passed alone or an item that is not a string.

    >>> text_list(("a", "b"))
    ['a', 'b']
    >>> text_list("ab")
    Traceback (most recent call last):
    memorybank.errors.ValidationError: texts must be a sequence of strings, not one string
    """
    if isinstance(texts, str):
        raise ValidationError("texts must be a sequence of strings, not one string", field="texts")
    items = list(texts)
    for position, text in enumerate(items):
        if not isinstance(text, str):
            raise ValidationError(
                f"texts[{position}] is {type(text).__name__}, expected str", field="texts"
            )
    return items


def normalise(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (arr / norms).astype(np.float32, copy=False)
    return out
