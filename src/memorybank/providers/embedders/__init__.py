"""Embedders: text in, L2-normalised float32 vectors out.

:class:`LocalEmbedder` runs the bundled all-MiniLM-L6-v2 offline (the default);
:class:`OpenAIEmbedder` calls any OpenAI-compatible ``/v1/embeddings`` endpoint.

Both are imported on first use (``from memorybank.providers.embedders import LocalEmbedder``
works as
ever), so that importing memorybank does not load onnxruntime, onnx and tokenizers, or
httpx's client, before an embedding is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memorybank.providers.embedders.base import Embedder, normalise

if TYPE_CHECKING:
    from memorybank.providers.embedders.local import LocalEmbedder
    from memorybank.providers.embedders.openai import OpenAIEmbedder

#: Name → the module that defines it, imported when the name is first asked for.
_LAZY = {
    "LocalEmbedder": "memorybank.providers.embedders.local",
    "OpenAIEmbedder": "memorybank.providers.embedders.openai",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = ["Embedder", "LocalEmbedder", "OpenAIEmbedder", "normalise"]
