"""The in-process exact vector index behind the SQLite store."""

from __future__ import annotations

import numpy as np

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
