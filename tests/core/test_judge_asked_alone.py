"""The shipped judge scores each pair in a run of its own, so search and the block ask it only
the pairs their answer still depends on (issue 36). The answers must be the ones asking every
pair gives: the same judge behind a batch interface (no ``pairs_alone``, as an LLM judge) is
asked every pair at once, and both banks, on one database, must rank and show the same."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memorybank import MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.model import Caller
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.providers.judges import default_judge
from memorybank.rules.verdicts import PairScores, asks_alone
from memorybank.stores.sqlite import SQLiteStore

# Facts that update each other (saved in this order, each kept beside the older: "keep"), and
# others about the same things that do not.
FACTS = [
    "User lives in Leeds",
    "User works from the office five days a week",
    "User's manager is Priya",
    "User drives a blue Toyota Corolla",
    "User has two cats named Miso and Tofu",
    "User moved to York for a new job",
    "User now works from home on Fridays",
    "User's manager is now Tom",
    "User sold the Corolla and bought a bicycle",
    "User adopted a third cat called Udon",
    "User's sister lives in Leeds",
    "User likes hiking in the Yorkshire Dales",
    "User is learning to play the cello",
    "User stopped learning the cello and took up the piano",
]
QUESTIONS = [
    "Where do I live?",
    "Where do I work on Fridays?",
    "Who is my manager?",
    "What do I drive?",
    "How many cats do I have?",
    "What instrument am I learning?",
    "Tell me about Leeds",
]


class BatchJudge:
    """The shipped judge, asked every pair of a call at once (what a judge that reads a batch
    in one call, such as an LLM, gets)."""

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[PairScores]:
        return default_judge().score(pairs)

    def relevance(self, message: str, texts: Sequence[str]) -> list[float]:
        return default_judge().relevance(message, texts)


def test_asking_pairs_alone_gives_what_asking_them_all_gives(
    db_path: Path, embedder: LocalEmbedder
) -> None:
    assert asks_alone(default_judge()) and not asks_alone(BatchJudge())
    alone = MemoryBank(SQLiteStore(db_path, dimension=embedder.dimension), embedder)
    batch = MemoryBank(
        SQLiteStore(db_path, dimension=embedder.dimension), embedder, judge=BatchJudge()
    )
    with alone, batch:
        for fact in FACTS:
            assert alone.save("ana", fact, on_conflict="keep").success
        caller = Caller(user_id="ana")
        for question in QUESTIONS:
            ours = alone.search("ana", question, limit=10)
            theirs = batch.search("ana", question, limit=10)
            assert [h.memory.id for h in ours] == [h.memory.id for h in theirs]
            # recency moves with the clock between the two searches: scores agree closely
            assert all(abs(a.score - b.score) < 1e-6 for a, b in zip(ours, theirs, strict=True))
            assert auto_recall(alone, caller, question) == auto_recall(batch, caller, question)
        notes = auto_recall(alone, caller, "Tell me about my life")
        assert "earlier, may be outdated" in notes  # the notes were exercised
