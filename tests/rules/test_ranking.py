"""Hybrid retrieval: fusion arithmetic, and hybrid beating either signal alone on a fixture."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError as PydanticValidationError

from memorybank import MemoryBank
from memorybank.model import Category, Memory
from memorybank.model.stored import Candidate
from memorybank.providers.embedders.base import Vectors
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.query import neutral_query, speakers_named
from memorybank.rules.ranking import (
    RANKING,
    Evidence,
    RetrievalSettings,
    blend,
    fuse,
    gather,
    recency,
)
from memorybank.stores.sqlite import SQLiteStore

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def m(text: str, importance: int = 5, age_days: float = 0) -> Memory:
    return Memory(
        user_id="u",
        content=text,
        category=Category.CONTEXT,
        importance=importance,
        created_at=NOW - timedelta(days=age_days),
    )


def test_recency_halves_each_half_life() -> None:
    assert recency(m("x"), NOW, 30) == pytest.approx(1.0)
    assert recency(m("x", age_days=30), NOW, 30) == pytest.approx(0.5)
    assert recency(m("x", age_days=-5), NOW, 30) == pytest.approx(1.0)  # clock skew


def _totals(found: Sequence[Evidence]) -> dict[str, float]:
    return {f.found.memory.content: f.total for f in found}


def test_evidence_normalises_and_weighs() -> None:
    a, b, c = m("a", importance=10), m("b", importance=2), m("c", age_days=90)
    found = gather(
        [Candidate.of(a, 0.9), Candidate.of(b, 0.5)],
        [Candidate.of(b, 4.0), Candidate.of(c, 2.0)],
        RetrievalSettings(vector_weight=0.3, text_weight=0.7),
        NOW,
    )
    # Ranking evidence: dense and BM25 min-max normalised over the candidates, weighted.
    assert _totals(found) == pytest.approx({"b": 0.7, "a": 0.3, "c": 0.0})
    by = {f.found.memory.content: f for f in found}
    assert (by["a"].cosine, by["a"].text_score) == (0.9, 0.0)  # no text match: BM25 0
    assert by["c"].cosine == 0.5  # not a vector hit: the lowest cosine found


def test_fuse_calibrates_relevance_and_blends_the_score() -> None:
    a, b, c = m("a", importance=10), m("b", importance=2), m("c", age_days=90)
    settings = RetrievalSettings(vector_weight=0.3, text_weight=0.7)
    vector_hits = [Candidate.of(a, 0.9), Candidate.of(b, 0.5)]
    text_hits = [Candidate.of(b, 4.0), Candidate.of(c, 2.0)]
    hits = fuse(vector_hits, text_hits, settings, NOW, 10)
    by = {h.memory.content: h for h in hits}
    # Relevance is the fitted chance of being relevant from (cosine, its gap to the best
    # cosine 0.9, BM25's share of the best 4.0, the conversation around it, said by the
    # assistant): c was no vector hit, so it gets the lowest cosine found (0.5).
    # The settings weigh vector 0.3 and text 0.7: the fitted weights scaled by 0.6 and 1.4.
    ranking = RANKING.scaled(0.6, 1.4)
    assert by["a"].relevance == pytest.approx(ranking.relevance((0.9, 0.0, 0.0, 0.0, 0.0)))
    assert by["b"].relevance == pytest.approx(ranking.relevance((0.5, -0.4, 1.0, 0.0, 0.0)))
    assert by["c"].relevance == pytest.approx(ranking.relevance((0.5, -0.4, 0.5, 0.0, 0.0)))
    assert 0 < by["c"].relevance < by["b"].relevance < by["a"].relevance < 1
    assert by["c"].recency == pytest.approx(0.5)  # default half-life 90 days
    assert by["a"].score == pytest.approx(blend(by["a"].relevance, 1.0, 1.0, settings))
    # Relevance leads: importance 10 and a fresh memory keep all of it.
    assert by["a"].score == pytest.approx(by["a"].relevance * (0.6 + 0.25 * 1.0 + 0.15 * 1.0))
    assert len(fuse([Candidate.of(a, 0.9)], [], RetrievalSettings(), NOW, 0)) == 0


def test_a_relevant_memory_outranks_an_irrelevant_one_whatever_its_importance_and_age() -> None:
    """Issue 25: importance and recency order memories of similar relevance; they never lift
    an irrelevant one above a relevant one (the additive 60/25/15 did, for short facts)."""
    settings = RetrievalSettings()
    for relevant, irrelevant in [(0.2, 0.02), (0.9, 0.5), (0.05, 0.029)]:
        low = blend(relevant, importance=0.1, recency=0.0, settings=settings)  # old, unimportant
        high = blend(irrelevant, importance=1.0, recency=1.0, settings=settings)
        assert low > high
    # Of two equally relevant memories, the more important and the newer ranks first.
    assert blend(0.4, 0.9, 1.0, settings) > blend(0.4, 0.5, 1.0, settings)
    assert blend(0.4, 0.5, 1.0, settings) > blend(0.4, 0.5, 0.2, settings)


def test_relevance_is_absolute_not_scaled_to_the_best() -> None:
    """The old per-query min-max gave the best candidate 1.0 whatever it was; now a weak best
    match stays weak, and a strong one is far above it."""
    settings = RetrievalSettings()
    weak = fuse([Candidate.of(m("x"), 0.09)], [], settings, NOW, 5)[0]
    strong = fuse([Candidate.of(m("x"), 0.75)], [Candidate.of(m("y"), 12.0)], settings, NOW, 5)
    assert weak.relevance < 0.1
    assert max(h.relevance for h in strong) > 5 * weak.relevance


def test_context_spreads_to_session_neighbours_and_speaker_counts() -> None:
    question = m("Melanie: what did you paint?")
    answer = m("Caroline: a sunset over the lake", importance=5)
    elsewhere = m("Caroline: I like lakes", importance=5)
    settings = RetrievalSettings(importance_weight=0, recency_weight=0)
    found = gather(
        [Candidate.of(question, 0.8), Candidate.of(elsewhere, 0.2)],
        [Candidate.of(question, 3.0), Candidate.of(elsewhere, 1.0)],
        settings,
        NOW,
        neighbours={question.id: [(Candidate.of(answer, 0.0), 1)]},
    )
    totals = _totals(found)
    # The answer was no candidate; it joins through its neighbour with half its evidence.
    assert totals[answer.content] == pytest.approx(0.5 * 1.0)
    assert totals[elsewhere.content] == pytest.approx(0.0)
    with_speaker = gather(
        [Candidate.of(question, 0.8), Candidate.of(elsewhere, 0.2)],
        [],
        settings,
        NOW,
        query="What does Caroline like?",
    )
    assert _totals(with_speaker)[elsewhere.content] == 0  # no speaker metadata: no boost
    tagged = elsewhere.model_copy(update={"metadata": {"speaker": "Caroline"}})
    boosted = gather(
        [Candidate.of(question, 0.8), Candidate.of(tagged, 0.2)],
        [],
        settings,
        NOW,
        query="What does Caroline like?",
    )
    assert _totals(boosted)[tagged.content] == pytest.approx(settings.speaker_weight)
    plain, named = (
        fuse(
            [Candidate.of(question, 0.8), Candidate.of(other, 0.2)],
            [],
            settings,
            NOW,
            10,
            query="What does Caroline like?",
        )
        for other in (elsewhere, tagged)
    )
    assert named[-1].relevance > plain[-1].relevance  # the speaker is evidence of relevance


def test_named_speakers_are_found_and_left_out_of_the_query_text() -> None:
    turns = [
        m("Caroline: hi").model_copy(update={"metadata": {"speaker": "Caroline"}}),
        m("Mary Ann: hi").model_copy(update={"metadata": {"speaker": "Mary Ann"}}),
        m("Anna: hi").model_copy(update={"metadata": {"speaker": "Anna"}}),
        m("no speaker"),
    ]
    query = "What did caroline's sister tell Mary  Ann and Annabel?"
    speakers = [t.metadata.get("speaker") for t in turns]
    assert speakers_named(query, speakers) == ["Caroline", "Mary Ann"]  # not Anna in Annabel
    assert neutral_query(query, ["Caroline", "Mary Ann"]) == (
        "What did their sister tell they and Annabel?"
    )
    assert neutral_query("Where did Anna go?", []) == "Where did Anna go?"


SAID = [
    ("Melanie", "Caroline, I painted a sunset over the lake last weekend"),
    ("Caroline", "Melanie, that is lovely! I bought new running shoes"),
    ("Melanie", "Caroline, you always pick the best colours"),
    ("Caroline", "Thanks Melanie! See you soon, Melanie"),
]


def _save_conversation(bank: MemoryBank) -> None:
    """Four turns of one session by two speakers, stored as a conversation import would."""
    bank.save_many(
        "u",
        [
            {
                "content": f"{who}: {text}",
                "ring": "episodic",
                "source": "conversation",
                "metadata": {"speaker": who},
                "session_id": "s1",
            }
            for who, text in SAID
        ],
    )


class _Recording:
    """The real embedder, noting what it is asked to embed."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.model_id = inner.model_id
        self.dimension = inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += texts
        return self.inner.embed(texts)

    def close(self) -> None:
        pass


def test_search_matches_a_named_speaker_by_metadata_not_by_name(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    recording = _Recording(embedder)
    store = SQLiteStore(tmp_path / "s.db", dimension=embedder.dimension)
    bank = MemoryBank(store, recording)
    _save_conversation(bank)
    recording.texts.clear()
    hits = bank.search("u", "What did Caroline buy?", limit=2)
    assert recording.texts == ["What did they buy?"]
    assert hits[0].memory.content.startswith("Caroline: Melanie, that is lovely")
    recording.texts.clear()
    bank.search("u", "What did Rosa paint?", limit=2)  # nobody of that name spoke
    assert recording.texts == ["What did Rosa paint?"]
    store.close()


def test_weights_are_settings() -> None:
    relevance_only = RetrievalSettings(relevance_weight=1, importance_weight=0, recency_weight=0)
    hits = fuse([Candidate.of(m("x"), 0.3)], [], relevance_only, NOW, 5)
    assert hits[0].score == pytest.approx(hits[0].relevance)
    with pytest.raises(ValueError):
        RetrievalSettings(vector_weight=0, text_weight=0)


# A conversation among eight people who talk about the same things: only a speaker's name tells
# apart "Where did Chen go hiking?" from the other seven hikes (the lexical signal's strength),
# and some events share no word with their question (the dense signal's strength).
SPEAKERS = ["Alice", "Bruno", "Chen", "Dalia", "Emeka", "Farah", "Goran", "Hana"]
TOPICS = {
    "{s}: I went hiking in {d} last month": (
        "Where did {s} go hiking?",
        [
            "the Alps",
            "Patagonia",
            "Nepal",
            "the Scottish Highlands",
            "the Dolomites",
            "Iceland",
            "the Pyrenees",
            "Yosemite",
        ],
    ),
    "{s}: I'm reading {d} right now": (
        "What book is {s} reading?",
        [
            "a novel about a lighthouse keeper",
            "a biography of Marie Curie",
            "a history of the Silk Road",
            "a cookbook of Sicilian recipes",
            "a thriller set in Lagos",
            "a memoir by a chess champion",
            "a guide to growing bonsai",
            "a collection of Japanese poems",
        ],
    ),
    "{s}: My sister works as {d}": (
        "What does {s}'s sister do for work?",
        [
            "a graphic designer",
            "a veterinarian",
            "a pilot",
            "a pharmacist",
            "an architect",
            "a firefighter",
            "a translator",
            "a marine biologist",
        ],
    ),
    "{s}: I signed up for a {d} class": (
        "Which class did {s} sign up for?",
        [
            "pottery",
            "salsa dancing",
            "Japanese calligraphy",
            "welding",
            "beekeeping",
            "improv theatre",
            "glassblowing",
            "sign language",
        ],
    ),
}
EVENTS = [
    ("Bruno: We brought home a rescue puppy on Saturday", "Who adopted a dog?"),
    ("Chen: I sprained my foot on the trail, so no running for weeks", "Who hurt their ankle?"),
    ("Dalia: My grandfather passed away in March", "Whose relative died?"),
    ("Alice: We finally closed on the apartment downtown", "Who bought a home?"),
]
TURNS: list[str] = []
QUERIES: list[tuple[str, int]] = []
for template, (question, details) in TOPICS.items():
    for speaker, detail in zip(SPEAKERS, details, strict=True):
        QUERIES.append((question.format(s=speaker), len(TURNS)))
        TURNS.append(template.format(s=speaker, d=detail))
for text, question in EVENTS:
    QUERIES.append((question, len(TURNS)))
    TURNS.append(text)


def _recall_at_1(bank: MemoryBank) -> float:
    found = 0
    for query, answer in QUERIES:
        hits = bank.search("u", query, limit=1)
        found += bool(hits) and hits[0].memory.content == TURNS[answer]
    return found / len(QUERIES)


def test_hybrid_beats_either_signal_alone(tmp_path: Path, embedder: LocalEmbedder) -> None:
    store = SQLiteStore(tmp_path / "r.db", dimension=embedder.dimension)
    bank = MemoryBank(store, embedder)
    # Names are only in the text here (the lexical signal's strength): a null speaker keeps
    # memorybank.rules.sessions from reading one from the "Name: " prefix.
    unknown = {"speaker": None}
    bank.save_many(
        "u",
        [
            {"content": t, "ring": "episodic", "source": "conversation", "metadata": unknown}
            for t in TURNS
        ],
    )
    scores = {}
    # The turns are saved without sessions, so they now share an implicit one
    # (memorybank.rules.sessions); this fixture of eight people telling the same stories side by
    # side is about fusing the two signals, so the neighbour step is left out of all three.
    alone = {"neighbour_weight": 0.0}
    for name, settings in {
        "vector": RetrievalSettings(text_weight=0, **alone),
        "text": RetrievalSettings(vector_weight=0, **alone),
        "hybrid": RetrievalSettings(**alone),
    }.items():
        bank.retrieval = settings
        scores[name] = _recall_at_1(bank)
    store.close()
    assert scores["hybrid"] > scores["vector"], scores
    assert scores["hybrid"] > scores["text"], scores


def test_named_speaker_search_on_every_store(any_bank: MemoryBank) -> None:
    # On PostgreSQL the speaker probe runs beside the vector search (remote_reads).
    _save_conversation(any_bank)
    named = any_bank.search("u", "What did Caroline buy?", limit=2)
    assert named[0].memory.content.startswith("Caroline: Melanie, that is lovely")
    plain = any_bank.search("u", "sunset painting by the lake", limit=1)
    assert plain[0].memory.content.startswith("Melanie: Caroline, I painted")
    assert any_bank.search("someone-else", "What did Caroline buy?") == []
    any_bank.close()
    assert not any_bank._probes.started  # the probe threads are gone with the bank


def test_an_unknown_setting_name_is_an_error_that_names_it() -> None:
    """``context_weight`` (the neighbour weight's name before 0.1.0, never released) or a typo
    is refused, not left silently at its default."""
    with pytest.raises(PydanticValidationError, match="context_weight"):
        RetrievalSettings.model_validate({"context_weight": 0.2})
