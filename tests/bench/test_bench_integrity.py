"""The integrity benchmark: loading, the goals table, and a gate on the real development data
(the fact pairs and a SICK sample), run through the public API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.shared_data import shared_file
from typer.testing import CliRunner

from memorybank.cli import app
from memorybank_bench.integrity import (
    IntegrityReport,
    Tally,
    load_pairs,
    load_sick,
    run_integrity,
)


def test_load_pairs_checks_labels(tmp_path: Path) -> None:
    good = tmp_path / "pairs.jsonl"
    good.write_text(
        json.dumps({"a": "User owns a kayak", "b": "User has a kayak", "label": "duplicate"})
        + "\n\n",
        encoding="utf-8",
    )
    assert [p.group for p in load_pairs(good)] == ["duplicate"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"a": "x", "b": "y", "label": "maybe"}) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match="label must be one of"):
        load_pairs(bad)


def test_load_sick_groups_near_paraphrases(tmp_path: Path) -> None:
    sick = tmp_path / "sick.txt"
    sick.write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA dog runs\tA dog is running\t4.9\tENTAILMENT\n"
        "2\tA dog runs\tAn animal moves\t4.0\tENTAILMENT\n"
        "3\tA dog runs\tNo dog runs\t4.1\tCONTRADICTION\n",
        encoding="utf-8",
    )
    assert [p.group for p in load_sick(sick)] == ["PARAPHRASE", "ENTAILMENT", "CONTRADICTION"]
    assert len(load_sick(sick, limit=2)) == 2


def test_goals_and_report_shape() -> None:
    report = IntegrityReport(
        pairs={"duplicate": Tally(total=10, refused=9), "update": Tally(total=4, surfaced=4)},
        sick={"NEUTRAL": Tally(total=1000, refused=6)},
    )
    goals = {goal.name: goal for goal in report.goals()}
    assert goals["pairs: duplicates caught (stored once)"].met
    assert goals["pairs: updates surfaced as conflicts, or restated"].met
    assert not goals["SICK: NEUTRAL lost (refused or restated)"].met  # 0.6 % > 0.5 %
    assert not report.met
    data = report.as_dict()
    assert data["met"] is False
    assert {g["name"] for g in data["goals"]} == set(goals)
    assert data["judge_ms_per_pair"] == 0.0  # measured by run_integrity only
    json.dumps(data)


def test_cli_prints_the_goals_and_writes_json(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"a": "User's bike is a blue Trek", "b": "User's bike is a red Trek", "label": "update"},
        {"a": "User collects stamps", "b": "User collects stamps", "label": "duplicate"},
    ]
    pairs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    sick = tmp_path / "sick.txt"
    sick.write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
        "1\tA cook is stirring a pot\tA cook is not stirring a pot\t3.6\tCONTRADICTION\n",
        encoding="utf-8",
    )
    out = tmp_path / "report.json"
    args = ["bench", "integrity", "--pairs", str(pairs), "--sick", str(sick), "--json", str(out)]
    result = CliRunner().invoke(
        app, [*args, "--workdir", str(tmp_path / "work")], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "updates surfaced as conflicts" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["pairs"]["update"] == {
        "total": 1,
        "refused": 0,
        "restated": 0,
        "surfaced": 1,
        "skipped": 0,
        "superseded": 0,  # one word of value: may conflict, kept
    }
    assert report["pairs"]["duplicate"]["refused"] + report["pairs"]["duplicate"]["restated"] == 1
    assert report["sick"]["CONTRADICTION"]["refused"] == 0
    assert report["judge_ms_per_pair"] > 0  # the rules' speed is this figure, not a timed test


def test_dev_pairs_and_sick_sample_meet_the_safety_goals(tmp_path: Path) -> None:
    """Nothing is lost (no update, distinct fact, contradiction refused), updates are
    surfaced; the catch rates are held at what the rules reach today (see docs/benchmarks.md)."""
    pairs = shared_file("data/facts/pairs_dev.jsonl")
    sick_trial = shared_file("data/sick/SICK_trial.txt")
    report = run_integrity(pairs, sick_trial, workdir=tmp_path)
    goals = {goal.name: goal for goal in report.goals()}
    for name in (
        "pairs: updates lost (refused)",
        "pairs: updates surfaced as conflicts, or restated",
        "pairs: distinct lost (refused or restated)",
        "SICK: CONTRADICTION refused",
    ):
        assert goals[name].met, goals[name]
    # Below the goals (0.90, 0.005, 0.75, 0.5): floors a little under today's figures
    # (docs/benchmarks.md), to catch a regression. The judge refuses only from p 0.98, so it
    # catches fewer paraphrases than it could, and reports near-copies it keeps as conflicts.
    # The value guards (rules/verdicts.weighed) keep near copies with another word of value:
    # fewer paraphrases are caught (0.48 on the dev pairs, 0.13 of SICK's, whose nouns differ).
    assert goals["pairs: duplicates caught (stored once)"].value >= 0.4
    assert goals["pairs: distinct surfaced as conflicts"].value <= 0.65
    # The judge retrained on plain new values of one-value slots (issue 45) loses 7 of
    # SICK trial's 282 neutral scenes (2.5 %; 2 before) for 22 of 71 paraphrases (16 before).
    assert goals["SICK: NEUTRAL lost (refused or restated)"].value <= 0.03
    assert goals["SICK: near-paraphrases caught (stored once)"].value >= 0.08
