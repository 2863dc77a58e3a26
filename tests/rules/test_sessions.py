"""Implicit sessions and speakers for conversation turns saved without them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memorybank import MemoryBank
from memorybank.rules.sessions import IMPLICIT_PREFIX, speaker_prefix

DAY = datetime(2024, 5, 1, 9, tzinfo=UTC)


def turn(text: str, minutes: float, **more: object) -> dict[str, object]:
    return {
        "content": text,
        "ring": "episodic",
        "source": "conversation",
        "category": "context",
        "occurred_at": DAY + timedelta(minutes=minutes),
        **more,
    }


def test_turns_get_sessions_from_save_order_and_time_gaps(bank: MemoryBank) -> None:
    saved = bank.save_many(
        "u",
        [
            turn("Ann: I adopted a puppy", 0),
            turn("Bo: what is its name?", 1),
            turn("Ann: Biscuit", 2),
            turn("Ann: Biscuit chewed my shoes", 60 * 24),  # the next day: a new session
        ],
    )
    memories = [r.memory for r in saved]
    assert all(m is not None for m in memories)
    sessions = [m.session_id for m in memories if m is not None]
    assert sessions[0] == sessions[1] == sessions[2] != sessions[3]
    assert all(s is not None and s.startswith(IMPLICIT_PREFIX) for s in sessions)
    # A later save continues the scope's latest implicit session when close in time.
    [later] = bank.save_many("u", [turn("Bo: oh no!", 60 * 24 + 3)])
    assert later.memory is not None and later.memory.session_id == sessions[3]
    speakers = [m.metadata.get("speaker") for m in memories if m is not None]
    assert speakers == ["Ann", "Bo", "Ann", "Ann"]


def test_explicit_sessions_and_speakers_are_kept(bank: MemoryBank) -> None:
    [given] = bank.save_many(
        "u", [turn("Ann: hi", 0, session_id="chat-1", metadata={"speaker": "Annie"})]
    )
    assert given.memory is not None
    assert given.memory.session_id == "chat-1" and given.memory.metadata["speaker"] == "Annie"
    # An explicit session is never continued implicitly.
    [after] = bank.save_many("u", [turn("Bo: hello", 1)])
    assert after.memory is not None and after.memory.session_id != "chat-1"
    # Facts are not turns: no session, no speaker.
    fact = bank.save("u", "User's sister is called Ann", "relationship")
    assert fact.memory is not None and fact.memory.session_id is None


def test_neighbours_work_without_session_ids(bank: MemoryBank) -> None:
    bank.save_many(
        "u",
        [
            turn("Ann: guess what I bought at the market today", 0),
            turn("Bo: tell me!", 1),
            turn("Ann: a tiny bonsai tree", 2),
            *(turn(f"Bo: unrelated chat number {n}", 600 + n) for n in range(30)),
        ],
    )
    hits = bank.search("u", "What did Ann buy at the market?", limit=5)
    assert "a tiny bonsai tree" in " ".join(h.memory.content for h in hits)


def test_speaker_prefix() -> None:
    assert speaker_prefix("Caroline: hi") == "Caroline"
    assert speaker_prefix("Jean-Luc Picard: engage") == "Jean-Luc Picard"
    assert speaker_prefix("lowercase: no") is None
    assert speaker_prefix("No colon here") is None
    assert speaker_prefix("A Very Long Name Indeed: too many words") is None
