"""The contract every Store must meet, run against real databases.

Parametrized over backends; vectors are small hand-made ones so the expected order is exact.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast, get_type_hints

import numpy as np
import pytest

from memorybank.errors import NotFound, StoreError, ValidationError
from memorybank.model import (
    Category,
    Channel,
    EventKind,
    ForgetAction,
    ForgetPlan,
    ForgetStep,
    HistoryEvent,
    Memory,
    MemoryFilter,
    PlanStatus,
    Ring,
    Scope,
    ScopeSet,
    acting_through,
)
from memorybank.model.accounts import User
from memorybank.model.stored import InsertOutcome, PlanOutcome
from memorybank.providers.embedders.base import normalise
from memorybank.stores.accounts_sql import sql_accounts
from memorybank.stores.base import Store
from memorybank.stores.search_index import SearchIndex
from memorybank.stores.sqlite import SQLiteStore

DIM = 8
StoreFactory = Callable[[], Store]


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of stores on one database (several = several processes' view of it)."""
    opened: list[Store] = []
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None

    def factory() -> Store:
        store: Store
        if url is not None:
            from memorybank.stores.postgres import PostgresStore

            store = PostgresStore(url, dimension=DIM)
        else:
            store = SQLiteStore(tmp_path / "contract.db", dimension=DIM)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: StoreFactory) -> Store:
    return open_store()


def vec(*hot: float) -> np.ndarray:
    """A unit vector from a few leading components."""
    v = np.zeros((1, DIM), dtype=np.float32)
    v[0, : len(hot)] = hot
    return normalise(v)[0]


def mem(user: str, text: str, project: str | None = None, **kw: object) -> Memory:
    return Memory(
        user_id=user,
        project_id=project,
        content=text,
        category=kw.pop("category", Category.CONTEXT),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def put(
    store: Store,
    memories: list[Memory],
    vectors: list[np.ndarray],
    judge: Judge | None = None,
    floor: float | None = None,
) -> list[InsertOutcome]:
    """Insert, checking each memory for duplicates with ``judge`` when there is one."""
    return store.insert(
        memories,
        np.stack(vectors),
        dedup=[judge is not None] * len(memories),
        actor="test",
        judge=judge,
        candidate_floor=floor,
    )


ALICE = ScopeSet(user_id="alice")
BOB = ScopeSet(user_id="bob")
NONE = MemoryFilter()


def test_insert_get_and_scope_visibility(store: Store) -> None:
    a = mem("alice", "Alice likes green tea")
    b = mem("bob", "Bob likes black coffee")
    p = mem("alice", "Project Apollo ships in May", project="apollo")
    put(store, [a, b, p], [vec(1), vec(0, 1), vec(0, 0, 1)])
    assert store.get(a.id, ALICE) == a
    assert store.get(a.id, BOB) is None
    assert store.get(p.id, ALICE) is None  # the project was not passed in
    assert store.get(p.id, ScopeSet(user_id="bob", project_ids=("apollo",))) == p
    only_project = ScopeSet(user_id="alice", include_private=False, project_ids=("apollo",))
    assert store.get(a.id, only_project) is None


def test_round_trip_keeps_every_field(store: Store) -> None:
    m = mem(
        "alice",
        "User's sister Maria lives in Porto",
        category=Category.RELATIONSHIP,
        ring=Ring.EPISODIC,
        domain="relationships",
        tags=("family", "portugal"),
        metadata={"dia_id": "D1:3", "n": 2, "nested": {"a": [1, 2]}},
        importance=8,
        source="user",
        created_by="alice",
        reasoning="Family detail",
        session_id="s1",
        occurred_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        embedding_model="m",
    )
    put(store, [m], [vec(1)])
    assert store.get(m.id, ALICE) == m


def test_duplicate_refused_above_the_floor_in_same_scope_only(store: Store) -> None:
    same = Judge(default=Said("duplicate", "says nothing new"))
    first = mem("alice", "User prefers TypeScript")
    put(store, [first], [vec(1, 0.01)], same, floor=0.95)
    again = put(store, [mem("alice", "User likes TypeScript")], [vec(1, 0.02)], same, floor=0.95)
    assert not again[0].inserted
    assert again[0].duplicate_of == first and again[0].similarity > 0.95
    # Another user, or the same text said as conversation (no dedup), is stored.
    bobs = put(store, [mem("bob", "User likes TypeScript")], [vec(1, 0.02)], same, floor=0.95)
    assert bobs[0].inserted
    assert put(store, [mem("alice", "TypeScript!")], [vec(1, 0.02)])[0].inserted
    # Below the floor is not a duplicate: the judge is not even asked.
    asked = len(same.asked)
    rust = put(store, [mem("alice", "User prefers Rust")], [vec(1, 0.6)], same, floor=0.95)
    assert rust[0].inserted and len(same.asked) == asked


def test_duplicate_within_one_batch(store: Store) -> None:
    out = put(
        store,
        [mem("alice", "User prefers tea"), mem("alice", "User loves tea")],
        [vec(1), vec(1, 0.001)],
        Judge(default=Said("duplicate")),
    )
    assert [o.inserted for o in out] == [True, False]
    assert out[1].duplicate_of is not None and out[1].duplicate_of.id == out[0].memory.id


def test_checking_for_duplicates_needs_a_judge(store: Store) -> None:
    """What a duplicate is, is the judge's to say: the store has no threshold of its own."""
    with pytest.raises(ValidationError):
        store.insert([mem("alice", "User likes tea")], np.stack([vec(1)]), dedup=[True], actor="t")
    assert store.count(ALICE, NONE) == 0


@dataclass(frozen=True)
class Said:
    """A verdict as a judge passed to ``Store.insert`` answers it."""

    relation: str
    why: str = ""
    probabilities: tuple[float, float, float] | None = None
    judge: str | None = None


class Judge:
    """A judge for the contract: a verdict per stored text (by its last word), and a log of
    what it was asked. The store calls it once per new memory with all that memory's
    candidates (a batch, as the learned judge reads them) and takes one verdict per candidate.
    """

    def __init__(self, default: Said = Said("distinct"), **verdicts: Said) -> None:
        self.default = default
        self.verdicts = verdicts
        self.asked: list[tuple[str, str, float]] = []
        self.calls: list[str] = []

    def __call__(self, new: Memory, candidates: Sequence[tuple[Memory, float]]) -> list[Said]:
        self.calls.append(new.content)
        self.asked.extend((new.content, old.content, sim) for old, sim in candidates)
        return [self.verdicts.get(old.content.split()[-1], self.default) for old, _ in candidates]


def judged(
    store: Store, memories: list[Memory], vectors: list[np.ndarray], judge: Judge, k: int = 5
) -> list[InsertOutcome]:
    return store.insert(
        memories,
        np.stack(vectors),
        dedup=[True] * len(memories),
        actor="test",
        judge=judge,
        candidate_floor=0.5,
        candidates=k,
    )


def test_judge_sees_the_k_nearest_checked_facts_of_the_scope_above_the_floor(
    store: Store,
) -> None:
    olds = [mem("alice", f"fact {word}") for word in ("near", "mid", "far", "below")]
    put(store, olds, [vec(1, 0.1), vec(1, 0.5), vec(1, 1), vec(1, 3)], Judge())
    put(store, [mem("alice", "turn said", ring=Ring.EPISODIC, source="conversation")], [vec(1)])
    put(store, [mem("bob", "fact other")], [vec(1)], Judge())
    judge = Judge()
    out = judged(store, [mem("alice", "fact new")], [vec(1)], judge, k=5)
    assert out[0].inserted and out[0].conflicts == ()
    # Nearest first; the chat turn, another user's fact and one below the floor are not asked.
    assert [old for _, old, _ in judge.asked] == ["fact near", "fact mid", "fact far"]
    sims = [sim for _, _, sim in judge.asked]
    assert sims == pytest.approx([0.995, 0.894, 0.707], abs=1e-3)
    assert judge.calls == ["fact new"]  # one call with all its candidates
    judge = Judge()
    judged(store, [mem("alice", "fact again")], [vec(1)], judge, k=2)
    assert [old for _, old, _ in judge.asked] == ["fact new", "fact near"]  # k = 2


def test_judge_decides_duplicates_and_conflicts(store: Store) -> None:
    tea, coffee, rust = (mem("alice", f"User likes {w}") for w in ("tea", "coffee", "rust"))
    judged(store, [tea, coffee, rust], [vec(1, 0.2), vec(1, 0.3), vec(1, 0.4)], Judge())
    judge = Judge(tea=Said("conflict", "another drink"), rust=Said("conflict", "a language"))
    out = judged(store, [mem("alice", "User likes juice")], [vec(1)], judge)[0]
    assert out.inserted and out.duplicate_of is None
    assert [(c.memory, c.why) for c in out.conflicts] == [
        (tea, "another drink"),
        (rust, "a language"),
    ]
    assert out.conflicts[0].similarity == pytest.approx(0.981, abs=1e-3)
    # Any duplicate keeps the new fact out, whatever else the judge said; nothing is stored.
    judge = Judge(tea=Said("conflict"), coffee=Said("duplicate", "says nothing new"))
    refused = judged(store, [mem("alice", "User enjoys coffee")], [vec(1)], judge)[0]
    assert not refused.inserted and refused.duplicate_of == coffee
    assert refused.similarity == pytest.approx(0.958, abs=1e-3)
    assert store.count(ALICE, NONE) == 4
    # Unchecked items (conversation) are never judged.
    judge = Judge(tea=Said("duplicate"))
    assert store.insert(
        [mem("alice", "tea tea")],
        np.stack([vec(1)]),
        dedup=[False],
        actor="t",
        judge=judge,
        candidate_floor=0.5,
    )[0].inserted
    assert judge.asked == []


def test_a_new_fact_with_no_candidate_is_not_judged(store: Store) -> None:
    judge = Judge(default=Said("duplicate"))
    out = judged(store, [mem("alice", "User plays chess")], [vec(0, 1)], judge)
    assert out[0].inserted and judge.calls == []


def test_the_conflicts_it_replaces_are_superseded_in_the_insert(store: Store) -> None:
    """``replaces`` sees the conflicts (with their similarity) and picks those the new fact
    retires: they are marked superseded by it with a SUPERSEDE event; the rest stay current."""
    berlin, madrid = mem("alice", "User lives in Berlin"), mem("alice", "Marco lives in Madrid")
    put(store, [berlin, madrid], [vec(1, 0.1), vec(1, 0.3)], Judge())
    seen: list[list[tuple[str, float]]] = []

    def replaces(new: Memory, conflicts: Sequence[tuple[Memory, float]]) -> list[bool]:
        seen.append([(old.content, sim) for old, sim in conflicts])
        return [old.content.endswith("Berlin") for old, _ in conflicts]

    judge = Judge(Berlin=Said("conflict", "moved"), Madrid=Said("conflict", "a city"))
    lisbon = mem("alice", "User lives in Lisbon")
    out = store.insert(
        [lisbon], np.stack([vec(1)]), dedup=[True], actor="t", judge=judge, replaces=replaces
    )[0]
    assert out.inserted
    assert [(r.memory.id, r.why) for r in out.conflicts] == [(madrid.id, "a city")]
    assert [(r.memory.id, r.why) for r in out.superseded] == [(berlin.id, "moved")]
    assert out.superseded[0].memory.superseded_by == lisbon.id
    assert [[text for text, _ in call] for call in seen] == [[berlin.content, madrid.content]]
    assert seen[0][0][1] == pytest.approx(0.995, abs=1e-3)
    stored = store.get(berlin.id, ALICE)
    assert stored is not None and stored.superseded_by == lisbon.id
    assert store.history(berlin.id, ALICE)[-1].kind == EventKind.SUPERSEDE
    kept = store.get(madrid.id, ALICE)
    assert kept is not None and kept.superseded_by is None
    # Without conflicts ``replaces`` is not asked.
    seen.clear()
    store.insert(
        [mem("alice", "User plays chess")],
        np.stack([vec(0, 1)]),
        dedup=[True],
        actor="t",
        judge=Judge(),
        replaces=replaces,
    )
    assert seen == []


def test_judged_batch_counts_earlier_items_and_skips_superseded_facts(store: Store) -> None:
    old = mem("alice", "User lives in London")
    put(store, [old], [vec(1, 0.1)], Judge())
    judge = Judge(Paris=Said("conflict", "another city"))
    out = judged(
        store,
        [mem("alice", "User lives in Paris"), mem("alice", "User is in Paris")],
        [vec(1, 0.9), vec(1, 0.95)],
        judge,
    )
    assert [o.inserted for o in out] == [True, True]
    assert out[1].conflicts[0].memory.id == out[0].memory.id
    marked = old.model_copy(update={"superseded_by": out[0].memory.id})
    store.replace(marked, None, HistoryEvent.about(old, EventKind.SUPERSEDE, "t"))
    # Saying the superseded fact again is no duplicate of it: it is not even asked about.
    judge = Judge(London=Said("duplicate"))
    again = judged(store, [mem("alice", "User lives in London")], [vec(1, 0.1)], judge)
    assert again[0].inserted
    assert "User lives in London" not in [old for _, old, _ in judge.asked]


def test_vector_search_order_k_and_filters(store: Store) -> None:
    ms = [
        mem("alice", "north", category=Category.PREFERENCE, importance=9, tags=("x",)),
        mem("alice", "north-east", category=Category.CONTEXT, importance=3),
        mem("alice", "east", category=Category.CONTEXT, importance=5, metadata={"k": 1}),
        mem("bob", "bob north", category=Category.PREFERENCE),
    ]
    put(store, ms, [vec(1), vec(1, 1), vec(0, 1), vec(1)])
    hits = store.vector_search(ALICE, vec(1), 10, NONE)
    assert [h.memory.content for h in hits] == ["north", "north-east", "east"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(store.vector_search(ALICE, vec(1), 2, NONE)) == 2
    pref = MemoryFilter(category=(Category.PREFERENCE,))
    assert [h.memory.content for h in store.vector_search(ALICE, vec(0, 1), 5, pref)] == ["north"]
    assert [
        h.memory.content
        for h in store.vector_search(ALICE, vec(1), 5, MemoryFilter(min_importance=5))
    ] == ["north", "east"]
    assert [
        h.memory.content for h in store.vector_search(ALICE, vec(1), 5, MemoryFilter(tags=("x",)))
    ] == ["north"]
    assert [
        h.memory.content
        for h in store.vector_search(ALICE, vec(1), 5, MemoryFilter(metadata={"k": 1}))
    ] == ["east"]
    assert store.vector_search(ALICE, vec(1), 5, MemoryFilter(metadata={"k": "1"})) == []


def test_time_filters(store: Store) -> None:
    old = mem("alice", "old fact", created_at=datetime(2020, 1, 1, tzinfo=UTC))
    new = mem("alice", "new fact")
    put(store, [old, new], [vec(1), vec(1, 0.5)])
    since = MemoryFilter(since=datetime.now(UTC) - timedelta(days=1))
    assert [m.content for m in store.list_memories(ALICE, since, limit=10)] == ["new fact"]
    until = MemoryFilter(until=datetime(2021, 1, 1, tzinfo=UTC))
    assert [h.memory.content for h in store.vector_search(ALICE, vec(1), 5, until)] == ["old fact"]


def test_text_search_bm25_stemming_and_scope(store: Store) -> None:
    ms = [
        mem("alice", "User runs marathons every spring"),
        mem("alice", "User's cat is named Pixel"),
        mem("alice", "User adopted a second cat called Byte"),
        mem("bob", "Bob's cat is called Secret"),
    ]
    put(store, ms, [vec(1), vec(0, 1), vec(0, 0, 1), vec(1)])
    assert [h.memory.content for h in store.text_search(ALICE, "running", 5, NONE)] == [
        "User runs marathons every spring"
    ]
    cats = store.text_search(ALICE, "What is the name of my cat?", 5, NONE)
    assert {h.memory.content for h in cats} == {ms[1].content, ms[2].content}
    assert cats[0].memory.content == "User's cat is named Pixel"  # cat + name(d)
    assert all(h.score > 0 for h in cats)
    assert store.text_search(ALICE, "Secret", 5, NONE) == []
    assert store.text_search(ALICE, "the of and", 5, NONE) == []


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "a AND OR NOT b", "NEAR(cat pixel)", "cat*", "body: cat", "(((", "^cat", "-"],
)
def test_text_search_survives_query_syntax(store: Store, query: str) -> None:
    put(store, [mem("alice", "User's cat is named Pixel")], [vec(1)])
    store.text_search(ALICE, query, 5, NONE)  # must not raise


def test_replace_updates_text_index_and_vector(store: Store) -> None:
    m = mem("alice", "User lives in Lisbon")
    put(store, [m], [vec(1)])
    changed = m.model_copy(update={"content": "User lives in Madrid"})
    store.replace(
        changed,
        vec(0, 1),
        HistoryEvent(
            memory_id=m.id,
            user_id="alice",
            kind=EventKind.UPDATE,
            old_content=m.content,
            new_content=changed.content,
        ),
    )
    assert store.get(m.id, ALICE).content == "User lives in Madrid"
    assert store.text_search(ALICE, "Lisbon", 5, NONE) == []
    assert store.text_search(ALICE, "Madrid", 5, NONE)[0].memory.id == m.id
    assert store.vector_search(ALICE, vec(0, 1), 1, NONE)[0].score == pytest.approx(1.0, abs=1e-5)
    kinds = [(e.kind, e.old_content, e.new_content) for e in store.history(m.id, ALICE)]
    assert kinds == [
        (EventKind.ADD, None, "User lives in Lisbon"),
        (EventKind.UPDATE, "User lives in Lisbon", "User lives in Madrid"),
    ]


def test_delete_is_real_and_scoped(store: Store) -> None:
    m = mem("alice", "User's locker code is 4471")
    other = mem("alice", "User enjoys chess")
    put(store, [m, other], [vec(1), vec(0, 1)])
    assert store.delete([m.id], BOB, actor="bob") == []  # not bob's
    assert store.delete([m.id], ALICE, actor="alice") == [m.id]
    assert store.get(m.id, ALICE) is None
    assert [h.memory.id for h in store.vector_search(ALICE, vec(1), 5, NONE)] == [other.id]
    assert store.text_search(ALICE, "locker code", 5, NONE) == []
    events = store.history(m.id, ALICE)
    assert [e.kind for e in events] == [EventKind.DELETE]
    assert events[0].old_content is None and events[0].new_content is None
    assert events[0].actor == "alice"
    assert store.delete([m.id], ALICE, actor="alice") == []


def test_clear_one_scope(store: Store) -> None:
    put(
        store,
        [mem("alice", "a1"), mem("alice", "a2"), mem("alice", "p1", "apollo"), mem("bob", "b1")],
        [vec(1), vec(0, 1), vec(1), vec(1)],
    )
    assert store.clear(Scope(user_id="alice"), actor="alice") == 2
    assert store.count(ALICE, NONE) == 0
    assert store.count(ScopeSet(user_id="alice", project_ids=("apollo",)), NONE) == 1
    assert store.count(BOB, NONE) == 1


def test_list_order_pages_and_count(store: Store) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    ms = [
        mem("alice", f"fact {i}", importance=i + 1, created_at=base + timedelta(days=i))
        for i in range(5)
    ]
    put(store, ms, [vec(1, i) for i in range(5)])
    newest = store.list_memories(ALICE, NONE, limit=2)
    assert [m.content for m in newest] == ["fact 4", "fact 3"]
    page2 = store.list_memories(ALICE, NONE, limit=2, offset=2)
    assert [m.content for m in page2] == ["fact 2", "fact 1"]
    oldest = store.list_memories(ALICE, NONE, limit=1, order="created_asc")
    assert oldest[0].content == "fact 0"
    assert store.count(ALICE, MemoryFilter(min_importance=3)) == 3


def test_iter_memories_and_set_vectors(store: Store) -> None:
    ms = [mem("alice", f"fact {i}") for i in range(7)]
    put(store, ms, [vec(1)] * 7)
    batches = list(store.iter_memories(batch_size=3))
    assert [len(b) for b in batches] == [3, 3, 1]
    store.set_vectors([ms[6].id], np.stack([vec(0, 0, 0, 1)]), "other-model")
    top = store.vector_search(ALICE, vec(0, 0, 0, 1), 1, NONE)[0]
    assert top.memory.id == ms[6].id and top.memory.embedding_model == "other-model"


def test_scopes_names_each_scope_with_current_memories_once(store: Store) -> None:
    ms = [mem("bob", "b1"), mem("alice", "a1"), mem("alice", "a2"), mem("bob", "p1", "apollo")]
    ms.append(mem("alice", "p2", "apollo"))
    put(store, ms, [vec(1)] * 5)
    assert [(s.user_id, s.project_id) for s in store.scopes()] == [
        ("alice", None),
        ("bob", None),
        ("alice", "apollo"),
    ]
    store.delete([ms[0].id], BOB, actor="bob")
    assert ("bob", None) not in [(s.user_id, s.project_id) for s in store.scopes()]


def test_project_ids_lists_each_project_with_memories_once(store: Store) -> None:
    assert store.project_ids() == []
    ms = [mem("bob", "b1"), mem("alice", "p1", "zeus"), mem("bob", "p2", "apollo")]
    ms += [mem("alice", "p3", "apollo"), mem("zoe", "z1"), mem("alice", "p4", "a.b-c")]
    put(store, ms, [vec(1)] * len(ms))
    assert store.project_ids() == ["a.b-c", "apollo", "zeus"]
    store.delete([ms[1].id], ScopeSet.of(Scope(user_id="alice", project_id="zeus")), "alice")
    assert store.project_ids() == ["a.b-c", "apollo"]


def test_meta(store: Store) -> None:
    assert store.get_meta("embedding_model") is None
    store.set_meta("embedding_model", "m1")
    store.set_meta("embedding_model", "m2")
    assert store.get_meta("embedding_model") == "m2"


def test_second_process_sees_writes_and_deletes(open_store: StoreFactory) -> None:
    one, two = open_store(), open_store()
    m = mem("alice", "User plays the cello")
    put(one, [m], [vec(1)])
    assert two.vector_search(ALICE, vec(1), 1, NONE)[0].memory.id == m.id  # loads the scope
    later = mem("alice", "User plays the oboe")
    put(one, [later], [vec(0, 1)])
    assert two.vector_search(ALICE, vec(0, 1), 1, NONE)[0].memory.id == later.id
    one.delete([later.id], ALICE, actor="alice")
    assert [h.memory.id for h in two.vector_search(ALICE, vec(0, 1), 5, NONE)] == [m.id]


def test_concurrent_duplicate_saves_store_one(open_store: StoreFactory) -> None:
    stores = [open_store() for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    results: list[bool] = []

    def save(store: Store) -> None:
        barrier.wait()
        same = Judge(default=Said("duplicate"))
        out = put(store, [mem("alice", "User prefers tea")], [vec(1, 0.1)], same, floor=0.95)
        results.append(out[0].inserted)

    threads = [threading.Thread(target=save, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, True]
    assert stores[0].count(ALICE, NONE) == 1


def test_threads_share_one_store(store: Store) -> None:
    def work(n: int) -> None:
        for i in range(20):
            put(store, [mem("alice", f"thread {n} fact {i}")], [vec(1, n, i)])
            store.vector_search(ALICE, vec(1, n), 3, NONE)
            store.text_search(ALICE, f"thread {n}", 3, NONE)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.count(ALICE, NONE) == 80
    assert len(store.vector_search(ALICE, vec(1), 100, NONE)) == 80


def test_existing_ids_sees_every_scope(store: Store) -> None:
    a, b = mem("alice", "a fact"), mem("bob", "b fact")
    put(store, [a, b], [vec(1), vec(0, 1)])
    assert store.existing_ids([a.id, b.id, "mem_missing"]) == {a.id, b.id}
    assert store.existing_ids([]) == set()


def test_neighbours_within_a_session(store: Store) -> None:
    turns = [mem("alice", f"turn {i}", session_id="s1") for i in range(6)]
    other = [mem("alice", f"other {i}", session_id="s2") for i in range(2)]
    loose = mem("alice", "no session")
    bobs = mem("bob", "bob turn", session_id="s1")
    put(store, [*turns[:3], *other, loose, *turns[3:], bobs], [vec(1)] * 10)
    found = store.neighbours([turns[2].id, loose.id, other[0].id], ALICE, window=2)
    assert sorted((c.memory.content, off) for c, off in found[turns[2].id]) == [
        ("turn 0", -2),
        ("turn 1", -1),
        ("turn 3", 1),
        ("turn 4", 2),
    ]
    assert [(c.memory.content, off) for c, off in found[other[0].id]] == [("other 1", 1)]
    assert loose.id not in found
    # Filters pick among the neighbours; places are still counted over the whole session.
    assert store.neighbours([turns[2].id], ALICE, 2, MemoryFilter(session_id="s2")) == {}
    kept = store.neighbours([other[0].id], ALICE, 2, MemoryFilter(session_id="s2"))
    assert [(c.memory.content, off) for c, off in kept[other[0].id]] == [("other 1", 1)]
    assert store.neighbours([turns[2].id], BOB, window=2) == {}
    assert store.neighbours([bobs.id], BOB, window=2) == {}


def test_hybrid_candidates_match_the_two_searches(store: Store) -> None:
    ms = [mem("alice", f"User's cat number {i} likes tuna") for i in range(5)]
    put(store, ms, [vec(1, i) for i in range(5)])
    by_vector, by_text = store.hybrid_candidates(ALICE, vec(1, 2), "cat tuna", 3, NONE)
    assert by_vector == store.vector_search(ALICE, vec(1, 2), 3, NONE)
    assert by_text == store.text_search(ALICE, "cat tuna", 3, NONE)
    assert store.hybrid_candidates(BOB, vec(1), "cat", 3, NONE) == ([], [])


def test_existing_ids_and_vectors_of_take_any_number_of_ids(store: Store) -> None:
    a, b = mem("alice", "a fact"), mem("bob", "b fact")
    put(store, [a, b], [vec(1, 2), vec(0, 1, 3)])
    many = [a.id, *(f"mem_missing_{i}" for i in range(1200)), b.id]  # past any list limit
    assert store.existing_ids(many) == {a.id, b.id}
    found = store.vectors_of(many)
    assert set(found) == {a.id, b.id}
    for memory, expected in ((a, vec(1, 2)), (b, vec(0, 1, 3))):
        assert found[memory.id].dtype == np.float32 and found[memory.id].shape == (DIM,)
        np.testing.assert_array_equal(found[memory.id], expected)
    assert store.vectors_of([]) == {}


def test_vectors_of_follows_set_vectors_and_delete(store: Store) -> None:
    a, b = mem("alice", "a fact"), mem("alice", "another fact")
    put(store, [a, b], [vec(1), vec(0, 1)])
    store.set_vectors([a.id, "mem_missing"], np.stack([vec(0, 0, 1), vec(1)]), "model-2")
    np.testing.assert_array_equal(store.vectors_of([a.id])[a.id], vec(0, 0, 1))
    assert store.get(a.id, ALICE).embedding_model == "model-2"
    assert store.delete([b.id], ALICE, actor="alice") == [b.id]
    assert store.vectors_of([b.id]) == {}


def test_stats_count_memories_users_scopes_and_history(store: Store) -> None:
    ms = [mem("alice", "a1"), mem("alice", "p1", "apollo"), mem("bob", "b1")]
    put(store, ms, [vec(1), vec(0, 1), vec(1)])
    stats = store.stats()
    counted = {k: stats[k] for k in ("memories", "users", "scopes", "history_events")}
    assert counted == {"memories": 3, "users": 2, "scopes": 3, "history_events": 3}
    size = "file_bytes" if stats["backend"] == "sqlite" else "database_bytes"
    assert stats["backend"] in ("sqlite", "postgres") and int(stats[size]) > 0
    assert store.remote_reads is (stats["backend"] == "postgres")  # a server: reads are trips
    store.delete([ms[2].id], BOB, actor="bob")  # its ADD event gives way to a tombstone
    stats = store.stats()
    assert (stats["memories"], stats["users"], stats["history_events"]) == (2, 1, 3)


def test_close_is_final_and_keeps_what_was_written(open_store: StoreFactory) -> None:
    first = open_store()
    m = mem("alice", "User plays the cello")
    put(first, [m], [vec(1)])
    first.close()
    first.close()  # twice is harmless
    with pytest.raises(StoreError, match="closed"):
        first.get(m.id, ALICE)
    with pytest.raises(StoreError, match="closed"):
        put(first, [mem("alice", "User plays the oboe")], [vec(0, 1)])
    with open_store() as again:  # type: ignore[attr-defined]
        assert again.get(m.id, ALICE) == m
    with pytest.raises(StoreError, match="closed"):
        again.count(ALICE, NONE)


NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def plan(
    user: str,
    steps: list[ForgetStep],
    *,
    project: str | None = None,
    created: datetime = NOW,
) -> ForgetPlan:
    return ForgetPlan(
        user_id=user,
        project_id=project,
        steps=tuple(steps),
        created_at=created,
        expires_at=created + timedelta(minutes=15),
    )


def step(memory: Memory, action: ForgetAction, rewrite: str | None = None) -> ForgetStep:
    return ForgetStep(
        memory_id=memory.id, action=action, updated_at=memory.updated_at, rewrite=rewrite
    )


def test_forget_plans_round_trip_and_cancel(store: Store) -> None:
    m = mem("alice", "User's locker code is 4471")
    put(store, [m], [vec(1)])
    p = plan("alice", [step(m, ForgetAction.FORGET)])
    store.save_forget_plan(p)
    assert store.get_forget_plan(p.id) == p
    assert store.get_forget_plan("fp_missing") is None
    for user, project in (("bob", None), ("alice", "apollo")):  # not theirs: "no plan"
        with pytest.raises(NotFound):
            store.cancel_forget_plan(p.id, user, project, NOW)
    with pytest.raises(NotFound):
        store.cancel_forget_plan("fp_missing", "alice", None, NOW)
    later = NOW + timedelta(minutes=1)
    cancelled = store.cancel_forget_plan(p.id, "alice", None, later)
    assert (cancelled.status, cancelled.finished_at, cancelled.steps) == (
        PlanStatus.CANCELLED,
        later,
        p.steps,
    )
    stored = store.get_forget_plan(p.id)
    assert stored is not None and (stored.status, stored.finished_at) == (
        PlanStatus.CANCELLED,
        later,
    )
    assert stored.steps == ()  # an ended plan keeps no ids
    with pytest.raises(ValidationError, match="cancelled"):
        store.cancel_forget_plan(p.id, "alice", None, later)
    with pytest.raises(ValidationError, match="cancelled"):
        store.execute_forget_plan(p.id, "alice", None, {}, later, "alice")
    assert store.get(m.id, ALICE) == m


def test_expired_plans_are_refused(store: Store) -> None:
    m = mem("alice", "User's locker code is 4471")
    put(store, [m], [vec(1)])
    p = plan("alice", [step(m, ForgetAction.FORGET)])
    store.save_forget_plan(p)
    late = p.expires_at
    with pytest.raises(ValidationError, match="expired"):
        store.execute_forget_plan(p.id, "alice", None, {}, late, "alice")
    with pytest.raises(ValidationError, match="expired"):
        store.cancel_forget_plan(p.id, "alice", None, late)
    assert store.get(m.id, ALICE) == m
    assert store.get_forget_plan(p.id) == p


def test_saving_a_plan_drops_plans_that_ended_a_week_before(store: Store) -> None:
    old = plan("alice", [])
    store.save_forget_plan(old)
    recent = plan("alice", [], created=NOW + timedelta(days=4))
    store.save_forget_plan(recent)
    assert store.get_forget_plan(old.id) == old  # expired four days ago: kept
    store.save_forget_plan(plan("bob", [], created=NOW + timedelta(days=8)))
    assert store.get_forget_plan(old.id) is None  # expired over a week ago: dropped
    assert store.get_forget_plan(recent.id) == recent


def test_execute_forget_plan_forgets_rewrites_keeps_and_reports_missing(store: Store) -> None:
    gone = mem("alice", "User's locker code is 4471")
    changed = mem("alice", "User lives at 12 Elm Street")
    kept = mem("alice", "User enjoys chess")
    vanished = mem("alice", "User's old phone number is 555-0100")
    theirs = mem("bob", "Bob's locker code is 1234")
    project = mem("alice", "Apollo's launch code is 99", project="apollo")
    everything = [gone, changed, kept, vanished, theirs, project]
    put(store, everything, [vec(1), vec(0, 1), vec(0, 0, 1), vec(0, 0, 0, 1), vec(1), vec(1)])
    store.delete([vanished.id], ALICE, actor="alice")
    p = plan(
        "alice",
        [
            step(gone, ForgetAction.FORGET),
            step(changed, ForgetAction.REWRITE, "User lives on a quiet street"),
            step(kept, ForgetAction.KEEP),
            step(vanished, ForgetAction.FORGET),
            step(theirs, ForgetAction.FORGET),  # another user's: never found
            step(project, ForgetAction.FORGET),  # a project's: not in this private plan
        ],
    )
    store.save_forget_plan(p)
    rewritten = changed.model_copy(
        update={"content": "User lives on a quiet street", "updated_at": NOW}
    )
    later = NOW + timedelta(minutes=1)
    outcome = store.execute_forget_plan(
        p.id, "alice", None, {changed.id: (rewritten, vec(1, 1))}, later, "alice"
    )
    assert outcome == PlanOutcome([gone.id], [changed.id], 1, [vanished.id, theirs.id, project.id])
    assert store.get(gone.id, ALICE) is None
    assert store.get(changed.id, ALICE) == rewritten
    assert store.get(kept.id, ALICE) == kept
    assert store.get(theirs.id, BOB) == theirs
    assert store.get(project.id, ScopeSet(user_id="alice", project_ids=("apollo",))) == project
    # The old text is gone from the text index, the vector is the new one, and history keeps
    # one UPDATE event without the old text (and a tombstone for the forgotten memory).
    assert store.text_search(ALICE, "Elm", 5, NONE) == []
    assert store.text_search(ALICE, "quiet street", 5, NONE)[0].memory.id == changed.id
    top = store.vector_search(ALICE, vec(1, 1), 1, NONE)[0]
    assert top.memory.id == changed.id and top.score == pytest.approx(1.0, abs=1e-5)
    events = store.history(changed.id, ALICE)
    assert [(e.kind, e.old_content, e.new_content, e.actor) for e in events] == [
        (EventKind.UPDATE, None, "User lives on a quiet street", "alice")
    ]
    assert [e.kind for e in store.history(gone.id, ALICE)] == [
        EventKind.FORGET
    ]  # a forget plan's tombstone
    stored = store.get_forget_plan(p.id)
    assert stored is not None
    assert (stored.status, stored.finished_at, stored.steps) == (PlanStatus.EXECUTED, later, ())
    with pytest.raises(ValidationError, match="already executed"):
        store.execute_forget_plan(p.id, "alice", None, {}, later, "alice")


def test_a_project_plan_reaches_the_project_and_the_private_scope(store: Store) -> None:
    private = mem("alice", "User's locker code is 4471")
    shared = mem("alice", "Apollo's launch code is 99", project="apollo")
    put(store, [private, shared], [vec(1), vec(0, 1)])
    p = plan(
        "alice",
        [step(private, ForgetAction.FORGET), step(shared, ForgetAction.FORGET)],
        project="apollo",
    )
    store.save_forget_plan(p)
    with pytest.raises(NotFound):  # a project plan is confirmed in its project
        store.execute_forget_plan(p.id, "alice", None, {}, NOW, "alice")
    outcome = store.execute_forget_plan(p.id, "alice", "apollo", {}, NOW, "alice")
    assert outcome == PlanOutcome([private.id, shared.id], [], 0, [])
    assert store.count(ScopeSet(user_id="alice", project_ids=("apollo",)), NONE) == 0


def test_a_failing_forget_plan_applies_nothing(store: Store) -> None:
    first = mem("alice", "User's locker code is 4471")
    second = mem("alice", "User lives at 12 Elm Street")
    put(store, [first, second], [vec(1), vec(0, 1)])
    p = plan("alice", [step(first, ForgetAction.FORGET), step(second, ForgetAction.FORGET)])
    store.save_forget_plan(p)
    newer = second.model_copy(
        update={"content": "User lives at 14 Elm Street", "updated_at": NOW + timedelta(days=1)}
    )
    store.replace(newer, None, HistoryEvent.about(newer, EventKind.UPDATE, "alice"))
    with pytest.raises(ValidationError, match="changed after the forget preview"):
        store.execute_forget_plan(p.id, "alice", None, {}, NOW, "alice")
    # The first step's delete was rolled back with the rest, caches included.
    assert store.get(first.id, ALICE) == first
    assert store.vector_search(ALICE, vec(1), 1, NONE)[0].memory.id == first.id
    assert store.text_search(ALICE, "locker", 5, NONE)[0].memory.id == first.id
    assert store.get_forget_plan(p.id) == p
    rewrite = plan(
        "alice", [step(first, ForgetAction.FORGET), step(newer, ForgetAction.REWRITE, "x")]
    )
    store.save_forget_plan(rewrite)
    with pytest.raises(ValidationError, match="no rewritten memory"):
        store.execute_forget_plan(rewrite.id, "alice", None, {}, NOW, "alice")
    assert store.get(first.id, ALICE) == first
    assert store.get_forget_plan(rewrite.id) == rewrite


def revise(store: Store, memory: Memory, text: str, minutes: int) -> Memory:
    """``memory`` updated to ``text`` as MemoryBank.update records it, ``minutes`` after NOW."""
    at = NOW + timedelta(minutes=minutes)
    changed = memory.model_copy(update={"content": text, "updated_at": at})
    event = HistoryEvent.about(
        memory,
        EventKind.UPDATE,
        memory.user_id,
        old_content=memory.content,
        new_content=text,
        created_at=at,
    )
    store.replace(changed, None, event)
    return changed


def test_earlier_texts_finds_old_versions_by_their_words(store: Store) -> None:
    moved = mem("alice", "User lives at 123 Oak Street, Apt 4B", created_at=NOW, updated_at=NOW)
    named = mem("alice", "User's friend is O'Brien", created_at=NOW, updated_at=NOW)
    current = mem("alice", "User walks down Oak Street daily", created_at=NOW, updated_at=NOW)
    theirs = mem("bob", "Bob lives on Oak Street", created_at=NOW, updated_at=NOW)
    shared = mem("alice", "Apollo office is on Oak Street", "apollo", created_at=NOW)
    put(store, [moved, named, current, theirs, shared], [vec(1)] * 5)
    moved = revise(store, moved, "User lives at 12 Pine Lane", 1)
    moved = revise(store, moved, "User lives at 9 Elm Road", 2)
    named = revise(store, named, "User's friend is Sam", 3)
    revise(store, theirs, "Bob lives elsewhere", 1)
    revise(store, shared, "Apollo office is remote", 1)
    revise(store, current, "User walks down Oak Street every day", 4)  # old text matches too

    found = store.earlier_texts(ALICE, ["oa", "stree"], 2, 10)
    assert [(m.id, texts) for m, texts in found] == [
        # most recently changed first; every earlier text, oldest first, the current one left out
        (current.id, ["User walks down Oak Street daily"]),
        (moved.id, ["User lives at 123 Oak Street, Apt 4B", "User lives at 12 Pine Lane"]),
    ]
    assert found[1][0] == moved  # the memory as it is now
    assert store.earlier_texts(ALICE, ["oa", "stree"], 2, 1)[0][0].id == current.id
    assert store.earlier_texts(ALICE, ["OA", "pine", "xyz"], 2, 10) == []  # one of three
    assert [m.id for m, _ in store.earlier_texts(ALICE, ["pin", "xyz"], 1, 10)] == [moved.id]
    # Case and apostrophes do not matter; a word inside a longer one does.
    assert [m.id for m, _ in store.earlier_texts(ALICE, ["obrien"], 1, 10)] == [named.id]
    assert [m.id for m, _ in store.earlier_texts(ALICE, ["brie"], 1, 10)] == [named.id]
    # Other users' and projects' histories only through their scopes.
    in_project = ScopeSet(user_id="alice", include_private=False, project_ids=("apollo",))
    assert [m.id for m, _ in store.earlier_texts(in_project, ["oa", "stree"], 2, 10)] == [shared.id]
    assert [m.id for m, _ in store.earlier_texts(BOB, ["oa", "stree"], 2, 10)] == [theirs.id]
    assert store.earlier_texts(ALICE, [], 1, 10) == []
    assert store.earlier_texts(ALICE, ["oa"], 1, 0) == []


def test_a_forget_plan_redacts_history_and_keeps_the_events(store: Store) -> None:
    moved = mem("alice", "User lives at 123 Oak Street, Apt 4B", created_at=NOW, updated_at=NOW)
    other = mem("alice", "User's locker code is 4471", created_at=NOW, updated_at=NOW)
    put(store, [moved, other], [vec(1), vec(0, 1)])
    moved = revise(store, moved, "User lives at 12 Pine Lane", 1)
    moved = revise(store, moved, "User lives at 9 Elm Road", 2)
    before = store.history(moved.id, ALICE)
    p = plan("alice", [step(moved, ForgetAction.REDACT), step(other, ForgetAction.KEEP)])
    store.save_forget_plan(p)
    outcome = store.execute_forget_plan(p.id, "alice", None, {}, NOW, "alice")
    assert outcome == PlanOutcome([], [], 1, [], [moved.id])
    assert store.get(moved.id, ALICE) == moved  # the memory itself is untouched
    after = store.history(moved.id, ALICE)
    # The same events (kind, actor, time), with every text but the current one gone.
    assert [(e.id, e.kind, e.actor, e.created_at) for e in after] == [
        (e.id, e.kind, e.actor, e.created_at) for e in before
    ]
    assert [(e.old_content, e.new_content) for e in after] == [
        (None, None),
        (None, None),
        (None, "User lives at 9 Elm Road"),
    ]
    assert store.earlier_texts(ALICE, ["oa"], 1, 10) == []
    assert [e.kind for e in store.history(other.id, ALICE)] == [EventKind.ADD]  # kept as is

    # A REDACT step refuses a memory changed since the plan, like any other step.
    again = plan("alice", [step(moved, ForgetAction.REDACT)])
    store.save_forget_plan(again)
    revise(store, moved, "User lives at 10 Elm Road", 5)
    with pytest.raises(ValidationError, match="changed after the forget preview"):
        store.execute_forget_plan(again.id, "alice", None, {}, NOW, "alice")
    assert store.history(moved.id, ALICE)[-1].old_content == "User lives at 9 Elm Road"


def test_org_members(store: Store) -> None:
    assert store.org_users("acme") == []
    for org, user in (("acme", "carol"), ("acme", "alice"), ("acme", "alice"), ("other", "bob")):
        store.add_org_member(org, user)
    assert store.org_users("acme") == ["alice", "carol"]
    assert store.remove_org_member("acme", "alice") is True
    assert store.remove_org_member("acme", "alice") is False
    assert store.remove_org_member("acme", "bob") is False
    assert (store.org_users("acme"), store.org_users("other")) == (["carol"], ["bob"])


# -- the transaction API of the SQL stores ----------------------------------------------------


def test_transactions_commit_or_roll_back_whole(store: Store) -> None:
    sql_store: Any = store
    with sql_store.writing() as txn:
        assert txn.execute("INSERT INTO meta VALUES (?, ?)", ("a", "1")) == 1
        txn.execute_many("INSERT INTO meta VALUES (?, ?)", [("b", "2"), ("c", "3")])
    with sql_store.reading() as txn:
        rows = txn.fetch(
            "SELECT key, value FROM meta WHERE key IN (?, ?, ?) ORDER BY key", ("a", "b", "c")
        )
        assert rows == [("a", "1"), ("b", "2"), ("c", "3")]
        assert txn.one("SELECT value FROM meta WHERE key = ?", ("b",)) == ("2",)
        assert txn.one("SELECT value FROM meta WHERE key = ?", ("zzz",)) is None
    with pytest.raises(RuntimeError), sql_store.writing() as txn:
        assert txn.execute("DELETE FROM meta WHERE key IN (?, ?)", ("a", "b")) == 2
        raise RuntimeError("the caller fails")
    with pytest.raises(StoreError), sql_store.writing() as txn:  # the database refuses
        txn.execute("DELETE FROM meta WHERE key = ?", ("a",))
        txn.execute("INSERT INTO meta VALUES (?, ?)", ("c", "again"))
    assert [store.get_meta(k) for k in "abc"] == ["1", "2", "3"]


def test_a_read_transaction_sees_one_snapshot(open_store: StoreFactory) -> None:
    reader: Any = open_store()
    writer = open_store()
    with reader.reading() as txn:
        before = txn.fetch("SELECT count(*) FROM meta")
        writer.set_meta("written", "meanwhile")
        assert txn.fetch("SELECT count(*) FROM meta") == before
    assert reader.get_meta("written") == "meanwhile"


def test_accounts_live_in_the_store_database(store: Store) -> None:
    accounts = sql_accounts(store)
    accounts.add_user(User(id="alice", name="Alice", created_at=NOW))
    assert accounts.get_user("alice") == User(id="alice", name="Alice", created_at=NOW)
    with store.reading() as txn:  # type: ignore[attr-defined]
        assert txn.fetch("SELECT id, name FROM users") == [("alice", "Alice")]
    m = mem("alice", "a fact", project="apollo")
    put(store, [m], [vec(1)])
    assert accounts.memory_project(m.id) == (True, "apollo")
    assert accounts.memory_project("mem_missing") == (False, None)


def test_postgres_url_selects_postgres_store_and_dimension_is_fixed(postgres_url: str) -> None:
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    from memorybank.errors import ConfigurationError
    from memorybank.factory import build_store
    from memorybank.settings import Settings
    from memorybank.stores.postgres import PostgresStore

    # The fixture gives a key=value string; the factory takes a postgresql:// URL.
    parts = {k: str(v) for k, v in conninfo_to_dict(postgres_url).items()}
    user = quote(parts.pop("user", ""), safe="")
    password = parts.pop("password", "")
    auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
    dbname = quote(parts.pop("dbname"), safe="")
    url = f"postgresql://{auth}/{dbname}?{urlencode(parts)}"
    store = build_store(Settings(url=url, pg_pool_size=3, pg_ef_search=64), DIM)
    try:
        assert isinstance(store, PostgresStore)
        with store.reading() as txn:  # the operator's settings reach every connection
            assert txn.one("SHOW hnsw.ef_search") == ("64",)
        assert store._pool.max_size == 3
        with store.reading() as txn:  # migration 4: vacuumed after 1 % dead, not 20 %
            options = txn.one("SELECT reloptions FROM pg_class WHERE relname = 'memories'")
        assert options is not None and "autovacuum_vacuum_scale_factor=0.01" in options[0]
        with store.reading() as txn:  # migration 5: history too (forgotten text in dead rows)
            options = txn.one("SELECT reloptions FROM pg_class WHERE relname = 'history'")
        assert options is not None and "autovacuum_vacuum_scale_factor=0.01" in options[0]
        put(store, [mem("alice", "a fact")], [vec(1)])
        assert store.stats()["memories"] == 1
        assert password == "" or password not in str(store.stats()["url"])
    finally:
        store.close()
    with pytest.raises(ConfigurationError, match="dimension"):
        PostgresStore(postgres_url, dimension=DIM + 1)
    with pytest.raises(ConfigurationError, match="ef_search must be 1-1000"):
        PostgresStore(postgres_url, dimension=DIM, ef_search=0)


def test_postgres_vector_search_reads_small_scopes_exactly_and_large_ones_by_hnsw(
    postgres_url: str,
) -> None:
    from memorybank.stores.postgres import PostgresStore

    rng = np.random.default_rng(3)
    vectors = [v / np.linalg.norm(v) for v in rng.normal(size=(300, DIM)).astype(np.float32)]
    with (
        PostgresStore(postgres_url, dimension=DIM) as exact,
        PostgresStore(postgres_url, dimension=DIM, exact_scan_max=0) as hnsw,
    ):
        put(exact, [mem("alice", f"fact number {i}") for i in range(300)], vectors)
        put(exact, [mem("bob", "bob's own fact")], [vectors[0]])
        scopes = ScopeSet(user_id="alice")
        for query in vectors[:20]:
            by_scan = exact.vector_search(scopes, query, 10, MemoryFilter())
            by_index = hnsw.vector_search(scopes, query, 10, MemoryFilter())
            assert all(c.memory.user_id == "alice" for c in by_scan + by_index)
            scores = [c.score for c in by_scan]
            assert scores == sorted(scores, reverse=True) and len(by_scan) == 10
            # 300 rows: the graph finds the same neighbours as the scan
            assert [c.memory.id for c in by_index] == [c.memory.id for c in by_scan]
        with exact.reading() as txn:
            index = txn.one(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'memories_embedding'"
            )
        assert index is not None and "hnsw" in index[0]  # what serves scopes too large to scan


def test_reinforce_marks_recalls_without_history(store: Store) -> None:
    ms = [mem("alice", "a1"), mem("alice", "a2")]
    put(store, ms, [vec(1), vec(0, 1)])
    later = datetime(2031, 1, 1, tzinfo=UTC)
    store.reinforce([ms[0].id, "mem_gone"], later)
    got = store.get(ms[0].id, ALICE)
    assert got is not None and got.reinforced_at == later
    other = store.get(ms[1].id, ALICE)
    assert other is not None and other.reinforced_at is None
    store.reinforce([ms[0].id], datetime(2030, 1, 1, tzinfo=UTC))  # never moved back
    again = store.get(ms[0].id, ALICE)
    assert again is not None and again.reinforced_at == later
    assert [e.kind for e in store.history(ms[0].id, ALICE)] == [EventKind.ADD]


# -- events (issue 21) ----------------------------------------------------------------------


def test_every_change_is_one_event_in_order_with_its_channel(store: Store) -> None:
    keys = ["u:alice"]
    start = store.last_event_id()
    a, b = mem("alice", "User drinks green tea", source="user"), mem("alice", "User owns a cat")
    put(store, [a, b], [vec(1), vec(0, 1)])
    with acting_through(Channel.AI):
        a2 = revise(store, a, "User drinks black tea", 1)
    before = store.events(keys, start, 100)
    merged = HistoryEvent.about(
        b, EventKind.MERGE, "alice", new_content=b.content, channel=Channel.CONSOLIDATION
    )
    store.replace(b, None, merged)
    store.delete([a2.id], ALICE, actor="alice")
    events = store.events(keys, start, 100)
    assert [(e.type, e.memory_id, e.channel) for e in before] == [
        ("created", a.id, Channel.USER),  # a memory's source says who made it
        ("created", b.id, Channel.AI),
        ("updated", a.id, Channel.AI),  # the context's channel
    ]
    assert [e.content for e in before] == [a.content, b.content, "User drinks black tea"]
    assert [(e.type, e.memory_id, e.channel, e.actor) for e in events] == [
        ("created", b.id, Channel.AI, "test"),  # a's own events went with it
        ("merged", b.id, Channel.CONSOLIDATION, "alice"),
        ("deleted", a.id, Channel.USER, "alice"),
    ]
    assert [e.content for e in events] == ["User owns a cat", "User owns a cat", None]
    ids = [e.id for e in events]
    assert ids == sorted(ids) and len(set(ids)) == 3 and store.last_event_id() == ids[-1]
    assert store.events(keys, ids[0], 100) == events[1:]  # resume after an id
    assert store.events(keys, start, 2) == events[:2]


def test_events_carry_text_only_while_the_memory_exists(store: Store) -> None:
    start = store.last_event_id()
    a = mem("alice", "User's PIN is 4471")
    put(store, [a], [vec(1)])
    assert [e.content for e in store.events(["u:alice"], start, 10)] == ["User's PIN is 4471"]
    store.delete([a.id], ALICE, actor="alice")
    after = store.events(["u:alice"], start, 10)
    assert [(e.type, e.content) for e in after] == [("deleted", None)]


def test_clear_and_forget_plans_are_their_own_event_types(store: Store) -> None:
    start = store.last_event_id()
    a, b = mem("alice", "User likes jazz"), mem("alice", "User likes chess")
    put(store, [a, b], [vec(1), vec(0, 1)])
    p = plan("alice", [step(a, ForgetAction.FORGET)])
    store.save_forget_plan(p)
    store.execute_forget_plan(p.id, "alice", None, {}, NOW, "alice")
    store.clear(Scope(user_id="alice"), "alice")
    assert [(e.type, e.memory_id) for e in store.events(["u:alice"], start, 10)] == [
        ("forgotten", a.id),
        ("cleared", b.id),
    ]


def test_events_are_read_by_scope_only(store: Store) -> None:
    start = store.last_event_id()
    mine, theirs = mem("alice", "User likes tea"), mem("bob", "User likes coffee")
    shared = mem("bob", "Apollo ships in May", project="apollo")
    other = mem("bob", "Zeus ships in June", project="zeus")
    put(store, [mine, theirs, shared, other], [vec(1), vec(0, 1), vec(0, 0, 1), vec(1, 1)])
    seen = store.events(["u:alice", "p:apollo"], start, 100)
    assert [e.memory_id for e in seen] == [mine.id, shared.id]
    assert store.events([], start, 100) == []


def test_event_ids_are_never_reused(store: Store) -> None:
    a = mem("alice", "User likes tea")
    put(store, [a], [vec(1)])
    newest = store.last_event_id()
    store.delete([a.id], ALICE, actor="alice")  # the newest event (a's ADD) is deleted
    tombstone = store.last_event_id()
    assert tombstone > newest
    b = mem("alice", "User likes cocoa")
    put(store, [b], [vec(0, 1)])
    assert store.last_event_id() > tombstone


def test_the_last_event_of_scopes_moves_with_each_write_to_them(store: Store) -> None:
    both = ScopeSet(user_id="alice", project_ids=("apollo",))
    assert store.last_event_of(both) == 0
    seen = [0]

    def moved() -> bool:
        now = store.last_event_of(both)
        grew = now > seen[-1]
        seen.append(now)
        return grew

    a, b = mem("alice", "User drinks green tea"), mem("alice", "User owns a cat")
    put(store, [a, b], [vec(1), vec(0, 1)])
    assert moved()
    put(store, [mem("bob", "User likes coffee")], [vec(1, 1)])  # another scope
    assert not moved()
    a2 = revise(store, a, "User drinks black tea", 1)
    assert moved()
    store.replace(b, None, HistoryEvent.about(b, EventKind.SUPERSEDE, "alice"))
    assert moved()
    shared = mem("bob", "Apollo ships in May", project="apollo")  # a member's project write
    put(store, [shared], [vec(0, 0, 1)])
    assert moved()
    store.delete([a2.id], ALICE, actor="alice")
    assert moved()
    store.clear(Scope(user_id="alice"), "alice")
    assert moved()
    assert store.last_event_of(ScopeSet(user_id="carol")) == 0


def test_events_from_concurrent_writers_arrive_in_id_order(open_store: StoreFactory) -> None:
    """A reader that resumes after the newest id it saw misses nothing, however writers in
    other connections (threads here, processes in production) interleave their commits."""
    stores = [open_store() for _ in range(3)]
    start = stores[0].last_event_id()
    seen: list[int] = []
    done = threading.Event()

    def write(store: Store, user: str) -> None:
        for i in range(15):
            put(store, [mem(user, f"User fact number {i}")], [vec(1, i / 15)])

    def follow() -> None:
        last = start
        while True:
            finished = done.is_set()
            for e in stores[0].events(["u:w1", "u:w2"], last, 100):
                seen.append(e.id)
                last = e.id
            if finished:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    writers = [threading.Thread(target=write, args=(stores[i + 1], f"w{i + 1}")) for i in (0, 1)]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    reader.join()
    assert len(seen) == 30 and seen == sorted(seen)


def _members(protocol: type) -> dict[str, inspect.Signature | None]:
    """The methods of a protocol with their signatures, and its attributes (``None``)."""
    own = {n: v for n, v in vars(protocol).items() if not n.startswith("_")}
    found: dict[str, inspect.Signature | None] = {
        name: inspect.signature(value) for name, value in own.items() if callable(value)
    }
    found.update(dict.fromkeys(vars(protocol).get("__annotations__", {})))
    return found


def test_the_backend_searches_through_a_search_index(store: Store) -> None:
    """Each backend's index implements :class:`SearchIndex` as declared: every attribute, and
    every method with the protocol's parameters, in order (what a new backend must match)."""
    index = cast(Any, store).index
    members = _members(SearchIndex)
    assert {"vector_candidates", "text_candidates", "add", "remove", "delete_columns"} <= set(
        members
    )
    for name, declared in members.items():
        assert hasattr(index, name), f"{type(index).__name__} lacks {name}"
        if declared is not None:
            implemented = inspect.signature(getattr(index, name))
            assert list(implemented.parameters) == list(declared.parameters)[1:], name
    # The store's own attribute names the seam: the protocol, with the backend's transaction.
    assert get_type_hints(type(store))["index"] is type(index)
