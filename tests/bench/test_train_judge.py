"""Training the judge end to end on a tiny slice (the full run is `memorybank bench
train-judge`, never run in CI): the data of every source loads, the model trains, exports to
int8 ONNX, and the runtime judge loads what was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memorybank.providers.judges.local import LocalJudge
from memorybank_bench.judge_data import (
    SHARED,
    lifecycle_pairs,
    locomo,
    profiles,
    scored_sentences,
    sick,
    training_set,
)
from memorybank_bench.judge_slots import slot_pairs, slot_questions
from memorybank_bench.train_judge import TrainConfig, split, train


def test_generated_pairs_cover_every_relation_and_are_seeded() -> None:
    pairs = slot_pairs(seed=5, count=600)
    labels = {p.label for p in pairs}
    assert labels == {"duplicate", "update", "distinct"}
    assert slot_pairs(seed=5, count=600) == pairs
    traps = [p for p in pairs if p.source.endswith("other-person")]
    assert traps and all(p.label == "distinct" for p in traps)  # another person's same slot
    questions = slot_questions(seed=5, count=50)
    assert {q.label for q in questions} == {"relevant", "irrelevant"}


def test_the_written_profiles_pair_each_question_with_its_own_fact_and_its_neighbours() -> None:
    data = profiles(seed=3)
    assert profiles(seed=3) == data
    assert {(p.task, p.label) for p in data} == {
        ("relevance", "relevant"),
        ("relevance", "irrelevant"),
        ("pair", "distinct"),
    }
    # The hardest negative of a question is a fact of the same user sharing its words.
    asked = [p for p in data if p.a == "how much do I pay for the room?"]
    relevant = {p.b for p in asked if p.label == "relevant"}
    assert relevant == {"User's kos rent is 1.2 million rupiah a month"}
    assert "User pays 850,000 rupiah a month on the scooter loan" in {
        p.b for p in asked if p.label == "irrelevant"
    }
    # Not in the shipped judge's data unless asked for.
    assert not {p.source for p in training_set(seed=0, slots=50, questions=20)} & {"profiles"}


def test_the_held_out_part_is_never_trained_on() -> None:
    data = slot_pairs(seed=1, count=2000)
    train_part, held = split(list(data), seed=1)
    assert held and len(held) < len(data) / 10
    assert len(train_part) + len(held) == len(data)


@pytest.mark.skipif(not (SHARED / "sick").is_dir(), reason="../shared is absent")
def test_every_source_loads_and_the_scored_sets_stay_out() -> None:
    data = training_set(seed=0, slots=100, questions=50)
    sources = {p.source.split(":")[0] for p in data}
    assert {"slot", "phrases", "pairs_dev", "lifecycle_dev.jsonl"} <= sources
    # SICK and LoCoMo load, every relation and both tasks, as scoring sets only: their
    # licences are for evaluation, so none of their pairs is trained on.
    scoring = sick() + sick("SICK_trial.txt")
    assert {p.label for p in scoring} == {"duplicate", "update", "distinct"}
    observed = locomo(seed=0)
    assert {p.task for p in observed} == {"pair", "relevance"}
    assert not sources & {"sick", "locomo"}
    assert not {(p.a, p.b) for p in data} & {(p.a, p.b) for p in scoring + observed}
    # Nor is any sentence of the scored lifecycle sets, on either side of a pair.
    dev2 = lifecycle_pairs(SHARED / "facts" / "lifecycle_dev2.jsonl")
    scored = {p.b for p in dev2} | {p.a for p in dev2} | scored_sentences()
    assert "User is 22 years old" in scored  # one the generators also write
    assert not scored & ({p.b for p in data} | {p.a for p in data})


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "sick").is_dir(), reason="../shared is absent")
def test_a_tiny_training_run_writes_a_judge_the_runtime_loads(tmp_path: Path) -> None:
    summary = train(TrainConfig(limit=96, batch=16, slots=200, questions=50, out=tmp_path))
    assert (tmp_path / "model.onnx").is_file()
    assert json.loads((tmp_path / "judge.json").read_text(encoding="utf-8")) == summary
    judge = LocalJudge(tmp_path)
    # Other batch sizes and lengths than the example it was exported from (dynamic axes).
    pairs = [
        ("User lives in Lisbon", "User moved to Porto"),
        ("User's sister Maria works as a nurse in Porto", "User has a dog"),
        ("User likes tea", "User likes coffee"),
    ]
    scored = judge.score(pairs)
    assert len(scored) == 3
    for scores in scored:
        assert abs(scores.duplicate + scores.update + scores.distinct - 1.0) < 1e-6
    # Alone, at its own length, too (a fresh judge: each keeps a cache of answers).
    [alone] = LocalJudge(tmp_path).score(pairs[1:2])
    assert abs(alone.duplicate + alone.update + alone.distinct - 1.0) < 1e-6
    relevance = judge.relevance("Where do I live?", ["User lives in Lisbon", "User has a dog"])
    assert len(relevance) == 2 and all(0.0 <= r <= 1.0 for r in relevance)
