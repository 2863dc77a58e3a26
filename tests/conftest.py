"""Shared fixtures: the real bundled embedder (loaded once) and banks on real SQLite files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank import MemoryBank
from memorybank.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore


class SharedEmbedder(LocalEmbedder):
    """The session's one embedder; banks built in tests must not close it."""

    def close(self) -> None:
        pass


@pytest.fixture(scope="session")
def embedder() -> Iterator[LocalEmbedder]:
    emb = SharedEmbedder()
    yield emb
    LocalEmbedder.close(emb)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memories.db"


@pytest.fixture
def bank(db_path: Path, embedder: LocalEmbedder) -> Iterator[MemoryBank]:
    store = SQLiteStore(db_path, dimension=embedder.dimension)
    with MemoryBank(store, embedder) as b:
        yield b
