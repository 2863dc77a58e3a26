"""The consolidation benchmark (issue 27): the facts it builds, the report's shape, and the
CLI command on small sizes. Work done is asserted (pairs judged, merges found), never the
machine's time or memory: those are the benchmark's figures."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memorybank.cli import app
from memorybank.rules.verdicts import THRESHOLDS
from memorybank_bench.consolidate import ConsolidateReport, Measurement, near_duplicates


def test_near_duplicates_plant_one_copy_in_a_hundred_in_every_prefix() -> None:
    texts = near_duplicates(1000)
    assert len(texts) == 1000 and len(set(texts)) == 990
    assert near_duplicates(300) == texts[:300]
    assert len(set(texts[:300])) == 297


def test_the_report_compares_within_one_run() -> None:
    report = ConsolidateReport(
        rows=[
            Measurement(1000, "first page", 1000, 4900, 10, 0.6, 0.4, 20.0),
            Measurement(1000, "last page", 1000, 4900, 10, 0.6, 0.5, 20.0),
            Measurement(1000, "all pairs (before)", 1000, 166_000, 10, 6.0, 5.0, 100.0),
            Measurement(20000, "last page", 1000, 4990, 10, 2.0, 1.5, 80.0),
        ]
    )
    assert report.ratios() == (1000, 10.0, 5.0)
    notes = report.notes()
    assert "10× the CPU time and 5× the memory" in notes[0] and notes[1].endswith("✔")
    as_json = json.loads(json.dumps(report.as_dict()))
    assert as_json["before_over_one_call"] == {"facts": 1000, "time": 10.0, "memory": 5.0}
    assert [row["approach"] for row in as_json["rows"]][2] == "all pairs (before)"


def test_the_command_measures_each_approach(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        ["bench", "consolidate", "--sizes", "100,200", "--old-max", "100"]
        + ["--workdir", str(tmp_path), "--json", str(out)],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    # The all-pairs approach only up to --old-max.
    assert [(r["facts"], r["approach"]) for r in rows] == [
        (100, "first page"),
        (100, "last page"),
        (100, "whole pass"),
        (100, "all pairs (before)"),
        (200, "first page"),
        (200, "last page"),
        (200, "whole pass"),
    ]
    for size in (100, 200):
        mine = [r for r in rows if r["facts"] == size]
        # Every approach examines every fact and merges exactly the planted copies …
        assert {(r["examined"], r["merged"]) for r in mine} == {(size, size // 100)}
        # … and the bounded ones judge at most a handful of pairs a fact.
        assert all(r["pairs_judged"] <= size * THRESHOLDS.candidates for r in mine[:3])
    new, old = rows[1], rows[3]
    assert new["pairs_judged"] < old["pairs_judged"]  # not every similar pair
