"""The conversations benchmark and the fact model's trainer: the report's shape, the CLI
commands, and a seeded training on a tiny slice. Today's values are not asserted (ranking and
the prompt block are being changed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memorybank.cli import app
from memorybank.providers.embedders.base import Embedder
from memorybank.rules.keep_model import KeepModel
from memorybank_bench.conversations import read_labels, run_conversations, supported
from memorybank_bench.conversations_locomo import run_locomo_conversations
from memorybank_bench.train_extractor import chat_examples, run_training

ROOT = Path(__file__).resolve().parents[2]
OWN = ROOT / "benchmarks/data/conversations_own.jsonl"


def _slice(tmp_path: Path, chats: int) -> Path:
    lines = OWN.read_text(encoding="utf-8").splitlines()[:chats]
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_chat_pieces_are_labelled_by_the_expected_words(tmp_path: Path, embedder: Embedder) -> None:
    found = chat_examples(_slice(tmp_path, 1), embedder)
    texts, labels = found.texts, found.labels
    assert len(texts) == len(labels) == len(found.features)
    kept = {t for t, label in zip(texts, labels, strict=True) if label}
    assert any("vegetarian" in t for t in kept)
    assert not any("could you help me plan meals" in t for t in kept)


def test_training_on_a_tiny_slice_is_seeded(tmp_path: Path) -> None:
    chats = _slice(tmp_path, 3)
    out = tmp_path / "model.json"
    first = run_training([chats], out, seed=1)
    again = run_training([chats], None, seed=1)
    assert first == again
    model = KeepModel.from_dict(json.loads(out.read_text(encoding="utf-8")))
    assert 0.0 < model.threshold < 1.0
    assert first["trained_on"]["chats"]["worth_keeping"] > 0


def test_the_trainer_command_cross_validates(tmp_path: Path) -> None:
    chats = _slice(tmp_path, 2)
    other = tmp_path / "other.jsonl"
    other.write_text(OWN.read_text(encoding="utf-8").splitlines()[2] + "\n", encoding="utf-8")
    out = tmp_path / "model.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "train-extractor",
            "--chats",
            str(chats),
            "--chats",
            str(other),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "scored on other" in result.output
    assert out.exists()


def test_the_report_counts_every_fact(tmp_path: Path) -> None:
    report = run_conversations(_slice(tmp_path, 1))
    facts = len(json.loads(OWN.read_text(encoding="utf-8").splitlines()[0])["facts"])
    assert report.facts == facts
    assert 0 <= report.in_block <= facts and 0 <= report.first_right <= report.in_block
    assert report.remember_ms > 0 and report.turns_only_ms > 0
    assert set(report.as_dict()) >= {"kept", "in_block", "first_right", "invented"}


def test_the_command_prints_the_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "conversations", str(_slice(tmp_path, 1))])
    assert result.exit_code == 0, result.output
    assert "facts kept" in result.output and "facts invented" in result.output


def test_support_is_read_from_the_users_words() -> None:
    said = "my partner got a job, so we moved to Leeds last year"
    assert supported("User and their partner moved to Leeds", said)
    assert not supported("User owns a yacht in Monaco", said)


TINY_LOCOMO = [
    {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Rosa",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {
                    "speaker": "Rosa",
                    "dia_id": "D1:1",
                    "text": "I adopted a greyhound called Pepper.",
                },
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! How old is she?"},
                {"speaker": "Rosa", "dia_id": "D1:3", "text": "She is four and loves the beach."},
            ],
        },
        "qa": [
            {
                "question": "What is Rosa's dog called?",
                "answer": "Pepper",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {"question": "What did Ben ask?", "answer": "age", "evidence": ["D1:2"], "category": 4},
        ],
    }
]


def test_locomo_through_remember_counts_the_users_evidence(tmp_path: Path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY_LOCOMO), encoding="utf-8")
    found = run_locomo_conversations(data)
    # Only the question whose evidence is the user's (speaker A's) counts.
    assert (found.conversations, found.questions, found.evidence) == (1, 1, 1)
    assert found.facts_stored >= 1
    assert 0.0 <= found.share <= 1.0


def test_labels_give_the_kept_facts_precision(tmp_path: Path) -> None:
    chats = _slice(tmp_path, 1)
    first = run_conversations(chats, labels=_labels(tmp_path, []))
    assert first.labelled == 0 and len(first.unlabelled) == first.stored > 0
    kept = [u["fact"] for u in first.unlabelled]
    said = [
        {"chat": 0, "fact": kept[0], "label": "junk"},
        *({"chat": 0, "fact": fact, "label": "useful"} for fact in kept[1:]),
    ]
    report = run_conversations(chats, labels=_labels(tmp_path, said))
    assert (report.labelled, report.junk, report.wrong_subject) == (len(kept), 1, 0)
    assert not report.unlabelled
    with pytest.raises(ValueError, match="label must be one of"):
        read_labels(_labels(tmp_path, [{"chat": 0, "fact": kept[0], "label": "meh"}]))


def _labels(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
