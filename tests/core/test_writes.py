"""Issue 27, finding 5, in the bank: a write started through an adapter is charged by the
records it stores, and heavy writes run one at a time so reads keep a free path. (Over real
HTTP: tests/security/test_security_load.py.)"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memorybank import MemoryBank
from memorybank.core.writes import HEAVY_RECORDS, writing
from memorybank.errors import RateLimited
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore

TURN = {"ring": "episodic", "source": "conversation"}


def facts(count: int, start: int = 0) -> list[dict[str, str]]:
    return [{"content": f"User's badge number at site {n} is {n}"} for n in range(start, count)]


def test_a_write_costs_one_unit_per_record_it_stores(bank: MemoryBank) -> None:
    bank.writes.set_limit(10)
    with pytest.raises(RateLimited) as caught, writing(bank, "ann"):
        bank.save_many("ann", facts(11))
    assert "at most 10" in str(caught.value) or "limit is 10" in str(caught.value)
    assert bank.count("ann") == 0  # refused whole: nothing stored
    # The refused batch cost only its request's unit: 9 are left, and 9 records fit.
    with writing(bank, "ann"):
        assert len(bank.save_many("ann", facts(8))) == 8
    with writing(bank, "ann"):
        bank.save_many("ann", [{"content": "User keeps bees"}])
    assert bank.count("ann") == 9
    with pytest.raises(RateLimited), writing(bank, "ann"):
        pass  # the limit is spent: not even a request gets in
    # The host application's own calls are never charged.
    assert len(bank.save_many("ann", facts(40, 20))) == 20


def test_a_conversation_turn_costs_its_chunks(bank: MemoryBank) -> None:
    bank.writes.set_limit(5)
    long_turn = {**TURN, "content": "The meeting went on and on about the budget. " * 60}
    with pytest.raises(RateLimited) as caught, writing(bank, "bo"):
        bank.save_many("bo", [long_turn])  # 2,760 characters: 6 chunks of at most 500
    assert "stores 6 items" in str(caught.value)
    assert bank.count("bo") == 0
    with writing(bank, "bo"):
        bank.save_many("bo", [{**TURN, "content": "Short turn."}] * 3)
    assert bank.count("bo") == 3


def test_a_write_for_another_bank_is_not_charged_here(
    bank: MemoryBank, tmp_path: Path, embedder: LocalEmbedder
) -> None:
    bank.writes.set_limit(1)
    store = SQLiteStore(tmp_path / "other.db", dimension=embedder.dimension)
    # Records another bank stores inside this bank's write cost this one nothing: each bank
    # charges its own writes (and the other, without a limit, none).
    with MemoryBank(store, embedder) as other, writing(bank, "cy"):
        other.save_many("cy", facts(3))
        bank.save_many("cy", facts(1))
        assert other.count("cy") == 3
    assert bank.count("cy") == 1


def test_heavy_writes_wait_for_each_other_while_reads_and_small_writes_go_on(
    bank: MemoryBank,
) -> None:
    heavy = bank.writes.heavy
    batch = [{**TURN, "content": f"Line {n} of a long pasted log."} for n in range(HEAVY_RECORDS)]
    done: list[int] = []
    with heavy.running(HEAVY_RECORDS):  # another heavy write is embedding
        waiting = threading.Thread(target=lambda: done.append(len(bank.save_many("di", batch))))
        waiting.start()
        deadline = time.monotonic() + 60
        while heavy.waited == 0 and time.monotonic() < deadline:  # until it reaches the gate
            time.sleep(0.01)
        assert heavy.waited == 1
        # Meanwhile a search and a small write are not held up behind it.
        assert bank.save("di", "User prefers tea", "preference").success
        assert [h.memory.content for h in bank.search("di", "tea")][0] == "User prefers tea"
        assert bank.count("di") == 1 and done == []
    waiting.join(timeout=120)
    assert done == [HEAVY_RECORDS] and heavy.peak == 1


def test_two_heavy_writes_never_embed_at_once(bank: MemoryBank) -> None:
    batches = [
        [{**TURN, "content": f"Writer {w}, line {n}."} for n in range(HEAVY_RECORDS * 2)]
        for w in range(3)
    ]
    writers = [threading.Thread(target=bank.save_many, args=("ed", batch)) for batch in batches]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)
    assert bank.count("ed") == 3 * HEAVY_RECORDS * 2
    assert bank.writes.heavy.peak == 1
