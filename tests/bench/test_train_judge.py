"""Training the judge end to end on a tiny slice (the full run is `memorybank bench
train-judge`, never run in CI): the data of every source loads, the model trains, exports to
ONNX with int8 weights, and the runtime judge loads what was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memorybank.providers.judges.local import LocalJudge
from memorybank_bench.judge_data import (
    OWN,
    PROBES,
    SHARED,
    lifecycle_pairs,
    locomo,
    pairs_dev,
    scored_sentences,
    sick,
    training_set,
    unseen_sentences,
)
from memorybank_bench.judge_slots import slot_pairs
from memorybank_bench.judge_variety import profile_pairs, variety_pairs
from memorybank_bench.train_judge import TrainConfig, split, train


def test_generated_pairs_cover_every_relation_and_are_seeded() -> None:
    pairs = slot_pairs(seed=5, count=600)
    labels = {p.label for p in pairs}
    assert labels == {"duplicate", "update", "distinct"}
    assert slot_pairs(seed=5, count=600) == pairs
    traps = [p for p in pairs if p.source.endswith("other-person")]
    assert traps and all(p.label == "distinct" for p in traps)  # another person's same slot
    more = variety_pairs(seed=5, count=600)
    assert {p.label for p in more} == labels and variety_pairs(seed=5, count=600) == more
    # Verbs of change are updates; two of one kind, and someone else's change, are not.
    kinds = {p.source: p.label for p in more}
    assert kinds["variety:parted"] == kinds["variety:ended"] == "update"
    assert kinds["variety:many"] == kinds["variety:parted:someone-else"] == "distinct"


def test_the_written_profiles_give_distinct_facts_and_their_changes() -> None:
    data = profile_pairs(seed=3, root=OWN)
    assert profile_pairs(seed=3, root=OWN) == data
    assert {p.label for p in data} == {"distinct", "update"}
    ended = [p for p in data if p.source == "profiles:ended"]
    assert ended and all("no longer" in p.b and "no longer" not in p.a for p in ended)
    assert all(p.a != p.b for p in data if p.label == "update")


def test_the_held_out_part_is_never_trained_on() -> None:
    data = slot_pairs(seed=1, count=2000)
    train_part, held = split(list(data), seed=1)
    assert held and len(held) < len(data) / 10
    assert len(train_part) + len(held) == len(data)


@pytest.mark.skipif(not (SHARED / "sick").is_dir(), reason="../shared is absent")
def test_every_source_loads_and_the_scored_sets_stay_out() -> None:
    data = training_set(seed=0, slots=100, variety=100)
    sources = {p.source.split(":")[0] for p in data}
    assert {"slot", "phrases", "variety", "profiles"} <= sources
    # SICK and LoCoMo load, every relation, as scoring sets only: their licences are for
    # evaluation, so none of their pairs is trained on. The shared development pairs and
    # the first lifecycle set choose the thresholds: never trained on either.
    scoring = sick() + sick("SICK_trial.txt")
    assert {p.label for p in scoring} == {"duplicate", "update", "distinct"}
    observed = locomo(seed=0)
    assert {p.task for p in observed} == {"pair", "relevance"}
    assert not sources & {"sick", "locomo", "pairs_dev", "lifecycle_dev.jsonl"}
    said = {" ".join(t.lower().split()) for p in data for t in (p.a, p.b)}
    calibration = pairs_dev() + lifecycle_pairs(SHARED / "facts" / "lifecycle_dev.jsonl")
    for pair in scoring + observed + calibration:
        assert (pair.a, pair.b) not in {(p.a, p.b) for p in data}
    # Nor any sentence of the scored lifecycle sets, the chats or the newcomer probes.
    dev2 = lifecycle_pairs(SHARED / "facts" / "lifecycle_dev2.jsonl")
    scored = {p.b for p in dev2} | {p.a for p in dev2} | scored_sentences() | set(PROBES)
    assert "User is 22 years old" in scored  # one the generators also write
    assert not {" ".join(t.lower().split()) for t in scored} & said
    assert not unseen_sentences() & said


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "sick").is_dir(), reason="../shared is absent")
def test_a_tiny_training_run_writes_a_judge_the_runtime_loads(tmp_path: Path) -> None:
    summary = train(TrainConfig(limit=96, batch=16, slots=200, variety=200, out=tmp_path))
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
    # Alone, at its own length, the same answer as in the batch.
    [alone] = LocalJudge(tmp_path).score(pairs[1:2])
    assert abs(alone.update - scored[1].update) < 1e-5
    assert judge.version == summary["version"]
