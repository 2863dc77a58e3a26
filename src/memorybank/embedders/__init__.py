"""Embedders: text in, L2-normalised float32 vectors out.

:class:`LocalEmbedder` runs the bundled all-MiniLM-L6-v2 offline (the default);
:class:`OpenAIEmbedder` calls any OpenAI-compatible ``/v1/embeddings`` endpoint.
"""

from memorybank.embedders.base import Embedder, normalise
from memorybank.embedders.local import LocalEmbedder
from memorybank.embedders.openai import OpenAIEmbedder

__all__ = ["Embedder", "LocalEmbedder", "OpenAIEmbedder", "normalise"]
