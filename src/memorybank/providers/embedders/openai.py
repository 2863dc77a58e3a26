"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

OpenAI itself, Ollama, vLLM, Hugging Face TEI, LiteLLM and most hosted providers speak this
protocol: ``POST {base_url}/embeddings`` with ``{"model": ..., "input": [...]}`` answered by
``{"data": [{"embedding": [...], "index": i}, ...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from memorybank.errors import ConfigurationError, ProviderError
from memorybank.providers.embedders.base import Vectors, normalise, text_list
from memorybank.providers.httpretry import HttpProvider, status_advice
from memorybank.providers.netguard import AddressPolicy


class OpenAIEmbedder(HttpProvider[Any]):
    """Embeddings from an OpenAI-compatible HTTP API (OpenAI, Ollama, vLLM, TEI, ...).

    Texts are sent in batches of ``batch_size``. Connection errors, timeouts, HTTP 429 and
    5xx answers are retried up to ``max_retries`` times with exponential backoff
    (``backoff * 2**attempt`` seconds, or the server's ``Retry-After``, at most 10 s); any
    other failure raises :class:`~memorybank.errors.ProviderError` at once. The API key is
    only ever sent in the ``Authorization`` header and never appears in error messages, and
    neither does the provider's answer: errors say the HTTP status and what to check.
    ``address_policy`` is for a URL a user chose: then only addresses the policy allows are
    connected to (:mod:`memorybank.providers.netguard`).
    Returned vectors are L2-normalised float32. The embedder may be shared between threads.

    Example::

        from memorybank.providers.embedders import OpenAIEmbedder

        embedder = OpenAIEmbedder(
            "https://api.openai.com/v1", "text-embedding-3-small", api_key="sk-..."
        )
        vectors = embedder.embed(["User prefers TypeScript"])   # shape (1, 1536)
        embedder.model_id    # 'openai-compatible:text-embedding-3-small'
        embedder.close()

        # A local Ollama server needs no key:
        ollama = OpenAIEmbedder("http://localhost:11434/v1", "nomic-embed-text")
    """

    kind = "embedding"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        dimension: int | None = None,
        batch_size: int = 128,
        max_retries: int = 3,
        timeout: float = 30.0,
        backoff: float = 0.5,
        address_policy: AddressPolicy | None = None,
    ) -> None:
        if dimension is not None and dimension < 1:
            raise ConfigurationError(f"embedding dimension must be positive, got {dimension}")
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be at least 1, got {batch_size}")
        super().__init__(
            base_url,
            "/embeddings",
            model,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            address_policy=address_policy,
        )
        self._dimension = dimension
        self._batch_size = batch_size
        self._closed = False

    @property
    def model_id(self) -> str:
        return f"openai-compatible:{self.model}"

    @property
    def dimension(self) -> int:
        """Vector length: as configured, else learned from the first answer.

        Asked before anything was embedded, it embeds ``"dimension probe"`` to find out.
        """
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 vectors, one row per text, in the order given."""
        items = text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._embed_batch(items[start : start + self._batch_size])
            for start in range(0, len(items), self._batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def close(self) -> None:
        """Close the HTTP client; the embedder cannot be used afterwards."""
        self._closed = True
        self._client.close()

    # -- one batch -----------------------------------------------------------------------

    def _embed_batch(self, texts: list[str]) -> Vectors:
        payload = self._post({"model": self.model, "input": texts})
        vectors = self._parse(payload, len(texts))
        with self._lock:
            if self._dimension is None:
                self._dimension = vectors.shape[1]
            expected = self._dimension
        if vectors.shape[1] != expected:
            raise ProviderError(
                f"{self._describe()} returned {vectors.shape[1]}-dimensional vectors but "
                f"{expected} were expected"
            )
        return normalise(vectors)

    def _attempt(self, body: dict[str, Any]) -> Any:
        if self._closed:
            raise ProviderError(f"{self._describe()}: the embedder is closed")
        response = self._send(body)
        status = response.status_code
        if not 200 <= status < 300:  # other 4xx, or a redirect we do not follow
            raise ProviderError(
                f"{self._describe()} answered HTTP {status}: {status_advice(status)}"
            )
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ProviderError(
                f"{self._describe()} answered HTTP {status} with a body that is not JSON: check "
                "that the base URL is an embeddings API (the answer is not shown)"
            ) from exc

    def _parse(self, payload: Any, count: int) -> Vectors:
        where = self._describe()
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise ProviderError(f"{where} answered without a 'data' list")
        if len(data) != count:
            raise ProviderError(f"{where} returned {len(data)} embeddings for {count} texts")
        if not all(isinstance(item, dict) for item in data):
            raise ProviderError(f"{where} returned a 'data' entry that is not an object")
        indexes = [item.get("index") for item in data]
        if all(index is None for index in indexes):
            ordered = data  # no indexes at all: take the order as given
        else:
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
                raise ProviderError(f"{where} returned an embedding without an integer 'index'")
            if sorted(indexes) != list(range(count)):
                raise ProviderError(
                    f"{where} returned indexes {sorted(indexes)[:10]} for {count} texts"
                )
            ordered = sorted(data, key=lambda item: item["index"])
        rows: list[list[float]] = []
        width: int | None = None
        for position, item in enumerate(ordered):
            embedding = item.get("embedding")
            if not isinstance(embedding, list) or not embedding:
                raise ProviderError(f"{where} returned no embedding list for text {position}")
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in embedding):
                raise ProviderError(f"{where} returned a non-numeric embedding for text {position}")
            if width is None:
                width = len(embedding)
            elif len(embedding) != width:
                raise ProviderError(
                    f"{where} returned embeddings of different lengths ({width} and "
                    f"{len(embedding)}) in one answer"
                )
            rows.append(embedding)
        vectors = np.asarray(rows, dtype=np.float64)
        if not np.isfinite(vectors).all():
            raise ProviderError(f"{where} returned an embedding containing NaN or infinity")
        return vectors.astype(np.float32)
