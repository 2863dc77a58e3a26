"""The re-read depth curve (issue 36): the facts saved once, every question searched at each
depth from cold caches; the report is well formed and a depth of 0 asks the judge nothing.

Today's values are not asserted, only that the numbers are shares that agree."""

from __future__ import annotations

import json
from pathlib import Path

from test_bench_facts import _sample
from test_bench_locomo import _quiet, _write
from typer.testing import CliRunner

from memorybank.cli import app
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank_bench.rerank_curve import run_rerank_curve


def test_run_rerank_curve_tiny(tmp_path: Path, embedder: LocalEmbedder) -> None:
    data = _write(tmp_path / "tiny.json", [_sample()])
    report = run_rerank_curve(data, depths=[0, 8], console=_quiet())
    assert [row.rerank for row in report.rows] == [0, 8]
    assert report.facts_saved == 4 and report.conversations == 1
    for row in report.rows:
        assert row.questions == 1  # the greyhound question
        assert 0.0 <= row.recall_at_5 <= row.recall_at_10 <= 1.0
        assert 0.0 < row.search.p50 <= row.search.p95
    assert report.table().row_count == 2
    as_dict = json.loads(json.dumps(report.as_dict()))
    assert [row["rerank"] for row in as_dict["rows"]] == [0, 8]


def test_cli_bench_rerank(tmp_path: Path, embedder: LocalEmbedder) -> None:
    data = _write(tmp_path / "tiny.json", [_sample()])
    out = tmp_path / "rerank.json"
    result = CliRunner().invoke(
        app,
        ["bench", "rerank", "--data", str(data), "--depths", "0,4", "--json", str(out)],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 0, result.output
    assert "Machine:" in " ".join(result.output.split())
    assert [row["rerank"] for row in json.loads(out.read_text())["rows"]] == [0, 4]
    wrong = CliRunner().invoke(app, ["bench", "rerank", "--data", str(data), "--depths", "0,99"])
    assert wrong.exit_code != 0 and "0 to 50" in " ".join(wrong.output.split())
