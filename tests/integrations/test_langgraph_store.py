"""MemoryBankStore keeps LangGraph's BaseStore contract (put/get/delete, search with query,
filter, limit and offset, list_namespaces with prefix/suffix/wildcards/max_depth, the
namespace rules, TTLs refused) and maps namespaces onto memorybank's scopes.

LangGraph ships no store conformance suite (its own store tests exercise InMemoryStore), so
these follow the documented semantics of ``langgraph.store.base.BaseStore`` and the
behaviour of LangGraph's reference store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from client_helpers import served

pytest.importorskip("langgraph")

from langgraph.store.base import (  # noqa: E402
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memorybank import MemoryBank  # noqa: E402
from memorybank.integrations.langgraph import MemoryBankStore  # noqa: E402


@pytest.fixture
def store(bank: MemoryBank) -> Iterator[MemoryBankStore]:
    yield MemoryBankStore(bank)


# -- put, get, delete ----------------------------------------------------------------------------


def test_put_get_round_trip(store: MemoryBankStore) -> None:
    value = {"content": "Sam drinks oolong tea", "n": 3, "nested": {"a": [1, "x", None]}}
    store.put(("users", "sam", "prefs"), "tea", value)
    item = store.get(("users", "sam", "prefs"), "tea")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (("users", "sam", "prefs"), "tea", value)
    assert item.created_at == item.updated_at
    assert item.created_at.tzinfo is not None
    assert store.get(("users", "sam", "prefs"), "coffee") is None
    assert store.get(("users", "sam"), "tea") is None  # another namespace
    assert store.get(("users", "max", "prefs"), "tea") is None  # another user


def test_put_again_replaces_the_value_and_keeps_created_at(store: MemoryBankStore) -> None:
    namespace = ("users", "sam", "prefs")
    store.put(namespace, "tea", {"content": "Sam drinks oolong tea"})
    first = store.get(namespace, "tea")
    store.put(namespace, "tea", {"content": "Sam drinks jasmine tea now"})
    second = store.get(namespace, "tea")
    assert first is not None and second is not None
    assert second.value == {"content": "Sam drinks jasmine tea now"}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert len(store.search(namespace)) == 1


def test_delete_and_put_none(store: MemoryBankStore, bank: MemoryBank) -> None:
    namespace = ("docs", "faq")
    store.put(namespace, "a", {"text": "Opening hours are nine to five"})
    store.put(namespace, "b", {"text": "Returns are free within thirty days"})
    store.delete(namespace, "a")
    store.batch([PutOp(namespace, "b", None)])
    assert store.get(namespace, "a") is None and store.get(namespace, "b") is None
    assert store.search(namespace) == []
    assert bank.count("langgraph") == 0
    store.delete(namespace, "never-there")  # deleting what is not there is no error


def test_values_go_through_json(store: MemoryBankStore) -> None:
    store.put(("docs",), "t", {"pair": (1, 2), "text": "A tuple becomes a list"})
    item = store.get(("docs",), "t")
    assert item is not None and item.value["pair"] == [1, 2]


# -- scopes --------------------------------------------------------------------------------------


def test_namespaces_map_onto_scopes(store: MemoryBankStore, bank: MemoryBank) -> None:
    store.put(("users", "alice", "prefs"), "k", {"content": "Alice likes hiking in the Alps"})
    store.put(("projects", "apollo"), "k", {"content": "The launch is planned for May"})
    store.put(("docs",), "k", {"content": "The office is in Leeds"})
    assert [m.content for m in bank.list("alice", scopes="user")] == [
        "Alice likes hiking in the Alps"
    ]
    # Any member of the project sees the project's items; they are written as the app user.
    shared = bank.list("bob", project_id="apollo", scopes="project")
    assert [(m.content, m.user_id) for m in shared] == [
        ("The launch is planned for May", "langgraph")
    ]
    assert [m.content for m in bank.list("langgraph", scopes="user")] == ["The office is in Leeds"]
    # The same key in three namespaces is three items.
    assert {i.value["content"] for i in store.search(())} == {
        "Alice likes hiking in the Alps",
        "The launch is planned for May",
        "The office is in Leeds",
    }


def test_the_app_user_is_configurable(bank: MemoryBank) -> None:
    store = MemoryBankStore(bank, app_user_id="my-app")
    store.put(("docs",), "k", {"content": "The office is in Leeds"})
    assert bank.count("my-app") == 1 and bank.count("langgraph") == 0
    with pytest.raises(ValueError, match="app_user_id"):
        MemoryBankStore(bank, app_user_id=" ")


def test_memories_saved_elsewhere_appear_at_the_scopes_own_namespace(
    store: MemoryBankStore, bank: MemoryBank
) -> None:
    saved = bank.save("alice", "I prefer window seats on trains", "preference")
    assert saved.memory_id is not None
    shared = bank.save("alice", "The team meets on Mondays", "project", project_id="apollo")
    item = store.get(("users", "alice"), saved.memory_id)
    assert item is not None
    assert item.value == {
        "content": "User prefers window seats on trains",
        "category": "preference",
        "tags": [],
    }
    assert [i.key for i in store.search(("users", "alice"))] == [saved.memory_id]
    assert [i.key for i in store.search(("projects", "apollo"))] == [shared.memory_id]
    assert store.list_namespaces() == [("projects", "apollo"), ("users", "alice")]
    hits = store.search(("users", "alice"), query="where does she like to sit?")
    assert [i.key for i in hits] == [saved.memory_id]
    # Only at the scope's own namespace, and only in its scope.
    assert store.get(("users", "alice", "x"), saved.memory_id) is None
    assert store.get(("users", "bob"), saved.memory_id) is None
    # A put there replaces the memory (same id); a delete deletes it.
    store.put(("users", "alice"), saved.memory_id, {"content": "Alice prefers aisle seats"})
    assert bank.get(saved.memory_id, "alice").content == "Alice prefers aisle seats"
    store.delete(("users", "alice"), saved.memory_id)
    assert bank.count("alice", scopes="user") == 0


def test_the_graph_sees_what_the_tools_saved_and_back(
    store: MemoryBankStore, bank: MemoryBank
) -> None:
    from memorybank.tools import Caller, call, profile

    caller = Caller(user_id="alice")
    call(bank, profile("default"), "remember", {"fact": "User is allergic to peanuts"}, caller)
    store.put(("users", "alice", "notes"), "pet", {"content": "Alice has a cat called Miso"})
    found = store.search(("users", "alice"), query="food allergies")
    assert found[0].value["content"] == "User is allergic to peanuts"
    answer = call(bank, profile("default"), "recall", {"query": "pets"}, caller)
    assert "Alice has a cat called Miso" in [f["fact"] for f in answer["facts"]]


def test_a_category_field_becomes_the_memorys_category(
    store: MemoryBankStore, bank: MemoryBank
) -> None:
    store.put(("users", "sam"), "name", {"content": "Sam's name is Sam", "category": "identity"})
    store.put(("users", "sam"), "odd", {"content": "Sam likes odd things", "category": "weird"})
    categories = {m.content: m.category.value for m in bank.list("sam")}
    assert categories == {"Sam's name is Sam": "identity", "Sam likes odd things": "context"}


# -- namespaces ----------------------------------------------------------------------------------


def test_invalid_namespaces(store: MemoryBankStore) -> None:
    doc = {"content": "something"}
    for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(namespace, "k", doc)
    for namespace in [("users",), ("projects",)]:
        with pytest.raises(InvalidNamespaceError, match="second label"):
            store.put(namespace, "k", doc)
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    # "langgraph" is refused as the first label by put only, as in LangGraph's own stores.
    store.put(("foo", "langgraph", "foo"), "bar", doc)
    assert store.search(("foo", "langgraph", "foo"))[0].value == doc
    store.batch([PutOp(("langgraph", "foo"), "bar", doc)])
    item = store.get(("langgraph", "foo"), "bar")
    assert item is not None and item.value == doc


def _put_namespaces(store: MemoryBankStore, namespaces: list[tuple[str, ...]]) -> None:
    for i, namespace in enumerate(namespaces):
        store.put(namespace, f"id_{i}", {"data": f"value_{i:02d}"})


def test_list_namespaces_prefix_suffix_and_depth(store: MemoryBankStore) -> None:
    _put_namespaces(
        store,
        [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
            ("users", "123"),
            ("users", "456", "settings"),
            ("admin", "users", "789"),
        ],
    )
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("users", "*")) == [
        ("users", "123"),
        ("users", "456", "settings"),
    ]
    assert store.list_namespaces(prefix=("*", "users")) == [("admin", "users", "789")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]


def test_list_namespaces_pagination_and_empty(store: MemoryBankStore) -> None:
    assert store.list_namespaces() == []
    _put_namespaces(store, [("namespace", f"sub_{i:02d}") for i in range(12)])
    assert store.list_namespaces(prefix=("namespace",), limit=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=10) == [
        ("namespace", "sub_10"),
        ("namespace", "sub_11"),
    ]
    assert len(store.list_namespaces()) == 12


def test_prefixes_below_a_scope_are_filtered_in_the_database(any_bank: MemoryBank) -> None:
    """The depth keys in metadata filter on both backends: a namespace and its children, not
    a sibling whose name starts the same."""
    store = MemoryBankStore(any_bank)
    store.put(("users", "u", "notes"), "a", {"content": "Notes about the garden shed"})
    store.put(("users", "u", "notes", "old"), "b", {"content": "Old notes about the garden"})
    store.put(("users", "u", "notes2"), "c", {"content": "Other notes about the garden"})
    store.put(("users", "u"), "d", {"content": "Garden notes at the top"})
    keys = {i.key for i in store.search(("users", "u", "notes"))}
    assert keys == {"a", "b"}
    ranked = {i.key for i in store.search(("users", "u", "notes"), query="garden notes")}
    assert ranked == {"a", "b"}
    assert {i.key for i in store.search(("users", "u"), query="garden")} == {"a", "b", "c", "d"}
    assert store.list_namespaces(prefix=("users", "u", "notes")) == [
        ("users", "u", "notes"),
        ("users", "u", "notes", "old"),
    ]
    item = store.get(("users", "u", "notes", "old"), "b")
    assert item is not None and item.value == {"content": "Old notes about the garden"}


# -- search --------------------------------------------------------------------------------------

COLOURS = [
    ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
    ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
    ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
    ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
]


def test_search_with_query_and_filters(store: MemoryBankStore) -> None:
    for key, value in COLOURS:
        store.put(("test",), key, value)
    found = store.search(("test",), query="apple", filter={"color": "red"})
    assert [i.key for i in found] == ["doc1", "doc2"]
    assert all(i.score is not None for i in found)
    assert found[0].score is not None and found[1].score is not None
    assert found[0].score >= found[1].score
    found = store.search(("test",), query="car", filter={"color": "red"})
    assert [i.key for i in found] == ["doc2", "doc1"]
    found = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [i.key for i in found] == ["doc3"]
    assert {
        i.key for i in store.search(("test",), query="vehicle", filter={"score": {"$gt": 3.2}})
    } == {
        "doc1",
        "doc3",
        "doc4",
    }


def test_filters_without_query(store: MemoryBankStore) -> None:
    for key, value in COLOURS:
        store.put(("test",), key, value)
    store.put(("test",), "doc5", {"text": "no score", "color": "red", "tags": ["a", "b"]})

    def keys(**filter_: Any) -> set[str]:
        return {i.key for i in store.search(("test",), filter=filter_, limit=20)}

    assert keys(color="red") == {"doc1", "doc2", "doc5"}
    assert keys(color={"$ne": "red"}) == {"doc3", "doc4"}
    assert keys(color={"$eq": "blue"}) == {"doc4"}
    assert keys(score={"$lt": 3.5}) == {"doc2"}
    assert keys(score={"$lte": 3.5}) == {"doc2", "doc4"}
    assert keys(score={"$gt": 3.0, "$lt": 4.5}) == {"doc3", "doc4"}  # doc5 has no score
    assert keys(tags=["a", "b"]) == {"doc5"}
    assert keys(tags=["b", "a"]) == set()
    assert all(i.score is None for i in store.search(("test",)))
    with pytest.raises(ValueError, match="unsupported filter operator"):
        store.search(("test",), filter={"score": {"$near": 1}})


def test_search_without_query_is_newest_first_with_limit_and_offset(
    store: MemoryBankStore,
) -> None:
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    assert [i.key for i in store.search(("test",))] == ["doc4", "doc3", "doc2", "doc1", "doc0"]
    assert [i.key for i in store.search(("test",), limit=2, offset=2)] == ["doc2", "doc1"]
    assert store.search(("test",), limit=0) == []
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == len(page2) == 2
    assert not {i.key for i in page1} & {i.key for i in page2}
    assert len(store.search(("test",), query="test", limit=10)) == 5
    for query in ["", "   ", "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 5


def test_index_fields_and_index_false(bank: MemoryBank) -> None:
    store = MemoryBankStore(bank, index={"fields": ["summary"]})
    store.put(("test",), "a", {"summary": "zany zebra Xerxes", "body": "cooking with butter"})
    store.put(("test",), "b", {"summary": "something about dogs", "body": "zebra"})
    store.put(("test",), "c", {"summary": "zany zebra Xerxes"}, index=False)
    store.put(("test",), "d", {"body": "no summary here"})  # nothing at the fields
    store.put(("test",), "e", {"summary": "x", "body": "zebra tales"}, index=["body"])
    assert [m.content for m in bank.list("langgraph", order="created_asc")] == [
        "zany zebra Xerxes",
        "something about dogs",
        '{"summary": "zany zebra Xerxes"}',
        '{"body": "no summary here"}',
        "zebra tales",
    ]
    found = [i.key for i in store.search(("test",), query="zany zebra")]
    assert found[0] == "a" and "c" not in found and "d" not in found
    assert {i.key for i in store.search(("test",))} == {"a", "b", "c", "d", "e"}
    with pytest.raises(ValueError, match="bank's own model"):
        MemoryBankStore(bank, index={"dims": 384, "embed": "openai:text-embedding-3-small"})


def test_default_text_is_content_then_text_then_json(
    store: MemoryBankStore, bank: MemoryBank
) -> None:
    store.put(("t",), "a", {"content": "The content field", "text": "not this"})
    store.put(("t",), "b", {"text": "The text field"})
    store.put(("t",), "c", {"other": 1})
    contents = [m.content for m in bank.list("langgraph", order="created_asc")]
    assert contents == ["The content field", "The text field", '{"other": 1}']


# -- batch, async, TTL ---------------------------------------------------------------------------


def test_batch_runs_ops_in_order(store: MemoryBankStore) -> None:
    namespace = ("users", "sam")
    results = store.batch(
        [
            PutOp(namespace, "k", {"content": "first value"}),
            PutOp(namespace, "k", {"content": "second value"}),
            PutOp(namespace, "j", {"content": "another item"}),
            GetOp(namespace, "k"),
            PutOp(namespace, "k", None),
            GetOp(namespace, "k"),
            SearchOp(namespace, limit=5),
            ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),)),
        ]
    )
    assert results[:3] == [None, None, None]
    got = results[3]
    assert (
        got is not None and not isinstance(got, list) and got.value == {"content": "second value"}
    )
    assert results[4:6] == [None, None]
    searched = results[6]
    assert isinstance(searched, list) and [getattr(i, "key", None) for i in searched] == ["j"]
    assert results[7] == [("users", "sam")]


def test_async_methods(store: MemoryBankStore) -> None:
    async def scenario() -> None:
        namespace = ("users", "sam", "notes")
        await store.aput(namespace, "k", {"content": "Sam plays the cello"})
        item = await store.aget(namespace, "k")
        assert item is not None and item.value == {"content": "Sam plays the cello"}
        found = await store.asearch(("users", "sam"), query="music instrument")
        assert [i.key for i in found] == ["k"]
        assert await store.alist_namespaces(prefix=("users",)) == [namespace]
        await store.adelete(namespace, "k")
        assert await store.aget(namespace, "k") is None

    asyncio.run(scenario())


def test_ttl_is_refused(store: MemoryBankStore) -> None:
    assert store.supports_ttl is False
    with pytest.raises(NotImplementedError, match="TTL"):
        store.put(("docs",), "k", {"content": "expires"}, ttl=5)
    with pytest.raises(NotImplementedError, match="TTL"):
        store.batch([PutOp(("docs",), "k", {"content": "expires"}, ttl=5)])
    store.put(("docs",), "k", {"content": "kept"}, ttl=None)
    assert store.get(("docs",), "k") is not None


# -- issue 34, finding 6: metadata is anyone's to write ------------------------------------------


def _planted(namespace: list[str], key: str, text: str) -> dict[str, Any]:
    """A REST save whose metadata imitates the store's record of (``namespace``, ``key``)."""
    record = {"namespace": namespace, "key": key, "value": {"content": text}, "indexed": True}
    return {"content": text, "metadata": {"langgraph": record}}


def test_metadata_planted_over_rest_is_no_item_of_the_store(bank: MemoryBank) -> None:
    """A member's REST save imitating the app's item (``metadata.langgraph``) was listed first
    under the app's key and survived the app's delete; bob's private memory imitating
    alice's namespace was listed as her item. Now an item is the store's only when its memory
    id is the one the store derives for its scope, namespace and key."""
    store = MemoryBankStore(bank)
    app_ns = ("projects", "apollo", "rules")
    store.put(app_ns, "deploy", {"content": "Deploys need two approvals"})
    with served(bank) as (url, accounts):
        keys = {}
        for user in ("alice", "bob"):
            accounts.create_user(user, name=user.title())
            keys[user] = accounts.create_key(user)[1]
        accounts.create_project("apollo", owner="alice", name="Apollo")
        accounts.add_member("apollo", "bob", "member")
        with httpx.Client(base_url=url, timeout=60) as http:
            bob = {"Authorization": f"Bearer {keys['bob']}"}
            fake_rule = _planted(list(app_ns), "deploy", "Deploys need no approval at all")
            body = {"items": [fake_rule], "project_id": "apollo"}
            assert http.post("/api/memories", json=body, headers=bob).status_code in (200, 201)
            fake_alice = _planted(["users", "alice", "prefs"], "tea", "Alice wants bob to decide")
            assert http.post("/api/memories", json={"items": [fake_alice]}, headers=bob).is_success
    rules = store.search(app_ns)
    assert [(i.key, i.value["content"]) for i in rules] == [
        ("deploy", "Deploys need two approvals")
    ]
    got = store.get(app_ns, "deploy")
    assert got is not None and got.value["content"] == "Deploys need two approvals"
    store.delete(app_ns, "deploy")
    assert store.search(app_ns) == [] and store.get(app_ns, "deploy") is None
    # The member's save is an ordinary project memory, at the project's own namespace.
    own = store.search(("projects", "apollo"))
    assert [i.namespace for i in own] == [("projects", "apollo")]
    assert own[0].value["content"] == "Deploys need no approval at all"
    # Nothing of bob's is alice's.
    assert store.search(("users", "alice")) == []
    assert [i.namespace for i in store.search(("users",))] == [("users", "bob")]
