"""The fact-lifecycle benchmark: loading, the report's shape, the CLI command, and the same
counts as the project's referee scorer (``../shared/tools/fact_lifecycle.py``, run as a
subprocess) on a handful of the development scenarios.

Today's values are not asserted (ranking and the prompt block are being changed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.shared_data import shared_file
from typer.testing import CliRunner

from memorybank import ValidationError
from memorybank.cli import app
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank_bench.lifecycle import KINDS, LifecycleReport, load_scenarios, run_lifecycle

ROOT = Path(__file__).resolve().parents[2]

TINY = [
    {
        "kind": "update",
        "saves": ["User lives in Denver", "User relocated to Austin in the spring"],
        "question": "Which city am I in now?",
        "expect": "Austin",
        "stale": "lives in Denver",
    },
    {
        "kind": "distinct",
        "saves": ["User has a parrot named Kiwi", "User has a tortoise named Shelly"],
        "question": "What animals do I keep?",
        "expect": ["Kiwi", "Shelly"],
    },
    {
        "kind": "paraphrase",
        "saves": ["User prefers short answers", "User likes answers to be short"],
        "question": "How long should your answers be?",
        "expect": "short",
        "max_stored": 1,
    },
]


def _write(path: Path, scenarios: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in scenarios), encoding="utf-8")
    return path


def _check(report: LifecycleReport, scenarios: int) -> None:
    """Well formed: every scenario counted once, shares that add up, JSON round trip."""
    assert len(report.outcomes) == scenarios
    assert sum(report.passed(kind)[1] for kind in KINDS) == scenarios
    for kind in KINDS:
        passed, total = report.passed(kind)
        assert 0 <= passed <= total
    hits, total = report.top1
    assert 0 <= hits <= total == scenarios - report.passed("distinct")[1]
    assert report.duplicates >= 0
    assert all(o.duplicates == 0 for o in report.outcomes if o.scenario.kind != "update")
    as_dict = json.loads(json.dumps(report.as_dict()))
    assert len(as_dict["failures"]) == len(report.failures) == len(report.failure_notes())
    assert report.table().row_count == len(KINDS) + 2


def test_load_scenarios(tmp_path: Path) -> None:
    scenarios = load_scenarios(_write(tmp_path / "s.jsonl", TINY))
    assert [s.kind for s in scenarios] == ["update", "distinct", "paraphrase"]
    assert scenarios[0].expect == ("Austin",) and scenarios[0].stale == "lives in Denver"
    assert scenarios[1].expect == ("Kiwi", "Shelly") and scenarios[2].max_stored == 1
    with pytest.raises(ValidationError, match="kind must be one of"):
        load_scenarios(_write(tmp_path / "bad.jsonl", [{**TINY[1], "kind": "maybe"}]))
    with pytest.raises(ValidationError, match="not a scenario"):
        load_scenarios(_write(tmp_path / "bad.jsonl", [{"kind": "update"}]))


def test_run_lifecycle_tiny(tmp_path: Path, embedder: LocalEmbedder) -> None:
    _check(run_lifecycle(_write(tmp_path / "s.jsonl", TINY)), len(TINY))


def test_cli_bench_lifecycle(tmp_path: Path, embedder: LocalEmbedder) -> None:
    data, out = _write(tmp_path / "s.jsonl", TINY[:1]), tmp_path / "life.json"
    # Wide enough that Rich does not fold the temporary path; words compared across wraps.
    result = CliRunner().invoke(
        app, ["bench", "lifecycle", str(data), "--json", str(out)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "replacement duplicates" in said and f"Wrote {out}" in said
    assert json.loads(out.read_text())["kinds"]["update"]["total"] == 1


def _referee_counts(output: str) -> dict[str, tuple[int, int] | int]:
    """The counts of the referee's summary lines."""
    summary = output.strip().splitlines()[-1]
    counts: dict[str, tuple[int, int] | int] = {}
    for kind in KINDS:
        found = re.search(rf"{kind} (\d+)/(\d+)", summary)
        assert found, summary
        counts[kind] = (int(found.group(1)), int(found.group(2)))
    top1 = re.search(r"recall top-1 (\d+)/(\d+)", summary)
    dupes = re.search(r"replacement duplicates (\d+)", summary)
    assert top1 and dupes, summary
    counts["top1"] = (int(top1.group(1)), int(top1.group(2)))
    counts["duplicates"] = int(dupes.group(1))
    return counts


def test_same_counts_as_the_referee(tmp_path: Path, embedder: LocalEmbedder) -> None:
    referee = shared_file("tools/fact_lifecycle.py")
    dev = shared_file("data/facts/lifecycle_dev.jsonl")
    lines = [json.loads(line) for line in dev.read_text(encoding="utf-8").splitlines() if line]
    # Two scenarios of each kind, from the development file.
    picked = [s for kind in KINDS for s in [s for s in lines if s["kind"] == kind][:2]]
    data = _write(tmp_path / "few.jsonl", picked)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    referee = subprocess.run(
        [sys.executable, str(referee), "--data", str(data)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert referee.returncode in (0, 1), referee.stderr
    report = run_lifecycle(data)
    _check(report, len(picked))
    ours = {kind: report.passed(kind) for kind in KINDS}
    assert {**ours, "top1": report.top1, "duplicates": report.duplicates} == _referee_counts(
        referee.stdout
    )
    failing = [line for line in referee.stdout.splitlines() if line.startswith("FAIL ")]
    assert [n.plain for n in report.failure_notes()] == failing
