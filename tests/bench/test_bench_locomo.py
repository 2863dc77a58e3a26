"""The LoCoMo retrieval benchmark: evidence parsing, loading, scoring, and a quality gate on
the real development data."""

from __future__ import annotations

import io
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.shared_data import shared_file

from memorybank import ConfigurationError, MemoryBank, ValidationError
from memorybank.model import Category, Memory, SearchHit
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.stores.sqlite import SQLiteStore
from memorybank_bench.locomo import (
    Latency,
    LocomoReport,
    VariantResult,
    distinct_dia_ids,
    load_conversations,
    parse_evidence,
    parse_session_date,
    recall_at,
    reciprocal_rank,
    run_locomo,
)

# Measured R@10 of the search on the dev data minus 2 points: 0.753 with the fitted ranking
# (issue 43; docs/retrieval.md), which gives turns' BM25 and context less weight than the
# fusion before it (0.805): the project's own facts gain nothing from them. Raise it as
# retrieval improves, so a regression cannot pass unnoticed.
FLOOR = 0.73


def _turn(dia_id: str, speaker: str, text: str, **extra: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


SAMPLE: dict[str, Any] = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("D1:1", "Ann", "Hi Bob! How was your week?"),
            _turn("D1:2", "Bob", "Busy, lots of meetings at work. And you?"),
            _turn(
                "D1:3",
                "Ann",
                "I adopted a greyhound named Biscuit from the shelter in Leeds!",
                blip_caption="a photo of a grey dog on a sofa",
            ),
            _turn("D1:4", "Bob", "That is lovely, congratulations."),
        ],
        "session_2_date_time": "12:09 am on 13 September, 2023",
        "session_2": [
            _turn("D2:1", "Bob", "I started learning the cello last month."),
            _turn("D2:2", "Ann", "Nice. I am training for a marathon in Berlin."),
            _turn("D2:3", "Bob", "When is the race?"),
            _turn("D2:4", "Ann", "In late September, I am nervous."),
        ],
    },
    "qa": [
        {
            "question": "What is the name of the greyhound Ann adopted?",
            "answer": "Biscuit",
            "evidence": ["D1:03"],
            "category": 4,
        },
        {
            "question": "What did Bob adopt?",
            "adversarial_answer": "a greyhound",
            "evidence": ["D1:3"],
            "category": 5,
        },
        {
            "question": "Would Ann enjoy hiking?",
            "answer": "Likely yes",
            "evidence": [],
            "category": 3,
        },
    ],
}


def _write(path: Path, samples: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


# --------------------------------------------------------------------------------------------
# Pure parts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("D1:3", ["D1:3"]),
        ("D12:104", ["D12:104"]),
        ("D8:6; D9:17", ["D8:6", "D9:17"]),
        ("D:11:26", ["D11:26"]),
        ("D30:05", ["D30:5"]),
        ("D 4 : 07", ["D4:7"]),
        ("D", []),
        ("", []),
    ],
)
def test_parse_evidence(entry: str, expected: list[str]) -> None:
    assert parse_evidence(entry) == expected


def test_parse_session_date() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(
        2023, 9, 13, 0, 9, tzinfo=UTC
    )
    assert parse_session_date("12:30 pm on 1 January, 2024").hour == 12
    with pytest.raises(ValidationError):
        parse_session_date("yesterday")


def test_load_conversations_file_and_folder(tmp_path: Path) -> None:
    other = {**SAMPLE, "sample_id": "conv-other"}
    _write(tmp_path / "a.json", [SAMPLE])
    _write(tmp_path / "b.json", [other])
    (tmp_path / "notes.txt").write_text("not data")

    [one] = load_conversations(tmp_path / "a.json")
    assert one.sample_id == "conv-test"
    assert [t.dia_id for t in one.turns][:2] == ["D1:1", "D1:2"]
    assert len(one.turns) == 8
    assert one.turns[4].session == 2
    assert one.turns[4].occurred_at == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert one.turns[2].content.endswith("[shares an image: a photo of a grey dog on a sofa]")
    assert one.turns[0].content == "Ann: Hi Bob! How was your week?"
    assert [q.evidence for q in one.questions] == [("D1:3",), ("D1:3",), ()]
    assert [q.scored for q in one.questions] == [True, False, False]

    both = load_conversations(tmp_path)
    assert [c.sample_id for c in both] == ["conv-test", "conv-other"]


def test_load_conversations_errors(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="no LoCoMo data"):
        load_conversations(tmp_path / "missing.json")
    with pytest.raises(ValidationError, match=r"no \*\.json"):
        load_conversations(tmp_path)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValidationError, match="not valid JSON"):
        load_conversations(tmp_path / "bad.json")
    _write(tmp_path / "bad.json", [{"sample_id": "x"}])
    with pytest.raises(ValidationError, match="not a LoCoMo sample"):
        load_conversations(tmp_path / "bad.json")


def _hit(dia_id: str) -> SearchHit:
    memory = Memory(
        user_id="u", content="x", category=Category.CONTEXT, metadata={"dia_id": dia_id}
    )
    return SearchHit(memory=memory, score=1.0, relevance=1.0, importance=0.5, recency=1.0)


def test_scoring_counts_chunks_of_a_turn_once() -> None:
    ranked = distinct_dia_ids([_hit("D1:1"), _hit("D1:1"), _hit("D2:5"), _hit("D1:4")])
    assert ranked == ["D1:1", "D2:5", "D1:4"]
    assert recall_at(ranked, ["D2:5", "D1:4"], 1) == 0.0
    assert recall_at(ranked, ["D2:5", "D1:4"], 2) == 0.5
    assert recall_at(ranked, ["D2:5", "D1:4"], 3) == 1.0
    assert recall_at(ranked, [], 3) == 0.0
    assert reciprocal_rank(ranked, ["D1:4", "D2:5"]) == 0.5
    assert reciprocal_rank(ranked, ["D9:9"]) == 0.0


# --------------------------------------------------------------------------------------------
# End to end on a tiny synthetic file
# --------------------------------------------------------------------------------------------


def _check_report(report: LocomoReport) -> None:
    assert (report.conversations, report.turns, report.memories) == (1, 8, 8)
    assert (report.questions, report.scored) == (2, 1)
    assert (report.skipped_adversarial, report.skipped_no_evidence) == (1, 1)
    assert report.ingest_turns_per_s > 0
    for result in report.variants:
        assert all(0.0 <= value <= 1.0 for value in result.recall.values())
        assert 0.0 <= result.mrr <= 1.0
        assert result.category_counts == {"single-hop": 1}
        assert result.search.count == 1


def test_run_locomo_synthetic(tmp_path: Path, embedder: LocalEmbedder) -> None:
    data = _write(tmp_path / "tiny.json", [SAMPLE])
    workdir = tmp_path / "work"
    report = run_locomo(data, ks=(1, 3), ablate=True, workdir=workdir, console=_quiet())

    _check_report(report)
    assert [v.name for v in report.variants] == ["vector-only", "bm25-only", "plain", "fused"]
    fused = report.variant("fused")
    assert fused.recall[1] == 1.0  # the greyhound question names its turn's words
    assert fused.mrr == 1.0
    assert (
        report.variant("vector-only").text_weight,
        report.variant("bm25-only").vector_weight,
    ) == (
        0.0,
        0.0,
    )
    as_dict = json.loads(json.dumps(report.as_dict()))
    assert as_dict["counts"] == {
        "conversations": 1,
        "turns": 8,
        "memories": 8,
        "questions": 2,
        "scored": 1,
        "skipped_adversarial": 1,
        "skipped_no_evidence": 1,
    }
    assert as_dict["variants"][3]["recall"]["1"] == 1.0
    table = report.table()
    assert [c.header for c in table.columns][1:4] == ["R@1", "R@3", "MRR"]
    assert table.row_count == 4

    # The stored memories are what the protocol says, as any app would read them back.
    store = SQLiteStore(workdir / "locomo.db", dimension=embedder.dimension)
    with MemoryBank(store, embedder) as bank:
        memories = bank.list("conv-test", order="created_asc")
    adopted = next(m for m in memories if m.metadata["dia_id"] == "D1:3")
    assert adopted.content.startswith("Ann: I adopted a greyhound named Biscuit")
    assert adopted.content.endswith("[shares an image: a photo of a grey dog on a sofa]")
    assert adopted.metadata == {"dia_id": "D1:3", "session": 1, "speaker": "Ann"}
    assert adopted.session_id == "session_1"
    assert adopted.occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert (adopted.ring.value, adopted.source.value) == ("episodic", "conversation")


def test_run_locomo_rejects_bad_ks(tmp_path: Path) -> None:
    data = _write(tmp_path / "tiny.json", [SAMPLE])
    with pytest.raises(ValidationError):
        run_locomo(data, ks=(0, 5), console=_quiet())


def _tiny_report() -> LocomoReport:
    result = VariantResult(
        name="fused",
        vector_weight=0.5,
        text_weight=0.5,
        recall={1: 0.5, 5: 0.75},
        mrr=0.6,
        per_category={"single-hop": 0.75},
        category_counts={"single-hop": 4},
        search=Latency.of([0.01, 0.02]),
    )
    return LocomoReport(
        data="x",
        ks=(1, 5),
        conversations=1,
        turns=10,
        memories=10,
        questions=4,
        scored=4,
        skipped_adversarial=0,
        skipped_no_evidence=0,
        ingest_seconds=1.0,
        variants=[result],
        settings={},
    )


def test_chart_without_matplotlib_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigurationError, match="install matplotlib for --chart"):
        _tiny_report().chart(tmp_path / "chart.png")


def test_chart_writes_a_png(tmp_path: Path) -> None:
    path = _tiny_report().chart(tmp_path / "chart.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------------------------
# Quality gate on the real development data
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_locomo_dev_recall_gate(tmp_path: Path) -> None:
    dev = shared_file("data/locomo/locomo_dev.json")
    report = run_locomo(dev, workdir=tmp_path, console=_quiet())
    assert (report.conversations, report.turns, report.questions) == (5, 2760, 762)
    assert report.scored == 760
    recall = report.variant("fused").recall[10]
    assert recall >= FLOOR, f"LoCoMo R@10 fell to {recall:.3f} (floor {FLOOR})"
