"""Issue 18 / seed 000 future 2: importance decays with time since a memory was last saved,
changed, saved again or recalled; it only re-ranks, it never deletes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memorybank import MemoryBank
from memorybank.core.records import save_records
from memorybank.model import Category, Memory, utcnow
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.ranking import RetrievalSettings, importance_now
from memorybank.stores.sqlite import SQLiteStore
from server_helpers import LOOPBACK_PEER, make_world

TWO_YEARS = timedelta(days=730)


def _bank(tmp_path: Path, embedder: LocalEmbedder, half_life: float | None) -> MemoryBank:
    # Recency weighted 0 and relevance almost 0 (both facts match the query), so the order
    # below is importance (and its decay) alone.
    retrieval = RetrievalSettings(
        relevance_weight=0.01, recency_weight=0.0, importance_half_life_days=half_life
    )
    store = SQLiteStore(tmp_path / f"decay-{half_life}.db", dimension=embedder.dimension)
    return MemoryBank(store, embedder, retrieval=retrieval)


def _old_and_new(bank: MemoryBank) -> tuple[Memory, Memory]:
    then = utcnow() - TWO_YEARS
    old = Memory(
        user_id="u",
        content="User drinks oolong tea",
        category=Category.PREFERENCE,
        importance=9,
        created_at=then,
        updated_at=then,
    )
    new = Memory(
        user_id="u", content="User drinks jasmine tea", category=Category.PREFERENCE, importance=6
    )
    stored = save_records(bank, [old, new], actor="u")
    # Both are true (the judge reads the newer tea as a change, which a search would show
    # first whatever the importance): answered, the two are ordered by importance alone.
    bank.store.keep_both(stored[1], stored[0], "u")
    return stored[0], stored[1]


@pytest.mark.parametrize("half_life", [None, 180.0])
def test_decay_reranks_and_never_deletes(
    tmp_path: Path, embedder: LocalEmbedder, half_life: float | None
) -> None:
    with _bank(tmp_path, embedder, half_life) as bank:
        old, new = _old_and_new(bank)
        hits = bank.search("u", "what tea does the user drink", limit=2)
        first = hits[0].memory.id
        if half_life is None:
            assert first == old.id and hits[0].importance == 0.9
        else:  # two years at a 180-day half-life: 9 has fallen to about 1.5, below 6
            assert first == new.id
            faded = next(h for h in hits if h.memory.id == old.id)
            assert 0.14 < faded.importance < 0.15
        assert bank.get(old.id, "u").importance == 9  # stored importance is unchanged
        assert bank.count("u") == 2


def test_saving_again_and_recalling_reinforce(tmp_path: Path, embedder: LocalEmbedder) -> None:
    with _bank(tmp_path, embedder, 180.0) as bank:
        old, new = _old_and_new(bank)
        now = utcnow()
        assert importance_now(bank.get(old.id, "u"), now, 180.0) < 1.5
        again = bank.save("u", "User drinks oolong tea", "preference")
        assert again.duplicate and again.existing_id == old.id  # refused, and reinforced:
        assert importance_now(bank.get(old.id, "u"), utcnow(), 180.0) > 8.9
        assert bank.search("u", "what tea does the user drink", limit=1)[0].memory.id == old.id

        # A search's hits are written as recalled at the next flush (or when the bank closes).
        then = utcnow() - TWO_YEARS
        older = Memory(
            user_id="u",
            content="User's cat is called Miso",
            importance=8,
            category=Category.RELATIONSHIP,
            created_at=then,
            updated_at=then,
        )
        [stored] = save_records(bank, [older], actor="u")
        assert stored.id in {h.memory.id for h in bank.search("u", "the user's cat", limit=5)}
        assert bank.get(stored.id, "u").reinforced_at is None
        bank.reinforcements.flush()
        reinforced = bank.get(stored.id, "u").reinforced_at
        assert reinforced is not None and utcnow() - reinforced < timedelta(minutes=1)


def test_the_api_shows_the_effective_importance(bank: MemoryBank) -> None:
    then = utcnow() - timedelta(days=180)
    record = Memory(
        user_id="owner",
        content="User prefers window seats on long flights",
        category=Category.PREFERENCE,
        importance=9,
        created_at=then,
        updated_at=then,
    )
    save_records(bank, [record], actor="owner")
    world = make_world(bank)
    with TestClient(world.app, client=LOOPBACK_PEER) as client:
        listed = client.get("/api/memory/user", headers=world.auth("owner")).json()["memories"]
    [shown] = listed
    assert shown["importance"] == 9 and shown["effective_importance"] == pytest.approx(5.0, 0.01)
