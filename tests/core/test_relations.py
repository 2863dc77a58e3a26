"""Issue 43: relations decided once, when a fact is written, and read by every read.

A save keeps what the new fact may update (with the judge's probabilities); search, recall,
the block and the mem0 API read those rows and never ask the judge. Edits, deletes, "both are
true" and a new judge (``rejudge_all``) keep them true."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from memorybank import Caller, MemoryBank
from memorybank.compat.mem0 import Memory as Mem0
from memorybank.core.prompt import auto_recall
from memorybank.core.records import save_records
from memorybank.core.relations import CURSOR, JUDGED_BY, rejudge_all
from memorybank.model import Memory
from memorybank.rules.verdicts import Judge, PairScores
from memorybank.services.pairs import keep_both
from memorybank.tools import call, profile


class CountingJudge:
    """The bank's own judge, counting the pairs it is asked (and refusing when told to)."""

    def __init__(self, judge: Judge) -> None:
        self.inner = judge
        self.asked = 0
        self.refuse = False
        self.version = "counting"

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        if self.refuse:
            raise AssertionError(f"a read asked the judge about {list(pairs)}")
        self.asked += len(pairs)
        return self.inner.score(pairs)


@pytest.fixture
def counted(bank: MemoryBank) -> CountingJudge:
    judge = CountingJudge(bank.judge)
    bank._judge = judge
    return judge


def _ids(bank: MemoryBank, user: str) -> dict[str, str]:
    return {m.content: m.id for m in bank.list(user, limit=100)}


def test_a_save_keeps_what_it_may_update(bank: MemoryBank, counted: CountingJudge) -> None:
    bank.save("ana", "User lives in Berlin")
    moved = bank.save("ana", "User moved to Lisbon")
    assert counted.asked >= 1
    ids = _ids(bank, "ana")
    pairs = bank.store.updates_among(list(ids.values()))
    assert pairs == {(ids["User moved to Lisbon"], ids["User lives in Berlin"])}
    assert [c.memory_id for c in moved.conflicts] == [ids["User lives in Berlin"]]


def test_reads_never_ask_the_judge(bank: MemoryBank, counted: CountingJudge) -> None:
    ana = Caller(user_id="ana")
    bank.save("ana", "User lives in Berlin")
    bank.save("ana", "User's brother Marco lives in Madrid")
    bank.save("ana", "User moved to Lisbon")
    bank.save("ana", "User's manager is Priya")
    bank.save("ana", "User now reports to Tomasz")
    counted.refuse = True
    for question in ("Where do I live?", "Who is my manager?", "Where does my brother live?"):
        assert bank.search("ana", question)
        assert "<memories>" in auto_recall(bank, ana, question)
        answer = call(bank, profile("default"), "recall", json.dumps({"query": question}), ana)
        assert answer["facts"]
    mem0 = Mem0(bank=bank)
    assert mem0.search("Where do I live?", user_id="ana", threshold=0.0)["results"]


def test_the_newest_value_comes_first_and_the_older_beside_it(
    bank: MemoryBank, counted: CountingJudge
) -> None:
    bank.save("ana", "User's manager is Priya")
    bank.save("ana", "User now reports to Tomasz")
    hits = [h.memory.content for h in bank.search("ana", "Who is my manager?", limit=5)]
    assert hits.index("User now reports to Tomasz") < hits.index("User's manager is Priya")
    block = auto_recall(bank, Caller(user_id="ana"), "Who is my manager?")
    assert block.index("Tomasz") < block.index("Priya")


def test_an_answer_both_are_true_is_no_update(bank: MemoryBank, counted: CountingJudge) -> None:
    bank.save("ana", "User lives in Berlin")
    newer = bank.save("ana", "User moved to Lisbon")
    ids = _ids(bank, "ana")
    keep_both(bank, str(newer.memory_id), ids["User lives in Berlin"], "ana")
    assert bank.store.updates_among(list(ids.values())) == set()


def test_an_edit_is_judged_again_as_said_now(bank: MemoryBank, counted: CountingJudge) -> None:
    bank.save("ana", "User lives in Berlin")
    bank.save("ana", "User moved to Lisbon")
    ids = _ids(bank, "ana")
    # The older fact, edited, is what the user says now: it is the newer of the pair.
    bank.update(ids["User lives in Berlin"], "ana", content="User lives in Porto")
    pairs = bank.store.updates_among(list(ids.values()))
    assert (ids["User moved to Lisbon"], ids["User lives in Berlin"]) not in pairs
    assert (ids["User lives in Berlin"], ids["User moved to Lisbon"]) in pairs


def test_a_deleted_fact_takes_its_relations(bank: MemoryBank, counted: CountingJudge) -> None:
    bank.save("ana", "User lives in Berlin")
    bank.save("ana", "User moved to Lisbon")
    ids = _ids(bank, "ana")
    bank.delete(ids["User moved to Lisbon"], "ana")
    hits = bank.search("ana", "Where do I live?")
    assert [h.memory.content for h in hits] == ["User lives in Berlin"]
    assert bank.store.updates_among(list(ids.values())) == set()


def test_stored_records_are_judged_once(bank: MemoryBank, counted: CountingJudge) -> None:
    old = Memory(user_id="ana", content="User works at Globex", category="context")
    new = Memory(user_id="ana", content="User now works at Initech", category="context")
    save_records(bank, [old, new], actor="ana")
    ids = _ids(bank, "ana")
    assert bank.store.updates_among(list(ids.values())) == {
        (ids["User now works at Initech"], ids["User works at Globex"])
    }


def _relations(bank: MemoryBank, user: str) -> set[tuple[str, str]]:
    return bank.store.updates_among(list(_ids(bank, user).values()))


def test_rejudge_derives_the_relations_again_and_resumes(
    bank: MemoryBank, counted: CountingJudge
) -> None:
    facts: list[dict[str, Any]] = [
        {"content": text}
        for text in (
            "User lives in Berlin",
            "User moved to Lisbon",
            "User's manager is Priya",
            "User now reports to Tomasz",
        )
    ]
    bank.save_many("ana", facts)
    before = _relations(bank, "ana")
    assert before
    with bank.store.writing() as txn:  # as a store judged by an older model would be
        txn.execute("DELETE FROM memory_pairs")
    assert _relations(bank, "ana") == set()
    first = bank.list("ana", limit=1, order="created_asc")[0]
    bank.store.set_meta(CURSOR, f"counting {first.id}")  # a pass interrupted after one
    counted.asked = 0
    assert rejudge_all(bank.store, counted) == 3
    assert _relations(bank, "ana") == before
    assert bank.store.get_meta(JUDGED_BY) == "counting"
    assert rejudge_all(bank.store, counted) == 0  # done: nothing to do again


class ReadsAsRestated:
    """A judge that reads every pair as a probable duplicate (0.82): the mechanism's test,
    whatever the shipped model reads of a given wording."""

    version = "restating"

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        return [PairScores(duplicate=0.82, update=0.1, distinct=0.08) for _ in pairs]


def test_a_probable_duplicate_restates_the_fact_in_its_words(bank: MemoryBank) -> None:
    bank._judge = ReadsAsRestated()
    first = bank.save("ana", "User runs a tailoring shop in Kumasi")
    again = bank.save("ana", "User owns a tailoring business based in Kumasi")
    assert again.success and again.restated and not again.duplicate
    assert again.memory_id == first.memory_id
    assert again.existing_content == "User runs a tailoring shop in Kumasi"
    # Stored once, in the newest wording; the earlier wording is in its history.
    assert [m.content for m in bank.list("ana")] == [again.content]
    history = bank.history(str(first.memory_id), "ana")
    assert history[-1].old_content == "User runs a tailoring shop in Kumasi"
    assert history[-1].new_content == "User owns a tailoring business based in Kumasi"
    hits = bank.search("ana", "Where is my business?")
    assert [h.memory.content for h in hits] == [again.content]


def test_keep_stores_a_probable_duplicate_as_its_own_fact(bank: MemoryBank) -> None:
    bank._judge = ReadsAsRestated()
    bank.save("ana", "User runs a tailoring shop in Kumasi")
    kept = bank.save("ana", "User owns a tailoring business in Kumasi", on_conflict="keep")
    assert kept.success and not kept.restated
    assert bank.count("ana") == 2
