"""The fairness benchmark (issues 34 and 44): the report's arithmetic, and `memorybank bench
fairness` run for real on tiny phases. Its structure, 5xx answers and lost memories are
asserted, never the latency ratios: those are the benchmark's figures, and depend on the
machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memorybank.cli import app
from memorybank_bench.fairness import FLOODS, FairnessReport, Phase, _schedule


def _phase(name: str, search: float, save: float, ratio: float = 1.0) -> Phase:
    return Phase(name, 1.0, 10, search, search, 10, save, save, 0, 0, 0, 0, ratio, ratio, ratio)


def test_every_flood_is_between_two_alone_phases() -> None:
    assert _schedule() == [
        "alone 1",
        "search flood",
        "alone 2",
        "preview flood",
        "alone 3",
        "write flood",
        "alone 4",
        "pairs flood",
        "alone 5",
        "tool flood",
        "alone 6",
        "list flood",
        "alone 7",
    ]


def test_a_goal_is_missed_by_one_flood_over_twice_alone() -> None:
    phases = [_phase(name, 5.0, 10.0) for name in _schedule()]
    report = FairnessReport("http://x", 4, 100, 1, phases, stored=10, lost=0)
    assert report.met
    report.phase("preview flood").save_p50_ratio = 2.5
    assert report.goals() == {
        "search p50 ≤ 2× alone": True,
        "save p50 ≤ 2× alone": False,
        "0 5xx": True,
        "nothing lost": True,
    }
    report.lost = 1
    assert not report.as_dict()["goals"]["nothing lost"] and not report.met


@pytest.mark.slow
def test_the_command_runs_every_phase_and_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "fairness.json"
    result = CliRunner().invoke(
        app,
        ["bench", "fairness", "--seconds", "0.5", "--loops", "2", "--bob-facts", "40"]
        + ["--json", str(out)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [p["name"] for p in report["phases"]] == _schedule()
    assert report["server_errors"] == 0 and report["error_samples"] == []
    # Bob's 40 facts and what alice saved, all still there with their text.
    assert report["lost"] == 0 and report["stored"] > 40
    assert set(report["goals"]) == {
        "search p50 ≤ 2× alone",
        "save p50 ≤ 2× alone",
        "0 5xx",
        "nothing lost",
    }
    for phase in report["phases"]:
        assert phase["searches"] > 0 and phase["saves"] > 0, phase
        assert phase["alice_errors"] == 0 and phase["server_errors"] == 0
        # Bob floods only in the flood phases, and every flood was answered.
        assert (phase["bob_answered"] > 0) == (phase["name"] in FLOODS), phase
        assert phase["search_p95_ms"] >= phase["search_p50_ms"] > 0
    assert "memorybank fairness" in result.output and "goal nothing lost: met" in result.output
