"""The doctests of src/memorybank run with the tests (``--doctest-modules`` over
``src/memorybank`` in pyproject.toml's pytest section).

Each doctest runs in a temporary directory of its own, so an example may write relative paths
(``memorybank.open("sqlite:///memories.db")``). An example that uses the name ``bank`` gets a
real, empty :class:`~memorybank.MemoryBank` on a SQLite file there, with the bundled embedder
(loaded once per session).
"""

from __future__ import annotations

import doctest
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from memorybank.providers.embedders.local import LocalEmbedder

# Modules that doctest collection must not import (paths relative to this file): those needing
# an optional extra that is not installed. Only the framework integrations need one (the `dev`
# extra installs them all); every other module of src/memorybank imports with the core
# dependencies (the benchmarks, which need the `bench` extra, live in benchmarks/, outside the
# doctest paths). `__main__.py` files are never imported by pytest's doctest collection.
_INTEGRATIONS = {"langgraph": "langgraph", "pydantic_ai": "pydantic_ai", "openai_agents": "agents"}
collect_ignore: list[str] = [
    f"src/memorybank/integrations/{module}.py"
    for module, framework in _INTEGRATIONS.items()
    if importlib.util.find_spec(framework) is None
]

_USES_BANK = re.compile(r"\bbank\b")


@pytest.fixture(scope="session")
def doctest_embedder() -> Iterator[LocalEmbedder]:
    """The bundled embedder, shared by the session's doctest banks (which must not close it)."""
    from memorybank.providers.embedders.local import LocalEmbedder

    class Kept(LocalEmbedder):
        def close(self) -> None:
            pass

    embedder = Kept()
    yield embedder
    LocalEmbedder.close(embedder)


def _uses_bank(test: doctest.DocTest) -> bool:
    return any(
        _USES_BANK.search(example.source) and not example.options.get(doctest.SKIP)
        for example in test.examples
    )


@pytest.fixture(autouse=True)
def _doctest_setting(request: pytest.FixtureRequest) -> Iterator[None]:
    """For a doctest: a temporary working directory, and ``bank`` when an example uses it."""
    if not isinstance(request.node, pytest.DoctestItem):
        yield
        return
    from memorybank import MemoryBank
    from memorybank.stores.sqlite import SQLiteStore

    tmp_path: Path = request.getfixturevalue("tmp_path")
    request.getfixturevalue("monkeypatch").chdir(tmp_path)
    namespace: dict[str, Any] = request.getfixturevalue("doctest_namespace")
    test = request.node.dtest
    if test is None or not _uses_bank(test):
        yield
        return
    embedder = request.getfixturevalue("doctest_embedder")
    store = SQLiteStore(tmp_path / "doctest.db", dimension=embedder.dimension)
    with MemoryBank(store, embedder) as bank:
        namespace["bank"] = bank
        try:
            yield
        finally:
            del namespace["bank"]
