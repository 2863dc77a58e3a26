"""The in-process exact vector index behind the SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memorybank.model import Category, EventKind, HistoryEvent, Memory, MemoryFilter, ScopeSet
from memorybank.stores.sqlite import SQLiteStore
from memorybank.stores.vector_index import ScopeMatrix


def _unit(rows: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_a_loaded_matrix_searches_and_changes_like_one_built_row_by_row() -> None:
    ids = np.arange(100, 300, dtype=np.int64)
    vectors = _unit(len(ids), 16, seed=1)
    built = ScopeMatrix(16, rev=3)
    built.add(ids, vectors)
    loaded = ScopeMatrix.loaded(16, 3, ids, vectors)
    assert len(loaded) == len(built) == 200 and loaded.rev == 3
    query = _unit(1, 16, seed=2)[0]
    for matrix in (built, loaded):
        matrix.remove(np.array([ids[0], ids[57]]))
        matrix.add(np.array([7, ids[1]]), _unit(2, 16, seed=3))  # one new, one replaced
    found_built, sims_built = built.search(query, 10)
    found_loaded, sims_loaded = loaded.search(query, 10)
    assert found_loaded.tolist() == found_built.tolist()
    assert np.allclose(sims_loaded, sims_built)
    assert ids[0] not in loaded.search(query, 300)[0]
    assert len(loaded) == 199


def test_an_empty_scope_loads_to_an_empty_matrix() -> None:
    empty = ScopeMatrix.loaded(8, 0, np.zeros(0, np.int64), np.zeros((0, 8), np.float32))
    assert len(empty) == 0
    assert empty.search(_unit(1, 8, seed=4)[0], 5)[0].tolist() == []


DIM = 8
ALICE = ScopeSet(user_id="alice")


def _vec(*hot: float) -> np.ndarray:
    v = np.zeros((1, DIM), dtype=np.float32)
    v[0, : len(hot)] = hot
    return v / np.linalg.norm(v)


def _save(store: SQLiteStore, text: str, vector: np.ndarray) -> Memory:
    memory = Memory(user_id="alice", content=text, category=Category.CONTEXT)
    store.insert([memory], vector, dedup=[False], actor="alice")
    return memory


def _nearest(store: SQLiteStore, vector: np.ndarray, k: int = 10) -> list[str]:
    return [c.memory.content for c in store.vector_search(ALICE, vector, k, MemoryFilter())]


@pytest.fixture
def two_processes(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """A reader and a writer store on one file, standing for two worker processes."""
    reader = SQLiteStore(tmp_path / "m.db", dimension=DIM)
    writer = SQLiteStore(tmp_path / "m.db", dimension=DIM)
    try:
        yield reader, writer
    finally:
        reader.close()
        writer.close()


def test_a_matrix_made_stale_by_another_process_is_patched_not_read_again(
    two_processes: tuple[SQLiteStore, SQLiteStore],
) -> None:
    reader, writer = two_processes
    north = _save(writer, "north", _vec(1))
    _save(writer, "east", _vec(0, 1))
    assert _nearest(reader, _vec(1), 1) == ["north"]
    assert (reader.index.vectors.loads, reader.index.vectors.patches) == (1, 0)

    _save(writer, "north by east", _vec(1, 0.1))  # added
    writer.replace(  # moved: same row, new vector
        north.model_copy(update={"content": "south"}),
        _vec(-1),
        HistoryEvent.about(north, EventKind.UPDATE, "alice", new_content="south"),
    )
    listed = writer.list_memories(ALICE, MemoryFilter(), limit=10)
    writer.delete([m.id for m in listed if m.content == "east"], ALICE, "alice")  # gone
    assert _nearest(reader, _vec(1), 10) == ["north by east", "south"]
    assert _nearest(reader, _vec(-1), 1) == ["south"]
    assert (reader.index.vectors.loads, reader.index.vectors.patches) == (1, 1)


def test_changes_the_log_does_not_itemise_or_no_longer_holds_reload_the_scope(
    two_processes: tuple[SQLiteStore, SQLiteStore],
) -> None:
    reader, writer = two_processes
    first = _save(writer, "first", _vec(1))
    assert _nearest(reader, _vec(1)) == ["first"]
    # A reindex rewrites vectors without listing them: the reader reads the scope again.
    writer.set_vectors([first.id], _vec(0, 1), "other-model")
    assert reader.vector_search(ALICE, _vec(0, 1), 1, MemoryFilter())[0].score > 0.99
    assert (reader.index.vectors.loads, reader.index.vectors.patches) == (2, 0)
    # More revisions behind than the log keeps: read again too, and still right.
    writer.index.vector_log_revisions = 2
    for n in range(3):
        _save(writer, f"more {n}", _vec(1, n + 1))
    assert len(_nearest(reader, _vec(1))) == 4
    assert (reader.index.vectors.loads, reader.index.vectors.patches) == (3, 0)
    with reader.reading() as txn:
        logged = txn.fetch("SELECT count(*) FROM vector_changes")
    assert logged[0][0] == 2  # one row per revision, the newest two kept


def test_a_bulk_import_is_logged_as_a_whole_scope_change(
    two_processes: tuple[SQLiteStore, SQLiteStore],
) -> None:
    reader, writer = two_processes
    _save(writer, "first", _vec(1))
    assert _nearest(reader, _vec(1)) == ["first"]
    many = [
        Memory(user_id="alice", content=f"turn {n}", category=Category.CONTEXT) for n in range(1001)
    ]
    vectors = np.repeat(_vec(0, 1), len(many), axis=0)
    writer.insert(many, vectors, dedup=[False] * len(many), actor="alice")
    with reader.reading() as txn:
        logged = txn.fetch("SELECT row_id FROM vector_changes")
    assert len(logged) == 2 and (-1,) in logged  # first's row, then one marker for 1,001 rows
    assert len(reader.vector_search(ALICE, _vec(0, 1), 2000, MemoryFilter())) == 1002
    assert (reader.index.vectors.loads, reader.index.vectors.patches) == (2, 0)
