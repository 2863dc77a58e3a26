"""Importing memorybank (and its CLI) loads no model runtime: onnxruntime, onnx and tokenizers
wait until an embedding is needed, and psutil belongs to the benchmarks alone. No agent
framework either: each is loaded only by its own module of memorybank.integrations."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = (
    "langgraph",
    "langchain_core",
    "pydantic_ai",
    "agents",
    "openai",
    "llama_index",
    "mem0",
)
HEAVY = ("onnxruntime", "onnx", "tokenizers", "psutil", *FRAMEWORKS)


def _loaded_after(statement: str) -> list[str]:
    """Which of :data:`HEAVY` a fresh interpreter has loaded after ``statement``."""
    report = f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    code = f"import json, sys\n{statement}\n{report}"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded: list[str] = json.loads(result.stdout)
    return loaded


@pytest.mark.parametrize(
    "statement",
    [
        "import memorybank",
        "import memorybank.errors",
        "import memorybank; import memorybank.cli",
        "import memorybank.compat.mem0",  # mem0's interface, without mem0
    ],
)
def test_importing_memorybank_loads_no_model_runtime(statement: str) -> None:
    assert _loaded_after(statement) == []


@pytest.mark.parametrize(
    ("module", "frameworks"),
    [
        ("langgraph", {"langgraph", "langchain_core"}),
        ("pydantic_ai", {"pydantic_ai"}),
        ("openai_agents", {"agents", "openai"}),
        ("llama_index", {"llama_index"}),
    ],
)
def test_an_integration_loads_its_own_framework_only(module: str, frameworks: set[str]) -> None:
    pytest.importorskip(
        {"openai_agents": "agents", "llama_index": "llama_index.core"}.get(module, module)
    )
    loaded = set(_loaded_after(f"import memorybank.integrations.{module}")) & set(FRAMEWORKS)
    assert loaded == frameworks


def test_the_embedders_load_when_asked_for() -> None:
    statement = "from memorybank.providers.embedders import LocalEmbedder"
    assert set(_loaded_after(statement)) == {"onnxruntime", "onnx", "tokenizers"}


def test_lazy_names_are_the_real_classes() -> None:
    import memorybank.providers.embedders as embedders
    from memorybank.providers.embedders.local import LocalEmbedder
    from memorybank.providers.embedders.openai import OpenAIEmbedder

    assert embedders.LocalEmbedder is LocalEmbedder
    assert embedders.OpenAIEmbedder is OpenAIEmbedder
    assert {"LocalEmbedder", "OpenAIEmbedder"} <= set(dir(embedders))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = embedders.Nope
