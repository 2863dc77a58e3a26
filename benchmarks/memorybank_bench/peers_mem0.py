"""mem0 for ``memorybank bench peers``, offline: ``infer=False`` (each fact stored as given,
no LLM), memorybank's own bundled MiniLM embedder through mem0's langchain embedder hook (the
same model, threads and vectors as memorybank's), a local Qdrant collection on disk, telemetry
off — as ``tests/compat/test_mem0.py`` wires it. Needs the ``mem0-compat-test`` extra."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path
from typing import Any

from memorybank.errors import ConfigurationError
from memorybank.factory import build_embedder
from memorybank.settings import Settings
from memorybank_bench.peers_run import TOP_K, Fact

MEM0_INSTALL = "pip install 'memorybank[mem0-compat-test]'"


def check_mem0_installed() -> None:
    """Raise :class:`ConfigurationError` saying what to install when mem0 cannot run here,
    offline: mem0 and langchain missing, or spaCy present without its English model (mem0
    would then download it)."""
    for module in ("mem0", "langchain_core", "langchain"):
        if importlib.util.find_spec(module) is None:
            raise ConfigurationError(f"mem0 is not installed ({module} is missing): {MEM0_INSTALL}")
    if importlib.util.find_spec("spacy") and not importlib.util.find_spec("en_core_web_sm"):
        raise ConfigurationError(
            "spaCy is installed without en_core_web_sm, which mem0 would download: "
            "python -m spacy download en_core_web_sm, or uninstall spaCy"
        )


def mem0_config(workdir: Path, embedding_model: Any, dimension: int) -> dict[str, Any]:
    """mem0's settings: the given langchain embedder, Qdrant files and history in ``workdir``.

    >>> config = mem0_config(Path("w"), object(), 384)
    >>> config["vector_store"]["config"]["path"], config["embedder"]["provider"]
    ('w/qdrant', 'langchain')
    """
    return {
        "embedder": {
            "provider": "langchain",
            "config": {"model": embedding_model, "embedding_dims": dimension},
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(workdir / "qdrant"),
                "collection_name": "peers",
                "embedding_model_dims": dimension,
                "on_disk": True,
            },
        },
        # Never called with infer=False; a closed port, so a mistake fails instead of leaking.
        "llm": {
            "provider": "openai",
            "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
        },
        "history_db_path": str(workdir / "mem0-history.db"),
    }


class Mem0Peer:
    """mem0's ``Memory``: ``add(text, user_id=…, metadata=…, infer=False)`` and
    ``search(question, filters={"user_id": …}, top_k=10)``, with its default threshold."""

    def __init__(self, workdir: Path) -> None:
        check_mem0_installed()
        # Read when mem0 is first imported: no telemetry, and its home in the scratch dir.
        os.environ["MEM0_TELEMETRY"] = "False"
        os.environ["MEM0_DIR"] = str(workdir / "mem0-home")
        import mem0  # type: ignore[import-untyped]
        from langchain_core.embeddings import Embeddings

        embedder = build_embedder(Settings())

        class Bundled(Embeddings):
            """memorybank's embedder as a langchain one, as mem0's hook wants it."""

            def embed_query(self, text: str) -> list[float]:
                return [float(x) for x in embedder.embed([text])[0]]

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [[float(x) for x in row] for row in embedder.embed(list(texts))]

        self.version = importlib.metadata.version("mem0ai")
        self._embedder = embedder
        self._memory = mem0.Memory.from_config(mem0_config(workdir, Bundled(), embedder.dimension))

    def add(self, user: str, fact: Fact) -> bool:
        # mem0's open-source add takes no timestamp: the fact's date is not passed.
        added = self._memory.add(
            fact.text, user_id=user, metadata={"dia_ids": list(fact.dia_ids)}, infer=False
        )
        return bool(added.get("results"))

    def search(self, user: str, question: str) -> list[frozenset[str]]:
        found = self._memory.search(question, filters={"user_id": user}, top_k=TOP_K)
        return [
            frozenset(str(d) for d in (row.get("metadata") or {}).get("dia_ids") or ())
            for row in found["results"]
        ]

    def embed(self, text: str) -> None:
        self._embedder.embed([text])

    def close(self) -> None:
        self._memory.close()
        self._memory.vector_store.client.close()
        self._embedder.close()


__all__ = ["MEM0_INSTALL", "Mem0Peer", "check_mem0_installed", "mem0_config"]
